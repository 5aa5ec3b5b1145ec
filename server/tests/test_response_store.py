"""The Responses store (SQLite): LRU cap, time-to-live, capacity 0 disables, a byte budget
counted as the UTF-8 bytes stored, eviction that frees pages when it happens, entries that
survive a reopen, and a writer killed mid-transaction that damages nothing committed."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mlxcel.families.responses.response_store import StoredResponse
from mlxcel.families.responses.store_location import StorePathError, default_store_path
from mlxcel.families.responses.store_service import ResponsesStores, make_stores


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        self.now += 1e-3  # every call a little later, as a real clock: LRU order is defined
        return self.now


def stores(entries: int = 4, ttl: float = 100, max_bytes: int = 1 << 20,
           clock: Clock | None = None, path: str = ":memory:") -> ResponsesStores:
    return make_stores(entries, ttl, entries, ttl, max_bytes, path, clock or Clock())


def response(key: str, text: str = "") -> StoredResponse:
    return StoredResponse({"id": key, "text": text}, [{"role": "user", "content": text}])


def test_lru_cap_evicts_the_least_recently_used() -> None:
    table = stores(entries=2).responses
    table.put("a", response("a"))
    table.put("b", response("b"))
    assert table.get("a") == response("a")  # a is now the most recent
    table.put("c", response("c"))
    assert table.get("b") is None and table.get("a") and table.get("c")
    assert len(table) == 2


def test_entries_expire_after_ttl_and_the_timer_purges_them() -> None:
    clock = Clock()
    both = stores(ttl=10, clock=clock)
    both.responses.put("a", response("a", "x" * 10_000))
    both.conversations.put("c", [{"role": "user", "content": "hi"}])
    clock.now += 9.9
    assert both.responses.get("a") is not None
    clock.now += 0.2
    held = both.db.bytes_held
    assert held > 10_000
    assert both.db.purge_expired() == 2  # no read needed: the timer frees them
    assert both.db.bytes_held == 0 and len(both.responses) == 0


def test_capacity_zero_stores_nothing() -> None:
    table = stores(entries=0).responses
    assert not table.enabled
    assert not table.put("a", response("a"))
    assert table.get("a") is None and len(table) == 0


def test_delete() -> None:
    table = stores().responses
    table.put("a", response("a"))
    assert table.delete("a") and not table.delete("a")


def test_four_byte_characters_count_four_bytes() -> None:
    both = stores(max_bytes=100_000)
    emoji = "\U0001F600" * 10_000  # 10,000 characters, 40,000 bytes in UTF-8
    both.responses.put("a", StoredResponse({"id": "a", "user": emoji}))
    assert 40_000 < both.db.bytes_held < 41_000
    both.responses.put("b", StoredResponse({"id": "b", "user": emoji}))
    both.responses.put("c", StoredResponse({"id": "c", "user": emoji}))  # 120 kB > 100 kB
    assert both.db.bytes_held <= 100_000
    assert both.responses.get("a") is None and both.responses.get("c") is not None


def test_huge_metadata_is_bounded_by_its_bytes() -> None:
    both = stores(entries=10_000, max_bytes=200_000)
    metadata = {f"key{i:05d}": "v" * 20 for i in range(5_000)}  # ~150 kB of JSON
    for i in range(20):
        both.responses.put(f"r{i}", StoredResponse({"id": f"r{i}", "metadata": metadata}))
        assert both.db.bytes_held <= 200_000
    assert len(both.responses) == 1  # one fits, each new one evicts the last
    big = {f"key{i:05d}": "v" * 20 for i in range(10_000)}  # larger than the budget
    assert not both.responses.put("big", StoredResponse({"id": "big", "metadata": big}))
    assert both.responses.get("big") is None


def test_one_budget_for_responses_and_conversations() -> None:
    both = stores(max_bytes=30_000)
    both.conversations.put("conv", [{"role": "user", "content": "x" * 20_000}])
    both.responses.put("a", response("a", "y" * 5_000))  # 10 kB with its history
    assert both.db.bytes_held <= 30_000
    assert both.conversations.get("conv") is None  # the least recently used went
    assert both.responses.get("a") is not None


def _file_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))


def test_eviction_returns_pages_to_the_file_system(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite3"
    both = stores(entries=1000, max_bytes=50_000_000, path=str(path))
    for i in range(20):
        both.responses.put(f"r{i}", response(f"r{i}", "z" * 500_000))
    both.db.checkpoint()
    full = path.stat().st_size
    assert full > 19 * 500_000
    both.db.max_bytes = 2_000_000
    both.responses.put("last", response("last", "small"))  # evicts down to 2 MB
    both.db.checkpoint()
    assert both.db.bytes_held <= 2_000_000
    assert path.stat().st_size < full / 4, (full, path.stat().st_size)
    both.close()


def test_entries_survive_a_reopen(tmp_path: Path) -> None:
    path = str(tmp_path / "store.sqlite3")
    first = stores(path=path)
    first.responses.put("a", response("a", "kept"))
    first.conversations.put("c", [{"role": "user", "content": "hello"}])
    first.close()
    second = stores(path=path)
    assert second.responses.get("a") == response("a", "kept")
    assert second.conversations.get("c") == [{"role": "user", "content": "hello"}]
    second.close()


_WRITER = """
import sys
from mlxcel.families.responses.response_store import StoredResponse
from mlxcel.families.responses.store_service import make_stores
stores = make_stores(100_000, 0, 1, 0, 1 << 30, sys.argv[1])
i = 0
while True:
    stores.responses.put(f"r{i}", StoredResponse({"id": f"r{i}", "text": "w" * 200_000}))
    print(i, flush=True)
    i += 1
"""


def test_a_writer_killed_mid_write_loses_nothing_committed(tmp_path: Path) -> None:
    path = str(tmp_path / "store.sqlite3")
    child = subprocess.Popen([sys.executable, "-c", _WRITER, path], stdout=subprocess.PIPE,
                             text=True, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert child.stdout is not None
    committed = -1
    deadline = time.monotonic() + 60
    while committed < 30 and time.monotonic() < deadline:
        committed = int(child.stdout.readline())
    child.send_signal(signal.SIGKILL)  # most likely inside the next write's transaction
    child.wait(10)
    assert committed >= 30
    check = sqlite3.connect(path)
    assert check.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    check.close()
    reopened = stores(entries=100_000, max_bytes=1 << 30, path=path)
    for i in range(committed + 1):
        assert reopened.responses.get(f"r{i}") is not None, i
    reopened.close()


def test_default_path_follows_xdg_data_home(monkeypatch: pytest.MonkeyPatch,
                                            tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert default_store_path() == tmp_path / "mlxcel" / "responses.sqlite3"
    monkeypatch.setenv("XDG_DATA_HOME", "relative/dir")  # ignored, as the spec says
    assert default_store_path().parts[-3:-1] in (("share", "mlxcel"),
                                                 ("Application Support", "mlxcel"))


def test_a_directory_is_refused_clearly(tmp_path: Path) -> None:
    with pytest.raises(StorePathError, match="is a directory"):
        stores(path=str(tmp_path))


def test_any_string_python_holds_round_trips() -> None:
    """A lone surrogate (refused at the HTTP parser, but a str may hold one) is stored and read
    back as it was, never an error on GET."""
    table = stores().responses
    odd = StoredResponse({"id": "a", "text": "x\ud800y \U0001F600"})
    assert table.put("a", odd)
    assert table.get("a") == odd


def test_the_app_purges_expired_entries_without_a_read(
        fixture_model: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The family's lifespan runs the purge timer: an expired entry's bytes go with no GET."""
    from fastapi.testclient import TestClient

    from mlxcel.app import create_app
    from mlxcel.config import ServerConfig
    from mlxcel.engine.worker import Engine, EngineConfig
    from mlxcel.families.responses import store_service
    from mlxcel.families.responses.store_config import StoreConfig

    monkeypatch.setattr(store_service, "PURGE_INTERVAL_S", 0.05)
    store = StoreConfig(store_path=":memory:", responses_store_ttl_secs=1)
    config = ServerConfig(model=fixture_model, sections={"responses": store})
    app = create_app(config, Engine(EngineConfig(model=fixture_model)))
    with TestClient(app):
        both = store_service.stores_in(app.state.mlxcel)
        both.responses.put("a", response("a", "x" * 100_000))
        assert both.db.bytes_held > 100_000
        deadline = time.monotonic() + 5
        while both.db.bytes_held and time.monotonic() < deadline:
            time.sleep(0.05)
        assert both.db.bytes_held == 0
