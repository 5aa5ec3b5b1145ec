"""The spec in openapi/ declares every field the reference server validates in a JSON request
body, with a type and bounds the server accepts, and the server's models accept no JSON type
the spec leaves out (``null`` included: ``Omittable`` fields refuse it).

The request schemas are open (``additionalProperties: true``), so a field the spec leaves out
may hold anything: schemathesis then sends, say, ``"ignore_eos": []`` as a valid request, and
the server's 400 is a "schema-valid request rejected" failure. At 400 examples an operation it
found three (``n`` on ``/v1/responses`` and ``/v1/responses/input_tokens``, ``ignore_eos`` on
``/apply-template``). This test finds every such field at once, from the pydantic models the
routes parse with, nested models (a message, an image reference) included.
"""

from __future__ import annotations

import types
import typing
from typing import Any

import annotated_types
import pytest
from pydantic import BaseModel, Field
from pydantic.fields import FieldInfo

from mlxcel.families.anthropic.messages_wire import CountTokensRequest, MessagesRequest
from mlxcel.families.completions.completions_request import CompletionRequest
from mlxcel.families.embeddings.embeddings_request import EmbeddingsRequest, NativeEmbeddingRequest
from mlxcel.families.embeddings.rerank_models import RerankRequest
from mlxcel.families.images.image_request import ImageEditRequest, ImageRequest
from mlxcel.families.llama.infill import InfillFields
from mlxcel.families.llama.native_completion import NativeCompletionRequest
from mlxcel.families.llama.tokenize import DetokenizeRequest, TokenizeRequest
from mlxcel.families.openai_chat.chat_request import ChatCompletionRequest
from mlxcel.families.responses.compact_routes import CompactRequest
from mlxcel.families.responses.responses_wire import ResponsesRequest
from mlxcel.protocol.types import NOT_NULL, Omittable
from mlxcel_conformance import spec

# Each POST route with a JSON body and the models its handler parses it with.
ROUTES: dict[str, tuple[type[BaseModel], ...]] = {
    "/v1/chat/completions": (ChatCompletionRequest,),
    "/v1/chat/completions/input_tokens": (ChatCompletionRequest,),
    "/apply-template": (ChatCompletionRequest,),
    "/v1/completions": (CompletionRequest,),
    "/v1/responses": (ResponsesRequest,),
    "/v1/responses/input_tokens": (ResponsesRequest,),
    "/v1/responses/compact": (CompactRequest,),
    "/v1/messages": (MessagesRequest,),
    "/v1/messages/count_tokens": (CountTokensRequest,),
    "/completion": (NativeCompletionRequest,),
    "/infill": (InfillFields, NativeCompletionRequest),
    "/tokenize": (TokenizeRequest,),
    "/detokenize": (DetokenizeRequest,),
    "/v1/embeddings": (EmbeddingsRequest,),
    "/embedding": (NativeEmbeddingRequest,),
    "/v1/rerank": (RerankRequest,),
    "/v1/images/generations": (ImageRequest,),
    "/v1/images/edits": (ImageEditRequest,),
}

ANY = frozenset({"null", "boolean", "integer", "number", "string", "array", "object"})


def _schemas() -> dict[str, Any]:
    schemas: dict[str, Any] = spec.load_spec()["components"]["schemas"]
    return schemas


def _resolve(schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = _schemas()[schema["$ref"].rsplit("/", 1)[-1]]
    return schema


def _definitions(schema: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Each property's definitions, from the schema and every ``allOf`` part (a value must meet
    all of them)."""
    schema = _resolve(schema)
    found: dict[str, list[dict[str, Any]]] = {}
    for part in schema.get("allOf", []):
        for name, definitions in _definitions(part).items():
            found.setdefault(name, []).extend(definitions)
    for name, definition in schema.get("properties", {}).items():
        found.setdefault(name, []).append(_resolve(definition))
    return found


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    return {float: "number", str: "string", list: "array", dict: "object"}[type(value)]


def _spec_types(definition: dict[str, Any]) -> frozenset[str]:
    """The JSON types one definition admits (``integer`` included in ``number``)."""
    definition = _resolve(definition)
    if "type" in definition:
        declared = definition["type"]
        found = frozenset([declared] if isinstance(declared, str) else declared)
    elif "const" in definition:
        found = frozenset({_json_type(definition["const"])})
    elif "enum" in definition:
        found = frozenset(_json_type(value) for value in definition["enum"])
    elif "oneOf" in definition or "anyOf" in definition:
        branches = definition.get("oneOf") or definition.get("anyOf") or []
        found = frozenset().union(*(_spec_types(branch) for branch in branches))
    else:
        return ANY
    return found | {"integer"} if "number" in found else found


def _model_types(annotation: Any) -> frozenset[str]:
    """The JSON types a strict pydantic field of ``annotation`` accepts."""
    origin = typing.get_origin(annotation)
    if annotation is Any:
        return ANY
    if origin is typing.Annotated:
        inner, *metadata = typing.get_args(annotation)
        refused = frozenset({"null"}) if NOT_NULL in metadata else frozenset()
        return _model_types(inner) - refused
    if origin in (typing.Union, types.UnionType):
        return frozenset().union(*(_model_types(arg) for arg in typing.get_args(annotation)))
    if origin is typing.Literal:
        return frozenset(_json_type(value) for value in typing.get_args(annotation))
    if annotation is type(None):
        return frozenset({"null"})
    simple = {bool: "boolean", int: "integer", str: "string"}
    if annotation in simple:
        return frozenset({simple[annotation]})
    if annotation is float:
        return frozenset({"number", "integer"})
    if origin in (list, tuple) or annotation in (list, tuple):
        return frozenset({"array"})
    if origin is dict or annotation is dict or (
            isinstance(annotation, type) and issubclass(annotation, BaseModel)):
        return frozenset({"object"})
    raise AssertionError(f"no JSON type known for {annotation!r}")


def _bound_problems(name: str, field: FieldInfo, definitions: list[dict[str, Any]]) -> list[str]:
    """Bounds the model enforces that no definition in the spec states at least as tightly."""
    problems = []
    for bound in field.metadata:
        if isinstance(bound, (annotated_types.Ge, annotated_types.Gt)):
            limit = getattr(bound, "ge", getattr(bound, "gt", None))
            strict = isinstance(bound, annotated_types.Gt)
            if not any(d.get("minimum", float("-inf")) > limit
                       or (not strict and d.get("minimum", float("-inf")) >= limit)
                       or d.get("exclusiveMinimum", float("-inf")) >= limit
                       for d in definitions):
                problems.append(f"{name}: the server requires {'>' if strict else '>='} "
                                f"{limit}, the spec does not")
        if isinstance(bound, (annotated_types.Le, annotated_types.Lt)):
            limit = getattr(bound, "le", getattr(bound, "lt", None))
            strict = isinstance(bound, annotated_types.Lt)
            if not any(d.get("maximum", float("inf")) < limit
                       or (not strict and d.get("maximum", float("inf")) <= limit)
                       or d.get("exclusiveMaximum", float("inf")) <= limit
                       for d in definitions):
                problems.append(f"{name}: the server requires {'<' if strict else '<='} "
                                f"{limit}, the spec does not")
    return problems


def _request_schema(path: str) -> dict[str, Any]:
    operation = spec.load_spec()["paths"][path]["post"]
    schema: dict[str, Any] = operation["requestBody"]["content"]["application/json"]["schema"]
    return schema


# Fields the spec leaves out on purpose, with where it says why.
UNDECLARED = {
    # A 400 whatever its value (no Files API): the item's description says so.
    ("/v1/images/edits", "images.file_id"),
}


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """The pydantic models inside an annotation (``list[Part] | None`` -> ``[Part]``)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [model for arg in typing.get_args(annotation) for model in _models_in(arg)]


def _objects_in(definition: dict[str, Any]) -> list[dict[str, Any]]:
    """The object schemas a definition admits, through ``oneOf``, ``anyOf`` and ``items``."""
    definition = _resolve(definition)
    found = [definition] if "properties" in definition or "allOf" in definition else []
    for branch in definition.get("oneOf", []) + definition.get("anyOf", []):
        found += _objects_in(branch)
    if isinstance(definition.get("items"), dict):
        found += _objects_in(definition["items"])
    return found


def _field_problems(path: str, models: tuple[type[BaseModel], ...],
                    declared: dict[str, list[dict[str, Any]]], where: str = "",
                    reverse: bool = False) -> list[str]:
    """What the spec's ``declared`` properties miss of the models' fields, nested models
    included (checked against the object schemas the property admits)."""
    problems = []
    # the first model that declares a field is the one its route reads it with
    fields = {name: field for model in reversed(models)
              for name, field in model.model_fields.items()}
    for attribute, field in fields.items():
        name = where + (field.alias or attribute)
        # pydantic keeps an Annotated field's validators in ``metadata``
        accepted = _model_types(field.annotation) - (
            frozenset({"null"}) if NOT_NULL in field.metadata else frozenset())
        key = field.alias or attribute
        if key not in declared:
            if accepted != ANY and (path, name) not in UNDECLARED:
                problems.append(f"{name}: validated by the server, absent from the spec")
            continue
        admitted = frozenset.intersection(*(_spec_types(d) for d in declared[key]))
        if reverse:
            if where:  # a nested object's definitions are alternatives (oneOf, anyOf)
                admitted = frozenset().union(*(_spec_types(d) for d in declared[key]))
            # Any: the field's shape is checked where it is read (the fuzzing judges those)
            if _model_types(field.annotation) != ANY and not accepted <= admitted:
                problems.append(f"{name}: the server accepts {sorted(accepted - admitted)}, "
                                f"the spec admits {sorted(admitted)}")
        elif not admitted <= accepted:
            problems.append(f"{name}: the spec admits {sorted(admitted - accepted)}, "
                            f"the server accepts {sorted(accepted)}")
        if not reverse:
            problems += _bound_problems(name, field, declared[key])
        nested = _models_in(field.annotation)
        if nested:
            inner: dict[str, list[dict[str, Any]]] = {}
            for obj in (o for d in declared[key] for o in _objects_in(d)):
                for prop, definitions in _definitions(obj).items():
                    inner.setdefault(prop, []).extend(definitions)
            problems += _field_problems(path, tuple(nested), inner, f"{name}.", reverse)
    return problems


@pytest.mark.parametrize("path", sorted(ROUTES))
def test_the_spec_declares_every_field_the_server_validates(path: str) -> None:
    models = ROUTES[path]
    problems = _field_problems(path, models, _definitions(_request_schema(path)))
    names = ", ".join(model.__name__ for model in models)
    assert not problems, f"POST {path} ({names}):\n" + "\n".join(problems)


@pytest.mark.parametrize("path", sorted(ROUTES))
def test_the_server_accepts_no_type_the_spec_refuses(path: str) -> None:
    """The invalid direction: a value of a JSON type the spec leaves out (``null`` where it
    says ``string``) gets a 400, as the public API that defines the field answers."""
    models = ROUTES[path]
    problems = _field_problems(path, models, _definitions(_request_schema(path)), reverse=True)
    names = ", ".join(model.__name__ for model in models)
    assert not problems, f"POST {path} ({names}):\n" + "\n".join(problems)


class _Bounded(BaseModel):
    n: int = Field(ge=1)


def test_the_type_reading_itself() -> None:
    """The helpers read a union with bounds, a literal and a model as the server would."""
    assert _model_types(int | None) == {"integer", "null"}
    assert _model_types(typing.Literal["a", 1]) == {"string", "integer"}
    assert _model_types(float) == {"number", "integer"}
    assert _model_types(list[int] | dict[str, int]) == {"array", "object"}
    assert _model_types(Omittable[str]) == {"string"}
    assert _spec_types({"type": ["number", "null"]}) == {"number", "integer", "null"}
    assert _spec_types({"enum": ["none", "auto"]}) == {"string"}
    assert _spec_types({"description": "anything"}) == ANY
    bounded = _Bounded.model_fields["n"]
    assert _bound_problems("n", bounded, [{"type": "integer", "minimum": 1}]) == []
    assert _bound_problems("n", bounded, [{"type": "integer", "minimum": 0}]) != []
    assert _bound_problems("n", bounded, [{"type": "integer"}]) != []


def test_the_spec_lists_the_fields_messages_refuses() -> None:
    """``/v1/messages`` refuses the OpenAI-side fields (families/anthropic/foreign_fields.py):
    the spec names exactly those as ``NotAMessagesField``, so a client reading it knows."""
    from mlxcel.families.anthropic.messages_wire import FOREIGN_FIELDS

    properties = _resolve(_request_schema("/v1/messages"))["properties"]
    listed = {name for name, definition in properties.items()
              if definition.get("$ref", "").endswith("/NotAMessagesField")}
    assert listed == FOREIGN_FIELDS
