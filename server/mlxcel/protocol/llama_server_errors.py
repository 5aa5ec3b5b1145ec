"""llama-server's error body: ``{"error": {"code": <HTTP status>, "message": ..., "type": ...}}``
with llama-server's error types (its README, "API errors"; the types are those its server
answers with for each status). A prompt over the context is ``exceed_context_size_error`` with
``n_prompt_tokens`` and ``n_ctx``.

Every family that serves one of llama-server's native paths claims it with this renderer
(``error_shapes.ErrorShape``); the OpenAI-compatible routes keep the OpenAI shape.
"""

from __future__ import annotations

from typing import Any

from ..errors import ContextLengthExceeded, MlxcelError

LLAMA_SERVER_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    500: "server_error",
    501: "not_supported_error",
    503: "unavailable_error",
}


def llama_server_error_body(error: MlxcelError) -> dict[str, Any]:
    body: dict[str, Any] = {
        "code": error.status,
        "message": error.message,
        "type": LLAMA_SERVER_TYPES.get(error.status, error.type),
    }
    if isinstance(error, ContextLengthExceeded):
        body["type"] = "exceed_context_size_error"
        if error.n_prompt_tokens is not None and error.n_ctx is not None:
            body.update(n_prompt_tokens=error.n_prompt_tokens, n_ctx=error.n_ctx)
    return {"error": body}


def llama_server_error(error: MlxcelError) -> tuple[dict[str, Any], int]:
    """An ``error_shapes.Render``: the body and its HTTP status."""
    return llama_server_error_body(error), error.status
