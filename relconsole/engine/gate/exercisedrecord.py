"""The lines each relation ran on HEAD, kept between processes, so that ``bind`` lists the
changed statements no relation ran (SPEC §3 covered means exercised) as ``run`` does.

``run_review`` saves, after every run on HEAD, each relation's executed lines in the review's
changed ``.py`` files to ``<git common dir>/relconsole/exercised/<merge base>-<head>-<oracle
commit>.json`` (``{relation id: {path: [lines]}}``; atomic write; a failure to write loses only
the record). ``bind`` reads it, and runs on HEAD the bound relations it lacks
(``exercisedrun.ensure``):
every front end rebuilds a missing record. The trust model is ``importmap``'s: the git
directory is in no tree a patch carries, and the subject, sandboxed, cannot write it.
"""

from __future__ import annotations

import json
from pathlib import Path

from relconsole.engine.atomicfile import read_json_object, write_atomic
from relconsole.engine.gate import exercised


def _file(review) -> Path:
    common = Path(getattr(review.repo, "common_dir", None) or review.repo.git_dir).resolve()
    return (common / "relconsole" / "exercised"
            / f"{review.merge_base[:16]}-{review.head_sha[:16]}-{review.oracle_sha[:12]}.json")


def load(review) -> dict[str, dict[str, list[int]]]:
    """relation id -> {path: lines it ran} recorded for this review's commits ({} when none)."""
    data = read_json_object(_file(review))
    return {str(rid): {str(p): [int(n) for n in lines if isinstance(n, int)] for p, lines in ran.items()
                       if isinstance(lines, list)}
            for rid, ran in data.items() if isinstance(ran, dict)}


def save(review, results) -> None:
    """Add ``results`` (RelationResults of a run on HEAD) to the record, restricted to the
    review's changed ``.py`` files (``exercised.review_changed``)."""
    changed = exercised.review_changed(review)
    if not changed:
        return
    merged = load(review)
    for result in results:
        if result.first is None:
            continue
        ran = exercised.executed_by([result])
        merged[result.relation_id] = {path: sorted(ran[path]) for path in changed if path in ran}
    try:
        write_atomic(_file(review), json.dumps(merged, sort_keys=True), durable=False)
    except OSError:
        pass


def unexercised_from_record(answer) -> list | None:
    """``exercised.Unexercised`` rows for a ``bindfacts`` answer (``root``, ``repo``,
    ``merge_base``, ``head_sha``, ``oracle_sha``, ``bindings``) from the record alone, or None
    when it lacks a relation bound to a changed ``.py`` file (the full load runs it)."""
    from relconsole.engine.repo.owners import OWNED
    if not any(b.state == OWNED and b.path.endswith(".py") for b in answer.bindings):
        return []
    changed = exercised.review_changed(answer)
    bound = {b.path: b.relations for b in answer.bindings}
    wanted = {rid for path in changed for rid in bound.get(path, ())}
    known = load(answer) if wanted else {}
    if not wanted <= set(known):
        return None
    answer.recorded, answer.results, answer.flags = {rid: known[rid] for rid in wanted}, {}, []
    ran: dict[str, set[int]] = {}
    for rid in wanted:
        for path, lines in known[rid].items():
            ran.setdefault(path, set()).update(lines)
    return exercised.unexercised(changed, ran, lambda path: bound.get(path, ()))
