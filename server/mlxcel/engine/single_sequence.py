"""What the engine asks of a request decoding on the single-sequence lane, whichever runner
holds it: ``SoloRun`` (mlx-lm's ``generate_step``, engine/solo.py), ``SpeculativeRun``
(drafts verified in one pass, engine/speculative.py) or ``VisionRun`` (mlx-vlm,
engine/vision.py). The engine steps each the same way; only a ``SoloRun`` may move into the
batch (``SoloRun.handover``)."""

from __future__ import annotations

from typing import Any, Protocol

from ..generation import DraftStats
from .solo import SoloResponse


class SingleSequenceRun(Protocol):
    """One sequence decoding outside the batch, one token per ``next``."""

    @property
    def cache(self) -> list[Any]:
        """Its KV cache, donated to the prompt cache when it ends (with ``held_tokens``)."""
        ...

    @property
    def draft_stats(self) -> DraftStats | None:
        """A speculative run's drafting totals; None for the others."""
        ...

    def next(self) -> SoloResponse:
        """The next token, shaped like a ``BatchGenerator`` response; ``StopIteration`` when
        the runner has nothing more."""
        ...

    def held_tokens(self) -> list[int]:
        """The token ids whose keys and values ``cache`` holds, in order."""
        ...

    def close(self) -> None:
        """Stop decoding; the cache is left as it is."""
        ...
