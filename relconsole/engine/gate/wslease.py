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
"""

from __future__ import annotations

import datetime as dt
import getpass
import math
import os
import re
import socket
import sqlite3
import threading
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from relconsole.engine.defaults import WORKSPACE_TTL_SECONDS
from relconsole.engine.errors import EXIT_ABORT, RelconsoleError, UsageError

STATES = ("fresh", "stale", "missing")
FRESH, STALE, MISSING = STATES
DEFAULT_TTL_SECONDS = WORKSPACE_TTL_SECONDS
MAX_TTL_SECONDS = 7 * 24 * 3600.0
REDIS_TIMEOUT_SECONDS = 2.0
SQLITE_BUSY_SECONDS = 60.0  # 32 racing processes queue on one write lock
DEFAULT_RELPATH = Path("relconsole") / "workspace-leases.sqlite3"
ENV_URL = "RELCONSOLE_LEASE_URL"
_OK, _HELD, _NOT_HOLDER = "ok", "held", "notholder"


@dataclass(frozen=True)
class WorkspaceLease:
    """One acquisition of a workspace (SPEC §5). Times are unix seconds (floats).

    ``id`` is a fresh uuid4 hex per acquisition; ``generation`` the workspace's counter
    at that acquisition. ``clock_offset`` (store clock minus local clock, seconds, not
    compared) lets :meth:`seconds_left` judge by the store's clock.
    """

    id: str
    workspace: str
    holder: str
    acquired_at: float
    expires_at: float
    generation: int
    clock_offset: float = field(default=0.0, compare=False, repr=False)

    def seconds_left(self, now: float | None = None) -> float:
        """Seconds until expiry, never below 0; ``now`` is unix seconds on the store's clock
        (default: the local clock corrected by ``clock_offset``)."""
        if now is None:
            now = time.time() + self.clock_offset
        return max(0.0, self.expires_at - now)

    def to_json(self, now: float | None = None) -> dict:
        """The fields, ISO-8601 UTC ``acquired``/``expires`` strings and ``seconds_left``."""
        return {"id": self.id, "workspace": self.workspace, "holder": self.holder,
                "acquired_at": self.acquired_at, "expires_at": self.expires_at,
                "generation": self.generation, "acquired": _iso(self.acquired_at),
                "expires": _iso(self.expires_at), "seconds_left": round(self.seconds_left(now), 3)}


def _iso(seconds: float) -> str:
    stamp = dt.datetime.fromtimestamp(seconds, tz=dt.timezone.utc)
    return stamp.isoformat(timespec="milliseconds").replace("+00:00", "Z")


class LeaseHeld(RelconsoleError):
    """Another holder has an unexpired lease on the workspace (exit 3, abort; SPEC §5).

    ``lease`` is that holder's lease; ``seconds_left`` is judged on the store's clock.
    """

    exit_code = EXIT_ABORT

    def __init__(self, lease: WorkspaceLease, seconds_left: float):
        self.lease = lease
        self.seconds_left = seconds_left
        super().__init__(f"workspace {lease.workspace!r} is held by {lease.holder} for another "
                         f"{seconds_left:.1f} s (generation {lease.generation}, lease {lease.id})")


class NotHolder(RelconsoleError):
    """Renew or release by someone who does not hold an unexpired lease (exit 3; SPEC §5).

    ``lease`` is the current record (None when there is none), possibly expired or another's.
    """

    exit_code = EXIT_ABORT

    def __init__(self, workspace: str, holder: str, lease: WorkspaceLease | None, now: float):
        self.workspace, self.holder, self.lease = workspace, holder, lease
        super().__init__(f"{holder} does not hold workspace {workspace!r}: {_why_not(lease, holder, now)}")


def _why_not(lease: WorkspaceLease | None, holder: str, now: float) -> str:
    if lease is None:
        return "no lease is held"
    if lease.expires_at <= now:
        return f"the lease of {lease.holder} expired {now - lease.expires_at:.1f} s ago"
    return f"it is held by {lease.holder} for another {lease.expires_at - now:.1f} s"


class StoreUnavailable(RelconsoleError):
    """The lease store cannot be reached or answered with an error (exit 3; names the URL)."""

    exit_code = EXIT_ABORT

    def __init__(self, url: str, cause: object):
        self.url = redact(url)
        super().__init__(f"workspace lease store {self.url} is unavailable: {cause}")


class EvictingStore(StoreUnavailable):
    """A Redis server that may evict keys, or whose eviction policy cannot be read (exit 3;
    issue 18): an evicted counter or lease would unfence superseded sheets. ``policy`` is the
    server's ``maxmemory-policy`` (None when it could not be read), ``why`` says why in words."""

    def __init__(self, url: str, policy: str | None, why: str):
        self.url, self.policy = redact(url), policy
        RelconsoleError.__init__(self, f"workspace lease store {self.url} is refused: {why}; leases need "
                                       "maxmemory-policy noeviction (an evicted generation would let a "
                                       "superseded sheet pass as current)")


@dataclass(frozen=True)
class LeaseStatus:
    """A workspace's lease state for a caller (SPEC §5).

    ``state`` is one of :data:`STATES`; ``reason`` says why in words; ``generation`` is the
    workspace's current counter (0 when never acquired, or unknown because the store is
    unreachable, in which case ``reachable`` is False, ``state`` stale and ``lease`` None).
    """

    state: str
    lease: WorkspaceLease | None
    reason: str
    generation: int
    reachable: bool = True


@dataclass(frozen=True)
class _Outcome:
    """What one store operation decided: ``kind`` (ok/held/notholder), the store's ``now``,
    the workspace counter and its record after the operation (the released one for release)."""

    kind: str
    now: float
    generation: int
    record: WorkspaceLease | None


class LeaseStore:
    """A workspace lease store (SPEC §5); subclasses supply ``_apply`` and ``_records``.

    Workspace and holder names are non-empty strings; TTLs are seconds (> 0, floats allowed).
    Every method except :meth:`status` raises :class:`StoreUnavailable` when the store
    cannot be reached, and :class:`~relconsole.engine.errors.UsageError` on a bad argument.
    """

    url: str = ""

    def acquire(self, workspace: str, holder: str, ttl_seconds: float) -> WorkspaceLease:
        """Take the workspace for ``ttl_seconds``; raises :class:`LeaseHeld` while another
        holder's lease is unexpired. An expired lease is taken over. The same holder's
        unexpired lease is extended (same id and generation); any other acquisition gets a
        new id and a higher generation (:func:`next_generation`)."""
        out = self._apply("acquire", _name(workspace), _name(holder, "holder"), _ttl(ttl_seconds))
        if out.kind == _HELD:
            raise LeaseHeld(out.record, out.record.expires_at - out.now)
        return out.record

    def renew(self, workspace: str, holder: str, ttl_seconds: float) -> WorkspaceLease:
        """Extend the holder's unexpired lease to now + ``ttl_seconds``; :class:`NotHolder` otherwise."""
        out = self._apply("renew", _name(workspace), _name(holder, "holder"), _ttl(ttl_seconds))
        return self._mine(out, workspace, holder)

    def release(self, workspace: str, holder: str) -> None:
        """End the holder's unexpired lease (the generation counter is kept); :class:`NotHolder` otherwise."""
        self._mine(self._apply("release", _name(workspace), _name(holder, "holder"), 0.0), workspace, holder)

    def get(self, workspace: str) -> WorkspaceLease | None:
        """The current record, even when expired; None when there is none or it was released."""
        return self._apply("read", _name(workspace), "", 0.0).record

    def generation(self, workspace: str) -> int:
        """The workspace's generation: 0 when never acquired (or its counter and lease were
        both lost); kept after release."""
        return self._apply("read", _name(workspace), "", 0.0).generation

    def status(self, workspace: str, holder: str | None = None) -> LeaseStatus:
        """fresh (unexpired, and held by ``holder`` when one is given), stale (expired, held by
        someone else, or the store unreachable), or missing (no lease). Never raises
        :class:`StoreUnavailable`."""
        try:
            out = self._apply("read", _name(workspace), "", 0.0)
        except StoreUnavailable as exc:
            return LeaseStatus(STALE, None, f"cannot read the lease: {exc.one_line()}", 0, reachable=False)
        return _status(workspace, holder, out)

    def list(self) -> list[WorkspaceLease]:
        """Every current (unreleased) lease, expired ones included, sorted by workspace."""
        return sorted(self._records(), key=lambda lease: lease.workspace)

    def close(self) -> None:
        """Release the connection; the store is unusable afterwards."""

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _mine(self, out: _Outcome, workspace: str, holder: str) -> WorkspaceLease | None:
        if out.kind == _NOT_HOLDER:
            raise NotHolder(workspace, holder, out.record, out.now)
        return out.record

    def _apply(self, op: str, workspace: str, holder: str, ttl: float) -> _Outcome:
        raise NotImplementedError

    def _records(self) -> list[WorkspaceLease]:
        raise NotImplementedError


def _status(workspace: str, holder: str | None, out: _Outcome) -> LeaseStatus:
    lease, now = out.record, out.now
    if lease is None:
        return LeaseStatus(MISSING, None, f"no lease on workspace {workspace!r}", out.generation)
    if lease.expires_at <= now:
        why = f"the lease of {lease.holder} expired {now - lease.expires_at:.1f} s ago"
        return LeaseStatus(STALE, lease, why, out.generation)
    left = f"{lease.expires_at - now:.1f} s left"
    if holder is not None and lease.holder != holder:
        return LeaseStatus(STALE, lease, f"held by {lease.holder}, not by {holder} ({left})", out.generation)
    return LeaseStatus(FRESH, lease, f"held by {lease.holder}, {left}", out.generation)


def _name(value: str, what: str = "workspace") -> str:
    if not isinstance(value, str) or not value.strip() or any(ord(c) < 32 for c in value):
        raise UsageError(f"a {what} name must be a non-empty single-line string, not {value!r}")
    return value


def _ttl(seconds: float) -> float:
    try:
        seconds = float(seconds)
    except (TypeError, ValueError):
        raise UsageError(f"a lease TTL is a number of seconds, not {seconds!r}") from None
    if not math.isfinite(seconds) or seconds <= 0:
        raise UsageError(f"a lease TTL must be a positive number of seconds, not {seconds!r}")
    if seconds > MAX_TTL_SECONDS:
        raise UsageError(f"a lease TTL of {seconds:g} s is longer than {MAX_TTL_SECONDS:g} s (7 days): "
                         "a workspace lease is renewed while work runs, not held for months")
    return seconds


def next_generation(previous: int, now: float) -> int:
    """The generation of a new acquisition (SPEC §5 fencing token): above ``previous`` and
    at least the store's clock ``now`` (unix seconds) in whole microseconds, so a counter
    that was lost (read as 0) still yields a generation above every one handed out before,
    and a clock that steps back still yields ``previous + 1``. Mirrored in the Lua script."""
    return max(previous + 1, int(now * 1_000_000))


def _transition(op: str, workspace: str, record: WorkspaceLease | None, counter: int,
                holder: str, now: float, ttl: float) -> tuple[str, WorkspaceLease | None, int, bool]:
    """The lease rules (SPEC §5), shared by SQLite and mirrored by the Redis Lua script.
    ``counter`` is the stored counter (0 when missing); the generation is the larger of it and
    the record's, so a lost counter under a held lease keeps the holder's sheets current.

    Returns (outcome, record after the operation, generation, whether to write)."""
    generation = max(counter, record.generation if record is not None else 0)
    live = record is not None and record.expires_at > now
    mine = live and record.holder == holder
    if op == "acquire" and live and not mine:
        return _HELD, record, generation, False
    if op == "acquire" and not mine:
        generation = next_generation(generation, now)
        fresh = WorkspaceLease(uuid.uuid4().hex, workspace, holder, now, now + ttl, generation)
        return _OK, fresh, generation, True
    if op in ("acquire", "renew") and mine:
        return _OK, replace(record, expires_at=now + ttl), generation, True
    if op in ("renew", "release") and not mine:
        return _NOT_HOLDER, record, generation, False
    return _OK, record, generation, op == "release"


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

    def _apply(self, op: str, workspace: str, holder: str, ttl: float) -> _Outcome:
        try:
            with self._transaction():
                record, generation = self._read(workspace)
                now = time.time()
                kind, after, generation, write = _transition(op, workspace, record, generation, holder, now, ttl)
                if write:
                    self._write(op, workspace, after, generation)
        except sqlite3.Error as exc:
            raise StoreUnavailable(self.url, exc) from exc
        return _Outcome(kind, now, generation, after)

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


# One script for every operation, mirroring _transition; times come from the server's TIME.
# Numbers go back as strings (Redis truncates Lua numbers to integers); generations, near
# 2**51, are formatted with %.0f (tostring would round them to 14 digits).
_LUA = """
local op, holder, ttl, new_id = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4]
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
local f = redis.call('HMGET', KEYS[1], 'id', 'holder', 'acquired_at', 'expires_at', 'generation')
local have = f[1] ~= false
local gen = math.max(tonumber(redis.call('GET', KEYS[2]) or '0'), have and tonumber(f[5]) or 0)
local live = have and tonumber(f[4]) > now
local mine = live and f[2] == holder
local kind = 'ok'
local function fmt(x) return string.format('%.6f', x) end
local function int(x) return string.format('%.0f', x) end
if op == 'acquire' and live and not mine then
  kind = 'held'
elseif op == 'acquire' and not mine then
  gen = math.max(gen + 1, now_us)
  redis.call('SET', KEYS[2], int(gen))
  f = {new_id, holder, fmt(now), fmt(now + ttl), int(gen)}
  have = true
  redis.call('HSET', KEYS[1], 'id', f[1], 'holder', f[2], 'acquired_at', f[3], 'expires_at', f[4], 'generation', f[5])
elseif (op == 'acquire' or op == 'renew') and mine then
  f[4] = fmt(now + ttl)
  redis.call('HSET', KEYS[1], 'expires_at', f[4])
elseif (op == 'renew' or op == 'release') and not mine then
  kind = 'notholder'
elseif op == 'release' then
  redis.call('DEL', KEYS[1])
end
if not have then return {kind, fmt(now), int(gen)} end
return {kind, fmt(now), int(gen), f[1], f[2], f[3], f[4], f[5]}
"""


class RedisLeaseStore(LeaseStore):
    """The shared store on a Redis server (``redis://`` or ``rediss://`` URL).

    Each operation is one Lua script (atomic on the server, judged by the server's TIME).
    Socket timeouts are :data:`REDIS_TIMEOUT_SECONDS` with no retries, so an unreachable
    server fails fast with :class:`StoreUnavailable`. Before its first operation the store
    reads the server's ``maxmemory-policy`` (``CONFIG GET``, else ``INFO memory`` when an
    ACL refuses CONFIG) and raises :class:`EvictingStore` for anything but ``noeviction``
    (issue 18). The check is made once per store object; a policy changed afterwards is
    caught by the next one, and generations still only rise meanwhile.
    """

    HASH_PREFIX = "relconsole:wslease:"
    GEN_PREFIX = "relconsole:wsgen:"

    def __init__(self, url: str):
        try:
            import redis
            from redis.backoff import NoBackoff
            from redis.retry import Retry
        except ImportError:
            raise UsageError(f"--lease-url {redact(url)} needs the Redis client: "
                             "pip install 'relconsole[redis]'") from None

        self.url = redact(url)  # what sheets and messages show: never a password
        self._errors = (redis.exceptions.RedisError, OSError)
        try:
            self._client = redis.Redis.from_url(
                url, socket_timeout=REDIS_TIMEOUT_SECONDS, socket_connect_timeout=REDIS_TIMEOUT_SECONDS,
                retry=Retry(NoBackoff(), 0), decode_responses=True)
        except (ValueError, *self._errors) as exc:
            raise UsageError(f"bad Redis URL {redact(url)}: {exc}") from exc
        self._script = self._client.register_script(_LUA)
        self._refused = redis.exceptions.ResponseError  # NOPERM from an ACL, or CONFIG renamed away
        self._safe = False

    def _check_policy(self) -> None:
        """Raise :class:`EvictingStore` unless the server's ``maxmemory-policy`` is
        ``noeviction``; connection errors propagate (the callers turn them into StoreUnavailable)."""
        if self._safe:
            return
        try:
            policy = self._client.config_get("maxmemory-policy").get("maxmemory-policy")
            config_error = "it answered nothing"
        except self._refused as exc:
            policy, config_error = None, str(exc)
        if policy is None:
            try:
                policy = self._client.info("memory").get("maxmemory_policy")
            except self._refused as exc:
                raise EvictingStore(self.url, None, f"its maxmemory-policy cannot be read (CONFIG GET: "
                                                    f"{config_error}; INFO memory: {exc})") from None
        if policy is None:
            raise EvictingStore(self.url, None, f"its maxmemory-policy cannot be read (CONFIG GET: "
                                                f"{config_error}; INFO memory names none)")
        if policy != "noeviction":
            raise EvictingStore(self.url, policy, f"its maxmemory-policy is {policy}")
        self._safe = True

    def _apply(self, op: str, workspace: str, holder: str, ttl: float) -> _Outcome:
        keys = [self.HASH_PREFIX + workspace, self.GEN_PREFIX + workspace]
        try:
            self._check_policy()
            reply = self._script(keys=keys, args=[op, holder, repr(ttl), uuid.uuid4().hex])
        except self._errors as exc:
            raise StoreUnavailable(self.url, exc) from exc
        now = float(reply[1])
        record = _from_fields(workspace, reply[3:], now - time.time()) if len(reply) > 3 else None
        return _Outcome(reply[0], now, int(reply[2]), record)

    def _records(self) -> list[WorkspaceLease]:
        fields = ("id", "holder", "acquired_at", "expires_at", "generation")
        try:
            self._check_policy()
            seconds, micros = self._client.time()
            offset = seconds + micros / 1e6 - time.time()
            keys = list(self._client.scan_iter(match=self.HASH_PREFIX + "*", count=500))
            rows = [(key, self._client.hmget(key, fields)) for key in keys]
        except self._errors as exc:
            raise StoreUnavailable(self.url, exc) from exc
        return [_from_fields(key[len(self.HASH_PREFIX):], row, offset) for key, row in rows if row[0]]

    def close(self) -> None:
        self._client.close()


def _from_fields(workspace: str, row, offset: float) -> WorkspaceLease:
    lease_id, holder, acquired, expires, generation = row
    return WorkspaceLease(lease_id, workspace, holder, float(acquired), float(expires),
                          int(generation), clock_offset=offset)


def redact(url: str) -> str:
    """``url`` with any password replaced by ``***`` (for messages and JSON output)."""
    parts = urlsplit(url)
    query = re.sub(r"(?i)((?:^|&)password=)[^&]*", r"\1***", parts.query)
    parts = parts._replace(query=query)
    if parts.password is None:
        return urlunsplit(parts)
    user = parts.username or ""
    host = parts.hostname or ""
    netloc = f"{user}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


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
