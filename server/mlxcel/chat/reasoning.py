"""Reasoning split from the answer: which markers a model uses (``<think>…</think>``, or
Harmony's analysis channel), whether the rendered prompt already opened a reasoning block, and
the non-streaming split.

The split itself is the output parser's (``stream_filter.ChatOutputParser``), streamed or
read whole (``output.read_output``), so both modes agree.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..generation.model_view import ModelView


@dataclass(frozen=True)
class ReasoningMarkers:
    open: str = "<think>"
    close: str = "</think>"
    # Channel headers that open the answer (Harmony's final channel): dropped from the content.
    headers: tuple[str, ...] = ()


THINK = ReasoningMarkers()
# Harmony (GPT-OSS): ``<|channel|>analysis<|message|>…<|end|>`` is the reasoning, then
# ``<|start|>assistant<|channel|>final<|message|>`` opens the answer.
HARMONY = ReasoningMarkers("<|channel|>analysis<|message|>", "<|end|>",
                           ("<|start|>assistant", "<|channel|>final<|message|>"))


def reasoning_markers(model: ModelView) -> ReasoningMarkers | None:
    """The reasoning markers the model's template (or, for ``<think>``, its vocabulary) uses."""
    template = model.chat_template or ""
    if THINK.open in template:
        return THINK
    if "<|channel|>" in template and "analysis" in template:
        return HARMONY
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
