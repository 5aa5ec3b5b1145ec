"""The spec's response schemas against real recorded bodies and streams (which must validate)
and deliberately broken copies of them (which must not), through the suite's validator and
through schemathesis itself."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import requests
import schemathesis
import yaml
from schemathesis.checks import FailureGroup
from schemathesis.core.transport import Response
from schemathesis.specs.openapi.checks import response_schema_conformance

from mlxcel_conformance import spec

ROOT = Path(__file__).resolve().parents[2]
SPEC_FILE = ROOT / "openapi" / "openapi.yaml"
REAL = ROOT / "fixtures" / "real-streams"
CHAT_BODIES = sorted((REAL / "openai-chat" / "json").glob("*.json"))
CHAT_STREAMS = sorted((REAL / "openai-chat" / "stream").glob("*.sse"))
OPENAI_ERRORS = sorted((REAL / "errors").glob("openai-*.json"))
CHAT = ("POST", "/v1/chat/completions")
COMPLETIONS = ("POST", "/v1/completions")


def _sse_data(path: Path) -> list[str]:
    return [
        line[len("data: ") :]
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.startswith("data: ")
    ]


def _chunks(path: Path) -> list[dict[str, Any]]:
    return [json.loads(d) for d in _sse_data(path) if d != "[DONE]"]




# ------------------------------------------------------------------ real OpenAI chat bodies


@pytest.mark.parametrize("path", CHAT_BODIES, ids=lambda p: p.name)
def test_real_chat_body_validates(path: Path) -> None:
    assert spec.validate_json(*CHAT, 200, json.loads(path.read_text(encoding="utf-8"))) == []


def _drop_choices(b: dict[str, Any]) -> None:
    del b["choices"]


def _bogus_finish(b: dict[str, Any]) -> None:
    b["choices"][0]["finish_reason"] = "bogus"


def _wrong_object(b: dict[str, Any]) -> None:
    b["object"] = "chat.completion.chunk"


def _user_role(b: dict[str, Any]) -> None:
    b["choices"][0]["message"]["role"] = "user"


def _string_created(b: dict[str, Any]) -> None:
    b["created"] = str(b["created"])


def _no_usage_total(b: dict[str, Any]) -> None:
    del b["usage"]["total_tokens"]


def _empty_choices(b: dict[str, Any]) -> None:
    b["choices"] = []


def _no_logprobs(b: dict[str, Any]) -> None:
    del b["choices"][0]["logprobs"]


BODY_MUTATIONS = [
    _drop_choices,
    _bogus_finish,
    _wrong_object,
    _user_role,
    _string_created,
    _no_usage_total,
    _empty_choices,
    _no_logprobs,
]


@pytest.mark.parametrize("mutate", BODY_MUTATIONS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("path", CHAT_BODIES, ids=lambda p: p.name)
def test_mutated_chat_body_rejected(path: Path, mutate: Any) -> None:
    body = json.loads(path.read_text(encoding="utf-8"))
    mutate(body)
    assert spec.validate_json(*CHAT, 200, body)


# ------------------------------------------------------------------ real OpenAI chat streams


@pytest.mark.parametrize("path", CHAT_STREAMS, ids=lambda p: p.name)
def test_real_chat_stream_events_validate(path: Path) -> None:
    events = _sse_data(path)
    assert events[-1] == "[DONE]"
    for data in events:
        assert spec.validate_sse_event(*CHAT, data) == [], data


def _chunk_finish(c: dict[str, Any]) -> None:
    c["choices"] = [{"index": 0, "delta": {}, "finish_reason": "bogus", "logprobs": None}]


def _chunk_object(c: dict[str, Any]) -> None:
    c["object"] = "chat.completion"


def _chunk_no_choices(c: dict[str, Any]) -> None:
    del c["choices"]


def _chunk_delta_role(c: dict[str, Any]) -> None:
    c["choices"] = [{"index": 0, "delta": {"role": "user"}, "finish_reason": None}]


def _chunk_tool_call_without_index(c: dict[str, Any]) -> None:
    c["choices"] = [
        {
            "index": 0,
            "finish_reason": None,
            "delta": {"tool_calls": [{"function": {"arguments": "{}"}}]},
        }
    ]


def _chunk_usage_string(c: dict[str, Any]) -> None:
    c["usage"] = {"prompt_tokens": "1", "completion_tokens": 1, "total_tokens": 2}


CHUNK_MUTATIONS = [
    _chunk_finish,
    _chunk_object,
    _chunk_no_choices,
    _chunk_delta_role,
    _chunk_tool_call_without_index,
    _chunk_usage_string,
]


@pytest.mark.parametrize("mutate", CHUNK_MUTATIONS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("path", CHAT_STREAMS, ids=lambda p: p.name)
def test_mutated_chat_chunk_rejected(path: Path, mutate: Any) -> None:
    chunk = _chunks(path)[0]
    mutate(chunk)
    assert spec.validate_sse_event(*CHAT, json.dumps(chunk))


@pytest.mark.parametrize("data", ["[DONE", "", "{not json", "null", "[]", '{"error": {}}'])
def test_bad_event_payloads_rejected(data: str) -> None:
    assert spec.validate_sse_event(*CHAT, data)


# ------------------------------------------------------------------ errors


@pytest.mark.parametrize("path", OPENAI_ERRORS, ids=lambda p: p.name)
def test_real_openai_error_bodies_validate(path: Path) -> None:
    body = json.loads(path.read_text(encoding="utf-8"))
    for status in (400, 401, 500, 503):
        assert spec.validate_json(*CHAT, status, body) == []
    assert spec.validate_json("POST", "/tokenize", 401, body) == []


def test_real_404_cassette_error_body_validates_against_error() -> None:
    cassette = yaml.safe_load(
        (REAL / "errors" / "openai-chat-error-404-model-not-found.cassette.yaml").read_text()
    )
    body = cassette["interactions"][0]["response"]["parsed_body"]
    assert spec.validate_json(*CHAT, 400, body) == []
    # 404 (unknown model) is deliberately not documented for chat completions.
    assert "not documented" in spec.validate_json(*CHAT, 404, body)[0]


@pytest.mark.parametrize(
    "body",
    [
        {"error": {"message": "", "type": "invalid_request_error"}},
        {"error": {"message": "m"}},
        {"error": {"type": "server_error"}},
        {"error": {"message": "m", "type": "server_error", "code": 1.5}},
        {"error": {"message": "m", "type": "server_error", "param": 3}},
        {"message": "m", "type": "server_error"},
        {"error": "boom"},
    ],
)
def test_malformed_error_bodies_rejected(body: dict[str, Any]) -> None:
    assert spec.validate_json(*CHAT, 500, body)


def test_reference_error_example_validates() -> None:
    body = {
        "error": {
            "message": "All slots are busy. Please try again later.",
            "type": "server_busy",
            "code": None,
        }
    }
    assert spec.validate_json(*CHAT, 503, body) == []
    oov = {
        "error": {
            "message": "token id 99999 is out of vocabulary range (vocab_size 10)",
            "type": "server_error",
            "code": 500,
        }
    }
    assert spec.validate_json("POST", "/detokenize", 500, oov) == []


# ------------------------------------------------------------------ reference examples

COMPLETION: dict[str, Any] = {
    "id": "cmpl-abc123",
    "object": "text_completion",
    "created": 1715000000,
    "model": "qwen3-8b",
    "system_fingerprint": None,
    "choices": [
        {
            "index": 0,
            "text": "The capital of France is Paris.",
            "finish_reason": "stop",
            "logprobs": None,
        }
    ],
    "usage": {"prompt_tokens": 8, "completion_tokens": 7, "total_tokens": 15},
}
LOADED_HEALTH: dict[str, Any] = {
    "model": "qwen3-8b",
    "batch": {"active_sequences": 2, "queue_depth": 0, "max_batch_size": 4},
    "observability": {
        "sequences_started": 42,
        "sequences_completed": 40,
        "total_prefill_tokens": 8192,
        "total_decode_tokens": 4096,
        "decode_steps_processed": 256,
        "prefill_chunks_processed": 42,
        "current_batch_size": 2,
        "cache_pool_active": 2,
    },
    "context_size": 4096,
    "tool_call_parser": "mlxcel",
}


def test_reference_completion_and_chunks() -> None:
    assert spec.validate_json(*COMPLETIONS, 200, COMPLETION) == []
    chunk = dict(
        COMPLETION,
        choices=[{"index": 0, "text": " Paris", "finish_reason": None, "logprobs": None}],
    )
    del chunk["usage"]
    assert spec.validate_sse_event(*COMPLETIONS, json.dumps(chunk)) == []
    usage_chunk = dict(COMPLETION, choices=[])
    assert spec.validate_sse_event(*COMPLETIONS, json.dumps(usage_chunk)) == []
    assert spec.validate_sse_event(*COMPLETIONS, "[DONE]") == []
    assert spec.validate_json(*COMPLETIONS, 200, dict(COMPLETION, object="chat.completion"))
    chat_chunk = _chunks(CHAT_STREAMS[0])[0]
    assert spec.validate_sse_event(*COMPLETIONS, json.dumps(chat_chunk))


def test_reference_chat_examples() -> None:
    body: dict[str, Any] = {
        "id": "chatcmpl-abc123",
        "object": "chat.completion",
        "created": 1715000000,
        "model": "qwen3-8b",
        "system_fingerprint": None,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "Hello!", "reasoning_only": True},
                "finish_reason": "error",
                "logprobs": None,
            }
        ],
        "usage": {"prompt_tokens": 12, "completion_tokens": 9, "total_tokens": 21},
    }
    assert spec.validate_json(*CHAT, 200, body) == []
    chunk = {
        "id": "chatcmpl-abc123",
        "object": "chat.completion.chunk",
        "created": 1715000000,
        "model": "qwen3-8b",
        "system_fingerprint": None,
        "choices": [
            {"index": 0, "delta": {"role": "assistant"}, "finish_reason": None, "logprobs": None}
        ],
    }
    assert spec.validate_sse_event(*CHAT, json.dumps(chunk)) == []
    del body["choices"][0]["logprobs"]  # required on the non-streaming body
    assert spec.validate_json(*CHAT, 200, body)


def test_models_and_tokenize_bodies() -> None:
    models = {
        "object": "list",
        "data": [{"id": "qwen3-8b", "object": "model", "created": 1715000000, "owned_by": "user"}],
    }
    assert spec.validate_json("GET", "/v1/models", 200, models) == []
    assert spec.validate_json("GET", "/v1/models", 200, {"object": "list", "data": []})
    assert spec.validate_json("POST", "/tokenize", 200, {"tokens": [9906, 11, 1917, 0]}) == []
    assert spec.validate_json("POST", "/tokenize", 200, {"tokens": []}) == []
    pieces = {"tokens": [{"id": 9906, "piece": "Hello"}, {"id": 11, "piece": [226, 150]}]}
    assert spec.validate_json("POST", "/tokenize", 200, pieces) == []
    assert spec.validate_json("POST", "/tokenize", 200, {"tokens": [2**31]})
    assert spec.validate_json("POST", "/tokenize", 200, {"tokens": ["a"]})
    assert spec.validate_json("POST", "/detokenize", 200, {"content": "Hello, world!"}) == []
    assert spec.validate_json("POST", "/detokenize", 200, {"text": "x"})
    assert spec.validate_request_json("POST", "/tokenize", {"add_special": True})
    assert spec.validate_request_json("POST", "/detokenize", {"tokens": [-1, 2**40]}) == []
    assert spec.validate_request_json("POST", "/detokenize", {"tokens": [1.5]})


@pytest.mark.parametrize("path", ["/health", "/"])
def test_health_bodies(path: str) -> None:
    ok: dict[str, Any] = {"status": "ok", **LOADED_HEALTH}
    busy = {"status": "no slot available", **LOADED_HEALTH}
    loading = {"status": "loading model"}
    assert spec.validate_json("GET", path, 200, ok) == []
    assert spec.validate_json("GET", path, 503, busy) == []
    assert spec.validate_json("GET", path, 503, loading) == []
    assert spec.validate_json("GET", path, 200, dict(ok, tool_call_parser=None)) == []
    assert spec.validate_json("GET", path, 200, loading)
    assert spec.validate_json("GET", path, 503, ok)
    assert spec.validate_json("GET", path, 503, {"status": "no slot available"})
    assert spec.validate_json("GET", path, 200, dict(ok, tool_call_parser="hermes"))
    partial = copy.deepcopy(ok)
    del partial["observability"]["cache_pool_active"]
    assert spec.validate_json("GET", path, 200, partial)


# ------------------------------------------------------------------ the loader's API


def test_response_schema_lookup() -> None:
    item = spec.response_schema(*CHAT, 200, "text/event-stream; charset=utf-8")
    assert item is not None and item["required"] == ["data"]
    body = spec.response_schema(*CHAT, 200, "application/json")
    assert body is not None and body["properties"]["object"] == {"const": "chat.completion"}
    error = spec.response_schema(*CHAT, 503, "application/json")
    assert error is not None and error["required"] == ["error"]
    assert spec.response_schema(*CHAT, 404, "application/json") is None
    assert spec.response_schema(*CHAT, 200, "text/plain") is None
    assert spec.response_schema("GET", "/nope", 200, "application/json") is None


def test_undocumented_things_are_errors() -> None:
    assert "not documented" in spec.validate_json("GET", "/nope", 200, {})[0]
    assert "not documented" in spec.validate_json("DELETE", "/v1/models", 200, {})[0]
    assert "status 418" in spec.validate_json("GET", "/v1/models", 418, {})[0]
    assert spec.validate_sse_event("GET", "/v1/models", "[DONE]")


def test_missing_spec_raises_setup_error(monkeypatch: pytest.MonkeyPatch) -> None:
    errors = pytest.importorskip("mlxcel_conformance.errors")
    monkeypatch.setattr(spec, "_candidate_paths", lambda: [ROOT / "does-not-exist.yaml"])
    with pytest.raises(errors.SetupError, match="OpenAPI spec not found"):
        spec.spec_path()


# ------------------------------------------------------------------ schemathesis validates with it


def _schemathesis_failures(content_type: str, content: bytes, status: int = 200) -> list[str]:
    schema = schemathesis.openapi.from_path(str(SPEC_FILE))
    operation = schema["/v1/chat/completions"]["POST"]
    body: Any = {"messages": [{"role": "user", "content": "hi"}], "stream": True}
    case = operation.Case(body=body, media_type="application/json")
    request = requests.Request(
        "POST", "http://127.0.0.1:8080/v1/chat/completions", json=body
    ).prepare()
    response = Response(
        status_code=status,
        headers={"content-type": [content_type]},
        content=content,
        request=request,
        elapsed=0.01,
        verify=False,
    )
    try:
        case.validate_response(response, checks=[response_schema_conformance])
    except FailureGroup as group:  # a BaseExceptionGroup
        return [str(getattr(f, "title", f)) for f in group.exceptions]
    return []


@pytest.mark.parametrize("path", CHAT_STREAMS, ids=lambda p: p.name)
def test_schemathesis_accepts_real_stream(path: Path) -> None:
    assert _schemathesis_failures("text/event-stream", path.read_bytes()) == []


def test_schemathesis_rejects_bad_stream_and_body() -> None:
    raw = CHAT_STREAMS[0].read_bytes()
    bad = raw.replace(b'"finish_reason":"stop"', b'"finish_reason":"bogus"')
    assert bad != raw
    assert _schemathesis_failures("text/event-stream", bad) == ["SSE event violates schema"]
    body = CHAT_BODIES[0].read_bytes()
    assert _schemathesis_failures("application/json", body) == []
    wrong = body.replace(b'"chat.completion"', b'"chat.x"')
    assert _schemathesis_failures("application/json", wrong) == ["Response violates schema"]
