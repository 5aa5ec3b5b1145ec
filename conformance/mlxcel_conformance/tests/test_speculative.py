"""Speculative decoding (the reference's "Speculative decoding timings"), on a server that runs
a drafter (a draft model or prompt lookup): exact greedy output and the `timings` draft
counters in the right places. A server whose probe request carries no draft counters runs no
drafter, and these features are UNSUPPORTED there rather than failed."""

from __future__ import annotations

from typing import Any

import pytest

from mlxcel_conformance.checks.errors_checks import check_error_body_openai
from mlxcel_conformance.checks.speculative import (
    check_draft_model_refused,
    check_draft_timings,
    check_no_draft_timings,
    check_speculative_exact,
    check_timings_on_finish_chunk_only,
    has_draft_timings,
)
from mlxcel_conformance.client import SuiteClient
from mlxcel_conformance.flows import (
    CHAT_PATH,
    COMPLETIONS_PATH,
    answer_json,
    chat_payload,
    chat_stream,
    completion_payload,
    completion_stream,
    message_content,
    response_of,
)

# The fixture's longest scripted reply: a drafter trained on it, or prompt lookup on its
# repeated phrases, gets drafts accepted. Any server's model answers something.
STORY = "Tell me a story."
GREEDY: dict[str, Any] = {"temperature": 0, "max_tokens": 48, "cache_prompt": False}


def _drafted_answer(client: SuiteClient, model: str | None) -> dict[str, Any]:
    """A greedy answer with the server's drafter; UNSUPPORTED when no drafter ran."""
    body = answer_json(client, chat_payload(model, STORY, **GREEDY))
    if not has_draft_timings(body):
        pytest.skip("UNSUPPORTED: no draft counters in timings: the server runs no "
                    "speculative drafter (mlxcel: start it with --draft-model or "
                    "--spec-type ngram-simple)")
    return body


@pytest.mark.conformance(family="mlxcel-ext", feature="speculative.greedy_exact",
                         extension="timings_draft")
def test_speculative_greedy_matches_plain(client: SuiteClient, model_name: str | None) -> None:
    drafted = _drafted_answer(client, model_name)
    plain = answer_json(client, chat_payload(model_name, STORY, draft_model=None, **GREEDY))
    check_no_draft_timings([plain], "the request set draft_model: null")
    check_speculative_exact(message_content(plain), message_content(drafted),
                            plain["usage"]["completion_tokens"],
                            drafted["usage"]["completion_tokens"])


@pytest.mark.conformance(family="mlxcel-ext", feature="speculative.timings",
                         extension="timings_draft")
def test_draft_timings_on_bodies(client: SuiteClient, model_name: str | None) -> None:
    drafted = _drafted_answer(client, model_name)
    check_draft_timings(drafted["timings"], drafted["usage"]["completion_tokens"])
    completion = answer_json(client, completion_payload(model_name, "Once upon a time",
                                                        **GREEDY), COMPLETIONS_PATH)
    if has_draft_timings(completion):
        check_draft_timings(completion["timings"], completion["usage"]["completion_tokens"])
    one = answer_json(client, chat_payload(model_name, STORY, **{**GREEDY, "max_tokens": 1}))
    check_no_draft_timings([one], "the request ended inside prefill (max_tokens 1)")


@pytest.mark.conformance(family="mlxcel-ext", feature="speculative.timings_stream",
                         extension="timings_draft")
def test_draft_timings_only_on_the_finish_chunk(client: SuiteClient,
                                                model_name: str | None) -> None:
    _drafted_answer(client, model_name)
    stream = chat_stream(client, chat_payload(model_name, STORY, **GREEDY))
    check_draft_timings(check_timings_on_finish_chunk_only(stream.chunks))
    completion = completion_stream(client, completion_payload(model_name, STORY, **GREEDY))
    if any("timings" in chunk for chunk in completion.chunks):
        check_draft_timings(check_timings_on_finish_chunk_only(completion.chunks))
    off = chat_stream(client, chat_payload(model_name, STORY, draft_model=None, **GREEDY))
    check_no_draft_timings(off.chunks, "the request set draft_model: null")


@pytest.mark.conformance(family="mlxcel-ext", feature="mlx_lm.draft_model.confined",
                         extension="refusals",
                         destructive=True)
@pytest.mark.parametrize("value", ["any/draft-model", "/etc", "../../../tmp/draft"],
                         ids=["hub-id", "absolute", "dotdot"])
def test_draft_model_never_loads_a_request_path(
    client: SuiteClient, model_name: str | None, value: str
) -> None:
    payload = chat_payload(model_name, max_tokens=2, draft_model=value)
    status, body = response_of(client.post(CHAT_PATH, payload))
    check_draft_model_refused(status, value, body)
    check_error_body_openai(body, status=status, expected=status)
