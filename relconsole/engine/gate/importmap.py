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
on the base to fill it in (``importrun.ensure``), only when the review has an exempt or unowned file
that a record could bind.
"""

from __future__ import annotations

import json
from pathlib import Path

from relconsole.engine.atomicfile import read_json_object, write_atomic
from relconsole.engine.repo.owners import EXEMPT, GAP, OWNED, Binding


def _file(review) -> Path:
    return (Path(review.repo.common_dir).resolve() / "relconsole" / "imports"
            / f"{review.merge_base}-{review.oracle_sha[:12]}.json")


def load(review) -> dict[str, list[str]]:
    """relation id -> tree paths its subject imported on this review's merge base (may be {})."""
    data = read_json_object(_file(review))
    return {str(k): [str(p) for p in v] for k, v in data.items() if isinstance(v, list)}


def record(review, imported: dict[str, list[str]]) -> None:
    """Add ``imported`` (relation id -> tree paths) to the merge base's record (atomic write);
    a failure to write loses only the record, rebuilt next time."""
    merged = load(review)
    merged.update({rid: sorted(set(paths)) for rid, paths in imported.items()})
    target = _file(review)
    try:
        write_atomic(target, json.dumps(merged, sort_keys=True), durable=False)
    except OSError:
        pass


def _could_bind(binding: Binding) -> bool:
    return binding.state in (EXEMPT, GAP)


def needed(review) -> bool:
    """True when some touched path is exempt or unowned: only such a path can gain a relation
    from the record (a module the subject imported, or a data file it opened)."""
    return review.catalog is not None and any(_could_bind(b) for b in review.bindings)


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
