"""anthropic_schema_keys: every real Anthropic recording passes in the older shape (none carries
``container`` or ``output_tokens_details``) and fails when held to the current schema; a
message with the current keys passes both ways; mistyped keys fail from any server."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import real_stream_corpus as corpus

from mlxcel_conformance.checks import anthropic_schema_keys as ak
from mlxcel_conformance.errors import ConformanceFailure
from mlxcel_conformance.sse import parse_sse

JSON = corpus.files("anthropic/json/*.json")
STREAMS = corpus.files("anthropic/stream/*.sse")


def _events(path: Path) -> list[Any]:
    return [json.loads(e.data) for e in parse_sse(path.read_text(encoding="utf-8")).events]


def _messages(path: Path) -> list[dict[str, Any]]:
    if "sdk-recording" in path.name:  # a cassette of several exchanges
        return [body for status, body in corpus.recording_responses(path) if status == 200]
    return [json.loads(path.read_text(encoding="utf-8"))]


def _current(message: dict[str, Any]) -> dict[str, Any]:
    """A recorded message with the keys the current schema adds."""
    done = copy.deepcopy(message)
    done["container"] = None
    done.setdefault("stop_details", None)
    done["usage"] = {**{"cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
                        "cache_creation": None, "inference_geo": None, "service_tier": None},
                     **done["usage"], "server_tool_use": None,
                     "output_tokens_details": {"thinking_tokens": 0}}
    return done


@pytest.mark.parametrize("path", JSON, ids=corpus.ids(JSON))
def test_recorded_messages_pass_in_the_older_shape_only(path: Path) -> None:
    for message in _messages(path):
        ak.check_anthropic_schema_keys(path.name, message, current=False)
        with pytest.raises(ConformanceFailure, match="lacks container"):
            ak.check_anthropic_schema_keys(path.name, message, current=True)
        ak.check_anthropic_schema_keys(path.name, _current(message), current=True)


@pytest.mark.parametrize("path", STREAMS, ids=corpus.ids(STREAMS))
def test_recorded_streams_pass_in_the_older_shape(path: Path) -> None:
    ak.check_anthropic_stream_schema_keys(path.name, _events(path), current=False)


def test_mistyped_keys_fail_from_any_server() -> None:
    message = _current(_messages(JSON[0])[0])
    for broken_path, value in ((("container",), 5), (("stop_details",), "none"),
                               (("usage", "output_tokens_details"), "none"),
                               (("usage", "output_tokens_details"), {"thinking_tokens": -1}),
                               (("usage", "output_tokens_details"), {"thinking_tokens": 10**6}),
                               (("container",), {"id": 1})):
        broken = copy.deepcopy(message)
        node = broken
        for key in broken_path[:-1]:
            node = node[key]
        node[broken_path[-1]] = value
        with pytest.raises(ConformanceFailure) as info:
            ak.check_anthropic_schema_keys("broken", broken, current=False)
        assert info.value.check == "anthropic_schema_keys"
