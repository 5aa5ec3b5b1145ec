"""Many chat streams at once: each ends with `data: [DONE]`, or is refused with 503/429 and an
OpenAI JSON error before any SSE header. A dropped connection, a stream cut short or one left
hanging is a FAIL whatever the server's capacity."""

from __future__ import annotations

import pytest

from mlxcel_conformance import pace
from mlxcel_conformance.checks.concurrency import check_concurrent_streams_complete
from mlxcel_conformance.client import SuiteClient
from mlxcel_conformance.flows import chat_payload
from mlxcel_conformance.stream_load import (
    streams_on_own_connections,
    streams_over_keepalive_pool,
)

CONCURRENT_STREAMS = 32
# A server that drops ~2% of requests on reused connections fails 64 of them more often than
# not; 128 make it near certain while a fast server still serves them in a few seconds.
POOLED_STREAMS = 128
POOL_CONNECTIONS = 8
MAX_TOKENS = 8


def _budget(streams: int) -> float:
    """60 s, or what the streams' tokens take at the target's measured pace, one at a time."""
    return pace.current().seconds_for(streams * MAX_TOKENS)


def _payload(model_name: str | None) -> dict[str, object]:
    return chat_payload(model_name, "Say hello.", max_tokens=MAX_TOKENS, temperature=0, stream=True)


@pytest.mark.conformance(family="chat", feature="chat.stream.concurrent_connections",
                         extension="load")
def test_concurrent_streams_on_own_connections(client: SuiteClient,
                                               model_name: str | None) -> None:
    outcomes = streams_on_own_connections(client.target, _payload(model_name),
                                          CONCURRENT_STREAMS, _budget(CONCURRENT_STREAMS))
    check_concurrent_streams_complete(
        outcomes, mode=f"{CONCURRENT_STREAMS} streams, one connection each")


@pytest.mark.conformance(family="chat", feature="chat.stream.concurrent_keepalive",
                         extension="load")
def test_concurrent_streams_over_keepalive_pool(client: SuiteClient,
                                                model_name: str | None) -> None:
    outcomes = streams_over_keepalive_pool(client.target, _payload(model_name), POOLED_STREAMS,
                                           POOL_CONNECTIONS, _budget(POOLED_STREAMS))
    check_concurrent_streams_complete(
        outcomes, mode=f"{POOLED_STREAMS} streams over {POOL_CONNECTIONS} keep-alive connections")
