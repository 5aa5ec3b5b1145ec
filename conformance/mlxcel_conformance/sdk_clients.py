"""The official OpenAI SDK as the suite's round trips drive it: strict response validation on
(openai-python's ``OpenAI(_strict_response_validation=True)``, src/openai/_client.py in
https://github.com/openai/openai-python), so an answer missing a field the SDK's types require
fails, except where today's SDK requires a key that the real service's own recorded answers lack.

openai-python 3.x requires ``usage.input_tokens_details.cache_write_tokens`` on a Response, and
no Response the real API sent in ``fixtures/real-streams/`` carries it: an answer that lacks only
such keys is what the real service sends, so it is read leniently instead of failing
(``conformance/tests/test_sdk_clients.py`` keeps the list honest against the recordings).
"""

from __future__ import annotations

from typing import Any

import openai
import pydantic
from openai._models import construct_type

from . import pace
from .checks.responses_body import RESPONSE_LACKS_KEYS
from .defects import wrong_object
from .target import Target

# Keys the SDK's types require that no real recording of the object carries.
UNRECORDED_REQUIRED = frozenset({"cache_write_tokens"})


def matching_branch(found: list[Any]) -> list[Any]:
    """A validation error's items less those of union branches refused for their ``type``
    literal (the other event or block kinds): what the object the server sent lacks."""
    refused = [tuple(e["loc"][:-1]) for e in found
               if e["type"] == "literal_error" and len(e["loc"]) > 1 and e["loc"][-1] == "type"]
    kept = [e for e in found
            if not any(tuple(e["loc"][:len(prefix)]) == prefix for prefix in refused)]
    return kept or found


def refused(error: BaseException | None) -> list[Any]:
    """What a validation error refused in the object the server sent, less the keys the real
    service does not send either."""
    if not isinstance(error, pydantic.ValidationError):
        return []
    return [e for e in matching_branch(error.errors())
            if not (e["type"] == "missing" and e["loc"] and e["loc"][-1] in UNRECORDED_REQUIRED)]


def schema_form(error: BaseException | None) -> str | None:
    """The finding of a validation error that refused one field, in the words the suite's
    schema check uses for it (``schema: /object: 'chat.completion.chunk' was expected``,
    ``schema: /content_block: 'input' is a required property``): an SDK round trip that met
    the defect a route's schema check found counts with it (``defects.py``). None for any
    other error, or one that refused several fields."""
    found = refused(error)
    if isinstance(error, pydantic.ValidationError) and error.title == "Response" and found and \
            all(e["type"] == "missing" for e in found):
        return RESPONSE_LACKS_KEYS
    if len(found) != 1 or found[0]["type"] not in ("literal_error", "missing"):
        return None
    # a union's member names (RawContentBlockStartEvent, ToolUseBlock) are no part of the path
    path = [str(part) for part in found[0]["loc"]
            if not (isinstance(part, str) and part[:1].isupper())]
    if not path:
        return None
    if found[0]["type"] == "literal_error":
        finding = f"/{'/'.join(path)}: {found[0]['ctx']['expected']} was expected"
        return wrong_object(finding, found[0].get("input")) or f"schema: {finding}"
    return f"schema: /{'/'.join(path[:-1])}: '{path[-1]}' is a required property"


def only_unrecorded(error: BaseException | None) -> bool:
    """Whether a validation error is only about keys the real service does not send."""
    return isinstance(error, pydantic.ValidationError) and bool(error.errors()) \
        and not refused(error)


class _Tolerant:
    def _process_response_data(self, *, data: object, cast_to: Any, response: Any) -> Any:
        try:
            return super()._process_response_data(  # type: ignore[misc]
                data=data, cast_to=cast_to, response=response)
        except openai.APIResponseValidationError as exc:
            if not only_unrecorded(exc.__cause__):
                raise
        return construct_type(type_=cast_to, value=data)


class StrictOpenAI(_Tolerant, openai.OpenAI):
    """``openai.OpenAI`` with strict response validation, less the unrecorded keys."""


class StrictAsyncOpenAI(_Tolerant, openai.AsyncOpenAI):
    """``openai.AsyncOpenAI`` likewise."""


def openai_client(target: Target) -> openai.OpenAI:
    return StrictOpenAI(base_url=f"{target.base_url}/v1", api_key=target.api_key or "none",
                        max_retries=0, timeout=pace.current().request_timeout_s,
                        _strict_response_validation=True)


def async_openai_client(target: Target) -> openai.AsyncOpenAI:
    return StrictAsyncOpenAI(base_url=f"{target.base_url}/v1",
                             api_key=target.api_key or "none", max_retries=0,
                             timeout=pace.current().request_timeout_s,
                             _strict_response_validation=True)
