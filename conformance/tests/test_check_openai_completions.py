"""Tests for checks/openai_completions.py. No real recording of /v1/completions is vendored, so
the inputs follow OpenAI's documented shapes."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from real_stream_corpus import rejects

from mlxcel_conformance.checks.openai_common import check_usage_chunk_last
from mlxcel_conformance.checks.openai_completions import (
    check_completion_body,
    check_completion_chunk_order,
)
from mlxcel_conformance.errors import ConformanceFailure

IDENTITY = {"id": "cmpl-1", "object": "text_completion", "created": 1700000000, "model": "m"}
BODY: dict[str, Any] = {
    **IDENTITY,
    "choices": [
        {
            "index": 0,
            "text": " world",
            "finish_reason": "length",
            "logprobs": {
                "tokens": [" world"],
                "token_logprobs": [-0.1],
                "top_logprobs": [{" world": -0.1}],
                "text_offset": [5],
            },
        }
    ],
    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
}


def _chunk(index: int, text: str, finish: str | None = None) -> dict[str, Any]:
    choice = {"index": index, "text": text, "logprobs": None, "finish_reason": finish}
    return {**IDENTITY, "choices": [choice]}


STREAM: list[dict[str, Any]] = [
    _chunk(0, "Hel"),
    _chunk(1, "Bon"),
    _chunk(0, "lo", "stop"),
    _chunk(1, "jour", "length"),
    {
        **IDENTITY,
        "choices": [],
        "usage": {"prompt_tokens": 2, "completion_tokens": 4, "total_tokens": 6},
    },
]


def test_body_accepted() -> None:
    assert check_completion_body(copy.deepcopy(BODY))["object"] == "text_completion"


def test_stream_accepted() -> None:
    assert check_completion_chunk_order(STREAM) == {0: "stop", 1: "length"}
    assert check_usage_chunk_last(STREAM)["total_tokens"] == 6


def test_a_stream_across_a_second_may_change_created_not_id() -> None:
    later = [{**chunk, "created": chunk["created"] + n} for n, chunk in enumerate(STREAM)]
    assert check_completion_chunk_order(later) == {0: "stop", 1: "length"}
    renamed = [{**chunk, "id": f"cmpl-{n}"} for n, chunk in enumerate(STREAM)]
    with pytest.raises(ConformanceFailure, match=r"changes \['id'\]"):
        check_completion_chunk_order(renamed)


BODY_MUTATIONS = {
    "object": lambda b: b.update(object="chat.completion"),
    "text": lambda b: b["choices"][0].update(text=None),
    "message": lambda b: (
        b["choices"][0].update(message={"role": "assistant"}) or b["choices"][0].pop("text")
    ),
    "finish": lambda b: b["choices"][0].update(finish_reason="tool_calls"),
    "no-logprobs-key": lambda b: b["choices"][0].pop("logprobs"),
    "logprobs-lengths": lambda b: b["choices"][0]["logprobs"]["tokens"].append("x"),
    "usage": lambda b: b["usage"].update(prompt_tokens=-1),
}


@pytest.mark.parametrize("mutation", BODY_MUTATIONS.values(), ids=BODY_MUTATIONS.keys())
def test_broken_body_rejected(mutation: Any) -> None:
    broken = copy.deepcopy(BODY)
    mutation(broken)
    with rejects("completion_body"):
        check_completion_body(broken)


STREAM_MUTATIONS = {
    "object": lambda s: s[0].update(object="chat.completion.chunk"),
    "id": lambda s: s[1].update(id="cmpl-2"),
    "after-finish": lambda s: s.insert(3, _chunk(0, "!")),
    "duplicate-finish": lambda s: s.insert(3, _chunk(0, "", "stop")),
    "unfinished": lambda s: s.pop(3),
    "bad-finish": lambda s: s[2]["choices"][0].update(finish_reason="eos"),
    "no-text": lambda s: s[0]["choices"][0].pop("text"),
    "index-gap": lambda s: [
        c["choices"][0].update(index=2) for c in s[:4] if c["choices"][0]["index"] == 1
    ],
}


@pytest.mark.parametrize("mutation", STREAM_MUTATIONS.values(), ids=STREAM_MUTATIONS.keys())
def test_broken_stream_rejected(mutation: Any) -> None:
    broken = copy.deepcopy(STREAM)
    mutation(broken)
    with rejects("completion_chunk_order"):
        check_completion_chunk_order(broken)


def test_empty_stream_rejected() -> None:
    with rejects("completion_chunk_order"):
        check_completion_chunk_order([])
