"""The OpenAI Image routes (``/v1/images/generations|edits`` and their aliases).

Served only when the server is started with ``--image-model``; this build has no image
backend, so both routes answer 501 ``not_implemented`` naming the flag, as the reference says.
"""

from __future__ import annotations

from fastapi import APIRouter

from ..errors import NotImplementedRoute

router = APIRouter()

IMAGE_FLAG = "--image-model (or MLXCEL_IMAGE_MODEL)"
IMAGE_ROUTES = ("generations", "edits")


def images_not_configured(route: str) -> NotImplementedRoute:
    return NotImplementedRoute(
        f"POST /v1/images/{route} is not enabled: start the server with {IMAGE_FLAG} to serve "
        "image generation and edits."
    )


def _make(route: str) -> None:
    async def handler() -> None:
        raise images_not_configured(route)

    handler.__name__ = f"images_{route}"
    router.post(f"/v1/images/{route}")(handler)
    router.post(f"/images/{route}")(handler)


for _route in IMAGE_ROUTES:
    _make(_route)
