"""Re-hashing a drifted lease (SPEC §4): an explicit, confirmed action that shows old and new digests.

``rehash_preview`` reads everything afresh from the oracle branch tip: the manifest, and
the corpus as committed there (hashed as a review exports it), never the working tree's
bytes; it says who would confirm and why it may not go ahead. ``gate.actions.rehash_lease``
writes the ``lease:`` commit from it.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from pathlib import Path

from relconsole.engine.errors import BadInputError, CommitRefused
from relconsole.engine.oracle.hashcache import HashCache
from relconsole.engine.oracle.leases import (DRIFTED, INVALID, MISSING, OK, Lease, state_at_tip, corpus_file,
                                             identity_matches, parse_lease)

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
    from relconsole.engine.repo.gitio import resolve

    status = review.lease_to_change(lease_id)
    branch = review.commit_branch()
    tip = resolve(review.repo, branch)
    confirmer = _confirmer(review.root)
    name, email, _no_identity = confirmer
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
    state, reason = state_at_tip(lease, new, days_left, review.layout.expiring_window_days)
    refusal = _refusal(lease, lease_id, state, reason, branch, confirmer, copy_problem)
    return RehashPreview(**fields, **{**corpus, "new_sha256": new, "size_bytes": size, "mtime": mtime,
                                      "working_file": working, "blob": blob,
                                      "corpus_commit": _last_change(root, tip, lease.path)},
                         state=state, reason=reason, refusal=refusal, note=note)


def _confirmer(root) -> tuple[str, str, str | None]:
    """(user.name, user.email, None) of the git identity that would confirm in ``root``, or
    ("", "", why) when git has none."""
    from relconsole.engine.repo.identity import git_identity

    try:
        who = git_identity(root)
        return who.name, who.email, None
    except CommitRefused as exc:
        return "", "", exc.one_line()


def _refusal(lease: Lease, lease_id: str, state: str, reason: str, branch: str,
             confirmer: tuple[str, str, str | None], copy_problem: str | None) -> str | None:
    """Why ``confirmer`` (``_confirmer``) may not re-pin ``lease`` whose state at the tip of
    ``branch`` is ``state`` (§4: a drifted lease only, by an owner, with a working tree copy
    that holds the committed bytes), or None when it may."""
    name, email, no_identity = confirmer
    if state != DRIFTED:
        return (f"lease {lease_id} is {state} ({reason}): its corpus on {branch} matches the pinned "
                "digest, there is nothing to re-pin" + ("; renew it instead" if state != OK else ""))
    if no_identity:
        return no_identity
    if not identity_matches(lease.owners, name, email):
        return (f"lease {lease_id} belongs to {', '.join(lease.owners)}; you are "
                f"{name} <{email}>: only an owner may re-hash")
    return copy_problem or None


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
