"""POST /apply-template: the chat template applied to ``messages``, as text, without inference
(llama-server's shape: ``{"prompt": "..."}``, generation prompt appended)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from jinja2 import TemplateError

from ..errors import InvalidRequestError
from ..protocol.body import parse_body
from ..protocol.chat import ChatCompletionRequest, template_messages
from .state import app_state

router = APIRouter()


@router.post("/apply-template")
async def apply_template(request: Request) -> JSONResponse:
    state = app_state(request)
    body = parse_body(ChatCompletionRequest, await request.body())
    model = state.require_model()
    messages = template_messages(body)
    if model.chat_template is None:
        raise InvalidRequestError("The loaded model has no chat template.")
    try:
        text = model.tokenizer.apply_chat_template(
            messages,
            tools=body.tools or None,
            add_generation_prompt=True,
            tokenize=False,
            **(body.chat_template_kwargs or {}),
        )
    except (TemplateError, TypeError, ValueError, KeyError) as exc:
        raise InvalidRequestError(
            f"The chat template could not render the messages: {exc}"
        ) from None
    if not isinstance(text, str):
        raise InvalidRequestError("The chat template did not produce text.")
    return JSONResponse({"prompt": text})
