"""Measuring a server's availability while something hostile runs against it.

``HealthProbe`` polls ``GET /health`` from a background thread, each probe on a fresh
connection (what a load balancer or a second client sees: accept, parse, answer), and keeps
every latency; any status is an answer, and a probe that gets none within its timeout counts
at the timeout. A probe is a plain socket exchange: an HTTP client library would add its own
setup to every measurement (creating an ``httpx`` client loads a TLS context, ~60 ms here).
``server_rss_bytes`` reads a local process's resident memory (Linux ``/proc``, else ``ps``).
"""

from __future__ import annotations

import math
import socket
import subprocess
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
    """``with HealthProbe(url) as probe: ...`` then ``probe.stats()``."""

    base_url: str
    headers: dict[str, str] = field(default_factory=dict)
    interval_s: float = 0.02
    timeout_s: float = 5.0
    path: str = HEALTH_PATH
    _latencies: list[float] = field(default_factory=list)
    _failures: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __enter__(self) -> HealthProbe:
        self._thread = threading.Thread(target=self._run, name="health-probe", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(self.timeout_s + 1.0)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.probe_once()
            self._stop.wait(self.interval_s)

    def probe_once(self) -> float:
        """One probe on a new connection; its latency in ms (the timeout when unanswered)."""
        start = time.perf_counter()
        # Any status is an answer: /health says 503 "no slot available" while every slot is
        # busy (the reference's and llama-server's documented semantics).
        ok = http_status(self.base_url, self.path, self.headers, self.timeout_s) is not None
        elapsed = (time.perf_counter() - start) * 1e3
        with self._lock:
            self._latencies.append(elapsed if ok else max(elapsed, self.timeout_s * 1e3))
            self._failures += 0 if ok else 1
        return elapsed

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


def server_rss_bytes(pid: int) -> int | None:
    """Resident memory of process ``pid`` in bytes, or None when it cannot be read."""
    status = Path(f"/proc/{pid}/status")
    try:
        for line in status.read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:  # macOS and other systems without /proc
        out = subprocess.run(["ps", "-o", "rss=", "-p", str(pid)], capture_output=True,
                             text=True, timeout=5, check=False).stdout.strip()
        return int(out) * 1024 if out else None
    except (OSError, ValueError, subprocess.SubprocessError):
        return None
