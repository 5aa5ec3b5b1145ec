"""The Responses family's durable store: stored responses (GET, DELETE, cancel and
``previous_response_id``) and string-id conversations, in one SQLite database (stdlib
``sqlite3``).

Durability: the database runs in WAL mode with ``synchronous=NORMAL``, and every write is one
transaction, so a process killed at any point (SIGKILL included) loses at most the write it was
making and never damages the entries already committed
(https://www.sqlite.org/wal.html, "Advantages"; https://www.sqlite.org/pragma.html#pragma_synchronous).
A response being generated in the foreground is not written until it ends (``running.py``
holds it meanwhile). A background one is written at once, marked ``unfinished``; opening the
database marks every response still unfinished ``failed`` (``fail_unfinished``): the process
that was generating it is gone, so a client polling it never reads ``in_progress`` forever.

Bounds: one byte budget for both tables, counted as the UTF-8 JSON bytes actually stored (a
4-byte character counts 4), plus a count and a time-to-live per table. A write evicts expired
entries, then the least recently used, in the same transaction, and returns the freed pages to
the file system (``auto_vacuum=INCREMENTAL``), so space is freed when eviction happens, not on a
later read. An entry larger than the whole budget is not stored. A count of 0 disables a table.

Every method blocks on SQLite: routes call them through ``off_loop``. One connection serves the
process, guarded by a lock; other processes may open the same file (WAL allows one writer and
readers at once; ``busy_timeout`` waits for the writer).
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from .store_location import MEMORY, StorePathError, prepare_path

V = TypeVar("V")
SCHEMA_VERSION = 2
BUSY_TIMEOUT_MS = 5000

_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    kind TEXT NOT NULL,
    id TEXT NOT NULL,
    value BLOB NOT NULL,
    size INTEGER NOT NULL,
    expires_at REAL,
    used_at REAL NOT NULL,
    unfinished INTEGER NOT NULL DEFAULT 0,
    UNIQUE (kind, id)
);
CREATE INDEX IF NOT EXISTS entries_expiry ON entries (expires_at);
CREATE INDEX IF NOT EXISTS entries_use ON entries (used_at);
"""

# A JSON value stored compactly and exactly: the size counted is the size kept.
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def encode(value: Any) -> bytes:
    return _ENCODER.encode(value).encode("utf-8", "surrogatepass")


@dataclass
class StoredResponse:
    """A response as last sent and the messages a follow-up continues from."""

    body: dict[str, Any]
    history: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class TableLimits:
    max_entries: int
    ttl_secs: float  # 0: entries never expire


class ResponseDatabase:
    """The SQLite file (or ``:memory:``) and its byte budget."""

    def __init__(self, path: str | None, max_bytes: int, clock: Callable[[], float] = time.time,
                 ) -> None:
        self.path = prepare_path(path)
        self.max_bytes = max(0, max_bytes)
        self._clock = clock
        self._lock = threading.Lock()
        try:
            self._conn = sqlite3.connect(self.path, check_same_thread=False,
                                         isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000)
            self._setup()
        except sqlite3.Error as exc:
            raise StorePathError(f"--store-path {self.path!r}: {exc}") from None

    def _setup(self) -> None:
        conn = self._conn
        # auto_vacuum takes effect only before the first table is made.
        conn.execute("PRAGMA auto_vacuum = INCREMENTAL")
        if self.path != MEMORY:
            conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.executescript(_SCHEMA)
        columns = {row[1] for row in conn.execute("PRAGMA table_info(entries)")}
        if "unfinished" not in columns:  # a version 1 file
            conn.execute("ALTER TABLE entries ADD COLUMN unfinished INTEGER NOT NULL DEFAULT 0")
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, taken at once (BEGIN IMMEDIATE) so it cannot deadlock with
        another process's writer; rolled back if anything fails."""
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def put(self, kind: str, key: str, value: Any, limits: TableLimits,
            unfinished: bool = False) -> bool:
        """Store ``value`` (False where it alone exceeds the budget: then the key is removed);
        ``unfinished``: a background response still being generated."""
        blob = encode(value)
        size = len(blob) + len(key.encode("utf-8", "surrogatepass"))
        now = self._clock()
        expires = now + limits.ttl_secs if limits.ttl_secs > 0 else None
        with self._write() as conn:
            if size > self.max_bytes:
                conn.execute("DELETE FROM entries WHERE kind = ? AND id = ?", (kind, key))
                freed = True
            else:
                conn.execute(
                    "INSERT INTO entries (kind, id, value, size, expires_at, used_at, unfinished) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (kind, id) DO UPDATE SET "
                    "value = excluded.value, size = excluded.size, "
                    "expires_at = excluded.expires_at, used_at = excluded.used_at, "
                    "unfinished = excluded.unfinished",
                    (kind, key, blob, size, expires, now, int(unfinished)))
                freed = self._evict(conn, kind, limits.max_entries, now)
        if freed:
            self._release_pages()
        return size <= self.max_bytes

    def _evict(self, conn: sqlite3.Connection, kind: str, max_entries: int, now: float) -> bool:
        """Expired entries, then this table's least recently used past its count, then the
        least recently used of either table past the byte budget."""
        gone = conn.execute("DELETE FROM entries WHERE expires_at <= ?", (now,)).rowcount
        (count,) = conn.execute("SELECT COUNT(*) FROM entries WHERE kind = ?",
                                (kind,)).fetchone()
        if count > max_entries:
            gone += conn.execute(
                "DELETE FROM entries WHERE rowid IN (SELECT rowid FROM entries WHERE kind = ? "
                "ORDER BY used_at, rowid LIMIT ?)", (kind, count - max_entries)).rowcount
        (held,) = conn.execute("SELECT COALESCE(SUM(size), 0) FROM entries").fetchone()
        if held > self.max_bytes:
            victims, excess = [], held - self.max_bytes
            for rowid, size in conn.execute(
                    "SELECT rowid, size FROM entries ORDER BY used_at, rowid"):
                victims.append((rowid,))
                excess -= size
                if excess <= 0:
                    break
            conn.executemany("DELETE FROM entries WHERE rowid = ?", victims)
            gone += len(victims)
        return gone > 0

    def _release_pages(self) -> None:
        with self._lock:
            # Through executescript, which steps the pragma to its end: one execute() frees
            # a single page (Python's sqlite3 steps a statement without result rows once).
            self._conn.executescript("PRAGMA incremental_vacuum")

    def get(self, kind: str, key: str) -> Any | None:
        """The value (marked as just used), or None where it is absent or expired."""
        now = self._clock()
        with self._write() as conn:
            row = conn.execute("SELECT value, expires_at FROM entries WHERE kind = ? AND id = ?",
                               (kind, key)).fetchone()
            if row is None:
                return None
            if row[1] is not None and row[1] <= now:
                conn.execute("DELETE FROM entries WHERE kind = ? AND id = ?", (kind, key))
                return None
            conn.execute("UPDATE entries SET used_at = ? WHERE kind = ? AND id = ?",
                         (now, kind, key))
        return json.loads(bytes(row[0]).decode("utf-8", "surrogatepass"))

    def delete(self, kind: str, key: str) -> bool:
        with self._write() as conn:
            gone = conn.execute("DELETE FROM entries WHERE kind = ? AND id = ?",
                                (kind, key)).rowcount
        return gone > 0

    def purge_expired(self) -> int:
        """Remove every expired entry now (the store's timer calls this)."""
        with self._write() as conn:
            gone: int = conn.execute("DELETE FROM entries WHERE expires_at <= ?",
                                     (self._clock(),)).rowcount
        if gone:
            self._release_pages()
        return gone

    def fail_unfinished(self, kind: str, fail: Callable[[Any], Any]) -> int:
        """Rewrite every unfinished entry of ``kind`` through ``fail`` (at startup: whoever was
        generating them is gone); the number rewritten."""
        with self._write() as conn:
            rows = conn.execute("SELECT id, value FROM entries WHERE kind = ? AND unfinished = 1",
                                (kind,)).fetchall()
            for key, raw in rows:
                blob = encode(fail(json.loads(bytes(raw).decode("utf-8", "surrogatepass"))))
                size = len(blob) + len(key.encode("utf-8", "surrogatepass"))
                conn.execute("UPDATE entries SET value = ?, size = ?, unfinished = 0 "
                             "WHERE kind = ? AND id = ?", (blob, size, kind, key))
        return len(rows)

    def count(self, kind: str) -> int:
        with self._lock:
            (n,) = self._conn.execute("SELECT COUNT(*) FROM entries WHERE kind = ?",
                                      (kind,)).fetchone()
        return int(n)

    @property
    def bytes_held(self) -> int:
        with self._lock:
            (n,) = self._conn.execute("SELECT COALESCE(SUM(size), 0) FROM entries").fetchone()
        return int(n)

    def checkpoint(self) -> None:
        """Copy the write-ahead log into the database file and empty it (at shutdown: the
        next start then reads one file)."""
        if self.path != MEMORY:
            with self._lock:
                self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()

    def close(self) -> None:
        self.checkpoint()
        with self._lock:
            self._conn.close()


class StoreTable(Generic[V]):
    """One kind of entry in the database, with its own count and time-to-live."""

    def __init__(self, db: ResponseDatabase, kind: str, limits: TableLimits,
                 load: Callable[[Any], V], dump: Callable[[V], Any]) -> None:
        self.db, self.kind, self.limits = db, kind, limits
        self._load, self._dump = load, dump

    @property
    def enabled(self) -> bool:
        return self.limits.max_entries > 0

    def put(self, key: str, value: V, unfinished: bool = False) -> bool:
        return self.enabled and self.db.put(self.kind, key, self._dump(value), self.limits,
                                            unfinished)

    def fail_unfinished(self, fail: Callable[[V], V]) -> int:
        return self.db.fail_unfinished(self.kind, lambda raw: self._dump(fail(self._load(raw))))

    def get(self, key: str) -> V | None:
        if not self.enabled:
            return None
        raw = self.db.get(self.kind, key)
        return None if raw is None else self._load(raw)

    def delete(self, key: str) -> bool:
        return self.db.delete(self.kind, key)

    def __len__(self) -> int:
        return self.db.count(self.kind)


def response_table(db: ResponseDatabase, limits: TableLimits) -> StoreTable[StoredResponse]:
    return StoreTable(db, "response", limits,
                      lambda raw: StoredResponse(raw["body"], raw["history"]),
                      lambda stored: {"body": stored.body, "history": stored.history})


def conversation_table(db: ResponseDatabase,
                       limits: TableLimits) -> StoreTable[list[dict[str, Any]]]:
    return StoreTable(db, "conversation", limits, list, list)
