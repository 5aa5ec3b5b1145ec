"""The hostile campaign's stream readers (benchmarks/hostile_campaign.py): which streams end
with their family's final event, and the text a stream carried."""

from __future__ import annotations

import json

from benchmarks.hostile_campaign import _final_event, _text_of


def _chunk(**fields: object) -> str:
    return json.dumps(fields)


def test_openai_streams_end_with_a_finish_reason_then_done() -> None:
    path = "/v1/chat/completions"
    ended = [_chunk(choices=[{"delta": {"content": "a"}, "finish_reason": None}]),
             _chunk(choices=[{"delta": {}, "finish_reason": "length"}]), "[DONE]"]
    assert _final_event(path, ended)
    assert not _final_event(path, ended[:-1])  # no [DONE]
    assert not _final_event(path, [ended[0], "[DONE]"])  # no finish_reason
    assert _text_of(path, ended) == "a"


def test_typed_and_native_streams() -> None:
    assert _final_event("/v1/responses", [_chunk(type="response.incomplete")])
    assert not _final_event("/v1/responses", [_chunk(type="response.output_text.delta")])
    assert _final_event("/v1/messages", [_chunk(type="message_stop")])
    assert not _final_event("/v1/messages", [_chunk(type="content_block_stop")])
    assert _final_event("/completion", [_chunk(content="x", stop=False),
                                        _chunk(content="", stop=True)])
    assert not _final_event("/completion", [_chunk(content="x", stop=False)])
    assert _text_of("/completion", [_chunk(content="x", stop=False),
                                    _chunk(content="y", stop=False)]) == "xy"
