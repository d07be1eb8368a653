"""The decision table (SPEC §8) and the PR's overall decision.

``decide(sheet)`` maps one replay sheet to exactly one row, checked in order.
``run_verdict`` maps a local run's result (§7 ``run``: a miss with no live freeze is a
reject right there) to a decision and the row it corresponds to.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from relconsole.engine.errors import (EXIT_ABORT, EXIT_HOLD, EXIT_PASS, EXIT_REJECT)

ORDER = ("pass", "freeze", "hold", "reject", "abort")  # worst last
EXIT_CODES = {"pass": EXIT_PASS, "freeze": EXIT_PASS, "reject": EXIT_REJECT,
              "hold": EXIT_HOLD, "abort": EXIT_ABORT}
REQUIRED = ("test_id", "property_result", "fixture_pin", "lease", "signature", "base_signature")


@dataclass(frozen=True)
class Decision:
    """One decision: ``decision`` word, ``reason`` code, ``row`` of §8 (None: not a table row).

    ``relation_id`` names the relation it is about, ``detail`` adds what a reviewer reads.
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


def decide(sheet: dict, freeze_allowed: bool = True) -> Decision:
    """Apply §8 to one replay sheet; exactly one row fires, in table order."""
    rid = sheet.get("test_id")
    missing = [k for k in REQUIRED if sheet.get(k) in (None, "")]
    if missing:
        return Decision("abort", "missing_fields", 1, rid, ", ".join(missing))
    lease = sheet["lease"] if isinstance(sheet["lease"], dict) else {}
    if not lease.get("id") or lease.get("state") != "fresh":
        return Decision("abort", "lease_not_fresh", 2, rid)
    if sheet["property_result"] == "fail":
        return Decision("reject", "property_fail", 3, rid)
    pin = sheet["fixture_pin"] if isinstance(sheet["fixture_pin"], dict) else {}
    if pin.get("state") == "mismatch":
        return Decision("reject", "fixture_drift", 4, rid)
    if sheet.get("predicate_state") == "quarantine":
        return Decision("hold", "second_replay_required", 5, rid)
    if sheet["signature"] != sheet["base_signature"]:
        return Decision("reject", "miss_not_on_base", 6, rid)
    if not sheet.get("expires_at"):
        return Decision("abort", "freeze_missing_expiry", 7, rid)
    if not freeze_allowed:
        return Decision("reject", "freeze_not_allowed", 8, rid)
    carried = {"lease_id": lease.get("id"), "signature": sheet["signature"],
               "expires_at": sheet["expires_at"], "test_id": rid}
    return Decision("freeze", "intermittent_on_base", 8, rid, fields=carried)


def worst(decisions: list[Decision]) -> Decision:
    """The PR's decision: the worst of its relations' (abort > reject > hold > freeze > pass)."""
    if not decisions:
        return Decision("pass", "no_relations_touched")
    return max(decisions, key=lambda d: ORDER.index(d.decision))
