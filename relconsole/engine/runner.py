"""Evaluate relations in worker processes with the counted freeze protocol (SPEC §6, §7 run).

One relation is run once; a hold is a pass. A miss with no live freeze is a reject.
A miss under a live freeze is rerun ``reruns`` times with new seeds and passes only
with ``pass_needed`` passes; every rerun is recorded. Subjects run in child processes
(``relconsole.engine.worker``) with a timeout, never in the caller's process.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from relconsole.engine.catalog import Relation
from relconsole.engine.decision import Decision
from relconsole.engine.freezes import LIVE, FreezeRow
from relconsole.engine.signatures import failure_class, signature


@dataclass
class RunRecord:
    """One evaluation: held or not, outputs compared, disagreeing keys, or the error."""

    held: bool
    seed: int
    source: Any = None
    followup: Any = None
    differing: list[str] = field(default_factory=list)
    note: str = ""
    error_type: str | None = None
    error: str = ""
    seconds: float = 0.0

    def describe(self) -> str:
        """One line: what missed and where."""
        if self.held:
            return "held"
        if self.error_type:
            return f"{self.error_type}: {self.error}"
        keys = ", ".join(self.differing[:4]) + (" …" if len(self.differing) > 4 else "")
        return f"disagree on {keys} ({self.note})" if keys else self.note or "missed"


@dataclass
class RelationResult:
    """A relation's result in this review: first run, reruns, freeze and verdict.

    ``outcome`` is ``held``, ``missed`` (after the freeze protocol) or ``blocked`` (an
    input it may not read: fails closed). ``verdict`` is the §7/§8 decision.
    """

    relation_id: str
    outcome: str
    verdict: Decision
    summary: str
    first: RunRecord | None = None
    reruns: list[RunRecord] = field(default_factory=list)
    freeze: FreezeRow | None = None
    signature: str | None = None

    @property
    def rerun_passes(self) -> int:
        return sum(1 for r in self.reruns if r.held)

    def to_json(self) -> dict:
        """The result as ``run --json`` prints it."""
        first = self.first.__dict__ if self.first else None
        return {"relation_id": self.relation_id, "outcome": self.outcome,
                "decision": self.verdict.decision, "reason": self.verdict.reason,
                "row": self.verdict.row, "summary": self.summary, "first_run": first,
                "reruns": [r.__dict__ for r in self.reruns],
                "freeze": dict(self.freeze.raw, state=self.freeze.state) if self.freeze else None,
                "signature": self.signature}


@dataclass
class RunPlan:
    """What a worker needs to evaluate one relation: tree, import paths, input file."""

    relation: Relation
    root: Path
    import_paths: list[str]
    input_kind: str  # "lease" or "seeds"
    input_path: Path
    fixture_pin: str  # sha256 of the input, for signatures
    timeout_seconds: float = 120.0
    clock: str | None = None  # ISO instant the worker's clock is frozen at; None: real time


def evaluate_once(plan: RunPlan, seed: int) -> RunRecord:
    """Run the relation once in a worker process; a crash or timeout is a miss."""
    request = {"root": str(plan.root), "import_paths": plan.import_paths,
               "relation": plan.relation.raw, "seed": seed, "clock": plan.clock,
               "input": {"kind": plan.input_kind, "path": str(plan.input_path)}}
    started = time.monotonic()
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["PYTHONHASHSEED"] = "0"  # str hashes, set order: the same every run
    env["TZ"] = "UTC"
    try:
        proc = subprocess.run([sys.executable, "-m", "relconsole.engine.worker"],
                              input=json.dumps(request, default=str), capture_output=True,
                              text=True, timeout=plan.timeout_seconds, env=env, cwd=plan.root)
    except subprocess.TimeoutExpired:
        return RunRecord(False, seed, error_type="timeout",
                         error=f"no answer within {plan.timeout_seconds:g} s",
                         seconds=time.monotonic() - started)
    seconds = time.monotonic() - started
    lines = [ln for ln in proc.stdout.splitlines() if ln.strip()]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        how = f"exit {proc.returncode}"
        if proc.returncode < 0:
            how = f"killed by {signal.Signals(-proc.returncode).name}"
        return RunRecord(False, seed, error_type="worker died", error=f"{how}: {tail}", seconds=seconds)
    reply = json.loads(lines[-1])
    if "error" in reply:
        err = reply["error"]
        return RunRecord(False, seed, error_type=err["type"],
                         error=f"{err['message']} ({err.get('where', '')})", seconds=seconds)
    return RunRecord(reply["held"], seed, reply["source"], reply["followup"],
                     reply["differing"], reply["note"], seconds=seconds)


def _base_seed(relation: Relation) -> int:
    return int(relation.params.get("seed", 0))


def run_relation(plan: RunPlan, freeze: FreezeRow | None) -> RelationResult:
    """The counted freeze protocol of §6 for one relation."""
    relation = plan.relation
    first = evaluate_once(plan, _base_seed(relation))
    if first.held:
        return RelationResult(relation.id, "held", Decision("pass", "held", None, relation.id),
                              "held", first, freeze=freeze)
    sig = signature(relation.id, relation.kind, plan.fixture_pin,
                    failure_class(first.error_type, first.differing))
    if freeze is None or freeze.state != LIVE:
        detail = f"; {freeze.why}" if freeze is not None else ""
        return RelationResult(relation.id, "missed",
                              Decision("reject", "property_fail", 3, relation.id,
                                       "missed with no live freeze" + detail),
                              f"missed: {first.describe()}{detail}", first, freeze=freeze,
                              signature=sig)
    seeds = [_base_seed(relation) + n for n in range(1, freeze.reruns + 1)]
    with ThreadPoolExecutor(max_workers=max(1, os.cpu_count() or 1)) as pool:
        reruns = list(pool.map(lambda seed: evaluate_once(plan, seed), seeds))
    passes = sum(1 for r in reruns if r.held)
    verdict_word = "PASS" if passes >= freeze.pass_needed else "FAIL"
    summary = f"frozen {passes}/{freeze.reruns}, needed {freeze.pass_needed}: {verdict_word}"
    if verdict_word == "PASS":
        decision = Decision("freeze", "frozen_pass", 8, relation.id, summary)
        return RelationResult(relation.id, "held", decision, summary, first, reruns, freeze, sig)
    reason = "property_fail" if passes == 0 else "freeze_fail"
    decision = Decision("reject", reason, 3 if passes == 0 else None, relation.id, summary)
    return RelationResult(relation.id, "missed", decision, summary, first, reruns, freeze, sig)


def run_all(plans: list[tuple[RunPlan, FreezeRow | None]],
            progress: Callable[[RelationResult], None] | None = None,
            workers: int | None = None) -> list[RelationResult]:
    """Run every plan in parallel across cores; ``progress`` is called as each finishes."""
    by_future = {}
    with ThreadPoolExecutor(max_workers=workers or max(1, os.cpu_count() or 1)) as pool:
        for index, (plan, freeze) in enumerate(plans):
            by_future[pool.submit(run_relation, plan, freeze)] = index
        done: dict[int, RelationResult] = {}
        for future in as_completed(by_future):
            result = future.result()
            done[by_future[future]] = result
            if progress:
                progress(result)
    return [done[i] for i in sorted(done)]
