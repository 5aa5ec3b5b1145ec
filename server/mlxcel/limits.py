"""The server's request limits: what one client's request may cost before it is refused.

Each limit is a setting (``settings/limit_options.py``), documented in ``docs/limits.md`` and
in the spec's ``info.x-mlxcel-limits``. ``install`` makes a set of limits the active one when an
app is built; request parsing reads ``active()``. Every limit is checked before the work it bounds
runs (a body before it is read or parsed, a JSON document before it is walked, strings before
they are matched or tokenized).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .errors import ContextLengthExceeded
from .settings.catalog import default_of


def _limit(field: str) -> Any:
    return default_of("limits", field)


@dataclass(frozen=True)
class RequestLimits:
    # Request bodies, every route: larger is 413 before the body is read (Anthropic's limit).
    max_body_bytes: int = _limit("max_body_bytes")
    # A JSON body's array items plus object members, and the objects and arrays among them
    # (at most a twentieth): parsing cost grows with them, not with bytes (`[],` is 3 bytes).
    max_json_values: int = _limit("max_json_values")
    # Nesting of a JSON body (a tool schema or response_format is bounded lower, by
    # --max-schema-depth): deeper is refused before anything recurses into it.
    max_json_depth: int = _limit("max_json_depth")
    # Stop strings of one request, and the length of each.
    max_stop_strings: int = _limit("max_stop_strings")
    max_stop_chars: int = _limit("max_stop_chars")
    # llama-server's string DRY breakers: how many, and the characters of each kept (longer
    # ones are cut to this length, as llama.cpp does with its own limit of 40).
    max_dry_breakers: int = _limit("max_dry_breakers")
    dry_breaker_chars: int = _limit("dry_breaker_chars")
    # Entries of one logit_bias (OpenAI accepts at most 300): counted before the entries are
    # validated, which holds the interpreter lock (200,000 entries held it ~160 ms).
    max_logit_bias: int = _limit("max_logit_bias")
    # Log probabilities one non-streamed /completion answer may hold (n_probs x tokens): each
    # is kept until the answer is rendered, and n_probs may be the whole vocabulary.
    max_logprob_entries: int = _limit("max_logprob_entries")
    # Characters one tokenizer call may take: tokenizing holds the interpreter lock for a
    # share of its time that grows with the text (about 0.1 s per MiB measured on 2 cores).
    max_tokenize_chars: int = _limit("max_tokenize_chars")
    # JSON schemas of tools and of response_format: nesting depth.
    max_schema_depth: int = _limit("max_schema_depth")
    # Worker threads preparing requests off the event loop (parsing, templates, tokenizing).
    prepare_threads: int = _limit("prepare_threads")


_ACTIVE = RequestLimits()


def install(limits: RequestLimits) -> None:
    """Make ``limits`` the ones every request is checked against."""
    global _ACTIVE
    _ACTIVE = limits


def active() -> RequestLimits:
    return _ACTIVE


def stop_problem(stops: str | list[str] | None) -> str | None:
    """Why ``stops`` (one string or a list) exceeds the active limits; None when it does not.
    Matching held-back text against every stop string runs for each generated token, so both
    the number of strings and their length are bounded."""
    if stops is None:
        return None
    items = [stops] if isinstance(stops, str) else stops
    bounds = active()
    if len(items) > bounds.max_stop_strings:
        return f"at most {bounds.max_stop_strings} stop sequences are supported"
    if any(len(item) > bounds.max_stop_chars for item in items):
        return f"a stop sequence may be at most {bounds.max_stop_chars} characters long"
    return None


def logit_bias_problem(bias: object) -> str | None:
    """Why ``bias`` (a ``logit_bias`` object or llama-server's list of pairs, not yet
    validated) has more entries than the active limit; None when it has not."""
    limit = active().max_logit_bias
    if isinstance(bias, (dict, list)) and len(bias) > limit:
        return (f"logit_bias has {len(bias)} entries; at most {limit} are accepted "
                "(--max-logit-bias)")
    return None


def logprob_entries_problem(n_probs: int, tokens: int) -> str | None:
    """Why a non-streamed answer of ``tokens`` tokens with ``n_probs`` alternatives each would
    hold more log probabilities than the active limit; None when it would not."""
    limit = active().max_logprob_entries
    if n_probs > 0 and n_probs * tokens > limit:
        return (f"n_probs {n_probs} for up to {tokens} generated tokens would hold "
                f"{n_probs * tokens} log probabilities; a non-streamed answer holds at most "
                f"{limit} (--max-logprob-entries): lower n_probs or n_predict, or stream")
    return None


def check_tokenize_length(text: str) -> None:
    """400 ``context_length_exceeded`` for a text longer than one tokenizer call may take
    (checked before tokenizing: a 10 MiB text once held the server for seconds)."""
    check_text_length(len(text), "The text to tokenize is {} characters long")


def check_text_length(characters: int, what: str) -> None:
    """``check_tokenize_length`` for a text of ``characters`` characters, known before the
    text itself is built; ``what`` says what they are (``{}``: the count)."""
    limit = active().max_tokenize_chars
    if characters > limit:
        raise ContextLengthExceeded(
            f"{what.format(characters)}; the server tokenizes at most {limit} at once "
            "(--max-tokenize-chars).")
