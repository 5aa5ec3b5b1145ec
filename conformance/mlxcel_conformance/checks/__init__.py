"""The suite's named checks. Importing this package registers every check in `REGISTRY`.

One module per protocol: `sse_checks` (framing), `openai_chat`, `openai_completions`,
`openai_common` (usage, logprobs), `chat_semantics` (tools, reasoning, structured output),
`errors_checks`, `responses_events`, `responses_body`, `anthropic_events`, `anthropic_body`,
`engine_checks`, `concurrency` (many streams at once), `llama_native` and `llama_native_docs`
(llama-server's native routes and its README's features), `vision` (image input), `speculative`,
`speech` (text-to-speech audio), `images` (image generation), `robustness` (hostile requests),
`backpressure` (clients that read or send slowly),
`anthropic_schema_keys` (the Message keys of Anthropic's current schema), `anthropic_prefill`
(a trailing assistant message continued), `chat_choices` (``n``),
`responses_store` (what a Responses store keeps: after a disconnect, a restart; field bounds),
`responses_background` (background mode: queued, polled, cancelled, resumed),
`inline_checks` (checks whose logic runs inline in a test, registered by name).
"""

from __future__ import annotations

import importlib

from mlxcel_conformance.checks.registry import (
    REGISTRY,
    CheckSpec,
    check,
    fail,
    get_check,
    run_check,
)

CHECK_MODULES = (
    "sse_checks",
    "openai_common",
    "openai_chat",
    "openai_completions",
    "chat_semantics",
    "errors_checks",
    "responses_events",
    "responses_body",
    "anthropic_events",
    "anthropic_body",
    "engine_checks",
    "concurrency",
    "llama_native",
    "llama_native_docs",
    "embeddings",
    "mlx_lm_fields",
    "vision",
    "speculative",
    "speech",
    "images",
    "robustness",
    "backpressure",
    "field_parity",
    "anthropic_schema_keys",
    "anthropic_prefill",
    "chat_choices",
    "responses_store",
    "responses_background",
    "inline_checks",
)

for _module in CHECK_MODULES:
    importlib.import_module(f"{__name__}.{_module}")

__all__ = ["REGISTRY", "CheckSpec", "check", "fail", "get_check", "run_check", "CHECK_MODULES"]
