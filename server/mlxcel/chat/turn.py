"""One chat turn for every API family: a family-neutral ``TurnRequest`` becomes the rendered
prompt, its constraints and how the output is read. Chat Completions, Responses and Anthropic
Messages each translate only their own fields into a ``TurnRequest``; what a turn means is
decided here, once.

Order of a turn: the ``tool_choice`` rules (``tool_choice.py``: 400s, the tools the template
sees, the instruction), the constraint (llama-server's ``grammar``/``json_schema``, else a
forced call's grammar, else the response format), the template kwargs (server default <
request < the thinking switch), the rolling reasoning checkpoint, the instruction, the
continued or prefilled assistant message, the template; then the thinking budget, which needs
to know whether the rendered prompt opened a reasoning block.

``TurnSettings`` is the server's part: ``--chat-template`` (installed on the model when it
loads, so every route that renders or counts sees it from the first request), the
``--chat-template-kwargs`` default and ``--prefill-assistant``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..errors import InvalidRequestError
from ..generation import LogitsProcessorFactory
from ..generation.model_view import ModelView
from ..structured.response_format import (
    check_response_format,
    is_constraining,
    response_format_factories,
)
from ..structured.user_grammar import extra_grammar_factories
from .continuation import prefilled_field
from .forced_choice import forced_call_factories
from .output import OutputSetup, output_setup
from .reasoning import reasoning_markers
from .template import RenderedPrompt, apply_template_override, render_chat
from .template_kwargs import merged_kwargs
from .thinking import apply_rolling_checkpoint
from .thinking_budget import budget_factory
from .tool_calls import tool_format_of
from .tool_choice import ToolPlan, place_instruction, plan_tools

# The template variable Qwen3-style templates read to render a turn without reasoning (an
# empty ``<think></think>`` block in the generation prompt); transformers passes it through.
THINKING_SWITCH = "enable_thinking"


class TurnConfig(Protocol):
    """The server settings a turn reads (``ServerConfig`` has them)."""

    @property
    def chat_template(self) -> str | None: ...
    @property
    def chat_template_kwargs(self) -> Mapping[str, Any]: ...
    @property
    def prefill_assistant(self) -> bool: ...


@dataclass(frozen=True)
class TurnSettings:
    """What the server adds to every turn (``--chat-template``, ``--chat-template-kwargs``,
    ``--prefill-assistant``)."""

    chat_template: str | None = None
    template_kwargs: dict[str, Any] = field(default_factory=dict)
    prefill_assistant: bool = False

    @classmethod
    def of(cls, config: TurnConfig) -> TurnSettings:
        """From the server's settings (``ServerConfig``; chat/ imports no config module)."""
        return cls(config.chat_template, dict(config.chat_template_kwargs),
                   config.prefill_assistant)

    def install(self, model: ModelView) -> None:
        """Put ``--chat-template`` on a freshly loaded model (the engine's load hook)."""
        apply_template_override(model, self.chat_template)


@dataclass(frozen=True)
class TurnRequest:
    """A chat turn as every family asks for it, in the chat-template shapes: ``messages`` with
    the system message first, ``tools`` as chat function tools (all declared), ``tool_choice``
    as chat's (``None``, ``"auto"``, ``"none"``, ``"required"`` or a named function),
    ``response_format`` as chat's. ``thinking``: ``None`` leaves the template's default,
    ``False`` renders the turn without reasoning, ``True`` with it. ``continue_final``: the
    assistant message field the request asks to continue (``chat/continuation.py``); when
    ``None``, ``--prefill-assistant`` may continue a trailing assistant message."""

    messages: list[dict[str, Any]]
    max_tokens: int
    tools: list[dict[str, Any]] | None = None
    tool_choice: Any = None
    response_format: dict[str, Any] | None = None
    grammar_fields: dict[str, Any] | None = None  # llama-server's grammar / json_schema
    template_kwargs: dict[str, Any] = field(default_factory=dict)
    continue_final: str | None = None
    thinking: bool | None = None
    thinking_budget: int | None = None
    role_mapping: dict[str, str] | None = None  # mlx-lm's, for a model without a template


@dataclass(frozen=True)
class TurnPlan:
    """What the checks of a turn leave: the tool plan, the constraints and the kwargs."""

    tools: ToolPlan
    constraints: tuple[LogitsProcessorFactory, ...]
    template_kwargs: dict[str, Any]


@dataclass(frozen=True)
class Turn:
    """A built turn: the prompt, every logits-processor factory (the thinking budget first),
    how the output is read, and whether a tool call was forced."""

    prompt: RenderedPrompt
    constraints: tuple[LogitsProcessorFactory, ...]
    output: OutputSetup
    forced: bool


def _template_kwargs(request: TurnRequest, settings: TurnSettings) -> dict[str, Any]:
    kwargs = merged_kwargs(settings.template_kwargs, request.template_kwargs)
    if request.thinking is not None:
        kwargs[THINKING_SWITCH] = request.thinking
    return kwargs


def _constraints(request: TurnRequest, model: ModelView, plan: ToolPlan
                 ) -> tuple[LogitsProcessorFactory, ...]:
    constraining = is_constraining(request.response_format)
    if plan.required and constraining:
        raise InvalidRequestError(
            "A forced tool_choice cannot be combined with a constraining output format.",
            param="tool_choice")
    other = "a forced tool_choice" if plan.required else \
        "a constraining output format" if constraining else None
    own = extra_grammar_factories(model, request.grammar_fields, other)
    if own:
        return own
    if plan.required and plan.tools:
        return forced_call_factories(model, tool_format_of(model), plan.tools,
                                     request.max_tokens)
    return response_format_factories(model, request.response_format)


def check(request: TurnRequest, model: ModelView, settings: TurnSettings) -> TurnPlan:
    """Every 400 of a turn that comes before rendering, and what they leave."""
    check_response_format(request.response_format)
    plan = plan_tools(request.tools, request.tool_choice)
    constraints = _constraints(request, model, plan)
    return TurnPlan(plan, constraints, _template_kwargs(request, settings))


def _render(request: TurnRequest, model: ModelView, settings: TurnSettings,
            plan: TurnPlan) -> RenderedPrompt:
    kwargs = plan.template_kwargs
    messages = apply_rolling_checkpoint(request.messages, reasoning_markers(model),
                                        bool(kwargs.get("preserve_thinking")))
    messages = place_instruction(messages, plan.tools.instruction)
    continued = request.continue_final
    if continued is None and settings.prefill_assistant:
        continued = prefilled_field(messages)  # llama-server's --prefill-assistant
    return render_chat(model, messages, tools=plan.tools.tools, template_kwargs=kwargs,
                       role_mapping=request.role_mapping, continue_final=continued)


def render_turn(request: TurnRequest, model: ModelView, settings: TurnSettings
                ) -> RenderedPrompt:
    """The prompt a turn renders, checked as ``build`` checks it: what a token count counts."""
    return _render(request, model, settings, check(request, model, settings))


def build(request: TurnRequest, model: ModelView, settings: TurnSettings) -> Turn:
    """The turn's prompt, constraints and output setup (reads media on a vision model: run it
    off the event loop)."""
    plan = check(request, model, settings)
    prompt = _render(request, model, settings, plan)
    output = output_setup(model, prompt.text, plan.tools.tools)
    constraints = plan.constraints
    if request.thinking is not False:
        budget = budget_factory(model, request.thinking_budget, output.starts_in_reasoning,
                                output.reasoning)
        if budget is not None:
            constraints = (budget, *constraints)
    return Turn(prompt, constraints, output, plan.tools.required)
