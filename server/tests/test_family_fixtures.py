"""The Llama 3 and Mistral fixtures end to end in process: the format is detected from the
template, greedy decoding emits a real call in the family's wire format, the parser turns it
into the declared call, and a forced choice is bound by the family's grammar."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mlxcel.chat.forced_choice import forced_call_factories
from mlxcel.chat.template import render_chat
from mlxcel.chat.tool_calls import extract_tool_calls, tool_format_of
from mlxcel.chat.tool_choice import place_instruction, plan_tools
from mlxcel.engine.model import LoadedModel, load_model

from .test_structured import greedy

SCRIPTED = json.loads((Path(__file__).resolve().parents[2] / "fixtures" / "scripted.json")
                      .read_text(encoding="utf-8"))
# The tool exactly as the fixtures were trained on it.
WEATHER = next(c for c in SCRIPTED if c["name"] == "tool_call")["tools"][0]

MODELS = Path(__file__).resolve().parents[2] / "fixtures" / "models"
FAMILIES = {"llama3-tiny": "llama3", "mistral-tiny": "mistral_nemo", "qwen3-tiny": "hermes"}
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
    text = greedy(model, prompt.tokens, ())
    content, calls = extract_tool_calls(model, text, [WEATHER])
    assert content == ""
    assert [(c.name, json.loads(c.arguments)) for c in calls] == [("get_weather",
                                                                   {"city": "Paris"})]
    assert extract_tool_calls(model, text, None) == (text, [])


def test_forced_choice_grammar(family: tuple[str, LoadedModel]) -> None:
    _, model = family
    factories = forced_call_factories(model, tool_format_of(model), [WEATHER], 64)
    assert factories
    plan = plan_tools([WEATHER], "required")
    messages = place_instruction([{"role": "user", "content": "Say hello."}], plan.instruction)
    prompt = render_chat(model, messages, tools=plan.tools)
    text = greedy(model, prompt.tokens, factories, limit=60)
    _, calls = extract_tool_calls(model, text, [WEATHER])
    if not calls:
        # A weak model can wander inside a free string until the limit: the grammar still
        # held every token to a valid prefix of one call (checked here on its opening).
        fmt = tool_format_of(model)
        assert fmt is not None and text.startswith(fmt.start), repr(text)
        assert len(model.encode(text)) >= 55, repr(text)
        return
    assert [c.name for c in calls] == ["get_weather"], repr(text)
