"""Field parity with the real services: every object and event the real OpenAI and Anthropic
APIs send (``fixtures/real-streams/``) has every key they always send, with a compatible type.

Each kind of object has two key sets (``ObjectKind``):

- ``minimum``: what the public specification requires of any server (OpenAI's OpenAPI
  ``required`` lists, the Anthropic API reference, the Open Responses specification), which every
  recording, old or new, also carries. ``field_parity`` holds every server to it.
- ``current``: what the real service sends today in every recording of that kind, and what the
  current specification lists (OpenAI's openapi.yaml, https://github.com/openai/openai-openapi,
  ``required`` lists; the Open Responses specification, ResponseResource,
  https://www.openresponses.org/specification; Anthropic's Message and Usage objects,
  https://docs.anthropic.com/en/api/messages). Where an older
  recording and the current spec differ, other servers may send either shape; the reference and
  any target whose profile claims the current shapes are held to this one
  (``field_parity_current``).

A key's allowed JSON kinds are those the recordings and the specification show (nullable where
the value may be unknown). A key not listed is never judged: extra keys are the server's own.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mlxcel_conformance.checks.errors_checks import BARE_STRING_ERROR
from mlxcel_conformance.checks.registry import check, fail
from mlxcel_conformance.errors import Severity

S, N, OBJ, A, B, Z = "string", "number", "object", "array", "boolean", "null"


@dataclass(frozen=True)
class ObjectKind:
    name: str
    source: str
    types: Mapping[str, tuple[str, ...]]  # key -> allowed JSON kinds (every key of `current`)
    minimum: frozenset[str]

    @property
    def current(self) -> frozenset[str]:
        return frozenset(self.types)


def _kind(name: str, source: str, minimum: Iterable[str], /,
          **types: tuple[str, ...]) -> ObjectKind:
    spec = ObjectKind(name, source, types, frozenset(minimum))
    assert spec.minimum <= spec.current, name
    return spec


# The recordings in this repository, and the public contract each object kind follows.
_REAL = "fixtures/real-streams/"
_OPENAPI = "https://github.com/openai/openai-openapi (openapi.yaml)"
_CHAT = f"{_REAL}openai-chat/json/*.json; {_OPENAPI}: CreateChatCompletionResponse"
_CHUNK = f"{_REAL}openai-chat/stream/*.sse; {_OPENAPI}: CreateChatCompletionStreamResponse"
_RESP = (f"{_REAL}openai-responses/; {_OPENAPI}: Response; Open Responses specification, "
         "ResponseResource (https://www.openresponses.org/specification)")
_ANTH = (f"{_REAL}anthropic/json/*.json, {_REAL}anthropic/stream/*.sse; Anthropic API reference, "
         "Messages (https://docs.anthropic.com/en/api/messages)")
_ERR = (f"{_REAL}errors/*.json; OpenAI API reference, Error codes "
        "(https://platform.openai.com/docs/guides/error-codes); Anthropic API reference, Errors "
        "(https://docs.anthropic.com/en/api/errors)")
_EVENT = {"type": (S,), "sequence_number": (N,)}
_RESPONSE_KEYS = {
    "id": (S,), "object": (S,), "created_at": (N,), "completed_at": (N, Z), "status": (S,),
    "incomplete_details": (OBJ, Z), "model": (S,), "previous_response_id": (S, Z),
    "instructions": (S, A, Z), "output": (A,), "error": (OBJ, Z), "tools": (A,),
    "tool_choice": (S, OBJ), "truncation": (S, Z), "parallel_tool_calls": (B,), "text": (OBJ,),
    "top_p": (N, Z), "presence_penalty": (N, Z), "frequency_penalty": (N, Z),
    "top_logprobs": (N, Z), "temperature": (N, Z), "reasoning": (OBJ, Z), "usage": (OBJ, Z),
    "max_output_tokens": (N, Z), "max_tool_calls": (N, Z), "store": (B,), "background": (B, Z),
    "service_tier": (S, Z), "metadata": (OBJ, Z), "safety_identifier": (S, Z),
    "prompt_cache_key": (S, Z), "user": (S, Z),
}
_RESPONSE_MINIMUM = ("id", "object", "created_at", "error", "incomplete_details", "instructions",
                     "model", "tools", "output", "parallel_tool_calls", "metadata",
                     "tool_choice", "temperature", "top_p")
_USAGE_KEYS = {
    "input_tokens": (N,), "output_tokens": (N,), "cache_creation_input_tokens": (N, Z),
    "cache_read_input_tokens": (N, Z), "cache_creation": (OBJ, Z), "service_tier": (S, Z),
    "inference_geo": (S, Z),
}
_MESSAGE_MINIMUM = ("id", "type", "role", "model", "content", "stop_reason", "stop_sequence",
                    "usage")
_MESSAGE_KEYS = {
    "id": (S,), "type": (S,), "role": (S,), "model": (S,), "content": (A,),
    "stop_reason": (S, Z), "stop_sequence": (S, Z), "usage": (OBJ,),
}

KINDS: dict[str, ObjectKind] = {k.name: k for k in (
    # -- OpenAI Chat Completions
    _kind("chat.completion", _CHAT, ("id", "object", "created", "model", "choices"),
          id=(S,), object=(S,), created=(N,), model=(S,), choices=(A,), usage=(OBJ,),
          service_tier=(S, Z), system_fingerprint=(S, Z)),
    _kind("chat.choice", _CHAT, ("index", "message", "finish_reason", "logprobs"),
          index=(N,), message=(OBJ,), finish_reason=(S,), logprobs=(OBJ, Z)),
    _kind("chat.message", _CHAT, ("role", "content", "refusal"),
          role=(S,), content=(S, Z), refusal=(S, Z), annotations=(A,)),
    _kind("chat.tool_call", _CHAT, ("id", "type", "function"), id=(S,), type=(S,), function=(OBJ,)),
    _kind("chat.usage", _CHAT + "; 2024 streams", ("prompt_tokens", "completion_tokens",
                                                   "total_tokens"),
          prompt_tokens=(N,), completion_tokens=(N,), total_tokens=(N,),
          prompt_tokens_details=(OBJ,), completion_tokens_details=(OBJ,)),
    _kind("chat.chunk", _CHUNK, ("id", "object", "created", "model", "choices"),
          id=(S,), object=(S,), created=(N,), model=(S,), choices=(A,),
          system_fingerprint=(S, Z), service_tier=(S, Z)),
    _kind("chat.chunk.choice", _CHUNK, ("index", "delta", "finish_reason"),
          index=(N,), delta=(OBJ,), finish_reason=(S, Z), logprobs=(OBJ, Z)),
    # -- OpenAI Responses
    _kind("response", _RESP, _RESPONSE_MINIMUM, **_RESPONSE_KEYS),
    _kind("response.usage", _RESP, ("input_tokens", "input_tokens_details", "output_tokens",
                                    "output_tokens_details", "total_tokens"),
          input_tokens=(N,), input_tokens_details=(OBJ,), output_tokens=(N,),
          output_tokens_details=(OBJ,), total_tokens=(N,)),
    _kind("item.message", _RESP, ("id", "type", "role", "status", "content"),
          id=(S,), type=(S,), role=(S,), status=(S,), content=(A,)),
    _kind("item.function_call", _RESP, ("type", "call_id", "name", "arguments"),
          id=(S,), type=(S,), call_id=(S,), name=(S,), arguments=(S,), status=(S,)),
    _kind("item.reasoning", _RESP, ("id", "type", "summary"), id=(S,), type=(S,), summary=(A,)),
    _kind("part.output_text", _RESP, ("type", "text", "annotations"),
          type=(S,), text=(S,), annotations=(A,), logprobs=(A,)),
    _kind("event.response", _RESP, ("type", "response"), **_EVENT, response=(OBJ,)),
    _kind("event.output_item", _RESP, ("type", "output_index", "item"),
          **_EVENT, output_index=(N,), item=(OBJ,)),
    _kind("event.content_part", _RESP, ("type", "item_id", "output_index", "content_index",
                                        "part", "sequence_number"),
          **_EVENT, item_id=(S,), output_index=(N,), content_index=(N,), part=(OBJ,)),
    _kind("event.output_text.delta", _RESP, ("type", "item_id", "output_index", "content_index",
                                             "delta", "logprobs", "sequence_number"),
          **_EVENT, item_id=(S,), output_index=(N,), content_index=(N,), delta=(S,),
          logprobs=(A,)),
    _kind("event.output_text.done", _RESP, ("type", "item_id", "output_index", "content_index",
                                            "text", "logprobs", "sequence_number"),
          **_EVENT, item_id=(S,), output_index=(N,), content_index=(N,), text=(S,),
          logprobs=(A,)),
    _kind("event.function_call_arguments.delta", _RESP, ("type", "item_id", "output_index",
                                                         "delta"),
          **_EVENT, item_id=(S,), output_index=(N,), delta=(S,)),
    _kind("event.function_call_arguments.done", _RESP, ("type", "item_id", "output_index",
                                                        "arguments"),
          **_EVENT, item_id=(S,), output_index=(N,), arguments=(S,)),
    # -- Anthropic Messages
    # A JSON answer carries `stop_details` (null unless a refusal) in the 2026 recordings and
    # the current SDK; the message that `message_start` announces does not.
    _kind("anthropic.message", _ANTH, _MESSAGE_MINIMUM, **_MESSAGE_KEYS,
          stop_details=(OBJ, Z)),
    _kind("anthropic.message_start.message", _ANTH, _MESSAGE_MINIMUM, **_MESSAGE_KEYS),
    _kind("anthropic.usage", _ANTH + "; 2024 message_start usage",
          ("input_tokens", "output_tokens"), **_USAGE_KEYS),
    _kind("anthropic.delta_usage", _ANTH, ("output_tokens",), output_tokens=(N,),
          input_tokens=(N, Z), cache_creation_input_tokens=(N, Z),
          cache_read_input_tokens=(N, Z)),
    # The current Anthropic OpenAPI document lists `citations` (nullable) on a text block; no
    # recording carries it, so it is nobody's requirement here (the reference sends null).
    _kind("block.text", _ANTH, ("type", "text"), type=(S,), text=(S,)),
    # `caller` ({"type": "direct"} when the model called the tool itself) in every 2026
    # recording, JSON and stream, and in the current SDK; the 2024 stream predates it.
    _kind("block.tool_use", _ANTH, ("type", "id", "name", "input"),
          type=(S,), id=(S,), name=(S,), input=(OBJ,), caller=(OBJ,)),
    _kind("block.thinking", _ANTH, ("type", "thinking", "signature"),
          type=(S,), thinking=(S,), signature=(S,)),
    _kind("aevent.message_start", _ANTH, ("type", "message"), type=(S,), message=(OBJ,)),
    _kind("aevent.content_block_start", _ANTH, ("type", "index", "content_block"),
          type=(S,), index=(N,), content_block=(OBJ,)),
    _kind("aevent.content_block_delta", _ANTH, ("type", "index", "delta"),
          type=(S,), index=(N,), delta=(OBJ,)),
    _kind("aevent.content_block_stop", _ANTH, ("type", "index"), type=(S,), index=(N,)),
    _kind("aevent.message_delta", _ANTH, ("type", "delta", "usage"),
          type=(S,), delta=(OBJ,), usage=(OBJ,)),
    _kind("aevent.message_stop", _ANTH, ("type",), type=(S,)),
    _kind("aevent.ping", _ANTH, ("type",), type=(S,)),
    _kind("adelta.message", _ANTH, ("stop_reason", "stop_sequence"),
          stop_reason=(S, Z), stop_sequence=(S, Z)),
    # -- errors
    _kind("error.openai", _ERR, ("error",), error=(OBJ,)),
    _kind("error.openai.error", _ERR, ("message", "type", "param", "code"),
          message=(S,), type=(S,), param=(S, Z), code=(S, Z)),
    _kind("error.anthropic", _ERR, ("type", "error"), type=(S,), error=(OBJ,)),
    _kind("error.anthropic.error", _ERR, ("type", "message"), type=(S,), message=(S,)),
)}


def json_kind(value: Any) -> str:
    if value is None:
        return Z
    if isinstance(value, bool):
        return B
    if isinstance(value, (int, float)):
        return N
    kinds: dict[type, str] = {str: S, dict: OBJ, list: A}
    return kinds.get(type(value), type(value).__name__)


@dataclass(frozen=True)
class Gap:
    """What one object lacks: the keys missing from a shape, and keys of the wrong kind."""

    kind: str
    path: str
    missing: tuple[str, ...]
    wrong: tuple[str, ...]


def gaps(kind_name: str, obj: Any, path: str, current: bool) -> list[Gap]:
    kind = KINDS[kind_name]
    if not isinstance(obj, dict):
        return [Gap(kind_name, path, (), (f"{path} is {json_kind(obj)}, not an object",))]
    wanted = kind.current if current else kind.minimum
    missing = tuple(sorted(k for k in wanted if k not in obj))
    wrong = tuple(f"{k}: {json_kind(obj[k])} (expected {'/'.join(kind.types[k])})"
                  for k in sorted(kind.types)
                  if k in obj and json_kind(obj[k]) not in kind.types[k])
    return [Gap(kind_name, path, missing, wrong)] if missing or wrong else []


# -- walking whole answers -------------------------------------------------------------------

Found = list[tuple[str, Any, str]]  # (kind, object, path)


def chat_completion_objects(body: Any) -> Found:
    found: Found = [("chat.completion", body, "$")]
    if not isinstance(body, dict):
        return found
    if isinstance(body.get("usage"), dict):
        found.append(("chat.usage", body["usage"], "$.usage"))
    for i, choice in enumerate(body.get("choices") or []):
        found.append(("chat.choice", choice, f"$.choices[{i}]"))
        message = choice.get("message") if isinstance(choice, dict) else None
        if message is not None:
            found.append(("chat.message", message, f"$.choices[{i}].message"))
        for j, call in enumerate((message or {}).get("tool_calls") or []):
            found.append(("chat.tool_call", call, f"$.choices[{i}].message.tool_calls[{j}]"))
    return found


def chat_chunk_objects(chunks: Sequence[Any]) -> Found:
    found: Found = []
    for n, chunk in enumerate(chunks):
        found.append(("chat.chunk", chunk, f"chunk {n}"))
        if not isinstance(chunk, dict):
            continue
        if isinstance(chunk.get("usage"), dict):
            found.append(("chat.usage", chunk["usage"], f"chunk {n}.usage"))
        for i, choice in enumerate(chunk.get("choices") or []):
            found.append(("chat.chunk.choice", choice, f"chunk {n}.choices[{i}]"))
    return found


def _response_parts(response: Any, path: str) -> Found:
    found: Found = [("response", response, path)]
    if not isinstance(response, dict):
        return found
    if isinstance(response.get("usage"), dict):
        found.append(("response.usage", response["usage"], f"{path}.usage"))
    for i, item in enumerate(response.get("output") or []):
        found += _item(item, f"{path}.output[{i}]")
    return found


def _item(item: Any, path: str) -> Found:
    kind = f"item.{item.get('type')}" if isinstance(item, dict) else ""
    found: Found = [(kind, item, path)] if kind in KINDS else []
    for j, part in enumerate((item.get("content") or []) if kind == "item.message" else []):
        if isinstance(part, dict) and part.get("type") == "output_text":
            found.append(("part.output_text", part, f"{path}.content[{j}]"))
    return found


def response_objects(body: Any) -> Found:
    return _response_parts(body, "$")


_RESPONSE_EVENTS = {
    "response.created": "event.response", "response.in_progress": "event.response",
    "response.completed": "event.response", "response.incomplete": "event.response",
    "response.failed": "event.response",
    "response.output_item.added": "event.output_item",
    "response.output_item.done": "event.output_item",
    "response.content_part.added": "event.content_part",
    "response.content_part.done": "event.content_part",
    "response.output_text.delta": "event.output_text.delta",
    "response.output_text.done": "event.output_text.done",
    "response.function_call_arguments.delta": "event.function_call_arguments.delta",
    "response.function_call_arguments.done": "event.function_call_arguments.done",
}


def responses_event_objects(events: Sequence[Any]) -> Found:
    found: Found = []
    for n, event in enumerate(events):
        name = event.get("type") if isinstance(event, dict) else None
        kind = _RESPONSE_EVENTS.get(str(name))
        if kind is None:
            continue  # an event kind no recording shows is judged by the event-order checks
        found.append((kind, event, f"event {n} ({name})"))
        if kind == "event.response":
            found += _response_parts(event.get("response"), f"event {n}.response")
        elif kind == "event.output_item":
            found += _item(event.get("item"), f"event {n}.item")
        elif kind == "event.content_part" and (event.get("part") or {}).get("type") == \
                "output_text":
            found.append(("part.output_text", event["part"], f"event {n}.part"))
    return found


def _block(block: Any, path: str) -> Found:
    kind = f"block.{block.get('type')}" if isinstance(block, dict) else ""
    return [(kind, block, path)] if kind in KINDS else []


def anthropic_message_objects(body: Any, path: str = "$",
                              kind: str = "anthropic.message") -> Found:
    found: Found = [(kind, body, path)]
    if not isinstance(body, dict):
        return found
    if isinstance(body.get("usage"), dict):
        found.append(("anthropic.usage", body["usage"], f"{path}.usage"))
    for i, block in enumerate(body.get("content") or []):
        found += _block(block, f"{path}.content[{i}]")
    return found


def anthropic_event_objects(events: Sequence[Any]) -> Found:
    found: Found = []
    for n, event in enumerate(events):
        name = event.get("type") if isinstance(event, dict) else None
        kind = f"aevent.{name}"
        if kind not in KINDS:
            continue  # error events are judged by error_body_anthropic
        found.append((kind, event, f"event {n} ({name})"))
        if name == "message_start":
            found += [(k, o, p) for k, o, p in anthropic_message_objects(
                event.get("message"), f"event {n}.message", "anthropic.message_start.message")
                if k != "block.text"]
        elif name == "content_block_start":
            # a streamed block starts empty: its text arrives in deltas, its keys are the same
            found += _block(event.get("content_block"), f"event {n}.content_block")
        elif name == "message_delta":
            found.append(("adelta.message", event.get("delta"), f"event {n}.delta"))
            found.append(("anthropic.delta_usage", event.get("usage"), f"event {n}.usage"))
    return found


def openai_error_objects(body: Any) -> Found:
    found: Found = [("error.openai", body, "$")]
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        found.append(("error.openai.error", body["error"], "$.error"))
    return found


def anthropic_error_objects(body: Any) -> Found:
    found: Found = [("error.anthropic", body, "$")]
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        found.append(("error.anthropic.error", body["error"], "$.error"))
    return found


# -- the checks --------------------------------------------------------------------------------

def find_gaps(found: Found, current: bool) -> list[Gap]:
    return [gap for kind, obj, path in found for gap in gaps(kind, obj, path, current)]


def _report(name: str, what: str, found: Found, current: bool) -> None:
    problems = find_gaps(found, current)
    if not problems:
        return
    first = problems[0]
    detail = (f"{first.path} ({first.kind}) lacks {', '.join(first.missing)}" if first.missing
              else f"{first.path} ({first.kind}): {first.wrong[0]}")
    sources = sorted({KINDS[p.kind].source for p in problems})
    # an `error` that is a bare string is the error check's finding too: one defect
    bare = first.kind.startswith("error.") and tuple(first.wrong[:1]) == (
        "error: string (expected object)",)
    fail(name, f"{what}: {detail}", source="; ".join(sources),
         defect=BARE_STRING_ERROR if bare else None,
         gaps=[{"kind": p.kind, "path": p.path, "missing": list(p.missing),
                "wrong": list(p.wrong)} for p in problems[:12]])


@check("field_parity", severity=Severity.MEDIUM,
       description="every object has the keys the public spec and every real recording carry")
def check_field_parity(what: str, found: Found) -> None:
    _report("field_parity", what, found, current=False)


@check("field_parity_current", severity=Severity.MEDIUM,
       description="every object has every key the real service sends today (current spec)")
def check_field_parity_current(what: str, found: Found) -> None:
    check_field_parity(what, found)
    _report("field_parity_current", what, found, current=True)
