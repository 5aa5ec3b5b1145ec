"""``chat/tool_formats/grammar.py``: a forced call's grammar accepts a call with every argument
(optional ones included, each type in the format's own spelling) and one with only the required
argument, rejects an undeclared key and an unbounded number, and the format's parser reads the
accepted text back to the same arguments."""

from __future__ import annotations

import json
from typing import Any

import pytest
from llguidance import LLMatcher

from mlxcel.chat.forced_bounds import bounded_tools
from mlxcel.chat.forced_choice import marker_speller
from mlxcel.chat.tool_calls import extract_tool_calls, tool_format_of
from mlxcel.engine.loaded_model import LoadedModel, load_model
from mlxcel.structured.grammar import lark_grammar, ll_tokenizer

from .family_fixtures import MODELS
from .test_family_fixtures import RICH

NS = "]<]minimax[>["  # MiniMax M3's namespace token
FULL = {"city": "Paris", "unit": "c", "days": 3, "exact": True, "budget": None, "tags": ["a"]}
# fixture -> (a call with every argument, a call with the required one only), as each format
# writes them
CALLS: dict[str, tuple[str, str]] = {
    "lfm2-tiny": (
        '<|tool_call_start|>[plan_trip(city="Paris", unit="c", days=3, exact=True, '
        'budget=None, tags=["a"])]<|tool_call_end|>',
        '<|tool_call_start|>[plan_trip(city="Paris")]<|tool_call_end|>'),
    "gemma4-tiny": (
        '<|tool_call>call:plan_trip{city:<|"|>Paris<|"|>,unit:<|"|>c<|"|>,days:3,exact:true,'
        'budget:null,tags:["a"]}<tool_call|>',
        '<|tool_call>call:plan_trip{city:<|"|>Paris<|"|>}<tool_call|>'),
    "qwen3-coder-tiny": (
        "<tool_call>\n<function=plan_trip>\n" + "".join(
            f"<parameter={k}>\n{v}\n</parameter>\n" for k, v in (
                ("city", "Paris"), ("unit", "c"), ("days", "3"), ("exact", "true"),
                ("budget", "null"), ("tags", '["a"]'))) + "</function>\n</tool_call>",
        "<tool_call>\n<function=plan_trip>\n<parameter=city>\nParis\n</parameter>\n"
        "</function>\n</tool_call>"),
    "minimax-m2-tiny": (
        '<minimax:tool_call>\n<invoke name="plan_trip">\n' + "".join(
            f'<parameter name="{k}">{v}</parameter>\n' for k, v in (
                ("city", "Paris"), ("unit", "c"), ("days", "3"), ("exact", "true"),
                ("budget", "null"), ("tags", '["a"]'))) + "</invoke>\n</minimax:tool_call>",
        '<minimax:tool_call>\n<invoke name="plan_trip">\n<parameter name="city">Paris'
        "</parameter>\n</invoke>\n</minimax:tool_call>"),
    "minimax-m3-tiny": (
        f'{NS}<tool_call>\n{NS}<invoke name="plan_trip">' + "".join(
            f"{NS}<{k}>{v}{NS}</{k}>" for k, v in (
                ("city", "Paris"), ("unit", "c"), ("days", "3"), ("exact", "true"),
                ("budget", "null"), ("tags", '["a"]'))) + f"{NS}</invoke>\n{NS}</tool_call>",
        f'{NS}<tool_call>\n{NS}<invoke name="plan_trip">{NS}<city>Paris{NS}</city>'
        f"{NS}</invoke>\n{NS}</tool_call>"),
    "qwen3-tiny": (
        "<tool_call>\n" + json.dumps({"name": "plan_trip", "arguments": FULL}) + "\n</tool_call>",
        '<tool_call>\n{"name": "plan_trip", "arguments": {"city": "Paris"}}\n</tool_call>'),
    "mistral-v11-tiny": (
        "[TOOL_CALLS]plan_trip[ARGS]" + json.dumps(FULL),
        '[TOOL_CALLS]plan_trip[ARGS]{"city": "Paris"}'),
}


@pytest.fixture(scope="module", params=sorted(CALLS))
def family(request: pytest.FixtureRequest) -> tuple[str, LoadedModel]:
    return request.param, load_model(str(MODELS / request.param))


def _grammar(model: LoadedModel) -> str:
    fmt = tool_format_of(model)
    assert fmt is not None
    lark = fmt.call_grammar(bounded_tools([RICH], 512), marker_speller(model))
    assert lark is not None
    return lark_grammar(lark)


def _accepts(model: LoadedModel, grammar: str, text: str) -> bool:
    tokenizer = ll_tokenizer(model)
    matcher = LLMatcher(tokenizer, grammar, log_level=0)
    for token in model.encode(text):
        if not matcher.consume_token(token):
            return False
    return matcher.is_accepting() and not matcher.is_error()


def _parsed(model: LoadedModel, text: str) -> Any:
    _, calls = extract_tool_calls(model, text, [RICH])
    assert [c.name for c in calls] == ["plan_trip"]
    return json.loads(calls[0].arguments)


def test_every_argument_in_the_formats_spelling(family: tuple[str, LoadedModel]) -> None:
    name, model = family
    full, minimal = CALLS[name]
    grammar = _grammar(model)
    assert _accepts(model, grammar, full), full
    assert _parsed(model, full) == FULL
    assert _accepts(model, grammar, minimal), minimal
    assert _parsed(model, minimal) == {"city": "Paris"}


def test_undeclared_keys_and_endless_numbers_are_refused(family: tuple[str, LoadedModel]) -> None:
    name, model = family
    full, _ = CALLS[name]
    grammar = _grammar(model)
    assert not _accepts(model, grammar, full.replace("days", "nights"))
    endless = full.replace("3", "3" * 40, 1)
    assert endless != full and not _accepts(model, grammar, endless)
