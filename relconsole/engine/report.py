"""The ``run --json`` payload, shared by ``relconsole run --json`` and the pytest plugin.

Both front ends write the same document for the same review, so a CI job can switch
between them without changing what parses the result (SPEC §7 ``run``, §8, §11 twins).

Shape (every key always present)::

    {"decision": "pass|freeze|hold|reject|abort",   # §8 word of the PR (or of the run asked for)
     "reason": str, "row": int | None,              # reason code and §8 table row, if any
     "relation_id": str | None, "detail": str,      # the relation that decided it, and why
     "relations": [RelationResult.to_json() | {"identity": str | None,
                                               "identity_changed": bool,
                                               "bites": bool | None}, ...],   # from `relconsole bite`
     "gaps": [touched path no owner pattern matches, ...]}   # §3 coverage gaps

``RelationResult.to_json()`` (engine.runner) gives ``relation_id``, ``outcome``
(``held|missed|blocked``), ``decision``, ``reason``, ``row``, ``summary``, ``first_run``,
``reruns`` (one record per rerun, §6), ``freeze`` (the governing row plus its ``state``)
and ``signature``.
"""

from __future__ import annotations

from relconsole.engine.bite import cached_bite
from relconsole.engine.decision import Decision
from relconsole.engine.freezes import counted_verdict  # noqa: F401 (the plugin's import)
from relconsole.engine.review import Review
from relconsole.engine.runner import RelationResult


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
                                "identity_changed": r.relation_id in review.changed_identity,
                                "bites": cached_bite(review, r.relation_id)}
                 for r in results]
    return decision_fields(decision) | {"relations": relations,
                                        "gaps": [b.path for b in review.gaps()]}
