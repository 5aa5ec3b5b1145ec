"""llama-server's error shape, used on its native routes: ``{"error": {"code": <HTTP status>,
"message": ..., "type": ...}}`` with llama-server's error types (its README, "API errors"; the
types are those its server answers with for each status). A prompt over the context is
``exceed_context_size_error`` with ``n_prompt_tokens`` and ``n_ctx``.

The OpenAI-compatible routes keep the OpenAI shape (a string ``code`` and ``param``).
"""

from __future__ import annotations

from typing import Any

from ...error_shapes import ErrorShape
from ...errors import ContextLengthExceeded, MlxcelError

# The routes llama-server serves outside its OpenAI and Anthropic families.
LLAMA_NATIVE_PATHS = frozenset({
    "/completion", "/completions", "/infill", "/tokenize", "/detokenize", "/apply-template",
    "/embedding", "/embeddings", "/rerank", "/reranking", "/props", "/slots",
})
LLAMA_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    500: "server_error",
    501: "not_supported_error",
    503: "unavailable_error",
}


def llama_error_body(error: MlxcelError) -> dict[str, Any]:
    body: dict[str, Any] = {
        "code": error.status,
        "message": error.message,
        "type": LLAMA_TYPES.get(error.status, error.type),
    }
    if isinstance(error, ContextLengthExceeded):
        body["type"] = "exceed_context_size_error"
        if error.n_prompt_tokens is not None and error.n_ctx is not None:
            body.update(n_prompt_tokens=error.n_prompt_tokens, n_ctx=error.n_ctx)
    return {"error": body}


def llama_error(error: MlxcelError) -> tuple[dict[str, Any], int]:
    return llama_error_body(error), error.status


LLAMA_ERROR_SHAPE = ErrorShape(LLAMA_NATIVE_PATHS, llama_error)
