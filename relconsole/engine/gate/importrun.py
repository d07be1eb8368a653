"""Fill the import record (``importmap``, SPEC §3 "ownership follows imports") by running the
relations it lacks once on the merge base, with the base oracle."""

from __future__ import annotations

import dataclasses
import shutil

from relconsole.engine.gate import importmap
from relconsole.engine.gate.runplans import checkout_name, plan_for, sandboxed
from relconsole.engine.relations.runner import run_all
from relconsole.engine.repo.workspace import build_run_tree, scratch_dir


def ensure(review, workers: int | None = None) -> None:
    """Fill the record for every catalog relation missing from it, by running those relations
    once on the merge base (with the base oracle), then rebind. Does nothing when no touched
    path could gain a relation (``needed``). Raises what building the base's tree raises."""
    if not importmap.needed(review):
        return
    known = importmap.load(review)
    missing = [r for r in review.relations if r.id not in known and not review.blocked_reason(r)]
    if missing:
        scratch = scratch_dir("tmp")
        tree = scratch / checkout_name(review)
        try:
            linked = sandboxed()
            build_run_tree(review.repo, review.merge_base, review.oracle_dir, review.layout.protected, tree,
                           link=linked, generated=review.layout.generated)
            plans = [(dataclasses.replace(plan_for(review, r, tree, linked=linked), imports_only=True), None)
                     for r in missing]
            results = run_all(plans, workers=workers)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        importmap.record(review, {r.relation_id: list((r.first.run or {}).get("imported") or [])
                                  for r in results if r.first is not None and r.first.run})
        importmap.apply(review)  # with nothing missing, load_review applied this same record already
