"""The one place errors become HTTP responses."""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import Receive, Scope, Send

from ..error_shapes import render_error
from ..errors import InvalidRequestError, MethodNotAllowed, MlxcelError, RouteNotFound, ServerError

log = logging.getLogger("mlxcel.api")


def error_response(error: MlxcelError, path: str = "") -> JSONResponse:
    # ``path`` picks the shape: a family registered for it (error_shapes.py), else OpenAI's.
    body, status = render_error(error, path)
    return JSONResponse(body, status_code=status)


async def refuse(error: MlxcelError, scope: Scope, receive: Receive, send: Send) -> None:
    """Answer a request a middleware refuses before any route runs: the family's error body,
    or for a WebSocket handshake a close before accepting it, which the server sends as an
    HTTP 403 (ASGI 3.0's WebSocket ``close`` event: a refused handshake)."""
    if scope["type"] == "websocket":
        # a close frame's reason is at most 123 bytes (RFC 6455 section 5.5)
        reason = str(error).encode()[:120].decode(errors="ignore")
        await send({"type": "websocket.close", "code": 1008, "reason": reason})
        return
    await error_response(error, scope["path"])(scope, receive, send)


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
    response = error_response(ServerError("Internal server error."), request.url.path)
    # Starlette re-raises the error after this response, and uvicorn then closes the
    # connection: say so, as RFC 9112 section 9.6 asks of a server that will close.
    response.headers["Connection"] = "close"
    return response


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(MlxcelError, _on_mlxcel_error)
    app.add_exception_handler(StarletteHTTPException, _on_http_exception)
    app.add_exception_handler(RequestValidationError, _on_validation_error)
    app.add_exception_handler(Exception, _on_unexpected)
