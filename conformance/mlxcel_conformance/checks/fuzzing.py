"""A bounded schemathesis run against openapi/: ``--fuzz-examples`` requests per operation that
the spec calls valid (every schemathesis check), then a third as many that it calls invalid.

The invalid ones test robustness everywhere: no 5xx, a documented status and error shape.
Whether they must also be *refused* (schemathesis' ``negative_data_rejection``: a 4xx or 5xx,
never a 2xx) depends on a claim, because refusing what a spec forbids is a promise of the
server that wrote the spec, not of the public APIs it implements:

- the reference claims it: its profile claims the ``openapi_strict`` extension
  (``REFUSAL_EXTENSION``), and its spec says exactly what the public contracts say where they
  speak (OpenAI's and Anthropic's published specs, Open Responses, llama-server's README);
- a peer claims nothing of the kind. Its profile does not claim the ``schema`` family, so
  these tests are UNSUPPORTED there, and a profile that claims the family (or the ``openapi``
  extension) without ``openapi_strict`` still gets the robustness pass only: accepting
  ``null`` where the reference's spec says ``boolean`` is leniency, which no public contract
  forbids, so it can never be a FAIL.

Where refusal is required it is required only of what is invalid *as sent*. The fix-ups below
keep generated requests meaningful (generation bounds, declared tool names, text parts on a
text-only model) and can repair an invalid body: each one is validated again against the spec
after them, and a body that became valid is judged as any valid request. The credentials are
never made invalid (``with_security_parameters`` off for this pass): the suite sends its own
key on every request, and what a missing or wrong key gets is the auth family's business.
Only a 2xx or 3xx counts as accepting: any 4xx or 5xx is a refusal (the robustness checks
judge its status and shape).

Generation requests are kept short: any property carrying ``x-mlxcel-fuzz-maximum`` in the spec
(``max_tokens``...) is clamped to that value before the request is sent, and a body that sets
no length gets one (``fuzz_bounds.bound_generation``).
"""

from __future__ import annotations

from typing import Any

import hypothesis
import schemathesis
from hypothesis import HealthCheck
from hypothesis.errors import Unsatisfiable
from schemathesis.checks import not_a_server_error
from schemathesis.core.failures import FailureGroup
from schemathesis.core.parameters import ParameterLocation
from schemathesis.generation import GenerationMode
from schemathesis.specs.openapi.checks import ignored_auth, negative_data_rejection

from .. import pace, spec
from ..errors import SetupError, Severity
from ..fuzz_bounds import bound_generation, clamp, fuzz_limits
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


def _function_name(holder: dict[str, Any]) -> Any:
    """``holder["function"]["name"]``, or None where either is not there: generated bodies
    put any JSON value anywhere (a number as ``function`` raised in the fuzzer itself)."""
    function = holder.get("function")
    return function.get("name") if isinstance(function, dict) else None


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
        name = _function_name(choice)
        if isinstance(name, str) and name not in [_function_name(t) for t in declared]:
            body["tools"] = [*declared, {"type": "function", "function": {"name": name}}]
    _declared_flat_choice(body, declared)
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
        if forced and isinstance(text, dict):
            text["format"] = {"type": "text"}
        else:
            text_format["schema"] = {}


# The name a fuzzed Responses or Messages tool_choice is given when it names no declared tool.
DECLARED_TOOL = "declared_tool"


def _choosable(declared: list[dict[str, Any]], kind: str) -> list[Any]:
    """The names a flat tool choice of ``kind`` may name: Responses' function tools, or
    Messages' client tools (no type, or ``custom``). A server tool's name is not one (the spec's
    AnthropicToolChoice); counting it sent a choice of ``""`` as consistent."""
    if kind == "function":
        return [t.get("name") for t in declared if t.get("type") == "function"]
    return [t.get("name") for t in declared if t.get("type", "custom") == "custom"]


def _declared_flat_choice(body: dict[str, Any], declared: list[dict[str, Any]]) -> None:
    """Responses' ``{"type": "function", "name"}`` and Messages' ``{"type": "tool", "name"}``
    must name a declared tool, and Messages' ``any`` needs one: the named tool is declared
    (as a function tool, or a client tool with an open input schema)."""
    choice = body.get("tool_choice")
    if not isinstance(choice, dict) or "function" in choice:
        return
    kind = choice.get("type")
    if kind == "any" and not declared:
        body["tool_choice"] = {"type": "auto"}
    if kind not in ("function", "tool") or choice.get("name") in _choosable(declared, kind):
        return
    choice["name"] = DECLARED_TOOL
    tool = ({"type": "function", "name": DECLARED_TOOL} if kind == "function"
            else {"name": DECLARED_TOOL, "input_schema": {"type": "object"}})
    body["tools"] = [*declared, tool]


def _history_input(path: str, body: Any) -> None:
    """A Responses ``input`` may be left out or null (OpenAI and Open Responses require no
    field) only when ``previous_response_id`` or a stored ``conversation`` supplies the
    history: server state, which the fuzzer can neither name (the id is
    ``x-mlxcel-fuzz-skip``) nor rule out (a conversation id an earlier request stored). A
    generated body gets a text input."""
    if "/responses" in path and isinstance(body, dict) and body.get("input") is None:
        body["input"] = "Say hello."


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


# Invalid requests per valid one.
NEGATIVE_SHARE = 3
# The extension a profile claims when its server refuses every request its spec calls invalid.
REFUSAL_EXTENSION = "openapi_strict"
# Refused: any 4xx or 5xx (schemathesis' default list leaves out 408, 413 and the other 4xx).
REFUSED = ["4xx", "5xx"]


def _invalid_as_sent(case: schemathesis.Case, method: str, path: str) -> bool:
    """Whether a negative case is still invalid once the fix-ups above have run: a negated
    query, path or header is left alone by them; a JSON body is validated again."""
    meta = case.meta
    if meta is None:
        return False
    negated = [loc for loc, info in meta.components.items() if info.mode.is_negative]
    if any(loc is not ParameterLocation.BODY for loc in negated):
        return True
    if not negated:
        return False
    if case.media_type != spec.JSON_MEDIA_TYPE:
        return True  # multipart or raw bodies: no fix-up touches them
    try:
        return bool(spec.validate_request_json(method, path, case.body))
    except (TypeError, ValueError):
        return True  # not a JSON document at all (random bytes)


def _summary(exc: BaseException) -> str:
    """The failure's first line, with schemathesis' check titles (``- ST201 Schema-violating
    request accepted``) and the invalid component when it names them."""
    lines = [line.strip() for line in str(exc).strip().splitlines()]
    named = [line[2:] for line in lines if line.startswith("- ST")]
    component = next((line for line in lines if line.startswith("Invalid component:")), None)
    return "; ".join([*(named or lines[:1]), *([component] if component else [])])


def _operation(target: Target, method: str, path: str, mode: GenerationMode) -> Any:
    """The operation to fuzz in ``mode``; the invalid pass never makes the credentials invalid
    (the suite sends its own key) and counts any 4xx or 5xx as a refusal."""
    schema = schemathesis.openapi.from_path(str(spec.spec_path()))
    schema.config.update(base_url=target.base_url,
                         request_timeout=pace.current().request_timeout_s)
    if mode is GenerationMode.NEGATIVE:
        schema.config.generation.update(with_security_parameters=False)
        schema.config.checks.negative_data_rejection.expected_statuses = REFUSED
    operation = schema.find_operation_by_label(f"{method} {path}")
    if operation is None:
        raise SetupError(f"{method} {path} is not in the spec")
    return operation


@check(
    "schemathesis",
    severity=Severity.HIGH,
    description="schemathesis' checks (status codes, schemas, no 5xx on generated input)",
)
def run_schemathesis(target: Target, method: str, path: str, examples: int,
                     require_refusal: bool = False, seed: int | None = None) -> None:
    """Fuzz one operation; with ``require_refusal`` (the target claims ``REFUSAL_EXTENSION``)
    every request still invalid as sent must be refused. Without ``seed`` the inputs are
    derandomized (the same on every run); a ``seed`` draws others, as reproducibly."""
    limits = fuzz_limits()
    headers = target.auth_headers

    def run(mode: GenerationMode, count: int) -> None:
        operation = _operation(target, method, path, mode)

        @hypothesis.settings(
            max_examples=count,
            deadline=None,
            derandomize=seed is None,
            database=None,
            suppress_health_check=list(HealthCheck),
            phases=[hypothesis.Phase.explicit, hypothesis.Phase.generate],
        )
        @hypothesis.given(case=operation.as_strategy(mode))
        def fuzz(case: schemathesis.Case) -> None:
            clamp(case.body, limits)
            bound_generation(case.body, method, path, limits)
            _text_only(case.body)
            _declared_choice(case.body)
            _history_input(path, case.body)
            response = case.call(headers=headers)
            if _context_exceeded(response):
                return  # a prompt over the context is a documented 400 no schema can rule out
            # A documented 501 (a capability the loaded model lacks, a route without its model)
            # is an honest answer, not a crash: the status must still be documented.
            excluded: list[Any] = [not_a_server_error] if response.status_code == 501 else []
            if not headers:
                # A server started without a key accepts any: auth is checked only with a key.
                excluded.append(ignored_auth)
            if mode is GenerationMode.NEGATIVE and not (
                    require_refusal and _invalid_as_sent(case, method, path)):
                excluded.append(negative_data_rejection)
            case.validate_response(response, headers=headers, excluded_checks=excluded)

        try:
            (fuzz if seed is None else hypothesis.seed(seed)(fuzz))()
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
            fail("schemathesis", f"{method} {path} ({data} requests): {_summary(exc)}",
                 details=str(exc)[:4000])
