"""Constrained decoding on the fixture model: the llguidance mask keeps every generated token a
valid prefix, so greedy output always parses against the schema (or the forced call grammar)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import mlx.core as mx
import pytest
from mlx_lm.generate import generate_step

from mlxcel.chat.forced_choice import forced_call_factories
from mlxcel.chat.template import render_chat
from mlxcel.chat.tool_calls import extract_tool_calls, tool_format_of
from mlxcel.engine.loaded_model import LoadedModel, load_model
from mlxcel.errors import InvalidRequestError
from mlxcel.structured.response_format import response_format_factories

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "models" / "qwen3-tiny"
WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}


@pytest.fixture(scope="module")
def model() -> LoadedModel:
    return load_model(str(FIXTURE))


def greedy(model: LoadedModel, prompt: list[int], factories: tuple[Any, ...],
           limit: int = 60) -> str:
    out: list[int] = []
    steps = generate_step(mx.array(prompt), model.model, max_tokens=limit,
                          sampler=lambda x: mx.argmax(x, axis=-1),
                          logits_processors=[make() for make in factories])
    for token, _ in steps:
        if int(token) in model.eos_token_ids:
            break
        out.append(int(token))
    return model.decode(out)


SCHEMAS = [
    {"type": "object", "properties": {"n": {"type": "integer"}, "ok": {"type": "boolean"}},
     "required": ["n", "ok"], "additionalProperties": False},
    {"type": "array", "items": {"enum": ["a", "b"]}, "minItems": 1, "maxItems": 3},
    {"type": "object", "properties": {"animal": {"type": "string", "maxLength": 8}},
     "required": ["animal"], "additionalProperties": False},
]


@pytest.mark.parametrize("schema", SCHEMAS)
def test_constrained_output_validates(model: LoadedModel, schema: dict[str, Any]) -> None:
    factories = response_format_factories(
        model, {"type": "json_schema", "json_schema": {"name": "x", "schema": schema}})
    prompt = render_chat(model, [{"role": "user", "content": "Describe a cat as JSON."}])
    text = greedy(model, prompt.tokens, factories)
    jsonschema.validate(json.loads(text), schema)


@pytest.mark.parametrize("fmt", [{"type": "json_object"}, {"type": "json_schema"},
                                 {"type": "xml"}])
def test_bad_response_formats(model: LoadedModel, fmt: dict[str, Any]) -> None:
    with pytest.raises(InvalidRequestError):
        response_format_factories(model, fmt)


def test_text_format_is_unconstrained(model: LoadedModel) -> None:
    assert response_format_factories(model, {"type": "text"}) == ()
    assert response_format_factories(model, None) == ()


def test_forced_call_grammar_yields_a_call(model: LoadedModel) -> None:
    fmt = tool_format_of(model)
    factories = forced_call_factories(model, fmt, [WEATHER], 64)
    assert factories, "the Hermes format must get a grammar"
    prompt = render_chat(model, [{"role": "user", "content": "Say hello."}], tools=[WEATHER])
    text = greedy(model, prompt.tokens, factories, limit=80)
    content, calls = extract_tool_calls(model, text, [WEATHER])
    assert content == "" and [c.name for c in calls] == ["get_weather"]
    jsonschema.validate(json.loads(calls[0].arguments), WEATHER["function"]["parameters"])
