"""The most likely tokens of one step, as the engine hands them over: two arrays, not an object
per alternative.

``n_probs`` (llama-server) asks for up to the whole vocabulary at every token. Built as
``TopLogprob`` objects on the engine thread, 2,048 alternatives cost ~8 ms a token of
interpreter time there, and the millions of objects a few streams kept alive made every
garbage collection and every release of a stream's buffer a pause of hundreds of
milliseconds, for every client. ``TopAlternatives`` keeps the ids and log probabilities as
NumPy arrays from the step's one transfer to the host until a route renders them; routes that
walk it item by item get ``TopLogprob`` objects made on demand, and the fast renderers read
``pairs()``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import overload

import numpy as np

from .events import TopLogprob

# A token id's text and raw bytes (the logprob renderer's cached lookup).
Piece = Callable[[int], tuple[str, tuple[int, ...]]]

# OpenAI's floor for an impossible token; NaN (logits made infinite by a penalty such as
# repetition_penalty 5e-324) and -inf both land there: JSON has neither.
LOGPROB_FLOOR = -9999.0


def clamp_logprobs(values: np.ndarray) -> np.ndarray:
    """Log probabilities as rendered: at most 0, and ``LOGPROB_FLOOR`` for NaN, -inf and
    anything below it."""
    values = values.astype(np.float64)
    with np.errstate(invalid="ignore"):
        keep = values >= LOGPROB_FLOOR
    return np.where(keep, np.minimum(values, 0.0), LOGPROB_FLOOR)


class TopAlternatives(Sequence[TopLogprob]):
    """A step's top alternatives, best first: ``ids`` and rendered ``logprobs`` (float64,
    clamped) as arrays, and the tokenizer lookup that names them."""

    __slots__ = ("ids", "logprobs", "_piece")

    def __init__(self, ids: np.ndarray, logprobs: np.ndarray, piece: Piece) -> None:
        self.ids = ids
        self.logprobs = logprobs
        self._piece = piece

    def __len__(self) -> int:
        return int(self.ids.shape[0])

    @overload
    def __getitem__(self, index: int) -> TopLogprob: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[TopLogprob]: ...

    def __getitem__(self, index: int | slice) -> TopLogprob | Sequence[TopLogprob]:
        if isinstance(index, slice):
            return TopAlternatives(self.ids[index], self.logprobs[index], self._piece)
        token_id = int(self.ids[index])
        text, raw = self._piece(token_id)
        return TopLogprob(token=text, logprob=float(self.logprobs[index]), bytes=raw,
                          token_id=token_id)

    def __iter__(self) -> Iterator[TopLogprob]:
        for token_id, value in self.pairs():
            text, raw = self._piece(token_id)
            yield TopLogprob(token=text, logprob=value, bytes=raw, token_id=token_id)

    def pairs(self) -> Iterator[tuple[int, float]]:
        """(token id, log probability) of each alternative, best first, as Python numbers."""
        return zip(self.ids.tolist(), self.logprobs.tolist(), strict=True)

    def piece(self, token_id: int) -> tuple[str, tuple[int, ...]]:
        """The text and raw bytes of ``token_id``."""
        return self._piece(token_id)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence):
            return NotImplemented
        return tuple(self) == tuple(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"TopAlternatives({len(self)} tokens)"
