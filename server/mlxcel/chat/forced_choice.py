"""A forced tool choice bound by a grammar: llguidance constrains decoding to exactly one call
of a declared function, written in the model's own tool-call format (each format's
``call_grammar``). A format without a grammar, or schemas the grammar engine cannot express,
keep the instruction only (logged)."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from typing import Any

from ..errors import InvalidRequestError
from ..generation import LogitsProcessorFactory
from ..generation.model_view import ModelView
from .forced_bounds import bounded_tools
from .tool_formats.base import Spell, ToolFormat, Tools

log = logging.getLogger("mlxcel.chat")


def marker_speller(model: ModelView) -> Spell:
    """Spell text for Lark: each added token in it as ``<[id]>`` (llguidance matches an added
    token, special or not, only by its id form), the text around them quoted."""
    inner = getattr(model.tokenizer, "_tokenizer", model.tokenizer)
    decoder = getattr(inner, "added_tokens_decoder", {}) or {}
    added = {str(getattr(tok, "content", tok)): int(i) for i, tok in decoder.items()}
    added = {text: i for text, i in added.items() if text}
    # Longest first, so that a token containing another is found whole.
    pattern = re.compile("|".join(re.escape(t) for t in sorted(added, key=len, reverse=True)))

    def spell(text: str) -> str:
        if not added:
            return json.dumps(text)
        parts, pos = [], 0
        for match in pattern.finditer(text):
            if match.start() > pos:
                parts.append(json.dumps(text[pos:match.start()]))
            parts.append(f"<[{added[match.group()]}]>")
            pos = match.end()
        if pos < len(text):
            parts.append(json.dumps(text[pos:]))
        return " ".join(parts) or '""'

    return spell


def markup_counter(model: ModelView, fmt: ToolFormat, spell: Spell
                   ) -> Callable[[dict[str, Any]], int]:
    """Tokens of the markup a call to one tool takes: every text the format's grammar spells
    (its tags and, in the tagged formats, each argument's key), as the model encodes it."""

    def count(tool: dict[str, Any]) -> int:
        pieces: list[str] = []

        def recording(text: str) -> str:
            pieces.append(text)
            return spell(text)

        fmt.call_grammar([tool], recording)
        return sum(len(model.encode(piece)) for piece in pieces)

    return count


def forced_call_factories(
    model: ModelView, fmt: ToolFormat | None, tools: Tools, max_tokens: int
) -> tuple[LogitsProcessorFactory, ...]:
    """The grammar of one forced call, its free values bounded so it fits ``max_tokens``."""
    if fmt is None:
        return ()
    budget = max_tokens if max_tokens > 0 else model.context_size
    spell = marker_speller(model)
    lark = fmt.call_grammar(bounded_tools(tools, budget, markup_counter(model, fmt, spell)),
                            spell)
    if lark is None:
        return ()
    from ..structured.grammar import compile_grammar, lark_grammar

    try:
        compiled = compile_grammar(model, lark_grammar(lark), "tool_choice")
    except InvalidRequestError as exc:
        if exc.code == "unsupported_tokenizer":
            log.warning("forced tool choice without a grammar: %s", exc.message)
            return ()
        log.warning("forced tool choice without a grammar: the tool schemas cannot be "
                    "compiled (%s)", exc.message)
        return ()
    return (compiled.factory(),)
