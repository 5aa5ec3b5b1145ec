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

from ..settings.option import env_bool

DEFAULT_MAX_BYTES = 20 * 1024 * 1024
DEFAULT_MAX_PIXELS = 32 * 1024 * 1024
DEFAULT_DECODE_TIMEOUT_S = 10.0
DEFAULT_FETCH_TIMEOUT_S = 10.0
DEFAULT_MAX_IMAGES = 16
DEFAULT_VIDEO_MAX_FRAMES = 16
VIDEO_DIRS_ENV = "MLXCEL_VIDEO_DIR_ALLOWLIST"
PRIVATE_URLS_ENV = "MLXCEL_ALLOW_PRIVATE_MEDIA_URLS"


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
    video_dirs: list[str] | None = None,
    allow_private_urls: bool | None = None,
    environ: dict[str, str] | None = None,
) -> MediaPolicy:
    """The policy; ``video_dirs`` and ``allow_private_urls`` not given are read from
    ``environ`` (default: the process's), as the settings read them."""
    env = os.environ if environ is None else environ
    if video_dirs is None:
        video_dirs = env.get(VIDEO_DIRS_ENV, "").split(",")
    if allow_private_urls is None:
        raw = env.get(PRIVATE_URLS_ENV, "")
        allow_private_urls = env_bool(PRIVATE_URLS_ENV, raw) if raw.strip() else False
    return MediaPolicy(
        media_roots=_real_dirs(list(media_paths or [])),
        video_dirs=_real_dirs(video_dirs),
        max_bytes=max_bytes,
        max_pixels=max_pixels,
        decode_timeout_s=decode_timeout_s,
        fetch_timeout_s=fetch_timeout_s,
        allow_private_urls=allow_private_urls,
        video_max_frames=video_max_frames,
    )
