"""The ``run --json`` payload, shared by ``relconsole run --json`` and the pytest plugin.

Both front ends write the same document for the same review, so a CI job can switch
between them without changing what parses the result (SPEC §7 ``run``, §8, §11 twins).

Shape (every key always present)::

    {"decision": "pass|freeze|hold|reject|abort",   # §8 word of the PR (or of the run asked for)
     "reason": str, "row": int | None,              # reason code and §8 table row, if any
     "relation_id": str | None, "detail": str,      # the relation that decided it, and why
     "relations": [RelationResult.to_json() | {"identity": str | None,
                                               "identity_changed": bool}, ...],
     "gaps": [touched path no owner pattern matches, ...]}   # §3 coverage gaps

``RelationResult.to_json()`` (engine.runner) gives ``relation_id``, ``outcome``
(``held|missed|blocked``), ``decision``, ``reason``, ``row``, ``summary``, ``first_run``,
``reruns`` (one record per rerun, §6), ``freeze`` (the governing row plus its ``state``)
and ``signature``.
"""

from __future__ import annotations

from relconsole.engine.decision import Decision
from relconsole.engine.freezes import LIVE, FreezeRow
from relconsole.engine.review import Review
from relconsole.engine.runner import RelationResult


def counted_verdict(relation_id: str, first_held: bool, first_miss: str, reruns_held: list[bool],
                    freeze: FreezeRow | None) -> tuple[str, Decision, str]:
    """(outcome, decision, summary) of the §6 counted freeze protocol, given the runs made.

    The same words as ``runner.run_relation`` gives a catalog relation, for a relation
    evaluated elsewhere (a hand-written ``@pytest.mark.relation`` test): a pass is a pass;
    a miss without a LIVE freeze is ``reject``/``property_fail`` (row 3), the freeze's
    ``why`` saying when an expired one expired; under a live freeze ``reruns_held`` are
    the reruns and at least ``pass_needed`` must hold ("frozen 4/5, needed 4: PASS" ->
    ``freeze``/``frozen_pass``, row 8). ``outcome`` is ``held`` or ``missed``.
    """
    if first_held:
        return "held", Decision("pass", "held", None, relation_id), "held"
    if freeze is None or freeze.state != LIVE:
        detail = f"; {freeze.why}" if freeze is not None else ""
        return ("missed", Decision("reject", "property_fail", 3, relation_id,
                                   "missed with no live freeze" + detail),
                f"missed: {first_miss}{detail}")
    passes = sum(1 for held in reruns_held if held)
    word = "PASS" if passes >= freeze.pass_needed else "FAIL"
    summary = f"frozen {passes}/{len(reruns_held)}, needed {freeze.pass_needed}: {word}"
    if word == "PASS":
        return "held", Decision("freeze", "frozen_pass", 8, relation_id, summary), summary
    reason = "property_fail" if passes == 0 else "freeze_fail"
    return ("missed", Decision("reject", reason, 3 if passes == 0 else None, relation_id, summary),
            summary)


def decision_fields(decision: Decision) -> dict:
    """The top-level decision keys of the payload."""
    return {"decision": decision.decision, "reason": decision.reason, "row": decision.row,
            "relation_id": decision.relation_id, "detail": decision.detail}


def run_payload(review: Review, results: list[RelationResult], decision: Decision) -> dict:
    """The ``run --json`` document for ``results`` of ``review`` under ``decision``.

    ``decision`` is the caller's: the review's own (touched relations, ``Review.decision``)
    or the worst of the results when the caller chose the relations (``--all``).
    """
    relations = [r.to_json() | {"identity": review.identities.get(r.relation_id),
                                "identity_changed": r.relation_id in review.changed_identity}
                 for r in results]
    return decision_fields(decision) | {"relations": relations,
                                        "gaps": [b.path for b in review.gaps()]}
