"""Checks on the image generation bodies (the `images` family: /v1/images/generations and
/edits in mlxcel's documented shape). A PNG is read from its own header here (no imaging
library), so the suite runs against any server without extra dependencies.
"""

from __future__ import annotations

import base64
import binascii
import struct
from typing import Any

from mlxcel_conformance.checks.openai_common import is_int
from mlxcel_conformance.checks.registry import check, fail
from mlxcel_conformance.errors import Severity

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
IMAGE_FIELDS = ("b64_json", "mime_type", "width", "height", "seed", "revised_prompt")
SEED_SPACE = 2**32


def png_size(data: bytes) -> tuple[int, int] | None:
    """(width, height) from a PNG's IHDR chunk, or None when ``data`` is no PNG."""
    if len(data) < 24 or not data.startswith(PNG_SIGNATURE) or data[12:16] != b"IHDR":
        return None
    width, height = struct.unpack(">II", data[16:24])
    return int(width), int(height)


def _png(name: str, item: dict[str, Any]) -> bytes:
    try:
        return base64.b64decode(item["b64_json"], validate=True)
    except (binascii.Error, ValueError, TypeError):
        fail(name, "b64_json is not valid base64", b64_json=str(item.get("b64_json"))[:80])


@check("image_generation_body", severity=Severity.HIGH,
       description="An image answer holds created, output_format png, size and one entry per "
       "image: b64_json decoding to a PNG of the asked size, mime_type, width, height, seed "
       "(seed + i for image i of a request with a seed) and revised_prompt")
def check_image_body(body: Any, *, n: int, width: int, height: int, prompt: str,
                     seed: int | None = None) -> list[bytes]:
    """The decoded PNGs, in order."""
    name = "image_generation_body"
    if not isinstance(body, dict):
        fail(name, "the body must be a JSON object", body=body)
    if not is_int(body.get("created")) or body.get("output_format") != "png":
        fail(name, "created must be an integer and output_format 'png'",
             created=body.get("created"), output_format=body.get("output_format"))
    if body.get("size") != f"{width}x{height}":
        fail(name, f"size must be {width}x{height}", got=body.get("size"))
    data = body.get("data")
    if not isinstance(data, list) or len(data) != n:
        fail(name, f"data must hold {n} image(s)", got=data if not isinstance(data, list)
             else len(data))
    pngs = []
    for index, item in enumerate(data):
        missing = [f for f in IMAGE_FIELDS if not isinstance(item, dict) or f not in item]
        if missing:
            fail(name, f"image {index} lacks {missing}")
        if (item["mime_type"], item["width"], item["height"]) != ("image/png", width, height):
            fail(name, f"image {index}: mime_type image/png, width {width}, height {height}",
                 got={k: item[k] for k in ("mime_type", "width", "height")})
        if not is_int(item["seed"]) or not 0 <= item["seed"] < SEED_SPACE:
            fail(name, f"image {index}: seed must be an integer in [0, 2^32)", got=item["seed"])
        if seed is not None and item["seed"] != (seed + index) % SEED_SPACE:
            fail(name, f"image {index} must report seed {seed} + {index} (modulo 2^32)",
                 got=item["seed"])
        if item["revised_prompt"] != prompt:
            fail(name, f"image {index}: revised_prompt must be the prompt as drawn",
                 got=item["revised_prompt"], prompt=prompt)
        png = _png(name, item)
        if png_size(png) != (width, height):
            fail(name, f"image {index} must decode to a {width}x{height} PNG",
                 got=png_size(png), head=png[:16].hex())
        pngs.append(png)
    return pngs


@check("image_seed_determinism", severity=Severity.HIGH,
       description="One prompt and seed give the same PNG bytes again; another seed gives "
       "another image")
def check_seed_determinism(first: bytes, again: bytes, other_seed: bytes) -> None:
    if first != again:
        fail("image_seed_determinism", "the same prompt and seed gave different bytes")
    if other_seed == first:
        fail("image_seed_determinism", "another seed gave the same image")


@check("image_n_seeds", severity=Severity.MEDIUM,
       description="The n images of one request differ, and each is the image its reported "
       "seed draws alone")
def check_n_seeds(pngs: list[bytes], seeds: list[int], alone: dict[int, bytes]) -> None:
    name = "image_n_seeds"
    if len(set(pngs)) != len(pngs):
        fail(name, "the n images are not all different")
    for index, (png, seed) in enumerate(zip(pngs, seeds, strict=True)):
        if seed in alone and alone[seed] != png:
            fail(name, f"image {index} is not the image its seed {seed} draws alone")


@check("image_error_param", severity=Severity.LOW,
       description="A documented image 400 names the offending field in error.param")
def check_error_param(error: dict[str, Any], param: str) -> None:
    if error.get("param") != param:
        fail("image_error_param", f"error.param must be {param!r}", got=error.get("param"))
