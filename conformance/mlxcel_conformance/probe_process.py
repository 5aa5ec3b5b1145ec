"""The /health probe loop, run in a process of its own (``HealthProbe`` starts it).

The suite's process builds and sends the hostile requests itself: serialising a 64 MiB body or
a 200,000-entry object holds its interpreter lock for hundreds of milliseconds, and a probe
thread beside that work would time the suite's own pause as the server's. In a process of its
own the probe times only the server and the machine.

    python -m mlxcel_conformance.probe_process BASE_URL PATH INTERVAL_S TIMEOUT_S CONTROL_URL|-
        HEADERS_JSON

prints ``ready``, then one line per probe, ``S <start> <ms> <1|0>`` for the server and
``C <start> <ms> <1|0>`` for the control responder (start on ``time.monotonic()``, which is
system-wide), and ends after its current probe once its standard input closes.
"""

from __future__ import annotations

import json
import select
import sys
import time
from collections.abc import Sequence

from .health_probe import http_status


def _timed(base_url: str, path: str, headers: dict[str, str], timeout_s: float) -> str:
    began, start = time.monotonic(), time.perf_counter()
    ok = http_status(base_url, path, headers, timeout_s) is not None
    return f"{began} {(time.perf_counter() - start) * 1e3} {int(ok)}"


def main(argv: Sequence[str]) -> None:
    base_url, path, interval, timeout, control, headers = argv
    interval_s, timeout_s = float(interval), float(timeout)
    header_map: dict[str, str] = json.loads(headers)
    print("ready", flush=True)
    while True:
        print("S " + _timed(base_url, path, header_map, timeout_s), flush=True)
        if control != "-":
            print("C " + _timed(control, "/", {}, timeout_s), flush=True)
        readable, _, _ = select.select([sys.stdin], [], [], interval_s)
        if readable and not sys.stdin.readline():
            return  # the parent closed our input: the window is over


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except (BrokenPipeError, KeyboardInterrupt):
        pass
