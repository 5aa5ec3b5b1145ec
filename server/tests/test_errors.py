"""``errors.py``: each class carries the status, type and code its docstring tree draws."""

from __future__ import annotations

import pytest

from mlxcel import errors
from mlxcel.errors import (
    AuthenticationError,
    ContextLengthExceeded,
    Forbidden,
    InvalidRequestError,
    MethodNotAllowed,
    MissingApiKey,
    MlxcelError,
    ModelLoading,
    NotFoundError,
    NotImplementedRoute,
    NotSupported,
    QueueFull,
    RequestTimeout,
    RequestTooLarge,
    RouteNotFound,
    ServerBusy,
    ServerError,
    UnsupportedMediaType,
    WorkerTimeout,
)

# class, parent, status, type, code
TREE: list[tuple[type[MlxcelError], type[Exception], int, str, str | None]] = [
    (MlxcelError, Exception, 500, "server_error", None),
    (InvalidRequestError, MlxcelError, 400, "invalid_request_error", None),
    (ContextLengthExceeded, InvalidRequestError, 400, "invalid_request_error",
     "context_length_exceeded"),
    (AuthenticationError, MlxcelError, 401, "invalid_api_key", "invalid_api_key"),
    (MissingApiKey, AuthenticationError, 401, "missing_api_key", "missing_api_key"),
    (Forbidden, MlxcelError, 403, "permission_error", "forbidden"),
    (RouteNotFound, MlxcelError, 404, "invalid_request_error", "not_found"),
    (NotFoundError, MlxcelError, 404, "invalid_request_error", "not_found"),
    (MethodNotAllowed, MlxcelError, 405, "invalid_request_error", "method_not_allowed"),
    (RequestTimeout, MlxcelError, 408, "request_timeout", "request_timeout"),
    (RequestTooLarge, MlxcelError, 413, "request_too_large", "request_too_large"),
    (UnsupportedMediaType, MlxcelError, 415, "invalid_request_error",
     "unsupported_media_type"),
    (ServerError, MlxcelError, 500, "server_error", None),
    (NotImplementedRoute, MlxcelError, 501, "not_implemented", None),
    (NotSupported, MlxcelError, 501, "not_supported_error", None),
    (ServerBusy, MlxcelError, 503, "server_busy", None),
    (QueueFull, ServerBusy, 503, "server_busy", None),
    (ModelLoading, ServerBusy, 503, "server_busy", None),
    (WorkerTimeout, MlxcelError, 504, "timeout_error", "timeout"),
]


def make(cls: type[MlxcelError]) -> MlxcelError:
    return cls() if cls is ModelLoading else cls("boom")


@pytest.mark.parametrize(("cls", "parent", "status", "type_", "code"), TREE)
def test_class_attributes_match_the_tree(
    cls: type[MlxcelError], parent: type[Exception], status: int, type_: str, code: str | None
) -> None:
    assert cls.__bases__ == (parent,)
    error = make(cls)
    assert (error.status, error.type, error.code, error.param) == (status, type_, code, None)


def test_every_error_class_is_in_the_tree_and_the_docstring() -> None:
    declared = {
        obj for obj in vars(errors).values()
        if isinstance(obj, type) and issubclass(obj, MlxcelError)
    }
    assert declared == {row[0] for row in TREE}
    # The drawn branches ("├── Name   status  type"); the root is the table's header.
    drawn = {
        line.split("── ")[1].split()[0]: line.split("── ")[1].split()[1]
        for line in (errors.__doc__ or "").splitlines()
        if "── " in line
    }
    statuses = {cls.__name__: str(status) for cls, _, status, _, _ in TREE}
    assert {name: statuses.get(name) for name in drawn} == drawn
    # MissingApiKey is drawn only as AuthenticationError's "missing_api_key" type.
    assert set(statuses) - set(drawn) <= {"MlxcelError", "MissingApiKey"}


@pytest.mark.parametrize(("cls", "parent", "status", "type_", "code"), TREE)
def test_to_openai_shape(
    cls: type[MlxcelError], parent: type[Exception], status: int, type_: str, code: str | None
) -> None:
    error = make(cls)
    body = error.to_openai()
    assert list(body) == ["error"]
    assert body["error"] == {"message": error.message, "type": type_, "param": None, "code": code}
    assert body["error"]["message"] == str(error)


def test_param_code_and_type_overrides_stay_on_the_instance() -> None:
    error = InvalidRequestError("bad", param="messages.0", code="custom", type="other_type")
    assert error.to_openai() == {
        "error": {"message": "bad", "type": "other_type", "param": "messages.0", "code": "custom"}
    }
    assert InvalidRequestError.code is None
    assert InvalidRequestError.type == "invalid_request_error"
    assert InvalidRequestError("x").to_openai()["error"]["code"] is None


def test_model_loading_message() -> None:
    assert "loading" in ModelLoading().message


def test_only_a_full_queue_has_its_own_anthropic_status() -> None:
    from mlxcel.families.anthropic.errors import anthropic_error, anthropic_status

    assert anthropic_error(QueueFull("busy")) == (
        {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}, 529)
    assert anthropic_status(ServerBusy("busy")) == 503
    assert anthropic_status(InvalidRequestError("bad")) == 400


def test_error_shapes_are_chosen_by_path_and_claimed_once() -> None:
    from mlxcel import error_shapes
    from mlxcel.app import mount_families
    from mlxcel.families.anthropic.errors import ANTHROPIC_ERROR_SHAPE

    mount_families()  # registers every family's error shape
    error = QueueFull("busy")
    assert error_shapes.render_error(error, "/v1/messages")[1] == 529
    assert error_shapes.render_error(error, "/v1/chat/completions") == (error.to_openai(), 503)
    assert error_shapes.render_error(error, "/completion")[0]["error"]["code"] == 503
    with pytest.raises(ValueError, match="two error shapes claim /"):
        error_shapes.register(error_shapes.ErrorShape(
            ANTHROPIC_ERROR_SHAPE.paths, lambda e: ({}, e.status)))
