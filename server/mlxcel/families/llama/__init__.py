"""llama-server's native API: ``/completion`` (``/completions``), ``/infill``, ``/tokenize``,
``/detokenize``, ``/props`` and ``/slots``. Its error shape covers every llama-server native
path, those other families serve included (``/embedding``, ``/rerank``, ``/apply-template``):
the shape belongs to the public path, whoever serves it."""

from __future__ import annotations

from .. import Family
from . import infill, props, routes, slots, tokenize
from .errors import LLAMA_ERROR_SHAPE

FAMILY = Family(routers=(routes.router, infill.router, tokenize.router, props.router,
                         slots.router),
                error_shape=LLAMA_ERROR_SHAPE)
