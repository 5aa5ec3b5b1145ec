"""The OpenAI Image routes (``/v1/images/generations|edits`` and their aliases).

With ``--image-model`` the router's lifespan loads the Z-Image checkpoint on the image worker at
startup (a failed load stops the server) and keeps the single-worker ``ImageService`` on
``services.parts["images"]``, beside the text model. Bodies are JSON only: any other declared
Content-Type, multipart uploads included, is 415. An edit's input image comes as
``images[0].image_url`` and is read under the server's media policy (``--media-path``, size and
pixel bounds). Without an image model both routes answer 501 ``not_implemented`` naming the
flag, as the reference says.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TypeVar

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from PIL import Image

from ...api.offload import off_loop
from ...api.state import app_state
from ...errors import NotImplementedRoute
from ...media.decode import decode_image
from ...media.policy import MediaPolicy
from ...media.sources import read_media
from ...protocol.body import parse_json_object, require_json_media_type, validate_model
from ...single_worker import worker_lifespan
from .image_request import (
    ImageEditRequest,
    ImageJob,
    ImageRequest,
    SizeLimits,
    edit_job,
    edit_source,
    encode_png,
    generation_job,
    refuse_undeliverable,
    render_images,
)
from .image_service import PART, ImageService, image_service, start_image_service
from .zimage import ZImageModel

log = logging.getLogger("mlxcel.images")
IMAGE_FLAG = "--image-model (or MLXCEL_IMAGE_MODEL)"
EDIT_IMAGE = "images.0.image_url"
R = TypeVar("R", bound=ImageRequest)


def _loaded(model: ZImageModel) -> None:
    log.info("image model %s loaded (Z-Image, up to %dx%d)", model.name, model.max_width,
             model.max_height)


router = APIRouter(lifespan=worker_lifespan(PART, start_image_service, _loaded))


def images_not_configured(route: str) -> NotImplementedRoute:
    return NotImplementedRoute(
        f"POST /v1/images/{route} is not enabled: start the server with {IMAGE_FLAG} to serve "
        "image generation and edits."
    )


async def _accept(request: Request, route: str, request_type: type[R]) -> tuple[ImageService, R]:
    """The image worker and the validated body of a request to ``route``: 501 without an image
    model, 415 for a body not declared JSON, 400 for one that is not a valid request."""
    service = image_service(request)
    if service is None:
        raise images_not_configured(route)
    require_json_media_type(
        request.headers.get("content-type"), f"POST /v1/images/{route}",
        " Multipart uploads are not served: send an edit's input image as "
        "images[0].image_url (a data: URI, an http(s) URL or a path under --media-path).")
    body = await off_loop(_parse, await request.body(), request_type)
    return service, body


def _parse(raw_body: bytes, request_type: type[R]) -> R:
    """Parse and validate off the event loop (an edit's data-URI image is megabytes)."""
    raw = parse_json_object(raw_body)
    body = validate_model(request_type, raw)
    refuse_undeliverable(raw, body)
    return body


def _limits(model: ZImageModel) -> SizeLimits:
    return SizeLimits(max_width=model.max_width, max_height=model.max_height,
                      default_side=model.checkpoint.default_side)


def _read_image(url: str, policy: MediaPolicy) -> Image.Image:
    return decode_image(read_media(url, policy, EDIT_IMAGE), policy, EDIT_IMAGE)


def _generate(model: ZImageModel, job: ImageJob) -> list[bytes]:
    """Every image of the job, as PNG bytes; runs on the image worker."""
    return [encode_png(model.generate(job.prompt, seed=seed, width=job.width, height=job.height,
                                      steps=job.steps, init_image=job.init_image,
                                      image_strength=job.image_strength))
            for seed in job.seeds]


async def _answer(service: ImageService, job: ImageJob) -> JSONResponse:
    created = int(time.time())
    pngs = await service.run(lambda: _generate(service.model, job))
    return JSONResponse(render_images(job, pngs, created))


@router.post("/v1/images/generations")
@router.post("/images/generations")
async def images_generations(request: Request) -> JSONResponse:
    service, body = await _accept(request, "generations", ImageRequest)
    return await _answer(service, generation_job(body, _limits(service.model)))


@router.post("/v1/images/edits")
@router.post("/images/edits")
async def images_edits(request: Request) -> JSONResponse:
    service, body = await _accept(request, "edits", ImageEditRequest)
    url = edit_source(body)
    image = await asyncio.to_thread(_read_image, url, app_state(request).engine.config.media)
    return await _answer(service, edit_job(body, image, _limits(service.model)))
