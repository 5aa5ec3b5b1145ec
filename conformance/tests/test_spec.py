"""The OpenAPI document in openapi/ and the mlxcel_conformance.spec loader/validator."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import schemathesis
import yaml
from schemathesis.specs.openapi.definitions import OPENAPI_31, OPENAPI_32

from mlxcel_conformance import spec

ROOT = Path(__file__).resolve().parents[2]
SPEC_FILE = ROOT / "openapi" / "openapi.yaml"
REAL = ROOT / "fixtures" / "real-streams"
CHAT_BODIES = sorted((REAL / "openai-chat" / "json").glob("*.json"))
CHAT_STREAMS = sorted((REAL / "openai-chat" / "stream").glob("*.sse"))
OPENAI_ERRORS = sorted((REAL / "errors").glob("openai-*.json"))
CHAT = ("POST", "/v1/chat/completions")
COMPLETIONS = ("POST", "/v1/completions")

EXPECTED_OPERATIONS = {
    ("POST", "/v1/chat/completions"): ("chat", ("200", "400", "401", "413", "500", "501", "503")),
    ("POST", "/v1/completions"): ("completions", ("200", "400", "401", "500", "501", "503")),
    ("GET", "/v1/models"): ("models", ("200", "401")),
    ("GET", "/health"): ("health", ("200", "503")),
    ("GET", "/"): ("health", ("200", "503")),
    ("POST", "/tokenize"): ("tokenize", ("200", "400", "401")),
    ("POST", "/detokenize"): ("tokenize", ("200", "400", "401", "500")),
    # engine observability
    ("GET", "/slots"): ("observability", ("200", "401", "503")),
    ("GET", "/props"): ("observability", ("200", "401")),
    ("GET", "/metrics"): ("observability", ("200", "401")),
    ("GET", "/v1/cache/stats"): ("observability", ("200", "401")),
    ("POST", "/v1/cache/reset"): ("observability", ("200", "401")),
    # llama-server's aliases and its chat token count
    ("POST", "/chat/completions"): ("chat", ("200", "400", "401", "413", "500", "501", "503")),
    ("POST", "/v1/chat/completions/input_tokens"): ("chat", ("200", "400", "401", "503")),
    ("POST", "/chat/completions/input_tokens"): ("chat", ("200", "400", "401", "503")),
    ("GET", "/models"): ("models", ("200", "401")),
    ("GET", "/v1/health"): ("health", ("200", "503")),
}
# Responses and Anthropic Messages, each also mounted without /v1.
_STORED = ("200", "400", "401", "404")
for _prefix in ("/v1", ""):
    EXPECTED_OPERATIONS.update({
        ("POST", f"{_prefix}/responses"): ("responses", ("200", "400", "401", "413", "500",
                                                         "503")),
        ("POST", f"{_prefix}/responses/input_tokens"): ("responses", ("200", "400", "401", "413",
                                                                      "503")),
        ("POST", f"{_prefix}/responses/compact"): ("responses", ("200", "400", "401", "413",
                                                                 "503")),
        ("GET", f"{_prefix}/responses/{{response_id}}"): ("responses", _STORED),
        ("DELETE", f"{_prefix}/responses/{{response_id}}"): ("responses", _STORED),
        ("POST", f"{_prefix}/responses/{{response_id}}/cancel"): ("responses", _STORED),
        ("POST", f"{_prefix}/messages"): ("anthropic",
                                          ("200", "400", "401", "413", "500", "503", "529")),
        ("POST", f"{_prefix}/messages/count_tokens"): ("anthropic",
                                                       ("200", "400", "401", "413", "503")),
    })
EXPECTED_OPERATIONS.update({
    **{  # llama-server native routes
        ("POST", "/completion"): ("llama-native", ("200", "400", "401", "500", "503")),
        ("POST", "/completions"): ("llama-native", ("200", "400", "401", "500", "503")),
        ("POST", "/infill"): ("llama-native", ("200", "400", "401", "501", "503")),
        ("POST", "/apply-template"): ("llama-native", ("200", "400", "401", "503")),
    },
    **{  # Whisper on an audio-only server; 501 naming the flag without one
        ("POST", f"{prefix}/audio/{route}"): (
            "audio", ("200", "400", "401", "413", "500", "501", "503", "504"))
        for prefix in ("/v1", "") for route in ("transcriptions", "translations")
    },
    **{  # Kokoro on an audio-only server; 501 naming the flag without one
        ("POST", f"{prefix}/audio/speech"): (
            "audio", ("200", "400", "401", "415", "500", "501", "503", "504"))
        for prefix in ("/v1", "")
    },
    **{  # Z-Image beside the text model; 501 naming the flag without one
        ("POST", f"{prefix}/images/{route}"): (
            "images", ("200", "400", "401", *(("413",) if route == "edits" else ()), "415",
                       "500", "501", "503", "504"))
        for prefix in ("/v1", "") for route in ("generations", "edits")
    },
    ("GET", "/v1/realtime"): ("realtime", ("401", "501")),
    **{  # embeddings and reranking
        ("POST", path): ("embeddings", ("200", "400", "401", "501", "503"))
        for path in ("/v1/embeddings", "/embedding", "/embeddings", "/v1/rerank",
                     "/v1/reranking", "/rerank", "/reranking")
    },
})
# Streams without a terminator event: llama-server's native routes end without [DONE].
UNTERMINATED_STREAMS = ("/completion", "/completions", "/infill")
# Streams: chat (and its alias) and completions end with [DONE]; Responses and Messages (and their
# aliases), a background response's events (GET /v1/responses/{id}?stream=true, and its alias),
# speech (and its alias) and llama-server's native routes do not.
STREAMS = 11 + len(UNTERMINATED_STREAMS)


def _raw() -> dict[str, Any]:
    return yaml.safe_load(SPEC_FILE.read_text(encoding="utf-8"))


def _walk(node: Any, path: str = "") -> Any:
    yield path, node
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _walk(value, f"{path}/{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _walk(value, f"{path}/{index}")


def _sse_data(path: Path) -> list[str]:
    return [
        line[len("data: ") :]
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.startswith("data: ")
    ]


def _chunks(path: Path) -> list[dict[str, Any]]:
    return [json.loads(d) for d in _sse_data(path) if d != "[DONE]"]


# ------------------------------------------------------------------ the document itself


def test_yaml_parses_and_is_openapi_31() -> None:
    document = _raw()
    assert document["openapi"].startswith("3.1.")
    assert document["jsonSchemaDialect"] == "https://json-schema.org/draft/2020-12/schema"
    assert spec.load_spec() == document
    assert spec.spec_path().resolve() == SPEC_FILE.resolve()


def test_valid_against_openapi_meta_schemas() -> None:
    document = _raw()
    # 3.2 meta-schema as-is (itemSchema is a 3.2 keyword) ...
    as_32 = dict(document, openapi="3.2.0")
    assert not list(jsonschema.Draft202012Validator(OPENAPI_32).iter_errors(as_32))
    # ... and 3.1 once the 3.2-only `itemSchema` is set aside: nothing else is non-3.1.
    stripped = json.loads(json.dumps(document))  # no shared nodes (YAML merges share them)
    removed = 0
    for item in stripped["paths"].values():
        for op in item.values():
            if not isinstance(op, dict):
                continue  # path-level `parameters`
            for response in op["responses"].values():
                for media in response.get("content", {}).values():
                    removed += media.pop("itemSchema", None) is not None
    assert removed == STREAMS
    assert not list(jsonschema.Draft202012Validator(OPENAPI_31).iter_errors(stripped))


def test_component_schemas_are_valid_2020_12() -> None:
    for schema in _raw()["components"]["schemas"].values():
        jsonschema.Draft202012Validator.check_schema(schema)  # raises SchemaError


def test_schemathesis_loads_every_operation() -> None:
    schema = schemathesis.openapi.from_path(str(SPEC_FILE))
    loaded = set()
    for result in schema.get_all_operations():
        operation = result.ok()  # type: ignore[union-attr]
        loaded.add((operation.method.upper(), operation.path))
    assert loaded == set(EXPECTED_OPERATIONS)


def test_every_ref_resolves() -> None:
    document = spec.load_spec()
    refs = [n["$ref"] for _, n in _walk(document) if isinstance(n, dict) and "$ref" in n]
    assert refs
    resolver = spec._registry().resolver()
    for ref in refs:
        assert ref.startswith("#/"), ref
        resolver.lookup(f"{spec.SPEC_URI}{ref}")  # raises when unresolvable


def test_no_nullable_keyword() -> None:
    offenders = [
        path for path, node in _walk(_raw()) if isinstance(node, dict) and "nullable" in node
    ]
    assert offenders == []


def test_operations_family_statuses_and_400_for_bodies() -> None:
    document = spec.load_spec()
    found = {(op.method, op.path): (op.family, op.statuses) for op in spec.operations()}
    assert found == EXPECTED_OPERATIONS
    for op in spec.operations():
        definition = document["paths"][op.path][op.method.lower()]
        assert definition["x-mlxcel-family"] == op.family
        assert op.operation_id
        if "requestBody" in definition:
            assert "400" in op.statuses, op
        # unknown model names are not an error here; only stored objects can be missing
        assert "404" not in op.statuses or "{response_id}" in op.path


def test_security_global_bearer_except_health() -> None:
    document = spec.load_spec()
    assert document["components"]["securitySchemes"]["bearerAuth"] == {
        **document["components"]["securitySchemes"]["bearerAuth"],
        "type": "http",
        "scheme": "bearer",
    }
    assert document["security"] == [{"bearerAuth": []}]
    for op in spec.operations():
        definition = document["paths"][op.path][op.method.lower()]
        if op.family == "health":
            assert definition["security"] == []
        else:
            assert "security" not in definition
            assert "401" in op.statuses


def test_streaming_responses_use_item_schema_and_terminator() -> None:
    streams = 0
    for path, node in _walk(spec.load_spec()):
        if path.endswith("/content/text~1event-stream") or path.endswith("/text/event-stream"):
            streams += 1
            assert "itemSchema" in node and "schema" not in node, path
            unterminated = any(path.startswith(f"/paths/{p}/")
                               for p in UNTERMINATED_STREAMS)
            allowed = (None,) if unterminated else ("[DONE]", None)
            assert node.get("x-sse-terminator") in allowed, path
    assert streams == STREAMS
    assert spec.sse_terminator(*CHAT) == "[DONE]"
    assert spec.sse_terminator("GET", "/v1/models") is None


def test_request_examples_are_valid_requests() -> None:
    document = spec.load_spec()
    count = 0
    for op in spec.operations():
        body = document["paths"][op.path][op.method.lower()].get("requestBody")
        if body is None:
            continue
        if "application/json" not in body["content"]:  # the audio uploads
            assert set(body["content"]) == {"multipart/form-data"}, op
            continue
        examples = body["content"]["application/json"]["examples"]
        assert examples, op
        for example in examples.values():
            count += 1
            assert spec.validate_request_json(op.method, op.path, example["value"]) == []
            max_tokens = example["value"].get("max_tokens")
            assert max_tokens is None or max_tokens <= 64
    assert count >= 6


def test_fuzz_maximum_on_generation_lengths() -> None:
    schemas = spec.load_spec()["components"]["schemas"]
    for name, field in [
        ("CreateChatCompletionRequest", "max_tokens"),
        ("CreateChatCompletionRequest", "max_completion_tokens"),
        ("CreateCompletionRequest", "max_tokens"),
    ]:
        prop = schemas[name]["properties"][field]
        assert prop["x-mlxcel-fuzz-maximum"] == 64
        assert "maximum" not in prop and prop["minimum"] == 1


# ------------------------------------------------------------------ requests


@pytest.mark.parametrize(
    ("body", "valid"),
    [
        ({"messages": [{"role": "user", "content": "hi"}]}, True),
        ({"messages": [{"role": "user", "content": "hi"}], "unknown_field": {"x": 1}}, True),
        (
            {
                "messages": [
                    {"role": "developer", "content": "be terse"},
                    {
                        "role": "user",
                        "content": [
                            {"type": "text", "text": "what is this?"},
                            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA"}},
                        ],
                    },
                    {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": "c1",
                                "type": "function",
                                "function": {"name": "f", "arguments": "{}"},
                            },
                        ],
                    },
                    {"role": "tool", "tool_call_id": "c1", "content": "42"},
                ],
                "stop": ["\n"],
                "tool_choice": {"type": "function", "function": {"name": "f"}},
                "response_format": {"type": "json_schema", "json_schema": {"schema": {}}},
            },
            True,
        ),
        ({"messages": []}, False),
        ({}, False),
        ({"messages": [{"role": "user", "content": None}]}, False),
        ({"messages": [{"role": "assistant", "content": None}]}, False),
        ({"messages": [{"role": "robot", "content": "x"}]}, False),
        ({"messages": [{"role": "user", "content": "x"}], "n": 129}, False),
        ({"messages": [{"role": "user", "content": "x"}], "temperature": 2.5}, False),
        ({"messages": [{"role": "user", "content": "x"}], "max_tokens": 0}, False),
        ({"messages": [{"role": "user", "content": "x"}], "stop": ["s"] * 17}, False),
        ({"messages": [{"role": "user", "content": "x"}], "repetition_penalty": 0}, False),
        ({"messages": [{"role": "user", "content": "x"}], "top_logprobs": 21}, False),
        (
            {
                "messages": [{"role": "user", "content": "x"}],
                "response_format": {"type": "json_object"},
            },
            False,
        ),
        (
            {
                "messages": [{"role": "user", "content": "x"}],
                "response_format": {"type": "json_schema"},
            },
            False,
        ),
    ],
)
def test_chat_request_schema(body: dict[str, Any], valid: bool) -> None:
    assert (spec.validate_request_json(*CHAT, body) == []) is valid


@pytest.mark.parametrize(
    ("prompt", "valid"),
    [
        ("x", True),
        (["a", "b"], True),
        ([1, 2], True),
        ([[1], [2, 3]], True),
        ([], False),
        ([[]], False),
        (None, False),
        ([1, "a"], False),
    ],
)
def test_completion_prompt_forms(prompt: Any, valid: bool) -> None:
    assert (spec.validate_request_json(*COMPLETIONS, {"prompt": prompt}) == []) is valid


@pytest.mark.parametrize(("logprobs", "valid"), [(0, True), (5, True), (20, True), (21, False),
                                                 (-1, False)])
def test_completion_logprobs_bound_is_the_servers(logprobs: int, valid: bool) -> None:
    """The spec's bound is the one the server enforces (``CompletionRequest.logprobs``, 0 to
    20): `nox -s fuzz` found the spec saying OpenAI's 5 while the server answered 6."""
    body = {"prompt": "x", "logprobs": logprobs}
    assert (spec.validate_request_json(*COMPLETIONS, body) == []) is valid


@pytest.mark.parametrize(("operation", "valid"), [
    (CHAT, False),
    (COMPLETIONS, True),
    (("POST", "/v1/responses"), True),
    (("POST", "/v1/responses/input_tokens"), True),
])
def test_extra_body_template_keys_are_chats_alone(operation: tuple[str, str],
                                                  valid: bool) -> None:
    """Only chat reads a literal ``extra_body``'s ``preserve_thinking`` (and
    ``chat_template_kwargs``), so only chat's schema types them: `nox -s fuzz`'s second pass
    found Responses answering 200 to ``preserve_thinking: 5``, a key it never reads."""
    body = {"messages": [{"role": "user", "content": "hi"}], "prompt": "x", "input": "hi",
            "extra_body": {"preserve_thinking": 5, "cache_prompt": True}}
    assert (spec.validate_request_json(*operation, body) == []) is valid
    wrong_cache = {**body, "extra_body": {"cache_prompt": 5}}
    assert spec.validate_request_json(*operation, wrong_cache) != []
