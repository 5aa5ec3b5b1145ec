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

