"""Project tests: tests marked ``slow`` (the wheel round trip) run only when selected with
``-m slow`` (``nox -s package``); the default run deselects them rather than skipping them."""

from __future__ import annotations

import pytest

# The assertions of the shared conformance-run helpers report their operands like a test's own.
pytest.register_assert_rewrite("_conformance_run")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("-m"):
        return
    slow = [item for item in items if item.get_closest_marker("slow")]
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = [item for item in items if not item.get_closest_marker("slow")]


@pytest.fixture(autouse=True, scope="session")
def _store_in_a_scratch_data_dir(tmp_path_factory: pytest.TempPathFactory) -> object:
    """Servers these tests start keep the Responses store (default: the user's data directory)
    in a scratch one instead of the developer's."""
    import os

    saved = os.environ.get("XDG_DATA_HOME")
    os.environ["XDG_DATA_HOME"] = str(tmp_path_factory.mktemp("xdg-data"))
    yield
    if saved is None:
        os.environ.pop("XDG_DATA_HOME", None)
    else:
        os.environ["XDG_DATA_HOME"] = saved
