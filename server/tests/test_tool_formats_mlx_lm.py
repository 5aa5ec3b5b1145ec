"""mlx-lm's own tool parsers (``mlx_lm.tool_parsers``) as an oracle: on every well-formed case of
``test_tool_formats`` the formats mlx-lm also implements give the same calls.

They are not used in place of ours because they differ where ours must not: they return
arguments as dicts (re-serialised, so streamed argument fragments would no longer concatenate to
the final string), gemma4 and function_gemma do not coerce values against the tool schema,
minimax_m2 strips all whitespace from values, and on malformed text pythonic accepts
``city=Paris!``, glm47 returns a call with an empty name and longcat raises AttributeError.
"""

from __future__ import annotations

import importlib
import json
from typing import Any

import pytest

from mlxcel.chat.tool_formats import load_format

from .test_tool_formats import CASES, TOOLS

# our format module -> mlx-lm's parser module
MLX_LM_PARSERS = {
    "hermes": "json_tools", "qwen3_coder": "qwen3_coder", "mistral_nemo": "mistral",
    "mistral_bracketed": "mistral", "pythonic": "pythonic", "gemma4": "gemma4",
    "function_gemma": "function_gemma", "kimi_k2": "kimi_k2", "minimax_m2": "minimax_m2",
    "glm47": "glm47", "longcat": "longcat",
}


def _mlx_lm_calls(parser: Any, text: str) -> list[tuple[str, Any]]:
    """Calls as mlx-lm's server finds them: each block between its markers, parsed."""
    calls: list[Any] = []
    rest = text
    while parser.tool_call_start in rest:
        rest = rest.split(parser.tool_call_start, 1)[1]
        end = parser.tool_call_end
        block, rest = rest.split(end, 1) if end and end in rest else (rest, "")
        parsed = parser.parse_tool_call(block, TOOLS)
        calls += parsed if isinstance(parsed, list) else [parsed]
    return [(c["name"], c["arguments"] if isinstance(c["arguments"], dict)
             else json.loads(c["arguments"])) for c in calls]


@pytest.mark.parametrize("ours", sorted(MLX_LM_PARSERS))
def test_mlx_lm_parser_agrees_on_well_formed_text(ours: str) -> None:
    parser = importlib.import_module(f"mlx_lm.tool_parsers.{MLX_LM_PARSERS[ours]}")
    assert parser.tool_call_start == load_format(ours).start
    text, expected, _content, _malformed = CASES[ours]
    assert _mlx_lm_calls(parser, text) == expected
