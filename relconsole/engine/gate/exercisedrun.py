"""Fill the record of the lines each relation ran on HEAD (``exercisedrecord``, SPEC §3 covered
means exercised) by running, on HEAD, the relations bound to a changed ``.py`` file that it
lacks: what ``bind`` does on a clone where no run was made yet."""

from __future__ import annotations

from relconsole.engine.gate import exercised, exercisedrecord
from relconsole.engine.gate.reviewrun import run_review


def bound_relations(review) -> list[str]:
    """The relations bound to the review's changed ``.py`` files, in catalog order."""
    changed = exercised.review_changed(review)
    wanted = {rid for b in review.bindings if b.path in changed for rid in b.relations}
    return [r.id for r in review.relations if r.id in wanted]


def ensure(review, workers: int | None = None) -> None:
    """Give ``review`` the executed lines of every relation bound to a changed ``.py`` file:
    from the record, else by running the missing ones on HEAD (``run_review``, which saves
    them); sets ``review.recorded``. A relation whose lease or seeds fail closed is left out
    (its file stays pending, never unexercised). Raises what ``run_review`` raises."""
    wanted = bound_relations(review)
    if not wanted:
        return
    known = exercisedrecord.load(review)
    missing = [rid for rid in wanted if rid not in known and rid not in review.results
               and not review.blocked_reason(review.catalog.get(rid))]
    if missing:
        stopped = len(review.errors)
        run_review(review, missing, workers=workers)
        # a subject the base cannot resolve is validate's and run's to report (exit 5); bind maps
        # owners, and that relation's files stay pending here, never unexercised
        del review.errors[stopped:]
        known = exercisedrecord.load(review)
    review.recorded = {rid: known[rid] for rid in wanted if rid in known and rid not in review.results}
