"""The embedded workspace lease store (SPEC §5): one SQLite file, every operation one
``BEGIN IMMEDIATE`` transaction judged by the local clock with ``wsleasestore._transition``.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from contextlib import contextmanager
from pathlib import Path

from relconsole.engine.gate.wslease.wsleasestore import LeaseStore, StoreUnavailable, WorkspaceLease, Outcome, _transition


SQLITE_BUSY_SECONDS = 60.0  # 32 racing processes queue on one write lock


class SqliteLeaseStore(LeaseStore):
    """The embedded store: one SQLite file (WAL), each operation a ``BEGIN IMMEDIATE``
    transaction judged by the local clock. ``path`` is created with its parent directories."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.url = f"sqlite://{self.path.resolve()}"  # sqlite:///abs/path
        self._lock = threading.Lock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, timeout=SQLITE_BUSY_SECONDS,
                                       isolation_level=None, check_same_thread=False)
            self._setup()
        except (OSError, sqlite3.Error) as exc:
            raise StoreUnavailable(self.url, exc) from exc

    def _setup(self) -> None:
        self._db.execute(f"PRAGMA busy_timeout = {int(SQLITE_BUSY_SECONDS * 1000)}")
        for _ in range(200):  # switching to WAL takes a lock the busy handler does not wait for
            try:
                self._db.execute("PRAGMA journal_mode = WAL")
                break
            except sqlite3.OperationalError:
                time.sleep(0.05)
        with self._transaction():
            self._db.execute("CREATE TABLE IF NOT EXISTS leases (workspace TEXT PRIMARY KEY, id TEXT NOT NULL,"
                             " holder TEXT NOT NULL, acquired_at REAL NOT NULL, expires_at REAL NOT NULL,"
                             " generation INTEGER NOT NULL)")
            self._db.execute("CREATE TABLE IF NOT EXISTS generations (workspace TEXT PRIMARY KEY,"
                             " generation INTEGER NOT NULL)")

    @contextmanager
    def _transaction(self):
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def _apply(self, op: str, workspace: str, holder: str, ttl: float) -> Outcome:
        try:
            with self._transaction():
                record, generation = self._read(workspace)
                now = time.time()
                kind, after, generation, write = _transition(op, workspace, record, generation, holder, now, ttl)
                if write:
                    self._write(op, workspace, after, generation)
        except sqlite3.Error as exc:
            raise StoreUnavailable(self.url, exc) from exc
        return Outcome(kind, now, generation, after)

    def _read(self, workspace: str) -> tuple[WorkspaceLease | None, int]:
        row = self._db.execute("SELECT id, workspace, holder, acquired_at, expires_at, generation"
                               " FROM leases WHERE workspace = ?", (workspace,)).fetchone()
        gen = self._db.execute("SELECT generation FROM generations WHERE workspace = ?", (workspace,)).fetchone()
        return (WorkspaceLease(*row) if row else None), (gen[0] if gen else 0)

    def _write(self, op: str, workspace: str, lease: WorkspaceLease, generation: int) -> None:
        if op == "release":
            self._db.execute("DELETE FROM leases WHERE workspace = ?", (workspace,))
            return
        self._db.execute("INSERT OR REPLACE INTO leases VALUES (?, ?, ?, ?, ?, ?)",
                         (lease.workspace, lease.id, lease.holder, lease.acquired_at,
                          lease.expires_at, lease.generation))
        self._db.execute("INSERT OR REPLACE INTO generations VALUES (?, ?)", (workspace, generation))

    def _records(self) -> list[WorkspaceLease]:
        try:
            with self._lock:
                rows = self._db.execute("SELECT id, workspace, holder, acquired_at, expires_at, generation"
                                        " FROM leases").fetchall()
        except sqlite3.Error as exc:
            raise StoreUnavailable(self.url, exc) from exc
        return [WorkspaceLease(*row) for row in rows]

    def close(self) -> None:
        with self._lock:
            self._db.close()
