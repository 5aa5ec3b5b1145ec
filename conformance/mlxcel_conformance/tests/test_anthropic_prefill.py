"""Anthropic prefill: a trailing assistant message is continued (``checks/anthropic_prefill``;
Anthropic's API reference, Messages, ``messages``). The greedy answer without a prefill gives
the prefill (its first half of words) and the word a continuation must go on with."""

from __future__ import annotations

import pytest

from mlxcel_conformance.checks.anthropic_prefill import check_anthropic_prefill, prefill_from
from mlxcel_conformance.checks.registry import inconclusive
from mlxcel_conformance.client import SuiteClient
from mlxcel_conformance.flows_typed import message_text, messages_payload
from mlxcel_conformance.readers import read_message

PROMPT = "Tell me a story."


@pytest.mark.conformance(family="anthropic", feature="anthropic.prefill")
def test_messages_continue_a_prefill(client: SuiteClient, model_name: str | None) -> None:
    payload = messages_payload(model_name, PROMPT, max_tokens=24)
    answer = message_text(read_message(client, payload))
    prefill = prefill_from(answer)
    if prefill is None:
        inconclusive("anthropic_prefill", f"the greedy answer {answer[:60]!r} has too few "
                     "words to cut a prefill from")
    prefilled = {**payload, "messages": [*payload["messages"],
                                         {"role": "assistant", "content": prefill}]}
    check_anthropic_prefill(answer, prefill, message_text(read_message(client, prefilled)))
