"""Hostile requests for the robustness family, and the way they are sent.

Each ``HostileRequest`` names the API family its route belongs to, so a target whose profile
does not claim that family never receives it (the variant is UNSUPPORTED there, not failed).
Bodies are built as bytes here: a lone surrogate or ``1e400`` cannot pass through a JSON
encoder, and a large body is built once.

The inputs come from a hostile-input campaign against the reference server (issue 20): every
one of them once stalled, hung or crashed a server.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import httpx

from .health_probe import HealthProbe, LatencyStats, idle_latency
from .target import Target

MIB = 1024 * 1024
# Below the 32 MiB most servers accept (Anthropic documents it for Messages): read and judged.
LARGE_BODY_BYTES = 24 * MIB
# Above any documented request limit: a server should refuse it without parsing it.
OVERSIZED_BODY_BYTES = 64 * MIB
# Statuses that say "this route is not served here": the input is not judged on it.
NOT_SERVED = frozenset({404, 405, 501})


@dataclass(frozen=True)
class HostileRequest:
    label: str
    family: str  # the API family of the route (a profile must claim it)
    path: str
    body: bytes
    content_type: str = "application/json"


@dataclass(frozen=True)
class Outcome:
    """What one hostile request got: a status (None when there was no answer) and how long."""

    label: str
    status: int | None
    seconds: float
    detail: str = ""

    def to_evidence(self) -> dict[str, Any]:
        return {"request": self.label, "status": self.status,
                "seconds": round(self.seconds, 2), "detail": self.detail[:300]}


def raw_json(value: Any, **literals: str) -> bytes:
    """``value`` as ASCII JSON (lone surrogates become ``\\udXXX`` escapes); each string
    ``"@name@"`` in it is replaced by the literal ``literals[name]`` (e.g. ``1e400``)."""
    # Tool schemas nested ~950 deep sit near Python's recursion limit, and how many frames are
    # already on the stack depends on the caller (pytest's collection adds ~100).
    previous = sys.getrecursionlimit()
    sys.setrecursionlimit(max(previous, 4 * previous))
    try:
        text = json.dumps(value, ensure_ascii=True)
    finally:
        sys.setrecursionlimit(previous)
    for name, literal in literals.items():
        text = text.replace(json.dumps(f"@{name}@"), literal)
    return text.encode("ascii")


def _model(model: str | None, payload: dict[str, Any]) -> dict[str, Any]:
    return payload if model is None else {"model": model, **payload}


def _chat(model: str | None, content: Any = "Say hello.", **fields: Any) -> dict[str, Any]:
    return _model(model, {"messages": [{"role": "user", "content": content}],
                          "max_tokens": 4, "temperature": 0, **fields})


def send(target: Target, request: HostileRequest, timeout_s: float) -> Outcome:
    """POST ``request`` on its own connection; never raises for what the server does."""
    headers = {**target.auth_headers, "Content-Type": request.content_type}
    start = time.perf_counter()
    try:
        response = httpx.post(target.base_url + request.path, content=request.body,
                              headers=headers, timeout=httpx.Timeout(timeout_s, connect=10.0))
        return Outcome(request.label, response.status_code, time.perf_counter() - start,
                       response.text[:300])
    except httpx.TimeoutException as exc:
        return Outcome(request.label, None, time.perf_counter() - start,
                       f"no answer within {timeout_s:.0f} s ({type(exc).__name__})")
    except httpx.TransportError as exc:
        return Outcome(request.label, None, time.perf_counter() - start,
                       f"{type(exc).__name__}: {exc}"[:300])


def send_all(target: Target, requests: Iterable[HostileRequest], timeout_s: float,
             parallel: int = 1) -> list[Outcome]:
    with ThreadPoolExecutor(max_workers=max(1, parallel)) as pool:
        return list(pool.map(lambda r: send(target, r, timeout_s), requests))


# A /health stall the server causes recurs each time the same hostile requests are sent; one
# that a loaded machine causes (every probe waits for a core) does not. So a window over the
# budget is tried again, and the budget is judged on the best of this many windows.
LATENCY_ATTEMPTS = 3


@dataclass(frozen=True)
class Window:
    """One sending of the hostile requests: /health meanwhile, /health just before, answers."""

    health: LatencyStats
    idle: LatencyStats
    outcomes: list[Outcome]
    control: LatencyStats | None = None  # the control responder over the same window

    @property
    def floor_ms(self) -> float:
        return max(self.idle.p99_ms, self.control.p99_ms if self.control is not None else 0.0)

    def over_budget(self, budget_ms: float) -> bool:
        return bool(self.health.failures) or self.health.p99_ms > budget_ms + self.floor_ms


def measured_windows(target: Target, requests: list[HostileRequest], budget_ms: float,
                     timeout_s: float, parallel: int = 1, attempts: int = LATENCY_ATTEMPTS
                     ) -> list[Window]:
    """Send ``requests`` while /health is probed, again while a window is over the budget
    (at most ``attempts`` windows); a window with an unanswered request ends it."""
    windows: list[Window] = []
    for _ in range(max(1, attempts)):
        idle = idle_latency(target.base_url)
        with HealthProbe(target.base_url) as probe:
            outcomes = send_all(target, requests, timeout_s, parallel)
        windows.append(Window(probe.stats(), idle, outcomes, probe.control_stats()))
        if any(o.status is None for o in outcomes) or not windows[-1].over_budget(budget_ms):
            break
    return windows


def best_window(windows: list[Window], budget_ms: float) -> Window:
    """The window judged for latency: one within the budget, else the least over it."""
    return min(windows, key=lambda w: (w.over_budget(budget_ms),
                                       w.health.p99_ms - w.floor_ms))


# -- the inputs ---------------------------------------------------------------------------------

def large_bodies(model: str | None) -> list[HostileRequest]:
    """A chat and a Messages request just under 32 MiB of prose, and a chat request over any
    documented limit."""
    def prose(size: int) -> str:
        return ("The quick brown fox jumps over the lazy dog. " * (size // 45 + 1))[:size]

    big = prose(LARGE_BODY_BYTES)
    return [
        HostileRequest("chat, 24 MiB message", "chat", "/v1/chat/completions",
                       raw_json(_chat(model, big))),
        HostileRequest("messages, 24 MiB message", "anthropic", "/v1/messages",
                       raw_json(_model(model, {"max_tokens": 4, "messages": [
                           {"role": "user", "content": big}]}))),
        HostileRequest("chat, 64 MiB message", "chat", "/v1/chat/completions",
                       raw_json(_chat(model, prose(OVERSIZED_BODY_BYTES)))),
    ]


def pathological_sampler_fields(model: str | None) -> list[HostileRequest]:
    """Sampler fields whose preparation grows with the client's strings."""
    native = {"prompt": "hi", "n_predict": 2, "dry_multiplier": 1.0}
    many = [f"breaker-{i:04d}-" + "x" * 26 for i in range(2000)]
    return [
        HostileRequest("/completion, one DRY breaker of 1,000,000 characters", "llama-native",
                       "/completion",
                       raw_json({**native, "dry_sequence_breakers": ["q" * 1_000_000]})),
        HostileRequest("/completion, 2,000 DRY breakers of 40 characters", "llama-native",
                       "/completion", raw_json({**native, "dry_sequence_breakers": many})),
        HostileRequest("chat, 4 stop strings of 200,000 characters", "chat",
                       "/v1/chat/completions",
                       raw_json(_chat(model, stop=["ab" * 100_000 + str(i) for i in range(4)]))),
        HostileRequest("chat, logit_bias with 200,000 entries", "chat", "/v1/chat/completions",
                       raw_json(_chat(model, logit_bias={str(i): 0 for i in range(200_000)}))),
    ]


# A template that renders a gigabyte, and one that loops ten billion times.
GIGABYTE_TEMPLATE = '{{ "a" * 1000000000 }}'
NESTED_LOOP_TEMPLATE = ("{% for i in range(100000) %}{% for j in range(100000) %}x"
                        "{% endfor %}{% endfor %}")


def request_templates(model: str | None) -> list[HostileRequest]:
    """Chat templates supplied by the request (a server should not run them, or bound them)."""
    messages = [{"role": "user", "content": "hi"}]
    return [
        HostileRequest("/apply-template, chat_template_kwargs.chat_template of 1 GB output",
                       "llama-native", "/apply-template",
                       raw_json({"messages": messages,
                                 "chat_template_kwargs": {"chat_template": GIGABYTE_TEMPLATE}})),
        HostileRequest("/apply-template, chat_template_kwargs.chat_template nested loops",
                       "llama-native", "/apply-template",
                       raw_json({"messages": messages, "chat_template_kwargs":
                                 {"chat_template": NESTED_LOOP_TEMPLATE}})),
        HostileRequest("chat, chat_template_kwargs.chat_template nested loops", "chat",
                       "/v1/chat/completions",
                       raw_json(_chat(model, chat_template_kwargs={
                           "chat_template": NESTED_LOOP_TEMPLATE}))),
        HostileRequest("chat, chat_template field nested loops", "chat", "/v1/chat/completions",
                       raw_json(_chat(model, chat_template=NESTED_LOOP_TEMPLATE))),
    ]


def nested_schema(json_depth: int) -> dict[str, Any]:
    """An object schema whose JSON nesting is about ``json_depth`` levels."""
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(max(1, json_depth // 2)):
        schema = {"type": "object", "properties": {"x": schema}}
    return schema


def _function(parameters: Any) -> dict[str, Any]:
    return {"type": "function", "function": {"name": "f", "parameters": parameters}}


def bad_inputs(model: str | None) -> list[HostileRequest]:
    """Inputs that once answered 500: each deserves a 4xx (or a 2xx) in its family's shape."""
    lone = "\ud800"
    chat_path, huge = "/v1/chat/completions", 2**32
    return [
        HostileRequest("chat, lone surrogate", "chat", chat_path, raw_json(_chat(model, lone))),
        HostileRequest("chat, temperature 1e400", "chat", chat_path,
                       raw_json(_chat(model, temperature="@x@"), x="1e400")),
        HostileRequest("chat, repetition_context_size 2**32", "chat", chat_path,
                       raw_json(_chat(model, repetition_penalty=1.1,
                                      repetition_context_size=huge))),
        HostileRequest("chat, tool parameters {properties: 5}, tool_choice required", "chat",
                       chat_path, raw_json(_chat(model, tools=[_function({"properties": 5})],
                                                 tool_choice="required"))),
        HostileRequest("chat, tool schema nested 900 deep", "chat", chat_path,
                       raw_json(_chat(model, tools=[_function(nested_schema(900))],
                                      tool_choice="required"))),
        HostileRequest("responses, lone surrogate", "responses", "/v1/responses",
                       raw_json(_model(model, {"input": lone, "max_output_tokens": 16}))),
        HostileRequest("responses, tool schema nested 950 deep", "responses", "/v1/responses",
                       raw_json(_model(model, {"input": "hi", "max_output_tokens": 16,
                                               "tool_choice": "required", "tools": [
                                                   {"type": "function", "name": "f",
                                                    "parameters": nested_schema(950)}]}))),
        HostileRequest("messages, lone surrogate", "anthropic", "/v1/messages",
                       raw_json(_model(model, {"max_tokens": 4, "messages": [
                           {"role": "user", "content": lone}]}))),
        HostileRequest("messages, tool_result content 5", "anthropic", "/v1/messages",
                       raw_json(_model(model, {"max_tokens": 4, "messages": [
                           {"role": "user", "content": [
                               {"type": "tool_result", "tool_use_id": "t", "content": 5}]}]}))),
        HostileRequest("/completion, lone surrogate", "llama-native", "/completion",
                       raw_json({"prompt": lone, "n_predict": 2})),
        HostileRequest("/completion, temperature 1e400", "llama-native", "/completion",
                       raw_json({"prompt": "hi", "n_predict": 2, "temperature": "@x@"},
                                x="1e400")),
        HostileRequest("/completion, repeat_last_n 2**32", "llama-native", "/completion",
                       raw_json({"prompt": "hi", "n_predict": 2, "repeat_penalty": 1.1,
                                 "repeat_last_n": huge})),
        HostileRequest("/tokenize, lone surrogate", "tokenize", "/tokenize",
                       raw_json({"content": lone})),
        HostileRequest("embeddings, lone surrogate", "embeddings", "/v1/embeddings",
                       raw_json(_model(model, {"input": lone}))),
    ]


def multi_prompt_batches(model: str | None, prompts: int, tokens: int
                         ) -> list[HostileRequest]:
    """One request carrying many prompts, on /v1/completions and on llama-server's route."""
    texts = [f"Count to a thousand, number {i}:" for i in range(prompts)]
    return [
        HostileRequest(f"/v1/completions, {prompts} prompts", "completions", "/v1/completions",
                       raw_json(_model(model, {"prompt": texts, "max_tokens": tokens,
                                               "temperature": 0, "ignore_eos": True}))),
        HostileRequest(f"/completion, {prompts} prompts", "llama-native", "/completion",
                       raw_json({"prompt": texts, "n_predict": tokens, "temperature": 0,
                                 "ignore_eos": True})),
    ]
