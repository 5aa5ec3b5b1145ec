"""The OpenAI Image requests (JSON bodies) as one ``ImageJob``, and the answer's body.

Fields (OpenAI's names): ``prompt`` (required, not blank), ``n`` (1 to 10; image ``i`` uses
seed ``seed + i``, modulo 2^32), ``size`` (``"WxH"`` in multiples of 16, within the model's
bounds, or ``"auto"``), ``response_format`` (``b64_json`` only), ``output_format`` (``png``
only), ``model`` (any value: the server has one image model), ``user``, ``quality``, ``style``,
``moderation`` (accepted, no effect); mlxcel's ``seed`` (default: drawn per request and
reported) and ``num_inference_steps``. Edits add ``images`` (one ``{"image_url": ...}``) and
``image_strength`` (how much of the input image survives, 0 to 1). The server writes no files
and serves no URLs, so ``response_format: url`` and the ``url``, ``path``, ``output_path`` and
``output_dir`` fields are 400s.
"""

from __future__ import annotations

import base64
import io
import random
import re
from dataclasses import dataclass
from typing import Any, Literal

from PIL import Image
from pydantic import BaseModel, ConfigDict, Field

from ...errors import InvalidRequestError
from ...protocol.field_limits import Identifier
from ...protocol.types import Int, Omittable

MAX_N = 10
MAX_SEED = 2**32 - 1
MIN_SIDE = 64
MAX_SIDE = 2048  # the server's own bound, whatever the model's positional range
SIDE_STEP = 16  # the VAE's 8x times the transformer's 2x2 patch
DEFAULT_STEPS = 9  # Z-Image-Turbo's schedule
MAX_STEPS = 50
DEFAULT_IMAGE_STRENGTH = 0.4  # mflux's default for image-to-image
FILE_FIELDS = ("url", "path", "output_path", "output_dir")
_SIZE = re.compile(r"([0-9]{1,5})x([0-9]{1,5})")


class ImageRequest(BaseModel):
    """``POST /v1/images/generations``."""

    model_config = ConfigDict(strict=True, extra="allow")
    prompt: str
    model: str | None = None
    n: Int = Field(default=1, ge=1, le=MAX_N)
    size: str | None = None
    response_format: str | None = None
    output_format: str | None = None
    seed: Int | None = Field(default=None, ge=0, le=MAX_SEED)
    num_inference_steps: Int = Field(default=DEFAULT_STEPS, ge=1, le=MAX_STEPS)
    background: Literal["auto", "opaque"] | None = None
    stream: Literal[False] | None = None
    # accepted with no effect; nullable strings in OpenAI's CreateImageRequest
    quality: str | None = None
    style: str | None = None
    moderation: str | None = None
    user: Omittable[Identifier] = None  # a string in OpenAI's spec, never null


class ImageReference(BaseModel):
    model_config = ConfigDict(strict=True, extra="allow")
    image_url: Omittable[str] = None
    file_id: str | None = None


class ImageEditRequest(ImageRequest):
    """``POST /v1/images/edits`` in OpenAI's JSON form."""

    images: list[ImageReference] = Field(min_length=1)
    mask: Any = None
    image_strength: float = Field(default=DEFAULT_IMAGE_STRENGTH, ge=0, le=1)


@dataclass(frozen=True)
class SizeLimits:
    max_width: int
    max_height: int
    default_side: int


@dataclass(frozen=True)
class ImageJob:
    prompt: str
    n: int
    width: int
    height: int
    seed: int
    steps: int
    init_image: Image.Image | None = None
    image_strength: float | None = None

    @property
    def seeds(self) -> list[int]:
        return [(self.seed + i) % (MAX_SEED + 1) for i in range(self.n)]


def refuse_undeliverable(raw: dict[str, Any], body: ImageRequest) -> None:
    """The 400s for what this server never delivers: files, URLs, formats other than PNG."""
    for name in FILE_FIELDS:
        if name in raw:
            raise InvalidRequestError(
                f"'{name}' is not supported: the server writes no files for a client and returns "
                "images inline as b64_json.", param=name)
    if body.response_format not in (None, "b64_json"):
        raise InvalidRequestError(
            f"response_format {body.response_format!r} is not supported: images are returned "
            "inline as b64_json (the server serves no image URLs).", param="response_format")
    if body.output_format not in (None, "png"):
        raise InvalidRequestError(
            f"output_format {body.output_format!r} is not supported: only png is produced.",
            param="output_format")


def _prompt(body: ImageRequest) -> str:
    if not body.prompt.strip():
        raise InvalidRequestError("'prompt' must not be empty.", param="prompt")
    return body.prompt


def _fit(side: int, limit: int) -> int:
    return max(MIN_SIDE, min(limit, side - side % SIDE_STEP))


def image_size(value: str | None, limits: SizeLimits,
               auto: tuple[int, int] | None = None) -> tuple[int, int]:
    """``size`` as (width, height); ``auto`` is ``auto`` when given (an edit's input), else the
    model's default square."""
    max_width, max_height = min(limits.max_width, MAX_SIDE), min(limits.max_height, MAX_SIDE)
    if value is None or value == "auto":
        if auto is not None:
            return _fit(auto[0], max_width), _fit(auto[1], max_height)
        return _fit(limits.default_side, max_width), _fit(limits.default_side, max_height)
    match = _SIZE.fullmatch(value)
    width, height = (int(match[1]), int(match[2])) if match else (0, 0)
    if (not match or width % SIDE_STEP or height % SIDE_STEP or not MIN_SIDE <= width <= max_width
            or not MIN_SIDE <= height <= max_height):
        raise InvalidRequestError(
            f"size {value!r} is not supported: use 'auto' or 'WIDTHxHEIGHT' with each side a "
            f"multiple of {SIDE_STEP}, width {MIN_SIDE} to {max_width} and height {MIN_SIDE} to "
            f"{max_height}.", param="size")
    return width, height


def _job(body: ImageRequest, size: tuple[int, int], init_image: Image.Image | None = None,
         image_strength: float | None = None) -> ImageJob:
    seed = body.seed if body.seed is not None else random.randint(0, MAX_SEED)
    return ImageJob(prompt=_prompt(body), n=body.n, width=size[0], height=size[1], seed=seed,
                    steps=body.num_inference_steps, init_image=init_image,
                    image_strength=image_strength)


def generation_job(body: ImageRequest, limits: SizeLimits) -> ImageJob:
    return _job(body, image_size(body.size, limits))


def edit_source(body: ImageEditRequest) -> str:
    """Checks what needs no input image, then gives that image's URL (a data URI, an http(s)
    URL or a local path)."""
    _prompt(body)
    if body.mask is not None:
        raise InvalidRequestError("'mask' is not supported: the Z-Image model edits the whole "
                                  "image (image-to-image), not a masked region.", param="mask")
    if len(body.images) != 1:
        raise InvalidRequestError(f"'images' holds {len(body.images)} images; the Z-Image model "
                                  "edits one input image.", param="images")
    reference = body.images[0]
    if reference.image_url is None:
        raise InvalidRequestError(
            "images.0: give the image as image_url (a data: URI, an http(s) URL or a path "
            "under --media-path); this server has no Files API for file_id.",
            param="images.0.image_url")
    return reference.image_url


def edit_job(body: ImageEditRequest, image: Image.Image, limits: SizeLimits) -> ImageJob:
    """Image-to-image from ``image``; ``size: auto`` is the input's size (fitted to bounds)."""
    return _job(body, image_size(body.size, limits, image.size), init_image=image,
                image_strength=float(body.image_strength))


def render_images(job: ImageJob, pngs: list[bytes], created: int) -> dict[str, Any]:
    data = [{"b64_json": base64.b64encode(png).decode("ascii"), "mime_type": "image/png",
             "width": job.width, "height": job.height, "seed": seed,
             "revised_prompt": job.prompt}
            for png, seed in zip(pngs, job.seeds, strict=True)]
    return {"created": created, "data": data, "output_format": "png",
            "size": f"{job.width}x{job.height}"}


def encode_png(image: Image.Image) -> bytes:
    """Plain PIL PNG: no timestamps or other metadata, so one image is always the same bytes."""
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()
