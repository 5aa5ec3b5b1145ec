"""The requests recorded as goldens: one entry per case, recorded from the reference server on
the bundled fixture model with greedy decoding (``nox -s goldens``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class GoldenCase:
    name: str
    family: str
    method: str
    path: str
    json: Any = None
    raw: str | None = None  # a body that is deliberately not JSON
    stream: bool = False
    notes: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def feature(self) -> str:
        return f"golden.{self.family}.{self.name}"


def _chat(content: str, **fields: Any) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": content}], "temperature": 0,
            "max_tokens": 32, **fields}


_WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string", "description": "The city name, e.g. Paris."}},
            "required": ["city"],
        },
    },
}
_ASK_WEATHER = "What is the weather in Paris?"
_ANIMAL = {"type": "json_schema", "json_schema": {"name": "animal", "schema": {
    "type": "object", "additionalProperties": False, "required": ["animal", "habitat"],
    "properties": {"animal": {"type": "string", "maxLength": 12},
                   "habitat": {"enum": ["forest", "desert", "ocean", "urban", "unknown"]}}}}}

CHAT = "/v1/chat/completions"
COMPLETIONS = "/v1/completions"

CASES: tuple[GoldenCase, ...] = (
    GoldenCase("hello", "chat", "POST", CHAT, _chat("Say hello.")),
    GoldenCase("hello_stream_usage", "chat", "POST", CHAT,
               _chat("Say hello.", stream=True, stream_options={"include_usage": True}),
               stream=True),
    GoldenCase("count_stream", "chat", "POST", CHAT, _chat("Count to five.", stream=True),
               stream=True),
    GoldenCase("story_length", "chat", "POST", CHAT, _chat("Tell me a story.", max_tokens=8)),
    GoldenCase("story_stop", "chat", "POST", CHAT, _chat("Tell me a story.", stop=[","])),
    GoldenCase("unicode_stream", "chat", "POST", CHAT,
               _chat("Say hi in Japanese with an emoji.", stream=True), stream=True),
    GoldenCase("error_missing_messages", "chat", "POST", CHAT, {"max_tokens": 4}),
    GoldenCase("error_malformed_json", "chat", "POST", CHAT, raw="{not json"),
    GoldenCase("error_negative_max_tokens", "chat", "POST", CHAT,
               _chat("Say hello.", max_tokens=-1)),
    # -- chat semantics: tool calls, reasoning, tool_choice, structured output
    GoldenCase("tool_call", "chat", "POST", CHAT, _chat(_ASK_WEATHER, tools=[_WEATHER],
                                                        max_tokens=64)),
    GoldenCase("tool_call_stream", "chat", "POST", CHAT,
               _chat(_ASK_WEATHER, tools=[_WEATHER], max_tokens=64, stream=True), stream=True),
    GoldenCase("tool_call_stream_logprobs", "chat", "POST", CHAT,
               _chat(_ASK_WEATHER, tools=[_WEATHER], max_tokens=64, stream=True, logprobs=True),
               stream=True, notes="suppressed delimiters still carry their logprobs"),
    GoldenCase("tool_call_not_sent", "chat", "POST", CHAT, _chat(_ASK_WEATHER, max_tokens=64)),
    GoldenCase("tool_choice_required", "chat", "POST", CHAT,
               _chat("Say hello.", tools=[_WEATHER], tool_choice="required", max_tokens=64)),
    GoldenCase("error_tool_choice_required_no_tools", "chat", "POST", CHAT,
               _chat("Say hello.", tool_choice="required")),
    GoldenCase("think", "chat", "POST", CHAT, _chat("What is 2 plus 2? Think first.")),
    GoldenCase("think_stream", "chat", "POST", CHAT,
               _chat("What is 2 plus 2? Think first.", stream=True), stream=True),
    GoldenCase("think_reasoning_only", "chat", "POST", CHAT,
               _chat("What is 2 plus 2? Think first.", max_tokens=4)),
    GoldenCase("json_schema", "chat", "POST", CHAT,
               {"messages": [{"role": "system", "content": "Reply with JSON only."},
                             {"role": "user", "content": "Describe a cat as JSON."}],
                "temperature": 0, "max_tokens": 48, "response_format": _ANIMAL}),
    GoldenCase("error_json_object", "chat", "POST", CHAT,
               _chat("Say hello.", response_format={"type": "json_object"})),
    GoldenCase("capital", "completions", "POST", COMPLETIONS,
               {"prompt": "The capital of France is", "max_tokens": 12, "temperature": 0}),
    GoldenCase("capital_stream_usage", "completions", "POST", COMPLETIONS,
               {"prompt": "The capital of France is", "max_tokens": 12, "temperature": 0,
                "stream": True, "stream_options": {"include_usage": True}}, stream=True),
    GoldenCase("error_prompt_object", "completions", "POST", COMPLETIONS,
               {"prompt": {"text": "x"}, "max_tokens": 4}),
    GoldenCase("models", "models", "GET", "/v1/models"),
    GoldenCase("hello", "tokenize", "POST", "/tokenize", {"content": "Hello, world! 👋"}),
    GoldenCase("detokenize", "tokenize", "POST", "/detokenize", {"tokens": [40, 41, 42]}),
    GoldenCase("detokenize_out_of_vocab", "tokenize", "POST", "/detokenize",
               {"tokens": [1, 999999]}),
)
