"""Every tool-call family fixture (and qwen3-tiny, Hermes) in process: the format is detected
from the template, greedy decoding emits a real call in the family's wire format, the parser
turns it into the declared call, and on JSON-wire formats a forced choice is bound by the
family's grammar."""

from __future__ import annotations

import json

import pytest

from mlxcel.chat.forced_choice import forced_call_factories
from mlxcel.chat.template import render_chat
from mlxcel.chat.tool_calls import extract_tool_calls, tool_format_of
from mlxcel.chat.tool_choice import place_instruction, plan_tools
from mlxcel.engine.model import LoadedModel, load_model

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
    factories = forced_call_factories(model, fmt, [WEATHER], 60)
    if not fmt.json_wire:
        assert factories == ()  # instruction only: no grammar for this wire shape
        return
    assert factories
    plan = plan_tools([WEATHER], "required")
    messages = place_instruction([{"role": "user", "content": "Say hello."}], plan.instruction)
    prompt = render_chat(model, messages, tools=plan.tools)
    text = greedy(model, prompt.tokens, factories, limit=60)
    _, calls = extract_tool_calls(model, text, [WEATHER])
    # The grammar's bounds (chat/forced_bounds.py) make the call fit the 60-token budget.
    assert [c.name for c in calls] == ["get_weather"], repr(text)
