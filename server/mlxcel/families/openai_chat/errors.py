"""llama-server's ``/apply-template``, which this family serves (it parses a Chat Completions
body), answers in llama-server's error shape (``protocol/llama_server_errors.py``); the chat
routes keep the OpenAI shape."""

from __future__ import annotations

from ...error_shapes import ErrorShape
from ...protocol.llama_server_errors import llama_server_error

APPLY_TEMPLATE_ERROR_SHAPE = ErrorShape(frozenset({"/apply-template"}), llama_server_error)
