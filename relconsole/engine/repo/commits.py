"""Console commits onto the oracle branch (SPEC §9).

A console commit is built from the target branch's tip plus the console's own changed
paths on a temporary index (``GIT_INDEX_FILE``), written with ``commit-tree`` and moved
in with a compare-and-swap ``update-ref``. The user's index is never used to build it,
so their staged and unstaged work stays exactly as it was. Only when the target branch
is checked out (in this or a linked worktree) are the changed paths, and only those,
brought up to date in that worktree's index and files afterwards.

Such a worktree's index is locked first (git's own protocol: ``index.lock`` created
exclusively, the new index renamed over ``index``), so a stale lock or a running git refuses
the commit before the branch moves; the new index and the files' checkout bytes are made
before the ref moves too, and a failure after it moved is undone (the ref moved back, the
files as they were, the index untouched), so branch, index and work tree always agree.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import stat
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import git

from relconsole.engine.atomicfile import write_atomic
from relconsole.engine.repo.config import Layout
from relconsole.engine.errors import CommitRefused, GitError, UsageError
from relconsole.engine.repo.gitio import clean_env
from relconsole.engine.literal import literal

KINDS = {"catalog": "catalog:", "freeze": "freeze:", "lease": "lease:", "quarantine": "quarantine:",
         "review": "review:", "init": "oracle: init"}

_REGULAR_MODES = ("100644", "100755")


@dataclass(frozen=True)
class FileChange:
    """One repository-relative POSIX path the console changes: new bytes, or None to delete."""

    path: str
    content: bytes | None


@dataclass(frozen=True)
class CommitResult:
    """A commit that landed: ``sha`` on ``branch``, of ``kind``, with exactly ``paths`` changed."""

    sha: str
    branch: str
    kind: str
    message: str
    paths: tuple[str, ...]


@dataclass(frozen=True)
class _Entry:
    mode: str
    sha: str


# ---------------------------------------------------------------------------- kind rules

def check_kind(kind: str, changes: Sequence[FileChange], layout: Layout,
               read_old: Callable[[str], bytes | None]) -> None:
    """Refuse ``changes`` that a commit of ``kind`` may not contain (SPEC §9 table).

    ``read_old(path)`` gives the path's bytes on the target branch tip (None: absent); it
    decides whether a quarantine file was removed or shrunk (lines dropped, none added or
    edited) or drafted (created, or lines appended). Raises UsageError for an unknown kind and CommitRefused naming the first
    offending path, or when ``changes`` is empty.
    """
    if kind not in KINDS:
        raise UsageError(f"unknown commit kind {kind!r} (one of {', '.join(KINDS)})")
    if not changes:
        raise CommitRefused(f"{kind}: nothing to commit")
    rule = {"catalog": _check_catalog, "freeze": _check_freeze, "lease": _check_lease,
            "quarantine": _check_quarantine, "review": _check_review, "init": _check_init}[kind]
    rule(changes, layout, read_old)


def _check_catalog(changes, layout, read_old) -> None:
    edits_catalog = False
    for change in changes:
        if change.path == layout.catalog or _is_seeds_file(change.path, layout):
            edits_catalog = True
        elif _under(change.path, layout.quarantine_dir):
            _require_removed_or_shrunk(change, read_old(change.path), "catalog")
        else:
            raise CommitRefused(
                f"catalog: commit may not contain {change.path} (only {layout.catalog}, "
                f"seeds under {layout.seeds_dir}/, and removals from {layout.quarantine_dir}/)")
    if not edits_catalog:
        raise CommitRefused(
            "catalog: commit changes neither the catalog nor a seeds file; "
            "removing quarantine files alone is a quarantine: commit")


def _check_freeze(changes, layout, read_old) -> None:
    for change in changes:
        if change.path != layout.freezes:
            raise CommitRefused(f"freeze: commit may contain only {layout.freezes}, not {change.path}")


def _check_init(changes, layout, read_old) -> None:
    if read_old(layout.catalog) is not None:
        raise CommitRefused(f"oracle: init: the branch already has {layout.catalog}")
    oracle = layout.catalog.split("/", 1)[0] + "/"
    for change in changes:
        if not (change.path.startswith(oracle) or change.path == "pyproject.toml"):
            raise CommitRefused(f"oracle: init may contain only the oracle and pyproject.toml, not {change.path}")


def _check_review(changes, layout, read_old) -> None:
    for change in changes:
        if change.path != layout.acks:
            raise CommitRefused(f"review: commit may contain only {layout.acks}, not {change.path}")


def _check_lease(changes, layout, read_old) -> None:
    for change in changes:
        if not (_under(change.path, layout.leases_dir) and change.path.endswith((".yaml", ".yml"))):
            raise CommitRefused(
                f"lease: commit may contain only a manifest under {layout.leases_dir}/, not {change.path}")
    if len(changes) != 1:
        names = ", ".join(c.path for c in changes)
        raise CommitRefused(f"lease: commit must change exactly one lease manifest, not {len(changes)} ({names})")


def _check_quarantine(changes, layout, read_old) -> None:
    """A quarantine: commit either removes or shrinks quarantine files (a reviewer deleted
    drafts) or adds them (``propose``: new files, or rows appended with every old byte
    kept), never both: a draft and a decision stay apart in the history."""
    for change in changes:
        if not _under(change.path, layout.quarantine_dir):
            raise CommitRefused(
                f"quarantine: commit may only add, remove or shrink files under "
                f"{layout.quarantine_dir}/, not change {change.path}")
    if all(_is_growth(read_old(c.path), c.content) for c in changes):
        return
    for change in changes:
        if _is_growth(read_old(change.path), change.content):
            raise CommitRefused(f"quarantine: {change.path} is drafted in a commit that also removes "
                                "drafts; a quarantine: commit either adds drafts or removes them")
        _require_removed_or_shrunk(change, read_old(change.path), "quarantine")


def _is_growth(old: bytes | None, new: bytes | None) -> bool:
    """True when ``new`` creates the file or keeps every byte of ``old`` and appends lines."""
    if new is None:
        return False
    if old is None:
        return bool(new)
    return len(new) > len(old) and new.startswith(old)


def _require_removed_or_shrunk(change: FileChange, old: bytes | None, kind: str) -> None:
    if old is None:
        raise CommitRefused(f"{kind}: {change.path} is not on the branch; there is nothing to remove")
    if change.content is None or _is_shrink(old, change.content):
        return
    raise CommitRefused(
        f"{kind}: {change.path} may only be removed or shrunk (lines dropped), not edited or grown")


def _is_shrink(old: bytes, new: bytes) -> bool:
    """True when ``new`` is ``old`` with one or more whole lines dropped."""
    old_lines, new_lines = _lines(old), _lines(new)
    if len(new_lines) >= len(old_lines):
        return False
    remaining = iter(old_lines)
    return all(any(line == candidate for candidate in remaining) for line in new_lines)


def _lines(data: bytes) -> list[bytes]:
    return re.findall(rb"[^\n]*\n|[^\n]+\Z", data)


def _under(path: str, directory: str) -> bool:
    return path.startswith(directory.rstrip("/") + "/")


def _is_seeds_file(path: str, layout: Layout) -> bool:
    return _under(path, layout.seeds_dir) and path.endswith(".jsonl")


# ---------------------------------------------------------------------------- committing

def commit_changes(repo: git.Repo, branch: str, kind: str, subject: str,
                   changes: list[FileChange], body: str = "", author: git.Actor | None = None,
                   *, layout: Layout | None = None) -> CommitResult:
    """Commit ``changes`` onto ``branch`` as one console commit of ``kind`` (SPEC §9).

    The message is ``"<kind>: <subject>"``, then a blank line and ``body`` when given,
    with every control character escaped (``literal``: the last line of defence; ordinary
    Unicode kept). The newlines of ``body`` are kept, so a builder passes each untrusted
    field through ``one_line`` (a drafted ``source`` with a newline would otherwise forge a
    ``Confirmed-by:`` trailer line; ``tests/test_hostile_text.py`` checks every builder).
    ``layout`` (default: SPEC §2 defaults) says where catalog, seeds, quarantine, freezes
    and leases live for the kind rules. Changes whose bytes already match the tip are
    dropped; ``CommitResult.paths`` lists what really changed.

    Raises UsageError (unknown kind, subject not one line), CommitRefused (a kind rule,
    nothing to commit, no git identity, a changed path with uncommitted work in a
    worktree that has ``branch`` checked out, ``branch`` missing or moved meanwhile) and
    GitError when such a worktree's index is locked (a running git, a stale ``index.lock``)
    or git fails otherwise. On any error the branch and every index and work tree are as
    they were: a failure after the ref moved is undone (GitError says so).
    """
    layout = layout or Layout()
    message = _message(kind, subject, body)
    _validate_paths(changes)
    tip = _branch_tip(repo, branch)
    checkouts = _lock_indexes(_worktrees_on(repo, branch))
    try:
        with tempfile.TemporaryDirectory(prefix="relconsole-index-", dir=repo.git_dir) as tmp:
            index_env = {"GIT_INDEX_FILE": os.path.join(tmp, "index")}
            _git(repo, "read-tree", tip, extra_env=index_env)
            old = _index_entries(repo, [c.path for c in changes], index_env)
            changes = [c for c in changes if not _is_noop(repo, c, old.get(c.path))]
            check_kind(kind, changes, layout, lambda path: _old_bytes(repo, old.get(path)))
            for checkout in checkouts:
                _refuse_dirty(checkout.path, changes, old)
            author, committer = _identities(repo, author)
            new_sha = _build_commit(repo, tip, changes, old, message, author, committer, index_env)
        for checkout in checkouts:
            _prepare_checkout(repo, checkout, changes, old)
        _swap_ref(repo, branch, new_sha, tip, message)
    except BaseException:
        _unlock_all(checkouts)
        raise
    _finish_or_undo(repo, branch, tip, new_sha, checkouts)
    return CommitResult(new_sha, branch, kind, message, tuple(c.path for c in changes))


def _message(kind: str, subject: str, body: str) -> str:
    if kind not in KINDS:
        raise UsageError(f"unknown commit kind {kind!r} (one of {', '.join(KINDS)})")
    if not subject.strip() or any(ch in subject for ch in "\r\n"):
        raise UsageError(f"a commit subject is one non-empty line, not {subject!r}")
    message = f"{KINDS[kind]} {literal(subject.strip())}"
    if body.strip():
        message += "\n\n" + literal(body.strip("\n"))
    return message


def _validate_paths(changes: Sequence[FileChange]) -> None:
    seen: set[str] = set()
    for change in changes:
        path = change.path
        parts = path.split("/")
        if (not path or path.startswith("/") or "\\" in path or "\0" in path
                or any(p in ("", ".", "..") or p.lower() == ".git" for p in parts)):
            raise CommitRefused(f"not a repository-relative path: {path!r}")
        if path in seen:
            raise CommitRefused(f"{path} is changed twice in one commit")
        seen.add(path)


def _branch_tip(repo: git.Repo, branch: str) -> str:
    proc = _run(repo, ["rev-parse", "--verify", "--quiet", f"refs/heads/{branch}^{{commit}}"], check=False)
    if proc.returncode != 0:
        raise CommitRefused(f"branch {branch!r} does not exist; console commits go onto an existing branch")
    return proc.stdout.decode().strip()


def _index_entries(repo: git.Repo, paths: list[str], index_env: dict[str, str]) -> dict[str, _Entry]:
    """The tip's entries for ``paths`` (read from the temporary index), refusing non-files."""
    raw = _git(repo, "ls-files", "-s", "-z", "--", *paths, extra_env=index_env)
    wanted = set(paths)
    entries: dict[str, _Entry] = {}
    for record in filter(None, raw.split(b"\0")):
        meta, _, name = record.partition(b"\t")
        path = name.decode("utf-8", "surrogateescape")
        mode, sha, _stage = meta.decode().split(" ")
        if path in wanted:
            if mode not in _REGULAR_MODES:
                raise CommitRefused(f"{path} is not a regular file on the branch (mode {mode}); not changing it")
            entries[path] = _Entry(mode, sha)
        else:
            parent = next((p for p in wanted if path.startswith(p + "/")), None)
            if parent is not None:
                raise CommitRefused(f"{parent} is a directory on the branch; not replacing it with a file")
    return entries


def _is_noop(repo: git.Repo, change: FileChange, entry: _Entry | None) -> bool:
    if change.content is None:
        return entry is None
    return entry is not None and _hash(repo, change.content, write=False) == entry.sha


def _old_bytes(repo: git.Repo, entry: _Entry | None) -> bytes | None:
    return None if entry is None else _git(repo, "cat-file", "blob", entry.sha)


def _hash(repo: git.Repo, content: bytes, write: bool) -> str:
    args = ["hash-object", "--stdin", "--no-filters"] + (["-w"] if write else [])
    return _git(repo, *args, input=content).decode().strip()


def _identities(repo: git.Repo, author: git.Actor | None) -> tuple[git.Actor, git.Actor]:
    committer = _ident(repo, "GIT_COMMITTER_IDENT")
    author = author or _ident(repo, "GIT_AUTHOR_IDENT")
    if author is None:
        raise CommitRefused(
            "no git identity to commit as: set it with git config user.name 'Your Name' "
            "and git config user.email you@example.com")
    return author, committer or author


def _ident(repo: git.Repo, var: str) -> git.Actor | None:
    # useConfigOnly: a guessed identity (root@host) must not sign oracle history (§4 owners).
    proc = _run(repo, ["-c", "user.useConfigOnly=true", "var", var], check=False)
    match = re.match(r"^(.*) <(.*)> \d+ [+-]\d{4}$", proc.stdout.decode("utf-8", "replace").strip())
    if proc.returncode != 0 or not match or not match.group(1) or not match.group(2):
        return None
    return git.Actor(match.group(1), match.group(2))


def _build_commit(repo: git.Repo, tip: str, changes: Sequence[FileChange], old: dict[str, _Entry],
                  message: str, author: git.Actor, committer: git.Actor,
                  index_env: dict[str, str]) -> str:
    """Write the commit object (tip + changes) on the temporary index; moves no ref."""
    for change in changes:
        if change.content is None:
            _git(repo, "update-index", "--force-remove", "--", change.path, extra_env=index_env)
        else:
            mode = old[change.path].mode if change.path in old else "100644"
            sha = _hash(repo, change.content, write=True)
            _git(repo, "update-index", "--add", "--cacheinfo", f"{mode},{sha},{change.path}",
                 extra_env=index_env)
    tree = _git(repo, "write-tree", extra_env=index_env).decode().strip()
    if tree == _git(repo, "rev-parse", f"{tip}^{{tree}}").decode().strip():
        raise CommitRefused("nothing to commit: the branch already has these contents")
    people = {"GIT_AUTHOR_NAME": author.name, "GIT_AUTHOR_EMAIL": author.email,
              "GIT_COMMITTER_NAME": committer.name, "GIT_COMMITTER_EMAIL": committer.email}
    return _git(repo, "commit-tree", tree, "-p", tip, "-F", "-", input=(message + "\n").encode(),
                extra_env=people).decode().strip()


def _swap_ref(repo: git.Repo, branch: str, new: str, old: str, message: str) -> None:
    reflog = "relconsole: " + message.splitlines()[0]
    proc = _run(repo, ["update-ref", "-m", reflog, f"refs/heads/{branch}", new, old], check=False)
    if proc.returncode != 0:
        raise CommitRefused(
            f"{branch} moved while the commit was being built (expected {old[:12]}); "
            "nothing was committed: reload and try again")


# ---------------------------------------------------------------------------- worktrees

def _worktrees_on(repo: git.Repo, branch: str) -> list[Path]:
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


def _refuse_dirty(worktree: Path, changes: Sequence[FileChange], old: dict[str, _Entry]) -> None:
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
    raw = _run_in(worktree, ["ls-files", "-s", "-z", "--", *paths]).stdout
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
    return _run_in(worktree, ["hash-object", "--", path]).stdout.decode().strip()


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
    index = worktree / _run_in(worktree, ["rev-parse", "--git-path", "index"]).stdout.decode().strip()
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


def _lock_indexes(worktrees: Sequence[Path]) -> list[_Checkout]:
    """Lock every worktree's index, or none (GitError naming the lock that is taken)."""
    checkouts: list[_Checkout] = []
    try:
        for worktree in worktrees:
            checkouts.append(_lock_index(worktree))
    except BaseException:
        _unlock_all(checkouts)
        raise
    return checkouts


def _unlock_all(checkouts: Sequence[_Checkout]) -> None:
    for checkout in checkouts:
        checkout.scratch.unlink(missing_ok=True)
        if checkout.kept is not None:
            checkout.kept.unlink(missing_ok=True)
        if checkout.locked:
            checkout.lock.unlink(missing_ok=True)
            checkout.locked = False


def _prepare_checkout(repo: git.Repo, checkout: _Checkout, changes: Sequence[FileChange],
                      old: dict[str, _Entry]) -> None:
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
            _run_in(checkout.path, ["update-index", "--force-remove", "--", change.path], env)
            checkout.files[change.path] = None
            continue
        mode = old[change.path].mode if change.path in old else "100644"
        sha = _hash(repo, change.content, write=False)
        _run_in(checkout.path, ["update-index", "--add", "--cacheinfo", f"{mode},{sha},{change.path}"], env)
        data = _run_in(checkout.path, ["cat-file", "--filters", f"--path={change.path}", sha]).stdout
        checkout.files[change.path] = (data, mode == "100755", sha)


def _finish_or_undo(repo: git.Repo, branch: str, tip: str, new_sha: str, checkouts: list[_Checkout]) -> None:
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
        _unlock_all(checkouts)


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
        _run_in(checkout.path, ["update-index", "--", *clean], env)


def _install_index(checkout: _Checkout) -> None:
    """Rename the new index in as git does (into the lock, the lock over the index), keeping
    a hard link to the old one until the commit is through."""
    if checkout.index.exists():
        kept = checkout.index.with_name(f"index.relconsole-kept-{secrets.token_hex(4)}")
        try:
            os.link(checkout.index, kept)
        except OSError:
            shutil.copy2(checkout.index, kept)  # the index's mtime kept (see _prepare_checkout)
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


# ---------------------------------------------------------------------------- running git

def _run(repo: git.Repo, args: list[str], input: bytes | None = None,
         extra_env: dict[str, str] | None = None, check: bool = True) -> subprocess.CompletedProcess:
    """Run git against ``repo``'s git directory (objects and refs; no work tree)."""
    env = clean_env({"GIT_LITERAL_PATHSPECS": "1", **(extra_env or {})})
    proc = subprocess.run(["git", f"--git-dir={repo.git_dir}", *args], cwd=repo.git_dir, env=env,
                          input=input, capture_output=True, check=False)
    if check and proc.returncode != 0:
        raise GitError(f"git {args[0]} failed: {proc.stderr.decode('utf-8', 'replace').strip()}")
    return proc


def _git(repo: git.Repo, *args: str, input: bytes | None = None,
         extra_env: dict[str, str] | None = None) -> bytes:
    return _run(repo, list(args), input=input, extra_env=extra_env).stdout


def _run_in(worktree: Path, args: list[str], extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run git inside ``worktree``, so it uses that worktree's own index (or ``extra_env``'s
    ``GIT_INDEX_FILE``)."""
    env = clean_env({"GIT_LITERAL_PATHSPECS": "1", **(extra_env or {})})
    proc = subprocess.run(["git", *args], cwd=worktree, env=env, capture_output=True, check=False)
    if proc.returncode != 0:
        raise GitError(f"git {args[0]} in {worktree} failed: {proc.stderr.decode('utf-8', 'replace').strip()}")
    return proc
