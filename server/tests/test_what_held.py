"""What issue 20's hostile-input campaign found holding, kept so: the API key on every route
(and on the path tricks that tried to slip past it), 200 concurrent streams (the admitted ones
served, the rest refused, every slot idle after), and a graceful SIGTERM while a stream runs.
(SSRF, media traversal, adapter paths, decompression bombs, deep JSON, NaN literals and
disconnects have their own tests: test_media_sources, test_adapters, test_vision, test_body,
the suite's test_disconnect.)"""

from __future__ import annotations

import signal
import threading
import time
from collections import Counter
from collections.abc import Iterator

import httpx
import pytest
from fastapi.testclient import TestClient

from mlxcel.app import create_app
from mlxcel.config import ServerConfig
from mlxcel.engine.worker import Engine, EngineConfig
from mlxcel_conformance import spec
from mlxcel_conformance.target import ReferenceServer

KEY = "k"
EXEMPT = {("GET", "/health"), ("GET", "/")}


@pytest.fixture(scope="module")
def keyed(fixture_model: str) -> TestClient:
    engine = Engine(EngineConfig(model=fixture_model))  # never started: no model loads
    return TestClient(create_app(ServerConfig(model=fixture_model, api_key=KEY), engine))


def operations() -> list[tuple[str, str]]:
    return sorted({(op.method.upper(), op.path.replace("{response_id}", "resp_x"))
                   for op in spec.operations()} - EXEMPT)


@pytest.mark.parametrize(("method", "path"), operations())
def test_every_route_needs_the_key(keyed: TestClient, method: str, path: str) -> None:
    response = keyed.request(method, path, json={})
    assert response.status_code == 401, (method, path, response.status_code)


PATH_TRICKS = ["/v1/models/", "//v1/models", "/V1/models", "/v1//models", "/health/../v1/models",
               "/%2e%2e/v1/models", "/v1/%6dodels", "/health/", "/HEALTH", "/./v1/models",
               "/v1/models;x", "/v1/models%00", "/v1/models#x", "/health%2f..%2fv1/models",
               "/v1/chat/completions/", "/metrics", "/slots", "/props", "/v1/cache/stats"]


@pytest.mark.parametrize("path", PATH_TRICKS)
def test_path_tricks_never_serve_without_the_key(keyed: TestClient, path: str) -> None:
    for method in ("GET", "POST"):
        response = keyed.request(method, path)
        assert response.status_code in (401, 404, 405), (method, path, response.status_code)
        assert response.status_code != 200


@pytest.fixture(scope="module")
def server(fixture_model: str) -> Iterator[ReferenceServer]:
    started = ReferenceServer(model=fixture_model, api_key=None, encoders=False,
                              extra_args=("--parallel", "4", "--max-queue", "16"))
    started.start()
    try:
        yield started
    finally:
        started.stop()


def test_two_hundred_concurrent_streams(server: ReferenceServer) -> None:
    """4 slots and a queue of 16: 20 streams are served whole, 180 refused at once."""
    url = f"{server.base_url}/v1/chat/completions"
    body = {"messages": [{"role": "user", "content": "Tell a story."}], "max_tokens": 32,
            "temperature": 0, "stream": True, "ignore_eos": True}
    statuses: Counter[int | str] = Counter()
    barrier = threading.Barrier(200)

    def one() -> None:
        barrier.wait()
        try:
            with httpx.stream("POST", url, json=body, timeout=120) as response:
                text = response.read().decode()
                ok = response.status_code != 200 or text.rstrip().endswith("data: [DONE]")
                statuses[response.status_code if ok else "truncated"] += 1
        except httpx.HTTPError as exc:
            statuses[type(exc).__name__] += 1

    threads = [threading.Thread(target=one) for _ in range(200)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(180)
    assert set(statuses) <= {200, 503}, statuses
    assert statuses[200] >= 20 and statuses[200] + statuses[503] == 200
    time.sleep(0.5)
    batch = httpx.get(f"{server.base_url}/health").json()["batch"]
    assert batch["active_sequences"] == 0 and batch["queue_depth"] == 0


def test_sigterm_ends_the_server_gracefully(fixture_model: str) -> None:
    server = ReferenceServer(model=fixture_model, api_key=None, encoders=False, extra_args=())
    server.start()
    assert server.process is not None
    body = {"messages": [{"role": "user", "content": "Tell a story."}], "max_tokens": 4000,
            "stream": True, "ignore_eos": True}
    try:
        with httpx.stream("POST", f"{server.base_url}/v1/chat/completions", json=body,
                          timeout=60) as response:
            assert response.status_code == 200
            next(response.iter_lines())
            server.process.send_signal(signal.SIGTERM)
            # uvicorn shuts down (the stream is cancelled), then re-raises the signal
            assert server.process.wait(timeout=30) in (0, -signal.SIGTERM)
    finally:
        server.stop()
    assert server.log_path is not None
    log = server.log_path.read_text()
    assert "Application shutdown complete" in log and "Finished server process" in log
