"""Checks on the legacy OpenAI Completions API (`/v1/completions`): the `text_completion` body
and its stream. Usage and logprobs accounting are shared with chat (`openai_common`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mlxcel_conformance.checks.openai_common import is_int, validate_usage
from mlxcel_conformance.checks.registry import check, fail
from mlxcel_conformance.errors import Severity

FINISH_REASONS = frozenset({"stop", "length", "content_filter"})
_LEGACY_LOGPROBS_KEYS = ("tokens", "token_logprobs", "top_logprobs", "text_offset")


def _check_identity(name: str, payload: Mapping[str, Any], **where: Any) -> None:
    if payload.get("object") != "text_completion":
        fail(
            name,
            f"object is {payload.get('object')!r}, not 'text_completion'",
            payload=payload,
            **where,
        )
    ok = (
        isinstance(payload.get("id"), str)
        and bool(payload["id"])
        and is_int(payload.get("created"))
        and isinstance(payload.get("model"), str)
    )
    if not ok:
        fail(
            name,
            "id must be a non-empty string, created an integer, model a string",
            payload=payload,
            **where,
        )


def _check_legacy_logprobs(name: str, logprobs: Any, **where: Any) -> None:
    if logprobs is None:
        return
    if not isinstance(logprobs, dict) or not all(k in logprobs for k in _LEGACY_LOGPROBS_KEYS):
        fail(
            name,
            f"logprobs must be null or an object with {list(_LEGACY_LOGPROBS_KEYS)}",
            logprobs=logprobs,
            **where,
        )
    lengths = {k: len(logprobs[k]) for k in _LEGACY_LOGPROBS_KEYS if isinstance(logprobs[k], list)}
    if len(set(lengths.values())) > 1:
        fail(name, f"logprobs arrays differ in length {lengths}", logprobs=logprobs, **where)


@check(
    "completion_body",
    severity=Severity.HIGH,
    description="non-streaming text_completion body: fields, choices[].text, finish_reason, usage",
)
def check_completion_body(body: Mapping[str, Any]) -> Mapping[str, Any]:
    name = "completion_body"
    if not isinstance(body, Mapping):
        fail(name, "the body is not a JSON object", body=body)
    _check_identity(name, body)
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices:
        fail(name, "choices is not a non-empty list", body=body)
    for position, choice in enumerate(choices):
        if not isinstance(choice, dict) or choice.get("index") != position:
            fail(name, f"choices[{position}] has index != {position}", choice=choice)
        if not isinstance(choice.get("text"), str):
            fail(name, f"choices[{position}].text is not a string", choice=choice)
        if choice.get("finish_reason") not in FINISH_REASONS:
            fail(
                name,
                f"choices[{position}].finish_reason {choice.get('finish_reason')!r} "
                f"is not one of {sorted(FINISH_REASONS)}",
                choice=choice,
            )
        if "logprobs" not in choice:
            fail(
                name,
                f"choices[{position}] lacks the `logprobs` key (null is fine)",
                severity=Severity.MEDIUM,
                choice=choice,
            )
        _check_legacy_logprobs(name, choice["logprobs"], choice=position)
    if body.get("usage") is not None:
        validate_usage(name, body["usage"])
    return body


@check(
    "completion_chunk_order",
    severity=Severity.CRITICAL,
    description="text_completion stream: one identity, per choice text deltas then one finish",
)
def check_completion_chunk_order(chunks: Sequence[Mapping[str, Any]]) -> dict[int, str]:
    """Return the finish_reason of each choice index; a usage chunk (`choices: []`) is held to
    the identity of every chunk (object, id, model) and has no choice to judge."""
    name = "completion_chunk_order"
    if not chunks:
        fail(name, "the stream has no chunks")
    # One completion: one id and model. Unlike the chat chunk's ("Each chunk has the same
    # timestamp"), the Completions reference does not pin `created` across chunks, and
    # llama-server stamps each chunk with its own second.
    identity = {key: chunks[0].get(key) for key in ("id", "model")}
    finished: dict[int, str] = {}
    seen: set[int] = set()
    for index, chunk in enumerate(chunks):
        _check_identity(name, chunk, index=index)
        changed = sorted(k for k, v in identity.items() if chunk.get(k) != v)
        if changed:
            fail(name, f"chunk {index} changes {changed} within one stream", chunk=chunk)
        choices = chunk.get("choices")
        if not isinstance(choices, list):
            fail(name, f"chunk {index} has no `choices` list", chunk=chunk)
        for choice in choices:
            number = choice.get("index") if isinstance(choice, dict) else None
            if not is_int(number) or not isinstance(choice.get("text"), str):
                fail(
                    name,
                    f"chunk {index}: a choice needs an integer index and a text string",
                    chunk=chunk,
                )
            if number in finished:
                fail(
                    name,
                    f"chunk {index}: choice {number} continues after its finish chunk",
                    chunk=chunk,
                )
            seen.add(number)
            _check_legacy_logprobs(name, choice.get("logprobs"), index=index)
            reason = choice.get("finish_reason")
            if reason is None:
                continue
            if reason not in FINISH_REASONS:
                fail(name, f"chunk {index}: finish_reason {reason!r} is invalid", chunk=chunk)
            finished[number] = reason
    if seen != set(range(len(seen))):
        fail(name, f"choice indexes {sorted(seen)} are not 0..n-1")
    unfinished = sorted(seen - set(finished))
    if unfinished:
        fail(name, f"choice(s) {unfinished} never received a finish_reason", last_chunk=chunks[-1])
    return finished
