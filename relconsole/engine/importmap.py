"""Ownership follows imports (SPEC §3): the tree files each relation's subject imported, or
opened, when it ran on the base bind that relation to a touched path, whatever the owner map
says.

Moving the implementation into an exempt folder (``tests/fixtures/``) and leaving a
re-export behind does not hide it: on the base the relation's calls imported the moved file,
so a later patch that touches only that file still runs the relation. The record is the
subject processes' own list of the tree files they imported or opened (``run.imported``;
an audit hook sees the opens), made on the merge
base with the base oracle, and kept in ``<git common dir>/relconsole/imports/<merge base>-
<oracle commit>.json`` (``{relation id: [tree paths]}``); a relation missing from it is run
on the base to fill it in (``ensure``), only when the review has an exempt or unowned file
that a record could bind.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from relconsole.engine.owners import EXEMPT, GAP, OWNED, Binding


def _file(review) -> Path:
    return (Path(review.repo.common_dir).resolve() / "relconsole" / "imports"
            / f"{review.merge_base}-{review.oracle_sha[:12]}.json")


def load(review) -> dict[str, list[str]]:
    """relation id -> tree paths its subject imported on this review's merge base (may be {})."""
    try:
        data = json.loads(_file(review).read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {str(k): [str(p) for p in v] for k, v in data.items() if isinstance(v, list)}


def record(review, imported: dict[str, list[str]]) -> None:
    """Add ``imported`` (relation id -> tree paths) to the merge base's record (atomic write);
    a failure to write loses only the record, rebuilt next time."""
    merged = load(review)
    merged.update({rid: sorted(set(paths)) for rid, paths in imported.items()})
    target = _file(review)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        scratch = target.with_suffix(f".{os.getpid()}.tmp")
        scratch.write_text(json.dumps(merged, sort_keys=True))
        os.replace(scratch, target)
    except OSError:
        pass


def _could_bind(binding: Binding) -> bool:
    return binding.state in (EXEMPT, GAP)


def needed(review) -> bool:
    """True when some touched path is exempt or unowned: only such a path can gain a relation
    from the record (a module the subject imported, or a data file it opened)."""
    return review.catalog is not None and any(_could_bind(b) for b in review.bindings)


def ensure(review, workers: int | None = None) -> None:
    """Fill the record for every catalog relation missing from it, by running those relations
    once on the merge base (with the base oracle), then rebind. Does nothing when no touched
    path could gain a relation (``needed``). Raises what building the base's tree raises."""
    if not needed(review):
        return
    known = load(review)
    missing = [r for r in review.relations if r.id not in known and not review.blocked_reason(r)]
    if missing:
        from relconsole.engine.review import checkout_name, plan_for, sandboxed
        from relconsole.engine.runner import run_all
        from relconsole.engine.workspace import build_run_tree, scratch_dir
        import shutil
        scratch = scratch_dir("tmp")
        tree = scratch / checkout_name(review)
        try:
            linked = sandboxed()
            build_run_tree(review.repo, review.merge_base, review.oracle_dir, review.layout.protected, tree,
                           link=linked)
            import dataclasses  # here: bind's answer from kept facts never runs relations
            plans = [(dataclasses.replace(plan_for(review, r, tree, linked=linked), imports_only=True), None)
                     for r in missing]
            results = run_all(plans, workers=workers)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        record(review, {r.relation_id: list((r.first.run or {}).get("imported") or []) for r in results
                        if r.first is not None and r.first.run})
        apply(review)  # with nothing missing, load_review applied this same record already


def apply(review) -> None:
    """Rebind the review's touched paths with the record: a path a relation imported on the
    base gains that relation (``via_import``); an exempt or unowned one becomes ``owned``."""
    imports = load(review)
    if not imports:
        return
    by_path: dict[str, list[str]] = {}
    for rid, paths in imports.items():
        if review.catalog is not None and review.catalog.get(rid) is not None:
            for path in paths:
                by_path.setdefault(path, []).append(rid)
    out = list(review.bindings)
    for at, binding in enumerate(out):
        named = by_path.get(binding.touched.path)
        if named is None:  # most paths: no subject imported them
            continue
        extra = tuple(rid for rid in sorted(named) if rid not in binding.relations)
        if extra and binding.state in (EXEMPT, GAP, OWNED):
            out[at] = binding._replace(state=OWNED, relations=binding.relations + extra, via_import=extra)
    review.bindings = out
