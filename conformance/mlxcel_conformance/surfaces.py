"""Optional surfaces: routes a conformant server may leave out, probed before they are checked.

llama-server serves ``/metrics`` only with ``--metrics`` and ``/slots`` unless ``--no-slots``
(its README); ``/props`` is llama-server's own; the reference serves ``/metrics`` only with
``--metrics``. A server that answers such a route with 404 (or 501) does not offer it: every
feature that needs it is UNSUPPORTED, never FAIL.
"""

from __future__ import annotations

from typing import Any

import pytest

from .client import SuiteClient

OPTIONAL_SURFACES: tuple[str, ...] = ("/metrics", "/slots", "/props", "/v1/cache/stats",
                                      "/v1/cache/reset")
_ABSENT = (404, 405, 501)


def offers(client: SuiteClient, path: str) -> bool:
    """Whether the target serves the optional route ``path`` (asked once per run)."""
    probe_path = "/v1/cache/stats" if path == "/v1/cache/reset" else path

    def ask() -> bool:
        return client.get(probe_path).status_code not in _ABSENT

    return client.probe(f"surface:{probe_path}", ask)


def require_surface(client: SuiteClient, path: str) -> None:
    """Skip as UNSUPPORTED when the target does not serve the optional route ``path``."""
    if not offers(client, path):
        pytest.skip(f"UNSUPPORTED: the server does not serve {path} (an optional route)")


def stores_responses(client: SuiteClient, model: str | None) -> bool:
    """Whether the target keeps the Responses it creates (asked once per run: create one, get it
    back). The Open Responses specification defines creating a response; storing, retrieving
    and chaining with previous_response_id are the OpenAI service's, which a stateless server
    (llama-server's /v1/responses) leaves out. An answer that cannot tell counts as storing, so
    the features run and judge."""

    def ask() -> bool:
        payload: dict[str, Any] = {"input": "Say hello.", "max_output_tokens": 4}
        created = client.post("/v1/responses", payload if model is None
                              else {"model": model, **payload})
        try:
            response_id = created.json()["id"] if created.status_code == 200 else None
        except (ValueError, KeyError, TypeError):
            response_id = None
        if not isinstance(response_id, str) or not response_id:
            return True
        return client.get(f"/v1/responses/{response_id}").status_code not in _ABSENT

    return client.probe("responses:store", ask)


def require_response_store(client: SuiteClient, model: str | None) -> None:
    """Skip as UNSUPPORTED when the target keeps no Responses (``stores_responses``)."""
    if not stores_responses(client, model):
        pytest.skip("UNSUPPORTED: the server keeps no Responses (GET /v1/responses/{id} of one "
                    "it created is 404): storage, retrieval and previous_response_id are "
                    "optional")
