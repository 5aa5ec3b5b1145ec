"""Checks that a server honours mlx-lm's documented chat request fields (mlx-lm's SERVER.md):
integer ``logprobs``, ``logit_bias``, ``repetition_penalty`` with its window, the penalty
window fields and ``draft_model: null`` accepted, and ``adapters`` confined to an allowlist.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mlxcel_conformance.checks.registry import check, fail
from mlxcel_conformance.errors import Severity


@check("mlx_lm_integer_logprobs", severity=Severity.MEDIUM,
       description="mlx-lm's integer `logprobs: N` (1..10) returns N top tokens per output token")
def check_integer_logprobs(status: int, entries: Sequence[Mapping[str, Any]], count: int) -> None:
    name = "mlx_lm_integer_logprobs"
    if status != 200:
        fail(name, f"HTTP {status} for logprobs={count}, the integer form mlx-lm documents",
             status=status)
    if not entries:
        fail(name, "no logprobs.content entries for an integer logprobs request")
    for index, entry in enumerate(entries):
        top = entry.get("top_logprobs")
        if not isinstance(top, list) or len(top) != count:
            got = len(top) if isinstance(top, list) else top
            fail(name, f"entry {index} has {got} top_logprobs, expected {count}", entry=entry)


@check("mlx_lm_fields_accepted", severity=Severity.MEDIUM,
       description="mlx-lm's documented optional fields with valid values are accepted (200)")
def check_fields_accepted(status: int, fields: Mapping[str, Any], body: Any = None) -> None:
    if status != 200:
        fail("mlx_lm_fields_accepted", f"HTTP {status} for mlx-lm's documented fields",
             fields=dict(fields), body=body)


@check("mlx_lm_fields_neutral", severity=Severity.MEDIUM,
       description="fields that select nothing (`draft_model: null`, penalty windows without "
       "a penalty) leave greedy output unchanged")
def check_fields_neutral(plain: str, with_fields: str, fields: Mapping[str, Any]) -> None:
    if plain != with_fields:
        fail("mlx_lm_fields_neutral", "greedy output changed", fields=dict(fields),
             plain=plain, with_fields=with_fields)


@check("mlx_lm_repetition_window", severity=Severity.MEDIUM,
       description="`repetition_penalty` changes greedy output, and `repetition_context_size` "
       "decides how far back it looks")
def check_repetition_window(plain: str, wide: str, narrow: str) -> None:
    name = "mlx_lm_repetition_window"
    if wide == plain:
        fail(name, "a strong repetition_penalty over a wide window left greedy output unchanged",
             plain=plain)
    if narrow == wide:
        fail(name, "repetition_context_size had no effect: a 1-token window gave the output "
             "of a wide one", output=wide)


def is_repetition(text: str) -> bool:
    """Whether ``text`` is one unit repeated at least once (``"!!!!"``, ``"abab"``)."""
    return len(text) > 1 and (text + text).find(text, 1) < len(text)


@check("mlx_lm_logit_bias", severity=Severity.MEDIUM,
       description="a +100 `logit_bias` on one token id makes greedy decoding repeat that token")
def check_logit_bias(plain: str, biased: str) -> None:
    if biased == plain:
        fail("mlx_lm_logit_bias", "logit_bias left greedy output unchanged", output=plain)
    if not is_repetition(biased):
        fail("mlx_lm_logit_bias", "the biased output is not one token repeated", output=biased)


@check("adapter_path_refused", severity=Severity.HIGH,
       description="an `adapters` path outside the server's allowlist (`..`, absolute) is "
       "refused with 400, never loaded")
def check_adapter_refused(status: int, value: str, body: Any) -> None:
    if status != 400:
        fail("adapter_path_refused", f"HTTP {status} for adapters={value!r}: a path outside "
             "the allowlist must be refused with 400", body=body)
