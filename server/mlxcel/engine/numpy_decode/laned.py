"""``NumpyBatch`` over decode lanes (``lanes.py``): each sequence lives in one lane, and each
lane steps on its own: as soon as a lane's step is back, its tokens are handed out and its next
step sent, while the other lanes compute. So the engine thread mostly waits on pipes, and the
products run in the lanes with no interpreter lock to share.

Below ``lanes.SPREAD_FROM`` sequences the server's own lane holds them all; from it, they go to
the lanes of their own, and the server's lane hands over those it holds (``_spread``).

A step in flight when its sequence is removed (a stop string, a cancelled request) still feeds
that sequence's token in the lane; its row is dropped here, and a cache taken from the lane is
cut to the tokens the sequence had fed (``seq.fed``).
"""

from __future__ import annotations

from typing import Any

import mlx.core as mx
import numpy as np

from .batch import NumpyBatch, Progress, Response, _Sequence
from .forward import Piece
from .kv import read_caches, to_caches
from .lanes import Lane, Lanes, LocalLane
from .weights import Weights


class LanedBatch(NumpyBatch):
    def __init__(self, weights: Weights, lanes: Lanes, *, prefill_step_size: int = 256,
                 cache_dtype: mx.Dtype = mx.float32) -> None:
        super().__init__(weights, prefill_step_size=prefill_step_size, cache_dtype=cache_dtype)
        self.lanes = lanes
        lanes.reset()

    def _place(self, cache: list[Any] | None, expected: int) -> tuple[int, int]:
        if cache:
            keys, values = read_caches(cache, self.pool.layers, self.weights.key_order)
        else:
            keys = values = np.zeros((self.pool.layers, 0, 0, 0), np.float32)
        if keys.shape[2] != expected:
            raise ValueError(f"{expected} tokens for a cache of {keys.shape[2]}")
        lane = self.lanes.pick()
        return lane.index, self._add(lane, keys, values)

    @staticmethod
    def _add(lane: LocalLane | Lane, keys: np.ndarray, values: np.ndarray) -> int:
        lane.send("add", keys, values)
        lane.count += 1
        return lane.count - 1

    def _spread(self) -> None:
        """Once lanes of their own hold sequences (``SPREAD_FROM`` were decoding), the server's
        lane hands its sequences over to them, keys and values copied: it computes in the
        engine thread, which would keep the others' results waiting."""
        local, remote = self.lanes[0], self.lanes.remote
        if not local.count or local.in_flight is not None or not any(
                lane.count for lane in remote):
            return
        moving = sorted((s for s in self._sequences.values() if s.lane == 0),
                        key=lambda s: -s.slot)  # the last slot first: nothing else moves
        for seq in moving:
            keys, values = local.held(seq.slot, len(seq.fed))
            local.send("remove", seq.slot)
            local.count -= 1
            del self._by_slot[0, seq.slot]
            target = min(remote, key=lambda lane: (lane.count, lane.index))
            seq.lane, seq.slot = target.index, self._add(target, keys, values)
            self._by_slot[seq.lane, seq.slot] = seq.uid

    def _cache(self, seq: _Sequence) -> list[Any]:
        keys, values = self.lanes[seq.lane].held(seq.slot, len(seq.fed))
        return to_caches(keys, values, self.weights.key_order, self.cache_dtype)

    def _release(self, seq: _Sequence) -> int | None:
        lane = self.lanes[seq.lane]
        lane.send("remove", seq.slot)
        lane.count -= 1
        return lane.count if seq.slot != lane.count else None

    def next(self) -> tuple[list[Progress], list[Response]]:
        self._spread()
        for idle in self.lanes.in_sending_order():
            if idle.in_flight is None:
                self._send(idle)
        lane = self.lanes.next_done()
        if lane is None:
            return [], []
        plan, logits = lane.result()
        live = [i for i, (seq, _) in enumerate(plan) if self._sequences.get(seq.uid) is seq]
        outcome = self._take([plan[i] for i in live], logits[live]) if live else ([], [])
        if lane.remote and self.lanes.threads_for(lane) == 1:
            # Its next step runs while the engine hands these tokens out. A lane alone runs
            # on every core, where handing tokens out would slow its threads down, and the
            # engine's own lane computes as it is sent: those wait for the next call.
            self._send(lane)
        return outcome

    def _send(self, lane: LocalLane | Lane) -> None:
        plan = self._plan(lane.index)
        if plan:
            pieces = [Piece(seq.slot, seq.pending[:n]) for seq, n in plan]
            self.lanes.step(lane, plan, pieces)
