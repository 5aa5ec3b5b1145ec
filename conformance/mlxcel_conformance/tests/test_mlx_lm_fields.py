"""mlx-lm's documented chat request fields (mlx-lm SERVER.md), checked on any server that
claims them: integer logprobs, logit_bias, the repetition penalty and its window, the penalty
window and draft fields accepted, and adapters confined to the server's allowlist."""

from __future__ import annotations

from typing import Any

import pytest

from mlxcel_conformance.checks.errors_checks import check_error_body_openai
from mlxcel_conformance.checks.mlx_lm_fields import (
    check_adapter_refused,
    check_fields_accepted,
    check_fields_neutral,
    check_integer_logprobs,
    check_logit_bias,
    check_repetition_window,
)
from mlxcel_conformance.checks.openai_common import chat_logprobs_entries
from mlxcel_conformance.client import SuiteClient
from mlxcel_conformance.flows import (
    CHAT_PATH,
    COMPLETIONS_PATH,
    answer_json,
    chat_payload,
    check_answer_shape,
    completion_payload,
    message_content,
    response_of,
)

COUNT = "Count to five."  # the fixture's `count` reply repeats ", " between the numbers


def _greedy(client: SuiteClient, model: str | None, content: str = COUNT, **fields: Any) -> str:
    # cache_prompt false (ignored where unknown): a prompt-cache hit may flip near-ties.
    payload = chat_payload(model, content, cache_prompt=False, **fields)
    return message_content(answer_json(client, payload))


@pytest.mark.conformance(family="mlx-lm-fields", feature="mlx_lm.logprobs.integer")
@pytest.mark.parametrize("count", [1, 5])
def test_integer_logprobs(client: SuiteClient, model_name: str | None, count: int) -> None:
    payload = chat_payload(model_name, COUNT, max_tokens=6, logprobs=count)
    status, body = response_of(client.post(CHAT_PATH, payload))
    entries = chat_logprobs_entries(body) if status == 200 and isinstance(body, dict) else []
    check_integer_logprobs(status, entries, count)
    check_answer_shape(body)


MLX_LM_WINDOWS: dict[str, Any] = {
    "repetition_context_size": 20, "presence_context_size": 20, "frequency_context_size": 20,
    "num_draft_tokens": 3, "draft_model": None,
}


@pytest.mark.conformance(family="mlx-lm-fields", feature="mlx_lm.fields.accepted")
def test_window_and_draft_fields_accepted_and_neutral(
    client: SuiteClient, model_name: str | None
) -> None:
    plain = _greedy(client, model_name)
    status, body = response_of(client.post(CHAT_PATH, chat_payload(model_name, COUNT,
                                                                   **MLX_LM_WINDOWS)))
    check_fields_accepted(status, MLX_LM_WINDOWS, body)
    check_fields_neutral(plain, message_content(body), MLX_LM_WINDOWS)


@pytest.mark.conformance(family="mlx-lm-fields", feature="mlx_lm.role_mapping.accepted")
def test_role_mapping_accepted(client: SuiteClient, model_name: str | None) -> None:
    fields = {"role_mapping": {"user": "Q: ", "assistant": "A: ", "stop": "\n"}}
    status, body = response_of(client.post(CHAT_PATH, chat_payload(model_name, COUNT, **fields)))
    check_fields_accepted(status, fields, body)


@pytest.mark.conformance(family="mlx-lm-fields", feature="mlx_lm.repetition_penalty.window")
def test_repetition_penalty_and_window(client: SuiteClient, model_name: str | None) -> None:
    plain = _greedy(client, model_name)
    wide = _greedy(client, model_name, repetition_penalty=2.0, repetition_context_size=200)
    narrow = _greedy(client, model_name, repetition_penalty=2.0, repetition_context_size=1)
    check_repetition_window(plain, wide, narrow)


@pytest.mark.conformance(family="mlx-lm-fields", feature="mlx_lm.logit_bias")
def test_logit_bias(client: SuiteClient, model_name: str | None) -> None:
    plain = _greedy(client, model_name, max_tokens=4)
    biased = _greedy(client, model_name, max_tokens=4, logit_bias={"0": 100})
    check_logit_bias(plain, biased)


@pytest.mark.conformance(family="mlx-lm-fields", feature="mlx_lm.adapters.confined",
                         extension="adapters",
                         destructive=True)
@pytest.mark.parametrize("path", [CHAT_PATH, COMPLETIONS_PATH], ids=["chat", "completions"])
@pytest.mark.parametrize("value", ["../../../etc", "adapters/../../escape", "/etc"],
                         ids=["dotdot", "inner-dotdot", "absolute"])
def test_adapters_outside_allowlist_refused(
    client: SuiteClient, model_name: str | None, path: str, value: str
) -> None:
    make = chat_payload if path == CHAT_PATH else completion_payload
    status, body = response_of(client.post(path, make(model_name, max_tokens=2, adapters=value)))
    check_adapter_refused(status, value, body)
    check_error_body_openai(body, status=status, expected=400)
