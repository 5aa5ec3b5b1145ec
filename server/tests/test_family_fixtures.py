"""Every tool-call family fixture (and qwen3-tiny, Hermes) in process: the format is detected
from the template, greedy decoding emits a real call in the family's wire format, the parser
turns it into the declared call, and a forced choice is bound by the family's grammar."""

from __future__ import annotations

import json

import jsonschema
import pytest

from mlxcel.chat.forced_choice import forced_call_factories, marker_speller, markup_counter
from mlxcel.chat.template import render_chat
from mlxcel.chat.tool_calls import extract_tool_calls, tool_format_of
from mlxcel.chat.tool_choice import place_instruction, plan_tools
from mlxcel.engine.loaded_model import LoadedModel, load_model

from .family_fixtures import FAMILY_DIRS, MODELS, WEATHER
from .test_structured import greedy

FAMILIES = {**{d: fmt for fmt, d in FAMILY_DIRS.items()}, "qwen3-tiny": "hermes"}
ASK = [{"role": "user", "content": "What is the weather in Paris?"}]


@pytest.fixture(scope="module", params=sorted(FAMILIES))
def family(request: pytest.FixtureRequest) -> tuple[str, LoadedModel]:
    return request.param, load_model(str(MODELS / request.param))


def test_format_detected(family: tuple[str, LoadedModel]) -> None:
    name, model = family
    fmt = tool_format_of(model)
    assert fmt is not None and fmt.name == FAMILIES[name]


def test_greedy_tool_call_parses(family: tuple[str, LoadedModel]) -> None:
    _, model = family
    prompt = render_chat(model, ASK, tools=[WEATHER])
    text = greedy(model, prompt.tokens, (), limit=96)
    content, calls = extract_tool_calls(model, text, [WEATHER])
    assert content == ""
    assert [(c.name, json.loads(c.arguments)) for c in calls] == [("get_weather",
                                                                   {"city": "Paris"})]
    assert extract_tool_calls(model, text, None) == (text, [])


def test_forced_choice_grammar(family: tuple[str, LoadedModel]) -> None:
    _, model = family
    fmt = tool_format_of(model)
    assert fmt is not None
    # 60 tokens, or the markup and 30 more where the tags alone take most of that (MiniMax M3
    # on the fixture's 2k vocabulary)
    limit = max(60, markup_counter(model, fmt, marker_speller(model))(WEATHER) + 30)
    factories = forced_call_factories(model, fmt, [WEATHER], limit)
    assert factories  # every format the fixtures cover has a grammar
    plan = plan_tools([WEATHER], "required")
    messages = place_instruction([{"role": "user", "content": "Say hello."}], plan.instruction)
    prompt = render_chat(model, messages, tools=plan.tools)
    text = greedy(model, prompt.tokens, factories, limit=limit)
    _, calls = extract_tool_calls(model, text, [WEATHER])
    # The grammar's bounds (chat/forced_bounds.py) make the call fit the budget.
    assert [c.name for c in calls] == ["get_weather"], repr(text)


RICH = {"type": "function", "function": {"name": "plan_trip", "parameters": {
    "type": "object", "required": ["city"], "properties": {
        "city": {"type": "string"}, "unit": {"type": "string", "enum": ["c", "f"]},
        "days": {"type": "integer", "minimum": 1}, "exact": {"type": "boolean"},
        "budget": {"type": ["number", "null"]}, "tags": {"type": "array",
                                                           "items": {"type": "string"}}}}}}


def test_forced_grammar_over_typed_and_optional_arguments(
        family: tuple[str, LoadedModel]) -> None:
    """Whatever the grammar lets the model write, the format's parser reads back as arguments
    the schema accepts (enums, booleans, nullable numbers, arrays, optional keys)."""
    _, model = family
    fmt = tool_format_of(model)
    assert fmt is not None
    limit = max(96, markup_counter(model, fmt, marker_speller(model))(RICH) + 48)
    factories = forced_call_factories(model, fmt, [RICH], limit)
    plan = plan_tools([RICH], "required")
    messages = place_instruction([{"role": "user", "content": "Plan a trip."}], plan.instruction)
    text = greedy(model, render_chat(model, messages, tools=plan.tools).tokens, factories,
                  limit=limit)
    _, calls = extract_tool_calls(model, text, [RICH])
    assert [c.name for c in calls] == ["plan_trip"], repr(text)
    jsonschema.validate(json.loads(calls[0].arguments), RICH["function"]["parameters"])
