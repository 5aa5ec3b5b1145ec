"""llama-server's native embedding and rerank paths answer in its error shape
(``protocol/llama_server_errors.py``); OpenAI's ``/v1/embeddings`` and the ``/v1/rerank``
routes keep the OpenAI shape."""

from __future__ import annotations

from ...error_shapes import ErrorShape
from ...protocol.llama_server_errors import llama_server_error

LLAMA_SERVER_PATHS = frozenset({"/embedding", "/embeddings", "/rerank", "/reranking"})
EMBEDDINGS_ERROR_SHAPE = ErrorShape(LLAMA_SERVER_PATHS, llama_server_error)
