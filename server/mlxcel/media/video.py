"""Video inputs: where the file comes from and how frames are sampled from it.

A local video path (``file://`` or absolute) is fail-closed: readable only under a directory of
``MLXCEL_VIDEO_DIR_ALLOWLIST`` (read once at startup), after resolving ``..`` and symlinks. A
data URI or an http(s) URL is written first as a create-new 0600 file inside a private 0700
directory (removed afterwards), because the decoder reads files. Frames are decoded with
OpenCV's bundled decoder through mlx-vlm's ``load_video`` (at most ``video_max_frames``, at the
part's ``fps`` or 2 per second), after the clip's frame size is checked against
``max_pixels``; the decode is bounded by ``decode_timeout_s``. A model without a native video
path gets the same frames as ordered RGB images (``sample_frame_images``).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..errors import InvalidRequestError, RequestTooLarge
from .decode import run_bounded
from .policy import MediaPolicy
from .sources import allowed_path, local_path_of, read_media

DEFAULT_FPS = 2.0


@contextmanager
def video_file(url: str, policy: MediaPolicy, param: str) -> Iterator[Path]:
    local = local_path_of(url, param)
    if local is not None:
        yield allowed_path(local, policy.video_dirs, param, "video")
        return
    data = read_media(url, policy, param)  # data URI or http(s), under the same bounds
    directory = tempfile.mkdtemp(prefix="mlxcel-video-")  # mode 0700
    try:
        path = Path(directory) / "clip"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        yield path
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _probe(path: Path, policy: MediaPolicy, param: str) -> None:
    import cv2

    capture = cv2.VideoCapture(str(path))
    try:
        if not capture.isOpened() or int(capture.get(cv2.CAP_PROP_FRAME_COUNT)) < 1:
            raise InvalidRequestError(f"{param}: the data is not a decodable video.",
                                      param=param)
        width = int(capture.get(cv2.CAP_PROP_FRAME_WIDTH))
        height = int(capture.get(cv2.CAP_PROP_FRAME_HEIGHT))
    finally:
        capture.release()
    if width * height > policy.max_pixels:
        raise RequestTooLarge(
            f"{param}: the video frames are {width}x{height} pixels, over the server's limit of "
            f"{policy.max_pixels} pixels.", param=param)


def _load(path: Path, fps: float, max_frames: int) -> Any:
    from mlx_vlm.utils import load_video

    frames, _ = load_video(str(path), fps=fps, max_frames=max_frames, min_frames=2)
    return frames


def sample_frames(url: str, fps: Any, policy: MediaPolicy, param: str) -> Any:
    """Up to ``video_max_frames`` frames of the clip at ``url``, as a (T, C, H, W) array."""
    rate = float(fps) if isinstance(fps, (int, float)) and not isinstance(fps, bool) \
        and fps > 0 else DEFAULT_FPS
    with video_file(url, policy, param) as path:
        _probe(path, policy, param)
        try:
            return run_bounded(lambda: _load(path, rate, policy.video_max_frames), policy,
                               param, "video")
        except ValueError:
            raise InvalidRequestError(f"{param}: frames could not be sampled from the video.",
                                      param=param) from None


def sample_frame_images(url: str, fps: Any, policy: MediaPolicy, param: str) -> list[Any]:
    """The frames of ``sample_frames`` as RGB ``PIL.Image`` objects in clip order: the
    frames-as-images fallback for a model without a native video path."""
    import numpy as np
    from PIL import Image

    frames = sample_frames(url, fps, policy, param)
    return [Image.fromarray(np.ascontiguousarray(frame.transpose(1, 2, 0))) for frame in frames]
