"""llama-server's native API: ``/completion`` (``/completions``), ``/infill``, ``/tokenize``,
``/detokenize``, ``/props`` and ``/slots``, answering errors in llama-server's shape. The native
paths other families serve (``/embedding``, ``/rerank``, ``/apply-template``) are claimed in that
shape by the family that serves them."""

from __future__ import annotations

from .. import Family
from . import infill, props, routes, slots, tokenize
from .errors import LLAMA_ERROR_SHAPE

FAMILY = Family(routers=(routes.router, infill.router, tokenize.router, props.router,
                         slots.router),
                error_shape=LLAMA_ERROR_SHAPE)
