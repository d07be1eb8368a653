"""The split check (SPEC §9): no commit mixes a protected path with anything else, nor two kinds.

``check_split(repo, "BASE..HEAD")`` reads every commit of the range from one
``git log -z --name-status -M --cc`` call (merges: only the paths whose merged result
differs from every parent, so a clean merge of checked commits adds nothing) and
returns one ``Offence`` per offending commit and path. Renames count both paths: a
rename out of the protected tree touches it. Kinds follow the commit table of §9:
catalog (the catalog and seeds files), freeze (the freeze file), lease (one lease
manifest), quarantine (quarantine files, allowed beside a catalog change).
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from relconsole.engine.config import Layout, layout_from_pyproject
from relconsole.engine.errors import BadInputError, GitError, UsageError
from relconsole.engine.gitio import clean_env
from relconsole.engine.owners import protected


@dataclass(frozen=True)
class Offence:
    """One offending path of one commit: ``commit`` (full sha), ``path``, ``why``."""

    commit: str
    path: str
    why: str


@dataclass(frozen=True)
class Commit:
    """A commit of the range and the paths it changes (renames give both)."""

    sha: str
    parents: tuple[str, ...]
    paths: tuple[str, ...]


def range_commits(repo_dir: str | Path, spec: str) -> list[Commit]:
    """The commits of ``spec`` (``BASE..HEAD``), oldest first. Raises UsageError for a
    spec that is not a range and GitError (abort) for refs git does not know."""
    if ".." not in spec or spec.startswith("-"):
        raise UsageError(f"{spec!r} is not a range: give BASE..HEAD")
    proc = subprocess.run(["git", "log", "--reverse", "-z", "--format=%x01%H %P", "--name-status", "-M",
                           "--cc", spec, "--"], cwd=repo_dir, env=clean_env(), capture_output=True)
    if proc.returncode != 0:
        message = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise GitError(f"git log {spec}: {message[0] if message else 'failed'}")
    return [_parse(chunk) for chunk in proc.stdout.split(b"\x01") if chunk.strip(b"\0\n")]


def _parse(chunk: bytes) -> Commit:
    header, _, rest = chunk.partition(b"\0")
    sha, *parents = header.decode().split()
    tokens = [t for t in rest.lstrip(b"\n").split(b"\0") if t]
    paths, index = [], 0
    while index < len(tokens):
        status = tokens[index].decode("ascii", "replace")
        count = 2 if status[:1] in ("R", "C") and len(status) > 1 and status[1:].isdigit() else 1
        paths += [t.decode("utf-8", "surrogateescape") for t in tokens[index + 1:index + 1 + count]]
        index += 1 + count
    return Commit(sha, tuple(parents), tuple(dict.fromkeys(paths)))


def kind_of(path: str, layout: Layout) -> str | None:
    """The §9 commit kind a protected path belongs to, or None (another oracle file)."""
    if path == layout.catalog or (path.startswith(layout.seeds_dir.rstrip("/") + "/")):
        return "catalog"
    if path == layout.freezes:
        return "freeze"
    if path.startswith(layout.leases_dir.rstrip("/") + "/"):
        return "lease"
    if path.startswith(layout.quarantine_dir.rstrip("/") + "/"):
        return "quarantine"
    return None


def offences(commit: Commit, layout: Layout) -> list[Offence]:
    """What is wrong with one commit (§9): protected mixed with other paths, two kinds, two leases."""
    guarded = [p for p in commit.paths if protected(layout.protected, p)]
    others = [p for p in commit.paths if p not in guarded]
    if guarded and others:
        return [Offence(commit.sha, p, f"mixes the protected path {guarded[0]} with a path outside it")
                for p in others]
    kinds: dict[str, list[str]] = {}
    for path in guarded:
        kind = kind_of(path, layout)
        if kind is not None:
            kinds.setdefault(kind, []).append(path)
    named = sorted(set(kinds) - ({"quarantine"} if "catalog" in kinds else set()))
    found = []
    if len(named) > 1:
        found += [Offence(commit.sha, p, f"mixes commit kinds {' and '.join(named)}")
                  for kind in named for p in kinds[kind]]
    if len(kinds.get("lease", [])) > 1:
        found += [Offence(commit.sha, p, "a lease: commit changes one lease manifest only")
                  for p in kinds["lease"]]
    return found


def check_split(repo_dir: str | Path, spec: str, layout: Layout | None = None) -> list[Offence]:
    """Every offence in ``spec``, oldest commit first. ``layout`` defaults to the one in the
    range end's ``pyproject.toml`` ([tool.relconsole]). Raises UsageError, GitError,
    BadInputError (a malformed pyproject)."""
    if layout is None:
        layout = _layout_at(repo_dir, spec.split("..")[-1].lstrip(".") or "HEAD")
    return [o for commit in range_commits(repo_dir, spec) for o in offences(commit, layout)]


def _layout_at(repo_dir: str | Path, ref: str) -> Layout:
    proc = subprocess.run(["git", "show", f"{ref}:pyproject.toml"], cwd=repo_dir, env=clean_env(),
                          capture_output=True)
    if proc.returncode != 0:
        return Layout()
    try:
        return layout_from_pyproject(proc.stdout.decode("utf-8"))
    except UnicodeDecodeError:
        raise BadInputError("pyproject.toml", f"not UTF-8 text (in {ref})") from None


def staged_commit(repo_dir: str | Path) -> Commit:
    """The commit being made: the staged paths (for the pre-commit hook). Raises GitError."""
    proc = subprocess.run(["git", "diff", "--cached", "-z", "--name-status", "-M"], cwd=repo_dir,
                          env=clean_env(), capture_output=True)
    if proc.returncode != 0:
        raise GitError(f"git diff --cached: {proc.stderr.decode('utf-8', 'replace').strip()}")
    return _parse(b"staged\0" + proc.stdout)
