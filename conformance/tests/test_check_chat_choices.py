"""chat_choices: the real n=3 stream passes; a body or stream short of a choice, with a repeated
index or a choice that never finishes, fails."""

from __future__ import annotations

import json
from typing import Any

import pytest
import real_stream_corpus as corpus

from mlxcel_conformance.checks import chat_choices as cc
from mlxcel_conformance.errors import ConformanceFailure
from mlxcel_conformance.sse import parse_sse

N3 = corpus.files("openai-chat/stream/openai-chat-stream-n3-choices-2024.sse")[0]


def _chunks() -> list[dict[str, Any]]:
    events = parse_sse(N3.read_text(encoding="utf-8")).events
    return [json.loads(e.data) for e in events if e.data != "[DONE]"]


def _body(*indexes: int) -> dict[str, Any]:
    return {"choices": [{"index": i, "message": {"role": "assistant", "content": "x"},
                         "finish_reason": "stop"} for i in indexes]}


def test_the_real_n3_stream_passes() -> None:
    cc.check_chat_chunk_choices(_chunks(), 3)
    with pytest.raises(ConformanceFailure):
        cc.check_chat_chunk_choices(_chunks(), 4)


def test_a_stream_choice_that_never_finishes_fails() -> None:
    chunks = [c for c in _chunks() if not any(
        ch.get("index") == 2 and ch.get("finish_reason") for ch in c.get("choices") or [])]
    with pytest.raises(ConformanceFailure, match="finish exactly once"):
        cc.check_chat_chunk_choices(chunks, 3)


@pytest.mark.parametrize("indexes", [(0, 1), (0, 0, 1), (1, 2, 3)])
def test_bodies_short_or_misindexed_fail(indexes: tuple[int, ...]) -> None:
    cc.check_chat_choices(_body(0, 1, 2), 3)
    with pytest.raises(ConformanceFailure) as info:
        cc.check_chat_choices(_body(*indexes), 3)
    assert info.value.check == "chat_choices"
