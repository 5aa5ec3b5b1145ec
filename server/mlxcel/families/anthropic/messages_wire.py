"""Anthropic Messages API: request model, content-block mapping to chat-template messages,
tools and ``tool_choice``, and the message body.

Mapping: ``system`` (string or text blocks) → a system message; user ``text`` blocks → user
content, ``tool_result`` blocks → tool messages (before the user's text, as they answer the
previous turn); assistant ``text`` → content, ``tool_use`` → tool calls, ``thinking`` → the
turn's reasoning. ``image`` blocks (base64 or url source, also inside ``tool_result``) become
neutral image parts (chat/multimodal.py): pixels on a vision model, a 400 naming the
limitation on a text-only one.
Server tools (a ``type`` of their own, no ``input_schema``) are dropped; a client tool needs
its ``input_schema``.
"""

from __future__ import annotations

import json
import re
import uuid
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ... import limits
from ...chat.continuation import prefilled_field
from ...chat.turn import TurnRequest
from ...config import GenerationDefaults
from ...errors import InvalidRequestError
from ...generation import Finished, SamplingParams
from ...protocol.sampling_fields import OpenAISamplingFields
from ...protocol.types import Int, Omittable
from .foreign_fields import foreign_fields, refuse_foreign


class AnthropicMessage(BaseModel):
    model_config = ConfigDict(strict=True, extra="allow")
    role: Literal["user", "assistant"]
    content: str | list[dict[str, Any]]

    @field_validator("content")
    @classmethod
    def _blocks(cls, value: str | list[dict[str, Any]]) -> str | list[dict[str, Any]]:
        # Anthropic refuses an empty block list (an empty prefill is the empty string).
        if isinstance(value, list) and not value:
            raise ValueError("content must be a string or a non-empty array of content blocks")
        return value


THINKING_TYPES = ("enabled", "disabled", "adaptive")
# Anthropic's tool-name rule (its tool-use guide, "Specifying client tools").
TOOL_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")


def checked_thinking(value: dict[str, Any] | None) -> dict[str, Any] | None:
    """``thinking``: an object whose ``type`` is one of ``THINKING_TYPES``, and whose
    ``budget_tokens``, where sent, is a non-negative integer (the spec's ``AnthropicThinking``;
    count_tokens checks it as /v1/messages does, though it generates nothing)."""
    if value is None:
        return None
    if value.get("type") not in THINKING_TYPES:
        raise ValueError(f"thinking.type must be one of {', '.join(THINKING_TYPES)}")
    if "budget_tokens" in value and _budget(value["budget_tokens"]) is None:
        raise ValueError("thinking.budget_tokens must be a non-negative integer")
    return value


def _budget(value: Any) -> int | None:
    """``budget_tokens`` as an int (JSON Schema's integer admits 3.0), or None when it is not
    a non-negative integer."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


class MessagesRequest(BaseModel):
    """Anthropic's MessageCreateParams: none of its fields is nullable (its OpenAPI document,
    as the SDK's generated types show), so ``null`` is a 400 here, as it is there. It holds
    Anthropic's fields only: another family's field is a 400 naming it (``foreign_fields.py``),
    and Anthropic's own fields the server does not implement are accepted and ignored."""

    model_config = ConfigDict(strict=True, extra="allow")

    model: Omittable[str] = None
    max_tokens: Int = Field(ge=1)  # required here
    stream: Omittable[bool] = False
    temperature: Omittable[float] = Field(default=None, ge=0.0, le=1.0)
    top_p: Omittable[float] = Field(default=None, ge=0.0, le=1.0)
    top_k: Omittable[Int] = Field(default=None, ge=0)
    messages: list[AnthropicMessage] = Field(min_length=1)
    system: Omittable[str | list[dict[str, Any]]] = None
    stop_sequences: Omittable[list[str]] = None
    tools: Omittable[list[dict[str, Any]]] = None
    tool_choice: Omittable[dict[str, Any]] = None
    thinking: Omittable[dict[str, Any]] = None

    @model_validator(mode="before")
    @classmethod
    def _own_fields_only(cls, data: Any) -> Any:
        if isinstance(data, dict):
            refuse_foreign(data, FOREIGN_FIELDS)
        return data

    @field_validator("thinking")
    @classmethod
    def _thinking_shape(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        return checked_thinking(value)

    @property
    def thinking_enabled(self) -> bool:
        return (self.thinking or {}).get("type") in ("enabled", "adaptive")

    def thinking_budget(self) -> int | None:
        """``thinking: {"type": "enabled", "budget_tokens": N}`` is Anthropic's form of the
        thinking budget (the only one here: the OpenAI routes' aliases are foreign fields)."""
        thinking = self.thinking or {}
        if thinking.get("type") != "enabled" or "budget_tokens" not in thinking:
            return None
        return _budget(thinking["budget_tokens"])  # checked_thinking refused any other

    def sampling(self, defaults: GenerationDefaults) -> SamplingParams:
        """Anthropic's three sampling fields over the server defaults, resolved as the OpenAI
        routes resolve theirs (one place decides what a default means)."""
        own = OpenAISamplingFields(temperature=self.temperature, top_p=self.top_p,
                                   top_k=self.top_k)
        return own.sampling(defaults)

    def stop_strings(self) -> tuple[str, ...]:
        return tuple(self.stop_sequences or ())

    @field_validator("stop_sequences")
    @classmethod
    def _stop_bounds(cls, value: list[str] | None) -> list[str] | None:
        problem = limits.stop_problem(value)
        if problem:
            raise ValueError(problem)
        return value


# Decided once the model's own fields are known.
FOREIGN_FIELDS = foreign_fields(MessagesRequest.model_fields)


class CountTokensRequest(BaseModel):
    model_config = ConfigDict(strict=True, extra="allow")
    model: Omittable[str] = None
    messages: list[AnthropicMessage] = Field(min_length=1)
    system: Omittable[str | list[dict[str, Any]]] = None
    tools: Omittable[list[dict[str, Any]]] = None
    tool_choice: Omittable[dict[str, Any]] = None
    # counted as /v1/messages renders it: thinking disabled renders a shorter prompt
    thinking: Omittable[dict[str, Any]] = None

    @field_validator("thinking")
    @classmethod
    def _thinking_shape(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        return checked_thinking(value)


def _bad(message: str, param: str) -> InvalidRequestError:
    return InvalidRequestError(message, param=param)


def _image_of(block: dict[str, Any], param: str) -> dict[str, Any]:
    """An ``image`` block as the neutral image part (chat/multimodal.py's module docstring)."""
    source = block.get("source")
    kind = source.get("type") if isinstance(source, dict) else None
    if kind == "base64" and isinstance(source, dict):
        media, data = source.get("media_type"), source.get("data")
        if not isinstance(media, str) or not isinstance(data, str):
            raise _bad(f"{param}.source: a base64 image needs string media_type and data.",
                       f"{param}.source")
        return {"type": "image", "url": f"data:{media};base64,{data}", "param": param}
    if kind == "url" and isinstance(source, dict):
        url = source.get("url")
        if not isinstance(url, str) or not url:
            raise _bad(f"{param}: the image URL must be a non-empty string.", param)
        return {"type": "image", "url": url, "param": param}
    raise _bad(f"{param}.source.type must be base64 or url.", f"{param}.source")


def _parts_of(blocks: str | list[Any], param: str, *, images: bool) -> list[dict[str, Any]]:
    if isinstance(blocks, str):
        return [{"type": "text", "text": blocks}]
    return [_block_part(block, f"{param}.{i}", images) for i, block in enumerate(blocks)]


def _block_part(block: Any, param: str, images: bool) -> dict[str, Any]:
    kind = block.get("type") if isinstance(block, dict) else None
    if kind == "text" and isinstance(block.get("text"), str):
        if block.get("citations") is not None and not isinstance(block["citations"], list):
            raise _bad(f"{param}.citations must be an array or null.", f"{param}.citations")
        return {"type": "text", "text": block["text"]}
    if kind == "image" and images:
        return _image_of(block, param)
    raise _bad(f"{param}: unsupported content block type {kind!r}.", param)


def _joined(parts: list[dict[str, Any]]) -> str | list[dict[str, Any]]:
    """One text, or the parts list when an image is among them."""
    if any(p["type"] != "text" for p in parts):
        return parts
    return "".join(p["text"] for p in parts)


def _text_of(blocks: str | list[Any], param: str) -> str:
    text = _joined(_parts_of(blocks, param, images=False))
    assert isinstance(text, str)
    return text


def system_messages(system: str | list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    if system is None:
        return []
    text = _text_of(system, "system")
    return [{"role": "system", "content": text}] if text else []


def _user_turn(content: list[dict[str, Any]], param: str) -> list[dict[str, Any]]:
    results: list[dict[str, Any]] = []
    parts: list[dict[str, Any]] = []
    for i, block in enumerate(content):
        where = f"{param}.{i}"
        if block.get("type") == "tool_result":
            if not isinstance(block.get("tool_use_id"), str):
                raise _bad(f"{where}.tool_use_id must be a string.", f"{where}.tool_use_id")
            inner = block.get("content") or ""
            if not isinstance(inner, (str, list)):
                raise _bad(f"{where}.content must be a string or an array of content blocks.",
                           f"{where}.content")
            result = _joined(_parts_of(inner, f"{where}.content", images=True))
            results.append({"role": "tool", "tool_call_id": block["tool_use_id"],
                            "content": result})
        else:
            parts.append(_block_part(block, where, True))
    turn = [{"role": "user", "content": _joined(parts)}] if parts else []
    return results + turn


def _assistant_turn(content: list[dict[str, Any]], param: str) -> dict[str, Any]:
    turn: dict[str, Any] = {"role": "assistant", "content": ""}
    calls: list[dict[str, Any]] = []
    for i, block in enumerate(content):
        where, kind = f"{param}.{i}", block.get("type")
        if kind == "tool_use":
            if not isinstance(block.get("name"), str) or not isinstance(block.get("input"), dict):
                raise _bad(f"{where}: tool_use needs a string name and an object input.", where)
            calls.append({"id": block.get("id", ""), "type": "function",
                          "function": {"name": block["name"], "arguments": block["input"]}})
        elif kind == "thinking":
            turn["reasoning_content"] = str(block.get("thinking", ""))
        elif kind == "redacted_thinking":
            continue
        else:
            turn["content"] += _text_of([block], param)
    if calls:
        turn["tool_calls"] = calls
    return turn


def template_messages(request: MessagesRequest | CountTokensRequest) -> list[dict[str, Any]]:
    out = system_messages(request.system)
    for i, message in enumerate(request.messages):
        param = f"messages.{i}.content"
        if isinstance(message.content, str):
            out.append({"role": message.role, "content": message.content})
        elif message.role == "user":
            out.extend(_user_turn(message.content, param))
        else:
            out.append(_assistant_turn(message.content, param))
    return out


def chat_tools(request: MessagesRequest | CountTokensRequest) -> list[dict[str, Any]] | None:
    """Client tools in the chat-template shape (``tool_choice`` narrows them in
    ``chat/turn.py``, as on every family); server tools (no ``input_schema``) are dropped:
    nothing here can run them."""
    tools: list[dict[str, Any]] = []
    for i, tool in enumerate(request.tools or []):
        if "type" in tool and tool["type"] is None:  # absent is a client tool; null is neither
            raise _bad(f"tools.{i}.type must be custom or a server tool's type, not null.",
                       f"tools.{i}.type")
        if tool.get("type") not in (None, "custom"):
            _server_tool(tool, f"tools.{i}")
            continue  # a server tool (its own type, no input_schema)
        tools.append({"type": "function", "function": _client_tool(tool, f"tools.{i}")})
    return tools or None


def _server_tool(tool: dict[str, Any], param: str) -> None:
    """A server tool is not offered to the model, but it must still be one: a string ``type``
    and ``name``, as every server tool of Anthropic's ToolUnion has (openapi.yaml,
    ``AnthropicTools``)."""
    for field in ("type", "name"):
        if not isinstance(tool.get(field), str):
            raise _bad(f"{param}.{field} must be a string.", f"{param}.{field}")


def _client_tool(tool: dict[str, Any], param: str) -> dict[str, Any]:
    """A client tool (Anthropic's ToolParam: a string ``name`` and ``description``, an object
    ``input_schema``) as a chat function."""
    name = tool.get("name")
    if not isinstance(name, str) or not TOOL_NAME.fullmatch(name):
        raise _bad(f"{param}.name must match ^[a-zA-Z0-9_-]{{1,64}}$.", f"{param}.name")
    if not isinstance(tool.get("input_schema"), dict):
        raise _bad(f"{param}.input_schema must be an object (a JSON schema).",
                   f"{param}.input_schema")
    function: dict[str, Any] = {"name": tool["name"], "parameters": tool["input_schema"]}
    if "description" in tool:
        if not isinstance(tool["description"], str):
            raise _bad(f"{param}.description must be a string.", f"{param}.description")
        function["description"] = tool["description"]
    return function


def chat_tool_choice(request: MessagesRequest | CountTokensRequest) -> Any:
    """Anthropic's ``tool_choice`` in chat's shape, which the one set of rules reads
    (``chat/tool_choice.py``): ``any`` is ``required``, ``tool`` names a function."""
    choice = request.tool_choice
    if choice is None:
        return None
    kind = choice.get("type")
    if kind in ("auto", "none"):
        return kind
    if kind == "any":
        return "required"
    if kind == "tool":
        if not isinstance(choice.get("name"), str) or not choice["name"]:
            raise _bad("tool_choice.name must be a non-empty string.", "tool_choice.name")
        return {"type": "function", "function": {"name": choice["name"]}}
    raise _bad("tool_choice.type must be one of auto, any, tool, none.", "tool_choice.type")


def thinking_switch(thinking: dict[str, Any] | None) -> bool:
    """Anthropic's ``thinking.type`` as the turn's switch: ``enabled``/``adaptive`` render the
    turn with reasoning, ``disabled`` and an absent ``thinking`` without it (as chat's
    ``enable_thinking: false``): Anthropic's models think only when asked to (its API
    reference, Messages, ``thinking``: "Configuration for enabling Claude's extended
    thinking"), so the template's default does not apply."""
    return (thinking or {}).get("type") in ("enabled", "adaptive")


def tool_input(arguments: str) -> dict[str, Any]:
    """A call's arguments as Anthropic's ``input`` object. Arguments that are not a JSON object
    (a call cut off by max_tokens) become ``{}``: ``input`` must always be an object."""
    try:
        value = json.loads(arguments) if arguments else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def new_message_id() -> str:
    return "msg_" + uuid.uuid4().hex[:24]


def new_tool_use_id() -> str:
    return "toolu_" + uuid.uuid4().hex[:24]


def stop_reason(finished: Finished, has_calls: bool) -> tuple[str, str | None]:
    """``(stop_reason, stop_sequence)``."""
    if has_calls:
        return "tool_use", None
    if finished.reason == "length":
        return "max_tokens", None
    if finished.stop_string is not None:
        return "stop_sequence", finished.stop_string
    return "end_turn", None


def usage_of(input_tokens: int, output_tokens: int, thinking_tokens: int = 0) -> dict[str, Any]:
    """A message's ``usage`` with every key Anthropic's API reference lists for ``Usage`` (its
    SDK's generated ``types/usage.py``), set to what it sends where the value has no meaning
    here: no prompt caching on Anthropic's terms (zeros), the ``standard`` tier,
    ``not_available`` geography, no server tools; ``output_tokens_details.thinking_tokens``
    counted from the token stream (``chat/reasoning_tokens.py``)."""
    return {"input_tokens": input_tokens, "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0},
            "output_tokens": output_tokens, "service_tier": "standard",
            "inference_geo": "not_available", "server_tool_use": None,
            "output_tokens_details": _details(output_tokens, thinking_tokens)}


def _details(output_tokens: int, thinking_tokens: int) -> dict[str, int]:
    return {"thinking_tokens": min(thinking_tokens, output_tokens)}


def delta_usage_of(input_tokens: int, output_tokens: int,
                   thinking_tokens: int = 0) -> dict[str, Any]:
    """``message_delta``'s cumulative ``usage``, with the keys of Anthropic's
    ``MessageDeltaUsage`` (``server_tool_use`` and ``output_tokens_details`` included)."""
    return {"input_tokens": input_tokens, "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0, "output_tokens": output_tokens,
            "server_tool_use": None,
            "output_tokens_details": _details(output_tokens, thinking_tokens)}


# A tool_use block's ``caller``: the model called the tool itself (not code execution).
DIRECT_CALLER: dict[str, str] = {"type": "direct"}


def message_shell(message_id: str, model_name: str, input_tokens: int) -> dict[str, Any]:
    """The message as ``message_start`` announces it: no content, no stop reason yet (keys in
    the real API's order, ``model`` first; ``stop_details`` null, as its 2026 streams send it,
    and ``container`` null, both nullable keys of Anthropic's current ``Message``)."""
    return {"model": model_name, "id": message_id, "type": "message", "role": "assistant",
            "content": [], "stop_reason": None, "stop_sequence": None, "stop_details": None,
            "usage": usage_of(input_tokens, 0), "container": None}


def message_body(shell: dict[str, Any], content: list[dict[str, Any]], stop_reason: str,
                 stop_sequence: str | None, usage: dict[str, Any]) -> dict[str, Any]:
    """The whole message of a JSON answer: the shell's keys (``stop_details`` null: no refusal)
    with ``usage`` and ``container`` (null: no container tool ran) last."""
    kept = {k: v for k, v in shell.items() if k not in ("usage", "container")}
    return {**kept, "content": content, "stop_reason": stop_reason,
            "stop_sequence": stop_sequence, "usage": usage, "container": None}


def turn_request(body: MessagesRequest | CountTokensRequest, max_tokens: int,
                 thinking_budget: int | None = None) -> TurnRequest:
    """A Messages body (or its count_tokens body) as the family-neutral turn: every field
    of the body read here, the prefill last (``chat.continuation``)."""
    messages = template_messages(body)
    tools = chat_tools(body)
    # no client tool declared (none, or server tools only): nothing to force, as the spec allows
    choice = chat_tool_choice(body)
    return TurnRequest(
        messages=messages,
        max_tokens=max_tokens,
        tools=tools,
        tool_choice=choice if tools or choice in ("auto", "none") else None,
        thinking=thinking_switch(body.thinking),
        thinking_budget=thinking_budget,
        continue_final=prefilled_field(messages, refuse=False),
    )
