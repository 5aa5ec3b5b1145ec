"""The file a multipart golden case uploads, described in the golden rather than stored in it.

A golden's ``request.multipart`` holds the form's text fields and a ``file`` spec: its
``filename`` and ``content_type``, and how to build its bytes (``wav_tone``: the suite's PCM tone
with these arguments; ``text``: these characters), optionally ``zero_pad_to`` a size. The
recorder adds the built file's ``bytes`` and ``sha256``; a replay rebuilds the file and refuses
(``SetupError``) one that no longer matches, so a changed generator asks for a re-record instead
of failing every case with a different transcript.
"""

from __future__ import annotations

import hashlib
from typing import Any

from .checks.audio import wav_clip
from .errors import SetupError


def _build(spec: dict[str, Any]) -> bytes:
    if "wav_tone" in spec:
        data = wav_clip(**spec["wav_tone"])
    elif "text" in spec:
        data = str(spec["text"]).encode()
    else:
        raise SetupError(f"upload spec {spec!r} names no content (wav_tone or text)")
    return data + b"\0" * max(0, int(spec.get("zero_pad_to", 0)) - len(data))


def upload_bytes(spec: dict[str, Any]) -> bytes:
    """The file's bytes, checked against the recorded digest when the spec holds one."""
    data = _build(spec)
    digest = hashlib.sha256(data).hexdigest()
    if spec.get("sha256", digest) != digest:
        raise SetupError(f"upload {spec.get('filename')!r} no longer builds the recorded bytes "
                         "(its generator changed): re-record the goldens")
    return data


def recorded_multipart(multipart: dict[str, Any]) -> dict[str, Any]:
    """The multipart request as a golden stores it: the file spec with its size and digest."""
    spec = {k: v for k, v in multipart["file"].items() if k not in ("bytes", "sha256")}
    data = _build(spec)
    return {**multipart, "file": {**spec, "bytes": len(data),
                                  "sha256": hashlib.sha256(data).hexdigest()}}


def multipart_request(multipart: dict[str, Any], model: str | None) -> dict[str, Any]:
    """httpx keyword arguments for the upload; ``model`` joins the fields unless one is set."""
    fields = dict(multipart.get("fields", {}))
    if model is not None:
        fields.setdefault("model", model)
    spec = multipart["file"]
    return {"data": fields,
            "files": {"file": (spec["filename"], upload_bytes(spec), spec["content_type"])}}
