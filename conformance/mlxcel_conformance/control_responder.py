"""A control for ``/health`` latency: a trivial HTTP responder in a process of its own.

Every /health probe is timed from the suite's process on a shared machine: a probe waits for a
core when other work runs (the suite's own threads sending a 24 MiB body, other jobs), and that
wait is no server's doing. The probe thread times this responder right after each /health
probe, over the same window; whatever a loaded machine adds to answering a connection shows in
its latencies too, and the budget is measured above them (``checks/robustness.py``).

The responder answers every connection ``200`` with an empty body as soon as its request head
has arrived, and exits when the process that started it is gone.
"""

from __future__ import annotations

import atexit
import os
import subprocess
import sys

_SCRIPT = r"""
import os, socket, sys
parent = int(sys.argv[1])
server = socket.socket()
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(("127.0.0.1", 0))
server.listen(128)
server.settimeout(1.0)
print(server.getsockname()[1], flush=True)
while os.getppid() == parent:
    try:
        conn, _ = server.accept()
    except socket.timeout:
        continue
    try:
        conn.settimeout(2.0)
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = conn.recv(4096)
            if not chunk:
                break
            head += chunk
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
    except OSError:
        pass
    finally:
        conn.close()
"""

_process: subprocess.Popen[str] | None = None
_url: str | None = None


def control_url() -> str | None:
    """The responder's base URL (started on first use, for the life of this process); None
    when it cannot be started."""
    global _process, _url
    if _url is not None and _process is not None and _process.poll() is None:
        return _url
    try:
        _process = subprocess.Popen([sys.executable, "-c", _SCRIPT, str(os.getpid())],
                                    stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
        assert _process.stdout is not None
        port = int(_process.stdout.readline().strip())
    except (OSError, ValueError):
        stop_control()
        return None
    atexit.register(stop_control)
    _url = f"http://127.0.0.1:{port}"
    return _url


def stop_control() -> None:
    global _process, _url
    if _process is not None and _process.poll() is None:
        _process.terminate()
        try:
            _process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            _process.kill()
    _process, _url = None, None
