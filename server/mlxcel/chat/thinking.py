"""``preserve_thinking`` and the Qwen3 rolling-checkpoint rule for earlier reasoning.

Without ``preserve_thinking`` (the default), walk the messages backwards to the latest user
turn (tool results are not user turns) and strip ``<think>`` blocks (and
``reasoning_content``) from every assistant reply before it. With it, every turn is passed on
unchanged. Models without reasoning markers are left alone.
"""

from __future__ import annotations

import re
from typing import Any

from .reasoning import ReasoningMarkers


def _latest_user_turn(messages: list[dict[str, Any]]) -> int:
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].get("role") == "user":
            return index
    return -1


def apply_rolling_checkpoint(
    messages: list[dict[str, Any]], markers: ReasoningMarkers | None, preserve: bool
) -> list[dict[str, Any]]:
    """Messages with earlier reasoning stripped per the rule; the input is not modified."""
    if preserve or markers is None:
        return messages
    pattern = re.compile(re.escape(markers.open) + r".*?" + re.escape(markers.close) + r"\s*",
                         re.DOTALL)
    checkpoint = _latest_user_turn(messages)
    out = []
    for index, message in enumerate(messages):
        if index < checkpoint and message.get("role") == "assistant":
            message = dict(message)
            message.pop("reasoning_content", None)
            if isinstance(message.get("content"), str):
                message["content"] = pattern.sub("", message["content"])
        out.append(message)
    return out
