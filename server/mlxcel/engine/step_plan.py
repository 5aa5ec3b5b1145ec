"""What the engine loop does in one iteration, decided by one pure function.

``plan(queue, free_slots, engine)`` reads plain snapshots (the waiting requests, the free
slots, what the batch and the single-sequence lane hold) and returns a ``StepPlan``; the loop
in engine/worker.py executes it and touches MLX, the queue and the slots. This is vLLM v1's
split between ``Scheduler.schedule()``, which returns a ``SchedulerOutput`` for one forward
step, and the engine core that runs it
(https://github.com/vllm-project/vllm/blob/main/vllm/v1/core/sched/scheduler.py,
``Scheduler.schedule``). Every scheduling rule lives here or in engine/lane_choice.py, and
server/tests/test_step_plan.py states them as a table.

The rules, in the order ``plan`` applies them:

- **A burst starts together.** An idle engine that has requests waiting first waits until
  none has arrived for ``ARRIVAL_QUIET_S`` (``ARRIVAL_WINDOW_S`` at most): the requests of a
  burst, which the event loop parses one after another, then start in one batch. Without it
  the first decoded alone for a step (~30 ms with the others being parsed) while the rest
  waited (benchmarks/README.md, "A burst starts together").
- **Priority, then arrival.** Free slots take waiting requests in X-Priority order, then in
  order of arrival.
- **A LoRA adapter waits for the single-sequence lane** (engine/adapters.py): while the lane
  is taken it keeps its place and requests behind it go ahead.
- **One lane rule** (engine/lane_choice.py) picks each admission's lane; a vision-language
  model and sharded serving decode one sequence at a time, so nothing more starts while their
  lane is taken.
- **The solo sequence joins the batch** when a request starts in the batch and the sequence
  on the single-sequence lane can move (engine/solo.py, ``SoloRun.handover``): each step is
  then one forward pass rather than two.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from .lane_choice import Lane, LaneFacts, lane_for

ARRIVAL_QUIET_S = 0.005
ARRIVAL_WINDOW_S = 0.020
# How long an idle engine with nothing to start sleeps before it looks again (a push wakes it).
IDLE_WAIT_S = 0.1

# The single-sequence lane: empty, holding a sequence that may move into the batch
# (a plain ``SoloRun``), or holding one that stays (speculative, adapter, vision, processors).
SoloLane = Literal["free", "movable", "fixed"]


@dataclass(frozen=True)
class QueuedRequest:
    """One waiting request, as the plan sees it."""

    key: int  # the caller's handle for it (its index in the snapshot)
    rank: int  # X-Priority rank: lower starts first (generation.PRIORITY_RANK)
    order: int  # arrival order: lower arrived first
    waited_s: float  # seconds since it arrived
    adapter: bool = False  # names a LoRA adapter: only the single-sequence lane serves it
    speculative: bool = False  # a drafter would serve it (engine/speculative.py)


@dataclass(frozen=True)
class EngineNow:
    """The engine's state apart from the queue and the slots."""

    batch_size: int = 0  # sequences in the batch
    solo: SoloLane = "free"
    vision_model: bool = False  # a VLM: every request decodes on the vision lane
    solo_only: bool = False  # sharded serving (engine/distributed.py)
    burst_waited_s: float = 0.0  # how long this idle engine has waited for a burst so far


@dataclass(frozen=True)
class Admission:
    """Start request ``key`` in ``slot`` on ``lane``; ``speculate``: with its drafter."""

    key: int
    slot: int
    lane: Lane
    speculate: bool = False


@dataclass(frozen=True)
class StepPlan:
    """What the loop does this iteration, in this order: wait for a burst (and plan again),
    start ``admissions`` (moving the solo sequence into the batch before the first that joins
    the batch, when ``move_solo``), step the solo lane, step the batch, or sleep while idle."""

    burst_wait_s: float = 0.0
    admissions: tuple[Admission, ...] = ()
    move_solo: bool = False
    step_solo: bool = False
    step_batch: bool = False
    idle_wait_s: float = 0.0


# The plan of an empty queue while something decodes: step the lanes (what ``plan`` returns
# then), for the loop to use without planning.
STEP_RUNNING = StepPlan(step_solo=True, step_batch=True)


def burst_wait(queue: Sequence[QueuedRequest], idle: bool, waited_s: float) -> float:
    """Seconds an idle engine still waits for a burst to finish arriving; 0 to start now.

    Quiet is counted from the later of the newest arrival and the start of the wait, so an
    engine thread that wakes late (busy CPUs) still gives the burst ``ARRIVAL_QUIET_S``."""
    if not idle or not queue:
        return 0.0
    quiet_for = min(min(request.waited_s for request in queue), waited_s)
    return max(0.0, min(ARRIVAL_QUIET_S - quiet_for, ARRIVAL_WINDOW_S - waited_s))


def plan(queue: Sequence[QueuedRequest], free_slots: Sequence[int], engine: EngineNow) -> StepPlan:
    """This iteration's plan (module docstring: the rules)."""
    idle = engine.batch_size == 0 and engine.solo == "free"
    wait = burst_wait(queue, idle, engine.burst_waited_s)
    if wait > 0:
        return StepPlan(burst_wait_s=wait)
    waiting = sorted(queue, key=lambda request: (request.rank, request.order))
    solo, batch_size, move_solo = engine.solo, engine.batch_size, False
    admissions: list[Admission] = []
    one_at_a_time = engine.vision_model or engine.solo_only
    for slot in free_slots:
        if solo != "free" and one_at_a_time:
            break
        chosen = next((r for r in waiting if solo == "free" or not r.adapter), None)
        if chosen is None:
            break
        waiting.remove(chosen)
        # Sharded serving mirrors model calls, not cache trims, and a VLM decodes on its own
        # lane: neither drafts.
        speculative = chosen.speculative and not one_at_a_time
        lane = lane_for(LaneFacts(
            vision_model=engine.vision_model, solo_only=engine.solo_only,
            lane_free=solo == "free", needs_lane=speculative or chosen.adapter,
            batch_empty=batch_size == 0, queue_empty=not waiting))
        if lane == "batch":
            batch_size += 1
            if solo == "movable":
                solo, move_solo = "free", True
            admissions.append(Admission(chosen.key, slot, lane))
            continue
        # A plain request alone may move into the batch later; the others stay on the lane.
        plain = not (speculative or chosen.adapter or one_at_a_time)
        solo = "movable" if plain else "fixed"
        admissions.append(Admission(chosen.key, slot, lane, speculate=speculative))
    busy = solo != "free" or batch_size > 0
    return StepPlan(admissions=tuple(admissions), move_solo=move_solo,
                    step_solo=solo != "free", step_batch=batch_size > 0,
                    idle_wait_s=0.0 if busy else IDLE_WAIT_S)
