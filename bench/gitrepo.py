"""Small git repositories for the tests and the benches: one ``git`` runner and one builder.

A *reviewed repository* (SPEC §2: the base on ``main``, the change under review on a branch)
is what most tests and the flights benchmark need: ``reviewed_repo`` writes the base files,
commits them on ``main``, then checks out branch ``patch`` and commits the changed files on it.
``committed_repo`` stops after the base commit (a repository with ``main`` only). Both set a
repository-local identity (``IDENTITY`` unless told otherwise) so commits never depend on the
user's git configuration.

This module uses the standard library only: the benches run from a clean clone with
``python -m bench.NAME`` (no pytest, no fixtures), and the tests import it from here.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

IDENTITY = ("t", "t@example.invalid")


def git(repo: Path, *args: str, check: bool = True) -> str:
    """Run git in ``repo`` and return stdout (text, stripped of nothing).

    Raises AssertionError with git's stderr when git exits non-zero and ``check`` is true."""
    proc = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=False)
    if check and proc.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {proc.stderr}")
    return proc.stdout


def git_bytes(repo: Path, *args: str) -> bytes:
    """stdout of git in ``repo`` as bytes; raises subprocess.CalledProcessError on failure."""
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, check=True).stdout


def hermetic_git(root: Path, *args: str, input: bytes | None = None, check: bool = True) -> bytes:
    """git in ``root`` with no inherited ``GIT_*`` variables, no global or system config and a
    fixed identity (``T <t@example.com>``, unsigned commits): what a hook's environment or a
    developer's config must not change. Returns stdout as bytes; raises AssertionError with
    git's stderr when it exits non-zero and ``check`` is true."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1")
    done = subprocess.run(["git", "-c", "user.name=T", "-c", "user.email=t@example.com",
                           "-c", "commit.gpgsign=false", *args],
                          cwd=root, env=env, input=input, capture_output=True, check=False)
    if check and done.returncode != 0:
        raise AssertionError(f"git {args}: {done.stderr.decode(errors='replace')}")
    return done.stdout


def write_files(root: Path, files: Mapping[str, str | bytes]) -> None:
    """Write each ``path -> text or bytes`` under ``root``, making parent directories."""
    for path, body in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(body, bytes):
            target.write_bytes(body)
        else:
            target.write_text(body)


def init_repo(root: Path, identity: tuple[str, str] | None = IDENTITY) -> Path:
    """A repository at ``root`` (created when missing) on branch ``main``, with ``identity``
    (name, email) as its local user unless None (then git's own configuration applies)."""
    git(root.parent, "init", "-q", "-b", "main", str(root))
    if identity is not None:
        git(root, "config", "user.name", identity[0])
        git(root, "config", "user.email", identity[1])
    return root


def commit_all(repo: Path, message: str) -> str:
    """Stage everything in the working tree of ``repo``, commit it with ``message`` and
    return the new commit's sha (40 hex digits)."""
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD").strip()


def committed_repo(repo: Path, files: Mapping[str, str | bytes], identity: tuple[str, str] | None = IDENTITY,
                   message: str = "base") -> Path:
    """A repository at ``repo`` whose ``main`` holds ``files`` (and whatever ``repo`` already
    held) in one commit ``message``; returns ``repo``."""
    write_files(repo, files)
    init_repo(repo, identity)
    commit_all(repo, message)
    return repo


def reviewed_repo(repo: Path, base: Mapping[str, str | bytes], patch: Mapping[str, str | bytes] | None = None,
                  identity: tuple[str, str] | None = IDENTITY) -> Path:
    """A git repository at ``repo``: ``base`` files committed on ``main``, then branch
    ``patch`` checked out with ``patch`` files committed on it (when given)."""
    committed_repo(repo, base, identity)
    git(repo, "checkout", "-q", "-b", "patch")
    if patch:
        write_files(repo, patch)
        commit_all(repo, "patch")
    return repo
