"""A bounded schemathesis run against openapi/: ``--fuzz-examples`` requests per operation that
the spec calls valid (every schemathesis check), then a third as many that it calls invalid.

The invalid ones test robustness: no 5xx, a documented status and error shape. They are not
required to be refused (schemathesis' ``negative_data_rejection`` is left out): the reference
may accept more than its spec states, e.g. ``null`` where the spec says ``boolean``.

Generation requests are kept short: any property carrying ``x-mlxcel-fuzz-maximum`` in the spec
(``max_tokens``...) is clamped to that value before the request is sent.
"""

from __future__ import annotations

from typing import Any

import hypothesis
import schemathesis
from hypothesis import HealthCheck
from hypothesis.errors import Unsatisfiable
from schemathesis.checks import not_a_server_error
from schemathesis.core.failures import FailureGroup
from schemathesis.generation import GenerationMode
from schemathesis.specs.openapi.checks import ignored_auth, negative_data_rejection

from .. import spec
from ..errors import SetupError, Severity
from ..fuzz_bounds import clamp, fuzz_limits
from ..target import Target
from .registry import check, fail

_MEDIA_PARTS = ("image_url", "video_url", "input_audio", "input_image")


def _text_only(body: Any) -> None:
    """Media parts are a documented 400 on a text-only model: fuzz them as text parts."""
    messages = body.get("messages") if isinstance(body, dict) else None
    for message in messages if isinstance(messages, list) else ():
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, list):
            continue
        for i, part in enumerate(content):
            if isinstance(part, dict) and part.get("type") in _MEDIA_PARTS:
                content[i] = {"type": "text", "text": "media"}


def _declared_choice(body: Any) -> None:
    """tool_choice rules the spec cannot express (a named function must be declared, `required`
    needs tools, a forced choice excludes a constraining response_format) are documented 400s:
    fuzz consistent requests. A generated schema is replaced by `{}` (any JSON): whether the
    grammar engine accepts an arbitrary schema is a documented 400, not a fuzz target. So are a
    tool's generated `parameters` (`input_schema` on Messages): OpenAI and Anthropic refuse a
    tool schema that is not a valid JSON Schema, which the spec's `type: object` cannot say."""
    if not isinstance(body, dict):
        return
    choice, tools = body.get("tool_choice"), body.get("tools")
    declared = [t for t in tools if isinstance(t, dict)] if isinstance(tools, list) else []
    for tool in declared:
        function = tool.get("function")
        holder: dict[str, Any] = function if isinstance(function, dict) else tool
        for key in ("parameters", "input_schema"):
            if isinstance(holder.get(key), dict):
                holder[key] = {"type": "object"}
    if choice == "required" and not declared:
        body["tool_choice"] = "auto"
    if isinstance(choice, dict):
        name = (choice.get("function") or {}).get("name")
        if isinstance(name, str) and name not in [
            (t.get("function") or {}).get("name") for t in declared
        ]:
            body["tools"] = [*declared, {"type": "function", "function": {"name": name}}]
    forced = body.get("tool_choice") == "required" or isinstance(body.get("tool_choice"), dict)
    fmt = body.get("response_format")
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
        if forced:
            body.pop("response_format")
        elif isinstance(fmt.get("json_schema"), dict):
            fmt["json_schema"]["schema"] = {}
    text = body.get("text")  # Responses: text.format carries the schema itself
    text_format = text.get("format") if isinstance(text, dict) else None
    if isinstance(text_format, dict) and text_format.get("type") == "json_schema":
        text_format["schema"] = {}


def _context_exceeded(response: Any) -> bool:
    """A 400 for a prompt over the context: OpenAI's `code`, or (Anthropic's shape has no code)
    an `invalid_request_error` whose message says so."""
    if response.status_code != 400:
        return False
    try:
        error = response.json().get("error")
    except (ValueError, AttributeError):
        return False
    if not isinstance(error, dict):
        return False
    if error.get("code") == "context_length_exceeded":
        return True
    message = str(error.get("message", ""))
    return error.get("type") == "invalid_request_error" and "context size" in message


# Invalid requests per valid one: robustness only, so fewer.
NEGATIVE_SHARE = 3


@check(
    "schemathesis",
    severity=Severity.HIGH,
    description="schemathesis' checks (status codes, schemas, no 5xx on generated input)",
)
def run_schemathesis(target: Target, method: str, path: str, examples: int) -> None:
    schema = schemathesis.openapi.from_path(str(spec.spec_path()))
    schema.config.update(base_url=target.base_url, request_timeout=60)
    operation = schema.find_operation_by_label(f"{method} {path}")
    if operation is None:
        raise SetupError(f"{method} {path} is not in the spec")
    limits = fuzz_limits()
    headers = target.auth_headers

    def run(mode: GenerationMode, count: int) -> None:
        @hypothesis.settings(
            max_examples=count,
            deadline=None,
            derandomize=True,
            database=None,
            suppress_health_check=list(HealthCheck),
            phases=[hypothesis.Phase.explicit, hypothesis.Phase.generate],
        )
        @hypothesis.given(case=operation.as_strategy(mode))
        def fuzz(case: schemathesis.Case) -> None:
            clamp(case.body, limits)
            _text_only(case.body)
            _declared_choice(case.body)
            response = case.call(headers=headers)
            if _context_exceeded(response):
                return  # a prompt over the context is a documented 400 no schema can rule out
            # A documented 501 (a capability the loaded model lacks, a route without its model)
            # is an honest answer, not a crash: the status must still be documented.
            excluded: list[Any] = [not_a_server_error] if response.status_code == 501 else []
            if not headers:
                # A server started without a key accepts any: auth is checked only with a key.
                excluded.append(ignored_auth)
            if mode is GenerationMode.NEGATIVE:
                excluded.append(negative_data_rejection)
            case.validate_response(response, headers=headers, excluded_checks=excluded)

        try:
            fuzz()
        except Unsatisfiable:
            if mode is GenerationMode.POSITIVE:
                raise
            # nothing in the operation can be made invalid (no parameters, no body)

    for mode, count, data in ((GenerationMode.POSITIVE, examples, "valid"),
                              (GenerationMode.NEGATIVE, max(1, examples // NEGATIVE_SHARE),
                               "invalid")):
        try:
            run(mode, count)
        except (AssertionError, FailureGroup) as exc:  # schemathesis' failures, reproducible
            fail(
                "schemathesis",
                f"{method} {path} ({data} requests): {str(exc).strip().splitlines()[0]}",
                details=str(exc)[:4000],
            )
