"""The suite end to end against a replay of the real recordings (``replay_target``): its
contract checks find nothing wrong with what the real APIs sent, and catch each deliberately
broken copy (a missing required key, a wrong event order, an unterminated stream)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import real_stream_corpus as corpus
from replay_target import Replay, serving

PROFILES = ("openai", "anthropic")  # the real APIs: every key they send today is required


def run_suite(base_url: str, profile: str, report: Path) -> dict[str, Any]:
    command = [sys.executable, "-m", "mlxcel_conformance", "--base-url", base_url,
               "--profile", profile, "-k", "test_field_parity", "--report", str(report),
               "--request-timeout", "20"]
    subprocess.run(command, capture_output=True, timeout=300, check=False)
    data: dict[str, Any] = json.loads((report / "conformance.json").read_text())
    return data


def verdicts(report: dict[str, Any]) -> dict[str, str]:
    """Verdicts of the features the profile claims (the others are UNSUPPORTED)."""
    return {r["feature"]: r["verdict"] for r in report["records"]
            if r["verdict"] != "UNSUPPORTED"}


def _served_run(replay: Replay, profile: str, report: Path) -> dict[str, Any]:
    with serving(replay) as url:
        return run_suite(url, profile, report)


@pytest.mark.parametrize("profile", PROFILES)
def test_the_real_recordings_pass_every_contract_check(
        profile: str, suite_runs: dict[str, Future[dict[str, Any]]]) -> None:
    report = suite_runs[profile].result()
    found = verdicts(report)
    assert found and set(found.values()) == {"PASS"}, report["records"]
    assert report["summary"]["tiers"]["contract"]["FAIL"] == 0


def _broken_sse(name: str, edit: Any) -> bytes:
    events = corpus.payloads(list(corpus.stream(name).events))
    named = corpus.named_events(edit(events)) if "responses" in name or "anthropic" in name \
        else [corpus.data_event(e) for e in edit(events)]
    return corpus.to_text(named).encode()


def _drop_key(name: str, *path: str) -> bytes:
    body = json.loads(corpus.read(corpus.find(name)))
    node = body
    for key in path[:-1]:
        node = node[int(key)] if isinstance(node, list) else node[key]
    del node[path[-1]]
    return json.dumps(body).encode()


def _swap_first_delta_and_part(events: list[Any]) -> list[Any]:
    first = next(i for i, e in enumerate(events) if e["type"] == "response.output_text.delta")
    part = next(i for i, e in enumerate(events) if e["type"] == "response.content_part.added")
    events[first], events[part] = events[part], events[first]
    return events


BROKEN: dict[str, tuple[str, str, bytes, str]] = {
    # case: (profile, recording, broken bytes, feature that must FAIL)
    "missing_required_key": (
        "openai", "openai-chat-completion-text.json",
        _drop_key("openai-chat-completion-text.json", "choices", "0", "finish_reason"),
        "parity.chat.json"),
    "missing_current_key": (
        "anthropic", "anthropic-message-text-max-tokens.json",
        _drop_key("anthropic-message-text-max-tokens.json", "usage", "cache_creation"),
        "parity.anthropic.json"),
    "wrong_event_order": (
        "openai", "openai-responses-stream-text.sse",
        _broken_sse("openai-responses-stream-text.sse", _swap_first_delta_and_part),
        "parity.responses.stream"),
    "unterminated_stream": (
        "anthropic", "anthropic-stream-text.sse",
        _broken_sse("anthropic-stream-text.sse", lambda events: events[:-2]),
        "parity.anthropic.stream"),
    "no_done": (
        "openai", "openai-chat-stream-text-usage.sse",
        _broken_sse("openai-chat-stream-text-usage.sse",
                    lambda events: [e for e in events if e != "[DONE]"]),
        "parity.chat.stream"),
}


@pytest.fixture(scope="module")
def suite_runs(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
               ) -> Iterator[dict[str, Future[dict[str, Any]]]]:
    """The suite runs this module's selected tests read (the real recordings under a profile, or
    one broken copy each), started at once and run two at a time: each is one single-threaded
    process, so two keep both cores of a CI machine busy. A test waits for its own run and sees
    its own error."""
    runs: dict[str, tuple[Replay, str]] = {profile: (Replay(), profile) for profile in PROFILES}
    runs.update({case: (Replay({name: broken}), profile)
                 for case, (profile, name, broken, _feature) in BROKEN.items()})
    selected = {key for item in request.session.items
                if isinstance(item, pytest.Function) and item.module is request.module
                and hasattr(item, "callspec")
                for key in item.callspec.params.values() if key in runs}
    with ThreadPoolExecutor(max_workers=2) as pool:
        yield {key: pool.submit(_served_run, *runs[key], tmp_path_factory.mktemp(key))
               for key in sorted(selected)}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_a_broken_recording_is_caught(
        case: str, suite_runs: dict[str, Future[dict[str, Any]]]) -> None:
    _profile, _name, _broken, feature = BROKEN[case]
    report = suite_runs[case].result()
    found = verdicts(report)
    assert found[feature] == "FAIL", report["records"]
    failed = next(r for r in report["records"] if r["feature"] == feature)
    assert failed["evidence"].get("source"), failed  # every FAIL names its source
    assert {v for f, v in found.items() if f != feature} == {"PASS"}, found
