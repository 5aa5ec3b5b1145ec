"""Reasoning (``<think>…</think>``) split from the answer: which markers a model uses, whether
the rendered prompt already opened a reasoning block, and the non-streaming split.

The streaming split lives in ``stream_filter.ChatOutputParser``; ``split_reasoning`` runs the
same parser over the whole text, so streamed and non-streamed answers agree.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..engine.model import LoadedModel


@dataclass(frozen=True)
class ReasoningMarkers:
    open: str = "<think>"
    close: str = "</think>"


THINK = ReasoningMarkers()


def reasoning_markers(model: LoadedModel) -> ReasoningMarkers | None:
    """``<think>`` markers when the model's template or vocabulary has them."""
    if THINK.open in (model.chat_template or ""):
        return THINK
    try:
        vocab = model.tokenizer.get_vocab()
    except (AttributeError, TypeError):
        return None
    return THINK if THINK.open in vocab and THINK.close in vocab else None


def prompt_opens_reasoning(prompt_text: str, markers: ReasoningMarkers | None) -> bool:
    """True when the generation prompt ends inside an open reasoning block (``…<think>\\n``)."""
    if markers is None:
        return False
    tail = prompt_text.rstrip()
    return tail.endswith(markers.open)


def split_reasoning(
    model: LoadedModel, text: str, prompt_opens_reasoning: bool
) -> tuple[str | None, str]:
    """(reasoning, content) of a finished generation; reasoning is None when there was none."""
    from .stream_filter import ChatOutputParser

    parser = ChatOutputParser(
        reasoning=reasoning_markers(model), starts_in_reasoning=prompt_opens_reasoning
    )
    parser.feed(text)
    parser.finish()
    return parser.reasoning, parser.content
