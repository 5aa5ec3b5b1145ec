"""The request fields other API families define that Anthropic's Messages API does not, and
the 400 a Messages body carrying one gets.

Anthropic's ``MessageCreateParams`` (https://docs.anthropic.com/en/api/messages, "Body
parameters") has no ``n``, ``seed``, ``logit_bias``, penalties or LoRA ``adapters``;
llama-server's ``/v1/messages`` documents only Anthropic's fields (its tools/server/README.md,
"POST /v1/messages"). Such a field silently ignored (``adapters``) or silently applied
(``logit_bias``) would make one request mean something else on each family, so it is refused,
named, as Anthropic refuses an input it does not define ("Extra inputs are not permitted").
Fields of Anthropic's own API that this server does not implement (``metadata``,
``service_tier``, ``container``...) are not in this list: they stay accepted and ignored.
"""

from __future__ import annotations

from collections.abc import Iterable

from ...errors import InvalidRequestError
from ...protocol.sampling_fields import OpenAISamplingFields

# Chat Completions fields that are not sampling fields (OpenAI's CreateChatCompletionRequest).
CHAT_ONLY = ("max_completion_tokens", "logprobs", "top_logprobs", "response_format",
             "chat_template_kwargs", "parallel_tool_calls", "add_generation_prompt")


def foreign_fields(own: Iterable[str]) -> frozenset[str]:
    """The OpenAI-side request fields (sampling and chat) that are not among ``own``."""
    return frozenset(OpenAISamplingFields.model_fields).union(CHAT_ONLY) - frozenset(own)


def refuse_foreign(body: dict[str, object], foreign: frozenset[str]) -> None:
    """A 400 naming the first foreign field of ``body`` (in the client's order)."""
    for name in body:
        if name in foreign:
            raise InvalidRequestError(
                f"{name}: Extra inputs are not permitted (Anthropic's Messages API has no "
                f"'{name}'; it belongs to the OpenAI-compatible routes).", param=name)
