"""The walk that gives a patch's review flags (SPEC §9): ``patch_flags``.

Flags judge what merges (issue 35): the content rules read the net diff of each file, merge
base -> HEAD with renames followed (``net_commit``: one ``git diff --name-status -M``), read
through one ``BlobReader`` and judged by ``flagrules``, so no history shape hides a pattern the
merged tree holds (a pattern split across the two sides of a clean merge, a file renamed away,
edited and renamed back, an octopus merge that takes an oracle file from an older commit), and
an intermediate commit that does not parse is no flag once the merged file parses. The flags
of the patch as a whole come from ``wholepatchflags``; the split rules stay per commit
(``splitcheck``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from relconsole.engine.gate.blobreader import BlobReader
from relconsole.engine.gate.flags.flagrules import ChangedFile, normal_path, FlagRules
from relconsole.engine.gate.flags.packagingflags import packaging_changes
from relconsole.engine.gate.flags.patchflags import FlagReport
from relconsole.engine.gate.flags.wholepatchflags import checkout_rewrites, harness_changes
from relconsole.engine.oracle.catalog import Catalog
from relconsole.engine.repo.config import Layout
from relconsole.engine.repo.gitio import IGNORE_NO_SUBMODULE, run_git
from relconsole.engine.repo.splitcheck import Commit

if TYPE_CHECKING:
    from relconsole.engine.oracle.parsecache import ParseCache

def patch_flags(repo_dir: str | Path, merge_base: str, head: str, layout: Layout,
                catalog: Catalog | None, lease_corpora: dict[str, str], oracle_from: str = "base",
                probe_cache: "ParseCache | None" = None) -> FlagReport:
    """Every review flag of the commits ``merge_base..head``.

    ``layout`` is the base ref's (never the patch's: a patch cannot move its own gate);
    ``catalog`` the oracle's (None when it did not load: the rules that need it are
    skipped); ``lease_corpora`` maps corpus path -> lease id; ``oracle_from`` says where
    the review reads the oracle (the wording of protected_path_changed); ``probe_cache``
    keeps each file change's probe findings by the digest of its two sides (the probe scan
    of 16,000 changed modules was most of a review's load), None: scan every change. Raises
    GitError (abort) when git cannot list the range.
    """
    if merge_base == head:
        return FlagReport([], [])
    reader = BlobReader(repo_dir)
    rules = FlagRules(layout, catalog, {normal_path(p): i for p, i in lease_corpora.items()}, reader, oracle_from)
    rules.probe_cache = probe_cache
    report = FlagReport([], [])
    try:
        commit = net_commit(repo_dir, merge_base, head)
        changes = list(_changes(repo_dir, commit, rules, reader))
        for change in changes:
            report.flags.extend(rules.check(change))
        report.flags.extend(rules.golden(commit, changes, report.unjudged))
        report.flags.extend(checkout_rewrites(repo_dir, merge_base, head, reader))
        report.flags.extend(harness_changes(repo_dir, merge_base, head, reader))
        report.flags.extend(packaging_changes(repo_dir, merge_base, head, reader))
    finally:
        reader.close()
    return report


def net_commit(repo_dir: str | Path, merge_base: str, head: str) -> Commit:
    """The patch as one change: ``head`` against the ``merge_base`` (its only parent), with the
    paths that differ and the renames git finds (``git diff --name-status -z -M``). Raises
    GitError as ``run_git`` (a commit git does not have). A range that reaches past a shallow
    clone's boundary is the split check's to report: it reads the range commit by commit."""
    proc = run_git(repo_dir, "diff", "--name-status", "-z", "-M", "--no-ext-diff", IGNORE_NO_SUBMODULE, merge_base,
                   head)
    tokens = proc.stdout.split(b"\0")
    paths, renames, index = [], {}, 0
    while index < len(tokens):
        status = tokens[index].decode("ascii", "replace")
        index += 1
        if not status:
            continue
        count = 2 if status[:1] in "RC" else 1
        names = [t.decode("utf-8", "surrogateescape") for t in tokens[index:index + count]]
        index += count
        paths.extend(names)
        if count == 2 and len(names) == 2 and status[:1] == "R":
            renames[names[1]] = names[0]
    return Commit(head, (merge_base,), tuple(dict.fromkeys(paths)), renames)


def _before_rev(repo_dir: str | Path, commit: Commit) -> str | None:
    """What a commit is compared with: its parent, or for a two-parent merge git's own
    merge of the parents (``merge-tree``), so only what the merge adds is judged."""
    if len(commit.parents) == 2:
        proc = run_git(repo_dir, "merge-tree", "--write-tree", "--no-messages", *commit.parents, ok=None)
        if proc.returncode in (0, 1) and proc.stdout:
            return proc.stdout.split(b"\n", 1)[0].decode().strip()
    return commit.parents[0] if commit.parents else None


def _changes(repo_dir: str | Path, commit: Commit, rules: "FlagRules", reader: BlobReader):
    """The commit's changes as (old path, new path) with the bytes the rules need."""
    rules.guarded_path.prime(commit.paths)  # one index pass per commit: wanted() asks about each
    wanted = {p for p in commit.paths if rules.wanted(p)}
    parent = _before_rev(repo_dir, commit) if wanted else None
    renamed_from = set(commit.renames.values())
    judged = [(commit.renames.get(path, path), path) for path in commit.paths
              if not (path in renamed_from and path not in commit.renames)  # a rename's source: with its destination
              and (commit.renames.get(path, path) in wanted or path in wanted)]
    before_ids, after_ids = _blob_ids(repo_dir, parent, commit.sha) if judged else ({}, {})
    wanted_sides, oids = [], []
    for old, path in judged:
        for rev, side, ids in ((parent, old, before_ids), (commit.sha, path, after_ids)):
            known = ids.get(side, "")  # "": not in the listing, asked by path
            wanted_sides.append((None if known is None else rev, side))  # None: no blob there, nothing to ask
            oids.append(known or None)
    blobs = reader.read_many(wanted_sides, oids)
    for index, (old, path) in enumerate(judged):
        before, after = blobs[2 * index], blobs[2 * index + 1]
        if before is None and after is None:  # neither side a readable blob: a submodule (gitlink)
            yield ChangedFile(commit, old, path, None, None)
            continue
        yield ChangedFile(commit, old if before is not None else None, path if after is not None else None,
                      before, after)


def _blob_ids(repo_dir: str | Path, parent: str | None,
              sha: str) -> tuple[dict[str, str | None], dict[str, str | None]]:
    """({path: blob id in ``parent``}, {path: blob id in ``sha``}) of the files that differ
    between the two (one ``git diff-tree -r --raw --no-renames``: a rename is its source's
    deletion and its destination's addition). None: that side holds no blob there (the
    file is added or deleted, or a gitlink, which ``BlobReader.read`` reads as None too).
    ({}, {}) without a parent or when git cannot diff them: every side is read by path."""
    if parent is None:
        return {}, {}
    proc = run_git(repo_dir, "diff-tree", "-r", "-z", "--raw", "--no-renames", IGNORE_NO_SUBMODULE, parent, sha, ok=None)
    if proc.returncode != 0:
        return {}, {}
    before: dict[str, str | None] = {}
    after: dict[str, str | None] = {}
    fields = proc.stdout.split(b"\0")
    for meta, raw_path in zip(fields[0::2], fields[1::2]):
        parts = meta.decode("ascii", "replace").lstrip(":").split()
        if len(parts) < 5:
            continue
        path = raw_path.decode("utf-8", "surrogateescape")
        for side, mode, oid in ((before, parts[0], parts[2]), (after, parts[1], parts[3])):
            side[path] = oid if mode not in ("000000", "160000") and oid.strip("0") else None
    return before, after
