"""Issue 42, items 4-6, against a real server process (uvicorn's protocol, signals and
sockets are what is under test): a never-reading client cannot grow the process, a trickled
body meets a whole-body deadline, connections are capped, and SIGTERM drains for a bounded
time with every stream ending on its final event and the process exiting 0."""

from __future__ import annotations

import contextlib
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from mlxcel_conformance.target import ReferenceServer, free_port

GRACE_S = 2.0


def start(fixture_model: str, *args: str) -> ReferenceServer:
    server = ReferenceServer(model=fixture_model, api_key=None, encoders=False,
                             extra_args=("--metrics", *args))
    server.start()
    return server


METRICS_PORT = free_port()


@pytest.fixture(scope="module")
def bounded(fixture_model: str) -> Iterator[ReferenceServer]:
    server = start(fixture_model, "--metrics-port", str(METRICS_PORT),
                   "--timeout-body", "2", "--timeout-read", "5",
                   "--max-connections", "12", "--stream-buffer-bytes", "65536",
                   "--stream-stall-timeout", "3")
    try:
        yield server
    finally:
        server.stop()


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def open_sockets(pid: int) -> int:
    """The process's open sockets (listening ones included)."""
    fds = Path(f"/proc/{pid}/fd")
    count = 0
    for fd in fds.iterdir():
        with contextlib.suppress(OSError):
            count += str(fd.readlink()).startswith("socket:")
    return count


def raw(server: ReferenceServer, head: str, body: bytes = b"") -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=30)
    sock.sendall(head.encode() + body)
    return sock


def busy_slots(base_url: str) -> int:
    slots = httpx.get(f"{base_url}/slots", timeout=10).json()
    return sum(1 for slot in slots if slot.get("is_processing"))


def test_a_trickled_body_meets_the_whole_body_deadline(bounded: ReferenceServer) -> None:
    sock = raw(bounded, "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
               "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n", b"{")
    start_s = time.monotonic()
    answer = b""
    with sock:
        while time.monotonic() - start_s < 8:  # one byte every 0.5 s: under --timeout-read
            try:
                sock.sendall(b" ")
            except OSError:
                break
            sock.settimeout(0.5)
            try:
                chunk = sock.recv(4096)
            except TimeoutError:
                continue
            answer += chunk
            if not chunk or b"\r\n\r\n" in answer:
                break
        sock.settimeout(2)
        with contextlib.suppress(OSError):
            answer += sock.recv(4096)  # the body, when it came apart from the head
    assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
    assert b"--timeout-body" in answer
    assert time.monotonic() - start_s < 5


def test_an_endless_chunked_body_meets_the_deadline(bounded: ReferenceServer) -> None:
    sock = raw(bounded, "POST /completion HTTP/1.1\r\nHost: 127.0.0.1\r\n"
               "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
    start_s, answer = time.monotonic(), b""
    with sock:
        while time.monotonic() - start_s < 8 and b"\r\n\r\n" not in answer:
            try:
                sock.sendall(b"1\r\n \r\n")
            except OSError:
                break
            sock.settimeout(0.3)
            try:
                answer += sock.recv(4096)
            except TimeoutError:
                continue
    assert answer.startswith(b"HTTP/1.1 408"), answer[:200]


def test_aborted_bodies_log_one_line_without_tracebacks(bounded: ReferenceServer) -> None:
    head = ("POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n")
    for _ in range(5):
        sock = raw(bounded, head, b'{"messages": [')
        time.sleep(0.1)
        sock.close()
    time.sleep(1.0)
    assert bounded.log_path is not None
    log = bounded.log_path.read_text(errors="replace")
    assert "went away while sending" in log
    assert log.count("went away while sending") <= 2  # one per 10 s interval
    assert "Traceback" not in log and "ClientDisconnect" not in log


def test_the_metrics_port_closes_a_silent_connection_and_reads_any_header_case(
        bounded: ReferenceServer) -> None:
    url = f"http://127.0.0.1:{METRICS_PORT}"
    assert "mlxcel_requests_total" in httpx.get(f"{url}/metrics", timeout=10).text
    assert httpx.get(f"{url}/v1/models", timeout=10).status_code == 404
    with socket.create_connection(("127.0.0.1", METRICS_PORT), timeout=30) as sock:
        sock.sendall(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # never finished
        start_s = time.monotonic()
        answer = sock.recv(100)
        assert answer.startswith(b"HTTP/1.1 408") or answer == b""
        assert time.monotonic() - start_s < 15  # --timeout-header, 10 s by default


def test_at_the_cap_the_oldest_slow_client_gives_way(bounded: ReferenceServer) -> None:
    held = [socket.create_connection(("127.0.0.1", bounded.port)) for _ in range(12)]
    try:
        time.sleep(0.2)
        assert httpx.get(f"{bounded.base_url}/health", timeout=10).status_code == 200
        held[0].settimeout(5)
        assert held[0].recv(100).startswith(b"HTTP/1.1 408")  # the oldest, silent one
    finally:
        for sock in held:
            sock.close()


def test_connections_past_the_cap_are_refused_with_503(bounded: ReferenceServer) -> None:
    body = b'{"prompt": "Hi", "n_predict": 100000, "stream": true, "ignore_eos": true}'
    head = ("POST /completion HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json"
            f"\r\nContent-Length: {len(body)}\r\n\r\n")
    busy = [raw(bounded, head, body) for _ in range(12)]  # each being answered
    try:
        time.sleep(0.5)
        extra = socket.create_connection(("127.0.0.1", bounded.port), timeout=5)
        with extra:
            answer = extra.recv(4096)
        assert answer.startswith(b"HTTP/1.1 503"), answer[:200]
        assert b'"too_many_connections"' in answer
    finally:
        for sock in busy:
            sock.close()
    time.sleep(1.0)
    assert httpx.get(f"{bounded.base_url}/health", timeout=10).status_code == 200


def test_a_client_that_never_reads_is_cancelled_and_the_process_stays_small(
        bounded: ReferenceServer) -> None:
    assert bounded.process is not None
    pid = bounded.process.pid
    before = rss_bytes(pid)
    sockets_before = open_sockets(pid)
    body = (b'{"prompt": "Once upon a time", "n_predict": 100000, "stream": true, '
            b'"n_probs": 100, "ignore_eos": true}')
    head = (f"POST /completion HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n")
    socks = [raw(bounded, head, body) for _ in range(2)]
    for sock in socks:  # a tiny receive buffer, never read
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    try:
        health: list[float] = []
        deadline = time.monotonic() + 8
        while time.monotonic() < deadline:
            t0 = time.monotonic()
            assert httpx.get(f"{bounded.base_url}/health", timeout=10).status_code == 200
            health.append(time.monotonic() - t0)
            time.sleep(0.2)
        grown = rss_bytes(pid) - before
        assert grown < 256 * 1024 * 1024, f"RSS grew {grown / 1e6:.0f} MB"
        assert busy_slots(bounded.base_url) == 0, "the unread streams still hold their slots"
        assert max(health) < 2.0
        # and past the write stall (3 s here) the server let the connections go as well
        deadline = time.monotonic() + 10
        while open_sockets(pid) > sockets_before and time.monotonic() < deadline:
            time.sleep(0.2)
        assert open_sockets(pid) <= sockets_before
    finally:
        for sock in socks:
            sock.close()


def test_a_closed_stream_frees_its_slot_within_a_second(bounded: ReferenceServer) -> None:
    with httpx.Client(timeout=30) as client, client.stream(
            "POST", f"{bounded.base_url}/completion",
            json={"prompt": "Hi", "n_predict": 100000, "stream": True, "ignore_eos": True}
    ) as response:
        for _ in response.iter_lines():
            break
    closed = time.monotonic()
    while busy_slots(bounded.base_url) and time.monotonic() - closed < 3:
        time.sleep(0.05)
    assert time.monotonic() - closed < 1.0


def _stream(base_url: str, path: str, body: dict[str, object], out: list[str]) -> None:
    try:
        with httpx.stream("POST", f"{base_url}{path}", json=body, timeout=60) as response:
            out.extend(line for line in response.iter_lines() if line)
    except httpx.HTTPError as exc:  # recorded: the test asserts on what arrived
        out.append(f"transport error: {exc!r}")


def test_sigterm_drains_for_the_grace_period_then_ends_streams_and_exits_0(
        fixture_model: str) -> None:
    server = start(fixture_model, "--shutdown-grace", str(GRACE_S))
    assert server.process is not None
    long = {"max_tokens": 100000, "stream": True, "ignore_eos": True}
    routes = [("/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}]}),
              ("/v1/completions", {"prompt": "hi"}),
              ("/v1/responses", {"input": "hi", "max_output_tokens": 100000}),
              ("/completion", {"prompt": "hi", "n_predict": 100000})]
    outs: list[list[str]] = [[] for _ in routes]
    threads = [threading.Thread(target=_stream, args=(server.base_url, path,
                                                      {**body, **long}, out))
               for (path, body), out in zip(routes, outs, strict=True)]
    whole: list[httpx.Response] = []
    threads.append(threading.Thread(target=lambda: whole.append(httpx.post(
        f"{server.base_url}/v1/completions", timeout=60,
        json={"prompt": "hi", "max_tokens": 100000, "ignore_eos": True}))))
    try:
        for thread in threads:
            thread.start()
        time.sleep(1.5)
        sent = time.monotonic()
        server.process.send_signal(signal.SIGTERM)
        time.sleep(0.3)
        refused = httpx.post(f"{server.base_url}/v1/chat/completions", timeout=10, json={
            "messages": [{"role": "user", "content": "hi"}], "max_tokens": 1})
        assert refused.status_code == 503 and "shutting" in refused.text
        code = server.process.wait(timeout=GRACE_S + 5)
        assert code == 0
        assert time.monotonic() - sent < GRACE_S + 5
        for thread in threads:
            thread.join(10)
    finally:
        if server.process.poll() is None:
            server.process.kill()
            server.process.wait(10)
    chat, completions, responses, native = outs
    assert whole[0].status_code == 503 and "shutting_down" in whole[0].text  # not streamed
    for lines in (chat, completions):  # the finish chunk, then why, then [DONE]
        assert lines[-1] == "data: [DONE]", lines[-3:]
        assert '"code":"shutting_down"' in lines[-2], lines[-3:]
        assert '"finish_reason":"stop"' in lines[-3], lines[-3:]
    assert '"stop":true' in native[-2] and '"shutting_down"' in native[-1], native[-2:]
    # the tiny model may finish a Responses turn before the signal (no ignore_eos there)
    assert '"type":"response.incomplete"' in responses[-1] or \
        '"type":"response.completed"' in responses[-1], responses[-1][:200]


def test_a_second_sigterm_exits_at_once(fixture_model: str) -> None:
    server = start(fixture_model, "--shutdown-grace", "60")
    assert server.process is not None
    out: list[str] = []
    thread = threading.Thread(target=_stream, args=(server.base_url, "/completion", {
        "prompt": "hi", "n_predict": 100000, "stream": True, "ignore_eos": True}, out))
    thread.start()
    try:
        time.sleep(1.0)
        server.process.send_signal(signal.SIGTERM)
        time.sleep(0.5)
        server.process.send_signal(signal.SIGTERM)
        server.process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pytest.fail("a second SIGTERM did not end the server")
    finally:
        if server.process.poll() is None:
            server.process.kill()
            server.process.wait(10)
        thread.join(10)
