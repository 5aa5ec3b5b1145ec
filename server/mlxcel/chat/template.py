"""Rendering a conversation into prompt tokens with the model's chat template.

Uses the tokenizer's own ``apply_chat_template`` (transformers' semantics: jinja2 sandbox,
``tools`` left undefined when there are none, ``add_generation_prompt``). A server-wide
``--chat-template`` replaces the model's template once, so everything that reads the template
(tool-call format detection included) sees the same one.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jinja2 import TemplateError

from .. import limits
from ..errors import InvalidRequestError
from ..generation import VisionInputs
from ..generation.model_view import ModelView
from .continuation import check_continuable, cut_after
from .multimodal import prepare_media, vision_prompt


@dataclass(frozen=True)
class RenderedPrompt:
    text: str
    tokens: list[int]
    vision: VisionInputs | None = None  # the images of a vision-language prompt


def load_template_override(value: str | None) -> str | None:
    """``--chat-template``: a file path, or the Jinja template text itself."""
    if not value:
        return None
    path = Path(value)
    if len(value) < 4096 and "\n" not in value and path.is_file():
        return path.read_text(encoding="utf-8")
    return value


def apply_template_override(model: ModelView, template: str | None) -> None:
    """Install ``template`` as the model's chat template (idempotent)."""
    if template is None or model.chat_template == template:
        return
    inner = getattr(model.tokenizer, "_tokenizer", model.tokenizer)
    inner.chat_template = template


# Keys of ``chat_template_kwargs`` that would replace apply_chat_template's own arguments: a
# request never supplies the template itself (``chat_template``) or the conversation.
RESERVED_KWARGS = ("messages", "tools", "add_generation_prompt", "tokenize", "conversation",
                   "chat_template", "return_dict")


def template_variables(template_kwargs: dict[str, Any] | None) -> dict[str, Any]:
    """A request's ``chat_template_kwargs`` as template variables, reserved keys dropped."""
    kwargs = dict(template_kwargs or {})
    for reserved in RESERVED_KWARGS:
        kwargs.pop(reserved, None)
    return kwargs


def render_chat(
    model: ModelView,
    messages: list[dict[str, Any]],
    *,
    tools: list[dict[str, Any]] | None = None,
    template_kwargs: dict[str, Any] | None = None,
    role_mapping: dict[str, str] | None = None,
    continue_final: str | None = None,
) -> RenderedPrompt:
    """The prompt text and ids for ``messages`` ending in an open assistant turn;
    ``role_mapping`` (mlx-lm's) only matters for a model without a chat template. Media parts
    (chat/multimodal.py) are a 400 on a text-only model and pixels on a VLM. With
    ``continue_final`` (a message field, ``chat/continuation.py``) the last assistant message
    is left open instead."""
    check_text_length(messages)
    continued = check_continuable(messages, continue_final) if continue_final else None
    messages, media = prepare_media(model, messages)
    if model.chat_template is None:
        if media:
            raise InvalidRequestError("The loaded model has no chat template to place images in.")
        text = plain_transcript(messages, role_mapping)
        if continued is not None:
            text = cut_after(text, continued)
        return RenderedPrompt(text, model.encode(text))
    kwargs = template_variables(template_kwargs)
    try:
        text = model.tokenizer.apply_chat_template(
            messages,
            tools=tools or None,
            add_generation_prompt=continued is None,
            tokenize=False,
            **kwargs,
        )
    except (TemplateError, TypeError, ValueError, KeyError, AttributeError,
            IndexError) as exc:
        # The template rejected this conversation (e.g. roles out of order): the request's fault.
        raise InvalidRequestError(
            f"The chat template could not render the messages: {str(exc)[:200]}"
        ) from None
    if not isinstance(text, str):
        raise InvalidRequestError("The chat template did not produce text.")
    if continued is not None:
        text = cut_after(text, continued)
    if media:
        tokens, vision = vision_prompt(model, text, media)
        return RenderedPrompt(text, tokens, vision)
    return RenderedPrompt(text, model.encode(text))


# Roles whose text every chat template renders (an assistant turn's text or reasoning may be
# left out of the prompt by the template, so it is not counted).
_RENDERED_ROLES = frozenset({"system", "developer", "user", "tool"})


def check_text_length(messages: list[dict[str, Any]]) -> None:
    """400 ``context_length_exceeded`` before rendering when the text of the messages every
    template renders is already longer than one tokenizer call may take: rendering 24 MiB
    through the template costs a few long string operations, each holding the interpreter
    lock (and so the event loop) for its whole length."""
    total = 0
    for message in messages:
        if not isinstance(message, dict) or message.get("role") not in _RENDERED_ROLES:
            continue
        content = message.get("content")
        if isinstance(content, str):
            total += len(content)
        elif isinstance(content, list):
            total += sum(len(part["text"]) for part in content
                         if isinstance(part, dict) and isinstance(part.get("text"), str))
    limits.check_text_length(total, "The messages hold {} characters of text to tokenize")


def render_chat_prompt(
    model: ModelView,
    messages: list[dict[str, Any]],
    *,
    tools: list[dict[str, Any]] | None = None,
    template_kwargs: dict[str, Any] | None = None,
) -> list[int]:
    """Prompt token ids for ``messages`` ending in an open assistant turn."""
    return render_chat(model, messages, tools=tools, template_kwargs=template_kwargs).tokens


# mlx-lm's default prefixes (its table also carries a "system_prompt" text it never renders).
DEFAULT_ROLE_MAPPING: dict[str, str] = {
    "system": "ASSISTANT's RULE: ",
    "user": "USER: ",
    "assistant": "ASSISTANT: ",
    "stop": "\n",
}


def plain_transcript(
    messages: list[dict[str, Any]], role_mapping: dict[str, str] | None = None
) -> str:
    """mlx-lm's prompt for a model without a template: each message as role prefix, content
    and the ``stop`` text, then the assistant prefix, trailing whitespace stripped. A request's
    ``role_mapping`` replaces the defaults as a whole (mlx-lm's semantics); a role missing
    from it gets no prefix."""
    mapping = role_mapping or DEFAULT_ROLE_MAPPING
    stop = mapping.get("stop", "")
    text = "".join(
        f"{mapping.get(m['role'], '')}{m.get('content') or ''}{stop}" for m in messages
    )
    return (text + mapping.get("assistant", "")).rstrip()
