"""Sharded serving under ``mlx.launch``: rank 0 serves HTTP, the other ranks follow its model calls.

MLX's own distributed layer does the work: ``mlx.launch`` starts the ranks, ``mx.distributed``
moves tensors, mlx-lm's ``sharded_load`` shards the weights (tensor parallel where the
architecture has ``shard``, else pipeline). What this module adds is the one thing a server needs
on top: the followers must run every forward pass rank 0 runs, with the same inputs, in the same
order, because each pass contains collectives every rank must join.

Rank 0 wraps its model in ``ShardedModel``. Each call first broadcasts a fixed-size header and
the input token array (an ``all_sum`` where the followers contribute zeros), then runs the local
shard. Followers loop in ``follow``: receive, run the same call on their own shard with their own
mirror of the cache, evaluate. Messages::

    CALL  cache_id  inputs      run model(inputs, cache=mirror[cache_id]); cache_id -1 = no cache
    FREE  cache_id              rank 0 dropped that cache; drop the mirror
    STOP                        rank 0 is shutting down

Rules that keep the ranks in lockstep (why the calls are synchronous):
- rank 0 evaluates its inputs before sending the header, so every collective of the previous
  pass has run before the next header's ``all_sum``;
- rank 0 evaluates each call's output, because mlx-lm's prefill discards the logits of a chunk
  and would otherwise skip that chunk's last collectives, which the followers do run.

Caches are mirrored only through model calls, so the engine runs sharded in its simplest mode
(``sharded_engine_config``): one request at a time on the single-sequence path (mlx-lm's
``generate_step`` on one cache made by ``make_prompt_cache``, which asks ``ShardedModel``), and
no prompt cache (its copies and trims, like the batch generator's cache merges and filters, are
edits outside a call that the followers would never see).
"""

from __future__ import annotations

import atexit
import dataclasses
import logging
import threading
import weakref
from typing import TYPE_CHECKING, Any

import mlx.core as mx
import mlx.nn as nn
from mlx_lm.models.cache import make_prompt_cache

if TYPE_CHECKING:
    from .worker import EngineConfig

log = logging.getLogger("mlxcel.distributed")

OP_CALL, OP_FREE, OP_STOP = 1, 2, 3
_MAX_DIMS = 4
_HEADER = 3 + _MAX_DIMS + 1  # op, cache_id, ndim, dims..., dtype
_DTYPES: tuple[mx.Dtype, ...] = (mx.int32, mx.uint32, mx.int64, mx.uint64)


def sharding_group() -> mx.distributed.Group | None:
    """The launcher's group when this process is one of several ranks, else None."""
    if not mx.distributed.is_available():
        return None
    group = mx.distributed.init()
    return group if group.size() > 1 else None


def is_follower() -> bool:
    group = sharding_group()
    return group is not None and group.rank() != 0


def sharded_engine_config(config: EngineConfig) -> EngineConfig:
    """The engine's settings under sharding: one request at a time on the single-sequence path,
    no prompt cache (the followers mirror model calls, not cache edits made between them)."""
    log.info("sharded serving: one request at a time (not %d), prompt cache off",
             config.parallel)
    # the queue keeps the capacity asked for: requests wait their turn rather than get 503
    queue = config.max_queue or 4 * max(config.parallel, 1)
    return dataclasses.replace(
        config, parallel=1, max_queue=queue, cache_prompt=False, solo_only=True
    )


def load_sharded(path_or_repo: str, group: mx.distributed.Group) -> tuple[Any, Any, dict[str, Any]]:
    """mlx-lm's sharded load; on rank 0 the model comes back wrapped in ``ShardedModel``."""
    from mlx_lm.utils import sharded_load

    model, tokenizer, config = sharded_load(path_or_repo, return_config=True)
    log.info("rank %d of %d holds its shard of %s", group.rank(), group.size(), path_or_repo)
    if group.rank() == 0:
        model = ShardedModel(model, group)
    return model, tokenizer, dict(config)


def _broadcast(group: mx.distributed.Group, array: mx.array) -> mx.array:
    """Rank 0's `array` on every rank: the followers pass zeros of the same shape."""
    out = mx.distributed.all_sum(array, group=group, stream=mx.cpu)
    mx.eval(out)
    return out


def _header(op: int, cache_id: int = -1, inputs: mx.array | None = None) -> mx.array:
    values = [op, cache_id, 0] + [0] * _MAX_DIMS + [0]
    if inputs is not None:
        if inputs.ndim > _MAX_DIMS or inputs.dtype not in _DTYPES:
            raise ValueError(f"cannot broadcast inputs of shape {inputs.shape} {inputs.dtype}")
        values[2] = inputs.ndim
        values[3 : 3 + inputs.ndim] = list(inputs.shape)
        values[-1] = _DTYPES.index(inputs.dtype)
    return mx.array(values, dtype=mx.int64)


class MirroredCache(list[Any]):
    """A prompt cache (list of per-layer caches) with the id its mirrors have on the followers."""

    cache_id: int = -1

    def __deepcopy__(self, memo: dict[int, Any]) -> MirroredCache:
        # A copy would carry the same id while its contents drift from the followers' mirror.
        raise TypeError("a mirrored cache cannot be copied: the followers would not see the copy")


class ShardedModel:
    """Rank 0's model: every call is announced to the followers before it runs here."""

    def __init__(self, model: nn.Module, group: mx.distributed.Group) -> None:
        self.model_shard = model
        self.group = group
        self._next_id = 0
        self._freed: list[int] = []
        self._lock = threading.Lock()
        self._stopped = False
        atexit.register(self.stop)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.model_shard, name)

    def make_cache(self) -> MirroredCache:
        """What ``make_prompt_cache`` returns for this model: a cache the followers mirror."""
        cache = MirroredCache(make_prompt_cache(self.model_shard))
        with self._lock:
            cache.cache_id, self._next_id = self._next_id, self._next_id + 1
        weakref.finalize(cache, self._freed.append, cache.cache_id)
        return cache

    def __call__(self, inputs: mx.array, cache: Any = None, **kwargs: Any) -> mx.array:
        if kwargs.get("input_embeddings") is not None:
            raise NotImplementedError("input embeddings are not mirrored to the other ranks")
        if cache is not None and not isinstance(cache, MirroredCache):
            raise TypeError("sharded calls need a cache made by ShardedModel.make_cache()")
        with self._lock:
            mx.eval(inputs)
            while self._freed:
                _broadcast(self.group, _header(OP_FREE, self._freed.pop()))
            cache_id = -1 if cache is None else cache.cache_id
            _broadcast(self.group, _header(OP_CALL, cache_id, inputs))
            _broadcast(self.group, inputs)
            out = self.model_shard(inputs, cache=cache)
            mx.eval(out)
        return out

    def stop(self) -> None:
        """Release the followers (idempotent; also registered with atexit)."""
        with self._lock:
            if not self._stopped:
                self._stopped = True
                _broadcast(self.group, _header(OP_STOP))


def follow(model: nn.Module, group: mx.distributed.Group) -> None:
    """A follower's whole life: run rank 0's calls on this shard until it says STOP."""
    mirrors: dict[int, list[Any]] = {}
    zeros_header = mx.zeros((_HEADER,), dtype=mx.int64)
    while True:
        header: list[int] = _broadcast(group, zeros_header).tolist()  # type: ignore[assignment]
        op, cache_id, ndim = header[0], header[1], header[2]
        if op == OP_STOP:
            log.info("rank %d: stop", group.rank())
            return
        if op == OP_FREE:
            mirrors.pop(cache_id, None)
            continue
        if op != OP_CALL:
            raise RuntimeError(f"rank {group.rank()}: unknown message {header}")
        shape = header[3 : 3 + ndim]
        inputs = _broadcast(group, mx.zeros(shape, dtype=_DTYPES[header[-1]]))
        cache = None
        if cache_id >= 0:
            cache = mirrors.setdefault(cache_id, make_prompt_cache(model))
        mx.eval(model(inputs, cache=cache))


def run_follower(path_or_repo: str) -> None:
    """Entry point for ranks other than 0: load this rank's shard and follow rank 0."""
    group = sharding_group()
    if group is None or group.rank() == 0:
        raise RuntimeError("run_follower is for ranks other than 0 under mlx.launch")
    model, _tokenizer, _config = load_sharded(path_or_repo, group)
    follow(model, group)
