"""The ``run --json`` payload, shared by ``relconsole run --json`` and the pytest plugin.

Both front ends write the same document for the same review, so a CI job can switch
between them without changing what parses the result (SPEC §7 ``run``, §8, §11 twins).

Shape (every key always present)::

    {"decision": "pass|freeze|hold|reject|abort",   # §8 word of the PR (or of the run asked for)
     "reason": str, "row": int | None,              # reason code and §8 table row, if any
     "relation_id": str | None, "detail": str,      # the relation that decided it, and why
     "relations": [RelationResult.to_json() | {"identity": str | None,
                                               "identity_changed": bool,
                                               "bites": bool | None,       # from `relconsole bite`
                                               "bite": {"verdict": "bites|bites by crash only|does not bite",
                                                        "caught": int, "crashed": int, "total": int} | None},
                   ...],
     "gaps": [touched path no owner pattern matches, ...],   # §3 coverage gaps
     "unexercised": [{"path": str, "lines": [[first, last], ...], "statements": int,
                      "relations": [id, ...]}, ...],         # §3 changed statements no relation ran
     "unexercised_level": "gap|warn"}                        # [tool.relconsole] unexercised

``bites`` (kept for compatibility) is True only when the relation's comparison caught a
mutant; ``bite`` is the cached verdict word and counts as ``relconsole bite`` last printed
them for HEAD's files (null when not known).

``RelationResult.to_json()`` (engine.relations.records) gives ``relation_id``, ``outcome``
(``held|missed|blocked``), ``decision``, ``reason``, ``row``, ``summary``, ``first_run``,
``reruns`` (one record per rerun, §6), ``freeze`` (the governing row plus its ``state``)
and ``signature``.
"""

from __future__ import annotations


from relconsole.engine.gate.bite.bitecache import cached_verdict
from relconsole.engine.decision import Decision
from relconsole.engine.literal import one_line
from relconsole.engine.gate.review import Review
from relconsole.engine.relations.records import RelationResult, short_pair


def miss_outputs(result: RelationResult | None) -> dict | None:
    """``{"source": text, "followup": text}``: the two outputs of the result's first run that
    missed, as compact JSON cut around where they first differ (``records.short_pair``: the
    evidence a reviewer checks, in the log and not only in ``run --json``; new-user trial); None
    when no run missed with outputs to show. Untrusted text: a printer passes it through
    ``literal.one_line``."""
    if result is None:
        return None
    record = next((r for r in (result.first, *result.reruns) if r is not None and not r.held), None)
    if record is None or (record.source is None and record.followup is None):
        return None
    return dict(zip(("source", "followup"), short_pair(record.source, record.followup)))


def decision_fields(decision: Decision) -> dict:
    """The top-level decision keys of the payload."""
    return {"decision": decision.decision, "reason": decision.reason, "row": decision.row,
            "relation_id": decision.relation_id, "detail": decision.detail}


def run_payload(review: Review, results: list[RelationResult], decision: Decision) -> dict:
    """The ``run --json`` document for ``results`` of ``review`` under ``decision``.

    ``decision`` is the caller's: the review's own (touched relations, ``Review.decision``)
    or the worst of the results when the caller chose the relations (``--all``).
    """
    relations = []
    for r in results:
        bite = cached_verdict(review, r.relation_id)
        relations.append(r.to_json() | {"identity": review.identities.get(r.relation_id),
                                        "identity_changed": r.relation_id in review.changed_identity,
                                        "bites": bite.bites if bite else None,
                                        "bite": bite.to_json() if bite else None})
    return decision_fields(decision) | {"relations": relations, "gaps": [b.path for b in review.gaps()],
                                        **unexercised_fields(review)}


def unexercised_fields(review: Review) -> dict:
    """``unexercised`` (each file's changed statements no relation ran, ``exercised.Unexercised``
    as JSON) and ``unexercised_level`` (``gap`` or ``warn``, the base's setting)."""
    return {"unexercised": [u.to_json() for u in review.unexercised()],
            "unexercised_level": review.layout.unexercised}


def replay_payload(outcome) -> dict:
    """The ``replay --json`` document: the PR-level decision of this replay, the lease it
    ran under, and per relation the sheet path, the §8 row that fired and the run counts."""
    relations = []
    for rid, sheet in outcome.sheets.items():
        decision = outcome.decisions[rid]
        relations.append(decision_fields(decision) | {
            "sheet": str(outcome.paths.get(rid, "")), "property_result": sheet["property_result"],
            "runs": sheet["runs"], "signature": sheet["signature"],
            "base_signature": sheet["base_signature"], "fields": decision.fields})
    relations += [decision_fields(decision) | {"sheet": None, "replayed": False}
                  for decision in outcome.unreplayed.values()]
    lease = outcome.lease.to_json() if outcome.lease else None
    return decision_fields(outcome.overall()) | {"artifacts": str(outcome.artifacts), "lease": lease,
                                                 "relations": relations}


def replay_lines(outcome) -> list[str]:
    """One line per replayed relation (row, decision, HEAD and base misses), then the PR line."""
    lines = []
    for rid, sheet in outcome.sheets.items():
        decision, runs = outcome.decisions[rid], sheet["runs"]
        lines.append(f"{rid}: row {decision.row} {decision.decision.upper()} ({decision.reason})  "
                     f"HEAD missed {runs['head']['misses']}/{runs['head']['runs']}, "
                     f"base {runs['base']['misses']}/{runs['base']['runs']}  {outcome.paths.get(rid, '')}")
    for rid, decision in outcome.unreplayed.items():
        lines.append(f"{rid}: not replayed, {decision.decision.upper()} ({decision.reason}) from its run: "
                     f"{one_line(decision.detail)}")
    overall = outcome.overall()
    lines.append(f"decision: {overall.decision}  ({overall.reason})  sheets in {outcome.artifacts}")
    return lines


def record_decisions(git_dir, decisions: list[Decision]) -> bool:
    """Append decisions to the gate-health history (never fails the caller)."""
    from relconsole.engine.gate import gatehealth
    return gatehealth.append(git_dir, decisions)
