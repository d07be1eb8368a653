"""A worktree that has a console commit's branch checked out, brought in step with it (SPEC §9).

Only the changed paths, and only when no staged or unstaged work of the user's is on them
(``refuse_dirty``). Such a worktree's index is locked first (git's own protocol:
``index.lock`` created exclusively, the new index renamed over ``index``), so a stale lock or
a running git refuses the commit before the branch moves; the new index and the files'
checkout bytes are made before the ref moves too, and a failure after it moved is undone
(the ref moved back, the files as they were, the index untouched), so branch, index and work
tree always agree. ``commits.commit_changes`` runs these steps around its compare-and-swap.
"""

from __future__ import annotations

import os
import secrets
import shutil
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import git

from relconsole.engine.atomicfile import write_atomic
from relconsole.engine.errors import CommitRefused, GitError
from relconsole.engine.repo.commitgit import IndexEntry, _git, _hash, _run, run_in
from relconsole.engine.repo.commitkinds import FileChange

def worktrees_on(repo: git.Repo, branch: str) -> list[Path]:
    """Work trees (this one and linked ones) that have ``branch`` checked out."""
    raw = _git(repo, "worktree", "list", "--porcelain", "-z")
    found: list[Path] = []
    for record in raw.split(b"\0\0"):
        fields = [f.decode("utf-8", "surrogateescape") for f in record.split(b"\0") if f]
        if not fields or not fields[0].startswith("worktree "):
            continue
        path = Path(fields[0][len("worktree "):])
        if f"branch refs/heads/{branch}" in fields and "bare" not in fields and path.is_dir():
            found.append(path)
    return found


def refuse_dirty(worktree: Path, changes: Sequence[FileChange], old: dict[str, IndexEntry]) -> None:
    """Refuse when a changed path has staged or unstaged work in ``worktree``."""
    paths = [c.path for c in changes]
    staged = _worktree_index(worktree, paths)
    for path in paths:
        entry = old.get(path)
        _refuse_symlinked_parent(worktree, path)
        if staged.get(path) != ([(entry.mode, entry.sha)] if entry else None):
            raise CommitRefused(
                f"{path} has staged changes in {worktree}; commit, stash or unstage them first")
        if _worktree_blob(worktree, path) != (entry.sha if entry else None):
            raise CommitRefused(
                f"{path} has uncommitted changes in {worktree}; commit, stash or discard them first")


def _worktree_index(worktree: Path, paths: list[str]) -> dict[str, list[tuple[str, str]]]:
    raw = run_in(worktree, ["ls-files", "-s", "-z", "--", *paths]).stdout
    wanted = set(paths)
    staged: dict[str, list[tuple[str, str]]] = {}
    for record in filter(None, raw.split(b"\0")):
        meta, _, name = record.partition(b"\t")
        path = name.decode("utf-8", "surrogateescape")
        mode, sha, stage = meta.decode().split(" ")
        if path in wanted:
            staged.setdefault(path, []).append((mode, sha) if stage == "0" else ("conflict", stage))
    return staged


def _worktree_blob(worktree: Path, path: str) -> str | None:
    """The blob sha git would record for the work-tree file (clean filters applied), or None."""
    full = worktree / path
    if not os.path.lexists(full):
        return None
    if full.is_symlink() or not full.is_file():
        return "not-a-file"
    return run_in(worktree, ["hash-object", "--", path]).stdout.decode().strip()


def _refuse_symlinked_parent(worktree: Path, path: str) -> None:
    parent = worktree
    for part in path.split("/")[:-1]:
        parent = parent / part
        if parent.is_symlink():
            raise CommitRefused(f"{parent} is a symbolic link in {worktree}; not writing through it")


@dataclass
class _Checkout:
    """A work tree with the target branch checked out, its index locked by relconsole.

    ``lock`` is git's ``index.lock``, created exclusively (``locked`` while it is still
    relconsole's); ``scratch`` (beside it) becomes the new index. ``files`` (path -> checkout
    bytes, executable bit and blob id; None: delete) are written only after the ref moved;
    ``previous`` holds what each was before (bytes and permission bits; None: absent) so a
    failure after that can put them back. ``kept``: a hard link to the index as it was, made
    just before the new one is renamed in.
    """

    path: Path
    index: Path
    lock: Path
    scratch: Path
    files: dict[str, tuple[bytes, bool, str] | None] = field(default_factory=dict)
    previous: dict[str, tuple[bytes, int] | None] = field(default_factory=dict)
    kept: Path | None = None
    locked: bool = True
    installed: bool = False


def _lock_index(worktree: Path) -> _Checkout:
    """Take ``worktree``'s index lock as git does (``index.lock``, O_EXCL).

    Raises GitError (abort, nothing committed) when it exists: a git process is running
    there, or one crashed and left it (the user removes it; relconsole never does).
    """
    index = worktree / run_in(worktree, ["rev-parse", "--git-path", "index"]).stdout.decode().strip()
    lock = index.with_name(index.name + ".lock")
    try:
        os.close(os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
    except FileExistsError:
        raise GitError(
            f"the index of {worktree} is locked ({lock} exists): another git process is running there, "
            "or one stopped and left the lock behind (remove the file if none is running); "
            "nothing was committed") from None
    except OSError as exc:
        raise GitError(f"cannot lock the index of {worktree} ({lock}): {exc.strerror}; nothing was committed") from None
    return _Checkout(worktree, index, lock, index.with_name(f"index.relconsole-{secrets.token_hex(4)}"))


def lock_indexes(worktrees: Sequence[Path]) -> list[_Checkout]:
    """Lock every worktree's index, or none (GitError naming the lock that is taken)."""
    checkouts: list[_Checkout] = []
    try:
        for worktree in worktrees:
            checkouts.append(_lock_index(worktree))
    except BaseException:
        unlock_all(checkouts)
        raise
    return checkouts


def unlock_all(checkouts: Sequence[_Checkout]) -> None:
    """Remove each checkout's scratch and kept index copies and release its index.lock (only a
    lock this process took)."""
    for checkout in checkouts:
        checkout.scratch.unlink(missing_ok=True)
        if checkout.kept is not None:
            checkout.kept.unlink(missing_ok=True)
        if checkout.locked:
            checkout.lock.unlink(missing_ok=True)
            checkout.locked = False


def prepare_checkout(repo: git.Repo, checkout: _Checkout, changes: Sequence[FileChange],
                      old: dict[str, IndexEntry]) -> None:
    """Before the ref moves: the worktree's new index (its index with exactly the changed
    paths at the new blobs) in ``scratch``, each file's checkout bytes (the worktree's
    smudge filters and eol rules applied) and each file's present bytes. Raises GitError."""
    if checkout.index.exists():
        # copy2 keeps the index's mtime: git judges an entry racily clean (and re-reads the
        # file) by comparing it with the index's own time, so a copy stamped "now" would make
        # a same-second unstaged edit look clean once the new index is in place.
        shutil.copy2(checkout.index, checkout.scratch)
    env = {"GIT_INDEX_FILE": str(checkout.scratch)}
    for change in changes:
        full = checkout.path / change.path
        checkout.previous[change.path] = (full.read_bytes(), stat.S_IMODE(full.stat().st_mode)) \
            if full.is_file() and not full.is_symlink() else None
        if change.content is None:
            run_in(checkout.path, ["update-index", "--force-remove", "--", change.path], env)
            checkout.files[change.path] = None
            continue
        mode = old[change.path].mode if change.path in old else "100644"
        sha = _hash(repo, change.content, write=False)
        run_in(checkout.path, ["update-index", "--add", "--cacheinfo", f"{mode},{sha},{change.path}"], env)
        data = run_in(checkout.path, ["cat-file", "--filters", f"--path={change.path}", sha]).stdout
        checkout.files[change.path] = (data, mode == "100755", sha)


def finish_or_undo(repo: git.Repo, branch: str, tip: str, new_sha: str, checkouts: list[_Checkout]) -> None:
    """After the ref moved to ``new_sha``: write each checkout's files, record their stat data
    in its new index and rename that index in. On any failure, undo: files back as they were,
    each index as it was, the ref back at ``tip``; then raise GitError saying so."""
    try:
        for checkout in checkouts:
            _write_files(checkout)
        for checkout in checkouts:
            _install_index(checkout)
    except BaseException as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else \
            (exc.one_line() if isinstance(exc, GitError) else type(exc).__name__)
        undone = _undo(repo, branch, tip, new_sha, checkouts)
        if not isinstance(exc, Exception):
            raise
        raise GitError(f"updating the checked-out {branch} failed after the commit ({why}); {undone}") from None
    finally:
        unlock_all(checkouts)


def _write_files(checkout: _Checkout) -> None:
    """Write (or remove) the changed files and record their stat data in the new index, but
    only where re-cleaning the written file gives back the committed blob (so plumbing,
    ``diff-files``, sees them clean as ``status`` does)."""
    env = {"GIT_INDEX_FILE": str(checkout.scratch)}
    for path, wanted in checkout.files.items():
        if wanted is None:
            _remove_file(checkout.path, path)
            continue
        write_atomic(checkout.path / path, wanted[0], executable=wanted[1])
    clean = [path for path, wanted in checkout.files.items()
             if wanted is not None and _worktree_blob(checkout.path, path) == wanted[2]]
    if clean:
        run_in(checkout.path, ["update-index", "--", *clean], env)


def _install_index(checkout: _Checkout) -> None:
    """Rename the new index in as git does (into the lock, the lock over the index), keeping
    a hard link to the old one until the commit is through."""
    if checkout.index.exists():
        kept = checkout.index.with_name(f"index.relconsole-kept-{secrets.token_hex(4)}")
        try:
            os.link(checkout.index, kept)
        except OSError:
            shutil.copy2(checkout.index, kept)  # the index's mtime kept (see prepare_checkout)
        checkout.kept = kept
    os.replace(checkout.scratch, checkout.lock)
    os.replace(checkout.lock, checkout.index)
    checkout.locked, checkout.installed = False, True


def _undo(repo: git.Repo, branch: str, tip: str, new_sha: str, checkouts: list[_Checkout]) -> str:
    """Put every checkout's files and index back and move ``branch`` back to ``tip``; returns
    what was done, for the error message. Never raises."""
    problems = []
    for checkout in checkouts:
        try:
            if checkout.installed:
                if checkout.kept is not None:
                    os.replace(checkout.kept, checkout.index)
                    checkout.kept = None
                else:
                    checkout.index.unlink(missing_ok=True)
            for path, before in checkout.previous.items():
                full = checkout.path / path
                if before is None:
                    _remove_file(checkout.path, path)
                elif not (full.is_file() and not full.is_symlink() and full.read_bytes() == before[0]):
                    write_atomic(full, before[0], executable=False)
                    os.chmod(full, before[1])
        except (OSError, GitError) as exc:
            problems.append(f"{checkout.path} could not be put back ({exc}): run git status there")
    moved_back = _run(repo, ["update-ref", "-m", "relconsole: undo an unfinished commit", f"refs/heads/{branch}",
                             tip, new_sha], check=False)
    if moved_back.returncode != 0:
        problems.append(f"{branch} could not be moved back to {tip[:12]} (it moved meanwhile)")
    if problems:
        return "; ".join(problems)
    return f"undone: {branch} is back at {tip[:12]} with its index and files as they were; nothing was committed"


def _remove_file(worktree: Path, path: str) -> None:
    full = worktree / path
    if os.path.lexists(full):
        full.unlink()
    parent = full.parent
    while parent != worktree:
        try:
            parent.rmdir()  # only when empty, as git leaves no empty directories behind
        except OSError:
            break
        parent = parent.parent
