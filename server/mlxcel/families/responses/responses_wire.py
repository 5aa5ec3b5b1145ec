"""OpenAI Responses API: request model, validation, translation to ``GenerationRequest``, and
the ``response`` object (every field OpenAI's ``Response`` requires).

Translation: ``instructions`` (not carried over by ``previous_response_id``) becomes a leading
system message, the stored history comes next, then ``input``. Function tools become chat
tools for the template; built-in tools, ``input_file``, ``truncation`` other than
``disabled`` are 400s; ``background: true`` is served (``background.py``).
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from pydantic import Field

from ...chat.output import ParsedOutput
from ...chat.tool_calls import ParsedToolCall
from ...errors import InvalidRequestError
from ...generation import Finished
from ...protocol.field_limits import TOP_LOGPROBS_MAX, Identifier, Metadata, SafetyIdentifier
from ...protocol.sampling_fields import OpenAISamplingFields
from ...protocol.types import Int

BUILTIN_TOOLS = frozenset({
    "web_search", "web_search_preview", "web_search_2025_08_26", "web_search_preview_2025_03_11",
    "file_search", "computer_use_preview", "computer_use", "code_interpreter", "image_generation",
    "mcp", "custom", "apply_patch", "function_shell", "shell", "local_shell",
})


class ResponsesRequest(OpenAISamplingFields):
    # Nullable in the Open Responses specification (CreateResponseBody), as are tools,
    # tool_choice and text: null reads as absent.
    model: str | None = None
    input: str | list[Any] | None = None
    instructions: str | None = None
    max_output_tokens: Int | None = Field(default=None, ge=1)
    tools: list[dict[str, Any]] | None = None
    tool_choice: str | dict[str, Any] | None = None
    parallel_tool_calls: bool | None = None
    text: dict[str, Any] | None = None
    previous_response_id: str | None = None
    conversation: str | dict[str, Any] | None = None
    store: bool | None = None
    # OpenAI's documented bounds (protocol/field_limits.py); stored and echoed, never read.
    metadata: Metadata | None = None
    top_logprobs: Int | None = Field(default=None, ge=0, le=TOP_LOGPROBS_MAX)
    prompt_cache_key: Identifier | None = None
    safety_identifier: SafetyIdentifier | None = None
    truncation: str | None = None
    background: bool | None = None
    reasoning: dict[str, Any] | None = None
    include: list[str] | None = None
    context_management: list[dict[str, Any]] | None = None

    def conversation_id(self) -> str | None:
        conv = self.conversation
        if isinstance(conv, dict):
            conv_id = conv.get("id")
            if not isinstance(conv_id, str):
                raise InvalidRequestError("conversation.id must be a string.",
                                          param="conversation")
            return conv_id
        return conv


def check_unsupported(request: ResponsesRequest) -> None:
    """The documented 400s for features this server does not serve."""
    request.check_n()
    if request.truncation not in (None, "disabled"):
        raise InvalidRequestError(
            f"truncation {request.truncation!r} is not supported; only 'disabled' is.",
            param="truncation",
        )
    check_text_format(request.text)
    check_reasoning(request.reasoning)
    if request.previous_response_id is not None and request.conversation is not None:
        raise InvalidRequestError(
            "previous_response_id and conversation cannot be used together.",
            param="previous_response_id",
        )


def check_text_format(text: dict[str, Any] | None) -> None:
    """``text.format``: null or an object whose ``type`` (default ``text``) is text or
    json_schema (Open Responses' TextParam; json_object is not served); a json_schema one has
    an object ``schema``, a string ``name`` and a boolean or null ``strict`` when sent."""
    fmt = (text or {}).get("format")
    if fmt is None:
        return
    if not isinstance(fmt, dict) or not isinstance(fmt.get("type", "text"), str):
        raise InvalidRequestError("text.format must be an object with a string type.",
                                  param="text.format")
    fmt = {"type": "text", **fmt}
    if fmt["type"] not in ("text", "json_schema"):
        raise InvalidRequestError(
            f"text.format type {fmt['type'][:40]!r} is not supported; use 'text' or "
            "'json_schema'.", param="text.format")
    if fmt["type"] == "text":
        return
    if not isinstance(fmt.get("schema"), dict):
        raise InvalidRequestError("text.format.schema must be a JSON schema object.",
                                  param="text.format.schema")
    if "name" in fmt and not isinstance(fmt["name"], str):
        raise InvalidRequestError("text.format.name must be a string.", param="text.format.name")
    if fmt.get("strict") is not None and not isinstance(fmt["strict"], bool):
        raise InvalidRequestError("text.format.strict must be a boolean or null.",
                                  param="text.format.strict")


def _function_tool(tool: dict[str, Any], i: int) -> dict[str, Any]:
    """A Responses function tool (OpenAI's FunctionTool: description and parameters may be
    null) in the chat shape."""
    if not isinstance(tool.get("name"), str):
        raise InvalidRequestError(f"tools[{i}].name must be a string.", param=f"tools.{i}.name")
    for key, kind, what in (("description", str, "a string"),
                            ("parameters", dict, "a JSON schema object"),
                            ("strict", bool, "a boolean")):
        if tool.get(key) is not None and not isinstance(tool[key], kind):
            raise InvalidRequestError(f"tools[{i}].{key} must be {what} or null.",
                                      param=f"tools.{i}.{key}")
    function = {k: tool[k] for k in ("name", "description", "parameters")
                if tool.get(k) is not None}
    return {"type": "function", "function": function}


def chat_tools(request: ResponsesRequest) -> list[dict[str, Any]] | None:
    """Function tools in the chat-template shape, all of them (``tool_choice`` narrows them in
    ``chat/turn.py``, as on every family); None when there are none."""
    tools: list[dict[str, Any]] = []
    for i, tool in enumerate(request.tools or []):
        kind = tool.get("type")
        if not isinstance(kind, str):
            raise InvalidRequestError(f"tools[{i}].type must be a string.",
                                      param=f"tools.{i}.type")
        if kind != "function":
            what = "built-in tool" if kind in BUILTIN_TOOLS else "tool type"
            raise InvalidRequestError(
                f"tools[{i}]: {what} {kind[:40]!r} is not supported; only function tools are.",
                param=f"tools.{i}.type",
            )
        tools.append(_function_tool(tool, i))
    return tools or None


def response_format_of(request: ResponsesRequest) -> dict[str, Any] | None:
    """``text.format`` in the chat ``response_format`` shape (Responses flattens the wrapper)."""
    fmt = (request.text or {}).get("format")
    if not isinstance(fmt, dict) or fmt.get("type") != "json_schema":
        return None
    wrapper = {k: fmt[k] for k in ("name", "schema", "strict") if k in fmt}
    return {"type": "json_schema", "json_schema": wrapper}


def chat_tool_choice(request: ResponsesRequest) -> Any:
    """Responses' ``tool_choice`` in chat's shape, which the one set of rules reads
    (``chat/tool_choice.py``): a named function's ``name`` sits at the top level here."""
    choice = request.tool_choice
    if choice is None or choice in ("auto", "none", "required"):
        return choice
    if isinstance(choice, dict) and choice.get("type") == "function":
        name = choice.get("name")
        if not isinstance(name, str) or not name:
            raise InvalidRequestError("tool_choice.name must be a non-empty string.",
                                      param="tool_choice.name")
        return {"type": "function", "function": {"name": name}}
    raise InvalidRequestError(
        "tool_choice must be 'none', 'auto', 'required' or {'type': 'function', 'name': ...}.",
        param="tool_choice",
    )


# OpenAI's Reasoning object: ``effort`` (``none`` turns reasoning off) and ``summary``
# (``generate_summary`` its deprecated name).
REASONING_EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh")
REASONING_SUMMARIES = ("auto", "concise", "detailed")
REASONING_ENUMS = {"effort": REASONING_EFFORTS, "summary": REASONING_SUMMARIES,
                   "generate_summary": REASONING_SUMMARIES}


def check_reasoning(reasoning: dict[str, Any] | None) -> None:
    """``reasoning``'s enums, null allowed (a value the Response would echo must be one)."""
    for key, allowed in REASONING_ENUMS.items():
        value = (reasoning or {}).get(key)
        if value is not None and value not in allowed:
            raise InvalidRequestError(
                f"reasoning.{key} must be one of {', '.join(allowed)} or null.",
                param=f"reasoning.{key}")


def thinking_switch(request: ResponsesRequest) -> bool | None:
    """``reasoning.effort`` as the turn's thinking switch: ``none`` renders the turn without
    reasoning (the template's ``enable_thinking: false``), any other effort with it; absent
    leaves the template's default."""
    effort = (request.reasoning or {}).get("effort")
    return None if effort is None else effort != "none"


def reasoning_echo(reasoning: dict[str, Any] | None) -> dict[str, Any]:
    """The Response's ``reasoning``: the request's effort and summary, null where not sent (as
    OpenAI's Response object echoes its Reasoning)."""
    reasoning = reasoning or {}
    summary = reasoning.get("summary")
    return {"effort": reasoning.get("effort"),
            "summary": reasoning.get("generate_summary") if summary is None else summary}


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex}"


def message_item(item_id: str, text: str, status: str = "completed") -> dict[str, Any]:
    part = {"type": "output_text", "text": text, "annotations": [], "logprobs": []}
    return {"id": item_id, "type": "message", "status": status, "role": "assistant",
            "content": [part]}


def reasoning_item(item_id: str, text: str) -> dict[str, Any]:
    return {"id": item_id, "type": "reasoning", "summary": [],
            "content": [{"type": "reasoning_text", "text": text}]}


def function_call_item(call: ParsedToolCall) -> dict[str, Any]:
    return {"id": new_id("fc"), "type": "function_call", "status": "completed",
            "call_id": call.id, "name": call.name, "arguments": call.arguments}


def output_items(parsed: ParsedOutput, finished: Finished) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if parsed.reasoning is not None:
        items.append(reasoning_item(new_id("rs"), parsed.reasoning))
    if parsed.content or not parsed.calls:
        status = "incomplete" if finished.reason == "length" else "completed"
        items.append(message_item(new_id("msg"), parsed.content, status))
    items.extend(function_call_item(call) for call in parsed.calls)
    return items


def usage_body(prompt_tokens: int, output_tokens: int, reasoning_tokens: int) -> dict[str, Any]:
    return {
        "input_tokens": prompt_tokens,
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens": output_tokens,
        "output_tokens_details": {"reasoning_tokens": min(reasoning_tokens, output_tokens)},
        "total_tokens": prompt_tokens + output_tokens,
    }


def response_body(
    response_id: str,
    request: ResponsesRequest,
    model_name: str,
    *,
    status: str = "in_progress",
    output: list[dict[str, Any]] | None = None,
    sampling: tuple[float | None, float | None] | None = None,
) -> dict[str, Any]:
    """The ``response`` object, ``usage`` null until completion; ``sampling`` is the
    (temperature, top_p) actually used. Every key OpenAI's Response (and the Open Responses
    ResponseResource) carries is present, with the value the real service sends where it has
    no meaning here (``service_tier`` "auto" until the answer is done, then "default")."""
    temperature, top_p = sampling or (request.temperature, request.top_p)
    conv_id = request.conversation_id()
    extra = request.model_extra or {}
    body: dict[str, Any] = {
        "id": response_id,
        "object": "response",
        "created_at": int(time.time()),
        "completed_at": None,
        "status": status,
        "background": request.background is True,
        "error": None,
        "incomplete_details": None,
        "instructions": request.instructions,
        "max_output_tokens": request.max_output_tokens,
        "max_tool_calls": None,
        "model": model_name,
        "output": output or [],
        "parallel_tool_calls": request.parallel_tool_calls is not False,
        "previous_response_id": request.previous_response_id,
        "reasoning": reasoning_echo(request.reasoning),
        "store": request.store is not False,
        "temperature": 1.0 if temperature is None else temperature,
        "text": {"format": {"type": "text"}},
        "tool_choice": request.tool_choice if request.tool_choice is not None else "auto",
        "tools": [_tool_echo(t) for t in (request.tools or [])],
        "top_p": 1.0 if top_p is None else top_p,
        "truncation": "disabled",
        "user": request.user,
        "metadata": dict(request.metadata or {}),
        "presence_penalty": request.presence_penalty or 0.0,
        "frequency_penalty": request.frequency_penalty or 0.0,
        "top_logprobs": request.top_logprobs or 0,
        "service_tier": _echo(extra, "service_tier", str, "auto"),
        "prompt_cache_key": request.prompt_cache_key,
        "safety_identifier": request.safety_identifier,
        "usage": None,
    }
    if conv_id is not None:
        body["conversation"] = {"id": conv_id}
    return body


def _echo(extra: dict[str, Any], key: str, kind: type, default: Any) -> Any:
    """A request field the server does not act on, echoed as the real service echoes it."""
    value = extra.get(key)
    return value if isinstance(value, kind) and not isinstance(value, bool) else default


def _tool_echo(tool: dict[str, Any]) -> dict[str, Any]:
    echo = {"type": "function", "name": tool.get("name"), "description": None,
            "parameters": None, "strict": None}
    echo.update({k: tool[k] for k in ("description", "parameters", "strict") if k in tool})
    return echo


def finish_body(
    body: dict[str, Any], finished: Finished, output: list[dict[str, Any]], reasoning_tokens: int
) -> dict[str, Any]:
    """``body`` completed (or incomplete on a length stop) with output and usage."""
    done = dict(body)
    done["output"] = output
    if finished.reason == "length":
        done["status"] = "incomplete"
        done["incomplete_details"] = {"reason": "max_output_tokens"}
    elif finished.reason == "cancelled":
        done["status"] = "cancelled"
    else:
        done["status"] = "completed"
        done["completed_at"] = int(time.time())
    if done.get("service_tier") == "auto":
        done["service_tier"] = "default"
    done["usage"] = usage_body(finished.prompt_tokens, finished.completion_tokens,
                               reasoning_tokens)
    return done
