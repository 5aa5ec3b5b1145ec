"""Decode lanes: the NumPy batch's sequences spread over the server's own process (lane 0,
``LocalLane``) and other processes (``Lane``), each lane holding its sequences' keys and values,
stepping on its own with one BLAS thread, over its own copy of the weights
(``packed_weights.py``). Below ``SPREAD_FROM`` sequences lane 0 holds them all, on every BLAS
thread: the in-process batch as it was; from it, new sequences go to the other lanes, which
step while the engine thread hands out tokens (lane 0 computes in that thread, so it only
takes the sequences of a small batch).

Why: served, the engine thread's products on two OpenBLAS threads wait about half their time:
for the partner thread's share of each product (OpenBLAS splits it in fixed halves, and the
partner shares its core with the event loop), and for the interpreter lock that the event loop
holds when a product returns. Two servers of one thread each served 0.98-1.29x the tokens of one
server on two threads (benchmarks/README.md). A lane is such a server without the HTTP side: it
steps on its own, takes no lock but its own, and waits for no partner.

The protocol over each lane's socket (``lane_process.serve`` answers in order; first the
weights, ``("weights", skeleton, size)`` and the packed buffer, answered ``("ready",)``):

- ``("step", pieces, threads)``: feed the pieces on that many BLAS threads; answers
  ``("step", logits)``;
- ``("add", keys, values)``: a new slot (the next one) holding those keys and values;
- ``("held", slot, length)``: answers ``("held", keys, values)``, copies of the slot's first
  ``length`` positions;
- ``("remove", slot)``: free the slot, the last slot's sequence moving into it (as ``KVPool``);
- ``("reset",)``: free every slot.

A lane that fails answers ``("error", text)`` and goes on; ``Lane`` raises ``LaneError`` on it,
and on a lane that is gone (its pipe closed), so the engine ends the batch's requests and
starts a new batch (``worker.py``), which starts lanes anew where one died.
"""

from __future__ import annotations

import atexit
import logging
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from multiprocessing.connection import Connection, wait
from typing import Any

import numpy as np

from . import MEMORY_SHARE, available_memory, numpy_blas_setter
from .forward import Piece
from .lane_process import LaneState
from .packed_weights import Packed, nbytes, pack
from .products import MIN_THREADED_PARAMETERS, usable_cores
from .weights import Weights

log = logging.getLogger("mlxcel.engine")

# ``--decode-lanes 0`` spreads models of MIN_THREADED_PARAMETERS to this many parameters over
# one lane per core, at most MAX_AUTO_LANES: above it a step is bound by reading the weights,
# which every lane reads in full.
MAX_LANED_PARAMETERS = 1 << 28
MAX_AUTO_LANES = 2
# Below this many sequences in all, new ones join the fullest lane (which then steps alone, on
# every BLAS thread); from it, the emptiest. Measured on 2 cores (benchmarks/README.md): 8
# streams over two one-thread lanes served 0.78-0.92x one lane's tokens on two threads.
# The default of ``--decode-lanes-from``.
SPREAD_FROM = 12
# Seconds a new lane may take to import numpy and map the weights before it is given up.
START_TIMEOUT = 120.0
# Seconds a lane may take to answer (a step reads at most --prefill-step-size prompt tokens): a
# lane that neither answers nor dies in this time fails the batch's step and is started anew.
STEP_TIMEOUT = 300.0


class LaneError(RuntimeError):
    """A lane failed a step or is gone."""


class LocalLane:
    """Lane 0, in the engine's own process: a step is computed when it is sent, on numpy's
    BLAS of this process. Below ``SPREAD_FROM`` sequences it holds them all, which is the
    in-process NumPy batch as it was, plus the bookkeeping of a lane."""

    index = 0
    remote = False

    def __init__(self, weights: Weights, set_threads: Callable[[int], object]) -> None:
        self.state = LaneState(weights, set_threads)
        self.count = 0
        self.in_flight: list[Any] | None = None
        self.sent_at = 0
        self._logits: np.ndarray | None = None

    def send(self, *message: Any) -> None:
        self.state.handle(message)

    def step(self, plan: list[Any], pieces: list[Piece], threads: int, sent_at: int) -> None:
        self.in_flight, self.sent_at = plan, sent_at
        self._logits = self.state.handle(("step", pieces, threads))[1]  # type: ignore[index]

    def done(self) -> bool:
        return True

    def result(self) -> tuple[list[Any], np.ndarray]:
        assert self.in_flight is not None and self._logits is not None
        plan, logits = self.in_flight, self._logits
        self.in_flight = self._logits = None
        return plan, logits

    def held(self, slot: int, length: int) -> tuple[np.ndarray, np.ndarray]:
        return self.state.pool.held(slot, length)

    def reset(self) -> bool:
        self.count, self.in_flight, self._logits = 0, None, None
        self.state.handle(("reset",))
        return True

    def stop(self) -> None:
        pass


class Lane:
    """The engine's side of one lane in its own process: the process, its socket, and what it
    holds."""

    remote = True

    def __init__(self, index: int) -> None:
        self.index = index
        self.count = 0  # slots held
        self.in_flight: list[Any] | None = None  # the plan of the step the lane is running
        self.sent_at = 0  # when the step was sent, in steps sent by every lane
        self._stashed: np.ndarray | None = None  # a step's logits read before another answer
        self.sent_clock = 0.0  # time.monotonic() when the running step was sent
        self.hung = False  # it let a step or an answer time out: ``reset`` starts it anew
        self.start()

    def start(self) -> None:
        """A new interpreter (not ``multiprocessing``'s spawn, which imports the program's
        ``__main__`` again) running ``lane_process``, on one end of a socket pair."""
        self.hung, self.in_flight = False, None
        ours, theirs = socket.socketpair()
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "mlxcel.engine.numpy_decode.lane_process",
                 str(theirs.fileno())], pass_fds=(theirs.fileno(),), env=env,
                stdin=subprocess.DEVNULL)
        finally:
            theirs.close()
        self.conn = Connection(ours.detach())

    def load(self, weights: Packed) -> None:
        """Send the lane its copy of the weights (once it reads them) and wait until it is
        ready."""
        try:
            self.send("weights", weights.skeleton, weights.size)
            self.conn.send_bytes(weights.buffer.data)
            if not self.conn.poll(START_TIMEOUT) or self._receive()[0] != "ready":
                raise LaneError(f"decode lane {self.index} did not start")
        except (LaneError, OSError) as exc:
            self.stop()
            raise LaneError(f"decode lane {self.index} did not start") from exc

    def send(self, *message: Any) -> None:
        try:
            self.conn.send(message)
        except (OSError, ValueError) as exc:
            raise LaneError(f"decode lane {self.index} is gone") from exc

    def _receive(self) -> tuple[Any, ...]:
        try:
            if not self.conn.poll(STEP_TIMEOUT):
                raise self.failed(f"did not answer in {STEP_TIMEOUT} s")
            answer: tuple[Any, ...] = self.conn.recv()
        except (EOFError, OSError) as exc:
            raise LaneError(f"decode lane {self.index} is gone") from exc
        if answer[0] == "error":
            raise LaneError(f"decode lane {self.index}: {answer[1]}")
        return answer

    def failed(self, why: str) -> LaneError:
        self.hung = True
        return LaneError(f"decode lane {self.index} {why}")

    def step(self, plan: list[Any], pieces: list[Piece], threads: int, sent_at: int) -> None:
        self.send("step", pieces, threads)
        self.in_flight, self.sent_at, self.sent_clock = plan, sent_at, time.monotonic()

    def done(self) -> bool:
        """The running step's answer is in (or the lane is gone: ``result`` says)."""
        return self._stashed is not None or self.conn.poll()

    def result(self) -> tuple[list[Any], np.ndarray]:
        """The running step's plan and logits (waiting for them)."""
        assert self.in_flight is not None
        plan, self.in_flight = self.in_flight, None
        logits, self._stashed = self._stashed, None
        if logits is None:
            logits = self._answer("step")[1]
        return plan, logits

    def held(self, slot: int, length: int) -> tuple[np.ndarray, np.ndarray]:
        """Copies of the slot's first ``length`` keys and values (a running step's answer,
        which comes first, is kept for ``result``)."""
        self.send("held", slot, length)
        if self.in_flight is not None and self._stashed is None:
            self._stashed = self._answer("step")[1]
        _, keys, values = self._answer("held")
        return keys, values

    def _answer(self, kind: str) -> tuple[Any, ...]:
        answer = self._receive()
        if answer[0] != kind:
            raise LaneError(f"decode lane {self.index} answered {answer[0]}, not {kind}")
        return answer

    def reset(self) -> bool:
        """Empty, running no step; False (and stopped) if it is gone or out of step."""
        self.count, self._stashed = 0, None
        try:
            if self.hung:
                raise LaneError("hung")
            if self.in_flight is not None:
                self.in_flight = None
                self._answer("step")
            self.send("reset")
            return True
        except LaneError:
            self.stop()
            return False

    def stop(self) -> None:
        self.conn.close()
        if self.hung:
            self.process.kill()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


class Lanes:
    """Every lane of the engine."""

    def __init__(self, weights: Weights, count: int, threads: int,
                 spread_from: int = SPREAD_FROM) -> None:
        self.weights, self.threads, self.spread_from = weights, threads, spread_from
        self.lanes: list[LocalLane | Lane] = [LocalLane(weights, numpy_blas_setter())]
        try:
            remote = [Lane(index) for index in range(1, count + 1)]  # start together
            self.lanes += remote
            self._load(remote)
        except BaseException:
            self.close()
            raise
        self._sent = 0
        atexit.register(self.close)

    def __iter__(self) -> Any:
        return iter(self.lanes)

    def __getitem__(self, index: int) -> LocalLane | Lane:
        return self.lanes[index]

    @property
    def remote(self) -> list[Lane]:
        return [lane for lane in self.lanes if isinstance(lane, Lane)]

    def in_sending_order(self) -> list[LocalLane | Lane]:
        """The lanes in other processes first: the engine's own computes as it is sent."""
        return [*self.lanes[1:], self.lanes[0]]

    def pick(self) -> LocalLane | Lane:
        """The lane for a new sequence: while fewer than ``spread_from`` sequences decode, the
        fullest (the server's own at first: one lane runs alone, on every thread), else the
        emptiest lane in a process of its own."""
        if sum(lane.count for lane in self.lanes) < self.spread_from:
            return max(self.lanes, key=lambda lane: (lane.count, -lane.index))
        return min(self.lanes[1:], key=lambda lane: (lane.count, lane.index))

    def threads_for(self, lane: LocalLane | Lane) -> int:
        """BLAS threads for the lane's next step: all of them while it is the only lane that
        holds sequences, else one."""
        alone = all(other.count == 0 for other in self.lanes if other is not lane)
        return self.threads if alone else 1

    def step(self, lane: LocalLane | Lane, plan: list[Any], pieces: list[Piece]) -> None:
        self._sent += 1
        lane.step(plan, pieces, self.threads_for(lane), self._sent)

    def next_done(self) -> LocalLane | Lane | None:
        """The lane whose running step was sent first among those done, waiting for one;
        None when no lane runs a step."""
        running = [lane for lane in self.lanes if lane.in_flight is not None]
        if not running:
            return None
        done = [lane for lane in running if lane.done()]
        while not done:
            waiting = [lane for lane in running if isinstance(lane, Lane)]
            late = max(waiting, key=lambda lane: time.monotonic() - lane.sent_clock)
            left = STEP_TIMEOUT - (time.monotonic() - late.sent_clock)
            if left <= 0:  # a lane that neither answers nor dies: the batch fails, not hangs
                raise late.failed(f"did not answer in {STEP_TIMEOUT} s")
            wait([lane.conn for lane in waiting], timeout=left)
            done = [lane for lane in running if lane.done()]
        overdue = [lane for lane in running if isinstance(lane, Lane) and not lane.done()
                   and time.monotonic() - lane.sent_clock > STEP_TIMEOUT]
        if overdue:  # the others answer, but this one's sequences would wait for ever
            raise overdue[0].failed(f"did not answer in {STEP_TIMEOUT} s")
        return min(done, key=lambda lane: lane.sent_at)

    def reset(self) -> None:
        """Every lane empty; a lane that is gone is started anew (``LaneError`` if it fails)."""
        gone = [lane for lane in self.lanes if not lane.reset() and isinstance(lane, Lane)]
        if not gone:
            return
        for lane in gone:
            lane.start()
        self._load(gone)

    def _load(self, lanes: list[Lane]) -> None:
        """Each of ``lanes`` (just started) given its copy of the weights, in turn: they read
        it as soon as their interpreter is up."""
        weights = pack(self.weights)
        for lane in lanes:
            lane.load(weights)

    def close(self) -> None:
        for lane in self.lanes:
            lane.stop()
        self.lanes = []


def lane_count(setting: int, parameters: int, cores: int | None = None,
               slots: int | None = None, spread_from: int = SPREAD_FROM) -> int:
    """Lanes for ``--decode-lanes`` (``setting``), a model of ``parameters`` and ``slots``
    parallel sequences: 1 (no lanes) when fewer slots than ``spread_from`` (the batch never
    spreads), else the setting when above 0, else one per core (at most ``MAX_AUTO_LANES``) for
    a model between ``MIN_THREADED_PARAMETERS`` and ``MAX_LANED_PARAMETERS``, else 1."""
    if slots is not None and slots < spread_from:
        return 1
    if setting > 0:
        return setting
    if not MIN_THREADED_PARAMETERS <= parameters <= MAX_LANED_PARAMETERS:
        return 1
    return max(1, min(cores if cores is not None else usable_cores(), MAX_AUTO_LANES))


def start_lanes(weights: Weights, count: int, spread_from: int = SPREAD_FROM) -> Lanes | None:
    """The server's own lane over ``weights`` and ``count`` lanes in processes of their own,
    each with a copy; None when ``count`` is below 2, when the copies would take more than
    ``MEMORY_SHARE`` of the memory available, or when the lanes cannot start (logged: the
    batch then decodes in this process)."""
    if count <= 1:
        return None
    needed, free = count * nbytes(weights), available_memory()
    if free is not None and needed > free * MEMORY_SHARE:
        log.warning("decode lanes not used: %d copies of the weights (%.1f GiB) would take over "
                    "half the available memory (%.1f GiB)", count, needed / 2**30, free / 2**30)
        return None
    try:
        lanes = Lanes(weights, count, weights.threads, spread_from)
    except (LaneError, OSError, ValueError) as exc:
        log.warning("decode lanes not used: %s", exc)
        return None
    log.info("decoding from %d sequences on %d lanes in processes of their own, one BLAS "
             "thread each (--decode-lanes 1: in the server's process only)", spread_from, count)
    return lanes
