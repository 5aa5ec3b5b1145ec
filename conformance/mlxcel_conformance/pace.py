"""How fast the target decodes, measured once per run, and the waits the suite derives from it.

The suite's waits were fixed at 60 s, sized for fixture models that decode hundreds of tokens a
second. A real model on MLX's CPU backend decodes 5-7 (a 135M model, README's GGUF example), and
fewer on a busy machine. So one short greedy request at the start of a run measures the target's
pace (tokens per second, prefill and HTTP included, which errs on the slow side), and each wait
becomes the larger of its floor and ``MARGIN`` times what its work takes at that pace.
``--request-timeout`` still sets the per-request wait outright; a target that cannot be measured
(no chat or Messages route) keeps the floors.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import httpx

from .target import Target

FLOOR_S = 60.0
# Queueing behind the suite's own concurrent requests, and a machine busier than at the probe.
MARGIN = 4.0
# The most tokens one suite request asks for (forced calls, reasoning, tool turns).
LONGEST_REQUEST_TOKENS = 64
PROBE_TOKENS = 8
_PROBES = (
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": "Tell me a story."}]}),
    ("/v1/messages", {"messages": [{"role": "user", "content": "Tell me a story."}]}),
)


@dataclass(frozen=True)
class Pace:
    """Tokens per second the target decoded at the probe (``inf``: not measured)."""

    tokens_per_s: float
    # ``--request-timeout``, when given, wins over the derived per-request wait.
    request_timeout_override: float | None = None

    def seconds_for(self, tokens: int, floor: float = FLOOR_S) -> float:
        """The wait for work that decodes ``tokens`` in all."""
        if not math.isfinite(self.tokens_per_s) or self.tokens_per_s <= 0:
            return floor
        return max(floor, MARGIN * tokens / self.tokens_per_s)

    @property
    def request_timeout_s(self) -> float:
        if self.request_timeout_override:
            return self.request_timeout_override
        return self.seconds_for(LONGEST_REQUEST_TOKENS)


# Below this pace a target is slow (a real model on a CPU), and plain answers get shorter.
SLOW_TOKENS_PER_S = 50.0
# A plain answer's length there: every check of a plain answer (shape, framing, usage, the
# stream against the body) reads as much from 8 tokens as from 32.
SLOW_ANSWER_TOKENS = 8

UNMEASURED = Pace(math.inf)
_current: list[Pace] = [UNMEASURED]


def current() -> Pace:
    """The run's pace (``UNMEASURED`` until the plugin has measured it)."""
    return _current[0]


def measure(target: Target, override: float | None = None, *, probe: bool = True) -> Pace:
    """Probe the target once and make the result the run's pace; without ``probe`` (the
    self-started fixture, hundreds of tokens a second) the floors stand and nothing is sent,
    so the exact goldens see the server as they always have."""
    pace = Pace(_probe(target) if probe else math.inf, override)
    _current[0] = pace
    return pace


def _probe(target: Target) -> float:
    with httpx.Client(base_url=target.base_url, headers=target.auth_headers,
                      timeout=httpx.Timeout(FLOOR_S * MARGIN, connect=5.0)) as http:
        for path, body in _PROBES:
            payload = {**body, "max_tokens": PROBE_TOKENS, "temperature": 0}
            if target.model:
                payload["model"] = target.model
            started = time.monotonic()
            try:
                response = http.post(path, json=payload, headers={"anthropic-version":
                                                                  "2023-06-01"})
                usage = response.json().get("usage") or {}
            except (httpx.HTTPError, ValueError, AttributeError):
                continue
            tokens = usage.get("completion_tokens", usage.get("output_tokens"))
            elapsed = time.monotonic() - started
            if response.status_code == 200 and isinstance(tokens, int) and tokens > 0:
                return tokens / elapsed
    return math.inf


def answer_tokens(default: int) -> int:
    """The length a plain suite request asks for by default: ``default``, or at most
    ``SLOW_ANSWER_TOKENS`` on a slow target. A request that needs more (a tool call, reasoning)
    sets its own."""
    if current().tokens_per_s < SLOW_TOKENS_PER_S:
        return min(default, SLOW_ANSWER_TOKENS)
    return default
