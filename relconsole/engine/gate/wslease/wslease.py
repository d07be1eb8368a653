"""Workspace leases (SPEC §5): who may run a replay in a workspace, and for how long.

A lease ``{id, holder, workspace, acquired_at, expires_at, generation}`` has a TTL in
seconds. A second holder of an unexpired lease is refused (:class:`LeaseHeld`); renew
and release are for the holder of an unexpired lease only (:class:`NotHolder`).
``generation`` is the fencing token a replay sheet records: per workspace, it rises with
every new acquisition and is kept after release. A new one is
``max(previous + 1, the store's clock in microseconds)`` (:func:`next_generation`), so a
lost counter (a Redis key evicted or deleted, a SQLite file removed) only moves it forward
and can never hand out a superseded generation again (issue 18); the previous one is the
larger of the counter and the current lease record's.

Two stores with identical semantics:

* :class:`SqliteLeaseStore`, embedded (default: ``<git dir>/relconsole/workspace-leases.sqlite3``);
  every operation is one ``BEGIN IMMEDIATE`` transaction, judged by the local clock.
* :class:`RedisLeaseStore`, shared by CI workers on many machines; every operation is
  one server-side Lua script judged by the Redis server's ``TIME``, so hosts with skewed
  clocks agree. Keys: a hash ``relconsole:wslease:<workspace>`` and a counter
  ``relconsole:wsgen:<workspace>``. A server whose ``maxmemory-policy`` is not
  ``noeviction`` (or whose policy cannot be read) is refused on connect (:class:`EvictingStore`).

Both make their decision with the same rules (:func:`_transition` and its Lua twin),
so the Python layer in :class:`LeaseStore` turns outcomes into leases and errors once.

This module opens a store by URL (``open_store``) and names a holder; the lease, its errors
and the rules live in ``wsleasestore``, the two stores in ``wsleasesqlite`` and ``wsleaseredis``.
"""

from __future__ import annotations

import getpass
import os
import socket
from pathlib import Path

from relconsole.engine.errors import UsageError
from relconsole.engine.gate.wslease.wsleasestore import LeaseStore, redact
from relconsole.engine.gate.wslease.wsleasesqlite import SqliteLeaseStore
from relconsole.engine.gate.wslease.wsleaseredis import RedisLeaseStore

DEFAULT_RELPATH = Path("relconsole") / "workspace-leases.sqlite3"
ENV_URL = "RELCONSOLE_LEASE_URL"


def sqlite_path(url: str) -> Path | None:
    """The file a ``sqlite:`` URL names (None for any other URL, or one naming no file)."""
    if url.startswith("sqlite:///"):
        rest = url[len("sqlite://"):]
    elif url.startswith("sqlite:") and not url.startswith("sqlite://"):
        rest = url[len("sqlite:"):]
    else:
        return None
    return Path(rest) if rest.strip("/") else None


def open_store(url: str | None, git_dir: str | Path) -> LeaseStore:
    """The store at ``url`` (SPEC §5); None means ``$RELCONSOLE_LEASE_URL``, else the SQLite
    file ``<git_dir>/relconsole/workspace-leases.sqlite3`` (directories created).

    ``sqlite:///abs/path`` and ``sqlite:relative/path`` name a SQLite file; ``redis://`` and
    ``rediss://`` a Redis server. Raises UsageError (exit 64) for any other URL and
    StoreUnavailable when a SQLite file cannot be opened (Redis connects lazily).
    """
    url = url or os.environ.get(ENV_URL) or None
    if url is None:
        return SqliteLeaseStore(Path(git_dir) / DEFAULT_RELPATH)
    if url.startswith(("redis://", "rediss://")):
        return RedisLeaseStore(url)
    path = sqlite_path(url)
    if path is not None:
        return SqliteLeaseStore(path)
    raise UsageError(f"unsupported workspace lease store URL {redact(url)!r}: use sqlite:///ABS/PATH, "
                     "sqlite:REL/PATH, redis://HOST:PORT/DB or rediss://...")


def default_holder(pid: int | None = None) -> str:
    """``user@host:pid`` naming this process (or ``pid``) as a lease holder."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = str(os.getuid()) if hasattr(os, "getuid") else "unknown"
    return f"{user}@{socket.gethostname()}:{pid if pid is not None else os.getpid()}"
