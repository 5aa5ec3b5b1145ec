"""The image worker: one Z-Image model on a ``SingleWorker`` (loaded at startup on its own
thread, one request at a time, 503 past ``--image-max-queue``, 504 past ``--image-timeout``),
kept in the app's ``services.images``."""

from __future__ import annotations

from fastapi import Request

from ...config import ServerConfig
from ...single_worker import SingleWorker, WorkerName, app_worker
from .zimage import ZImageModel, load_zimage

ImageService = SingleWorker[ZImageModel]
STATE_ATTR: WorkerName = "images"


def start_image_service(config: ServerConfig) -> ImageService | None:
    """The worker of ``--image-model``, its checkpoint loaded; None without the flag."""
    path = config.image_model
    if not path:
        return None
    return SingleWorker.start(lambda: load_zimage(path), kind="image",
                              timeout_flag="--image-timeout", max_queue=config.image_max_queue,
                              timeout_s=config.image_timeout_s)


def image_service(request: Request) -> ImageService | None:
    return app_worker(request, STATE_ATTR)
