"""Optional surfaces: routes a conformant server may leave out, probed before they are checked.

llama-server serves ``/metrics`` only with ``--metrics`` and ``/slots`` unless ``--no-slots``
(its README); ``/props`` is llama-server's own; the reference serves ``/metrics`` only with
``--metrics``. A server that answers such a route with 404 (or 501) does not offer it: every
feature that needs it is UNSUPPORTED, never FAIL.
"""

from __future__ import annotations

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
