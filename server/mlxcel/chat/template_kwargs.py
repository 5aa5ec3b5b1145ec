"""``chat_template_kwargs``: the three request shapes, their precedence, and the merge with the
server-wide default (``--chat-template-kwargs`` / ``LLAMA_ARG_CHAT_TEMPLATE_KWARGS``).

Precedence, first present wins: top-level ``chat_template_kwargs`` (llama.cpp), then
``extra_body.chat_template_kwargs`` (vLLM, sent literally), then a flat ``preserve_thinking``
(DashScope: in ``extra_body``, or at the top level as the OpenAI SDK flattens ``extra_body``).
Request keys win over the server default; unknown keys go to the template unchanged.
"""

from __future__ import annotations

import json
from typing import Any

from ..errors import InvalidRequestError


def parse_server_kwargs(text: str | None) -> dict[str, Any]:
    """The ``--chat-template-kwargs`` JSON object (raises ValueError for the CLI to report)."""
    if not text:
        return {}
    value = json.loads(text)
    if not isinstance(value, dict):
        raise ValueError("--chat-template-kwargs must be a JSON object")
    return value


def _object(value: Any, param: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise InvalidRequestError(f"{param} must be an object.", param=param)
    return value


def request_kwargs(top_level: Any, extra: dict[str, Any]) -> dict[str, Any]:
    """The request's own kwargs from whichever shape it used (``extra``: the body's extra keys).
    Every shape sent is checked, the ones precedence leaves unused included."""
    shapes: list[dict[str, Any]] = []
    if top_level is not None:
        shapes.append(_object(top_level, "chat_template_kwargs"))
    extra_body = extra.get("extra_body")
    if extra_body is not None:
        extra_body = _object(extra_body, "extra_body")
        if "chat_template_kwargs" in extra_body:
            shapes.append(_object(extra_body["chat_template_kwargs"],
                                  "extra_body.chat_template_kwargs"))
        if "preserve_thinking" in extra_body:
            shapes.append({"preserve_thinking": _flag(extra_body["preserve_thinking"],
                                                      "extra_body.preserve_thinking")})
    if "preserve_thinking" in extra:
        shapes.append({"preserve_thinking": _flag(extra["preserve_thinking"],
                                                  "preserve_thinking")})
    return shapes[0] if shapes else {}


def _flag(value: Any, param: str) -> bool:
    if not isinstance(value, bool):
        raise InvalidRequestError(f"{param} must be a boolean.", param=param)
    return value


def merged_kwargs(server: dict[str, Any], request: dict[str, Any]) -> dict[str, Any]:
    return {**server, **request}
