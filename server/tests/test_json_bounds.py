"""``structured/json_bounds``: every grammar built from a JSON schema has bounded numbers and
whitespace, as llama.cpp's schema converter bounds them; checked on the compiled llguidance
grammar itself (what a matcher accepts), not only on the rewritten schema."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from llguidance import LLMatcher, LLTokenizer

from mlxcel.structured.grammar import json_schema_grammar
from mlxcel.structured.json_bounds import (
    FRACTION_DIGITS,
    INTEGRAL_DIGITS,
    NumberCaps,
    bounded_schema,
)

TOKENIZER = Path(__file__).resolve().parents[2] / "fixtures" / "models" / "qwen3-tiny" / \
    "tokenizer.json"


@pytest.fixture(scope="module")
def tokenizer() -> LLTokenizer:
    return LLTokenizer(str(TOKENIZER), eos_token=[2041])


def accepts(tokenizer: LLTokenizer, schema: dict[str, Any], text: str) -> bool:
    grammar = json_schema_grammar(schema)
    assert not LLMatcher.validate_grammar(grammar, tokenizer)
    matcher = LLMatcher(tokenizer, grammar, log_level=0)
    ok = matcher.consume_tokens(tokenizer.tokenize_str(text))
    return bool(ok) and not matcher.is_error() and matcher.is_accepting()


def obj(**properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": sorted(properties)}


def test_numbers_have_bounded_digits(tokenizer: LLTokenizer) -> None:
    schema = obj(a={"type": "number"}, n={"type": "integer"})
    assert accepts(tokenizer, schema, '{"a": -12.5, "n": 3}')
    longest = "9" * INTEGRAL_DIGITS
    assert accepts(tokenizer, schema, f'{{"a": {longest}.{"1" * FRACTION_DIGITS}, "n": {longest}}}')
    assert not accepts(tokenizer, schema, f'{{"a": 1{longest}, "n": 1}}')
    assert not accepts(tokenizer, schema, f'{{"a": 1.{"1" * (FRACTION_DIGITS + 1)}, "n": 1}}')
    assert not accepts(tokenizer, schema, f'{{"a": 1, "n": 1{longest}}}')
    assert not accepts(tokenizer, schema, '{"a": 1e5, "n": 1}')  # no exponent: unbounded


def test_whitespace_is_fixed_even_if_the_schema_asks_for_more(tokenizer: LLTokenizer) -> None:
    schema = {**obj(a={"type": "integer"}), "x-guidance": {"whitespace_flexible": True,
                                                           "item_separator": "\\s*,\\s*"}}
    assert accepts(tokenizer, schema, '{"a": 1}')
    assert not accepts(tokenizer, schema, '{ "a": 1}')
    assert not accepts(tokenizer, schema, '{"a":\n\n\n 1}')


def test_declared_bounds_are_kept() -> None:
    schema = obj(a={"type": "number", "minimum": 0, "multipleOf": 0.5},
                 n={"type": "integer", "exclusiveMaximum": 10},
                 big={"type": "integer", "minimum": 10**20})
    bounded = bounded_schema(schema)
    a, n, big = (bounded["properties"][k] for k in ("a", "n", "big"))
    assert a["minimum"] == 0 and a["multipleOf"] == 0.5
    assert a["exclusiveMaximum"] == 10**INTEGRAL_DIGITS
    assert n["exclusiveMaximum"] == 10 and "maximum" not in n and "multipleOf" not in n
    assert big["maximum"] >= big["minimum"]  # never an empty range
    assert "maximum" not in schema["properties"]["a"]  # the caller's schema is untouched


def test_open_values_become_bounded_values(tokenizer: LLTokenizer) -> None:
    schema = {"type": "object", "properties": {"any": {}, "list": {"type": "array"},
                                               "map": {"type": "object"}}}
    assert accepts(tokenizer, schema, '{"any": [1, {"k": null}], "list": [true, "x"], '
                                      '"map": {"k": 2.5}}')
    assert not accepts(tokenizer, schema, '{"any": ' + "1" * 40 + "}")
    assert not accepts(tokenizer, schema, '{"map": {"k": ' + "1" * 40 + "}}")
    assert not accepts(tokenizer, schema, '{"other": 1}')  # declared properties close it
    assert accepts(tokenizer, {}, '{"x": [1, 2]}') and not accepts(tokenizer, {}, "1" * 40)


def test_budget_caps_are_smaller() -> None:
    caps = NumberCaps(integral=4, fraction=2)
    bounded = bounded_schema(obj(a={"type": "number"}), caps)
    assert bounded["properties"]["a"]["exclusiveMaximum"] == 10_000
    assert bounded["properties"]["a"]["multipleOf"] == 0.01


def test_every_schema_node_is_reached() -> None:
    schema = {"anyOf": [{"type": "integer"}, {"type": "array", "items": {"type": "number"},
                                              "prefixItems": [{"type": "integer"}]}],
              "$defs": {"d": {"type": "number"}}}
    text = json.dumps(bounded_schema(schema))
    assert text.count('"maximum"') + text.count('"exclusiveMaximum"') >= 4


@pytest.mark.parametrize("schema", [
    {"properties": [1, 2]}, {"$defs": ["x"]}, {"anyOf": {"a": 1}}, {"type": 5, "minimum": "x"},
    {"type": "number", "maximum": "big"}, {"items": 3, "type": "array"}, True,
])
def test_malformed_schemas_do_not_crash_the_bounds(schema: Any) -> None:
    bounded_schema(schema)  # llguidance then judges the schema (a 400), never a 500 here
