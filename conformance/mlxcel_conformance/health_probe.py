"""Measuring a server's availability while something hostile runs against it.

``HealthProbe`` polls ``GET /health`` from a background thread, each probe on a fresh
connection (what a load balancer or a second client sees: accept, parse, answer), and keeps
every latency; any status is an answer, and a probe that gets none within its timeout counts
at the timeout. A probe is a plain socket exchange: an HTTP client library would add its own
setup to every measurement (creating an ``httpx`` client loads a TLS context, ~60 ms here).
``server_rss_bytes`` reads a local process's resident memory (Linux ``/proc``, else ``ps``),
``server_anon_bytes`` the anonymous part of it (what a leak grows).
"""

from __future__ import annotations

import contextlib
import json
import math
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

HEALTH_PATH = "/health"


@dataclass(frozen=True)
class LatencyStats:
    """Latencies of the probes of one window, in milliseconds."""

    samples: int
    p50_ms: float
    p99_ms: float
    max_ms: float
    failures: int  # probes with no answer at all (timeout, refused, reset)

    def to_evidence(self) -> dict[str, Any]:
        return {"probes": self.samples, "p50_ms": round(self.p50_ms, 1),
                "p99_ms": round(self.p99_ms, 1), "max_ms": round(self.max_ms, 1),
                "failed_probes": self.failures}


def percentile(values: list[float], fraction: float) -> float:
    """The nearest-rank percentile (0 for no values)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, math.ceil(fraction * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


@dataclass
class HealthProbe:
    """``with HealthProbe(url) as probe: ...`` then ``probe.stats()``.

    The probes run in a process of their own (``probe_process.py``), so nothing the suite's
    process does (serialising a large hostile body holds its interpreter lock) delays them.
    With ``control`` each probe is followed by one of the control responder
    (``control_responder.py``), whose latencies ``probe.control_stats()`` gives: what the
    machine added over the same window."""

    base_url: str
    headers: dict[str, str] = field(default_factory=dict)
    interval_s: float = 0.02
    timeout_s: float = 5.0
    path: str = HEALTH_PATH
    control: bool = True
    _control_url: str | None = None
    _control_latencies: list[float] = field(default_factory=list)
    _latencies: list[float] = field(default_factory=list)
    _started: list[float] = field(default_factory=list)  # time.monotonic() of each probe
    _failures: int = 0
    _process: subprocess.Popen[str] | None = None
    _reader: threading.Thread | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __enter__(self) -> HealthProbe:
        if self.control:
            from .control_responder import control_url

            self._control_url = control_url()
        self._process = subprocess.Popen(
            [sys.executable, "-m", "mlxcel_conformance.probe_process", self.base_url, self.path,
             str(self.interval_s), str(self.timeout_s), self._control_url or "-",
             json.dumps(self.headers)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        assert self._process.stdout is not None
        self._process.stdout.readline()  # "ready": the window starts with the first probe
        self._reader = threading.Thread(target=self._read, name="health-probe", daemon=True)
        self._reader.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    def stop(self) -> None:
        """End the window once the probe in flight has its answer (or its timeout)."""
        if self._process is None:
            return
        with contextlib.suppress(OSError):
            assert self._process.stdin is not None
            self._process.stdin.close()
        try:
            self._process.wait(self.timeout_s * 2 + 5.0)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        if self._reader is not None:
            self._reader.join(5.0)
        self._process = None

    def _read(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        for line in self._process.stdout:
            kind, began, ms, ok = line.split()
            if kind == "S":
                self._add(float(began), float(ms), ok == "1")
            else:
                with self._lock:
                    self._control_latencies.append(
                        float(ms) if ok == "1" else max(float(ms), self.timeout_s * 1e3))

    def _add(self, began: float, elapsed: float, ok: bool) -> None:
        with self._lock:
            self._latencies.append(elapsed if ok else max(elapsed, self.timeout_s * 1e3))
            self._started.append(began)
            self._failures += 0 if ok else 1

    def probe_once(self) -> float:
        """One probe from this process, on a new connection; its latency in ms."""
        start, began = time.perf_counter(), time.monotonic()
        # Any status is an answer: /health says 503 "no slot available" while every slot is
        # busy (the reference's and llama-server's documented semantics).
        ok = http_status(self.base_url, self.path, self.headers, self.timeout_s) is not None
        elapsed = (time.perf_counter() - start) * 1e3
        self._add(began, elapsed, ok)
        return elapsed

    def slowest(self, count: int = 5) -> list[tuple[float, float]]:
        """The ``count`` slowest probes as (start on ``time.monotonic()``, latency in ms),
        slowest first."""
        with self._lock:
            pairs = list(zip(self._started, self._latencies, strict=True))
        return sorted(pairs, key=lambda pair: pair[1], reverse=True)[:count]

    def control_stats(self) -> LatencyStats | None:
        """The control responder's latencies over the same window (None without one)."""
        with self._lock:
            values = list(self._control_latencies)
        if self._control_url is None or not values:
            return None
        return LatencyStats(len(values), percentile(values, 0.50), percentile(values, 0.99),
                            max(values), 0)

    def stats(self) -> LatencyStats:
        with self._lock:
            values, failures = list(self._latencies), self._failures
        return LatencyStats(len(values), percentile(values, 0.50), percentile(values, 0.99),
                            max(values, default=0.0), failures)


def http_status(base_url: str, path: str, headers: dict[str, str], timeout_s: float
                ) -> int | None:
    """GET ``path`` on a new connection and read the answer's head; its status, or None when
    there is none (refused, reset, timed out, not HTTP)."""
    parts = urlsplit(base_url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    lines = [f"GET {path} HTTP/1.1", f"Host: {host}:{port}", "Connection: close",
             *(f"{k}: {v}" for k, v in headers.items())]
    deadline = time.monotonic() + timeout_s
    try:
        with socket.create_connection((host, port), timeout=timeout_s) as sock:
            sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
            answer = b""
            while b"\r\n\r\n" not in answer:  # the status line and headers are the answer
                chunk = sock.recv(65536)
                if not chunk:
                    break
                answer += chunk
                sock.settimeout(max(0.01, deadline - time.monotonic()))
    except OSError:
        return None
    head = answer.split(b"\r\n", 1)[0].split()
    return int(head[1]) if len(head) >= 2 and head[1].isdigit() else None


def idle_latency(base_url: str, seconds: float = 1.5) -> LatencyStats:
    """/health's latency with nothing else sent: the floor a loaded machine adds to every
    probe, measured right before a hostile run."""
    with HealthProbe(base_url) as probe:
        time.sleep(seconds)
    return probe.stats()


def _status_bytes(pid: int, key: str) -> int | None:
    """The ``key`` line of ``/proc/PID/status`` (proc(5), in kB) in bytes, or None."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(f"{key}:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def server_anon_bytes(pid: int) -> int | None:
    """Anonymous resident memory of process ``pid`` in bytes (``RssAnon``, proc(5): what the
    process allocated, without the code and files it mapped), or its resident set where
    /proc does not say (macOS), or None when neither can be read."""
    anon = _status_bytes(pid, "RssAnon")
    return anon if anon is not None else server_rss_bytes(pid)


def server_rss_bytes(pid: int) -> int | None:
    """Resident memory of process ``pid`` in bytes, or None when it cannot be read."""
    rss = _status_bytes(pid, "VmRSS")
    if rss is not None:
        return rss
    try:  # macOS and other systems without /proc
        out = subprocess.run(["ps", "-o", "rss=", "-p", str(pid)], capture_output=True,
                             text=True, timeout=5, check=False).stdout.strip()
        return int(out) * 1024 if out else None
    except (OSError, ValueError, subprocess.SubprocessError):
        return None
