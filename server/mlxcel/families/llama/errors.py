"""The paths of llama-server's native API this family serves answer in llama-server's error
shape (``protocol/llama_server_errors.py``). The native paths other families serve
(``/embedding``, ``/rerank``, ``/apply-template``) are claimed by those families."""

from __future__ import annotations

from ...error_shapes import ErrorShape
from ...protocol.llama_server_errors import llama_server_error

LLAMA_PATHS = frozenset({
    "/completion", "/completions", "/infill", "/tokenize", "/detokenize", "/props", "/slots",
})
LLAMA_ERROR_SHAPE = ErrorShape(LLAMA_PATHS, llama_server_error)
