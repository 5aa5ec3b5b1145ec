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
)
