"""The engine's scheduling rules (engine/step_plan.py), one table row each: from a queue, the
free slots and the engine's state, the plan the loop executes."""

from __future__ import annotations

import dataclasses

import pytest

from mlxcel.engine.step_plan import (
    ARRIVAL_QUIET_S,
    ARRIVAL_WINDOW_S,
    IDLE_WAIT_S,
    STEP_RUNNING,
    Admission,
    EngineNow,
    QueuedRequest,
    StepPlan,
    plan,
)
from mlxcel.generation import PRIORITY_RANK

QUIET = 1.0  # seconds since arrival: long past any burst wait
SETTLED = ARRIVAL_QUIET_S  # an idle engine that has waited out the burst


def waiting(*specs: str, waited_s: float = QUIET) -> list[QueuedRequest]:
    """One queued request per spec, in arrival order: a priority ("high", "normal", "low"),
    with "+adapter" or "+draft" for a LoRA adapter or a request a drafter would serve."""
    out = []
    for key, spec in enumerate(specs):
        priority, *flags = spec.split("+")
        out.append(QueuedRequest(key, PRIORITY_RANK[priority], key, waited_s,
                                 adapter="adapter" in flags, speculative="draft" in flags))
    return out


CASES: list[tuple[str, list[QueuedRequest], list[int], EngineNow, StepPlan]] = [
    ("idle, nothing queued: sleep",
     [], [0, 1], EngineNow(),
     StepPlan(idle_wait_s=IDLE_WAIT_S)),
    ("an idle engine seeing requests waits for the burst to finish arriving",
     waiting("normal", waited_s=QUIET), [0, 1], EngineNow(),
     StepPlan(burst_wait_s=ARRIVAL_QUIET_S)),
    ("burst still arriving: wait for it to stop",
     waiting("normal", "normal", waited_s=0.001), [0, 1], EngineNow(burst_waited_s=0.003),
     StepPlan(burst_wait_s=ARRIVAL_QUIET_S - 0.001)),
    ("burst quiet for long enough: start it together",
     waiting("normal", "normal", waited_s=ARRIVAL_QUIET_S), [0, 1],
     EngineNow(burst_waited_s=ARRIVAL_QUIET_S),
     StepPlan(admissions=(Admission(0, 0, "batch"), Admission(1, 1, "batch")),
              step_batch=True)),
    ("burst window spent: start although requests keep arriving",
     waiting("normal", "normal", waited_s=0.0), [0, 1],
     EngineNow(burst_waited_s=ARRIVAL_WINDOW_S),
     StepPlan(admissions=(Admission(0, 0, "batch"), Admission(1, 1, "batch")),
              step_batch=True)),
    ("a busy engine never waits for a burst",
     waiting("normal", waited_s=0.0), [1], EngineNow(batch_size=1),
     StepPlan(admissions=(Admission(0, 1, "batch"),), step_batch=True)),
    ("one request alone takes the solo lane",
     waiting("normal"), [0, 1], EngineNow(burst_waited_s=SETTLED),
     StepPlan(admissions=(Admission(0, 0, "solo"),), step_solo=True)),
    ("priority then arrival fill the free slots",
     waiting("low", "normal", "high", "normal"), [0, 2], EngineNow(batch_size=1),
     StepPlan(admissions=(Admission(2, 0, "batch"), Admission(1, 2, "batch")),
              step_batch=True)),
    ("more queued than free slots: the rest wait",
     waiting("normal", "normal", "normal"), [3], EngineNow(batch_size=3),
     StepPlan(admissions=(Admission(0, 3, "batch"),), step_batch=True)),
    ("no free slot: only the batch steps",
     waiting("high"), [], EngineNow(batch_size=4),
     StepPlan(step_batch=True)),
    ("the solo lane taken: a plain request joins the batch, the lane's sequence stays",
     waiting("normal"), [1], EngineNow(solo="fixed"),
     StepPlan(admissions=(Admission(0, 1, "batch"),), step_solo=True, step_batch=True)),
    ("a movable solo sequence joins the batch with the first batch admission",
     waiting("normal", "normal"), [1, 2], EngineNow(solo="movable"),
     StepPlan(admissions=(Admission(0, 1, "batch"), Admission(1, 2, "batch")),
              move_solo=True, step_batch=True)),
    ("an adapter takes the free lane ahead of the batch",
     waiting("normal+adapter", "normal"), [0, 1], EngineNow(burst_waited_s=SETTLED),
     StepPlan(admissions=(Admission(0, 0, "solo"), Admission(1, 1, "batch")),
              step_solo=True, step_batch=True)),
    ("an adapter waits while the lane is taken; the request behind it goes ahead",
     waiting("high+adapter", "low"), [1, 2], EngineNow(solo="fixed"),
     StepPlan(admissions=(Admission(1, 1, "batch"),), step_solo=True, step_batch=True)),
    ("the solo sequence's move frees the lane for an adapter behind it",
     waiting("normal", "normal+adapter"), [1, 2], EngineNow(solo="movable"),
     StepPlan(admissions=(Admission(0, 1, "batch"), Admission(1, 2, "solo")),
              move_solo=True, step_solo=True, step_batch=True)),
    ("a speculative request drafts on the free lane",
     waiting("normal+draft", "normal"), [0, 1], EngineNow(burst_waited_s=SETTLED),
     StepPlan(admissions=(Admission(0, 0, "solo", speculate=True), Admission(1, 1, "batch")),
              step_solo=True, step_batch=True)),
    ("a speculative request finding the lane taken decodes plainly in the batch",
     waiting("normal+draft"), [1], EngineNow(solo="fixed"),
     StepPlan(admissions=(Admission(0, 1, "batch"),), step_solo=True, step_batch=True)),
    ("a vision model starts one sequence on its lane",
     waiting("normal", "normal"), [0, 1], EngineNow(vision_model=True, burst_waited_s=SETTLED),
     StepPlan(admissions=(Admission(0, 0, "vision"),), step_solo=True)),
    ("a vision model's lane taken: nothing starts",
     waiting("normal"), [1], EngineNow(solo="fixed", vision_model=True),
     StepPlan(step_solo=True)),
    ("a vision model never drafts",
     waiting("normal+draft"), [0], EngineNow(vision_model=True, burst_waited_s=SETTLED),
     StepPlan(admissions=(Admission(0, 0, "vision"),), step_solo=True)),
    ("sharded serving: every request on the solo lane, without a drafter",
     waiting("normal+draft", "normal"), [0], EngineNow(solo_only=True, burst_waited_s=SETTLED),
     StepPlan(admissions=(Admission(0, 0, "solo"),), step_solo=True)),
]


@pytest.mark.parametrize(("queue", "free_slots", "engine", "expected"),
                         [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_plan(queue: list[QueuedRequest], free_slots: list[int], engine: EngineNow,
              expected: StepPlan) -> None:
    got = plan(queue, free_slots, engine)
    assert got.burst_wait_s == pytest.approx(expected.burst_wait_s)
    assert got == dataclasses.replace(expected, burst_wait_s=got.burst_wait_s)


def test_plan_reads_only_its_inputs() -> None:
    """The same snapshots give the same plan, and the plan is a frozen value."""
    queue, engine = waiting("normal", "high+adapter"), EngineNow(batch_size=2)
    first = plan(queue, [2, 3], engine)
    assert plan(queue, [2, 3], engine) == first
    with pytest.raises(AttributeError):
        first.move_solo = True  # type: ignore[misc]


@pytest.mark.parametrize("engine", [EngineNow(batch_size=3), EngineNow(solo="fixed"),
                                    EngineNow(solo="movable", batch_size=2)],
                         ids=["batch", "solo", "both"])
def test_an_empty_queue_while_decoding_plans_what_step_running_does(engine: EngineNow) -> None:
    """The engine loop skips ``plan`` while nothing waits and something decodes, using
    ``STEP_RUNNING``: it admits and moves nothing, and the loop steps each lane only where
    that lane holds a request, which is what the plan's flags say."""
    planned = plan([], [0, 1], engine)
    assert planned.admissions == STEP_RUNNING.admissions == ()
    assert not planned.move_solo and not STEP_RUNNING.move_solo
    assert planned.burst_wait_s == STEP_RUNNING.burst_wait_s == 0
    assert planned.step_solo == (engine.solo != "free") and STEP_RUNNING.step_solo
    assert planned.step_batch == (engine.batch_size > 0) and STEP_RUNNING.step_batch
