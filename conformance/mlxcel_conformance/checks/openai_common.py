"""Properties shared by the OpenAI chat and legacy completions APIs: usage accounting on bodies
and streams, and the shape of token logprobs (also used by Responses `output_text` deltas).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeGuard

from mlxcel_conformance.checks.registry import check, fail
from mlxcel_conformance.errors import Severity

USAGE_FIELDS = ("prompt_tokens", "completion_tokens", "total_tokens")


def is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def validate_usage(name: str, usage: Any, **where: Any) -> dict[str, Any]:
    """Fail check `name` unless `usage` has consistent non-negative integer token counts."""
    if not isinstance(usage, dict):
        fail(name, f"usage is {type(usage).__name__}, not an object", usage=usage, **where)
    for key in USAGE_FIELDS:
        if not is_int(usage.get(key)) or usage[key] < 0:
            fail(name, f"usage.{key} is not an integer >= 0", usage=usage, **where)
    for key, details in usage.items():
        if key.endswith("_details") and isinstance(details, dict):
            bad = {k: v for k, v in details.items() if v is not None and not (is_int(v) and v >= 0)}
            if bad:
                fail(name, f"usage.{key} holds non-integer counts {bad}", usage=usage, **where)
    if usage["prompt_tokens"] + usage["completion_tokens"] != usage["total_tokens"]:
        fail(name, "usage: prompt_tokens + completion_tokens != total_tokens", usage=usage, **where)
    return usage


def _usage_chunks(chunks: Sequence[Mapping[str, Any]]) -> list[int]:
    return [i for i, chunk in enumerate(chunks) if chunk.get("usage") is not None]


# One defect in every form: usage sent on a chunk that has choices (the finish chunk), whether
# usage was asked for or not, beside a usage chunk or instead of it (defects.py).
USAGE_ON_CHOICES = "usage_chunk_last: usage rides on a chunk that has choices"


def _on_choices(chunks: Sequence[Mapping[str, Any]], indexes: Sequence[int]) -> str | None:
    return USAGE_ON_CHOICES if any(chunks[i].get("choices") for i in indexes) else None


@check(
    "usage_chunk_last",
    severity=Severity.HIGH,
    description="include_usage: exactly one final `choices: []` chunk carries consistent usage",
)
def check_usage_chunk_last(chunks: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Return the usage object of the final chunk."""
    found = _usage_chunks(chunks)
    if not found:
        fail(
            "usage_chunk_last",
            "usage was requested (stream_options.include_usage) but no chunk carries it",
            last_chunk=chunks[-1] if chunks else None,
        )
    if len(found) > 1:
        fail(
            "usage_chunk_last",
            f"{len(found)} chunks carry usage; only the final one may (others: absent or null)",
            indexes=found,
            defect=_on_choices(chunks, found[:-1]),
        )
    index = found[0]
    if index != len(chunks) - 1:
        fail(
            "usage_chunk_last",
            f"the usage chunk is chunk {index} of {len(chunks)}, not the last before [DONE]",
            index=index,
            next_chunk=chunks[index + 1],
        )
    chunk = chunks[index]
    if chunk.get("choices") != []:
        fail(
            "usage_chunk_last",
            "the usage chunk must have `choices: []`",
            defect=USAGE_ON_CHOICES,
            index=index,
            chunk=chunk,
        )
    return validate_usage("usage_chunk_last", chunk["usage"], index=index)


@check(
    "no_usage_chunk",
    severity=Severity.LOW,
    description="without include_usage, no chunk carries a usage object",
)
def check_no_usage_chunk(chunks: Sequence[Mapping[str, Any]]) -> None:
    found = _usage_chunks(chunks)
    if found:
        fail(
            "no_usage_chunk",
            "usage was not requested but chunk(s) carry a non-null usage",
            indexes=found,
            chunk=chunks[found[0]],
            defect=_on_choices(chunks, found),
        )


def _check_logprob_item(item: Any, where: str) -> None:
    if not isinstance(item, dict):
        fail("logprobs_shape", f"{where} is not an object", item=item)
    if not isinstance(item.get("token"), str):
        fail("logprobs_shape", f"{where}.token is not a string", item=item)
    logprob = item.get("logprob")
    if not is_number(logprob) or logprob > 0:
        fail("logprobs_shape", f"{where}.logprob is not a number <= 0", item=item)
    byte_values = item.get("bytes")
    if byte_values is not None and not (
        isinstance(byte_values, list) and all(is_int(b) and 0 <= b <= 255 for b in byte_values)
    ):
        fail(
            "logprobs_shape", f"{where}.bytes is neither null nor a list of byte values", item=item
        )


@check(
    "logprobs_shape",
    severity=Severity.MEDIUM,
    description="logprobs entries: token, logprob <= 0, bytes, top_logprobs sorted descending",
)
def check_logprobs_shape(
    entries: Sequence[Any], *, top_logprobs: int | None = None
) -> list[dict[str, Any]]:
    """Check OpenAI token logprob entries (chat `logprobs.content`, Responses `logprobs`)."""
    for index, entry in enumerate(entries):
        where = f"entry {index}"
        _check_logprob_item(entry, where)
        top = entry.get("top_logprobs")
        if not isinstance(top, list):
            fail("logprobs_shape", f"{where}.top_logprobs is not a list", entry=entry)
        for rank, alternative in enumerate(top):
            _check_logprob_item(alternative, f"{where}.top_logprobs[{rank}]")
        values = [alternative["logprob"] for alternative in top]
        if values != sorted(values, reverse=True):
            fail("logprobs_shape", f"{where}.top_logprobs is not sorted by logprob", entry=entry)
        if top_logprobs is not None and len(top) != top_logprobs:
            fail(
                "logprobs_shape",
                f"{where} has {len(top)} top_logprobs, {top_logprobs} were requested",
                entry=entry,
            )
    return list(entries)


def chat_logprobs_entries(source: Mapping[str, Any] | Sequence[Mapping[str, Any]]) -> list[Any]:
    """Collect `logprobs.content` entries from a chat.completion body or a list of chunks."""
    payloads = [source] if isinstance(source, Mapping) else list(source)
    entries: list[Any] = []
    for payload in payloads:
        for choice in payload.get("choices") or []:
            logprobs = choice.get("logprobs") if isinstance(choice, dict) else None
            if isinstance(logprobs, dict):
                entries.extend(logprobs.get("content") or [])
    return entries
