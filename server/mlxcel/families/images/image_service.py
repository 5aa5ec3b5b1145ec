"""The image worker: one Z-Image model on a ``SingleWorker`` (loaded at startup on its own
thread, one request at a time, 503 past ``--image-max-queue``, 504 past ``--image-timeout``),
kept in the app's ``services.parts["images"]``."""

from __future__ import annotations

from typing import Any

from fastapi import Request

from ...api.state import AppState
from ...config import ServerConfig
from ...single_worker import SingleWorker, app_worker
from .image_config import SECTION, ImageConfig
from .zimage import ZImageModel, load_zimage

ImageService = SingleWorker[ZImageModel]
PART = SECTION


def start_image_service(config: ServerConfig) -> ImageService | None:
    """The worker of ``--image-model``, its checkpoint loaded; None without the flag."""
    images = ImageConfig.of(config)
    path = images.model
    if not path:
        return None
    return SingleWorker.start(lambda: load_zimage(path), kind="image",
                              timeout_flag="--image-timeout", max_queue=images.max_queue,
                              timeout_s=images.timeout_s)


def image_service(request: Request) -> ImageService | None:
    return app_worker(request, PART)


def image_health(state: AppState) -> dict[str, Any]:
    """``/health``'s ``images``: the image worker beside the text model (``--image-model``);
    nothing without one."""
    service: ImageService | None = state.services.parts.get(PART)
    if service is None:
        return {}
    return {"images": {"model": service.model.name, "queue_depth": service.queue_depth,
                       "max_queue": service.max_queue, "timeout_s": service.timeout_s}}
