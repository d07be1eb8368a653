"""Clean git worktrees for replay (SPEC §7): pooled and reused, or fresh and removed.

A pooled worktree lives under ``<git common dir>/relconsole/worktrees/<workspace>/<side>``
and is moved between commits by setting its HEAD and index (``read-tree --reset``, which
writes no file and runs no filter), ``git clean -ffdx`` (so no file of an earlier run
survives, ignored ones included) and writing the commit's blobs byte for byte
(``blobwrite.write_blobs``), skipping every file whose blob id and on-disk stat (size, mtime,
ctime, inode) are what relconsole wrote last time. Writing a 100,000-file tree for every
run would cost seconds; moving a pooled one costs what changed. Every git call here runs
with relconsole's own settings (``OWN_CONFIG``): no hooks, no fsmonitor, no sparse
checkout, whatever the user's configuration says. When the repository reads per-worktree
configuration (``extensions.worktreeConfig``, which ``git sparse-checkout`` turns on, and
``git worktree add`` then copies the user's sparse settings into each new worktree), the
same settings are written into each worktree's own ``config.worktree`` too, so a git run
inside one by anyone else (a subject, a user looking) gets them as well.

A worktree left registered by a killed run is reused after cleaning; a registration
whose directory is gone is pruned (``git worktree prune``); a directory that is no
longer a working worktree is removed and added again.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path


from relconsole.engine.atomicfile import write_atomic
from relconsole.engine.errors import GitError
from relconsole.engine.repo.blobwrite import write_blobs
from relconsole.engine.repo.gitio import run_git

# (key, value) relconsole's worktrees run with; core.hooksPath is set to an empty directory
# of relconsole's (``no_hooks_dir``) where a worktree's own config holds it.
OWN_SETTINGS = (("core.fsmonitor", "false"), ("core.sparseCheckout", "false"), ("core.sparseCheckoutCone", "false"),
                ("core.untrackedCache", "false"), ("core.autocrlf", "false"), ("core.eol", "lf"))
OWN_CONFIG = ("-c", "core.hooksPath=/dev/null", *(arg for key, value in OWN_SETTINGS for arg in ("-c", f"{key}={value}")))


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

    def __init__(self, repo, workspace: str, fresh: bool = False):
        self._repo = repo
        self.repo_dir = Path(repo.working_tree_dir or repo.git_dir)
        self.root = Path(repo.common_dir).resolve() / "relconsole" / "worktrees" / pool_name(workspace)
        self.fresh = fresh
        self.used: dict[str, Path] = {}

    def checkout(self, side: str, commit: str) -> Path:
        """A clean worktree of ``commit`` for ``side``: every tracked file as committed (the
        blob bytes, never through the tree's ``.gitattributes``, filters, the user's
        ``core.autocrlf``, hooks or fsmonitor: SPEC §7), no untracked or ignored file. A
        pooled worktree rewrites only the files whose blob or on-disk state changed since
        relconsole last wrote them. Returns its path."""
        path = self.root / side
        run_git(self.repo_dir, "worktree", "prune")
        if self.fresh and path.exists():
            self._remove(path)
        if not self._usable(path):
            if path.exists():
                shutil.rmtree(path)
                run_git(self.repo_dir, "worktree", "prune")
            path.parent.mkdir(parents=True, exist_ok=True)
            self._stat_file(side).unlink(missing_ok=True)
            run_git(self.repo_dir, *OWN_CONFIG, "worktree", "add", "--quiet", "--force", "--detach",
                    "--no-checkout", str(path), commit)
        self._own_settings(path)
        run_git(path, *OWN_CONFIG, "update-ref", "--no-deref", "HEAD", commit)
        run_git(path, *OWN_CONFIG, "read-tree", "--reset", commit)  # the index only: nothing runs
        run_git(path, *OWN_CONFIG, "clean", "-ffdxq")
        known = self._read_stats(side)
        self._write_stats(side, write_blobs(self._repo, commit, path, unchanged=known))
        self.used[side] = path
        return path

    def _own_settings(self, path: Path) -> None:
        """Write OWN_SETTINGS and an empty hooks directory into the worktree's own config
        when the repository reads one (``extensions.worktreeConfig``), and drop sparse
        patterns ``git worktree add`` copied from the user's worktree. Without the extension
        there is no per-worktree config to write (turning it on would change the user's
        repository format), and every git call relconsole makes there carries OWN_CONFIG."""
        if run_git(path, *OWN_CONFIG, "config", "--bool", "extensions.worktreeConfig", ok=(0, 1)).stdout.strip() != b"true":
            return
        hooks = self.root.parent / "no-hooks"
        hooks.mkdir(parents=True, exist_ok=True)
        for key, value in (*OWN_SETTINGS, ("core.hooksPath", str(hooks))):
            run_git(path, *OWN_CONFIG, "config", "--worktree", key, value)
        sparse = run_git(path, *OWN_CONFIG, "rev-parse", "--git-path", "info/sparse-checkout").stdout.decode().strip()
        (path / sparse).unlink(missing_ok=True)

    def _stat_file(self, side: str) -> Path:
        return self.root / f"{side}.written.json"

    def _read_stats(self, side: str) -> dict:
        try:
            data = json.loads(self._stat_file(side).read_text())
        except (OSError, ValueError):
            return {}
        return {k: tuple(v) for k, v in data.items()} if isinstance(data, dict) else {}

    def _write_stats(self, side: str, stats: dict) -> None:
        write_atomic(self._stat_file(side), json.dumps(stats), durable=False)  # two pools share no temp name

    def _usable(self, path: Path) -> bool:
        """A registered worktree whose git link still works."""
        if not (path / ".git").is_file():
            return False
        proc = run_git(path, *OWN_CONFIG, "rev-parse", "--git-common-dir", ok=None)
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
                    run_git(path, *OWN_CONFIG, "clean", "-ffdxq")
            except (GitError, OSError):
                pass
        self.used.clear()

    def _remove(self, path: Path) -> None:
        run_git(self.repo_dir, "worktree", "remove", "--force", "--force", str(path), ok=None)
        shutil.rmtree(path, ignore_errors=True)
        run_git(self.repo_dir, "worktree", "prune", ok=None)
