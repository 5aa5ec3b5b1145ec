"""Backpressure checks (the robustness family): a client that reads slowly or not at all, or
sends its body slowly, must cost the server a bounded amount, for a bounded time.

- ``stream_memory_bounded``: streams whose clients never read move the server's resident
  memory by less than a bound (256 MB unless the run says otherwise): the server pauses or
  cancels such a stream rather than buffering its output without limit. Judged only where
  the suite can read the server's memory (a server it started, or ``--server-pid``).
- ``slot_freed_on_close``: once those clients close their connections, no slot is still
  processing within a second (llama-server's documented ``GET /slots`` ``is_processing``).

No API document states either; they are what a shared server owes its other clients.
"""

from __future__ import annotations

from mlxcel_conformance.checks.registry import check, fail
from mlxcel_conformance.errors import Severity

MB = 1024 * 1024


@check("stream_memory_bounded", severity=Severity.HIGH,
       description="Streams whose client never reads leave the server's memory bounded")
def check_stream_memory_bounded(grown_bytes: int, bound_bytes: int, streams: int,
                                window_s: float) -> None:
    if grown_bytes > bound_bytes:
        fail("stream_memory_bounded",
             f"{streams} streams whose client never read grew the server's resident memory "
             f"by {grown_bytes / MB:.0f} MB in {window_s:.0f} s (bound {bound_bytes / MB:.0f} "
             "MB): their output is buffered without limit", grown_mb=round(grown_bytes / MB),
             bound_mb=round(bound_bytes / MB))


@check("slot_freed_on_close", severity=Severity.HIGH,
       description="A stream's slot is free within a second of its client closing")
def check_slot_freed_on_close(processing: int, after_s: float) -> None:
    if processing:
        fail("slot_freed_on_close",
             f"{processing} slots still processing {after_s:.1f} s after the clients of "
             "their streams closed the connection", processing=processing)
