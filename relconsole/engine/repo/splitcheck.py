"""The split check (SPEC §9): no commit mixes a protected path with anything else, nor two kinds.

``check_split(repo, "BASE..HEAD")`` reads every commit of the range from one
``git log -z --name-status -M --cc`` call (merges: only the paths whose merged result
differs from every parent, so a clean merge of checked commits adds nothing) and
returns one ``Offence`` per offending commit and path. Renames count both paths: a
rename out of the protected tree touches it. Kinds follow the commit table of §9:
catalog (the catalog and seeds files), freeze (the freeze file), lease (one lease
manifest), quarantine (quarantine files, allowed beside a catalog change).
``relation_commits`` picks the commits that change the catalog or a seeds file, whose
relations the gate layer runs on their own tree (``gate.holdcommits``; this layer runs none).
"""

from __future__ import annotations

import os

import re
from dataclasses import dataclass, field
from pathlib import Path

from relconsole.engine.repo.config import Layout, layout_from_pyproject
from relconsole.engine.errors import BadInputError, GitError, UsageError
from relconsole.engine.repo import gitio
from relconsole.engine.repo.baseref import resolve_base
from relconsole.engine.repo.gitio import IGNORE_NO_SUBMODULE, SHALLOW_FIX, run_git
from relconsole.engine.repo.owners import protection
from relconsole.engine.literal import one_line


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
    renames: dict = field(default_factory=dict, compare=False)  # new path -> old path


def range_commits(repo_dir: str | Path, spec: str) -> list[Commit]:
    """The commits of ``spec`` (``BASE..HEAD``), oldest first. Raises UsageError for a
    spec that is not a range and GitError (abort, exit 3) for refs git does not know (one line
    naming the unknown side, escaped) or a range
    that reaches past a shallow clone's boundary (its first commit would look like a
    commit adding the whole tree)."""
    if ".." not in spec or spec.startswith("-"):
        raise UsageError(f"{spec!r} is not a range: give BASE..HEAD")
    try:
        commits = _parse_log(run_git(repo_dir, "-c", "log.showRoot=true", "log", "--reverse", "-z",
                                     "--format=%H %P", "--name-status", "-M", spec, "--").stdout)
    except GitError as exc:
        unknown = _unknown_side(repo_dir, spec)
        shallow = f" ({SHALLOW_FIX})" if _shallow_file(repo_dir) is not None else ""
        if unknown is not None:  # git's own "fatal: bad revision 'A..B'" names the range, not the side
            raise GitError(f"check-split: unknown revision '{one_line(unknown)}' in {one_line(spec)}: no branch, "
                           f"tag or commit of that name{shallow}") from None
        if shallow:
            raise GitError(f"{exc.one_line()}{shallow}") from None
        raise
    _refuse_shallow(repo_dir, commits)
    return [_merge_additions(repo_dir, c) if len(c.parents) > 1 else c for c in commits]


def _unknown_side(repo_dir: str | Path, spec: str) -> str | None:
    """The first side of the range ``spec`` (``A..B`` or ``A...B``) that names no commit, or None."""
    sides = spec.split("...", 1) if "..." in spec else spec.split("..", 1)
    for side in sides:
        proc = run_git(repo_dir, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{side}^{{commit}}", ok=None)
        if proc.returncode != 0:
            return side
    return None


def _merge_additions(repo_dir: str | Path, merge: Commit) -> Commit:
    """A merge judged by what it adds: the paths where its tree differs from git's own
    merge of its parents (``git merge-tree``; conflicts keep their markers there, so
    every resolution counts). An octopus merge falls back to the combined diff (``--cc``)."""
    if len(merge.parents) == 2:
        automatic = run_git(repo_dir, "merge-tree", "--write-tree", "--no-messages", "--allow-unrelated-histories",
                            *merge.parents,
                            ok=(0, 1)).stdout
        tree = automatic.split(b"\n", 1)[0].decode().strip()
        listing = run_git(repo_dir, "diff-tree", "-r", "-z", "--name-status", "-M", IGNORE_NO_SUBMODULE, tree,
                          f"{merge.sha}^{{tree}}").stdout
    else:
        listing = run_git(repo_dir, "diff-tree", "-r", "-z", "--cc", "--name-status", "--no-commit-id", IGNORE_NO_SUBMODULE,
                          merge.sha).stdout
    added = _parse_log(merge.sha.encode() + b"\0" + listing)
    return Commit(merge.sha, merge.parents, added[0].paths, added[0].renames) if added else \
        Commit(merge.sha, merge.parents, ())


_SHA = re.compile(rb"[0-9a-f]{40,64}( [0-9a-f]{40,64})*$")
_STATUS = re.compile(rb"[ACDMRTUX]+[0-9]*$")  # "MM": a combined (octopus) diff


def _parse_log(data: bytes) -> list[Commit]:
    """Commits from ``git log -z --format='%H %P' --name-status``: a header token, then
    status tokens each followed by one path (two for renames and copies). A token is read
    as a header or a status only where a status may stand, so no path is ever taken for one."""
    commits: list[Commit] = []
    tokens = data.split(b"\0")
    index, current = 0, None
    while index < len(tokens):
        token = tokens[index].lstrip(b"\n")
        if current is None or not _STATUS.match(token):
            token = token.rstrip(b" ")  # a root commit's header: "%H %P" with no parent is "<sha> "
        index += 1
        if not token:
            continue
        if _STATUS.match(token) and current is not None:
            count = 2 if token[:1] in b"RC" and token[1:].isdigit() and len(token) > 1 else 1
            paths = [t.decode("utf-8", "surrogateescape") for t in tokens[index:index + count]]
            index += count
            current[2].extend(paths)
            if count == 2 and len(paths) == 2:
                current[3][paths[1]] = paths[0]
        elif _SHA.match(token):
            sha, *parents = token.decode().split()
            current = (sha, tuple(parents), [], {})
            commits.append(current)
        else:
            raise GitError(f"unexpected output from git log: {token[:40]!r}")
    return [Commit(sha, parents, tuple(dict.fromkeys(paths)), renames) for sha, parents, paths, renames in commits]


def _shallow_file(repo_dir: str | Path) -> Path | None:
    proc = run_git(repo_dir, "rev-parse", "--git-path", "shallow", ok=None)
    shallow = Path(repo_dir, proc.stdout.decode().strip()) if proc.returncode == 0 else None
    return shallow if shallow is not None and shallow.is_file() else None


def _refuse_shallow(repo_dir: str | Path, commits: list[Commit]) -> None:
    if all(c.parents for c in commits):  # a shallow boundary shows as a commit without parents
        return
    shallow = _shallow_file(repo_dir)
    if shallow is None:
        return
    grafted = set(shallow.read_text().split())
    if any(c.sha in grafted for c in commits):
        raise GitError(f"the range reaches past this clone's history: {SHALLOW_FIX}")


def kind_of(path: str, layout: Layout) -> str | None:
    """The §9 commit kind a protected path belongs to, or None (another oracle file)."""
    if path == layout.catalog or (path.startswith(layout.seeds_dir.rstrip("/") + "/")):
        return "catalog"
    if path == layout.freezes:
        return "freeze"
    if path == layout.acks:
        return "review"
    if path.startswith(layout.leases_dir.rstrip("/") + "/"):
        return "lease"
    if path.startswith(layout.quarantine_dir.rstrip("/") + "/"):
        return "quarantine"
    return None


def offences(commit: Commit, layout: Layout, init: bool = False) -> list[Offence]:
    """What is wrong with one commit (§9): a protected path mixed with other paths; two
    kinds, or a kind's file beside a file of no kind (a freeze commit holds the freeze file
    only, a catalog commit the catalog, seeds and the adapters it names); two lease
    manifests. ``init``: the commit creates the oracle (its parent has no catalog), the
    ``oracle: init`` kind, which may hold every oracle file and ``pyproject.toml`` at once."""
    protected_path = protection(layout.protected)  # the patterns indexed once: a commit may hold 100,000 paths
    protected_path.prime(commit.paths)
    if init:
        return [Offence(commit.sha, p, "an oracle: init commit holds the oracle and pyproject.toml only")
                for p in commit.paths if not (protected_path(p) or kind_of(p, layout)
                                              or p == "pyproject.toml")]
    guarded = [p for p in commit.paths if protected_path(p) or kind_of(p, layout)]
    inside = set(guarded)
    others = [p for p in commit.paths if p not in inside]
    if guarded and others:
        return [Offence(commit.sha, p, f"mixes the protected path {guarded[0]} with a path outside it")
                for p in others]
    kinds: dict[str, list[str]] = {}
    for path in guarded:
        kinds.setdefault(kind_of(path, layout) or "", []).append(path)
    named = sorted(k for k in kinds if k and not (k == "quarantine" and "catalog" in kinds))
    found = []
    if len(named) > 1:
        found += [Offence(commit.sha, p, f"mixes commit kinds {' and '.join(named)}")
                  for kind in named for p in kinds[kind]]
    elif named and "" in kinds:
        # a catalog row and the adapter it names land together (a module of the oracle)
        loose = [p for p in kinds[""] if not (named == ["catalog"] and p.endswith(".py"))]
        found += [Offence(commit.sha, p, f"a {named[0]}: commit may not also change this oracle file")
                  for p in loose]
    leases = kinds.get("lease", [])
    if len(leases) > 1 and not _one_renamed(commit, leases):
        found += [Offence(commit.sha, p, "a lease: commit changes one lease manifest only") for p in leases]
    return found


def _one_renamed(commit: Commit, leases: list[str]) -> bool:
    return len(leases) == 2 and commit.renames.get(leases[1]) == leases[0]


def check_split(repo_dir: str | Path, spec: str, layout: Layout | None = None) -> list[Offence]:
    """Every offence in ``spec``, oldest commit first. ``layout`` defaults to the one in the
    range start's ``pyproject.toml`` ([tool.relconsole]): the base's, so a branch cannot
    move its own gate (§2). Raises UsageError, GitError, BadInputError (a malformed pyproject)."""
    return check_range(repo_dir, spec, layout)[1]


def check_range(repo_dir: str | Path, spec: str, layout: Layout | None = None) -> tuple[int, list[Offence]]:
    """``(number of commits checked, offences)`` of ``spec``; see :func:`check_split`."""
    commits, _layout, found = range_check(repo_dir, spec, layout)
    return len(commits), found


def range_check(repo_dir: str | Path, spec: str,
                layout: Layout | None = None) -> tuple[list[Commit], Layout, list[Offence]]:
    """``(the commits of spec oldest first, the layout they were judged under, offences)``;
    see :func:`check_split`."""
    if layout is None:
        base = spec.split("..")[0] or "HEAD"
        layout = layout_at(repo_dir, base)
    commits = range_commits(repo_dir, spec)
    return commits, layout, [o for commit in commits
                             for o in offences(commit, layout, _creates_oracle(repo_dir, commit, layout))]


def relation_commits(commits: list[Commit], layout: Layout) -> list[Commit]:
    """The ``commits`` that change the catalog or a seeds file (what a ``catalog:`` commit
    holds, §9): the ones whose relations ``check-split`` runs on their own tree."""
    return [c for c in commits if any(kind_of(p, layout) == "catalog" for p in c.paths)]


def _creates_oracle(repo_dir: str | Path, commit: Commit, layout: Layout) -> bool:
    """Whether ``commit`` adds the catalog to a parent that has none (the oracle's first commit)."""
    if layout.catalog not in commit.paths or len(commit.parents) > 1:
        return False
    if not commit.parents:
        return True
    return run_git(repo_dir, "cat-file", "-e", f"{commit.parents[0]}:{layout.catalog}", ok=None).returncode != 0


def layout_at(repo_dir: str | Path, ref: str) -> Layout:
    """The [tool.relconsole] layout in ``ref``'s pyproject.toml (defaults when it has none)."""
    proc = run_git(repo_dir, "show", f"{ref}:pyproject.toml", ok=None)
    if proc.returncode != 0:
        return Layout()
    try:
        return layout_from_pyproject(proc.stdout.decode("utf-8"))
    except UnicodeDecodeError:
        raise BadInputError("pyproject.toml", f"not UTF-8 text (in {ref})") from None


EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"  # git's empty tree: the parent of a root commit


def staged_commit(repo_dir: str | Path, index_file: str | None = None, amend: bool | None = None) -> Commit:
    """The commit being made: the staged paths, its parent HEAD (none before the first
    commit), for the pre-commit hook. ``index_file`` is the index git is committing (default:
    ``$GIT_INDEX_FILE``, which ``git commit -a`` and ``git commit -- PATHS`` point at a
    temporary index; relative to the current directory), else the repository's own index.
    ``amend`` (default: ``amending()``): the commit replaces HEAD, so it is the index against
    HEAD's parent, and HEAD's own paths count. Raises GitError."""
    index_file = index_file if index_file is not None else os.environ.get("GIT_INDEX_FILE")
    index_env = {"GIT_INDEX_FILE": os.path.abspath(index_file)} if index_file else None
    head = run_git(repo_dir, "rev-parse", "--verify", "--quiet", "HEAD^{commit}", ok=None).stdout.decode().strip()
    amend = amending() if amend is None else amend
    against: list[str] = []  # the commit's parent: HEAD, or HEAD's own parent for an amend
    if amend and head:
        head = run_git(repo_dir, "rev-parse", "--verify", "--quiet", "HEAD^1^{commit}", ok=None).stdout.decode().strip()
        against = [head or EMPTY_TREE]
    listing = run_git(repo_dir, "diff", "--cached", "-z", "--name-status", "-M", IGNORE_NO_SUBMODULE, *against, extra_env=index_env).stdout
    commits = _parse_log(b"0" * 40 + b"\0" + listing)
    parents = (head,) if head else ()
    return Commit("staged", parents, commits[0].paths, commits[0].renames) if commits else Commit("staged", parents, ())


def amending(pid: int | None = None, depth: int = 6) -> bool:
    """Whether a ``git commit --amend`` is among this process's ancestors (Linux ``/proc``;
    elsewhere False): git tells a pre-commit hook nothing else about an amend."""
    pid = os.getppid() if pid is None else pid
    for _ in range(depth):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            stat_fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            return False
        words = [a.decode("utf-8", "replace") for a in argv if a]
        if words and Path(words[0]).name == "git" and "commit" in words and any(map(_means_amend, words)):
            return True
        pid = int(stat_fields[1])  # the parent's pid
        if pid <= 1:
            return False
    return False


def _means_amend(word: str) -> bool:
    """``--amend`` or an abbreviation git accepts for it (``--am``, ``--ame``, ``--amen``)."""
    return len(word) >= 4 and "--amend".startswith(word)


def staged_offences(repo_dir: str | Path) -> list[Offence]:
    """``offences`` of the commit being made, under the base's layout (the pre-commit hook)."""
    return staged_check(repo_dir)[2]


def staged_check(repo_dir: str | Path) -> tuple[Commit, Layout, list[Offence]]:
    """``(the commit being made, the layout it is judged under, its offences)``; see
    :func:`staged_offences`."""
    commit = staged_commit(repo_dir)
    layout = layout_at(repo_dir, _layout_commit(repo_dir, commit.parents[0])) if commit.parents else Layout()
    return commit, layout, offences(commit, layout, _creates_oracle(repo_dir, commit, layout))


def _layout_commit(repo_dir: str | Path, parent: str) -> str:
    """Where the staged commit's layout is read: the merge base of its parent and the base ref
    (``baseref``'s order), so that an earlier commit of the branch that moved the protected
    patterns in pyproject.toml does not move them for the next (red team, issue 36); the parent
    itself when no base is found (a repository with one branch and no setting)."""
    try:
        repo = gitio.open_repo(repo_dir)
        _, base_tip = resolve_base(repo, None, parent)
        return gitio.merge_base(repo, base_tip, parent)
    except GitError:
        return parent
