"""``continue_final_message``: generate the rest of the conversation's last assistant message
instead of a new one (llama-server's field, as its completion schema describes it: continue the
final message of the chat template; vLLM and transformers name it the same).

    value                       continues
    true / "content"            the final message's ``content``
    "reasoning_content"         its ``reasoning_content`` (the reasoning block stays open)
    false / absent              nothing: a new assistant turn, as before

With ``--prefill-assistant`` (llama-server's default, off here: OpenAI's API answers a
trailing assistant message with a new one), a request that does not ask to continue (the field
absent or false) but ends on an assistant message continues it as if it had sent ``true`` (its
reasoning when it has only reasoning; a new turn when it has neither), whatever
``add_generation_prompt`` says; two assistant messages at the end, or a last one with
tool calls, are a 400, as in llama-server.

The template renders the conversation without a generation prompt and the text is cut right
after the continued part (its last occurrence), so no end-of-turn marker closes it. The answer
holds the continuation only. Continuing is a 400 when the last message is not an assistant
message, carries tool calls, has nothing to continue, or when ``add_generation_prompt`` is sent
as true with it (llama-server refuses both at once).
"""

from __future__ import annotations

from typing import Any

from ..errors import InvalidRequestError

PARAM = "continue_final_message"


def continued_field(value: Any, add_generation_prompt: Any = None) -> str | None:
    """The message field the request continues (``content``/``reasoning_content``), or None."""
    if value is True or value == "content":
        field = "content"
    elif value == "reasoning_content":
        field = "reasoning_content"
    elif value is None or value is False:
        return None
    else:
        raise InvalidRequestError(
            f"{PARAM} must be a boolean, 'content' or 'reasoning_content'.", param=PARAM)
    if add_generation_prompt is True:
        raise InvalidRequestError(
            "Cannot set both add_generation_prompt and continue_final_message to true.",
            param=PARAM)
    return field


def prefilled_field(messages: list[dict[str, Any]], *, refuse: bool = True) -> str | None:
    """The field a trailing assistant message continues (on Chat with ``--prefill-assistant``,
    on Anthropic Messages always); None: nothing to continue, a new turn. A trailing message
    that cannot be continued (two assistant messages last, or one with tool calls) is a 400,
    or with ``refuse`` false a new turn (Messages: Anthropic's schema admits both)."""
    if not messages or messages[-1].get("role") != "assistant":
        return None
    last = messages[-1]
    doubled = len(messages) >= 2 and messages[-2].get("role") == "assistant"
    if (doubled or last.get("tool_calls")) and not refuse:
        return None
    if doubled:
        raise InvalidRequestError("Cannot have 2 or more assistant messages at the end of the "
                                  "list.", param="messages")
    if last.get("tool_calls"):
        raise InvalidRequestError("Cannot continue an assistant message that contains tool "
                                  "calls.", param="messages")
    for field in ("content", "reasoning_content"):
        text = last.get(field)
        if isinstance(text, str) and text.strip():
            return field
    return None


def check_continuable(messages: list[dict[str, Any]], field: str) -> str:
    """The text the final message continues from (400 when it cannot be continued)."""
    last = messages[-1] if messages else {}
    if last.get("role") != "assistant":
        raise InvalidRequestError(f"{PARAM} needs an assistant message last.", param=PARAM)
    if last.get("tool_calls"):
        raise InvalidRequestError("Cannot continue an assistant message that contains tool "
                                  "calls.", param=PARAM)
    text = last.get(field)
    if not isinstance(text, str) or not text.strip():
        raise InvalidRequestError(f"The final assistant message has no {field} to continue.",
                                  param=PARAM)
    return text


def cut_after(rendered: str, text: str) -> str:
    """``rendered`` up to the end of the last occurrence of ``text`` (whitespace the template
    may have trimmed around it ignored)."""
    core = text.strip()
    at = rendered.rfind(core)
    if at < 0:
        raise InvalidRequestError("The chat template does not render the final message as "
                                  "given, so it cannot be continued.", param=PARAM)
    return rendered[:at + len(core)]
