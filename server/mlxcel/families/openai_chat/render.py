"""Rendering a chat generation: the ``chat.completion`` body and the chunk stream.

``ChatChunkEncoder`` is the stream's state machine::

    role chunk ─► (content | reasoning_content | tool_calls deltas)* ─► finish chunk ─► usage?

The finish chunk is sent exactly once; the usage chunk (``choices: []``) only when asked; the
adapter adds ``data: [DONE]``. With logprobs, every token yields a chunk: a token whose text was
suppressed (a delimiter) gets a placeholder with ``content: ""`` and its logprobs.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from ...chat.tool_calls import ParsedToolCall
from ...generation import Finished, PromptProgress
from ...generation.pieces import (
    CallArguments,
    CallEnd,
    CallStart,
    ContentPiece,
    Piece,
    ReasoningPiece,
)
from ...protocol.choices import summed_finish
from ...protocol.logprobs import render_logprobs
from .chat_request import usage_of

# What OpenAI's API reports for a request served on the standard tier: the only one here.
SERVICE_TIER = "default"


def chat_finish_reason(finished: Finished, has_calls: bool) -> str:
    if finished.reason == "length":
        return "length"
    return "tool_calls" if has_calls else "stop"


def is_reasoning_only(finished: Finished, content: str, reasoning: str | None,
                      has_calls: bool) -> bool:
    """Tokens were generated, all of them stayed in the reasoning channel."""
    return (finished.completion_tokens > 0 and not content and not has_calls
            and reasoning is not None)


def tool_call_json(call: ParsedToolCall) -> dict[str, Any]:
    return {"id": call.id, "type": "function",
            "function": {"name": call.name, "arguments": call.arguments}}


@dataclass
class ChatOutput:
    """A finished generation, split."""

    content: str
    reasoning: str | None
    calls: list[ParsedToolCall]
    finished: Finished
    logprobs: list[dict[str, Any]] | None = field(default=None)
    reasoning_tokens: int = 0


def _choice(index: int, output: ChatOutput) -> dict[str, Any]:
    calls = output.calls
    message: dict[str, Any] = {
        "role": "assistant",
        "content": output.content if (output.content or not calls) else None,
        "refusal": None,
        "annotations": [],
    }
    if calls:
        message["tool_calls"] = [tool_call_json(c) for c in calls]
    if output.reasoning is not None:
        message["reasoning_content"] = output.reasoning
    if is_reasoning_only(output.finished, output.content, output.reasoning, bool(calls)):
        message["reasoning_only"] = True
    logprobs = output.logprobs
    return {
        "index": index,
        "message": message,
        "finish_reason": chat_finish_reason(output.finished, bool(calls)),
        "logprobs": None if logprobs is None else {"content": logprobs, "refusal": None},
    }


def choices_usage(finished: list[Finished], reasoning_tokens: list[int]) -> dict[str, Any]:
    """The usage of all choices: the prompt once, every choice's completion tokens."""
    return usage_of(summed_finish(finished), sum(reasoning_tokens))


def completion_body(
    request_id: str, model_name: str, fingerprint: str, outputs: list[ChatOutput]
) -> dict[str, Any]:
    """The ``chat.completion`` of one or more choices (``n``), in index order."""
    return {
        "id": request_id,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model_name,
        "service_tier": SERVICE_TIER,
        "system_fingerprint": fingerprint,
        "choices": [_choice(i, output) for i, output in enumerate(outputs)],
        "usage": choices_usage([o.finished for o in outputs],
                               [o.reasoning_tokens for o in outputs]),
    }


def piece_delta(piece: Piece) -> dict[str, Any]:
    if isinstance(piece, ContentPiece):
        return {"content": piece.text}
    if isinstance(piece, ReasoningPiece):
        return {"reasoning_content": piece.text}
    if isinstance(piece, CallStart):
        call = {"index": piece.index, "id": piece.id, "type": "function",
                "function": {"name": piece.name, "arguments": ""}}
        return {"tool_calls": [call]}
    assert isinstance(piece, CallArguments)
    return {"tool_calls": [{"index": piece.index, "function": {"arguments": piece.fragment}}]}


class ChatChunkEncoder:
    """Builds the chunks of one streamed chat completion, in order."""

    def __init__(self, request_id: str, model_name: str, fingerprint: str,
                 index: int = 0, created: int | None = None) -> None:
        self.index = index  # the choice this encoder streams (``n`` > 1: one encoder each)
        # One stream, one timestamp: OpenAI's chunk `created` is the same on every chunk, so
        # the encoders of one stream (a choice each, the usage chunk) share the caller's.
        self._base = {
            "id": request_id,
            "object": "chat.completion.chunk",
            "created": int(time.time()) if created is None else created,
            "model": model_name,
            "service_tier": SERVICE_TIER,
            "system_fingerprint": fingerprint,
        }
        self._content_sent = False
        self._reasoning_sent = False
        self._calls_sent = False

    def _chunk(self, delta: dict[str, Any], finish: str | None, logprobs: Any = None) -> dict:
        choice = {"index": self.index, "delta": delta, "finish_reason": finish,
                  "logprobs": logprobs}
        return {**self._base, "choices": [choice]}

    def role(self) -> dict[str, Any]:
        return self._chunk({"role": "assistant"}, None)

    def progress(self, progress: PromptProgress, elapsed_ms: float) -> dict[str, Any]:
        """llama-server's ``return_progress`` chunk: an empty assistant delta carrying
        ``prompt_progress`` (``total``, ``cache``, ``processed``, ``time_ms``)."""
        return {**self._chunk({"role": "assistant", "content": None}, None),
                "prompt_progress": {"total": progress.total, "cache": progress.cached,
                                    "processed": progress.processed, "time_ms": elapsed_ms}}

    def pieces(self, pieces: list[Piece], logprobs: Any = None) -> list[dict[str, Any]]:
        """Chunks for the pieces of one engine event; its logprobs ride on the first chunk,
        or on a ``content: ""`` placeholder when the event's text was all suppressed."""
        chunks = []
        for piece in pieces:
            if isinstance(piece, CallEnd) or piece == ReasoningPiece(""):
                continue  # a chat stream has no event for these
            self._content_sent |= isinstance(piece, ContentPiece)
            self._reasoning_sent |= isinstance(piece, ReasoningPiece)
            self._calls_sent |= isinstance(piece, CallStart)
            chunks.append(self._chunk(piece_delta(piece), None, logprobs))
            logprobs = None
        if logprobs is not None:
            chunks.append(self._chunk({"content": ""}, None, logprobs))
        return chunks

    def finish(self, finished: Finished, has_calls: bool) -> dict[str, Any]:
        """``has_calls``: the final parse found calls (a call cut by the token limit counts:
        its partial arguments are in the body too, and the reason is then ``length``)."""
        delta: dict[str, Any] = {}
        if (finished.completion_tokens > 0 and self._reasoning_sent and not self._content_sent
                and not self._calls_sent):
            delta["reasoning_only"] = True
        return self._chunk(delta, chat_finish_reason(finished, has_calls))

    def usage(self, finished: list[Finished], reasoning_tokens: list[int]) -> dict[str, Any]:
        """The closing chunk (``choices: []``) with the usage of every choice."""
        return {**self._base, "choices": [], "usage": choices_usage(finished, reasoning_tokens)}


def stream_logprobs(items: tuple[Any, ...], wanted: bool) -> dict[str, Any] | None:
    return render_logprobs(items) if wanted and items else None
