"""A forced tool choice bound by a grammar: for formats whose call is a JSON object in a fixed
wrapper, llguidance constrains decoding to exactly one call of a declared function. Formats
without a JSON wire shape, or schemas the grammar engine cannot express, keep the instruction
only (logged)."""

from __future__ import annotations

import json
import logging

from ..engine.model import LoadedModel
from ..engine.request import LogitsProcessorFactory
from ..errors import InvalidRequestError
from .forced_bounds import bounded_tools
from .tool_formats.base import ToolFormat, Tools

log = logging.getLogger("mlxcel.chat")


def marker_speller(model: LoadedModel):  # type: ignore[no-untyped-def]
    """Spell a marker for Lark: ``<[id]>`` when it is one added token (llguidance matches an
    added token, special or not, only by its id form), else a quoted string."""
    inner = getattr(model.tokenizer, "_tokenizer", model.tokenizer)
    decoder = getattr(inner, "added_tokens_decoder", {}) or {}
    added = {str(getattr(tok, "content", tok)): int(i) for i, tok in decoder.items()}

    def spell(marker: str) -> str:
        if marker in added:
            return f"<[{added[marker]}]>"
        return json.dumps(marker)

    return spell


def forced_call_factories(
    model: LoadedModel, fmt: ToolFormat | None, tools: Tools, max_tokens: int
) -> tuple[LogitsProcessorFactory, ...]:
    """The grammar of one forced call, its free values bounded so it fits ``max_tokens``."""
    if fmt is None or not fmt.json_wire:
        return ()
    budget = max_tokens if max_tokens > 0 else model.context_size
    lark = fmt.call_grammar(bounded_tools(tools, budget), marker_speller(model))
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
