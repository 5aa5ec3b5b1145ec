"""The one place errors become HTTP responses."""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from ..errors import InvalidRequestError, MethodNotAllowed, MlxcelError, RouteNotFound, ServerError
from ..protocol.llama_errors import LLAMA_NATIVE_PATHS, llama_error_body

log = logging.getLogger("mlxcel.api")


# Anthropic's routes answer in Anthropic's error shape, with its error type for each status.
ANTHROPIC_PATHS = frozenset(
    {"/v1/messages", "/messages", "/v1/messages/count_tokens", "/messages/count_tokens"}
)
ANTHROPIC_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    405: "invalid_request_error",
    408: "timeout_error",
    413: "request_too_large",
    429: "rate_limit_error",
    503: "overloaded_error",
    529: "overloaded_error",
}


def anthropic_error_body(error: MlxcelError, status: int | None = None) -> dict[str, object]:
    kind = ANTHROPIC_TYPES.get(status or error.status, "api_error")
    return {"type": "error", "error": {"type": kind, "message": error.message}}


def error_response(error: MlxcelError, path: str = "") -> JSONResponse:
    # ``path`` lets a family (e.g. Anthropic's /v1/messages) choose its own error shape.
    if path in ANTHROPIC_PATHS:
        status = error.anthropic_status or error.status
        return JSONResponse(anthropic_error_body(error, status), status_code=status)
    if path in LLAMA_NATIVE_PATHS:
        return JSONResponse(llama_error_body(error), status_code=error.status)
    return JSONResponse(error.to_openai(), status_code=error.status)


async def _on_mlxcel_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, MlxcelError)
    return error_response(exc, request.url.path)


async def _on_http_exception(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    where = f"{request.method} {request.url.path}"
    error: MlxcelError
    if exc.status_code == 404:
        error = RouteNotFound(f"Invalid URL ({where})")
    elif exc.status_code == 405:
        error = MethodNotAllowed(f"Method not allowed ({where})")
    elif exc.status_code < 500:
        error = InvalidRequestError(str(exc.detail))
        error.status = exc.status_code
    else:
        error = ServerError(str(exc.detail))
    response = error_response(error, request.url.path)
    if exc.headers:
        response.headers.update(exc.headers)
    return response


async def _on_validation_error(request: Request, exc: Exception) -> JSONResponse:
    return error_response(InvalidRequestError(f"Invalid request: {exc}"), request.url.path)


async def _on_unexpected(request: Request, exc: Exception) -> JSONResponse:
    log.exception("unhandled error on %s %s", request.method, request.url.path)
    return error_response(ServerError("Internal server error."), request.url.path)


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(MlxcelError, _on_mlxcel_error)
    app.add_exception_handler(StarletteHTTPException, _on_http_exception)
    app.add_exception_handler(RequestValidationError, _on_validation_error)
    app.add_exception_handler(Exception, _on_unexpected)
