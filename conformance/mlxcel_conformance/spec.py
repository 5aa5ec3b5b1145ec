"""The mlxcel OpenAPI document: find it, load it once, list its operations, validate bodies.

Validation is JSON Schema 2020-12 with the whole document registered via `referencing`, so
`#/components/...` references resolve. Two views of one document: ``reference`` (as written:
what mlxcel serves) and ``contract`` (the default: what a public contract requires). A schema
marked ``x-mlxcel-extension: true`` is an mlxcel extension: in the contract view its own
``required`` list is dropped and, as a property, it is no longer required by its parent; its
types still apply where the key is sent. Streams are described per SSE event by `itemSchema`;
`contentSchema` is only an annotation in 2020-12, so `validate_sse_event` decodes `data` itself.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path
from typing import Any
from urllib.parse import quote

import yaml
from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError, best_match
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

__all__ = [
    "SPEC_URI", "Operation", "load_spec", "operations", "response_schema", "spec_path",
    "sse_terminator", "validate_json", "validate_request_json", "validate_sse_event",
]  # fmt: skip

#: Base URI the document is registered under (never fetched).
SPEC_URI = "https://mlxcel.invalid/openapi/openapi.yaml"
CONTRACT, REFERENCE = "contract", "reference"
EXTENSION_KEY = "x-mlxcel-extension"
HTTP_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
JSON_MEDIA_TYPE = "application/json"
SSE_MEDIA_TYPE = "text/event-stream"
_MAX_MESSAGE = 400
#: Errors a caller leaves to another check: called with the error and the validated instance
#: (a body, or one event's decoded data), true to drop the error.
Ignore = Callable[[ValidationError, Any], bool]


@dataclass(frozen=True)
class Operation:
    """One documented operation."""

    method: str  # upper case, e.g. "POST"
    path: str  # path template as written in the document
    operation_id: str
    family: str  # value of `x-mlxcel-family`
    statuses: tuple[str, ...]  # documented response statuses, as written ("200", "4XX", "default")


def _candidate_paths() -> list[Path]:
    here = Path(__file__).resolve()
    return [here.parent / "_data/openapi/openapi.yaml", here.parents[2] / "openapi/openapi.yaml"]


def _setup_error(message: str) -> Exception:
    from mlxcel_conformance.errors import SetupError  # imported lazily: only needed on failure

    return SetupError(message)


def spec_path() -> Path:
    """The spec shipped with the package, else the one in the source checkout."""
    candidates = _candidate_paths()
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    tried = ", ".join(str(c) for c in candidates)
    raise _setup_error(f"OpenAPI spec not found (looked for {tried})")


# libyaml's loader where PyYAML was built with it: the spec's 200 kB parse in a quarter of the
# pure-Python loader's time, paid by every suite process at collection.
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@cache
def _load(path: Path) -> dict[str, Any]:
    try:
        document = yaml.load(path.read_text(encoding="utf-8"), Loader=_SAFE_LOADER)
    except (OSError, yaml.YAMLError) as exc:
        raise _setup_error(f"cannot read OpenAPI spec {path}: {exc}") from exc
    if not isinstance(document, dict) or not isinstance(document.get("paths"), dict):
        raise _setup_error(f"{path} is not an OpenAPI document (no `paths` mapping)")
    return document


def load_spec() -> dict[str, Any]:
    """The parsed document, loaded once per process. Treat it as read-only."""
    return _load(spec_path())


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def _at(pointer: str) -> Any:
    node: Any = load_spec()
    for token in pointer.split("/")[1:]:
        token = token.replace("~1", "/").replace("~0", "~")
        node = node[int(token)] if isinstance(node, list) else node[token]
    return node


def _deref(pointer: str) -> tuple[str, Any]:
    """Follow local `$ref`s from `pointer`; return the final pointer and node."""
    node = _at(pointer)
    seen = {pointer}
    while isinstance(node, dict) and isinstance(node.get("$ref"), str):
        ref = node["$ref"]
        if not ref.startswith("#"):
            raise _setup_error(f"only local references are supported, got {ref!r}")
        pointer = ref[1:]
        if pointer in seen:
            raise _setup_error(f"reference cycle at {ref!r}")
        seen.add(pointer)
        node = _at(pointer)
    return pointer, node


def _path_regex(template: str) -> re.Pattern[str]:
    parts = re.split(r"(\{[^}/]+\})", template)
    body = "".join("[^/]+" if p.startswith("{") else re.escape(p) for p in parts)
    return re.compile(f"^{body}$")


def _find_operation(method: str, path: str) -> tuple[str, dict[str, Any]] | None:
    """(pointer to the operation, operation); exact template first, then templated paths."""
    paths: dict[str, Any] = load_spec()["paths"]
    method = method.lower()
    matches = [path] if path in paths else [t for t in paths if _path_regex(t).match(path)]
    for template in matches:
        item = paths[template]
        if isinstance(item, dict) and isinstance(item.get(method), dict):
            return f"/paths/{_escape(template)}/{method}", item[method]
    return None


def operations() -> list[Operation]:
    """Every operation in document order."""
    result = []
    for template, item in load_spec()["paths"].items():
        for method in HTTP_METHODS:
            op = item.get(method) if isinstance(item, dict) else None
            if isinstance(op, dict):
                result.append(
                    Operation(
                        method=method.upper(),
                        path=template,
                        operation_id=str(op.get("operationId", "")),
                        family=str(op.get("x-mlxcel-family", "")),
                        statuses=tuple(str(s) for s in op.get("responses", {})),
                    )
                )
    return result


def _response_pointer(op_pointer: str, op: dict[str, Any], status: int | str) -> str | None:
    responses = {str(k): v for k, v in op.get("responses", {}).items()}
    code = str(status)
    for key in (code, f"{code[:1]}XX", "default"):
        if key in responses:
            return _deref(f"{op_pointer}/responses/{_escape(key)}")[0]
    return None


def _media_pointer(response_pointer: str, content_type: str) -> str | None:
    content = _at(response_pointer).get("content") or {}
    wanted = content_type.split(";")[0].strip().lower()
    for key in (wanted, wanted.split("/")[0] + "/*", "*/*"):
        if key in content:
            return f"{response_pointer}/content/{_escape(key)}"
    return None


def _schema_pointer(method: str, path: str, status: int | str, content_type: str) -> str | None:
    found = _find_operation(method, path)
    if found is None:
        return None
    response = _response_pointer(*found, status)
    media = None if response is None else _media_pointer(response, content_type)
    if media is None:
        return None
    media_object = _at(media)
    key = "itemSchema" if "itemSchema" in media_object else "schema"
    return f"{media}/{key}" if key in media_object else None


def response_schema(
    method: str, path: str, status: int | str, content_type: str
) -> dict[str, Any] | None:
    """The documented schema (one event's `itemSchema` for event streams), top-level `$ref`s
    followed; nested `$ref`s point into `load_spec()`. None when undocumented."""
    pointer = _schema_pointer(method, path, status, content_type)
    if pointer is None:
        return None
    schema = _deref(pointer)[1]
    return schema if isinstance(schema, dict) else None


def contract_view(node: Any) -> Any:
    """A copy of ``node`` with every ``x-mlxcel-extension`` requirement removed."""
    if isinstance(node, list):
        return [contract_view(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: contract_view(value) for key, value in node.items()}
    if out.get(EXTENSION_KEY) is True:
        out.pop("required", None)
    properties = node.get("properties")
    if isinstance(properties, dict) and isinstance(out.get("required"), list):
        flagged = {name for name, prop in properties.items()
                   if isinstance(prop, dict) and prop.get(EXTENSION_KEY) is True}
        out["required"] = [name for name in out["required"] if name not in flagged]
    return out


@lru_cache(maxsize=2)
def _registry(view: str = CONTRACT) -> Registry[Any]:
    document = load_spec() if view == REFERENCE else contract_view(load_spec())
    resource = Resource.from_contents(document, default_specification=DRAFT202012)
    return Registry().with_resource(SPEC_URI, resource)


@cache
def _validator(pointer: str, view: str = CONTRACT) -> Draft202012Validator:
    ref = f"{SPEC_URI}#{quote(pointer, safe='/~')}"
    return Draft202012Validator({"$ref": ref}, registry=_registry(view))


def _describe(error: ValidationError) -> str:
    location = "/" + "/".join(str(p) for p in error.absolute_path)
    message = error.message
    if error.context:
        message += f" ({_closest(error).message})"
    if len(message) > _MAX_MESSAGE:
        message = message[: _MAX_MESSAGE - 3] + "..."
    return f"{location}: {message}"


def _closest(error: ValidationError) -> ValidationError:
    """Why an object matched none of the ``oneOf``/``anyOf`` branches: the errors of the one
    branch whose ``type`` it has (a thinking block lacking ``signature`` is about the thinking
    branch, not the text one), else jsonschema's best match."""
    branches: dict[Any, list[ValidationError]] = {}
    for sub in error.context or ():
        branches.setdefault(sub.relative_schema_path[0] if sub.relative_schema_path else None,
                            []).append(sub)
    typed = [errors for errors in branches.values()
             if not any(list(e.relative_path) == ["type"] for e in errors)]
    return best_match(typed[0] if len(typed) == 1 else list(error.context or ()))


def _errors(pointer: str, instance: Any, view: str = CONTRACT,
            ignore: Ignore | None = None) -> list[str]:
    found = sorted(_validator(pointer, view).iter_errors(instance),
                   key=lambda e: list(map(str, e.path)))
    return [_describe(e) for e in found if ignore is None or not ignore(e, instance)]


def validate_json(method: str, path: str, status: int | str, body: Any,
                  view: str = CONTRACT, ignore: Ignore | None = None) -> list[str]:
    """Validate a decoded JSON response body in ``view``; an empty list means valid (errors
    ``ignore`` drops do not count)."""
    where = f"{method.upper()} {path}"
    found = _find_operation(method, path)
    if found is None:
        return [f"{where} is not documented"]
    response = _response_pointer(*found, status)
    if response is None:
        documented = ", ".join(str(s) for s in found[1].get("responses", {}))
        return [f"status {status} is not documented for {where} (documented: {documented})"]
    pointer = _schema_pointer(method, path, status, JSON_MEDIA_TYPE)
    if pointer is None:
        return [f"{where} documents no {JSON_MEDIA_TYPE} body for status {status}"]
    return _errors(pointer, body, view, ignore)


def validate_request_json(method: str, path: str, body: Any) -> list[str]:
    """Validate a JSON request body against the operation's request schema."""
    where = f"{method.upper()} {path}"
    found = _find_operation(method, path)
    if found is None:
        return [f"{where} is not documented"]
    if "requestBody" not in found[1]:
        return [f"{where} documents no request body"]
    media = _media_pointer(_deref(f"{found[0]}/requestBody")[0], JSON_MEDIA_TYPE)
    if media is None or "schema" not in _at(media):
        return [f"{where} documents no {JSON_MEDIA_TYPE} request body"]
    return _errors(f"{media}/schema", body, REFERENCE)


def request_schema(method: str, path: str) -> dict[str, Any] | None:
    """The operation's JSON request-body schema, references followed; None without one."""
    found = _find_operation(method, path)
    if found is None or "requestBody" not in found[1]:
        return None
    media = _media_pointer(_deref(f"{found[0]}/requestBody")[0], JSON_MEDIA_TYPE)
    if media is None or "schema" not in _at(media):
        return None
    schema = _deref(f"{media}/schema")[1]
    return schema if isinstance(schema, dict) else None


def resolved(node: Any) -> Any:
    """``node`` with a local ``$ref`` at its top followed (one level of the document)."""
    if isinstance(node, dict) and isinstance(node.get("$ref"), str) and \
            node["$ref"].startswith("#"):
        return _deref(node["$ref"][1:])[1]
    return node


def _stream_media(method: str, path: str) -> str | None:
    found = _find_operation(method, path)
    if found is None:
        return None
    statuses = [str(s) for s in found[1].get("responses", {})]
    for status in sorted(s for s in statuses if s.startswith("2")):
        response = _response_pointer(*found, status)
        media = None if response is None else _media_pointer(response, SSE_MEDIA_TYPE)
        if media is not None and "itemSchema" in _at(media):
            return media
    return None


def sse_terminator(method: str, path: str) -> str | None:
    """The `x-sse-terminator` of the operation's success event stream, if any."""
    media = _stream_media(method, path)
    value = None if media is None else _at(media).get("x-sse-terminator")
    return value if isinstance(value, str) else None


def validate_sse_event(method: str, path: str, data: str, event: str | None = None,
                       view: str = CONTRACT, ignore: Ignore | None = None) -> list[str]:
    """Validate one SSE event (its `data`, and its `event:` name when it has one) of the
    success stream in ``view``; an empty list means valid."""
    media = _stream_media(method, path)
    if media is None:
        return [f"{method.upper()} {path} documents no {SSE_MEDIA_TYPE} itemSchema"]
    item_pointer = f"{media}/itemSchema"
    item = {"data": data} if event is None else {"data": data, "event": event}
    structural = _errors(item_pointer, item, view)
    if structural:
        return structural
    data_pointer, data_schema = _deref(_deref(item_pointer)[0] + "/properties/data")
    branches = [data_pointer]
    for keyword in ("anyOf", "oneOf"):
        if isinstance(data_schema, dict) and isinstance(data_schema.get(keyword), list):
            branches = [f"{data_pointer}/{keyword}/{i}" for i in range(len(data_schema[keyword]))]
    problems: list[str] = []
    for branch_pointer in branches:
        branch_pointer, branch = _deref(branch_pointer)
        if isinstance(branch, dict) and "contentSchema" in branch:
            try:
                payload = json.loads(data)
            except ValueError as exc:
                problems.append(f"data is not JSON: {exc}")
                continue
            errors = _errors(f"{branch_pointer}/contentSchema", payload, view, ignore)
            if not errors:
                return []
            problems.extend(errors)
        elif not _errors(branch_pointer, data, view):
            return []
    return problems or [f"data {data[:80]!r} matches none of the documented forms"]
