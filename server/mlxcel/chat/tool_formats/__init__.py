"""The tool-call formats, one module each, found by name.

``FORMAT_NAMES`` lists the modules in detection order (most specific template markers first:
Qwen3-Coder's ``<function=`` inside ``<tool_call>`` before plain Hermes ``<tool_call>``); each
module defines ``FORMAT``. ``detect_format`` picks the first whose ``detect`` accepts the chat
template.
"""

from __future__ import annotations

import importlib
from functools import cache, lru_cache

from .base import ToolFormat

FORMAT_NAMES: tuple[str, ...] = (
    "harmony",
    "minimax_m3",
    "minimax_m2",
    "kimi_k2",
    "longcat",
    "glm47",
    "qwen3_coder",
    "granite",
    "hermes",
    "functionary_v31",
    "functionary_v32",
    "command_r",
    "gemma4",
    "function_gemma",
    "mistral_bracketed",
    "mistral_nemo",
    "pythonic",
    "llama3",
    "generic_json",
)


@cache
def load_format(name: str) -> ToolFormat:
    """The format defined by module ``name`` (KeyError for a name not in the registry)."""
    if name not in FORMAT_NAMES:
        raise KeyError(name)
    module = importlib.import_module(f"{__name__}.{name}")
    fmt: ToolFormat = module.FORMAT
    return fmt


def available_formats() -> list[ToolFormat]:
    formats = []
    for name in FORMAT_NAMES:
        try:
            formats.append(load_format(name))
        except ModuleNotFoundError:
            continue
    return formats


@lru_cache(maxsize=32)
def detect_format(template: str | None) -> ToolFormat | None:
    """The format a chat template renders tool calls in; None if it has no tool support."""
    if not template or "tool" not in template:
        return None
    for fmt in available_formats():
        if fmt.detect(template):
            return fmt
    return None
