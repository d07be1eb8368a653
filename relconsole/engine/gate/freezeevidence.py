"""The replay evidence a freeze row rests on (SPEC §6, §8 row 8): the relation's replay sheet for
HEAD, decided again after fencing in its lease store (§5), and the fields a ``freeze``
decision carries into the row; any other decision, or no sheet without an override, refuses.
"""

from __future__ import annotations

import json
import os

from relconsole.engine.errors import CommitRefused
from relconsole.engine.gate.replay.replay import SHEET_SUFFIX, default_artifacts
from relconsole.engine.gate.review import Replayed, Review
from relconsole.engine.gate.sheets import Fences, decide_fenced
from relconsole.engine.repo.worktrees import slug
from relconsole.engine.gate.wslease.wslease import ENV_URL
from relconsole.engine.docsref import decision_row


class NoReplayEvidence(CommitRefused):
    """A freeze was asked for a relation with no replay sheet for HEAD (and no override)."""


def replay_freeze_fields(review: Review, relation_id: str, without_replay: bool) -> dict:
    """The fields a §8 row-8 ``freeze`` decision carries ({} for an override without a sheet).

    Raises CommitRefused when the replay decided anything but freeze (the table, not the
    operator, says whether a miss may be frozen), or when there is no sheet and no override.
    """
    replayed = freeze_evidence(review, relation_id)
    if replayed is None:
        if without_replay:
            return {"override": f"no replay sheet: frozen without {decision_row(8)} evidence, by the operator's override"}
        raise NoReplayEvidence(f"{relation_id} has no replay sheet for HEAD: replay it first (b, or relconsole "
                            f"replay) so the decision table can say freeze ({decision_row(8)}); or override explicitly "
                            "(--without-replay), which the commit message records")
    decision = replayed.decision
    if decision.decision != "freeze":
        raise CommitRefused(f"{relation_id}: the replay decided {decision.decision} ({decision.reason}, "
                            f"{decision_row(decision.row) if decision.row else 'no table row'}); only a freeze "
                            "decision (row 8) can become a freeze row")
    return dict(decision.fields)


def freeze_evidence(review: Review, relation_id: str) -> Replayed | None:
    """The relation's replay for HEAD: this review's, else its sheet in the default
    artifacts directory. Either is decided again after fencing (§5) in the lease store it
    names, so evidence whose lease generation moved on reads as row 2 (abort)."""
    replayed = review.replays.get(relation_id)
    if replayed is not None:
        sheet, path = replayed.sheet, replayed.path
    else:
        path = default_artifacts(review) / f"{slug(relation_id)}{SHEET_SUFFIX}"
        try:
            sheet = json.loads(path.read_text())
        except (OSError, ValueError):
            return None
        if not isinstance(sheet, dict) or sheet.get("head") != review.head_sha:
            return None
    fences = Fences(None, os.environ.get(ENV_URL) or None)
    try:
        return Replayed(sheet, decide_fenced(sheet, fences), path)
    finally:
        fences.close()
