"""A client that goes away mid-stream must free the server for the next request."""

from __future__ import annotations

import time

import pytest

from mlxcel_conformance.checks.registry import fail
from mlxcel_conformance.client import SuiteClient
from mlxcel_conformance.flows import CHAT_PATH, chat_payload
from mlxcel_conformance.readers import read_chat

LONG = 3000


@pytest.mark.conformance(
    family="chat", feature="chat.stream.disconnect_frees_server", destructive="last"
)
def test_disconnect_mid_stream_stops_generation(
    client: SuiteClient, model_name: str | None
) -> None:
    # Baseline: how long a short request takes on an idle server.
    started = time.monotonic()
    read_chat(client, chat_payload(model_name, max_tokens=4))
    baseline = time.monotonic() - started
    payload = chat_payload(
        model_name,
        "Tell me a story.",
        max_tokens=LONG,
        stream=True,
        temperature=1.0,
        seed=3,
        ignore_eos=True,
    )
    with client.http.stream("POST", CHAT_PATH, json=payload) as response:
        received = 0
        for _ in response.iter_lines():
            received += 1
            if received >= 6:
                break
    # The abandoned generation would need thousands of tokens; a short request right after
    # must not wait for it.
    started = time.monotonic()
    read_chat(client, chat_payload(model_name, max_tokens=4))
    elapsed = time.monotonic() - started
    if elapsed > max(5.0, 20 * baseline):
        fail(
            "disconnect_frees_server",
            f"a 4-token request took {elapsed:.1f} s after a client left mid-stream "
            f"(baseline {baseline:.2f} s): the abandoned generation kept running",
            elapsed_s=round(elapsed, 2),
            baseline_s=round(baseline, 2),
        )
