"""A commit's relations hold on its own tree (SPEC §8, §9): the ``catalog:`` commit relconsole
is about to write, and each commit of a range that changes a relation.

A relation that misses on the commit that adds it (a seed row the code never handled) makes
every later patch look guilty. ``check_commit`` runs the relations a ``catalog:`` commit adds
or changes on the tree it would have, before it is written, and refuses it when one misses;
``range_offences`` does the same, after the fact, for each commit of a ``check-split`` range
that changes the catalog or a seeds file, on that commit's own tree. Both run through
``holdcheck.check_holds`` (the judge's worker processes) and say what they found in its words.
"""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path
from typing import Callable

from relconsole.engine.errors import CommitRefused, RelconsoleError
from relconsole.engine.gate.holdcheck import catalog_at, changed_relations, check_holds
from relconsole.engine.gate.review import Review, load_review
from relconsole.engine.literal import counted, one_line
from relconsole.engine.oracle.catalog import load_catalog
from relconsole.engine.repo.commitkinds import FileChange
from relconsole.engine.repo.gitio import resolve, run_git
from relconsole.engine.repo.splitcheck import Commit, Offence
from relconsole.engine.repo.treeview import TreeView
from relconsole.engine.repo.workspace import export_oracle, real_parents, scratch_dir

OWN_COMMIT = "on its own commit"
NOTED = ("intermittent", "blocked", "environment")  # what a range check says without failing


def check_commit(review: Review, branch: str, changes: list[FileChange]) -> list[str]:
    """Before a ``catalog:`` commit of ``changes`` onto ``branch`` is written: run the relations
    it adds or changes (``holdcheck.changed_relations``) on the tree it would have (the branch
    tip's code, the tip's oracle with ``changes`` applied). Returns the lines its message
    records (an intermittent miss, a relation its lease kept from running). Raises
    CommitRefused (exit 64; per relation its seed row and both values) for a relation that
    misses every run, is vacuous or cannot be compared, and when ``branch`` moved while they
    ran; RelconsoleError (abort) for one this machine cannot judge (a module not installed).
    Nothing is written to the repository."""
    tip = resolve(review.repo, branch)
    view = TreeView(review.repo, tip)
    written = {c.path: c.content for c in changes}
    catalog = review.layout.catalog
    text = written[catalog].decode("utf-8") if written.get(catalog) is not None else view.read_text(catalog)
    relations = changed_relations([catalog_at(view, catalog)], load_catalog(text or "", catalog), set(written))
    if not relations:
        return []
    oracle = scratch_dir("relconsole-oracle-")
    try:
        export_oracle(review.repo, tip, review.layout.protected, oracle)
        _apply(oracle, changes)
        findings = check_holds(review, relations, tip, oracle)
    finally:
        shutil.rmtree(oracle, ignore_errors=True)
    on = f"on the catalog: commit it would make on {one_line(branch)}"
    refused = [f.text(on) for f in findings if f.fails]
    if refused:
        raise CommitRefused("; ".join(refused) + ": nothing committed (fix the seed row or the relation first)")
    faults = [f.text(on) for f in findings if f.state == "environment"]
    if faults:
        raise RelconsoleError("; ".join(faults) + ": nothing committed")
    if resolve(review.repo, branch) != tip:
        raise CommitRefused(f"{one_line(branch)} moved while the relations ran; reload and accept again")
    return [f.text(on) for f in findings if f.state in NOTED]


def _apply(oracle: Path, changes: list[FileChange]) -> None:
    """Write ``changes`` into the exported oracle folder (its files are read-only links to the
    export store: each changed one is replaced, never written through)."""
    for change in changes:
        target = real_parents(oracle, change.path)
        if target.is_symlink() or target.exists():
            target.unlink()
        if change.content is not None:
            target.write_bytes(change.content)


def range_offences(repo_dir: str | Path, commits: list[Commit],
                   progress: Callable[[int, int, str], None] | None = None) -> tuple[list[Offence], list[str]]:
    """``(offences, notes)`` for ``commits`` (those of a range that change the catalog or a
    seeds file, ``splitcheck.relation_commits``): an Offence at the catalog for each relation a
    commit adds or changes that misses every run on that commit's own tree (code and oracle as
    committed, leases judged on its committer's day), is vacuous or cannot be compared; a note
    for one that missed on some runs, was not run (its lease) or could not be judged here.
    ``progress(done, total, label)`` is called as each commit is judged. Raises GitError as
    ``load_review`` does."""
    offences: list[Offence] = []
    notes: list[str] = []
    for done, commit in enumerate(commits, 1):
        found, said, ran = _judge(repo_dir, commit)
        offences += found
        notes += said
        if progress:
            progress(done, len(commits), f"{commit.sha[:12]}: {counted(ran, 'relation')} run on its own commit")
    return offences, notes


def _judge(repo_dir: str | Path, commit: Commit) -> tuple[list[Offence], list[str], int]:
    """One commit of ``range_offences``: its review as a base (oracle and code its own);
    ``(offences, notes, relations run)``."""
    review = load_review(repo_dir, commit.sha, commit.sha, _committed_on(repo_dir, commit.sha), deferred=True)
    try:
        if review.catalog is None:  # a catalog that does not load is validate's to report
            return [], [], 0
        before = [catalog_at(TreeView(review.repo, parent), review.layout.catalog) for parent in commit.parents]
        relations = changed_relations(before, review.catalog, set(commit.paths))
        if not relations:
            return [], [], 0
        # a past catalog commit held on its own inputs when it was made; inputs a later relconsole
        # draws do not make history fail (the current catalog's are validate's and accept's to judge)
        findings = check_holds(review, relations, commit.sha, review.oracle_dir, draw=False)
    finally:
        review.close()
    return ([Offence(commit.sha, review.layout.catalog, f.text(OWN_COMMIT)) for f in findings if f.fails],
            [f"{commit.sha[:12]} {f.text(OWN_COMMIT)}" for f in findings if f.state in NOTED], len(relations))


def _committed_on(repo_dir: str | Path, sha: str) -> dt.date:
    """The day ``sha`` was committed, in its committer's time zone (the day its leases are judged on)."""
    stamp = run_git(repo_dir, "show", "-s", "--format=%cI", sha).stdout.decode().strip()
    return dt.datetime.fromisoformat(stamp).date()
