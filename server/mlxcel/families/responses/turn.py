"""A Responses request resolved against the stores: the earlier turns it continues, the
prompt, the tools, how its output is read; its ``GenerationRequest``; and storing the finished
turn."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ...chat.output import OutputSetup
from ...chat.turn import TurnRequest, TurnSettings, build
from ...config import GenerationDefaults
from ...engine.loaded_model import LoadedModel
from ...errors import InvalidRequestError
from ...generation import GenerationRequest, LogitsProcessorFactory, VisionInputs
from .input import input_messages, output_messages
from .response_store import StoredResponse
from .responses_wire import (
    ResponsesRequest,
    chat_tool_choice,
    chat_tools,
    check_unsupported,
    new_id,
    response_format_of,
    thinking_switch,
)
from .store_service import ResponsesStores


@dataclass
class PreparedTurn:
    """A request resolved against the stores: the prompt and what the turn continues."""

    body: ResponsesRequest
    history: list[dict[str, Any]]  # earlier turns + this input, without instructions
    tools: list[dict[str, Any]] | None
    prompt: list[int]
    output: OutputSetup  # how the generated text is read (reasoning markers, tool format)
    # grammar for a forced tool choice or a json_schema text.format
    constraints: tuple[LogitsProcessorFactory, ...] = ()
    vision: VisionInputs | None = None  # input_image parts, on a vision-language model
    # the neutral turn it was built from, and the server's part (a compaction rebuilds it)
    request: TurnRequest | None = None
    settings: TurnSettings | None = None

    def rebuild(self, model: LoadedModel, system: list[dict[str, Any]]) -> None:
        """Render again after ``history`` changed (a compaction), with the same rules."""
        assert self.request is not None
        turn = build(replace(self.request, messages=system + self.history), model,
                     self.settings or TurnSettings())
        self.prompt, self.vision = turn.prompt.tokens, turn.prompt.vision
        self.output, self.constraints = turn.output, turn.constraints


def _earlier_turns(body: ResponsesRequest, stores: ResponsesStores) -> list[dict[str, Any]]:
    if body.previous_response_id is not None:
        if not stores.responses.enabled:
            raise InvalidRequestError(
                "previous_response_id needs the response store, which is disabled on this "
                "server (--responses-store-max-entries 0).", param="previous_response_id")
        stored = stores.responses.get(body.previous_response_id)
        if stored is None:
            raise InvalidRequestError(
                f"Previous response with id '{body.previous_response_id}' not found.",
                param="previous_response_id", code="previous_response_not_found")
        return list(stored.history)
    conv_id = body.conversation_id()
    if conv_id is None:
        return []
    if not stores.conversations.enabled:
        raise InvalidRequestError(
            "conversation needs the conversation store, which is disabled on this server "
            "(--conversation-store-max-entries 0).", param="conversation")
    return list(stores.conversations.get(conv_id) or [])


def prepare(body: ResponsesRequest, model: LoadedModel, stores: ResponsesStores,
            default_max_tokens: int, settings: TurnSettings | None = None) -> PreparedTurn:
    # A prompt past the context is refused by the engine at submit, after any compaction.
    check_unsupported(body)
    tools = chat_tools(body)
    history = _earlier_turns(body, stores)
    if body.input is not None:
        history += input_messages(body.input)
    if not history:
        raise InvalidRequestError("Missing required parameter: 'input'.", param="input")
    system = [{"role": "system", "content": body.instructions}] if body.instructions else []
    request = TurnRequest(
        messages=system + history,
        max_tokens=body.max_output_tokens or body.max_tokens or default_max_tokens,
        tools=tools,
        tool_choice=chat_tool_choice(body),
        response_format=response_format_of(body),
        thinking=thinking_switch(body),
        thinking_budget=body.thinking_budget(),
    )
    settings = settings or TurnSettings()
    turn = build(request, model, settings)
    return PreparedTurn(body, history, turn.output.tools, turn.prompt.tokens, turn.output,
                        turn.constraints, turn.prompt.vision, request, settings)


def generation_request(turn: PreparedTurn, defaults: GenerationDefaults,
                       context: int) -> GenerationRequest:
    default = defaults.n_predict
    if turn.body.context_management is not None:
        # With context management, generation may use all the context left after the prompt.
        default = max(1, context - len(turn.prompt))
    return GenerationRequest(
        prompt_tokens=tuple(turn.prompt),
        max_tokens=turn.body.max_output_tokens or turn.body.max_tokens or default,
        sampling=turn.body.sampling(defaults),
        stop=turn.body.stop_strings(),
        logits_processor_factories=turn.constraints,
        request_id=new_id("resp"),
        vision=turn.vision,
        ignore_eos=bool(turn.body.ignore_eos),
    )


def remember(stores: ResponsesStores, turn: PreparedTurn, body: dict[str, Any]) -> None:
    """Store the finished response and extend its conversation."""
    history = turn.history + output_messages(body["output"])
    if turn.body.store is not False:
        stores.responses.put(body["id"], StoredResponse(body, history))
    conv_id = turn.body.conversation_id()
    if conv_id is not None:
        stores.conversations.put(conv_id, history)
