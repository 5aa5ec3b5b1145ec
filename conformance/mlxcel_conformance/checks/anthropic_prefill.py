"""Anthropic prefill (`anthropic_prefill`): a request whose last message is the assistant's is
answered by the continuation of that message, not by a new turn.

Source: Anthropic's API reference, Messages, ``messages``: "If the final message uses the
assistant role, the response content will continue immediately from the content in that
message."

How it is judged without knowing the model: the same greedy request is sent twice, first
without a prefill (its text is the *answer*), then with the answer's first half of words as a
trailing assistant message (the *prefill*, cut at a word's end so it has no trailing
whitespace, which Anthropic refuses). A server that continues the prefill sees the prompt the
first request had reached at that point, so its greedy continuation goes on with the word the
answer went on with; a server that ignores the prefill (drops it, or answers it with a new
turn) starts a reply of its own. Only the first continued word is compared: a continuation that
picks up where the prefill ended has not restarted the turn, whatever it says after.
"""

from __future__ import annotations

from mlxcel_conformance.checks.registry import check, fail
from mlxcel_conformance.checks.verdict_policy import VerdictClass
from mlxcel_conformance.errors import Severity

NAME = "anthropic_prefill"
# Fewer words leave no word after the prefill that is surely whole (the answer's last word may
# be cut by max_tokens).
MIN_WORDS = 3


def prefill_from(answer: str) -> str | None:
    """The answer up to the end of the first half of its words, as written (None when it has
    fewer than ``MIN_WORDS`` words: nothing to judge a continuation by)."""
    words = answer.split()
    if len(words) < MIN_WORDS:
        return None
    end = 0
    for word in words[:len(words) // 2]:
        end = answer.index(word, end) + len(word)
    return answer[:end]


def next_word(answer: str, prefill: str) -> str:
    """The word the answer goes on with after ``prefill`` (one of its own first words)."""
    return answer[len(prefill):].split()[0]


@check(NAME, severity=Severity.HIGH,
       description="a trailing assistant message is continued (Anthropic's prefill): the "
                   "answer picks up where it ends, not a new turn",
       verdicts=frozenset({VerdictClass.FAIL, VerdictClass.IGNORED}))
def check_anthropic_prefill(answer: str, prefill: str, continuation: str) -> None:
    """``answer``: the greedy text without a prefill; ``prefill``: its head (``prefill_from``)
    sent as the final assistant message; ``continuation``: the text then answered."""
    expected = next_word(answer, prefill)
    words = continuation.split()
    if words and words[0] == expected:
        return
    repeated = continuation.lstrip().startswith(prefill.strip())
    # repeating the prefill, or answering as without it: the prefill was accepted and unread
    ignored = repeated or continuation == answer
    fail(NAME, f"the answer to a prefill {prefill[-40:]!r} does not continue it: it should go "
         f"on with {expected!r} as the same request without the prefill did, and "
         f"{'repeats the prefill (a new turn)' if repeated else 'starts with'} "
         f"{continuation[:40]!r}", ignored=ignored,
         ignored_field="a trailing assistant message (prefill)", prefill=prefill, answer=answer,
         continuation=continuation)
