"""Tail-repetition ("loop") detection and the server's policy for when it is on.

Policy, first match wins: the request's own fields (any of the three set, even
``max_pattern_size: 0`` to force it off); the ``MLXCEL_LOOP_DETECTION`` environment variable
(``off``/``0``, ``on``, or ``min,max,count``); the model family's default (Gemma 4: on with
min 1, max 20, count 4); otherwise off.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from ..generation import LoopDetection

ENV_VAR = "MLXCEL_LOOP_DETECTION"
FAMILY_DEFAULT = LoopDetection(max_pattern_size=20, min_pattern_size=1, min_count=4)
OFF = LoopDetection()
AUTO_FAMILIES = ("gemma4",)


def parse_env(value: str) -> LoopDetection | None:
    """The override in ``MLXCEL_LOOP_DETECTION``; ``None`` when unset or unreadable."""
    text = value.strip().lower()
    if not text:
        return None
    if text in ("0", "off", "false", "no"):
        return OFF
    if text in ("1", "on", "true", "yes"):
        return FAMILY_DEFAULT
    parts = text.split(",")
    if len(parts) != 3 or not all(p.strip().isdigit() for p in parts):
        return None
    low, high, count = (int(p) for p in parts)
    return LoopDetection(max_pattern_size=high, min_pattern_size=max(low, 1), min_count=count)


def resolve(
    requested: LoopDetection | None,
    model_config: Mapping[str, Any],
    environ: Mapping[str, str] | None = None,
) -> LoopDetection:
    if requested is not None:
        return requested
    env = parse_env((environ if environ is not None else os.environ).get(ENV_VAR, ""))
    if env is not None:
        return env
    if str(model_config.get("model_type", "")).startswith(AUTO_FAMILIES):
        return FAMILY_DEFAULT
    return OFF


def tail_loops(tokens: Sequence[int], policy: LoopDetection) -> bool:
    """Whether the last tokens are ``min_count`` back-to-back copies of one pattern."""
    if not policy.enabled:
        return False
    count = policy.min_count
    for size in range(max(policy.min_pattern_size, 1), policy.max_pattern_size + 1):
        span = size * count
        if len(tokens) < span:
            break
        pattern = tokens[-size:]
        if all(tokens[-span + k * size : len(tokens) - span + (k + 1) * size] == pattern
               for k in range(count - 1)):
            return True
    return False
