"""One replay of a quarantine candidate (SPEC §10, §7, §5): under a newly acquired workspace
lease, in clean pooled or freshly created worktrees of HEAD and the merge base with the
oracle overlaid (§2), its fixture pin checked, each side's runs recorded seed by seed; with
the options, progress steps and refusal of a confirmation.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from relconsole.engine.oracle.catalog import Relation
from relconsole.engine.defaults import CONFIRM_RUNS
from relconsole.engine.errors import CommitRefused, RelconsoleError
from relconsole.engine.relations.pool import Cancel
from relconsole.engine.gate.replay.replay import default_workspace
from relconsole.engine.gate.replay.replayoptions import Progress, ReplayOptions, Shard
from relconsole.engine.gate.replay.replayrun import (Heartbeat, ReplaySide, confirm_fresh, dead_holder_hint, release_workspace,
                                              run_sides)
from relconsole.engine.gate.replay.replaysheet import (EnvironmentFault, environment_fault, miss_evidence, miss_signature,
                                                pin_fields, sheet_common, side_counts)
from relconsole.engine.gate.review import Review
from relconsole.engine.gate.runplans import plan_for
from relconsole.engine.gate.confirmstate import utc_now, state_dir
from relconsole.engine.relations.records import RunPlan, RunRecord
from relconsole.engine.gate.sheets import write_json
from relconsole.engine.relations.signatures import failure_class, signature
from relconsole.engine.repo.workspace import overlay_oracle
from relconsole.engine.repo.worktrees import WorktreePool
from relconsole.engine.gate.wslease.wslease import default_holder
from relconsole.engine.gate.wslease.wsleasestore import LeaseHeld, LeaseStore, WorkspaceLease, redact


DEFAULT_RUNS = CONFIRM_RUNS  # runs per side in each of the two replays


class ConfirmRefused(CommitRefused):
    """The candidate cannot be confirmed as asked (exit 64): it is rejected by validation,
    its input is not usable (§4 lease state, §3 seeds, a fixture pin mismatch), or its file
    changed on the oracle branch since it was replayed."""


@dataclass
class ConfirmProgress:
    """One step of a confirmation, for a progress bar: what, and how far (0..1) when known."""

    step: str
    fraction: float | None = None


@dataclass
class ConfirmOptions:
    """How to confirm: runs per side in each replay, the workspace lease, the lease store.

    ``workspace`` defaults to the replay workspace of this repository plus ``:confirm`` (so
    a confirmation and a replay of the relations do not refuse each other); ``holder`` to
    ``user@host:pid``; ``ttl_seconds`` is the lease TTL (renewed every third of it);
    ``first_only`` records the first replay and stops (the caller holds, §8 row 5).
    """

    runs: int = DEFAULT_RUNS
    workspace: str | None = None
    holder: str | None = None
    ttl_seconds: float = 300.0
    lease_url: str | None = None
    first_only: bool = False
    workers: int | None = None


class Run:
    """One candidate's replays: lease, worktrees, runs, sheet and record for each."""

    def __init__(self, review: Review, relation: Relation, digest: str, store: LeaseStore,
                 options: ConfirmOptions, progress, cancel: Cancel):
        self.review, self.relation, self.digest = review, relation, digest
        self.store, self.options = store, options
        self.progress, self.cancel = progress, cancel
        self.workspace = options.workspace or default_workspace(review, Shard()) + ":confirm"
        self.holder = options.holder or default_holder()
        self.share = (0.0, 1.0)  # the part of the whole this replay's runs fill
        self.runs = options.runs
        self.seeds: list[int] | None = None  # None: drawn (the first replay); else the first's, again

    def step(self, text: str, done: float | None = None) -> None:
        if self.progress is not None:
            low, high = self.share
            self.progress(ConfirmProgress(text, None if done is None else low + (high - low) * done))

    def replay(self, which: str, fresh: bool, after: dict | None = None) -> dict:
        """One replay (``which``: first|second) under a newly acquired workspace lease; its record.

        ``after`` is the first replay's lease: the second must run under another one.
        """
        review, relation = self.review, self.relation
        self.step(f"{which} replay of {relation.id}: acquiring workspace lease {self.workspace}", 0.0)
        try:
            lease = self.store.acquire(self.workspace, self.holder, self.options.ttl_seconds)
        except LeaseHeld as exc:
            exc.args = (str(exc) + dead_holder_hint(exc.lease),)
            raise
        heartbeat = Heartbeat(self.store, lease, self.options.ttl_seconds)
        heartbeat.start()
        pool = WorktreePool(review.repo, self.workspace, fresh)
        try:
            if after is not None and after.get("id") == lease.id:
                raise RelconsoleError(f"the second replay got the first replay's lease {lease.id}; "
                                      "a second replay needs a new workspace lease")
            sides = []
            for name, commit in (("head", review.head_sha), ("base", review.merge_base)):
                kind = "freshly created" if fresh else "clean pooled"
                self.step(f"{which} replay: {kind} worktree of {name} at {commit[:12]}", 0.0)
                tree = pool.checkout(name, commit)
                overlay_oracle(review.repo, commit, review.oracle_dir, review.layout.protected, tree,
                               review.layout.generated)
                sides.append(ReplaySide(name, commit, tree))
            plans = {relation.id: {s.name: plan_for(review, relation, s.tree) for s in sides}}
            pin = pin_fields(review, plans[relation.id]["head"], plans[relation.id]["base"], relation)
            if pin["state"] != "match":
                raise ConfirmRefused(f"{relation.id}: fixture pin mismatch for {pin['path']} (expected "
                                     f"{pin['expected']}, HEAD {pin['actual']}, base {pin['actual_base']}); "
                                     "a candidate is confirmed against the pinned fixtures only")
            options = ReplayOptions(runs=self.runs, seeds=self.seeds, workspace=self.workspace, holder=self.holder,
                                    ttl_seconds=self.options.ttl_seconds, workers=self.options.workers,
                                    cancel=self.cancel)

            def ran(p: Progress) -> None:
                self.step(f"{which} replay: {p.label} ({p.done}/{p.total})", p.done / p.total)

            records = run_sides(plans, sides, options, heartbeat, ran)[relation.id]
            fault = environment_fault(records["head"], records["base"])
            if fault:  # §7: the machine, not the candidate; recording it would let two replays "agree"
                raise EnvironmentFault(f"{relation.id}: abort (environment) in the {which} replay: {fault}; "
                                       "nothing recorded")
            heartbeat.stop()
            final = confirm_fresh(self.store, lease, heartbeat)
        finally:
            heartbeat.stop()
            pool.release()
            release_workspace(self.store, self.workspace, self.holder)
        return self._record(which, fresh, plans[relation.id], records, final, pin, options)

    def _record(self, which: str, fresh: bool, plans: dict[str, RunPlan], records: dict[str, list[RunRecord]],
                lease: WorkspaceLease, pin: dict, options: ReplayOptions) -> dict:
        review, relation = self.review, self.relation
        pin_digest = plans["head"].fixture_pin
        sides = {name: _side(commit, sorted(records[name], key=lambda r: r.seed), relation, pin_digest)
                 for name, commit in (("head", review.head_sha), ("base", review.merge_base))}
        lease_json = {"id": lease.id, "holder": lease.holder, "workspace": lease.workspace,
                      "generation": lease.generation, "store": redact(self.store.url)}
        sheet = sheet_common(review, relation, options)
        head, base = records["head"], records["base"]
        head_misses, base_misses = [r for r in head if not r.held], [r for r in base if not r.held]
        sheet.update({
            "predicate_state": "quarantine", "replay": which,
            "property_result": "fail" if head and not any(r.held for r in head) else "pass",
            "fixture_pin": pin, "signature": sides["head"]["signature"],
            "base_signature": sides["base"]["signature"],
            "runs": {"head": side_counts(review.head_sha, head), "base": side_counts(review.merge_base, base)},
            "evidence": {"head": miss_evidence(head_misses), "base": miss_evidence(base_misses)},
            "lease": dict(lease_json, state="fresh"),
        })
        self.step(f"{which} replay: recording", 1.0)
        return {"replay": which, "head": review.head_sha, "merge_base": review.merge_base,
                "oracle": review.oracle_sha, "runs": options.runs,
                "worktree": "fresh" if fresh else "pooled", "lease": lease_json, "at": utc_now(),
                "sides": sides, "sheet": str(self._sheet_path(which, sheet))}

    def _sheet_path(self, which: str, sheet: dict) -> Path:
        """Write the replay's §7 sheet beside the state file; returns its path."""
        return write_json(state_dir(self.review) / f"{self.digest}.{which}.sheet.json", sheet)


def _side(commit: str, records: list[RunRecord], relation: Relation, pin: str) -> dict:
    """One side of one replay: its outcome (held|missed|mixed), counts, signature, and each run."""
    misses = [r for r in records if not r.held]
    outcome = "held" if not misses else "missed" if len(misses) == len(records) else "mixed"
    per_seed = [{"seed": r.seed, "held": r.held,
                 "signature": None if r.held else signature(relation.id, relation.kind, pin,
                                                            failure_class(*r.failure_parts())),
                 "describe": r.describe()[:300]} for r in records]
    return {"commit": commit, "outcome": outcome, "runs": len(records), "misses": len(misses),
            "signature": miss_signature(relation, pin, misses) if misses else "none",
            "per_seed": per_seed}
