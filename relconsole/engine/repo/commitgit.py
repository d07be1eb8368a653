"""The git plumbing console commits run (SPEC §9): git against the git directory (objects and
refs, no work tree) or inside one worktree (its own index, or a temporary one), with literal
pathspecs and the redirecting variables scrubbed; blob hashing without filters; and the
index entry (mode, blob id) both the commit and a checked-out worktree's update read.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

import git

from relconsole.engine.errors import GitError
from relconsole.engine.repo.gitio import clean_env


@dataclass(frozen=True)
class IndexEntry:
    """One index entry of a path: its file ``mode`` (``100644`` ...) and blob ``sha``."""
    mode: str
    sha: str


def _hash(repo: git.Repo, content: bytes, write: bool) -> str:
    args = ["hash-object", "--stdin", "--no-filters"] + (["-w"] if write else [])
    return _git(repo, *args, input=content).decode().strip()



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


def run_in(worktree: Path, args: list[str], extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run git inside ``worktree``, so it uses that worktree's own index (or ``extra_env``'s
    ``GIT_INDEX_FILE``)."""
    env = clean_env({"GIT_LITERAL_PATHSPECS": "1", **(extra_env or {})})
    proc = subprocess.run(["git", *args], cwd=worktree, env=env, capture_output=True, check=False)
    if proc.returncode != 0:
        raise GitError(f"git {args[0]} in {worktree} failed: {proc.stderr.decode('utf-8', 'replace').strip()}")
    return proc
