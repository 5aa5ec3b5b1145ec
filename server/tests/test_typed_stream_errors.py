"""A generation that fails mid-stream: the Responses stream ends with `error` then
`response.failed`, the Anthropic stream with `event: error`; both pass the suite's machines.
The engine handle is driven by hand (the failure cannot be provoked through the model)."""

from __future__ import annotations

import asyncio
from typing import Any

from mlxcel.chat.output import OutputSetup
from mlxcel.engine.handle import RequestHandle
from mlxcel.families.anthropic.messages_wire import message_shell
from mlxcel.families.anthropic.stream import stream_message
from mlxcel.families.anthropic.turn import MessagesTurn
from mlxcel.families.responses.responses_wire import ResponsesRequest, response_body
from mlxcel.families.responses.store_service import make_stores
from mlxcel.families.responses.stream import stream_response
from mlxcel.families.responses.turn import PreparedTurn
from mlxcel.generation import Finished, GenerationRequest, TokenDelta
from mlxcel_conformance.checks.anthropic_events import check_anthropic_stream
from mlxcel_conformance.checks.responses_events import check_responses_stream
from mlxcel_conformance.sse import parse_sse

PLAIN = OutputSetup(None, None, None, False)  # no tools, no reasoning markers


async def _drain(make: Any) -> str:
    handle = RequestHandle(GenerationRequest(prompt_tokens=(1,), max_tokens=4),
                           asyncio.get_running_loop())
    handle.emit(TokenDelta("Hel"))
    handle.emit(Finished("error", 1, 1, error="RuntimeError"))
    return "".join([chunk async for chunk in make(handle)])


def test_responses_stream_fails_cleanly() -> None:
    body = ResponsesRequest.model_validate({"input": "hi"})
    turn = PreparedTurn(body, [], None, [1], PLAIN)
    skeleton = response_body("resp_1", body, "m")
    stores = make_stores(4, 60, 4, 60)
    text = asyncio.run(_drain(
        lambda handle: stream_response(handle, turn, skeleton, stores)))
    stream = check_responses_stream(parse_sse(text).events)
    assert [p["type"] for p in stream.payloads][-2:] == ["error", "response.failed"]
    assert stream.payloads[-1]["response"]["error"]["code"] == "server_error"
    assert stores.responses.get("resp_1") is None  # a failed response is not kept


def test_anthropic_stream_fails_with_an_error_event() -> None:
    shell = message_shell("msg_1", "m", 1)
    turn = MessagesTurn(GenerationRequest(prompt_tokens=(1,), max_tokens=4), PLAIN, False)
    text = asyncio.run(_drain(lambda handle: stream_message(handle, shell, turn)))
    stream = check_anthropic_stream(parse_sse(text).events)
    assert stream.terminal == "error"
    assert stream.payloads[-1]["error"]["type"] == "api_error"
