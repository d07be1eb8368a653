"""Clean git worktrees for replay (SPEC §7): pooled and reused, or fresh and removed.

A pooled worktree lives under ``<git common dir>/relconsole/worktrees/<workspace>/<side>``
and is moved between commits with ``git checkout --force --detach`` (which rewrites only
the files that differ) followed by ``git clean -ffdx`` (so no file of an earlier run
survives, ignored ones included). Writing a 100,000-file tree for every run would cost
seconds; moving a pooled one costs what the two commits differ by.

A worktree left registered by a killed run is reused after cleaning; a registration
whose directory is gone is pruned (``git worktree prune``); a directory that is no
longer a working worktree is removed and added again.
"""

from __future__ import annotations

import hashlib
import re
import shutil
from pathlib import Path

import git

from relconsole.engine.errors import GitError
from relconsole.engine.gitio import run_git


def slug(text: str) -> str:
    """A file name for an id: letters, digits and ``._-`` kept, others become ``_``."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", text)[:120] or "_"


def pool_name(workspace: str) -> str:
    """The pool directory of a workspace: its slug plus a digest of the exact id, so two
    ids with one slug (``a:b``, ``a_b``) never share worktrees."""
    return f"{slug(workspace)[:80]}-{hashlib.sha256(workspace.encode()).hexdigest()[:10]}"


class WorktreePool:
    """The worktrees of one workspace: one per side (``head``, ``base``).

    ``fresh=True`` adds a new worktree for every checkout and removes it on
    ``release``; otherwise worktrees stay registered and are cleaned for the next
    replay. Raises GitError when git refuses.
    """

    def __init__(self, repo: git.Repo, workspace: str, fresh: bool = False):
        self.repo_dir = Path(repo.working_tree_dir or repo.git_dir)
        self.root = Path(repo.common_dir).resolve() / "relconsole" / "worktrees" / pool_name(workspace)
        self.fresh = fresh
        self.used: dict[str, Path] = {}

    def checkout(self, side: str, commit: str) -> Path:
        """A clean worktree of ``commit`` for ``side``: every tracked file as committed,
        no untracked or ignored file. Returns its path."""
        path = self.root / side
        run_git(self.repo_dir, "worktree", "prune")
        if self.fresh and path.exists():
            self._remove(path)
        if self._usable(path):
            run_git(path, "checkout", "--quiet", "--force", "--detach", commit)
            run_git(path, "clean", "-ffdxq")
        else:
            if path.exists():
                shutil.rmtree(path)
                run_git(self.repo_dir, "worktree", "prune")
            path.parent.mkdir(parents=True, exist_ok=True)
            run_git(self.repo_dir, "worktree", "add", "--quiet", "--force", "--detach", str(path), commit)
        self.used[side] = path
        return path

    def _usable(self, path: Path) -> bool:
        """A registered worktree whose git link still works."""
        if not (path / ".git").is_file():
            return False
        proc = run_git(path, "rev-parse", "--git-common-dir", ok=None)
        if proc.returncode != 0:
            return False
        common = (path / proc.stdout.decode().strip()).resolve()
        return common == Path(self.repo_dir_common()).resolve()

    def repo_dir_common(self) -> str:
        return str(self.root.parents[2])

    def release(self) -> None:
        """Return every worktree used to the pool (reset and cleaned) or, when fresh, remove it.

        Never raises: a failure here leaves a worktree the next checkout cleans or prunes.
        """
        for path in self.used.values():
            try:
                if self.fresh:
                    self._remove(path)
                else:
                    run_git(path, "reset", "--quiet", "--hard")
                    run_git(path, "clean", "-ffdxq")
            except (GitError, OSError):
                pass
        self.used.clear()

    def _remove(self, path: Path) -> None:
        run_git(self.repo_dir, "worktree", "remove", "--force", "--force", str(path), ok=None)
        shutil.rmtree(path, ignore_errors=True)
        run_git(self.repo_dir, "worktree", "prune", ok=None)
