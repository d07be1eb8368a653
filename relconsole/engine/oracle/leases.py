"""Dataset leases and fixture pins (SPEC §4): manifests, states, hashing and renewal rules.

A lease pins a corpus by sha256 so that an agent cannot make a failing relation pass
by editing its input. States, worst first: invalid, missing, drifted, expired,
expiring, ok. Hashing streams the file (``hashcache.sha256_stream``), so memory stays
flat; a caller may pass its own ``digest`` (the review looks corpora up by blob oid).
Re-pinning a drifted lease (a re-hash) is previewed in ``rehash``.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from relconsole.engine.errors import BadInputError, CommitRefused
from relconsole.engine.oracle.jsonnumbers import loads
from relconsole.engine.oracle.hashcache import file_kind, sha256_stream
from relconsole.engine.oracle.schemacheck import first_error, shipped, validate
from relconsole.engine.oracle.yamlload import load_yaml_text

OK, EXPIRING, EXPIRED, DRIFTED, MISSING, INVALID = (
    "ok", "expiring", "expired", "drifted", "missing", "invalid")
SEVERITY = {OK: 0, EXPIRING: 1, EXPIRED: 2, DRIFTED: 3, MISSING: 4, INVALID: 5}
USABLE = {OK, EXPIRING}  # states a relation may read (§4: expired/drifted fail it)
Digest = Callable[[Path, str], str]  # (file to hash, its repository path) -> hex sha256

LEASE_SCHEMA = shipped("lease")  # relconsole/schemas/lease.schema.json, as editors read it
PIN_SCHEMA = shipped("pin")  # relconsole/schemas/pin.schema.json


@dataclass
class Lease:
    """A dataset lease manifest as loaded; ``source`` is its repository path."""

    id: str
    path: str
    sha256: str
    expires: dt.date
    owners: tuple[str, ...]
    allowed_relations: tuple[str, ...]
    notes: str = ""
    source: str = ""
    raw: dict = field(default_factory=dict)


@dataclass
class LeaseStatus:
    """A lease's state on a given day, with the reason a reviewer reads.

    ``lease`` is None for an invalid manifest; ``days_left`` is calendar days until
    expiry (negative once expired); ``actual_sha256`` is what the corpus hashed to.
    """

    source: str
    state: str
    reason: str
    lease: Lease | None = None
    days_left: int | None = None
    actual_sha256: str | None = None

    @property
    def id(self) -> str:
        return self.lease.id if self.lease else Path(self.source).stem


def parse_lease(text: str, source: str) -> Lease:
    """Load one manifest. Raises BadInputError (file and line) when malformed."""
    loaded = load_yaml_text(text, source)
    if not isinstance(loaded.data, dict):
        raise BadInputError(source, "a lease manifest is a mapping with id, path, sha256, expires, owner", 1)
    validate(loaded, LEASE_SCHEMA, source)
    data = loaded.data
    expires = data["expires"]
    if isinstance(expires, str):
        try:
            expires = dt.date.fromisoformat(expires)
        except ValueError:
            raise BadInputError(source, f"expires: {expires!r} is not a YYYY-MM-DD date",
                                loaded.line_of(("expires",))) from None
    owners = data["owner"] if isinstance(data["owner"], list) else [data["owner"]]
    return Lease(id=data["id"], path=data["path"], sha256=data["sha256"], expires=expires,
                 owners=tuple(owners), allowed_relations=tuple(data["allowed_relations"]),
                 notes=data.get("notes", ""), source=source, raw=data)


def sha256_file(path: Path) -> str:
    """Hex sha256 of a regular file, streamed (``hashcache.sha256_stream``).

    Raises OSError when it is absent or unreadable, NotRegularFile (an OSError) at once
    for a directory, FIFO, socket or device.
    """
    return sha256_stream(path)


def _any_file(path: Path, _relative: str) -> str:
    return sha256_stream(path)


def header_fields(path: str, first_line: str) -> list[str]:
    """A corpus's field names from its first non-empty line: the CSV header, or the keys of
    the first row of a JSON-lines file (``.jsonl``/``.ndjson``/``.json``, gzip or not, as the
    subject harness reads them); [] when that row is not an object."""
    if path.removesuffix(".gz").endswith((".jsonl", ".ndjson", ".json")):
        try:
            row = json.loads(first_line)
        except ValueError:
            return []
        return [str(k) for k in row] if isinstance(row, dict) else []
    return next(csv.reader(io.StringIO(first_line)), [])


def corpus_file(root: Path, relative: str) -> tuple[Path | None, str]:
    """Resolve a lease path inside ``root``; (None, reason) when it is unsafe or absent (§4).

    Refuses absolute paths, ``..`` components, NUL bytes, symlinks that leave ``root``
    and symlink loops; a directory, FIFO, socket or device is refused at once rather than
    read (it would hang or fail). The reason is ``missing`` when nothing is there. This
    only ``stat``s; the hashing opens with ``open_regular``, which checks again.
    """
    if "\0" in relative:
        return None, f"path {relative!r} contains a NUL byte"
    if relative.startswith("/") or re.match(r"^[A-Za-z]:", relative):
        return None, f"path {relative!r} is absolute; a corpus lives inside the repository"
    if ".." in Path(relative).parts:
        return None, f"path {relative!r} leaves the repository (..)"
    candidate = root / relative
    try:
        resolved = candidate.resolve(strict=False)
        resolved.relative_to(root.resolve())
    except ValueError:
        return None, f"path {relative!r} is a symlink that points outside the repository"
    except (RuntimeError, OSError) as exc:  # a symlink loop (RuntimeError before Python 3.13)
        return None, f"path {relative!r} cannot be resolved: {getattr(exc, 'strerror', None) or exc}"
    if not candidate.exists() and not candidate.is_symlink():
        return None, "missing"
    try:
        mode = candidate.stat().st_mode
    except OSError as exc:
        return None, f"cannot stat corpus {relative!r}: {exc.strerror}"
    if not stat.S_ISREG(mode):
        return None, f"path {relative!r} is not a regular file ({file_kind(mode)})"
    return candidate, ""


def lease_status(lease: Lease, root: Path, today: dt.date, window_days: int = 7,
                 digest: Digest | None = None) -> LeaseStatus:
    """The state of ``lease`` on ``today`` against the corpus under ``root`` (§4).

    ``digest(path, lease.path)`` hashes the corpus (default: stream the file); an OSError
    from it (unreadable, or not a regular file after all) makes the lease ``invalid``.
    """
    days_left = (lease.expires - today).days
    path, problem = corpus_file(root, lease.path)
    if path is None and problem == "missing":
        return LeaseStatus(lease.source, MISSING, f"corpus {lease.path} is absent", lease, days_left)
    if path is None:
        return LeaseStatus(lease.source, INVALID, problem, lease, days_left)
    try:
        actual = (digest or _any_file)(path, lease.path)
    except OSError as exc:
        return LeaseStatus(lease.source, INVALID, f"corpus unreadable: {exc.strerror or exc}", lease, days_left)
    state, reason = state_at_tip(lease, actual, days_left, window_days)
    return LeaseStatus(lease.source, state, reason, lease, days_left, actual)


def state_at_tip(lease: Lease, digest: str, days_left: int, window: int) -> tuple[str, str]:
    """The §4 state and reason of ``lease`` whose corpus hashes to ``digest``, with
    ``days_left`` calendar days to expiry and an expiring ``window`` in days."""
    if digest != lease.sha256:
        return DRIFTED, (f"hash differs ({digest[:12]}… != {lease.sha256[:12]}…): renew the lease in a "
                         "reviewed commit (a confirmed re-hash), do not patch the corpus")
    if days_left < 0:
        return EXPIRED, f"expired on {lease.expires.isoformat()}"
    if days_left <= window:
        return EXPIRING, f"expires on {lease.expires.isoformat()} (in {days_left} d)"
    return OK, f"valid until {lease.expires.isoformat()}"


def reading_refusal(status: LeaseStatus | None, relation_id: str, lease_id: str) -> str | None:
    """Why a relation may not read this lease (fails closed, §4), or None when it may."""
    if status is None:
        return f"lease {lease_id!r} does not exist"
    if status.state not in USABLE:
        return f"lease {lease_id} is {status.state}: {status.reason}"
    if relation_id not in status.lease.allowed_relations:
        return f"lease {lease_id} does not list {relation_id} in allowed_relations"
    return None


def identity_matches(owners: tuple[str, ...], name: str, email: str) -> bool:
    """True when the git identity (user.name, user.email) is one of the lease owners.

    An owner written as an email (or ``Name <email>``) matches the email, case-folded;
    any other owner string matches the user name exactly.
    """
    for owner in owners:
        found = re.search(r"<([^>]+)>", owner)
        owner_email = found.group(1) if found else (owner if "@" in owner else None)
        if owner_email is not None and email and owner_email.casefold() == email.casefold():
            return True
        if owner_email is None and name and owner == name:
            return True
    return False


def check_renewal(status: LeaseStatus, name: str, email: str, until: dt.date,
                  today: dt.date, max_days: int = 30) -> None:
    """Enforce §4 renewal: owner only, expiry moves forward, at most ``max_days`` from today.

    Raises CommitRefused with the reason; the sha256 is never touched by renewal.
    """
    lease = status.lease
    if lease is None or status.state in (INVALID, MISSING, DRIFTED):
        todo = {DRIFTED: f"re-hash it first, an explicit confirmed action (relconsole lease rehash {status.id}), "
                         "or restore the corpus to the pinned bytes",
                MISSING: "restore the corpus in a reviewed commit"}.get(status.state, "fix the manifest")
        raise CommitRefused(f"lease {status.id} is {status.state} ({status.reason}); "
                            f"only a lease whose corpus matches its hash can be renewed: {todo}")
    if not identity_matches(lease.owners, name, email):
        who = f"{name} <{email}>" if email else name or "no git identity"
        raise CommitRefused(f"lease {lease.id} belongs to {', '.join(lease.owners)}; "
                            f"you are {who}: only an owner may renew")
    limit = today + dt.timedelta(days=max_days)
    if until > limit:
        raise CommitRefused(f"{until.isoformat()} is beyond the renewal maximum of {max_days} "
                            f"days ({limit.isoformat()})")
    if until <= today:
        raise CommitRefused(f"{until.isoformat()} is not after today ({today.isoformat()})")
    if until <= lease.expires:
        raise CommitRefused(f"{until.isoformat()} does not extend the lease "
                            f"(it expires on {lease.expires.isoformat()})")


def pin_states(pins_text: str | None, root: Path, source: str,
               digest: Digest | None = None) -> dict[str, str]:
    """Fixture pins (§4): name -> ``match`` | ``mismatch``, names being repository paths.

    A fixture that is unsafe (the lease path rules), absent or unreadable is a mismatch.
    ``digest(path, name)`` hashes a fixture (default: stream the file).
    Raises BadInputError for malformed JSON or a value that is not ``sha256:<hex>``.
    """
    if not pins_text:
        return {}
    try:
        pins = loads(pins_text)
    except json.JSONDecodeError as exc:
        raise BadInputError(source, f"invalid JSON: {exc.msg}", exc.lineno) from None
    if not isinstance(pins, dict):
        raise BadInputError(source, "pins must be an object: fixture -> \"sha256:<hex>\"", 1)
    states = {}
    for name, value in pins.items():
        if first_error(value, PIN_SCHEMA["additionalProperties"]) is not None:
            raise BadInputError(source, f"pin {name!r}: expected \"sha256:<64 hex>\", got {value!r}",
                                _json_line(pins_text, name))
        path, _problem = corpus_file(root, name)
        try:
            actual = (digest or _any_file)(path, name) if path else None
        except OSError:
            actual = None
        states[name] = "match" if actual == value.split(":", 1)[1] else "mismatch"
    return states


def _json_line(text: str, key: str) -> int | None:
    """The first line on which ``"key"`` appears in JSON text (for error messages)."""
    needle = '"' + key + '"'
    for number, line in enumerate(text.splitlines(), 1):
        if needle in line:
            return number
    return None
