"""Dataset leases and fixture pins (SPEC §4): manifests, states, hashing and renewal rules.

A lease pins a corpus by sha256 so that an agent cannot make a failing relation pass
by editing its input. States, worst first: invalid, missing, drifted, expired,
expiring, ok. Hashing streams the file (``hashcache.sha256_stream``), so memory stays
flat; a caller may pass its own ``digest`` (the review looks corpora up by blob oid).
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
from relconsole.engine.oracle.hashcache import HashCache, file_kind, sha256_stream
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
    state, reason = _state_at_tip(lease, actual, days_left, window_days)
    return LeaseStatus(lease.source, state, reason, lease, days_left, actual)


def _state_at_tip(lease: Lease, digest: str, days_left: int, window: int) -> tuple[str, str]:
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


# --- re-hash (§4: an explicit, confirmed action that shows old and new digests) ----------

_BLOB_CHUNK = 1 << 20  # bytes read at a time when hashing a committed corpus


@dataclass(frozen=True)
class CorpusCommit:
    """The newest commit on the oracle branch that changed a corpus (who, when)."""

    sha: str
    author_name: str
    author_email: str
    committed: dt.datetime


@dataclass(frozen=True)
class RehashPreview:
    """Everything a re-hash confirmation shows, and whether it may go ahead (SPEC §4).

    The new digest is the corpus as committed on the oracle branch tip (``branch`` at
    ``commit``, blob ``blob``), never the working tree's bytes. ``size_bytes`` is that
    blob's size. ``mtime`` is the working tree file's modification time (timezone-aware,
    local) when ``working_file`` exists, else None; ``corpus_commit`` is the newest commit
    that changed the corpus on the branch. ``note`` says when the checked-out tree holds
    other committed bytes for the corpus (another branch; its file is not what is pinned,
    so no ``mtime`` is taken from it). ``state`` is the lease's state at the tip
    (with ``reason``); ``refusal`` is None when the confirmer may re-pin, else the reason
    and what to do. Digests are None where there is nothing to read (a manifest that did
    not parse, a corpus absent from the branch).
    """

    lease_id: str
    manifest: str
    corpus: str
    state: str
    reason: str
    old_sha256: str | None
    new_sha256: str | None
    size_bytes: int | None
    mtime: dt.datetime | None
    working_file: str | None
    branch: str
    commit: str
    blob: str | None
    corpus_commit: CorpusCommit | None
    confirmer_name: str
    confirmer_email: str
    refusal: str | None
    note: str = ""

    @property
    def confirmer(self) -> str:
        """Who would confirm, as ``Name <email>`` ("" when git has no identity)."""
        if self.confirmer_name and self.confirmer_email:
            return f"{self.confirmer_name} <{self.confirmer_email}>"
        return self.confirmer_name or self.confirmer_email

    @property
    def digest_source(self) -> str:
        """Where the new digest was read: ``branch@commit:path``."""
        return f"{self.branch}@{self.commit[:12]}:{self.corpus}"

    def as_dict(self) -> dict:
        """A JSON-ready dict (datetimes as ISO 8601)."""
        last = self.corpus_commit
        return {"lease_id": self.lease_id, "manifest": self.manifest, "corpus": self.corpus,
                "state": self.state, "reason": self.reason, "old_sha256": self.old_sha256,
                "new_sha256": self.new_sha256, "size_bytes": self.size_bytes,
                "mtime": self.mtime.isoformat() if self.mtime else None, "working_file": self.working_file,
                "branch": self.branch, "commit": self.commit, "blob": self.blob,
                "corpus_commit": None if last is None else {
                    "sha": last.sha, "author_name": last.author_name, "author_email": last.author_email,
                    "committed": last.committed.isoformat()},
                "confirmer": self.confirmer, "refusal": self.refusal, "note": self.note}


def rehash_preview(review, lease_id: str) -> RehashPreview:
    """What re-pinning lease ``lease_id`` of ``review`` (a ``review.Review``) would write (§4).

    Everything is read afresh from the oracle branch tip (``review.oracle_branch``),
    where the ``lease:`` commit would land: the manifest, and the corpus blob, hashed
    streaming. The preview refuses (``refusal``) unless the lease is drifted there, the
    git identity owns it (as renewal requires) and the working tree copy, when there is
    one, holds exactly the committed bytes. Raises UsageError (exit 64) for an unknown
    lease id and GitError when the oracle branch does not exist.
    """
    from relconsole.engine.repo.identity import git_identity
    from relconsole.engine.repo.gitio import resolve

    status = review.lease_to_change(lease_id)
    branch = review.commit_branch()
    tip = resolve(review.repo, branch)
    try:
        who = git_identity(review.root)
        name, email, no_identity = who.name, who.email, None
    except CommitRefused as exc:
        name, email, no_identity = "", "", exc.one_line()
    fields = {"lease_id": lease_id, "manifest": status.source, "branch": branch, "commit": tip,
              "confirmer_name": name, "confirmer_email": email}
    empty = {"corpus": "", "old_sha256": None, "new_sha256": None, "size_bytes": None, "mtime": None,
             "working_file": None, "blob": None, "corpus_commit": None}
    root = Path(review.root)
    text = _git_bytes(root, "cat-file", "blob", f"{tip}:{status.source}")
    if text is None:
        why = f"{status.source} is not on {branch}; reload the review"
        return RehashPreview(**fields, **empty, state=INVALID, reason=why, refusal=why)
    try:
        lease = parse_lease(text.decode("utf-8", "replace"), status.source)
    except BadInputError as exc:
        reason = exc.one_line()
        return RehashPreview(**fields, **empty, state=INVALID, reason=reason,
                             refusal=f"lease {lease_id} is invalid ({reason}): fix the manifest; "
                                     "only a drifted lease can be re-hashed")
    days_left = (lease.expires - review.today).days
    found = _committed_corpus(root, tip, lease.path)
    corpus = {**empty, "corpus": lease.path, "old_sha256": lease.sha256}
    if isinstance(found, str):
        state = MISSING if found == "missing" else INVALID
        reason = f"corpus {lease.path} is not on {branch}" if state == MISSING else found
        todo = ("restore the corpus in a commit (a re-hash pins only bytes that are in git)"
                if state == MISSING else "fix the lease path")
        return RehashPreview(**fields, **corpus, state=state, reason=reason,
                             refusal=f"lease {lease_id} is {state} ({reason}): {todo}")
    blob, size = found
    new = _exported_digest(review, tip, lease.path)
    cache = HashCache.for_git_dir(review.repo.git_dir)  # an unchanged working copy is not read again
    working, mtime, copy_problem, note = _working_copy(root, lease.path, new, branch, cache)
    cache.save()
    state, reason = _state_at_tip(lease, new, days_left, review.layout.expiring_window_days)
    refusal = None
    if state != DRIFTED:
        refusal = (f"lease {lease_id} is {state} ({reason}): its corpus on {branch} matches the pinned "
                   "digest, there is nothing to re-pin" + ("; renew it instead" if state != OK else ""))
    elif no_identity:
        refusal = no_identity
    elif not identity_matches(lease.owners, name, email):
        refusal = (f"lease {lease_id} belongs to {', '.join(lease.owners)}; you are "
                   f"{name} <{email}>: only an owner may re-hash")
    elif copy_problem:
        refusal = copy_problem
    return RehashPreview(**fields, **{**corpus, "new_sha256": new, "size_bytes": size, "mtime": mtime,
                                      "working_file": working, "blob": blob,
                                      "corpus_commit": _last_change(root, tip, lease.path)},
                         state=state, reason=reason, refusal=refusal, note=note)


def _git_bytes(root: Path, *args: str) -> bytes | None:
    """stdout of ``git ARGS`` in ``root``, or None when git fails (an absent object)."""
    import subprocess

    from relconsole.engine.repo.gitio import clean_env

    proc = subprocess.run(["git", *args], cwd=root, env=clean_env(), capture_output=True)
    return proc.stdout if proc.returncode == 0 else None


def _committed_corpus(root: Path, commit: str, relative: str) -> tuple[str, int] | str:
    """(blob id, size in bytes) of ``relative`` in ``commit``; else ``"missing"`` or the reason
    it cannot be a corpus (an unsafe path, a symlink, a directory, a submodule)."""
    import posixpath

    if relative.startswith("/") or re.match(r"^[A-Za-z]:", relative):
        return f"path {relative!r} is absolute; a corpus lives inside the repository"
    if ".." in Path(relative).parts:
        return f"path {relative!r} leaves the repository (..)"
    normal = posixpath.normpath(relative).removeprefix("./")
    out = _git_bytes(root, "ls-tree", "-l", "-z", "--full-tree", commit, "--", normal)
    for entry in (out or b"").split(b"\0"):
        meta, _, path = entry.partition(b"\t")
        if path.decode("utf-8", "surrogateescape") != normal:
            continue
        mode, kind, oid, size = meta.split()
        if mode == b"120000":
            target = (_git_bytes(root, "cat-file", "blob", oid.decode()) or b"").decode("utf-8", "replace")
            return (f"path {relative!r} is a symlink in git (to {target!r}); a re-hash pins a regular "
                    "file: point the lease's path at the file itself")
        if kind != b"blob" or mode not in (b"100644", b"100755"):
            return f"path {relative!r} is not a regular file in git (mode {mode.decode()})"
        return oid.decode(), int(size)
    return "missing"


def _exported_digest(review, commit: str, relative: str) -> str:
    """sha256 of ``relative`` as ``git archive`` exports ``commit`` (eol and filter
    conversions applied): exactly what a review hashes, so a re-hash pins the digest the
    next review computes. Goes through the repository's hash cache (by blob id)."""
    import shutil

    from relconsole.engine.repo.treeview import TreeView
    from relconsole.engine.oracle.hashcache import CommitFiles
    from relconsole.engine.repo.workspace import scratch_dir

    git_dir = review.repo.git_dir
    scratch = scratch_dir("relconsole-rehash-")
    try:
        TreeView(review.repo, commit).export(scratch, [relative])
        files = CommitFiles(review.root, git_dir, commit, HashCache.for_git_dir(git_dir))
        return files.sha256(scratch / relative, relative)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _working_copy(root: Path, relative: str, committed: str, branch: str,
                  cache: HashCache) -> tuple[str | None, dt.datetime | None, str | None, str]:
    """(file, mtime, problem, note) of the corpus's working tree copy, hashed through the
    stat ``cache`` (size, mtime, ctime, inode, device).

    No copy: Nones. A copy holding the committed bytes: its path and mtime. A copy with
    uncommitted changes (modified, staged, untracked or ignored, as ``git status`` says)
    that differs from the committed corpus: ``problem``, since a re-hash pins only bytes in
    git. A clean copy that differs (the checked-out commit is not the oracle branch's):
    no mtime, and a ``note`` saying the digest is ``branch``'s, not that file's.
    """
    path, problem = corpus_file(root, relative)
    if path is None and problem == "missing":
        return None, None, None, ""
    if path is None:
        return None, None, (f"the working tree copy of {relative} cannot be read ({problem}); "
                            "a re-hash pins only committed bytes"), ""
    try:
        mtime = dt.datetime.fromtimestamp(path.stat().st_mtime).astimezone()
        actual = cache.file_sha256(path, key=relative)
    except OSError as exc:
        return str(path), None, f"the working tree copy of {relative} cannot be read ({exc.strerror or exc})", ""
    if actual == committed:
        return str(path), mtime, None, ""
    status = _git_bytes(root, "--literal-pathspecs", "status", "--porcelain", "-z", "--ignored=matching",
                        "--untracked-files=all", "--", relative)
    if status is None or status.strip(b"\0"):
        return str(path), mtime, (
            f"the working tree copy of {relative} has uncommitted changes and differs from the corpus "
            f"committed on {branch} ({actual[:12]}… != {committed[:12]}…): commit the corpus to {branch} "
            "first; a re-hash pins only bytes committed on the oracle branch"), ""
    return None, None, None, (f"the checked-out tree holds other committed bytes for {relative} "
                              f"({actual[:12]}…); the new digest is of {branch}'s corpus, not that file")


def _last_change(root: Path, commit: str, relative: str) -> CorpusCommit | None:
    """The newest commit of ``commit``'s first-parent history that changed ``relative``."""
    out = _git_bytes(root, "--literal-pathspecs", "log", "-1", "--first-parent", "-m",
                     "--format=%H%x00%an%x00%ae%x00%cI", commit, "--", relative)
    parts = (out or b"").decode("utf-8", "replace").strip().split("\0")
    if len(parts) != 4:
        return None
    return CorpusCommit(parts[0], parts[1], parts[2], dt.datetime.fromisoformat(parts[3]))
