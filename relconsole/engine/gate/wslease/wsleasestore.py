"""A workspace lease and the rules every store applies (SPEC §5; ``wslease`` tells the whole
story): the lease record, the errors a refused operation raises (``LeaseHeld``,
``NotHolder``, ``StoreUnavailable``), a workspace's status, the store contract
(``LeaseStore``) and the one transition function both stores judge by (``_transition``,
with ``next_generation``, the fencing token's rule).
"""

from __future__ import annotations

import datetime as dt
import math
import re
import time
import uuid
from dataclasses import dataclass, field, replace
from urllib.parse import urlsplit, urlunsplit

from relconsole.engine.defaults import WORKSPACE_TTL_SECONDS
from relconsole.engine.errors import EXIT_ABORT, RelconsoleError, UsageError


STATES = ("fresh", "stale", "missing")


FRESH, STALE, MISSING = STATES


DEFAULT_TTL_SECONDS = WORKSPACE_TTL_SECONDS


MAX_TTL_SECONDS = 7 * 24 * 3600.0


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
class Outcome:
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

    def _mine(self, out: Outcome, workspace: str, holder: str) -> WorkspaceLease | None:
        if out.kind == _NOT_HOLDER:
            raise NotHolder(workspace, holder, out.record, out.now)
        return out.record

    def _apply(self, op: str, workspace: str, holder: str, ttl: float) -> Outcome:
        raise NotImplementedError

    def _records(self) -> list[WorkspaceLease]:
        raise NotImplementedError


def _status(workspace: str, holder: str | None, out: Outcome) -> LeaseStatus:
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
