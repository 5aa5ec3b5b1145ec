"""Chat ``n``: two choices asked for, two answered, indexed 0 and 1, in JSON and streamed
(``checks/chat_choices``; OpenAI's API reference, ``n``). Two: within any server's slot count
(llama-server bounds ``n`` by its ``--parallel``)."""

from __future__ import annotations

import pytest

from mlxcel_conformance.checks.chat_choices import check_chat_choices, check_chat_chunk_choices
from mlxcel_conformance.client import SuiteClient, expect_status, json_body
from mlxcel_conformance.flows import CHAT_PATH, chat_payload, chat_stream

N = 2


@pytest.mark.conformance(family="chat", feature="chat.n.json")
def test_chat_n_choices(client: SuiteClient, model_name: str | None) -> None:
    # The body's own shape is chat.json.body's to judge (one defect, one FAIL): this feature
    # judges the choices only.
    response = client.post(CHAT_PATH, chat_payload(model_name, max_tokens=4, n=N))
    expect_status(response, 200)
    check_chat_choices(json_body(response), N)


@pytest.mark.conformance(family="chat", feature="chat.n.stream")
def test_chat_n_streamed_choices(client: SuiteClient, model_name: str | None) -> None:
    stream = chat_stream(client, chat_payload(model_name, max_tokens=4, n=N))
    check_chat_chunk_choices(stream.chunks, N)
