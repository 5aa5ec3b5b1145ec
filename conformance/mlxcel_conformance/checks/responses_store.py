"""Checks of what a Responses server keeps: the status a stored response reaches after its
streaming client left, stored responses and conversations across a hard restart, and the
bounds OpenAI documents on the request fields a response stores and echoes.

The bounds (OpenAI's OpenAPI document, https://github.com/openai/openai-openapi,
``openapi.yaml``): ``Metadata`` is "Set of 16 key-value pairs", keys "a maximum length of 64
characters", values "a maximum length of 512 characters"; ``safety_identifier`` has
``maxLength: 64``; ``top_logprobs`` is "An integer between 0 and 20". They bind clients: a
server must serve a request at the bounds and echo what it stored, and must not fail (5xx)
past them, but refusing past them is required by no public text, so the 400 naming the field
is the reference's own promise (extension ``field_limits``).
"""

from __future__ import annotations

from typing import Any

from mlxcel_conformance.checks.registry import check, fail

# OpenAI's Response.status values; every one but in_progress and queued is final.
FINAL_STATUSES = frozenset({"completed", "incomplete", "cancelled", "failed"})
METADATA_PAIRS, METADATA_KEY_CHARS, METADATA_VALUE_CHARS = 16, 64, 512
SAFETY_IDENTIFIER_CHARS, TOP_LOGPROBS_MAX = 64, 20
# The reference's own bound on identifiers OpenAI leaves unbounded (openapi/openapi.yaml).
IDENTIFIER_CHARS = 512


def metadata_at_the_bounds() -> dict[str, str]:
    """16 pairs, every key 64 characters and every value 512."""
    return {f"k{i:02d}".ljust(METADATA_KEY_CHARS, "x"): "v" * METADATA_VALUE_CHARS
            for i in range(METADATA_PAIRS)}


# (field, a value just past its bound): what the checks send; the last two bounds are the
# reference's own.
PAST_THE_BOUNDS: tuple[tuple[str, Any], ...] = (
    ("metadata", {f"k{i}": "v" for i in range(METADATA_PAIRS + 1)}),
    ("metadata", {"k" * (METADATA_KEY_CHARS + 1): "v"}),
    ("metadata", {"k": "v" * (METADATA_VALUE_CHARS + 1)}),
    ("safety_identifier", "s" * (SAFETY_IDENTIFIER_CHARS + 1)),
    ("top_logprobs", TOP_LOGPROBS_MAX + 1),
    ("user", "u" * (IDENTIFIER_CHARS + 1)),
    ("prompt_cache_key", "p" * (IDENTIFIER_CHARS + 1)),
)


@check("response_final_after_disconnect")
def check_final_after_disconnect(body: Any, waited_s: float) -> str:
    """A stored response whose streaming client left reaches a final status."""
    status = body.get("status") if isinstance(body, dict) else None
    if status not in FINAL_STATUSES:
        fail("response_final_after_disconnect",
             f"the stored response still reads {status!r} {waited_s:.1f} s after its client "
             "left; a response must end completed, incomplete, cancelled or failed",
             status=status, waited_s=round(waited_s, 2))
    return str(status)


@check("response_cancelled_promptly")
def check_cancelled_promptly(body: dict[str, Any], waited_s: float, bound_s: float) -> None:
    """The reference's promise: within ``bound_s``, cancelled or incomplete, with the text
    generated before the client left."""
    status = body.get("status")
    if status not in ("cancelled", "incomplete") or waited_s > bound_s:
        fail("response_cancelled_promptly",
             f"the stored response read {status!r} {waited_s:.2f} s after its client left; "
             f"expected cancelled or incomplete within {bound_s:.0f} s",
             status=status, waited_s=round(waited_s, 2))
    texts = [part.get("text") for item in body.get("output") or [] if isinstance(item, dict)
             for part in item.get("content") or [] if isinstance(part, dict)]
    if not any(isinstance(text, str) and text for text in texts):
        fail("response_cancelled_promptly",
             "the cancelled response keeps none of the text streamed before the client left",
             output=body.get("output"))


@check("stored_response_survives_restart")
def check_survives_restart(before: dict[str, Any], after: Any,
                           counts_before: tuple[int | str, ...],
                           counts_after: tuple[int | str, ...]) -> None:
    """A stored response, and what previous_response_id and a conversation continue, are the
    same after the server was killed and started again."""
    if after != before:
        fail("stored_response_survives_restart",
             "GET of a response stored before the restart differs from it (or is gone)",
             before_id=before.get("id"), after=after if not isinstance(after, dict) else
             {k: after.get(k) for k in ("id", "status", "error")})
    if counts_after != counts_before:
        fail("stored_response_survives_restart",
             "the input a previous_response_id / conversation follow-up continues changed "
             "across the restart (input_tokens before and after)",
             before=counts_before, after=counts_after)


@check("field_limits_within")
def check_within_limits(status: int, body: Any, sent: dict[str, Any]) -> None:
    """A request at OpenAI's documented bounds is served, and the Response echoes the stored
    fields as sent."""
    if status != 200 or not isinstance(body, dict):
        fail("field_limits_within", f"a request at OpenAI's documented bounds got HTTP {status}",
             status=status, sent_fields=sorted(sent))
    for key, value in sent.items():
        if key in body and body[key] != value:
            fail("field_limits_within", f"the Response echoes {key} other than it was sent",
                 field=key)


@check("field_limits_no_server_error")
def check_no_server_error(status: int, field: str) -> None:
    """Past a documented bound the server answers (a 4xx, or a lenient 2xx), never a 5xx."""
    if status >= 500:
        fail("field_limits_no_server_error",
             f"{field} past OpenAI's documented bound got HTTP {status}: a client error is a "
             "4xx, and a lenient server serves it", field=field, status=status)


@check("field_limits_refused")
def check_refused(status: int, error: Any, field: str) -> None:
    """The reference refuses a field past its bound with a 400 whose ``param`` names it."""
    param = (error.get("error") or {}).get("param") if isinstance(error, dict) else None
    if status != 400 or param != field:
        fail("field_limits_refused", f"{field} past its bound got HTTP {status} (param "
             f"{param!r}); expected 400 naming {field!r}", field=field, status=status,
             param=param)
