"""Where a request starting in a free slot decodes: one pure rule, tested on its own
(server/tests/test_lane_choice.py), which the engine's plan applies to each admission
(engine/step_plan.py).

- ``vision``: a vision-language model decodes one sequence at a time through mlx-vlm
  (engine/vision.py);
- ``solo``: the single-sequence lane, mlx-lm's ``generate_step`` (engine/solo.py), or a
  speculative run (engine/speculative.py). Sharded serving puts every request there; a
  speculative or LoRA-adapter request takes it whenever it is free (neither can join the batch);
  a plain request takes it when nothing else decodes or waits, since one sequence decodes
  several times faster alone than in a ``BatchGenerator`` of one (docs/design.md, "One request
  alone, several in a batch");
- ``batch``: everything else joins the continuous batch (a plain sequence on the solo lane
  moves in with it). A speculative request finding the lane taken decodes plainly here; an
  adapter request never reaches this rule then: the plan keeps it queued until the lane is free.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Lane = Literal["vision", "solo", "batch"]


@dataclass(frozen=True)
class LaneFacts:
    """What the rule reads: the model, the server's mode, the request and the engine now."""

    vision_model: bool = False
    solo_only: bool = False  # sharded serving (engine/distributed.py)
    lane_free: bool = True  # no sequence on the single-sequence lane
    needs_lane: bool = False  # a drafter was chosen for it, or it names a LoRA adapter
    batch_empty: bool = True  # no sequence in the batch
    queue_empty: bool = True  # no other request waiting for a slot


def lane_for(facts: LaneFacts) -> Lane:
    if facts.vision_model:
        return "vision"
    if facts.solo_only:
        return "solo"
    alone = facts.batch_empty and facts.queue_empty
    if facts.lane_free and (facts.needs_lane or alone):
        return "solo"
    return "batch"
