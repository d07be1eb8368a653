"""A lease's history on the oracle branch, read from git (SPEC §4 renewal, §9 lease commits).

Each event is one commit of the oracle branch's first-parent history that changed the
manifest (renames followed). What changed is read by parsing the manifest as it was in
the commit and in its first parent, never from the commit message (anyone can write
one): a hand edit that moved ``expires`` shows as ``renewed``, with who made it. One
``git log`` lists the commits and one ``git cat-file --batch`` process reads the blobs;
each distinct blob is parsed once.

Kinds: ``created`` (the manifest appears), ``renewed`` (``expires`` moved later, same
digest), ``rehashed`` (``sha256`` changed), ``removed`` (the manifest is gone) and
``edited`` (anything else: other fields, comments, an earlier expiry, a rename, or a
manifest that did not parse on either side, which is never an error here).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import TYPE_CHECKING

from relconsole.engine.errors import BadInputError
from relconsole.engine.repo.gitio import resolve, run_git
from relconsole.engine.oracle.leases import Lease, parse_lease
from relconsole.engine.gate.blobreader import BlobReader

if TYPE_CHECKING:
    from pathlib import Path

    from relconsole.engine.gate.review import Review

CREATED, RENEWED, REHASHED, EDITED, REMOVED = "created", "renewed", "rehashed", "edited", "removed"
_HEADER_FIELDS = 6  # sha, parents, author name, author email, committer date, subject
_FORMAT = "%x1e%H%x00%P%x00%an%x00%ae%x00%cI%x00%s"


@dataclass(frozen=True)
class LeaseEvent:
    """One commit that changed a lease manifest on the oracle branch.

    ``committed`` is the committer date, timezone-aware. ``path`` is the manifest's
    path in the commit (its old path for ``removed``); ``old_path`` the path in the first
    parent when the commit renamed it, else None. ``expires_*`` and ``sha256_*`` are
    the parsed values on each side (None where the manifest was absent or did not
    parse). ``changed`` names the top-level keys whose values differ (both sides
    parsed). ``note`` says what the kind alone does not (a parse failure, a rename, a
    merge, an expiry moved earlier); "" when there is nothing to add. ``subject`` is the
    commit's subject line, shown as the author wrote it and never used to classify.
    """

    sha: str
    parent: str | None
    author_name: str
    author_email: str
    committed: dt.datetime
    kind: str
    path: str
    old_path: str | None
    expires_before: dt.date | None
    expires_after: dt.date | None
    sha256_before: str | None
    sha256_after: str | None
    changed: tuple[str, ...] = ()
    note: str = ""
    subject: str = ""
    merge: bool = False

    @property
    def who(self) -> str:
        """The author as ``Name <email>`` (either part alone when the other is empty)."""
        if self.author_name and self.author_email:
            return f"{self.author_name} <{self.author_email}>"
        return self.author_name or self.author_email

    def as_dict(self) -> dict:
        """A JSON-ready dict: dates and datetimes as ISO 8601 strings."""
        iso = lambda value: value.isoformat() if value is not None else None  # noqa: E731
        return {"sha": self.sha, "parent": self.parent, "author_name": self.author_name,
                "author_email": self.author_email, "committed": self.committed.isoformat(),
                "kind": self.kind, "path": self.path, "old_path": self.old_path,
                "expires_before": iso(self.expires_before), "expires_after": iso(self.expires_after),
                "sha256_before": self.sha256_before, "sha256_after": self.sha256_after,
                "changed": list(self.changed), "note": self.note, "subject": self.subject,
                "merge": self.merge}


@dataclass(frozen=True)
class _Side:
    """The manifest on one side of a commit: absent, parsed, or not parsed (``error``)."""

    present: bool
    lease: Lease | None = None
    error: str = ""


@dataclass(frozen=True)
class _Commit:
    sha: str
    parents: tuple[str, ...]
    author_name: str
    author_email: str
    committed: dt.datetime
    subject: str
    status: str  # git's letter: A, M, D, R, C, T ("" when git listed no change)
    old_path: str
    new_path: str


def renewal_history(repo: str | Path, branch_or_sha: str, manifest_path: str) -> list[LeaseEvent]:
    """Events of ``manifest_path`` on ``branch_or_sha``'s first-parent history, newest first.

    ``repo`` is a directory inside the repository. Renames are followed (``git log
    --follow``); a merge that changed the manifest is one event, compared with its first
    parent (what the branch had before). A path that never held a manifest gives [].
    Raises GitError (exit 3) for an unknown ref. A manifest that does not parse in some
    commit never raises: that event is ``edited`` with the parse error in its note.
    """
    commits = _log(repo, branch_or_sha, manifest_path)
    reader = BlobReader(repo)
    parsed: dict[tuple[bytes, str], _Side] = {}
    try:
        return [_event(commit, _side(reader, parsed, commit.sha if commit.status != "D" else None,
                                     commit.new_path),
                       _side(reader, parsed, commit.parents[0] if commit.parents and commit.status != "A"
                             else None, commit.old_path))
                for commit in commits]
    finally:
        reader.close()


def lease_history(review: Review, lease_id: str) -> list[LeaseEvent]:
    """``renewal_history`` of a review's lease on its oracle branch (§9: where lease commits land).

    ``lease_id`` is a lease id, or for a manifest that did not parse its file stem (as the
    review lists it). Raises UsageError (exit 64) when the review has no such lease and
    GitError when the oracle branch does not exist.
    """
    status = review.lease_to_change(lease_id)
    tip = resolve(review.repo, review.oracle_branch)
    return renewal_history(review.root, tip, status.source)


def _log(repo: str | Path, ref: str, path: str) -> list[_Commit]:
    """The commits of ``git log --follow --first-parent`` on ``path``, with each one's change."""
    out = run_git(repo, "--literal-pathspecs", "log", "--follow", "--first-parent", "-m", "-M",
                  "--name-status", "-z", f"--format={_FORMAT}", ref, "--", path).stdout
    tokens = out.decode("utf-8", "surrogateescape").split("\0")
    commits: list[_Commit] = []
    i = 0
    while i + _HEADER_FIELDS <= len(tokens) and tokens[i].startswith("\x1e"):
        sha, parents, name, email, date, subject = tokens[i:i + _HEADER_FIELDS]
        i += _HEADER_FIELDS
        tracked = commits[-1].old_path if commits else path
        entries: list[tuple[str, str, str]] = []  # (status letter, old path, new path)
        while i < len(tokens) and tokens[i].strip("\n") and not tokens[i].startswith("\x1e"):
            letter = tokens[i].strip("\n")[0]
            width = 2 if letter in "RC" else 1
            paths = tokens[i + 1:i + 1 + width]
            entries.append((letter, paths[0], paths[-1]))
            i += 1 + width
        status, old, new = next((e for e in entries if e[2] == tracked), entries[0] if entries else
                                ("", tracked, tracked))
        commits.append(_Commit(sha.lstrip("\x1e"), tuple(parents.split()), name, email,
                               dt.datetime.fromisoformat(date), subject, status, old, new))
    return commits


def _side(reader: BlobReader, cache: dict[tuple[bytes, str], _Side], rev: str | None, path: str) -> _Side:
    """The manifest at ``rev:path``, parsed (each distinct content once per path)."""
    data = reader.read(rev, path)
    if data is None:
        return _Side(False)
    key = (data, path)
    if key not in cache:
        try:
            cache[key] = _Side(True, parse_lease(data.decode("utf-8", "replace"), path))
        except BadInputError as exc:
            cache[key] = _Side(True, None, exc.one_line())
    return cache[key]


def _event(commit: _Commit, after: _Side, before: _Side) -> LeaseEvent:
    kind, notes, changed = _classify(before, after)
    renamed = commit.status == "R" and commit.old_path != commit.new_path
    if renamed:
        notes.append(f"renamed from {commit.old_path}")
    if len(commit.parents) > 1:
        notes.append(f"a merge of {commit.parents[1][:12]}: compared with the branch before it "
                     "(the change was made on the merged branch)")
    old, new = before.lease, after.lease
    return LeaseEvent(
        sha=commit.sha, parent=commit.parents[0] if commit.parents else None,
        author_name=commit.author_name, author_email=commit.author_email, committed=commit.committed,
        kind=kind, path=commit.new_path, old_path=commit.old_path if renamed else None,
        expires_before=old.expires if old else None, expires_after=new.expires if new else None,
        sha256_before=old.sha256 if old else None, sha256_after=new.sha256 if new else None,
        changed=changed, note="; ".join(notes), subject=commit.subject, merge=len(commit.parents) > 1)


def _classify(before: _Side, after: _Side) -> tuple[str, list[str], tuple[str, ...]]:
    """(kind, notes, changed keys) of one change of the manifest."""
    if not after.present:
        return REMOVED, [], ()
    if after.error:
        return EDITED, [f"the manifest did not parse after this commit: {after.error}"], ()
    if not before.present:
        return CREATED, [], ()
    if before.error:
        return EDITED, [f"the manifest did not parse before this commit ({before.error}); "
                        "what it held then is unknown"], ()
    old, new = before.lease, after.lease
    changed = tuple(sorted(k for k in set(old.raw) | set(new.raw) if old.raw.get(k) != new.raw.get(k)))
    others = [k for k in changed if k not in ("sha256", "expires")]
    notes = [f"also changed {', '.join(others)}"] if others else []
    if old.sha256 != new.sha256:
        if old.expires != new.expires:
            notes.insert(0, "expiry moved too")
        return REHASHED, notes, changed
    if new.expires > old.expires:
        return RENEWED, notes, changed
    if new.expires < old.expires:
        return EDITED, ["expiry moved earlier"] + notes, changed
    if not changed:
        notes.append("no field changed (comments or layout only)")
    return EDITED, notes, changed
