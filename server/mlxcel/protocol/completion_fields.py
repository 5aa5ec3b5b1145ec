"""Fields the completion-shaped bodies share (OpenAI's chat and legacy completions, llama-server's
native ``/completion``): the request id and the finish reason."""

from __future__ import annotations

import uuid

from ..generation import Finished


def new_id(prefix: str) -> str:
    """``prefix`` and 24 random hex digits (``chatcmpl-…``, ``cmpl-…``)."""
    return prefix + uuid.uuid4().hex[:24]


def finish_reason_of(finished: Finished) -> str:
    return "length" if finished.reason == "length" else "stop"
