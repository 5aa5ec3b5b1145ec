"""The requests recorded as goldens: one entry per case, recorded from the reference server on
the bundled fixture model with greedy decoding (``nox -s goldens``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .checks.vision import png_data_uri


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
    # the bundled fixture the reference server records this case on (None: the default one)
    fixture: str | None = None
    # a multipart/form-data upload: {"fields": {...}, "file": spec} (see golden_uploads)
    multipart: dict[str, Any] | None = None

    @property
    def feature(self) -> str:
        return f"golden.{self.family}.{self.name}"


def _chat(content: Any, **fields: Any) -> dict[str, Any]:
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
RESPONSES = "/v1/responses"
MESSAGES = "/v1/messages"
WEATHER = {"type": "object", "required": ["city"],
           "properties": {"city": {"type": "string", "description": "The city name, e.g. Paris."}}}
RESPONSES_TOOLS = [{"type": "function", "name": "get_weather",
                    "description": "Get the current weather for a city.", "parameters": WEATHER}]
MESSAGES_TOOLS = [{"name": "get_weather", "description": "Get the current weather for a city.",
                   "input_schema": WEATHER}]


def _resp(text: Any, **fields: Any) -> dict[str, Any]:
    return {"input": text, "temperature": 0, "max_output_tokens": 48, **fields}


def _history(turns: int) -> list[dict[str, Any]]:
    story = ("Once upon a time, a small robot named Pip lived in a quiet village by the sea. "
             "Every morning, Pip walked to the harbor to help the fishermen mend their nets.")
    items: list[dict[str, Any]] = [{"role": "system", "content": "Be terse."}]
    for _ in range(turns):
        items += [{"role": "user", "content": "Tell me a story."},
                  {"role": "assistant", "content": [{"type": "output_text", "text": story}]}]
    return items + [{"role": "user", "content": "Count to five."}]


# Messages without ``thinking`` render the turn without reasoning (chat's enable_thinking:
# false); the default fixture learned its scripted replies (the Paris call, the robot story) on
# the template's default prompt, which a request asking for thinking renders.
SCRIPTED = {"type": "adaptive"}
SCRIPTED_NOTE = "thinking asked for: the fixture's scripted reply follows the template default"


def _msg(content: Any, **fields: Any) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": content}], "temperature": 0,
            "max_tokens": 48, **fields}


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
    # -- Responses: each stream type and each documented error
    GoldenCase("hello", "responses", "POST", RESPONSES, _resp("Say hello.")),
    GoldenCase("count_stream", "responses", "POST", RESPONSES,
               _resp("Count to five.", stream=True), stream=True),
    GoldenCase("think_stream", "responses", "POST", RESPONSES,
               _resp("What is 2 plus 2? Think first.", stream=True), stream=True),
    GoldenCase("tool_call", "responses", "POST", RESPONSES,
               _resp("What is the weather in Paris?", tools=RESPONSES_TOOLS)),
    GoldenCase("tool_call_stream", "responses", "POST", RESPONSES,
               _resp("What is the weather in Paris?", tools=RESPONSES_TOOLS, stream=True),
               stream=True),
    GoldenCase("story_incomplete_stream", "responses", "POST", RESPONSES,
               _resp("Tell me a story.", max_output_tokens=6, stream=True), stream=True),
    GoldenCase("input_tokens", "responses", "POST", f"{RESPONSES}/input_tokens",
               _resp("Say hello.", instructions="Be terse.")),
    GoldenCase("error_builtin_tool", "responses", "POST", RESPONSES,
               _resp("hi", tools=[{"type": "web_search"}])),
    GoldenCase("error_input_file", "responses", "POST", RESPONSES,
               _resp([{"role": "user", "content": [{"type": "input_file", "file_id": "f"}]}])),
    GoldenCase("error_input_image", "responses", "POST", RESPONSES,
               _resp([{"role": "user", "content": [
                   {"type": "input_image", "image_url": "data:image/png;base64,AA"}]}])),
    GoldenCase("error_truncation", "responses", "POST", RESPONSES,
               _resp("hi", truncation="auto")),
    # OpenAI's background mode needs store (https://platform.openai.com/docs/guides/background)
    GoldenCase("error_background_without_store", "responses", "POST", RESPONSES,
               _resp("hi", background=True, store=False)),
    GoldenCase("error_previous_not_found", "responses", "POST", RESPONSES,
               _resp("hi", previous_response_id="resp_missing")),
    GoldenCase("error_malformed_json", "responses", "POST", RESPONSES, raw="{not json"),
    GoldenCase("error_unknown_id", "responses", "GET", f"{RESPONSES}/resp_missing"),
    GoldenCase("context_management_stream", "responses", "POST", RESPONSES,
               _resp(_history(20), max_output_tokens=8, stream=True,
                     context_management=[{"type": "compaction", "compact_threshold": 64}]),
               stream=True),
    GoldenCase("compact", "responses", "POST", f"{RESPONSES}/compact",
               {"input": _history(3), "keep_tokens": 16, "max_output_tokens": 16}),
    GoldenCase("error_compact_nothing_to_summarize", "responses", "POST",
               f"{RESPONSES}/compact", {"input": "Say hello."}),
    GoldenCase("error_compact_stream", "responses", "POST", f"{RESPONSES}/compact",
               {"input": _history(1), "stream": True}),
    GoldenCase("error_context_management_threshold", "responses", "POST", RESPONSES,
               _resp("hi", context_management=[{"type": "compaction",
                                                "compact_threshold": 0}])),
    # -- Anthropic Messages: each stream type and each documented error
    GoldenCase("hello", "anthropic", "POST", MESSAGES, _msg("Say hello.", system="Be terse.")),
    GoldenCase("count_stream", "anthropic", "POST", MESSAGES,
               _msg("Count to five.", stream=True), stream=True),
    GoldenCase("thinking_stream", "anthropic", "POST", MESSAGES,
               _msg("What is 2 plus 2? Think first.", stream=True,
                    thinking={"type": "enabled", "budget_tokens": 1024}), stream=True),
    GoldenCase("tool_use", "anthropic", "POST", MESSAGES,
               _msg("What is the weather in Paris?", tools=MESSAGES_TOOLS, thinking=SCRIPTED),
               notes=SCRIPTED_NOTE),
    GoldenCase("tool_use_stream", "anthropic", "POST", MESSAGES,
               _msg("What is the weather in Paris?", tools=MESSAGES_TOOLS, stream=True,
                    thinking=SCRIPTED), stream=True, notes=SCRIPTED_NOTE),
    GoldenCase("max_tokens_stream", "anthropic", "POST", MESSAGES,
               _msg("Tell me a story.", max_tokens=6, stream=True), stream=True),
    GoldenCase("stop_sequence", "anthropic", "POST", MESSAGES,
               _msg("Tell me a story.", stop_sequences=["robot"], thinking=SCRIPTED),
               notes=SCRIPTED_NOTE),
    GoldenCase("count_tokens", "anthropic", "POST", f"{MESSAGES}/count_tokens",
               {"messages": [{"role": "user", "content": "Say hello."}], "system": "Be terse."}),
    GoldenCase("error_missing_max_tokens", "anthropic", "POST", MESSAGES,
               {"messages": [{"role": "user", "content": "hi"}]}),
    GoldenCase("error_image", "anthropic", "POST", MESSAGES,
               _msg([{"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                  "data": "AA"}}])),
    GoldenCase("error_malformed_json", "anthropic", "POST", MESSAGES, raw="{not json"),
    # llama-server native routes
    GoldenCase("capital", "llama-native", "POST", "/completion",
               {"prompt": "The capital of France is", "n_predict": 12, "temperature": 0}),
    GoldenCase("capital_stream", "llama-native", "POST", "/completion",
               {"prompt": "The capital of France is", "n_predict": 12, "temperature": 0,
                "stream": True}, stream=True),
    GoldenCase("token_prompt_return_tokens", "llama-native", "POST", "/completion",
               {"prompt": [40, 41, 42], "n_predict": 6, "temperature": 0,
                "return_tokens": True}),
    GoldenCase("error_response_format", "llama-native", "POST", "/completion",
               {"prompt": "x", "response_format": {"type": "json_object"}}),
    GoldenCase("apply_template", "llama-native", "POST", "/apply-template",
               {"messages": [{"role": "user", "content": "Say hello."}]}),
    # llama-server's README features: grammar, json_schema, a mixed prompt, the chat alias
    GoldenCase("grammar_yes_no", "llama-native", "POST", "/completion",
               {"prompt": "Answer:", "n_predict": 8, "temperature": 0,
                "grammar": 'root ::= "yes" | "no"'}),
    GoldenCase("json_schema_object", "llama-native", "POST", "/completion",
               {"prompt": "Data:", "n_predict": 32, "temperature": 0,
                "json_schema": {"type": "object", "properties": {"n": {"type": "integer"}},
                                "required": ["n"]}}),
    GoldenCase("error_invalid_grammar", "llama-native", "POST", "/completion",
               {"prompt": "x", "grammar": "root ::= ("}),
    GoldenCase("mixed_prompt", "llama-native", "POST", "/completion",
               {"prompt": [40, 41, " capital of", 42], "n_predict": 6, "temperature": 0}),
    GoldenCase("chat_alias", "llama-native", "POST", "/chat/completions",
               {"messages": [{"role": "user", "content": "Say hello."}], "max_tokens": 12,
                "temperature": 0}),
    # embeddings and reranking (bundled encoder fixtures)
    GoldenCase("two_texts", "embeddings", "POST", "/v1/embeddings",
               {"input": ["hello world", "the cat sat"]}),
    GoldenCase("native_one_text", "embeddings", "POST", "/embedding", {"content": "hello world"}),
    GoldenCase("error_empty_input", "embeddings", "POST", "/v1/embeddings", {"input": ""}),
    GoldenCase("rerank_top_2", "embeddings", "POST", "/v1/rerank",
               {"query": "What is a panda?", "top_n": 2, "return_documents": True,
                "documents": ["hi", "it is a bear",
                              "The giant panda is a bear species endemic to China."]}),
    GoldenCase("rerank_error_both_forms", "embeddings", "POST", "/v1/rerank",
               {"query": "q", "documents": ["a"], "texts": ["a"]}),
    # routes without their model: 501 not_implemented naming the flag
    GoldenCase("generations_unconfigured", "images", "POST", "/v1/images/generations",
               {"prompt": "a cat", "response_format": "b64_json"}),
    GoldenCase("transcriptions_unconfigured", "audio", "POST", "/v1/audio/transcriptions",
               {"file": "x"}),
    GoldenCase("unconfigured", "realtime", "GET", "/v1/realtime"),
    # mlx-lm's request fields (issue 9).
    GoldenCase("logprobs_integer", "mlx-lm-fields", "POST", CHAT,
               _chat("Count to five.", max_tokens=6, logprobs=3)),
    GoldenCase("repetition_window", "mlx-lm-fields", "POST", CHAT,
               # cache_prompt false: a prompt-cache hit is a split prefill whose last-bit
               # differences can flip this near-tie (the reference's "reproducible greedy")
               _chat("Count to five.", max_tokens=16, repetition_penalty=2.0,
                     repetition_context_size=200, cache_prompt=False)),
    GoldenCase("error_adapters_dotdot", "mlx-lm-fields", "POST", CHAT,
               _chat("Say hello.", adapters="../escape")),
    GoldenCase("error_draft_model", "mlxcel-ext", "POST", CHAT,
               _chat("Say hello.", draft_model="any/draft-model")),
)

# Goldens of mlxcel's own behaviour, not a public contract (the mlxcel extension each checks):
# requests the public API accepts but the reference refuses (its documented 400s), its 501s,
# and its own routes and fields. Replayed only where the profile claims the extension.
EXTENSION_GOLDENS: dict[str, str] = {
    "chat/error_json_object": "refusals",  # OpenAI serves json_object
    "chat/think_reasoning_only": "reasoning_only",
    "llama-native/error_response_format": "refusals",  # llama-server takes response_format
    "tokenize/detokenize_out_of_vocab": "refusals",  # llama-server answers it with text
    "responses/error_builtin_tool": "refusals",  # OpenAI serves web_search
    "responses/error_input_file": "refusals",
    "responses/error_input_image": "refusals",  # a text-only model here
    "responses/error_truncation": "refusals",  # OpenAI serves truncation: auto
    "responses/context_management_stream": "compaction",
    "responses/compact": "compaction",
    "responses/error_compact_nothing_to_summarize": "compaction",
    "responses/error_compact_stream": "compaction",
    "responses/error_context_management_threshold": "compaction",
    "anthropic/error_image": "refusals",  # a text-only model here
    "embeddings/rerank_error_both_forms": "refusals",
    "mlx-lm-fields/error_adapters_dotdot": "adapters",
    "mlxcel-ext/error_draft_model": "refusals",
    "images/generations_unconfigured": "not_implemented",
    "audio/transcriptions_unconfigured": "not_implemented",
    "realtime/unconfigured": "not_implemented",
}


def golden_extension(doc: dict[str, Any]) -> str | None:
    """The mlxcel extension a recorded golden checks, or None for a public-contract case."""
    return EXTENSION_GOLDENS.get(f"{doc['family']}/{doc['case']}")


# Image input (the `vision` family), recorded on the vision-language fixture and replayed by the
# vision family's tests, which a server whose model reads no images reports UNSUPPORTED.
VISION_FIXTURE = "qwen2-vl-tiny"
_IMAGE_URI = png_data_uri((20, 20, 220))
_IMAGE_QUESTION = "What colour is this image?"


def _vision(name: str, path: str, body: dict[str, Any], stream: bool = False) -> GoldenCase:
    return GoldenCase(name, "vision", "POST", path, body, stream=stream, fixture=VISION_FIXTURE)


_CHAT_IMAGE = [{"type": "image_url", "image_url": {"url": _IMAGE_URI}},
               {"type": "text", "text": _IMAGE_QUESTION}]

VISION_CASES: tuple[GoldenCase, ...] = (
    _vision("chat_image_url", CHAT, _chat(_CHAT_IMAGE, max_tokens=12)),
    _vision("chat_image_url_stream", CHAT, _chat(
        _CHAT_IMAGE, max_tokens=12, stream=True,
        stream_options={"include_usage": True}), stream=True),
    _vision("responses_input_image", RESPONSES, _resp([{"role": "user", "content": [
        {"type": "input_image", "image_url": _IMAGE_URI},
        {"type": "input_text", "text": _IMAGE_QUESTION}]}], max_output_tokens=12)),
    _vision("anthropic_image", MESSAGES, _msg([
        {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                     "data": _IMAGE_URI.split(",", 1)[1]}},
        {"type": "text", "text": _IMAGE_QUESTION}], max_tokens=12)),
)

# Whisper transcription and translation (the `audio` family), recorded on the audio-only server
# with the Whisper fixture and replayed by the audio family's tests, which a server without an
# audio model reports UNSUPPORTED. One 1 s tone at temperature 0: the fixture's seeded fallback
# decode gives one transcript.
AUDIO_FIXTURE = "whisper-tiny-random"
TRANSCRIBE = "/v1/audio/transcriptions"
TRANSLATE = "/v1/audio/translations"
_TONE = {"filename": "clip.wav", "content_type": "audio/wav",
         "wav_tone": {"seconds": 1.0, "hz": 440.0}}
_AUDIO_LIMIT = 25 * 1024 * 1024


def _audio(name: str, path: str, file: dict[str, Any] = _TONE, **fields: str) -> GoldenCase:
    return GoldenCase(name, "audio", "POST", path, fixture=AUDIO_FIXTURE, multipart={
        "fields": {"temperature": "0", **fields}, "file": file})


AUDIO_CASES: tuple[GoldenCase, ...] = (
    _audio("transcriptions_json", TRANSCRIBE, response_format="json"),
    _audio("transcriptions_verbose_json", TRANSCRIBE, response_format="verbose_json"),
    _audio("transcriptions_text", TRANSCRIBE, response_format="text"),
    _audio("transcriptions_srt", TRANSCRIBE, response_format="srt"),
    _audio("transcriptions_vtt", TRANSCRIBE, response_format="vtt"),
    _audio("translations_json", TRANSLATE, response_format="json"),
    _audio("translations_verbose_json", TRANSLATE, response_format="verbose_json"),
    _audio("error_not_wav", TRANSCRIBE, {"filename": "notes.txt", "content_type": "text/plain",
                                         "text": "This is not audio."}),
    _audio("error_too_large", TRANSCRIBE, {**_TONE, "zero_pad_to": _AUDIO_LIMIT + 1}),
)
