"""Dataset leases and fixture pins (SPEC §4): manifests, states, hashing and renewal rules.

A lease pins a corpus by sha256 so that an agent cannot make a failing relation pass
by editing its input. States, worst first: invalid, missing, drifted, expired,
expiring, ok. Hashing streams the file in 1 MiB chunks, so memory stays flat.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

from relconsole.engine.errors import BadInputError, CommitRefused
from relconsole.engine.schemacheck import validate
from relconsole.engine.yamlload import load_yaml_text

OK, EXPIRING, EXPIRED, DRIFTED, MISSING, INVALID = (
    "ok", "expiring", "expired", "drifted", "missing", "invalid")
SEVERITY = {OK: 0, EXPIRING: 1, EXPIRED: 2, DRIFTED: 3, MISSING: 4, INVALID: 5}
USABLE = {OK, EXPIRING}  # states a relation may read (§4: expired/drifted fail it)
CHUNK_BYTES = 1 << 20

_HEX64 = {"type": "string", "pattern": "^[0-9a-f]{64}$"}
_NAME = {"type": "string", "minLength": 1}
LEASE_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["id", "path", "sha256", "expires", "owner", "allowed_relations"],
    "properties": {
        "id": _NAME,
        "path": _NAME,
        "sha256": _HEX64,
        "expires": {"type": ["date", "string"]},
        "owner": {"oneOf": [_NAME, {"type": "array", "items": _NAME, "minItems": 1}]},
        "allowed_relations": {"type": "array", "items": _NAME},
        "notes": {"type": "string"},
    },
}


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
    """Hex sha256 of a file, streamed in 1 MiB chunks. Raises OSError when unreadable."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(CHUNK_BYTES):
            digest.update(chunk)
    return digest.hexdigest()


def corpus_file(root: Path, relative: str) -> tuple[Path | None, str]:
    """Resolve a lease path inside ``root``; (None, reason) when it is unsafe or absent.

    Refuses absolute paths, ``..`` components and symlinks that leave ``root``; a
    directory or FIFO is refused at once rather than read (it would hang or fail).
    """
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
    if not candidate.exists() and not candidate.is_symlink():
        return None, "missing"
    try:
        mode = candidate.stat().st_mode
    except OSError as exc:
        return None, f"cannot stat corpus: {exc.strerror}"
    if not stat.S_ISREG(mode):
        return None, f"path {relative!r} is not a regular file"
    return candidate, ""


def lease_status(lease: Lease, root: Path, today: dt.date, window_days: int = 7) -> LeaseStatus:
    """The state of ``lease`` on ``today`` against the corpus under ``root`` (§4)."""
    days_left = (lease.expires - today).days
    path, problem = corpus_file(root, lease.path)
    if path is None and problem == "missing":
        return LeaseStatus(lease.source, MISSING, f"corpus {lease.path} is absent", lease, days_left)
    if path is None:
        return LeaseStatus(lease.source, INVALID, problem, lease, days_left)
    try:
        actual = sha256_file(path)
    except OSError as exc:
        return LeaseStatus(lease.source, INVALID, f"corpus unreadable: {exc.strerror}", lease, days_left)
    if actual != lease.sha256:
        return LeaseStatus(
            lease.source, DRIFTED,
            f"hash differs ({actual[:12]}… != {lease.sha256[:12]}…): renew the lease in a "
            "reviewed commit, do not patch the corpus", lease, days_left, actual)
    if days_left < 0:
        return LeaseStatus(lease.source, EXPIRED, f"expired on {lease.expires.isoformat()}",
                           lease, days_left, actual)
    if days_left <= window_days:
        return LeaseStatus(lease.source, EXPIRING,
                           f"expires on {lease.expires.isoformat()} (in {days_left} d)",
                           lease, days_left, actual)
    return LeaseStatus(lease.source, OK, f"valid until {lease.expires.isoformat()}", lease,
                       days_left, actual)


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
        raise CommitRefused(f"lease {status.id} is {status.state} ({status.reason}); "
                            "only a lease whose corpus matches its hash can be renewed")
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


PIN_PATTERN = re.compile(r"^sha256:[0-9a-f]{64}$")


def pin_states(pins_text: str | None, root: Path, source: str) -> dict[str, str]:
    """Fixture pins (§4): name -> ``match`` | ``mismatch``, names being repository paths.

    Raises BadInputError for malformed JSON or a value that is not ``sha256:<hex>``.
    """
    if not pins_text:
        return {}
    try:
        pins = json.loads(pins_text)
    except json.JSONDecodeError as exc:
        raise BadInputError(source, f"invalid JSON: {exc.msg}", exc.lineno) from None
    if not isinstance(pins, dict):
        raise BadInputError(source, "pins must be an object: fixture -> \"sha256:<hex>\"", 1)
    states = {}
    for name, value in pins.items():
        if not isinstance(value, str) or not PIN_PATTERN.match(value):
            raise BadInputError(source, f"pin {name!r}: expected \"sha256:<64 hex>\", got {value!r}",
                                _json_line(pins_text, name))
        path, _problem = corpus_file(root, name)
        actual = sha256_file(path) if path else None
        states[name] = "match" if actual == value.split(":", 1)[1] else "mismatch"
    return states


def _json_line(text: str, key: str) -> int | None:
    """The first line on which ``"key"`` appears in JSON text (for error messages)."""
    needle = '"' + key + '"'
    for number, line in enumerate(text.splitlines(), 1):
        if needle in line:
            return number
    return None
