"""Binary response bodies in goldens (speech audio): kept as a digest, never as the bytes.

A body served as audio, an image, video or ``application/octet-stream`` is recorded as
``body_binary: {"sha256": ..., "length": ...}`` beside the transcript's ``content_type``: the
golden stays small and readable, and a changed byte still shows. Exact mode compares the digest
and the length; shape mode only that a binary body came (the content type is compared for every
transcript).
"""

from __future__ import annotations

import hashlib
from typing import Any

BINARY_PREFIXES = ("audio/", "image/", "video/")


def is_binary(content_type: str) -> bool:
    return content_type.startswith(BINARY_PREFIXES) or content_type == "application/octet-stream"


def binary_summary(content: bytes) -> dict[str, Any]:
    return {"sha256": hashlib.sha256(content).hexdigest(), "length": len(content)}


def compare_binary(expected: dict[str, Any], got: dict[str, Any], mode: str) -> list[str]:
    """``expected`` is a golden's ``body_binary``; ``got`` the whole replayed transcript."""
    have = got.get("body_binary")
    if have is None:
        return ["body_binary: expected a binary body, got "
                f"{'text' if 'body_text' in got else 'JSON'}"]
    if mode != "exact":
        return []
    return [f"body_binary.{key}: expected {expected[key]}, got {have.get(key)}"
            for key in ("length", "sha256") if expected[key] != have.get(key)]
