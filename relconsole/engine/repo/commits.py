"""Console commits onto the oracle branch (SPEC §9).

A console commit is built from the target branch's tip plus the console's own changed
paths on a temporary index (``GIT_INDEX_FILE``), written with ``commit-tree`` and moved
in with a compare-and-swap ``update-ref``. The user's index is never used to build it,
so their staged and unstaged work stays exactly as it was. Only when the target branch
is checked out (in this or a linked worktree) are the changed paths, and only those,
brought up to date in that worktree's index and files afterwards (``checkoutsync``).

Which changes each kind of commit may hold is ``commitkinds``; the git runners and the
index entry both sides read are ``commitgit``.
"""

from __future__ import annotations

import os
import re
import tempfile
from dataclasses import dataclass
from typing import Sequence

import git

from relconsole.engine.repo.checkoutsync import (finish_or_undo, lock_indexes, prepare_checkout, refuse_dirty,
                                                 unlock_all, worktrees_on)
from relconsole.engine.repo.commitgit import IndexEntry, _git, _hash, _run
from relconsole.engine.repo.commitkinds import KINDS, FileChange, check_kind
from relconsole.engine.repo.config import Layout
from relconsole.engine.errors import CommitRefused, UsageError
from relconsole.engine.literal import literal

_REGULAR_MODES = ("100644", "100755")


@dataclass(frozen=True)
class CommitResult:
    """A commit that landed: ``sha`` on ``branch``, of ``kind``, with exactly ``paths`` changed."""

    sha: str
    branch: str
    kind: str
    message: str
    paths: tuple[str, ...]


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
    checkouts = lock_indexes(worktrees_on(repo, branch))
    try:
        with tempfile.TemporaryDirectory(prefix="relconsole-index-", dir=repo.git_dir) as tmp:
            index_env = {"GIT_INDEX_FILE": os.path.join(tmp, "index")}
            _git(repo, "read-tree", tip, extra_env=index_env)
            old = _index_entries(repo, [c.path for c in changes], index_env)
            changes = [c for c in changes if not _is_noop(repo, c, old.get(c.path))]
            check_kind(kind, changes, layout, lambda path: _old_bytes(repo, old.get(path)))
            for checkout in checkouts:
                refuse_dirty(checkout.path, changes, old)
            author, committer = _identities(repo, author)
            new_sha = _build_commit(repo, tip, changes, old, message, author, committer, index_env)
        for checkout in checkouts:
            prepare_checkout(repo, checkout, changes, old)
        _swap_ref(repo, branch, new_sha, tip, message)
    except BaseException:
        unlock_all(checkouts)
        raise
    finish_or_undo(repo, branch, tip, new_sha, checkouts)
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


def _index_entries(repo: git.Repo, paths: list[str], index_env: dict[str, str]) -> dict[str, IndexEntry]:
    """The tip's entries for ``paths`` (read from the temporary index), refusing non-files."""
    raw = _git(repo, "ls-files", "-s", "-z", "--", *paths, extra_env=index_env)
    wanted = set(paths)
    entries: dict[str, IndexEntry] = {}
    for record in filter(None, raw.split(b"\0")):
        meta, _, name = record.partition(b"\t")
        path = name.decode("utf-8", "surrogateescape")
        mode, sha, _stage = meta.decode().split(" ")
        if path in wanted:
            if mode not in _REGULAR_MODES:
                raise CommitRefused(f"{path} is not a regular file on the branch (mode {mode}); not changing it")
            entries[path] = IndexEntry(mode, sha)
        else:
            parent = next((p for p in wanted if path.startswith(p + "/")), None)
            if parent is not None:
                raise CommitRefused(f"{parent} is a directory on the branch; not replacing it with a file")
    return entries


def _is_noop(repo: git.Repo, change: FileChange, entry: IndexEntry | None) -> bool:
    if change.content is None:
        return entry is None
    return entry is not None and _hash(repo, change.content, write=False) == entry.sha


def _old_bytes(repo: git.Repo, entry: IndexEntry | None) -> bytes | None:
    return None if entry is None else _git(repo, "cat-file", "blob", entry.sha)



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


def _build_commit(repo: git.Repo, tip: str, changes: Sequence[FileChange], old: dict[str, IndexEntry],
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
