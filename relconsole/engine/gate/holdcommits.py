"""A commit's relations hold on its own tree (SPEC §8, §9): the ``catalog:`` commit relconsole
is about to write.

A relation that misses on the commit that adds it (a seed row the code never handled) makes
every later patch look guilty. ``check_commit`` runs the relations a ``catalog:`` commit adds
or changes on the tree it would have, before it is written, and refuses it when one misses,
through ``holdcheck.check_holds`` (the judge's worker processes), in its words.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from relconsole.engine.errors import CommitRefused, RelconsoleError
from relconsole.engine.gate.holdcheck import catalog_at, changed_relations, check_holds
from relconsole.engine.gate.review import Review
from relconsole.engine.literal import one_line
from relconsole.engine.oracle.catalog import load_catalog
from relconsole.engine.repo.commitkinds import FileChange
from relconsole.engine.repo.gitio import resolve
from relconsole.engine.repo.treeview import TreeView
from relconsole.engine.repo.workspace import export_oracle, real_parents, scratch_dir

NOTED = ("intermittent", "blocked")  # what the commit message records


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
