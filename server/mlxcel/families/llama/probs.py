"""llama-server's ``completion_probabilities``, and a final answer that carries them encoded
without holding the interpreter lock for long.

With ``n_probs`` up to the vocabulary, a non-streamed answer's probabilities can be megabytes
of JSON; one ``json.dumps`` call over them holds the interpreter lock for all of it, and the
event loop, on another thread, waits that long. ``encode_final`` encodes them one token at a
time, so the loop runs between two tokens, and holds no more than one token's dictionaries.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

from ...generation import TokenLogprob, TopLogprob
from ...generation.alternatives import TopAlternatives


def completion_probabilities(items: tuple[TokenLogprob, ...], post_sampling: bool = False
                             ) -> list[dict[str, Any]]:
    """llama-server's ``completion_probabilities``: per generated token its id, text, bytes
    and log probability, with the ``n_probs`` most likely tokens at that step. With
    ``post_sampling_probs``, probabilities (``prob``, ``top_probs``) of the distribution the
    sampler drew from, the tokens its filters removed left out of ``top_probs``."""
    if post_sampling:
        return [
            {"id": lp.token_id, "token": lp.token, "bytes": list(lp.bytes),
             "prob": _probability(lp.logprob),
             "top_probs": [{"id": t.token_id, "token": t.token, "bytes": list(t.bytes),
                            "prob": prob}
                           for t in lp.top if (prob := _probability(t.logprob)) > 0.0]}
            for lp in items
        ]
    return [
        {"id": lp.token_id, "token": lp.token, "bytes": list(lp.bytes), "logprob": lp.logprob,
         "top_logprobs": [{"id": t.token_id, "token": t.token, "bytes": list(t.bytes),
                           "logprob": t.logprob} for t in lp.top]}
        for lp in items
    ]


def _probability(logprob: float) -> float:
    """The rendered logprob as a probability (the renderer's -9999 floor is an impossible
    token: 0)."""
    return 0.0 if logprob <= -9999.0 else math.exp(logprob)


def _dumps(value: Any) -> str:
    # Starlette's JSONResponse rendering: UTF-8, no NaN, no spaces.
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


# The JSON of an entry up to its log probability, per (id, bytes): the same for every answer
# (the text is the bytes decoded), so a vocabulary-sized n_probs answer costs one lookup and
# one float per entry instead of a dictionary and its encoding (~5x faster, measured).
_HEADS: dict[tuple[int, tuple[int, ...]], str] = {}
_MAX_HEADS = 1 << 18


def _head(item: TokenLogprob | TopLogprob) -> str:
    return _head_of(item.token_id, item.token, item.bytes)


def _head_of(token_id: int, token: str, raw: tuple[int, ...]) -> str:
    key = (token_id, raw)
    head = _HEADS.get(key)
    if head is None:
        if len(_HEADS) >= _MAX_HEADS:
            _HEADS.clear()
        head = _HEADS[key] = (f'{{"id":{token_id},"token":{_dumps(token)},'
                              f'"bytes":{_dumps(list(raw))},"logprob":')
    return head


def _top_entries(top: Sequence[TopLogprob]) -> str:
    """The ``top_logprobs`` entries, straight from the engine's arrays when it sent them."""
    if isinstance(top, TopAlternatives):
        piece = top.piece
        return ",".join([f"{_head_of(i, *piece(i))}{v!r}}}" for i, v in top.pairs()])
    return ",".join([f"{_head(t)}{t.logprob!r}}}" for t in top])


def _logprob_entry(lp: TokenLogprob) -> str:
    """``_dumps(completion_probabilities((lp,))[0])``, built from cached pieces."""
    return f'{_head(lp)}{lp.logprob!r},"top_logprobs":[{_top_entries(lp.top)}]}}'


def encode_with_probabilities(body: dict[str, Any],
                              probabilities: Sequence[TokenLogprob] | None,
                              post_sampling: bool = False) -> str:
    """``body`` as JSON, with ``completion_probabilities`` last when given, each token's
    entry built from cached pieces (``_logprob_entry``): a streamed partial."""
    head = _dumps(body)
    if probabilities is None:
        return head
    if post_sampling:
        items = [_dumps(completion_probabilities((lp,), True)[0]) for lp in probabilities]
    else:
        items = [_logprob_entry(lp) for lp in probabilities]
    joiner = "," if body else ""
    return f'{head[:-1]}{joiner}"completion_probabilities":[{",".join(items)}]}}'


def encode_final(body: dict[str, Any], probabilities: list[TokenLogprob] | None,
                 post_sampling: bool = False) -> bytes:
    """``body`` as UTF-8 JSON, with ``completion_probabilities`` (one token at a time, in the
    ``post_sampling_probs`` form when asked) last when given.

    Built in bytes, each token's entry encoded on its own: one ``str`` of the whole answer
    would be two bytes a character once any token is not Latin-1, and joining and encoding
    10 MB of it were single calls of 50-150 ms with the interpreter lock held."""
    head = _dumps(body).encode("utf-8")
    if probabilities is None:
        return head
    if post_sampling:
        items = [_dumps(completion_probabilities((lp,), True)[0]).encode("utf-8")
                 for lp in probabilities]
    else:
        items = [_logprob_entry(lp).encode("utf-8") for lp in probabilities]
    joiner = b"," if body else b""
    return b"".join([head[:-1], joiner, b'"completion_probabilities":[', b",".join(items),
                     b"]}"])
