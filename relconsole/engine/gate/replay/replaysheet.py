"""A relation's §7 replay sheet: the fields every sheet starts with, the runs on HEAD and on
the merge base, the first miss's evidence and signature, the fixture pin on both sides,
the sandbox the runs had, and when the runs judged the machine instead of the patch (an
environment fault, §7 abort).
"""

from __future__ import annotations

import collections
import datetime as dt
import json
from pathlib import Path

from relconsole.engine.oracle.catalog import Relation
from relconsole.engine.errors import RelconsoleError
from relconsole.engine.gate.review import Review
from relconsole.engine.relations.records import RunPlan, RunRecord
from relconsole.engine.relations.signatures import failure_class, signature
from relconsole.engine.gate.wslease.wslease import default_holder
from relconsole.engine.gate.replay.replayoptions import ReplayOptions


SHEET_VERSION = 1


EVIDENCE_CHARS = 4000  # per canonical output kept in a sheet


class EnvironmentFault(RelconsoleError):
    """The runs judged the machine, not the patch (§7 abort, environment): exit 3."""


IMPORT_ERRORS = ("ImportError", "ModuleNotFoundError")


def environment_fault(head: list[RunRecord], base: list[RunRecord]) -> str | None:
    """Why the runs of one relation on HEAD and on the merge base are no evidence about the
    patch (§7: abort, environment), else None: a run the worker classed an environment fault
    (a module neither in the tree nor installed), or every run on both sides failing to import
    (ImportError, ModuleNotFoundError): the code fails the same way before and after the patch,
    as when the worktrees lack the subject's files."""
    fault = next((r.error for r in head + base if r.error_type == "environment"), None)
    if fault is not None:
        return fault
    if head and base and all(r.error_type in IMPORT_ERRORS for r in head + base):
        return (f"both HEAD and the merge base fail to import the subject ({head[0].describe()[:300]}): "
                "an environment fault, not evidence about the patch")
    return None


def miss_signature(relation: Relation, pin: str, misses: list[RunRecord]) -> str:
    """The signature of the most common failure class among ``misses`` (ties: the first sorted)."""
    classes = collections.Counter(failure_class(*r.failure_parts()) for r in misses)
    top = max(classes.values())
    failure = sorted(c for c, n in classes.items() if n == top)[0]
    return signature(relation.id, relation.kind, pin, failure)


def pin_fields(review: Review, plan_head: RunPlan, plan_base: RunPlan, relation: Relation) -> dict:
    """§4 fixture pin on both sides: the pinned digest (pins.json, else the lease's) must be read."""
    rel_path = Path(plan_head.input_path).relative_to(plan_head.root).as_posix()
    expected = _pinned(review, rel_path, relation)
    state = "match" if plan_head.fixture_pin == plan_base.fixture_pin and \
        expected in (None, plan_head.fixture_pin) else "mismatch"
    return {"state": state, "path": rel_path, "expected": expected or plan_base.fixture_pin,
            "actual": plan_head.fixture_pin, "actual_base": plan_base.fixture_pin}


def _pinned(review: Review, rel_path: str, relation: Relation) -> str | None:
    try:
        pins = json.loads((review.oracle_dir / review.layout.pins).read_text())
    except (OSError, ValueError):
        pins = {}
    value = pins.get(rel_path) if isinstance(pins, dict) else None
    if isinstance(value, str) and value.startswith("sha256:"):
        return value.split(":", 1)[1]
    if relation.lease_id:
        status = review.lease(relation.lease_id)
        return status.lease.sha256 if status and status.lease else None
    return None


def _sheet(review: Review, relation: Relation, plans: dict[str, RunPlan], records: dict[str, list[RunRecord]],
           options: ReplayOptions, from_run: dict[str, int] | None = None) -> dict:
    """The sheet of ``relation`` from its ``records`` on both sides; ``from_run``: how many of
    each side's records the review's run phase made (``replay.run_phase_evidence``)."""
    from_run = from_run or {}
    head, base = records["head"], records["base"]
    plan_head, plan_base = plans["head"], plans["base"]
    first = review.results[relation.id].first
    head_misses = [r for r in head if not r.held] or ([first] if first and not first.held else [])
    base_misses = [r for r in base if not r.held]
    pin = plan_head.fixture_pin
    sheet = sheet_common(review, relation, options)
    sheet.update({
        "property_result": "fail" if head and all(not r.held for r in head) else "pass",
        "fixture_pin": pin_fields(review, plan_head, plan_base, relation),
        "signature": miss_signature(relation, pin, head_misses) if head_misses else None,
        "base_signature": miss_signature(relation, pin, base_misses) if base_misses else "none",
        "runs": {"head": side_counts(review.head_sha, head, from_run.get("head", 0)),
                 "base": side_counts(review.merge_base, base, from_run.get("base", 0))},
        "evidence": {"head": miss_evidence(head_misses), "base": miss_evidence(base_misses),
                     **input_evidence(first)},
        "sandbox": _sandbox(head + base),
    })
    fault = environment_fault(head, base)
    if fault:  # not evidence about the patch (§7): no signature, so the table aborts (row 1)
        sheet.update(signature=None, environment=fault)
    return sheet


def _sandbox(records: list[RunRecord]) -> str:
    """The weakest isolation any of ``records`` ran under (``bwrap`` only if all did), §7."""
    kinds = {(r.run or {}).get("sandbox") for r in records}
    return "bwrap" if kinds == {"bwrap"} else "process" if "process" in kinds else "none"


def blocked_sheet(review: Review, rid: str, options: ReplayOptions) -> dict:
    """A relation that could not run (its lease or seeds fail closed, §4): a deterministic fail."""
    relation = review.catalog.get(rid)
    result = review.results[rid]
    sheet = sheet_common(review, relation, options)
    failure = f"blocked: {result.verdict.reason}"
    sheet.update({
        "property_result": "fail",
        "fixture_pin": {"state": "mismatch" if "drifted" in result.summary else "match"},
        "signature": signature(rid, relation.kind, "", failure), "base_signature": "none",
        "runs": {"head": side_counts(review.head_sha, []), "base": side_counts(review.merge_base, [])},
        "evidence": {"blocked": result.summary},
    })
    return sheet


def sheet_common(review: Review, relation: Relation, options: ReplayOptions) -> dict:
    """The fields every §7 sheet of ``relation`` starts with (test id, kind, lease shell,
    freeze policy and its expiry, commits); the caller fills in the runs and verdicts."""
    policy = relation.freeze
    expires = review.today + dt.timedelta(days=policy.max_days)
    return {"relconsole_sheet": SHEET_VERSION, "test_id": relation.id, "kind": relation.kind,
            "catalog": review.layout.catalog, "catalog_line": relation.line,
            "lease": {"id": None, "holder": options.holder or default_holder(), "state": None,
                      "workspace": options.workspace, "generation": None, "store": None},
            "predicate_state": "active", "expires_at": expires.isoformat(),
            "freeze_allowed": policy.allowed, "shard": str(options.shard),
            "head": review.head_sha, "merge_base": review.merge_base, "oracle": review.oracle_sha,
            "created_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")}


def side_counts(commit: str, records: list[RunRecord], from_run: int = 0) -> dict:
    """``{commit, runs, misses}`` of one side's run records (a sheet's ``runs.<side>``), and
    ``from_run`` when some of them were the review's run phase's (the gate's)."""
    counts = {"commit": commit, "runs": len(records), "misses": sum(1 for r in records if not r.held)}
    return counts | ({"from_run": from_run} if from_run else {})


def miss_evidence(misses: list[RunRecord]) -> dict | None:
    """The first miss: what disagreed, and the two canonical outputs (trimmed)."""
    if not misses:
        return None
    record = misses[0]
    return {"describe": record.describe(), "differing": record.differing[:50],
            "error_type": record.error_type, "error": record.error[:EVIDENCE_CHARS],
            "source": _trim(record.source), "followup": _trim(record.followup), "seed": record.seed}


def input_evidence(first: RunRecord | None) -> dict:
    """What the review's first run drew and shrank (SPEC §3, §7): ``drawn`` (its summary: run
    seed, inputs tried, the input it missed on), ``shrunk`` (the smallest input that still
    misses and its outputs or error: what the replay runs judged on both sides) and ``whole``
    (the miss on the whole input, before shrinking). {} when it drew and shrank nothing."""
    if first is None:
        return {}
    out = {}
    if first.drawn:
        out["drawn"] = first.drawn
    if first.shrunk:
        out["shrunk"] = {k: _trim(v) if k in ("input", "source", "followup") else v for k, v in first.shrunk.items()}
        out["whole"] = miss_evidence([first])
    return out


def _trim(value) -> object:
    text = json.dumps(value, sort_keys=True, default=str)
    return value if len(text) <= EVIDENCE_CHARS else text[:EVIDENCE_CHARS] + " …"
