"""The size bounds OpenAI documents on request fields that the server stores or echoes, shared
by every family that accepts the field.

- ``metadata``: at most 16 pairs, keys at most 64 characters, values at most 512 (OpenAI's
  OpenAPI document, ``components/schemas/Metadata``: "Set of 16 key-value pairs ... Keys are
  strings with a maximum length of 64 characters. Values are strings with a maximum length of
  512 characters"; https://github.com/openai/openai-openapi, ``openapi.yaml``).
- ``safety_identifier``: at most 64 characters (same document,
  ``ModelResponseProperties.safety_identifier``, ``maxLength: 64``).
- ``top_logprobs``: 0 to 20 (same document, "An integer between 0 and 20").
- ``user`` and ``prompt_cache_key``: OpenAI states no length; mlxcel bounds them at
  ``IDENTIFIER_CHARS`` (``openapi/openapi.yaml``) so that a stored or echoed identifier stays
  small.

Each bound is checked before the value is walked (a 40,000-pair ``metadata`` is refused on its
count), and a value past it is a 400 naming the field.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, Field

from .types import Int

METADATA_PAIRS = 16
METADATA_KEY_CHARS = 64
METADATA_VALUE_CHARS = 512
SAFETY_IDENTIFIER_CHARS = 64
IDENTIFIER_CHARS = 512
TOP_LOGPROBS_MAX = 20


def metadata_problem(value: Any) -> str | None:
    """Why ``value`` is not a metadata object within OpenAI's bounds (None when it is)."""
    if not isinstance(value, dict):
        return None  # the field's type check words that refusal
    if len(value) > METADATA_PAIRS:
        return f"metadata has {len(value)} pairs; at most {METADATA_PAIRS} are allowed"
    for key, item in value.items():
        if len(key) > METADATA_KEY_CHARS:
            return (f"metadata key {key[:20]!r}... has {len(key)} characters; at most "
                    f"{METADATA_KEY_CHARS} are allowed")
        if not isinstance(item, str):
            return f"metadata value of {key[:64]!r} must be a string"
        if len(item) > METADATA_VALUE_CHARS:
            return (f"metadata value of {key[:64]!r} has {len(item)} characters; at most "
                    f"{METADATA_VALUE_CHARS} are allowed")
    return None


def _bounded_metadata(value: Any) -> Any:
    problem = metadata_problem(value)
    if problem:
        raise ValueError(problem)
    return value


def _at_most(chars: int) -> BeforeValidator:
    def check(value: Any) -> Any:
        if isinstance(value, str) and len(value) > chars:
            raise ValueError(f"{len(value)} characters; at most {chars} are allowed")
        return value

    return BeforeValidator(check)


Metadata = Annotated[dict[str, str], BeforeValidator(_bounded_metadata)]
Identifier = Annotated[str, _at_most(IDENTIFIER_CHARS)]
SafetyIdentifier = Annotated[str, _at_most(SAFETY_IDENTIFIER_CHARS)]
TopLogprobs = Annotated[Int, Field(ge=0, le=TOP_LOGPROBS_MAX)]
