"""Rendering engine token logprobs in OpenAI's chat shape."""

from __future__ import annotations

from typing import Any

from ..generation import TokenLogprob


def render_token_logprob(lp: TokenLogprob) -> dict[str, Any]:
    return {
        "token": lp.token,
        "logprob": lp.logprob,
        "bytes": list(lp.bytes),
        "top_logprobs": [
            {"token": t.token, "logprob": t.logprob, "bytes": list(t.bytes)} for t in lp.top
        ],
    }


def render_logprobs(items: tuple[TokenLogprob, ...]) -> dict[str, Any]:
    return {"content": [render_token_logprob(lp) for lp in items], "refusal": None}
