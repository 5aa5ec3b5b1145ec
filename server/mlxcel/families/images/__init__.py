"""OpenAI Images: ``/v1/images/generations`` and ``/v1/images/edits`` (and their aliases) on the
image worker beside the text model."""

from __future__ import annotations

from .. import Family
from . import routes
from .image_config import SECTION, ImageConfig
from .image_service import image_health

FAMILY = Family(
    routers=(routes.router,),
    # without --image-model their own 501 names the flag that enables them
    text_model_free=frozenset({"/v1/images/generations", "/images/generations",
                               "/v1/images/edits", "/images/edits"}),
    health=image_health,
    settings={SECTION: ImageConfig},
)
