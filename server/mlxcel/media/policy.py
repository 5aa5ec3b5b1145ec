"""The operator's media policy: which local roots a request may read, and the size and time
bounds on every image.

Local files are readable only under a ``--media-path`` root (none configured: every local path
is refused). ``MLXCEL_VIDEO_DIR_ALLOWLIST`` (comma-separated directories, read once at
startup) is the separate fail-closed list for local video paths. Remote URLs are refused when
they resolve to a non-public address unless ``MLXCEL_ALLOW_PRIVATE_MEDIA_URLS=1``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

DEFAULT_MAX_BYTES = 20 * 1024 * 1024
DEFAULT_MAX_PIXELS = 32 * 1024 * 1024
DEFAULT_DECODE_TIMEOUT_S = 10.0
DEFAULT_FETCH_TIMEOUT_S = 10.0
DEFAULT_MAX_IMAGES = 16
DEFAULT_VIDEO_MAX_FRAMES = 16


@dataclass(frozen=True)
class MediaPolicy:
    media_roots: tuple[Path, ...] = ()
    video_dirs: tuple[Path, ...] = ()
    max_bytes: int = DEFAULT_MAX_BYTES
    max_pixels: int = DEFAULT_MAX_PIXELS
    max_images: int = DEFAULT_MAX_IMAGES
    decode_timeout_s: float = DEFAULT_DECODE_TIMEOUT_S
    fetch_timeout_s: float = DEFAULT_FETCH_TIMEOUT_S
    allow_private_urls: bool = False
    video_max_frames: int = DEFAULT_VIDEO_MAX_FRAMES


def _real_dirs(values: list[str]) -> tuple[Path, ...]:
    # Resolved once, so a root that is itself a symlink names its target.
    return tuple(Path(v).expanduser().resolve() for v in values if v.strip())


def policy_from_settings(
    media_paths: list[str] | None = None,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_pixels: int = DEFAULT_MAX_PIXELS,
    decode_timeout_s: float = DEFAULT_DECODE_TIMEOUT_S,
    fetch_timeout_s: float = DEFAULT_FETCH_TIMEOUT_S,
    video_max_frames: int = DEFAULT_VIDEO_MAX_FRAMES,
    environ: dict[str, str] | None = None,
) -> MediaPolicy:
    env = os.environ if environ is None else environ
    video = env.get("MLXCEL_VIDEO_DIR_ALLOWLIST", "")
    return MediaPolicy(
        media_roots=_real_dirs(list(media_paths or [])),
        video_dirs=_real_dirs(video.split(",")),
        max_bytes=max_bytes,
        max_pixels=max_pixels,
        decode_timeout_s=decode_timeout_s,
        fetch_timeout_s=fetch_timeout_s,
        allow_private_urls=env.get("MLXCEL_ALLOW_PRIVATE_MEDIA_URLS", "") == "1",
        video_max_frames=video_max_frames,
    )
