"""Checks on image input (the `vision` family: image parts on chat, Responses and Messages).

Not to be confused with the `images` family, which covers image *generation* routes
(/v1/images/*). Test images are made here (solid-colour PNGs, no imaging library), so the
suite runs against any server without extra dependencies.
"""

from __future__ import annotations

import base64
import struct
import zlib
from typing import Any

from mlxcel_conformance.checks.registry import check, fail
from mlxcel_conformance.errors import Severity


def solid_png(rgb: tuple[int, int, int], size: int = 56) -> bytes:
    """A ``size`` x ``size`` RGB PNG of one colour."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))

    row = b"\x00" + bytes(rgb) * size
    header = struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(row * size)) + chunk(b"IEND", b""))


def png_data_uri(rgb: tuple[int, int, int], size: int = 56) -> str:
    return "data:image/png;base64," + base64.b64encode(solid_png(rgb, size)).decode()


@check("vision_pixels_reach_model", severity=Severity.HIGH,
       description="Two different images with the same prompt give different greedy answers: "
       "the pixels reach the model")
def check_pixels_reach_model(answers: dict[str, str]) -> None:
    if len(set(answers.values())) < len(answers):
        fail("vision_pixels_reach_model",
             "different images gave the same greedy answer: the image did not reach the model",
             answers=answers)


@check("vision_families_agree", severity=Severity.MEDIUM,
       description="One image and prompt give the same greedy text on chat image_url, Responses "
       "input_image and Anthropic image blocks")
def check_families_agree(texts: dict[str, str]) -> None:
    if len(set(texts.values())) != 1:
        fail("vision_families_agree", "the three API families answered the same image "
             "differently", texts=texts)


@check("vision_local_path_refused", severity=Severity.CRITICAL,
       description="A local image path outside the server's allowed directories (../ traversal, "
       "system files) is refused with a 4xx error body, never read")
def check_local_path_refused(status: int, body: Any, url: str) -> None:
    if not 400 <= status < 500:
        fail("vision_local_path_refused", f"a local path outside any allowed root answered "
             f"HTTP {status}", url=url, body=str(body)[:300])
    if not isinstance(body, dict) or "error" not in body:
        fail("vision_local_path_refused", "the refusal must carry an error body", url=url,
             body=str(body)[:300])


@check("vision_probe", severity=Severity.HIGH,
       description="A valid PNG image part is either read (200) or refused with an error body "
       "(the loaded model reads no images); nothing else")
def check_image_probe(status: int, body: Any) -> bool:
    """True when the server's model reads images. Any error answer in an error shape means it
    does not: 400 (the reference), or llama-server's 500 without an mmproj; whether that
    status is right is `chat.errors.image_text_only`'s verdict, not the capability's."""
    if status == 200:
        return True
    if status >= 400 and isinstance(body, dict) and ("error" in body or "detail" in body):
        return False
    fail("vision_probe", f"a valid PNG image part answered HTTP {status}", body=str(body)[:300])


def check_image_not_a_server_error(path: str, status: int, body: Any) -> None:
    """An image a client sent is never the server's error, whether its model reads images or
    not (RFC 9110, 15.5 and 15.6): judged under ``no_server_error`` on every family."""
    if status >= 500:
        fail("no_server_error", f"POST {path} with a valid PNG image answered HTTP {status}",
             status=status, body=body,
             defect=f"no_server_error: a valid PNG image answered HTTP {status}")
