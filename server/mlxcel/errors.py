"""One error tree for the whole server.

Every error a client can see is an ``MlxcelError`` subclass carrying its HTTP status, error
``type`` and ``code``; ``api/handlers.py`` renders them in one place (OpenAI shape everywhere,
Anthropic shape on the Anthropic routes)::

    MlxcelError                      status  type
    ├── InvalidRequestError          400     invalid_request_error
    │   └── ContextLengthExceeded    400     invalid_request_error (code context_length_exceeded)
    ├── AuthenticationError          401     invalid_api_key
    │   └── MissingApiKey            401     missing_api_key
    ├── Forbidden                    403     permission_error (a browser Origin or Host refused)
    ├── RouteNotFound                404     invalid_request_error
    ├── NotFoundError                404     invalid_request_error (a stored object)
    ├── MethodNotAllowed             405     invalid_request_error
    ├── RequestTimeout               408     request_timeout (the body stopped arriving)
    ├── RequestTooLarge              413     request_too_large
    ├── UnsupportedMediaType         415     invalid_request_error (a JSON-only route's body)
    ├── ServerError                  500     server_error
    ├── NotImplementedRoute          501     not_implemented
    ├── NotSupported                 501     not_supported_error
    ├── ServerBusy                   503     server_busy
    │   ├── QueueFull                503     server_busy (529 overloaded_error on Anthropic routes)
    │   └── ModelLoading             503     server_busy
    └── WorkerTimeout                504     timeout_error (a single-worker route's deadline)

Nothing outside this tree becomes a 4xx: an unexpected exception is a 500 ``server_error``.
"""

from __future__ import annotations

from typing import Any


class MlxcelError(Exception):
    """Base of every client-visible error."""

    status: int = 500
    type: str = "server_error"
    code: str | int | None = None

    def __init__(
        self,
        message: str,
        *,
        param: str | None = None,
        code: str | int | None = None,
        type: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.param = param
        if code is not None:
            self.code = code
        if type is not None:
            self.type = type

    def to_openai(self) -> dict[str, Any]:
        return {
            "error": {
                "message": self.message,
                "type": self.type,
                "param": self.param,
                "code": self.code,
            }
        }


class InvalidRequestError(MlxcelError):
    status = 400
    type = "invalid_request_error"


class ContextLengthExceeded(InvalidRequestError):
    """The prompt does not fit the context. ``n_prompt_tokens`` and ``n_ctx``, when known, are
    what llama-server reports with its ``exceed_context_size_error``."""

    code = "context_length_exceeded"

    def __init__(self, message: str, *, param: str | None = None,
                 n_prompt_tokens: int | None = None, n_ctx: int | None = None) -> None:
        super().__init__(message, param=param)
        self.n_prompt_tokens = n_prompt_tokens
        self.n_ctx = n_ctx


class AuthenticationError(MlxcelError):
    status = 401
    type = "invalid_api_key"
    code = "invalid_api_key"


class MissingApiKey(AuthenticationError):
    type = "missing_api_key"
    code = "missing_api_key"


class Forbidden(MlxcelError):
    """A request refused for where it comes from: a browser page's Origin, or a Host name a
    loopback server does not answer to (DNS rebinding)."""

    status = 403
    type = "permission_error"
    code = "forbidden"


class RouteNotFound(MlxcelError):
    status = 404
    type = "invalid_request_error"
    code = "not_found"


class NotFoundError(MlxcelError):
    """A stored object (a response by id) that does not exist or has expired."""

    status = 404
    type = "invalid_request_error"
    code = "not_found"


class MethodNotAllowed(MlxcelError):
    status = 405
    type = "invalid_request_error"
    code = "method_not_allowed"


class RequestTimeout(MlxcelError):
    status = 408
    type = "request_timeout"
    code = "request_timeout"


class RequestTooLarge(MlxcelError):
    status = 413
    type = "request_too_large"
    code = "request_too_large"


class UnsupportedMediaType(MlxcelError):
    status = 415
    type = "invalid_request_error"
    code = "unsupported_media_type"


class ServerError(MlxcelError):
    status = 500
    type = "server_error"


class NotImplementedRoute(MlxcelError):
    status = 501
    type = "not_implemented"


class NotSupported(MlxcelError):
    status = 501
    type = "not_supported_error"


class ServerBusy(MlxcelError):
    status = 503
    type = "server_busy"


class QueueFull(ServerBusy):
    """Admission control refused the request: the prefill queue is full (a family's error
    shape may answer it with its own status: Anthropic's routes say 529)."""


class ModelLoading(ServerBusy):
    def __init__(self) -> None:
        super().__init__("The model is still loading. Please try again later.")


class WorkerTimeout(MlxcelError):
    """A request to a single-worker backend (audio) that did not finish within its timeout."""

    status = 504
    type = "timeout_error"
    code = "timeout"
