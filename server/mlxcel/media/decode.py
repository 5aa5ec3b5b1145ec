"""Image bytes → an RGB ``PIL.Image``, bounded: the pixel count is read from the header before
anything is decoded (413 over ``max_pixels``), and the decode itself runs on a worker thread
that the request waits for at most ``decode_timeout_s`` (400 ``image_decode_timeout``).
"""

from __future__ import annotations

import io
import warnings
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import TypeVar

from PIL import Image, UnidentifiedImageError

from ..errors import InvalidRequestError, RequestTooLarge
from .policy import MediaPolicy

T = TypeVar("T")

# Two decodes at a time at most; a decode that timed out still finishes here, bounded by
# max_pixels, but no longer holds the request.
_DECODER = ThreadPoolExecutor(max_workers=2, thread_name_prefix="mlxcel-image-decode")


def _decode(image: Image.Image) -> Image.Image:
    with warnings.catch_warnings():
        warnings.simplefilter("error", Image.DecompressionBombWarning)
        return image.convert("RGB")


def decode_image(data: bytes, policy: MediaPolicy, param: str) -> Image.Image:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            image = Image.open(io.BytesIO(data))
    except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError,
            Image.DecompressionBombWarning):
        raise InvalidRequestError(f"{param}: the data is not a decodable image.",
                                  param=param) from None
    width, height = image.size
    if width * height > policy.max_pixels:
        raise RequestTooLarge(
            f"{param}: the image is {width}x{height} pixels, over the server's limit of "
            f"{policy.max_pixels} pixels.", param=param)
    try:
        decoded: Image.Image = run_bounded(lambda: _decode(image), policy, param, "image")
    except (OSError, ValueError, SyntaxError, Image.DecompressionBombError,
            Image.DecompressionBombWarning):
        raise InvalidRequestError(f"{param}: the image data is truncated or corrupt.",
                                  param=param) from None
    return decoded


def run_bounded(work: Callable[[], T], policy: MediaPolicy, param: str, what: str) -> T:
    """``work()`` on the decode pool, waited for at most ``decode_timeout_s``."""
    future = _DECODER.submit(work)
    try:
        return future.result(timeout=policy.decode_timeout_s)
    except FutureTimeout:
        raise InvalidRequestError(
            f"{param}: decoding the {what} took longer than {policy.decode_timeout_s:g} s.",
            param=param, code=f"{what}_decode_timeout") from None
