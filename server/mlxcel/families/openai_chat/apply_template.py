"""POST /apply-template: the chat template applied to ``messages``, as text, without inference
(llama-server's shape: ``{"prompt": "..."}``, generation prompt appended). The body is checked
as the chat route checks it (llama-server runs its chat parser here too): the same 400s.

``chat_template_kwargs`` are template variables over the server's ``--chat-template-kwargs``,
as on the chat route: a request cannot supply
the template itself (``chat_template`` and the other reserved keys are dropped), so it cannot
make the server render a gigabyte or loop for minutes. Rendering runs off the event loop.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response
from jinja2 import TemplateError

from ...api.offload import json_response, parse_request
from ...api.state import app_state
from ...chat.template import template_variables
from ...chat.turn import TurnSettings
from ...config import GenerationDefaults
from ...engine.loaded_model import LoadedModel
from ...errors import InvalidRequestError
from ...protocol.choices import check_choice_count
from .chat_request import ChatCompletionRequest, check_chat_request, template_messages

router = APIRouter()


def _rendered(model: LoadedModel, body: ChatCompletionRequest,
              defaults: GenerationDefaults, settings: TurnSettings) -> dict[str, Any]:
    messages = template_messages(body)
    if model.chat_template is None:
        raise InvalidRequestError("The loaded model has no chat template.")
    check_chat_request(body, model, defaults, settings)
    # --chat-template-kwargs under the request's own, as on the chat route
    kwargs = {**settings.template_kwargs, **(body.chat_template_kwargs or {})}
    try:
        text = model.tokenizer.apply_chat_template(
            messages,
            tools=body.tools or None,
            add_generation_prompt=True,
            tokenize=False,
            **template_variables(kwargs),
        )
    except (TemplateError, TypeError, ValueError, KeyError, AttributeError,
            IndexError, OverflowError) as exc:
        raise InvalidRequestError(
            f"The chat template could not render the messages: {str(exc)[:200]}"
        ) from None
    if not isinstance(text, str):
        raise InvalidRequestError("The chat template did not produce text.")
    return {"prompt": text}


@router.post("/apply-template")
async def apply_template(request: Request) -> Response:
    state = app_state(request)
    body = await parse_request(request, ChatCompletionRequest)
    check_choice_count(body.n, state.config.parallel)  # as the chat route parses it
    return await json_response(_rendered, state.require_model(), body, state.config.defaults,
                               TurnSettings.of(state.config))
