"""llama-server's ``completion_probabilities``, and a final answer that carries them encoded
without holding the interpreter lock for long.

With ``n_probs`` up to the vocabulary, a non-streamed answer's probabilities can be megabytes
of JSON; one ``json.dumps`` call over them holds the interpreter lock for all of it, and the
event loop, on another thread, waits that long. ``encode_final`` encodes them one token at a
time, so the loop runs between two tokens, and holds no more than one token's dictionaries.
"""

from __future__ import annotations

import json
from typing import Any

from ...generation import TokenLogprob


def completion_probabilities(items: tuple[TokenLogprob, ...]) -> list[dict[str, Any]]:
    """llama-server's ``completion_probabilities``: per generated token its id, text, bytes
    and log probability, with the ``n_probs`` most likely tokens at that step."""
    return [
        {"id": lp.token_id, "token": lp.token, "bytes": list(lp.bytes), "logprob": lp.logprob,
         "top_logprobs": [{"id": t.token_id, "token": t.token, "bytes": list(t.bytes),
                           "logprob": t.logprob} for t in lp.top]}
        for lp in items
    ]


def _dumps(value: Any) -> str:
    # Starlette's JSONResponse rendering: UTF-8, no NaN, no spaces.
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def encode_final(body: dict[str, Any], probabilities: list[TokenLogprob] | None) -> str:
    """``body`` as JSON, with ``completion_probabilities`` (one token at a time) last when
    given."""
    head = _dumps(body)
    if probabilities is None:
        return head
    items = ",".join(_dumps(completion_probabilities((lp,))[0]) for lp in probabilities)
    joiner = "," if body else ""
    return f'{head[:-1]}{joiner}"completion_probabilities":[{items}]}}'
