"""The decision table (SPEC §8) and the PR's overall decision.

``decide(sheet)`` maps one replay sheet to exactly one row, checked in order.
``ROWS`` holds the table as data (decision, reason, evidence) for front ends and
``relconsole stats``; ``worst`` folds many decisions into the PR's one.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field

from relconsole.engine.errors import EXIT_ABORT, EXIT_HOLD, EXIT_PASS, EXIT_REJECT

ORDER = ("pass", "freeze", "hold", "reject", "abort")  # worst last
EXIT_CODES = {"pass": EXIT_PASS, "freeze": EXIT_PASS, "reject": EXIT_REJECT,
              "hold": EXIT_HOLD, "abort": EXIT_ABORT}
REQUIRED = ("test_id", "property_result", "fixture_pin", "lease", "signature", "base_signature")

# §8 as data: row -> (decision, reason, the evidence that makes it fire).
ROWS: dict[int, tuple[str, str, str]] = {
    1: ("abort", "missing_fields", "a required field missing"),
    2: ("abort", "lease_not_fresh", "lease absent, empty id, or not fresh"),
    3: ("reject", "property_fail", "property_result fail"),
    4: ("reject", "fixture_drift", "fixture pin mismatch"),
    5: ("hold", "second_replay_required", "predicate_state quarantine"),
    6: ("reject", "miss_not_on_base", "signature differs from base_signature"),
    7: ("abort", "freeze_missing_expiry", "no expires_at for the proposed freeze"),
    8: ("freeze", "intermittent_on_base", "otherwise: an intermittent miss that base shows too"),
}
# Row 8 when the relation's policy forbids freezing (§8, last paragraph).
FREEZE_FORBIDDEN = ("reject", "freeze_not_allowed", "freezing forbidden by the relation's policy")
# Checked before row 3 (§8 "a miss is the patch's only when the base holds"): no table row.
ORACLE_FAULT = ("abort", "oracle_fault", "the relation misses on every merge-base run too: the catalog keeper's to fix")
ENVIRONMENT = ("abort", "environment", "the runs judged the machine (a module neither side has), not the patch")
# A run that judged the machine or the oracle instead of the patch (§7, §8 oracle fault): abort
# with the run's error type as the reason, and no rerun is due.
NOT_JUDGED = ("environment", "oracle_fault")
PROPERTY_RESULTS = ("fail", "pass")
PIN_STATES = ("match", "mismatch")


@dataclass(frozen=True)
class Decision:
    """One decision: ``decision`` word, ``reason`` code, ``row`` of §8 (None: not a table row).

    ``relation_id`` names the relation it is about, ``detail`` adds what a reviewer reads,
    ``fields`` carries a freeze proposal's lease_id, signature, expires_at and test_id.
    """

    decision: str
    reason: str
    row: int | None = None
    relation_id: str | None = None
    detail: str = ""
    fields: dict = field(default_factory=dict)

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.decision]


def _blank(value) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def missing_fields(sheet) -> list[str]:
    """The required fields (§8) a sheet lacks or holds malformed, in ``REQUIRED`` order.

    Missing: absent, None or "". Malformed (counted as missing, since the row they feed
    cannot be judged): ``lease`` or ``fixture_pin`` not a mapping, a ``fixture_pin`` without
    a ``state`` of match|mismatch, a ``property_result`` other than fail|pass, a non-string
    ``test_id``/``signature``/``base_signature``. A sheet that is not a mapping lacks all.
    """
    if not isinstance(sheet, Mapping):
        return list(REQUIRED)
    out = []
    for key in REQUIRED:
        value = sheet.get(key)
        if _blank(value):
            out.append(key)
        elif key in ("lease", "fixture_pin") and not isinstance(value, Mapping):
            out.append(f"{key} (not a mapping)")
        elif key == "fixture_pin" and value.get("state") not in PIN_STATES:
            out.append("fixture_pin.state")
        elif key == "property_result" and value not in PROPERTY_RESULTS:
            out.append("property_result (not fail|pass)")
        elif key in ("test_id", "signature", "base_signature") and not isinstance(value, str):
            out.append(f"{key} (not a string)")
    return out


def _expiry(value) -> bool:
    """``expires_at`` is a YYYY-MM-DD date (a longer ISO time is cut to its date)."""
    if not isinstance(value, str):
        return False
    try:
        dt.date.fromisoformat(value.strip()[:10])
    except ValueError:
        return False
    return True


def _allowed(flag) -> bool:
    """A freeze policy flag: absent/None or True allow; anything else (False, "no") forbids."""
    return flag is None or flag is True


def _row(n: int, rid, detail: str = "", fields: dict | None = None) -> Decision:
    decision, reason, _ = ROWS[n]
    return Decision(decision, reason, n, rid, detail, fields or {})


def side_counts(sheet: Mapping, side: str) -> tuple[int, int] | None:
    """``(misses, runs)`` a sheet records for ``side`` (``head`` or ``base``), or None when it
    records no whole, non-negative counts there."""
    runs = sheet.get("runs")
    counts = runs.get(side) if isinstance(runs, Mapping) else None
    if not isinstance(counts, Mapping):
        return None
    misses, total = counts.get("misses"), counts.get("runs")
    if not all(type(n) is int and n >= 0 for n in (misses, total)):
        return None
    return misses, total


def _where(sheet: Mapping) -> str:
    catalog, line = sheet.get("catalog"), sheet.get("catalog_line")
    if isinstance(catalog, str) and catalog:
        return f" ({catalog}:{line})" if type(line) is int else f" ({catalog})"
    return ""


def base_fault(sheet: Mapping) -> str:
    """Why a sheet's miss is the oracle's, not the patch's (§8, checked before row 3), or "".

    The relation missed on every run on the merge base too: it does not hold before the
    patch, whether with the same signature as HEAD's misses or another (a subject or adapter
    that does not resolve there misses every run). Also the sheet's own ``oracle_fault`` text,
    which the replay writes when it knows more (an adapter of the oracle raised)."""
    given = sheet.get("oracle_fault")
    if isinstance(given, str) and given.strip():
        return given
    counts = side_counts(sheet, "base")
    if counts is None or counts[1] == 0 or counts[0] != counts[1]:
        return ""
    same = sheet.get("signature") == sheet.get("base_signature")
    how = "the same miss as on HEAD" if same else f"another miss than HEAD's (base_signature {sheet.get('base_signature')})"
    return (f"missed on every merge-base run too ({counts[0]} of {counts[1]}, {how}): the relation does not hold "
            f"before the patch, so the miss is not the patch's; the catalog keeper fixes the relation, its "
            f"seeds or its adapters{_where(sheet)}")


def _base_words(sheet: Mapping) -> str:
    counts = side_counts(sheet, "base")
    if counts is None or counts[1] == 0:
        return ""
    return f", held on the merge base ({counts[1] - counts[0]} of {counts[1]} runs)"


def decide(sheet: dict, freeze_allowed: bool | None = True) -> Decision:
    """Apply §8 to one replay sheet: exactly one row fires, the first whose evidence holds.

    Two checks are no table row: a sheet whose runs judged the machine (``environment``, a
    module neither side has) is ``abort`` ``environment``, before row 1; a relation that
    misses on every merge-base run too (``base_fault``) is ``abort`` ``oracle_fault`` after
    row 2, before row 3: a miss is the patch's only when the base holds.

    ``freeze_allowed`` (the relation's policy) and the sheet's own ``freeze_allowed`` must both
    allow freezing (absent/None allows), else row 8 becomes reject ``freeze_not_allowed``.
    A freeze decision's ``fields`` carry lease_id, signature, expires_at and test_id.
    """
    rid = sheet.get("test_id") if isinstance(sheet, Mapping) else None
    rid = rid if isinstance(rid, str) and rid else None
    if isinstance(sheet, Mapping) and isinstance(sheet.get("environment"), str) and sheet["environment"]:
        decision, reason, _ = ENVIRONMENT
        return Decision(decision, reason, None, rid, sheet["environment"])
    missing = missing_fields(sheet)
    if missing:
        return _row(1, rid, ", ".join(missing))
    lease = sheet["lease"]
    if _blank(lease.get("id")) or lease.get("state") != "fresh":
        fence = lease.get("fence")
        why = "no lease id" if _blank(lease.get("id")) else f"lease state {lease.get('state')!r}"
        return _row(2, rid, why + (f"; {fence}" if fence else ""))
    fault = base_fault(sheet)
    if fault:
        decision, reason, _ = ORACLE_FAULT
        return Decision(decision, reason, None, rid, fault)
    if sheet["property_result"] == "fail":
        return _row(3, rid, "missed on every HEAD run" + _base_words(sheet))
    if sheet["fixture_pin"]["state"] == "mismatch":
        return _row(4, rid, "fixture pin mismatch")
    if sheet.get("predicate_state") == "quarantine":
        return _row(5, rid, "a candidate needs a second replay on a new lease")
    if sheet["signature"] != sheet["base_signature"]:
        return _row(6, rid, f"base_signature {sheet['base_signature']}")
    if not _expiry(sheet.get("expires_at")):
        return _row(7, rid, f"a proposed freeze needs a YYYY-MM-DD expires_at, got {sheet.get('expires_at')!r}")
    if not (_allowed(freeze_allowed) and _allowed(sheet.get("freeze_allowed"))):
        decision, reason, meaning = FREEZE_FORBIDDEN
        return Decision(decision, reason, 8, rid, meaning)
    carried = {"lease_id": lease["id"], "signature": sheet["signature"],
               "expires_at": sheet["expires_at"], "test_id": rid}
    return _row(8, rid, "propose a counted freeze", carried)


def worst(decisions: list[Decision]) -> Decision:
    """The PR's decision: the worst of its relations' (abort > reject > hold > freeze > pass)."""
    if not decisions:
        return Decision("pass", "no_relations_touched")
    return max(decisions, key=lambda d: ORDER.index(d.decision))
