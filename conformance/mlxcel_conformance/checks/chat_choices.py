"""Chat ``n``: a request for ``n`` choices gets ``n`` choices, indexed 0..n-1, each once.

Source: OpenAI's API reference, Chat Completions (``n``: "How many chat completion choices to
generate for each input message"; ``choices[].index``), and its streaming object (each chunk's
choice names its ``index``; every choice ends with its own ``finish_reason``), as the real
recording ``fixtures/real-streams/openai-chat/stream/openai-chat-stream-n3-choices-2024.sse``
shows: indexes 0/1/2 interleaved, three finish chunks, then the usage chunk.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from mlxcel_conformance.checks.registry import check, fail
from mlxcel_conformance.checks.verdict_policy import VerdictClass
from mlxcel_conformance.errors import Severity

NAME = "chat_choices"


@check(NAME, severity=Severity.HIGH,
       description="n choices: a chat answer has n choices indexed 0..n-1, each once",
       verdicts=frozenset({VerdictClass.FAIL, VerdictClass.IGNORED}))
def check_chat_choices(body: Mapping[str, Any], n: int) -> None:
    choices = body.get("choices")
    if not isinstance(choices, list) or len(choices) != n:
        count = len(choices) if isinstance(choices, list) else None
        # one choice for n > 1: n was accepted and silently not honoured
        fail(NAME, f"n={n} was answered with {count} choices", choices=count,
             ignored=count == 1 and n > 1, ignored_field="n")
    indexes = sorted((c.get("index") if isinstance(c, dict) else None for c in choices),
                     key=str)
    if Counter(indexes) != Counter(range(n)):
        fail(NAME, f"the choices' indexes are {indexes}, not 0..{n - 1} each once",
             indexes=indexes)
    empty = [c.get("index") for c in choices if not isinstance(c.get("message"), dict)]
    if empty:
        fail(NAME, f"choices {empty} have no message object", indexes=empty)


def check_chat_chunk_choices(chunks: Sequence[Mapping[str, Any]], n: int) -> None:
    """The stream of an ``n``-choice request: every index 0..n-1 streams and finishes once
    (reported under the same name)."""
    seen: set[Any] = set()
    finished: Counter[Any] = Counter()
    for chunk in chunks:
        for choice in chunk.get("choices") or []:
            if not isinstance(choice, dict):
                continue
            seen.add(choice.get("index"))
            if choice.get("finish_reason") is not None:
                finished[choice.get("index")] += 1
    wanted = set(range(n))
    if seen != wanted:
        fail(NAME, f"n={n}: the stream's choice indexes are {sorted(seen, key=str)}, not "
             f"0..{n - 1}", indexes=sorted(seen, key=str), ignored=seen == {0} and n > 1,
             ignored_field="n")
    twice = sorted(i for i in wanted if finished[i] != 1)
    if twice:
        fail(NAME, f"n={n}: choices {twice} do not finish exactly once",
             finishes={str(k): v for k, v in finished.items()})
