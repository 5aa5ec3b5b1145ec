"""Checks on many chat streams at once: every stream ends complete, or is refused with a
documented backpressure answer before any SSE header.

`classify_chat_stream` turns one finished HTTP exchange into a `StreamOutcome`; the load flow
(`stream_load.py`) adds the outcomes that never got that far (dropped, timed out, cut short).
`concurrent_streams_complete` then counts them. The outcome kinds:

| kind            | meaning                                                        | conformant |
|-----------------|----------------------------------------------------------------|------------|
| complete        | 200 text/event-stream, well-formed SSE, chunks, one `[DONE]`   | yes        |
| busy_503/429    | 503 or 429 with an OpenAI-shaped JSON error, no SSE header     | yes        |
| busy_bad_body   | 503 or 429 whose body is not an OpenAI JSON error              | no         |
| dropped         | connection refused, reset or closed before any response        | no         |
| timeout         | no complete answer within the run's time bound                 | no         |
| truncated       | a 200 stream that ended (or broke) before `data: [DONE]`       | no         |
| malformed       | a 200 stream that is not well-formed SSE of chat chunks        | no         |
| error_event     | a 200 stream that carries an `error` payload                   | no         |
| http_<status>   | any other status                                               | no         |
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from mlxcel_conformance.checks.errors_checks import check_error_body_openai
from mlxcel_conformance.checks.registry import check, fail
from mlxcel_conformance.checks.sse_checks import DONE, check_sse_framing
from mlxcel_conformance.errors import ConformanceFailure, Severity
from mlxcel_conformance.sse import parse_sse

BUSY_STATUSES = (503, 429)
CONFORMANT_KINDS = frozenset({"complete", *(f"busy_{s}" for s in BUSY_STATUSES)})


@dataclass(frozen=True)
class StreamOutcome:
    """How one of the concurrent streams ended; `detail` quotes the error, if any."""

    kind: str
    status: int | None = None
    detail: str = ""

    @property
    def conformant(self) -> bool:
        return self.kind in CONFORMANT_KINDS


def classify_chat_stream(status: int, content_type: str, text: str) -> StreamOutcome:
    """The outcome of a chat stream request whose whole response was read."""
    if status in BUSY_STATUSES:
        return _classify_busy(status, content_type, text)
    if status != 200:
        return StreamOutcome(f"http_{status}", status, text[:300])
    if not content_type.startswith("text/event-stream"):
        return StreamOutcome("malformed", status, f"200 served as {content_type!r}: {text[:200]}")
    stream = parse_sse(text)
    if not any(event.data == DONE for event in stream.events):
        tail = stream.trailing_incomplete or (stream.events[-1].raw if stream.events else "")
        return StreamOutcome("truncated", status,
                             f"no `data: [DONE]` after {len(stream.events)} event(s); "
                             f"ends with {tail[-200:]!r}")
    try:
        payloads = check_sse_framing(stream)
    except ConformanceFailure as exc:
        return StreamOutcome("malformed", status, exc.message)
    errors = [p for p in payloads if isinstance(p, dict) and "error" in p]
    if errors:
        return StreamOutcome("error_event", status, json.dumps(errors[0])[:300])
    if not payloads or stream.events[-1].data != DONE:
        return StreamOutcome("malformed", status,
                             f"{len(payloads)} chunk(s); last event {stream.events[-1].raw!r}")
    return StreamOutcome("complete", status)


def _classify_busy(status: int, content_type: str, text: str) -> StreamOutcome:
    if content_type.startswith("text/event-stream"):
        return StreamOutcome("busy_bad_body", status,
                             f"HTTP {status} sent with SSE headers: {text[:200]}")
    try:
        check_error_body_openai(text)
    except ConformanceFailure as exc:
        return StreamOutcome("busy_bad_body", status, f"{exc.message}: {text[:200]}")
    return StreamOutcome(f"busy_{status}", status)


@check("concurrent_streams_complete", severity=Severity.CRITICAL,
       description="Under many concurrent chat streams each one ends with `data: [DONE]` or is "
       "refused with 503/429 and an OpenAI JSON error before any SSE header; none is dropped, "
       "cut short or left hanging")
def check_concurrent_streams_complete(outcomes: Sequence[StreamOutcome], *,
                                      mode: str) -> dict[str, int]:
    """Return the count of each outcome kind."""
    counts = dict(Counter(outcome.kind for outcome in outcomes))
    bad = [outcome for outcome in outcomes if not outcome.conformant]
    if bad:
        fail("concurrent_streams_complete",
             f"{len(bad)} of {len(outcomes)} concurrent streams ({mode}) neither completed nor "
             f"were refused with 503/429: {', '.join(sorted({o.kind for o in bad}))}",
             counts=counts, mode=mode, first_error={"kind": bad[0].kind, "status": bad[0].status,
                                                    "detail": bad[0].detail})
    if not counts.get("complete"):
        fail("concurrent_streams_complete",
             f"all {len(outcomes)} concurrent streams ({mode}) were refused; none was served",
             severity=Severity.HIGH, counts=counts, mode=mode)
    return counts
