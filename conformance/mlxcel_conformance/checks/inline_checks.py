"""Checks whose logic runs inline in a test: registered by name, with a severity and a
description, so that every name a `fail` call uses is known to `get_check` and carries its
source (checks/sources.py) like any other check.

A comparison of two answers, or one key of one body, is too small for a function of its own; the
test that makes the request judges it. Each row names the test module that does.
"""

from __future__ import annotations

from mlxcel_conformance.checks.registry import declare
from mlxcel_conformance.checks.verdict_policy import DEFAULT_VERDICTS, VerdictClass
from mlxcel_conformance.errors import Severity

# name -> what it judges [the test module that runs it]. Each fails with HIGH severity, as it
# did before it was registered; a call may pass its own.
INLINE_CHECKS: dict[str, str] = {
    "apply_template": "POST /apply-template renders the messages into the prompt "
                      "[test_llama_native]",
    "auth_health_exempt": "with an API key set, /health answers without it "
                          "[test_auth_routing]",
    "detokenize_oov": "/detokenize of an out-of-vocabulary id is refused naming the id "
                      "[test_tokenize]",
    "disconnect_frees_server": "a client leaving mid-stream frees the server for the next "
                               "request [test_disconnect, test_llama_native]",
    "embedding_alongside_generation": "embeddings are served beside the text model "
                                      "[test_embeddings]",
    "embedding_base64": "encoding_format base64 decodes to the float vector "
                        "[test_embeddings]",
    "embedding_body_native": "POST /embedding answers its documented shape "
                             "[test_embeddings]",
    "forced_tool_call": "a forced tool_choice yields a call of a declared tool "
                        "[test_forcing_families]",
    "health_ready": "GET /health of a loaded server answers 200 (or 503 'no slot "
                    "available') [test_models_health]",
    "infill_not_supported": "POST /infill without an infill model is refused cleanly "
                            "[test_llama_native]",
    "max_tokens_honoured": "no more completion tokens than max_tokens "
                           "[test_chat, test_completions]",
    "models_list": "GET /v1/models lists the served model [test_models_health]",
    "native_aliases": "the native routes answer without the /v1 prefix "
                      "[test_llama_native_docs]",
    "native_dry": "DRY sampling breaks a greedy repetition [test_llama_native]",
    "native_grammar": "a GBNF grammar constrains /completion [test_llama_native_docs]",
    "native_json_schema": "json_schema constrains /completion [test_llama_native_docs]",
    "native_multi_prompt": "a list of prompts gives one result each [test_llama_native]",
    "native_return_tokens": "return_tokens gives the generated token ids "
                            "[test_llama_native]",
    "native_stop_word": "a stop word ends /completion and is reported as stopping_word "
                        "[test_llama_native]",
    "prompt_forms": "a prompt as text, token ids or both gives the same greedy text "
                    "[test_completions, test_llama_native, test_llama_native_docs]",
    "rerank_documents": "POST /reranking returns the documents when asked "
                        "[test_embeddings]",
    "response_compaction": "/v1/responses/compact and context_management "
                           "[test_responses_compaction]",
    "sdk_anthropic": "the Anthropic SDK's round trips agree with the raw answer "
                     "[test_sdk_anthropic]",
    "sdk_openai": "the OpenAI SDK's round trips agree with the raw answer "
                  "[test_sdk_openai, test_sdk_openai_responses, test_sdk_openai_tools]",
    "seed_deterministic": "the same seed gives the same text [test_chat]",
    "stop_not_leaked": "the stop sequence is not in the returned text [test_chat]",
    "stream_matches_json": "a greedy stream assembles to the non-streamed text "
                           "[test_completions, test_llama_native]",
    "template_kwargs": "chat_template_kwargs reach the chat template "
                       "[test_chat_reasoning]",
    "tokenize_pieces": "/tokenize with_pieces gives each id's text [test_tokenize]",
    "tokenize_round_trip": "/detokenize of /tokenize gives the text back [test_tokenize]",
    "unconfigured_route_501": "a route without its model answers 501 naming the flag "
                              "[test_unconfigured_routes]",
}

# Inline checks that may find a field accepted and silently not honoured (IGNORED).
MAY_FIND_IGNORED = frozenset({"forced_tool_call", "max_tokens_honoured"})

for _name, _description in INLINE_CHECKS.items():
    declare(_name, severity=Severity.HIGH, description=_description,
            verdicts=frozenset({VerdictClass.FAIL, VerdictClass.IGNORED})
            if _name in MAY_FIND_IGNORED else DEFAULT_VERDICTS)
