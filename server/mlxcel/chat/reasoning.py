"""Reasoning (``<think>…</think>``) split from generated text (placeholder).

The chat-semantics branch owns the full version; this one has the same signature and reads
only the Qwen3/DeepSeek ``<think>`` markup.
"""

from __future__ import annotations

from ..engine.model import LoadedModel

OPEN = "<think>"
CLOSE = "</think>"


def split_reasoning(
    model: LoadedModel, text: str, prompt_opens_reasoning: bool
) -> tuple[str | None, str]:
    """``(reasoning, content)``; reasoning is None when the text carries none.

    With ``prompt_opens_reasoning`` the text starts inside the block (the template ended the
    prompt with ``<think>\\n``); an unclosed block is all reasoning.
    """
    del model
    body = text
    if not prompt_opens_reasoning:
        stripped = text.lstrip()
        if not stripped.startswith(OPEN):
            return None, text
        body = stripped[len(OPEN) :]
    if CLOSE not in body:
        return body.strip("\n"), ""
    reasoning, content = body.split(CLOSE, 1)
    return reasoning.strip("\n"), content.lstrip("\n")
