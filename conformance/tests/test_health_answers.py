"""A health route read without racing the server's load (checks/health_answers.py): a busy
server's documented 503 is asked again and compared with its route, never judged alone, and a
server without the alias still fails."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from mlxcel_conformance.checks.health_answers import (
    health_unavailable,
    judge_health_alias,
    settled_health,
)
from mlxcel_conformance.errors import ConformanceFailure

OK = httpx.Response(200, json={"status": "ok"})
BUSY = httpx.Response(503, json={"status": "no slot available", "model": "m"})
LOADING = httpx.Response(503, json={"error": {"code": 503, "message": "Loading model",
                                              "type": "unavailable_error"}})
MISSING = httpx.Response(404, json={"error": {"code": 404, "message": "File Not Found",
                                              "type": "not_found_error"}})


class FakeServer:
    """Answers each path from its own script, in order; the last answer repeats."""

    def __init__(self, **scripts: list[httpx.Response]) -> None:
        self._scripts = {f"/{name.replace('_', '/')}": iter(answers)
                         for name, answers in scripts.items()}
        self._last: dict[str, httpx.Response] = {}
        self.asked: list[str] = []

    def get(self, path: str) -> httpx.Response:
        self.asked.append(path)
        script: Iterator[httpx.Response] = self._scripts[path]
        self._last[path] = next(script, self._last.get(path, OK))
        return self._last[path]


def _judge(server: FakeServer) -> object:
    return judge_health_alias(server.get, sleep=lambda _s: None)


def test_the_documented_unavailable_answers() -> None:
    assert health_unavailable(503, BUSY.json()) and health_unavailable(503, LOADING.json())
    assert not health_unavailable(200, BUSY.json())
    assert not health_unavailable(503, {"status": "ok"})
    assert not health_unavailable(503, "Service Unavailable")
    assert not health_unavailable(503, {"error": {"type": "server_error"}})


def test_an_idle_server_passes_at_once() -> None:
    server = FakeServer(v1_health=[OK], health=[OK])
    assert _judge(server) == {"status": "ok"} and server.asked == ["/v1/health"]


def test_a_server_busy_for_a_while_is_asked_again() -> None:
    server = FakeServer(v1_health=[BUSY, BUSY, OK], health=[OK, OK])
    assert _judge(server) == {"status": "ok"}
    assert server.asked == ["/v1/health", "/health", "/v1/health", "/health", "/v1/health"]


def test_a_server_busy_throughout_answers_as_its_route() -> None:
    """The random FAIL this replaces: another suite process filled every slot."""
    assert _judge(FakeServer(v1_health=[BUSY], health=[BUSY])) == BUSY.json()
    assert _judge(FakeServer(v1_health=[LOADING], health=[LOADING])) == LOADING.json()


def test_a_server_without_the_alias_fails() -> None:
    with pytest.raises(ConformanceFailure, match="got HTTP 404") as info:
        _judge(FakeServer(v1_health=[MISSING], health=[OK]))
    assert info.value.check == "native_aliases"
    with pytest.raises(ConformanceFailure, match="got HTTP 503"):
        _judge(FakeServer(v1_health=[httpx.Response(503, text="Service Unavailable")]))


def test_an_alias_busy_while_its_route_is_not_fails() -> None:
    server = FakeServer(v1_health=[BUSY], health=[OK])
    with pytest.raises(ConformanceFailure, match="busy 503 each time") as info:
        _judge(server)
    assert server.asked.count("/v1/health") == 5
    assert info.value.evidence["answers"] == [{"alias": 503, "route": 200}] * 5


def test_an_alias_that_answers_200_without_ok_fails() -> None:
    with pytest.raises(ConformanceFailure, match='must answer {"status": "ok"}'):
        _judge(FakeServer(v1_health=[httpx.Response(200, json={"status": "degraded"})]))


def test_settled_health_asks_again_and_backs_off() -> None:
    pauses: list[float] = []
    server = FakeServer(health=[BUSY, BUSY, OK])
    assert settled_health(server.get, "/health", sleep=pauses.append) == (200, {"status": "ok"})
    assert pauses == [0.4, 0.8]
    always = FakeServer(health=[BUSY])
    assert settled_health(always.get, "/health", sleep=lambda _s: None) == (503, BUSY.json())
    assert always.asked == ["/health"] * 5
    assert settled_health(FakeServer(health=[MISSING]).get, "/health")[0] == 404
