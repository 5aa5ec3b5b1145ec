"""`responses_usage_terminal`: real recordings pass (usage null or absent before the end),
a usage object before the terminal event fails, a terminal without usage fails."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from real_stream_corpus import files, ids, payloads, rejects, responses_events

from mlxcel_conformance.checks.responses_body import check_responses_usage_terminal

STREAMS = [p for p in files("openai-responses/stream/*") if "error" not in p.name]


@pytest.mark.parametrize("path", STREAMS, ids=ids(STREAMS))
def test_real_streams_pass(path: Path) -> None:
    usage = check_responses_usage_terminal(payloads(responses_events(path)))
    assert usage is not None and usage["total_tokens"] >= 0


def _real() -> list[dict]:
    path = next(p for p in STREAMS if p.name == "openai-responses-stream-text.sse")
    return [json.loads(e.data) for e in responses_events(path)]


def test_usage_before_the_end_fails() -> None:
    events = copy.deepcopy(_real())
    events[0]["response"]["usage"] = {"input_tokens": 1, "output_tokens": 0, "total_tokens": 1}
    with rejects("responses_usage_terminal"):
        check_responses_usage_terminal(events)


def test_terminal_without_usage_fails() -> None:
    events = copy.deepcopy(_real())
    events[-1]["response"].pop("usage")
    with rejects("responses_usage_terminal"):
        check_responses_usage_terminal(events)
