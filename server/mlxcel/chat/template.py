"""Rendering a conversation into prompt tokens with the model's chat template.

Uses the tokenizer's own ``apply_chat_template`` (transformers' semantics: jinja2 sandbox,
``tools`` left undefined when there are none, ``add_generation_prompt``).
"""

from __future__ import annotations

from typing import Any

from jinja2 import TemplateError

from ..engine.model import LoadedModel
from ..errors import InvalidRequestError


def render_chat_prompt(
    model: LoadedModel,
    messages: list[dict[str, Any]],
    *,
    tools: list[dict[str, Any]] | None = None,
    template_kwargs: dict[str, Any] | None = None,
) -> list[int]:
    """Prompt token ids for ``messages`` ending in an open assistant turn."""
    if model.chat_template is None:
        return model.encode(_plain_transcript(messages))
    kwargs = dict(template_kwargs or {})
    try:
        text = model.tokenizer.apply_chat_template(
            messages,
            tools=tools or None,
            add_generation_prompt=True,
            tokenize=False,
            **kwargs,
        )
    except (TemplateError, TypeError, ValueError, KeyError) as exc:
        # The template rejected this conversation (e.g. roles out of order): the request's fault.
        raise InvalidRequestError(
            f"The chat template could not render the messages: {exc}"
        ) from None
    if not isinstance(text, str):
        raise InvalidRequestError("The chat template did not produce text.")
    return model.encode(text)


def _plain_transcript(messages: list[dict[str, Any]]) -> str:
    """mlx-lm's fallback for models without a template: role-prefixed lines."""
    lines = [f"{m['role'].upper()}: {m.get('content') or ''}" for m in messages]
    return "\n".join(lines) + "\nASSISTANT:"
