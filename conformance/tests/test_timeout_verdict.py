"""A request the server did not answer within the suite's wait is INCONCLUSIVE, never FAIL
(issue 39): no public rule sets a time limit, and a slow server looks the same."""

from __future__ import annotations

import socket

import httpx
import openai
import pytest

from mlxcel_conformance.plugin import _classify
from mlxcel_conformance.profiles import PROFILES
from mlxcel_conformance.report import Verdict


def _silent_listener() -> socket.socket:
    """A socket that accepts connections (the kernel's backlog) and never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    return listener


def _unanswered() -> tuple[pytest.ExceptionInfo[httpx.ReadTimeout], str]:
    """A chat request to a silent listener, timed out after 0.3 s, and its URL."""
    listener = _silent_listener()
    url = f"http://127.0.0.1:{listener.getsockname()[1]}/v1/chat/completions"
    try:
        with pytest.raises(httpx.ReadTimeout) as caught:
            httpx.post(url, json={}, timeout=httpx.Timeout(0.3, connect=2.0))
    finally:
        listener.close()
    return caught, url


def test_a_read_timeout_is_inconclusive_and_names_the_wait() -> None:
    caught, url = _unanswered()
    record = _classify(caught, "chat")
    assert record.verdict is Verdict.INCONCLUSIVE
    assert record.severity is None
    assert record.evidence["request"] == f"POST {url}"
    assert record.evidence["suite_wait_s"] == pytest.approx(0.3)
    assert record.message.startswith("ReadTimeout: no answer within 0.3 s, the suite's own wait")


def test_an_sdk_timeout_is_inconclusive_too() -> None:
    listener = _silent_listener()
    base = f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
    client = openai.OpenAI(base_url=base, api_key="k", timeout=0.3, max_retries=0)
    try:
        with pytest.raises(openai.APITimeoutError) as caught:
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    finally:
        listener.close()
    record = _classify(caught, "sdk-openai")
    assert record.verdict is Verdict.INCONCLUSIVE


def test_a_dropped_connection_is_still_a_fail() -> None:
    listener = _silent_listener()
    url = f"http://127.0.0.1:{listener.getsockname()[1]}/"
    listener.close()  # nothing listens: the connection is refused at once
    with pytest.raises(httpx.ConnectError) as caught:
        httpx.get(url, timeout=2.0)
    record = _classify(caught, "chat")
    assert record.verdict is Verdict.FAIL


def test_the_reference_promises_an_answer_in_time() -> None:
    """The reference's profiles (``answers_in_time``): a timeout is a FAIL citing its promise,
    so CI still fails on a reference that hangs."""
    caught, _ = _unanswered()
    record = _classify(caught, "chat", answers_in_time=True)
    assert record.verdict is Verdict.FAIL
    assert "docs/limits.md" in record.evidence["source"]
    assert PROFILES["mlxcel"].answers_in_time and PROFILES["mlxcel-contract"].answers_in_time
    assert PROFILES["mlxcel"].narrowed(["chat"]).answers_in_time
    assert not any(p.answers_in_time for name, p in PROFILES.items()
                   if not name.startswith("mlxcel"))
