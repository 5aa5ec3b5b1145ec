"""``engine/lane_choice.py``: where a starting request decodes, case by case."""

from __future__ import annotations

import pytest

from mlxcel.engine.lane_choice import Lane, LaneFacts, lane_for


@pytest.mark.parametrize(("facts", "lane"), [
    # A VLM always decodes on its own lane, whatever else holds.
    (LaneFacts(vision_model=True, lane_free=False, batch_empty=False), "vision"),
    # Sharded serving: one request at a time, always the single-sequence lane.
    (LaneFacts(solo_only=True, batch_empty=False, queue_empty=False), "solo"),
    # A lone plain request on an idle engine decodes alone.
    (LaneFacts(), "solo"),
    # ... but not when others decode or wait: it joins the batch.
    (LaneFacts(batch_empty=False), "batch"),
    (LaneFacts(queue_empty=False), "batch"),
    # A speculative or adapter request takes a free lane even beside a busy batch.
    (LaneFacts(needs_lane=True, batch_empty=False, queue_empty=False), "solo"),
    # The lane taken: a speculative request decodes plainly in the batch.
    (LaneFacts(needs_lane=True, lane_free=False), "batch"),
    (LaneFacts(lane_free=False), "batch"),
])
def test_lane_for(facts: LaneFacts, lane: Lane) -> None:
    assert lane_for(facts) == lane
