"""What a decode lane does (``lanes.py``), and its process: ``python -m
mlxcel.engine.numpy_decode.lane_process FD`` serves the lane protocol on the socket ``FD``
until it closes. ``LaneState`` answers one message; the engine's own lane (``LocalLane``) uses
it in process."""

from __future__ import annotations

import sys
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

import numpy as np

from .batch import run_pieces
from .forward import RopeTable
from .kv import KVPool
from .packed_weights import unpack
from .products import product_for
from .weights import Weights

# An empty lane keeps a KV pool of up to this many bytes (as ``batch.KEEP_POOL_BYTES``).
KEEP_POOL_BYTES = 256 * 2**20


class LaneState:
    """A lane's sequences (their keys and values in a ``KVPool``) over its weights;
    ``set_threads`` sets the BLAS threads a step asks for."""

    def __init__(self, weights: Weights, set_threads: Callable[[int], object]) -> None:
        self.weights, self.set_threads = weights, set_threads
        self.rope = RopeTable(weights)
        self.pool = KVPool(len(weights.layers), weights.n_kv_heads, weights.head_dim,
                           weights.key_order)
        self.threads = 0

    def handle(self, message: tuple[Any, ...]) -> tuple[Any, ...] | None:
        """The answer to ``message`` (``lanes.py`` lists them), None for those not answered."""
        kind = message[0]
        if kind == "step":
            _, pieces, wanted = message
            if wanted != self.threads:
                self.set_threads(wanted)
                self.threads, self.weights.matmul = wanted, product_for(wanted)
            return "step", run_pieces(self.weights, self.rope, self.pool, pieces)
        if kind == "add":
            self.pool.put(self.pool.add(None), message[1], message[2])
        elif kind == "held":
            return ("held", *self.pool.held(message[1], message[2]))
        elif kind == "remove":
            self.pool.remove(message[1])
            if not self.pool.count:
                self.pool = self.pool.emptied(KEEP_POOL_BYTES)
        elif kind == "reset":
            self.pool = self.pool.emptied(KEEP_POOL_BYTES)
        else:
            raise ValueError(f"unknown lane message {kind!r}")
        return None


def serve(conn: Connection) -> None:
    """A lane's process: its copy of the weights first, then answer ``conn`` until it
    closes."""
    from threadpoolctl import ThreadpoolController

    kind, skeleton, size = conn.recv()
    assert kind == "weights"
    buffer = np.empty(size, np.uint8)  # the lane's own memory: numpy asks huge pages for it
    conn.recv_bytes_into(buffer)
    weights = unpack(skeleton, buffer)
    blas = [lib for lib in ThreadpoolController().lib_controllers if lib.user_api == "blas"]
    state = LaneState(weights, lambda n: [library.set_num_threads(n) for library in blas])
    conn.send(("ready",))
    while True:
        try:
            answer = state.handle(conn.recv())
            if answer is not None:
                conn.send(answer)
        except (EOFError, OSError):  # the engine is gone
            break
        except Exception as exc:  # noqa: BLE001 - reported to the engine, the lane goes on
            try:
                conn.send(("error", f"{type(exc).__name__}: {exc}"))
            except OSError:
                break


if __name__ == "__main__":
    serve(Connection(int(sys.argv[1])))
