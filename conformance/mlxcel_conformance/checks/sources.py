"""Where each check's rule comes from: its tier and its source, one row per check name.

Two tiers (docs/conformance/verdicts.md, "Tiers"):

- ``contract``: what a public contract requires of *any* server: OpenAI's API reference and
  published OpenAPI document, Anthropic's API reference and OpenAPI document, the Open Responses
  specification, llama-server's own README (``tools/server/README.md``), mlx-lm's documented
  chat fields, the Server-Sent Events standard, and the real recordings in
  ``fixtures/real-streams/``. Every contract row names that source; a FAIL carries it.
- ``extension``: mlxcel's own features and refusals (the reference's API document,
  ``openapi/openapi.yaml``). These run only where the target's profile (or a probe) says the
  server claims them, and are reported apart.

A check used for both (``error_status``, ``http_status``...) is registered with the tier of its
usual use; the call that applies it to an extension passes ``source=`` to ``fail`` and runs
inside an extension feature.
"""

from __future__ import annotations

import enum


class Tier(str, enum.Enum):
    CONTRACT = "contract"
    EXTENSION = "extension"


# Short citations, reused below. Each names a public document by URL and section, or a file in
# this repository; a test (conformance/tests/test_check_sources.py) holds every row to that.
OPENAPI = "https://github.com/openai/openai-openapi (openapi.yaml)"


def openai(page: str, section: str) -> str:
    """OpenAI's API reference page ``page``, section ``section``."""
    return f"OpenAI API reference, {section} (https://platform.openai.com/docs/api-reference/{page})"


OPENAI_CHAT = ("OpenAI API reference, Chat Completions "
               "(https://platform.openai.com/docs/api-reference/chat/object; " + OPENAPI
               + ": CreateChatCompletionResponse)")
OPENAI_CHUNK = ("OpenAI API reference, Chat Completions streaming "
                "(https://platform.openai.com/docs/api-reference/chat-streaming; " + OPENAPI
                + ": CreateChatCompletionStreamResponse); "
                "fixtures/real-streams/openai-chat/stream/")
OPENAI_CHAT_REQUEST = openai("chat/create", "Create chat completion")
OPENAI_COMPLETIONS = ("OpenAI API reference, Completions "
                      "(https://platform.openai.com/docs/api-reference/completions; " + OPENAPI
                      + ": CreateCompletionResponse)")
OPENAI_ERRORS = ("OpenAI API reference, Error codes "
                 "(https://platform.openai.com/docs/guides/error-codes); "
                 "fixtures/real-streams/errors/openai-*.json")
OPENAI_SDK = ("openai-python (https://github.com/openai/openai-python), src/openai/_client.py: "
              "OpenAI(_strict_response_validation=True) validates every answer against the "
              "pydantic types in src/openai/types/")
RESPONSES = ("OpenAI API reference, Responses "
             "(https://platform.openai.com/docs/api-reference/responses/object; " + OPENAPI
             + ": Response); Open Responses specification, ResponseResource "
             "(https://www.openresponses.org/specification)")
RESPONSES_STREAM = ("OpenAI API reference, Responses streaming events "
                    "(https://platform.openai.com/docs/api-reference/responses-streaming); Open "
                    "Responses specification, streaming (https://www.openresponses.org/"
                    "specification); fixtures/real-streams/openai-responses/stream/")
ANTHROPIC = ("Anthropic API reference, Messages, Message object "
             "(https://docs.anthropic.com/en/api/messages); fixtures/real-streams/anthropic/json/")
ANTHROPIC_STREAM = ("Anthropic API reference, Streaming Messages, event flow "
                    "(https://docs.anthropic.com/en/docs/build-with-claude/streaming); "
                    "fixtures/real-streams/anthropic/stream/")
ANTHROPIC_ERRORS = ("Anthropic API reference, Errors (https://docs.anthropic.com/en/api/errors); "
                    "fixtures/real-streams/errors/anthropic-*.json")
ANTHROPIC_SDK = ("anthropic-sdk-python (https://github.com/anthropics/anthropic-sdk-python), "
                 "src/anthropic/_client.py: Anthropic(_strict_response_validation=True) validates "
                 "every answer against the pydantic types in src/anthropic/types/")
ANTHROPIC_COUNT_TOKENS = ("Anthropic API reference, Count tokens in a Message "
                          "(https://docs.anthropic.com/en/api/messages-count-tokens): "
                          "input_tokens counts the messages, system prompt and tools, an "
                          "estimate that may differ by a small amount")
LLAMA = ("llama-server README (https://github.com/ggml-org/llama.cpp/blob/master/tools/server/"
         "README.md)")
MLX_LM = ("mlx-lm SERVER.md (https://github.com/ml-explore/mlx-lm/blob/main/mlx_lm/SERVER.md), "
          "chat completions request fields")
SSE = ("WHATWG HTML Living Standard, Server-sent events, event stream interpretation "
       "(https://html.spec.whatwg.org/multipage/server-sent-events.html"
       "#event-stream-interpretation)")
RFC9110 = "RFC 9110 (https://www.rfc-editor.org/rfc/rfc9110)"
SPEC_VIEW = "openapi/openapi.yaml, contract view: properties without x-mlxcel-extension"
BACKGROUND = ("OpenAI guide, Background mode (https://platform.openai.com/docs/guides/"
              "background)")
REFERENCE = "mlxcel API reference (openapi/openapi.yaml, docs/)"
# A greedy stream repeating the same request's greedy body: no public text promises it (OpenAI
# calls even a seeded answer best effort; llama-server's README promises it for its own
# /completion only), so elsewhere it is the reference's promise, the `sampling` extension.
GREEDY_REPEATS = (REFERENCE + ": docs/chat.md, Seeds and greedy decoding (a greedy answer "
                  "prefilled cold repeats token for token)")

C, E = Tier.CONTRACT, Tier.EXTENSION

SOURCES: dict[str, tuple[Tier, str]] = {
    # -- transport and framing
    "json_body": (C, "RFC 8259 (https://www.rfc-editor.org/rfc/rfc8259); every API above "
                     "answers JSON bodies"),
    "answer_readable": (C, "the route's answer object, whose choices[0], output or content "
                           "every behaviour reads: " + OPENAI_CHAT + "; " + RESPONSES + "; "
                           + ANTHROPIC),
    "http_status": (C, "the status the API reference of the route's family documents for "
                       "the request: " + OPENAI_ERRORS + "; " + ANTHROPIC_ERRORS + "; " + LLAMA),
    "sse_content_type": (C, SSE + ": text/event-stream"),
    "sse_framing": (C, SSE),
    "done_terminator": (C, OPENAI_CHUNK + ": the stream ends with data: [DONE]"),
    "no_done_terminator": (C, RESPONSES_STREAM + "; " + ANTHROPIC_STREAM),
    "schema_conformance": (C, SPEC_VIEW + " (public shapes only)"),
    "schema_extension": (E, REFERENCE + ": x-mlxcel-extension properties"),
    "schemathesis": (E, REFERENCE + ": every operation fuzzed by schemathesis' checks"),
    "golden_transcript": (C, "goldens/ in shape mode: keys the public contract requires "
                             "(exact mode: the reference on its own fixture)"),
    "field_parity": (C, "the public specs' required keys (" + OPENAPI + "; "
                        "https://docs.anthropic.com/en/api/messages), carried by every "
                        "fixtures/real-streams/ recording"),
    "field_parity_current": (C, "fixtures/real-streams/ recordings and the current specs ("
                                + OPENAPI + "; https://docs.anthropic.com/en/api/messages): "
                                "every key the real service sends today"),
    "anthropic_schema_keys": (C, "Anthropic API reference, Messages "
                                 "(https://docs.anthropic.com/en/api/messages: Message.container, "
                                 "Usage.output_tokens_details; anthropic-sdk-python types/"
                                 "message.py, usage.py); fixtures/real-streams/anthropic/ for "
                                 "the older shape"),
    "chat_choices": (C, OPENAI_CHAT_REQUEST + ": n and choices[].index; "
                        "fixtures/real-streams/openai-chat/stream/openai-chat-stream-n3-choices-2024.sse"),
    # -- OpenAI chat and completions
    "chat_completion_body": (C, OPENAI_CHAT),
    "chat_chunk_object": (C, OPENAI_CHUNK),
    "chat_first_chunk_role": (C, OPENAI_CHUNK + ": the first delta of a choice has role"),
    "chat_chunk_order": (C, OPENAI_CHUNK),
    "tool_call_deltas": (C, OPENAI_CHUNK + ": ChatCompletionMessageToolCallChunk"),
    "usage_chunk_last": (C, openai("chat/create", "stream_options.include_usage")),
    "no_usage_chunk": (C, openai("chat/create", "stream_options.include_usage")),
    "logprobs_shape": (C, openai("chat/object", "ChatCompletionTokenLogprob")),
    "completion_body": (C, OPENAI_COMPLETIONS),
    "completion_chunk_order": (C, OPENAI_COMPLETIONS + " (stream)"),
    "max_tokens_honoured": (C, openai("chat/create", "max_tokens / max_completion_tokens")),
    "stop_string_not_leaked": (C, openai("chat/create", "stop") + ": 'The returned text "
                                  "will not contain the stop sequence'"),
    "stop_not_leaked": (C, openai("chat/create", "stop")),
    "seed_deterministic": (E, REFERENCE + ": the same seed gives the same text (OpenAI's seed "
                              "is best effort: determinism is not guaranteed)"),
    "logprobs_match_sampled_token": (C, openai("chat/create", "logprobs: the output tokens")),
    "stream_matches_json": (C, LLAMA + ", POST /completion (stream)"),
    "tool_markup_hidden": (C, openai("chat/object", "function calling: calls in tool_calls")),
    "tool_calls_finish_reason": (C, OPENAI_CHAT + ": finish_reason tool_calls"),
    "tool_call_declared": (C, openai("chat/create", "tool_choice and tools[].function")),
    "forced_tool_call": (C, openai("responses/create", "Responses tool_choice required")
                           + "; Anthropic API reference, Messages tool_choice any "
                           "(https://docs.anthropic.com/en/api/messages)"),
    "reasoning_split": (C, "the server's documented reasoning field: reasoning_content "
                           "(DeepSeek API, https://api-docs.deepseek.com/guides/reasoning_model; "
                           + LLAMA + ") or reasoning (" + MLX_LM + "; vLLM)"),
    "reasoning_only": (E, REFERENCE + ": message.reasoning_only"),
    "structured_output_valid": (C, openai("chat/create", "response_format json_schema")),
    "error_no_schema_echo": (E, REFERENCE + ": schema limits"),
    "template_kwargs": (C, LLAMA + ", chat_template_kwargs"),
    "models_list": (C, openai("models/list", "List models")),
    "health_ready": (C, LLAMA + ", GET /health"),
    # -- errors
    "error_status": (C, "the status the API reference of the route's family documents for a "
                        "rejected request: " + OPENAI_ERRORS + "; " + ANTHROPIC_ERRORS + "; "
                        + LLAMA),
    "error_body_openai": (C, OPENAI_ERRORS),
    "error_body_llama": (C, LLAMA + ", API errors"),
    "error_body_anthropic": (C, ANTHROPIC_ERRORS),
    "auth_health_exempt": (C, LLAMA + ", --api-key: /health is public"),
    # -- Responses
    "response_body": (C, RESPONSES),
    "responses_event_order": (C, RESPONSES_STREAM),
    "responses_usage_terminal": (C, RESPONSES_STREAM + ": usage on the terminal response"),
    "response_compaction": (E, REFERENCE + ": /v1/responses/compact, context_management"),
    "response_final_after_disconnect": (C, RESPONSES + ": status is completed, failed, "
                                        "in_progress, cancelled, queued or incomplete; a "
                                        "response no longer generated is not in_progress"),
    "response_cancelled_promptly": (E, REFERENCE + ": docs/responses.md, a stored stream "
                                    "whose client leaves is stored cancelled within 1 s"),
    "stored_response_survives_restart": (E, REFERENCE + ": docs/responses.md, the store "
                                         "survives SIGKILL and a restart"),
    "field_limits_within": (C, OPENAPI + ": Metadata (16 pairs, keys <= 64, values <= 512 "
                            "characters), safety_identifier maxLength 64, top_logprobs 0-20"),
    "field_limits_no_server_error": (C, OPENAI_ERRORS + ": a malformed request is a 4xx"),
    "field_limits_refused": (E, REFERENCE + ": a 400 naming the field past each bound"),
    "background_queued": (C, BACKGROUND + ": a background response is returned at once, "
                          "status queued"),
    "background_polled_final": (C, BACKGROUND + ": poll the response until it is no longer "
                                "queued or in_progress"),
    "background_cancelled": (C, BACKGROUND + "; " + openai("responses/cancel",
                                                          "Cancel a response")),
    "background_cancel_idempotent": (C, BACKGROUND + ": cancelling twice is idempotent"),
    "background_resume_exact": (C, BACKGROUND + ": resume a stream with starting_after; "
                                + openai("responses/get", "Retrieve a model response: stream, "
                                         "starting_after")),
    # -- Anthropic
    "anthropic_message_body": (C, ANTHROPIC),
    "anthropic_prefill": (C, "Anthropic API reference, Messages, messages "
                             "(https://docs.anthropic.com/en/api/messages): \"If the final "
                             "message uses the assistant role, the response content will "
                             "continue immediately from the content in that message\""),
    "anthropic_event_order": (C, ANTHROPIC_STREAM),
    "anthropic_overloaded_529": (E, REFERENCE + ": admission control on /v1/messages "
                                     "(529 overloaded_error is Anthropic's shape)"),
    # -- SDK round trips
    "sdk_openai": (C, OPENAI_SDK),
    "sdk_anthropic": (C, ANTHROPIC_SDK),
    # -- llama-server native routes
    "native_completion_body": (C, LLAMA + ", POST /completion (response)"),
    "native_stream_sequence": (C, LLAMA + ", POST /completion (stream: no [DONE])"),
    "native_timings": (C, LLAMA + ", POST /completion timings"),
    "native_n_probs": (C, LLAMA + ", POST /completion n_probs"),
    "native_stop_word": (C, LLAMA + ", POST /completion stop, stopping_word"),
    "native_return_tokens": (C, LLAMA + ", POST /completion return_tokens"),
    "native_multi_prompt": (C, LLAMA + ", POST /completion: prompt as a list"),
    "native_dry": (C, LLAMA + ", POST /completion dry_* sampling"),
    "prompt_forms": (C, LLAMA + ", POST /completion: prompt forms"),
    "apply_template": (C, LLAMA + ", POST /apply-template"),
    "infill_not_supported": (E, REFERENCE + ": /infill without an infill model"),
    "disconnect_frees_server": (C, LLAMA + ", POST /completion (a closed stream stops)"),
    "detokenize_oov": (C, LLAMA + ", POST /detokenize"),
    "llama_props": (C, LLAMA + ", GET /props (response format)"),
    "native_props_shape": (C, LLAMA + ", GET /props (response format)"),
    "native_slots_shape": (C, LLAMA + ", GET /slots (response format)"),
    "native_aliases": (C, LLAMA + ": routes served without /v1"),
    "native_grammar": (C, LLAMA + ", POST /completion grammar"),
    "native_json_schema": (C, LLAMA + ", POST /completion json_schema"),
    "native_prompt_progress": (C, LLAMA + ", POST /completion return_progress"),
    "native_timings_per_token": (C, LLAMA + ", POST /completion timings_per_token"),
    "native_post_sampling_probs": (C, LLAMA + ", POST /completion post_sampling_probs"),
    "native_error_body": (C, LLAMA + ", API errors"),
    "native_context_exceeded": (C, LLAMA + ", API errors (exceed_context_size_error)"),
    "llama_slots": (C, LLAMA + ", GET /slots (response format)"),
    "tokenize_round_trip": (C, LLAMA + ", POST /tokenize and POST /detokenize"),
    "tokenize_pieces": (C, LLAMA + ", POST /tokenize with_pieces"),
    # -- observability and scheduling (the reference's shapes)
    "slots_freed_after_disconnect": (E, REFERENCE + ": /slots state"),
    "metrics_names": (E, REFERENCE + ": /metrics mlxcel_* names"),
    "metrics_counters_exact": (E, REFERENCE + ": /metrics counters"),
    "cache_stats_fields": (E, REFERENCE + ": /v1/cache/stats"),
    "priority_order": (E, REFERENCE + ": X-Priority"),
    "server_busy_503": (E, REFERENCE + ": admission control (503 server_busy)"),
    "seed_after_cache_hit": (E, REFERENCE + ": docs/chat.md, Seeds and greedy decoding (a "
                             "cold prefill repeats bit for bit; a cache hit may move the last "
                             "bits)"),
    "seeded_determinism": (E, REFERENCE + ": a seed drives the request's own draws "
                           "(docs/chat.md, Seeds and greedy decoding)"),
    "loop_detection": (E, REFERENCE + ": loop detection"),
    "concurrent_streams_complete": (E, REFERENCE + ": admission control answers every stream "
                                       "(2xx or 503) under load"),
    # -- embeddings and rerank
    "embedding_body_openai": (C, openai("embeddings/create", "Embeddings")),
    "embedding_base64": (C, openai("embeddings/create", "Embeddings encoding_format base64")),
    "embedding_body_native": (C, LLAMA + ", POST /embedding"),
    "embedding_vectors": (C, openai("embeddings/create", "Embeddings")),
    "embedding_deterministic": (C, openai("embeddings/create", "Embeddings")),
    "embedding_alongside_generation": (E, REFERENCE + ": encoders beside the text model"),
    "rerank_order": (C, LLAMA + ", POST /reranking"),
    "rerank_documents": (C, LLAMA + ", POST /reranking"),
    # -- mlx-lm's documented fields
    "mlx_lm_integer_logprobs": (C, MLX_LM + ": logprobs (integer)"),
    "mlx_lm_fields_accepted": (C, MLX_LM),
    "mlx_lm_fields_neutral": (C, MLX_LM),
    "mlx_lm_repetition_window": (C, MLX_LM + ": repetition_penalty, repetition_context_size"),
    "mlx_lm_logit_bias": (C, MLX_LM + ": logit_bias"),
    "adapter_path_refused": (E, REFERENCE + ": --adapter-dir allowlist"),
    # -- speculative decoding (mlxcel's timings draft fields)
    "draft_timings_fields": (E, REFERENCE + ": timings draft_n, draft_n_accepted, ..."),
    "draft_timings_finish_chunk_only": (E, REFERENCE + ": timings on the finish chunk"),
    "draft_timings_absent_without_drafter": (E, REFERENCE + ": timings draft fields"),
    "speculative_greedy_exact": (E, REFERENCE + ": speculative decoding is lossless"),
    "draft_model_confined": (E, REFERENCE + ": draft_model"),
    # -- vision
    "vision_probe": (C, openai("chat/create", "image_url content parts")),
    "vision_pixels_reach_model": (C, openai("chat/create", "image_url content parts")),
    "vision_families_agree": (E, REFERENCE + ": one image path for every family"),
    "vision_local_path_refused": (E, REFERENCE + ": --media-path"),
    # -- audio, speech, images
    "transcription_body_json": (C, openai("audio/createTranscription",
                                          "Create transcription (json)")),
    "transcription_body_verbose": (C, openai("audio/createTranscription",
                                             "Create transcription (verbose_json)")),
    "transcription_text_format": (C, openai("audio/createTranscription",
                                            "Create transcription (text)")),
    "speech_wav_format": (C, openai("audio/createSpeech", "Create speech (wav)")),
    "speech_pcm_format": (C, openai("audio/createSpeech", "Create speech (pcm)")),
    "speech_sse_events": (C, openai("audio/createSpeech", "Create speech stream_format sse")),
    "speech_audible": (C, openai("audio/createSpeech", "Create speech")),
    "speech_deterministic": (E, REFERENCE + ": deterministic speech"),
    "speech_depends_on_input": (C, openai("audio/createSpeech", "Create speech")),
    "image_generation_body": (C, openai("images/create", "Images (b64_json)")),
    "image_seed_determinism": (E, REFERENCE + ": image seed"),
    "image_n_seeds": (E, REFERENCE + ": image seeds"),
    "image_error_param": (C, OPENAI_ERRORS + ": the error object's param"),
    "unconfigured_route_501": (E, REFERENCE + ": 501 naming the flag"),
    # -- robustness (hostile input; the robustness family)
    "answered_in_time": (C, RFC9110 + ", 9.1: every request gets a response"),
    "no_server_error": (C, RFC9110 + ", 15.5 and 15.6: bad input from the client is a "
                           "4xx, not a 5xx"),
    "health_within_budget": (E, REFERENCE + ": /health answers within its budget while any "
                                "request runs"),
    "stalled_connections_released": (E, REFERENCE + ": header and read timeouts"),
    "no_orphaned_work": (E, REFERENCE + ": nothing queued for a refused request"),
    "stream_memory_bounded": (E, REFERENCE + ": a stream's unread output is bounded "
                                "(docs/limits.md, Backpressure)"),
    "slot_freed_on_close": (E, REFERENCE + ": a closed stream frees its slot"),
    "memory_bounded": (E, REFERENCE + ": every per-client cost has a bound (docs/limits.md); "
                          "a leak grows memory in every pass of a repeated run"),
}


def tier_of(name: str) -> Tier | None:
    row = SOURCES.get(name)
    return None if row is None else row[0]


def source_of(name: str) -> str | None:
    row = SOURCES.get(name)
    return None if row is None else row[1]
