"""The thinking budget: how many tokens a reasoning block (``<think>…</think>``) may use
before the server closes it and the model goes on to the answer.

A request gives the budget under any of three aliases (``thinking_budget_tokens``,
``reasoning_budget_tokens``, ``reasoning_budget``); ``-1`` or absent means unlimited, ``0``
closes the block at once. The budget counts the tokens generated inside the block, whether the
prompt opened it (a template whose generation prompt ends in ``<think>\\n``) or the model did.
Once the count reaches the budget, the close marker and a blank line are forced one token at a
time through a logits processor, so the answer that follows is generated as usual.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import mlx.core as mx

from ..errors import InvalidRequestError
from ..generation import LogitsProcessor, LogitsProcessorFactory
from ..generation.model_view import ModelView
from .reasoning import ReasoningMarkers, prompt_opens_reasoning, reasoning_markers

ALIASES = ("thinking_budget_tokens", "reasoning_budget_tokens", "reasoning_budget")
UNLIMITED = -1


def requested_budget(fields: dict[str, Any]) -> int | None:
    """The budget a request asked for; ``None`` when unlimited or absent. When several aliases
    are given, the first in ``ALIASES`` order wins. A value that is not an integer >= -1 is a
    400."""
    given = {name: fields[name] for name in ALIASES if fields.get(name) is not None}
    for name, value in given.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < UNLIMITED:
            raise InvalidRequestError(
                f"{name} must be an integer >= -1 (-1 = unlimited).", param=name)
    budget = next(iter(given.values()), None)
    return None if budget is None or budget == UNLIMITED else int(budget)


class _BudgetProcessor:
    """Counts the tokens inside the reasoning block and forces its close at the budget."""

    def __init__(self, budget: int, open_ids: Sequence[int], marker_ids: Sequence[int],
                 close_ids: Sequence[int], inside: bool) -> None:
        self.budget = budget
        self.open_ids = list(open_ids)
        self.marker_ids = list(marker_ids)  # the close marker alone: the model may write it
        self.close_ids = list(close_ids)  # the close marker and a blank line: what is forced
        self.inside = inside
        self.done = False
        self.count = 0
        self.forcing: int | None = None  # index into close_ids of the next forced token
        self.generated: list[int] = []
        self.seen: int | None = None

    def _ends_with(self, ids: list[int]) -> bool:
        return bool(ids) and self.generated[-len(ids):] == ids

    def _observe(self, token: int) -> None:
        self.generated.append(token)
        if self.forcing is not None:
            self.forcing += 1
            if self.forcing >= len(self.close_ids):
                self.forcing, self.inside, self.done = None, False, True
        elif self.inside:
            self.count += 1
            if self._ends_with(self.marker_ids):
                self.inside, self.done = False, True
        elif not self.done and self._ends_with(self.open_ids):
            self.inside, self.count = True, 0

    def __call__(self, tokens: Any, logits: mx.array) -> mx.array:
        # ``tokens`` is every id so far, prompt included: the first call sees the prompt
        # alone, each later call one more sampled token.
        flat = tokens.reshape(-1)
        if self.seen is not None:
            for token in flat[self.seen:].tolist():
                self._observe(int(token))
        self.seen = int(flat.size)
        if self.inside and self.forcing is None and self.count >= self.budget:
            self.forcing = 0
        if self.forcing is None:
            return logits
        keep = mx.arange(logits.shape[-1]) == self.close_ids[self.forcing]
        return mx.where(keep, logits, mx.array(-float("inf"), dtype=logits.dtype))


def budget_factory(model: ModelView, budget: int | None, prompt_opens: bool,
                   markers: ReasoningMarkers | None = None) -> LogitsProcessorFactory | None:
    """A processor factory enforcing ``budget``; ``None`` when there is nothing to enforce
    (no budget, or a model without reasoning markers)."""
    markers = markers or reasoning_markers(model)
    if budget is None or markers is None:
        return None
    open_ids = model.encode(markers.open)
    marker_ids = model.encode(markers.close)
    close_ids = marker_ids + model.encode("\n\n")

    def make() -> LogitsProcessor:
        return _BudgetProcessor(budget, open_ids, marker_ids, close_ids, prompt_opens)

    return make


def raw_prompt_factories(model: ModelView, budget: int | None, prompt: Sequence[int]
                         ) -> tuple[LogitsProcessorFactory, ...]:
    """For a raw (untemplated) prompt: the budget processor, opened when the prompt text
    itself ends inside a reasoning block."""
    markers = reasoning_markers(model)
    if budget is None or markers is None:
        return ()
    opens = prompt_opens_reasoning(model.decode(list(prompt[-8:])), markers)
    factory = budget_factory(model, budget, opens, markers)
    return (factory,) if factory is not None else ()
