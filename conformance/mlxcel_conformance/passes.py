"""``--passes N``: the selected tests run N times in one session, against one server, into
one report (a feature's records from every pass merge: a FAIL in any pass is the verdict).

A pass after the first fuzzes with its own seed (``fuzz_seed``), so it sends as much work
again with new inputs. Between passes the callbacks registered with ``after_each_pass`` run:
the robustness watch reads the server's memory there, since memory a server adds in every
pass is a leak while memory a first pass loads once (code read on first use, the allocator
arenas of threads first used) is not.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

import pytest

_PASS_KEY = pytest.StashKey[int]()
_BETWEEN_KEY = pytest.StashKey[list[Callable[[int], object]]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("mlxcel-conformance")
    group.addoption("--passes", type=int, default=1, metavar="N",
                    help="run the selected tests N times against one server, into one report; "
                    "each pass after the first fuzzes with a new seed. With --robustness and 4 "
                    "passes or more, the whole-run record judges memory by what each pass after "
                    "the first added (default: 1)")


def passes(config: pytest.Config) -> int:
    return max(1, int(config.getoption("--passes", default=1) or 1))


def current_pass(config: pytest.Config) -> int:
    """The pass running now: 0 for the first (and the only one without ``--passes``)."""
    return config.stash.get(_PASS_KEY, 0)


def fuzz_seed(config: pytest.Config) -> int | None:
    """The hypothesis seed of this pass: None for the first (derandomized, as in every run),
    the pass's number after it (new inputs, still the same on every run)."""
    index = current_pass(config)
    return None if index == 0 else index


def after_each_pass(config: pytest.Config, callback: Callable[[int], object]) -> None:
    """Call ``callback(index)`` after pass ``index`` ends, for every pass but the last."""
    config.stash.setdefault(_BETWEEN_KEY, []).append(callback)


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> bool | None:
    config = session.config
    count = passes(config)
    if count == 1 or config.option.collectonly or session.testsfailed:
        return None  # pytest's own loop (which also reports collection errors)
    items = session.items
    for index in range(count):
        config.stash[_PASS_KEY] = index
        last = index == count - 1
        for position, item in enumerate(items):
            # Within a pass, the next item; at a pass's end, the next pass's first item, so
            # session fixtures (the server, the watch) stay up until the last pass ends.
            nextitem = items[position + 1] if position + 1 < len(items) else \
                None if last else _next_pass_start(items[0], item)
            item.config.hook.pytest_runtest_protocol(item=item, nextitem=nextitem)
            if session.shouldfail:
                raise session.Failed(session.shouldfail)
            if session.shouldstop:
                raise session.Interrupted(session.shouldstop)
        if not last:
            for callback in config.stash.get(_BETWEEN_KEY, []):
                callback(index)
    return True


def _next_pass_start(first: pytest.Item, ending: pytest.Item) -> pytest.Item:
    """The ``nextitem`` that ends a pass: the next pass's first item, so that only what it
    does not share is torn down. A pass of one item is its own next item, which would leave
    it set up: its parent stands in (pytest reads only ``listchain()`` of it), so the item's
    own fixtures are torn down and set up again, and the session's stay."""
    return first if first is not ending else cast(pytest.Item, ending.parent)
