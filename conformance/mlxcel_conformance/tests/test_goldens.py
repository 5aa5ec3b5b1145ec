"""Replay the golden transcripts: ``exact`` against the same fixture model, ``shape`` elsewhere."""

from __future__ import annotations

from typing import Any

import pytest

from mlxcel_conformance.checks.contract_edges import skip_documented
from mlxcel_conformance.client import SuiteClient
from mlxcel_conformance.golden_cases import golden_extension
from mlxcel_conformance.goldens import load_documents, replay_golden, replayed_by_family
from mlxcel_conformance.profiles import Profile
from mlxcel_conformance.surfaces import require_response_store
from mlxcel_conformance.tests.test_audio import serves_audio
from mlxcel_conformance.tests.test_embeddings import require
from mlxcel_conformance.tests.test_images import serves_images


def _params() -> list[Any]:
    params = []
    for path, doc in load_documents():
        if replayed_by_family(doc):
            continue  # the family's own tests replay it behind its probe (test_vision, ...)
        mark = pytest.mark.conformance(family=doc["family"], feature=doc["feature"],
                                       extension=golden_extension(doc))
        params.append(pytest.param(doc, id=f"{doc['family']}/{path.stem}", marks=mark))
    return params


@pytest.mark.parametrize("doc", _params())
def test_golden(
    client: SuiteClient, model_name: str | None, golden_mode: str, doc: dict[str, Any],
    profile: Profile,
) -> None:
    if doc["case"].endswith("_unconfigured") and doc["family"] == "audio" \
            and serves_audio(client):
        pytest.skip("UNSUPPORTED: the server has an audio model (see test_audio)")
    if doc["case"].endswith("_unconfigured") and doc["family"] == "images" \
            and serves_images(client):
        pytest.skip("UNSUPPORTED: the server has an image model (see test_images)")
    if doc["family"] == "embeddings":
        require(client, "rerank" if "rerank" in doc["request"]["path"] else "embeddings")
    if doc["request"]["path"] in OPTIONAL_ROUTES and \
            client.post(doc["request"]["path"], {}).status_code == 404:
        pytest.skip(f"UNSUPPORTED: the server does not serve {doc['request']['path']}")
    if needs_response_store(doc):
        require_response_store(client, model_name)
    documented = DOCUMENTED_CASES.get(f"{doc['family']}/{doc['case']}")
    if documented is not None:
        skip_documented(profile, documented)
    replay_golden(client, doc, model_name, golden_mode)


# Bad-input goldens built on a value some peer documents as valid (profiles.DOCUMENTED_VALUES).
DOCUMENTED_CASES = {"chat/error_negative_max_tokens": "max_tokens=-1",
                    "anthropic/error_missing_max_tokens": "anthropic.max_tokens_missing"}


def needs_response_store(doc: dict[str, Any]) -> bool:
    """A stored Response is read (GET, DELETE, cancel, previous_response_id): optional."""
    request = doc["request"]
    stored = request["path"].startswith("/v1/responses/") and \
        request["path"] != "/v1/responses/input_tokens" and \
        not request["path"].startswith("/v1/responses/compact")
    return stored or "previous_response_id" in (request.get("json") or {})


# Routes of a public API that a server may leave out (probed: 404 means UNSUPPORTED).
OPTIONAL_ROUTES = ("/v1/responses/input_tokens", "/v1/messages/count_tokens")
