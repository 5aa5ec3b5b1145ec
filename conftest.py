"""Fixtures every test directory shares (server/tests, conformance/tests, tests)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True, scope="session")
def _store_in_a_scratch_data_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The Responses store's default file lives in the user's data directory: tests (and the
    servers they start) keep theirs in a scratch one instead of the developer's."""
    saved = os.environ.get("XDG_DATA_HOME")
    os.environ["XDG_DATA_HOME"] = str(tmp_path_factory.mktemp("xdg-data"))
    yield
    if saved is None:
        os.environ.pop("XDG_DATA_HOME", None)
    else:
        os.environ["XDG_DATA_HOME"] = saved
