"""Replay (SPEC §7): classify each miss by running it on HEAD and on the merge base.

For every touched relation that missed (or was blocked), ``replay`` runs it ``runs``
times on HEAD and ``runs`` times on the merge base, each side in a clean worktree of
that commit with the oracle's protected files overlaid (§2); the runs the caller's run
phase has just made with drawn seeds count among them (``run_phase_evidence``), all under
one workspace lease
(§5) kept alive by a heartbeat. One replay sheet per relation is written to the
artifacts directory, and only after a last check that the lease is still ours and
fresh: a run that lost its lease (expired, taken over, store unreachable) writes no
sheet and aborts (exit 3). Worktrees go back to the pool (or are removed) afterwards,
on failure and on Ctrl-C too.

The options live in ``replayoptions``, running the sides under the lease in ``replayrun``,
and what a sheet holds in ``replaysheet``.
"""

from __future__ import annotations

import dataclasses

import datetime as dt
import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from relconsole.engine.decision import Decision, decide, worst
from relconsole.engine.errors import RelconsoleError, UsageError
from relconsole.engine.gate.review import Replayed, Review
from relconsole.engine.gate.reviewrun import run_review
from relconsole.engine.gate.runplans import plan_for
from relconsole.engine.relations.records import RunPlan, RunRecord
from relconsole.engine.gate.sheets import manifest_name, write_json
from relconsole.engine.repo.workspace import overlay_oracle
from relconsole.engine.repo.worktrees import WorktreePool, slug
from relconsole.engine.gate.wslease.wslease import default_holder, open_store
from relconsole.engine.gate.wslease.wsleasestore import LeaseHeld, LeaseStore, WorkspaceLease
from relconsole.engine.gate.replay.replayoptions import Progress, ReplayOptions, Shard
from relconsole.engine.gate.replay.replayrun import (Heartbeat, ReplaySide, confirm_fresh, dead_holder_hint, release_workspace,
                                              run_sides)
from relconsole.engine.gate.replay.replaysheet import blocked_sheet, _sheet

SHEET_SUFFIX = ".sheet.json"


@dataclass
class ReplayOutcome:
    """What a replay produced: sheets by relation id, their §8 decisions, where they are."""

    sheets: dict[str, dict]
    decisions: dict[str, Decision]
    paths: dict[str, Path]
    artifacts: Path
    lease: WorkspaceLease | None
    unreplayed: dict[str, Decision] = field(default_factory=dict)  # run verdicts a replay cannot change

    def overall(self) -> Decision:
        """The worst decision of this replay's sheets and of the touched relations it did not
        replay because a replay proves nothing more (a vacuous hold, an environment or oracle
        fault): pass only when nothing missed."""
        decided = [*self.decisions.values(), *self.unreplayed.values()]
        if not decided:
            return Decision("pass", "no_missed_relations")
        return worst(decided)


def default_workspace(review: Review, shard: Shard) -> str:
    """``<host>:<repository path>`` plus the shard: the worktree pool this replay uses."""
    host = os.uname().nodename
    where = hashlib.sha256(str(Path(review.repo.common_dir).resolve()).encode()).hexdigest()[:12]
    suffix = f":shard{shard.index}of{shard.total}" if shard.total > 1 else ""
    return f"{host}:{where}{suffix}"


def default_artifacts(review: Review) -> Path:
    return Path(review.repo.common_dir).resolve() / "relconsole" / "replay" / review.head_sha[:12]


REPLAYED_HOLDS = ("intermittent_on_base",)  # a hold a replay classifies (row 8 or 6); the others it cannot


def to_replay(review: Review, shard: Shard) -> list[str]:
    """The touched relations of ``shard`` whose run in ``review.results`` blames the patch (a
    reject: a miss, an output no adapter compares, an input that fails closed) or missed on
    the merge base too (``intermittent_on_base``). Not a vacuous run (hold: replaying proves
    nothing more), nor an abort (an environment or oracle fault: a replay would only prove
    the same ImportError ten times)."""
    ids = shard.select(review.touched_relations())
    return [rid for rid in ids if rid in review.results and _replayable(review.results[rid])]


def _replayable(result) -> bool:
    verdict = result.verdict
    return result.outcome != "held" and (verdict.decision == "reject" or verdict.reason in REPLAYED_HOLDS)


def replay(review: Review, store: LeaseStore, options: ReplayOptions,
           progress: Callable[[Progress], None] | None = None) -> ReplayOutcome:
    """Replay the missed touched relations of ``options.shard`` (§7) and write their sheets.

    Relations not run yet are run first (``run_review``). Raises LeaseHeld (another
    holder has the workspace), LeaseLost or StoreUnavailable (abort, exit 3; no sheet
    written), GitError (worktrees). Returns the sheets and their §8 decisions.
    """
    if review.catalog is None:
        raise RelconsoleError("the catalog did not load; fix it before replaying")
    mine = options.shard.select(review.touched_relations())
    pending = [rid for rid in mine if rid not in review.results]
    if pending:
        run_review(review, pending, workers=options.workers)
    ids = to_replay(review, options.shard)
    artifacts = (options.artifacts or default_artifacts(review)).resolve()
    if options.runs < 1:
        raise UsageError("--runs must be at least 1")
    _check_writable(artifacts)
    workspace = options.workspace or default_workspace(review, options.shard)
    holder = options.holder or default_holder()
    try:
        lease = store.acquire(workspace, holder, options.ttl_seconds)
    except LeaseHeld as exc:
        exc.args = (str(exc) + dead_holder_hint(exc.lease),)
        raise
    heartbeat = Heartbeat(store, lease, options.ttl_seconds)
    heartbeat.start()
    pool = WorktreePool(review.repo, workspace, options.fresh_worktrees)
    try:
        _clear_sheets(artifacts, mine)
        sheets = _replay_all(review, ids, pool, options, heartbeat, progress) if ids else {}
        heartbeat.stop()
        final = confirm_fresh(store, lease, heartbeat)
        for sheet in sheets.values():
            sheet["lease"].update(state="fresh", id=final.id, holder=final.holder, workspace=workspace,
                                  generation=final.generation, store=store.url)
        paths = _write_sheets(artifacts, sheets)
        _write_manifest(artifacts, review, options.shard, mine, sheets, final)
    finally:
        heartbeat.stop()
        pool.release()
        release_workspace(store, workspace, holder)
    decisions = {rid: decide(sheet) for rid, sheet in sheets.items()}
    for rid in mine:
        review.replays.pop(rid, None)
    for rid, sheet in sheets.items():
        review.replays[rid] = Replayed(sheet, decisions[rid], paths.get(rid))
    unreplayed = {rid: review.results[rid].verdict for rid in mine if rid in review.results and rid not in ids
                  and review.results[rid].verdict.decision not in ("pass", "freeze")}
    return ReplayOutcome(sheets, decisions, paths, artifacts, final, unreplayed)


def _clear_sheets(artifacts: Path, ids: list[str]) -> None:
    """Remove earlier sheets of this shard's relations: they would claim a lease no longer held."""
    for rid in ids:
        (artifacts / f"{slug(rid)}{SHEET_SUFFIX}").unlink(missing_ok=True)


def _check_writable(artifacts: Path) -> None:
    """Fail before any run when the sheets could not be written. Raises UsageError (64)."""
    try:
        artifacts.mkdir(parents=True, exist_ok=True)
        probe = artifacts / f".relconsole-probe-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise UsageError(f"cannot write replay sheets to {artifacts}: {exc.strerror or exc}") from None


def _write_sheets(artifacts: Path, sheets: dict[str, dict]) -> dict[str, Path]:
    return {rid: write_json(artifacts / f"{slug(rid)}{SHEET_SUFFIX}", sheet) for rid, sheet in sheets.items()}


def _write_manifest(artifacts: Path, review: Review, shard: Shard, mine: list[str], sheets: dict,
                    lease: WorkspaceLease) -> Path:
    """What this replay covered, so ``decide`` can tell "nothing missed" from "nothing arrived".

    Manifests of other replays in the same directory (another head, another shard count)
    are removed with their sheets' claim: this directory now holds this replay's evidence.
    """
    for other in artifacts.glob("replay-shard-*.json"):
        try:
            data = json.loads(other.read_text())
        except (OSError, ValueError):
            data = {}
        if not isinstance(data, dict) or data.get("head") != review.head_sha or data.get("shard_total") != shard.total:
            listed = data.get("sheets") if isinstance(data, dict) and isinstance(data.get("sheets"), list) else []
            for rid in listed:
                (artifacts / f"{slug(str(rid))}{SHEET_SUFFIX}").unlink(missing_ok=True)
            other.unlink(missing_ok=True)
    return write_json(artifacts / manifest_name(shard.index, shard.total), {
        "relconsole_replay": 1, "shard_index": shard.index, "shard_total": shard.total,
        "head": review.head_sha, "merge_base": review.merge_base, "relations": mine,
        "sheets": sorted(sheets), "workspace": lease.workspace, "generation": lease.generation,
        "created_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")})


def _replay_all(review: Review, ids: list[str], pool: WorktreePool, options: ReplayOptions,
                heartbeat: Heartbeat, progress) -> dict[str, dict]:
    """Sheets by relation id for ``ids``: a blocked one's at once, the others' from runs on both
    sides (with ``options.count_run_phase``, the run phase's runs among them: ``run_phase_evidence``)."""
    runnable = [rid for rid in ids if review.results[rid].outcome != "blocked"]
    sheets = {rid: blocked_sheet(review, rid, options) for rid in ids if rid not in runnable}
    if not runnable:
        return sheets
    sides = []
    for name, commit in (("head", review.head_sha), ("base", review.merge_base)):
        tree = pool.checkout(name, commit)
        overlay_oracle(review.repo, commit, review.oracle_dir, review.layout.protected, tree,
                       review.layout.generated)
        sides.append(ReplaySide(name, commit, tree))
    # a miss on a drawn input, or one shrunk, replays on that input on both sides
    given = {rid: (review.results[rid].first.recorded_input() if review.results[rid].first else None)
             for rid in runnable}
    plans = {rid: {side.name: dataclasses.replace(plan_for(review, review.catalog.get(rid), side.tree),
                                                  given=given[rid]) for side in sides}
             for rid in runnable}
    carried = {rid: run_phase_evidence(review, rid, plans[rid]["head"], options) for rid in runnable} \
        if options.count_run_phase else {}
    records = run_sides(plans, sides, options, heartbeat, progress, carried)
    for rid in runnable:
        sheets[rid] = _sheet(review, review.catalog.get(rid), plans[rid], records[rid], options,
                             {side: len(kept) for side, kept in carried.get(rid, {}).items()})
    return sheets


def run_phase_evidence(review: Review, rid: str, plan: RunPlan, options: ReplayOptions) -> dict[str, list[RunRecord]]:
    """``{"head": [...], "base": [...]}``: the runs the review's run phase made of ``rid`` that
    count as runs of this replay (SPEC §7: several runs on each side, on its committed tree with
    the oracle overlaid; the run phase's run trees are those trees).

    HEAD: a counted freeze's reruns first (each a run of its own with a new seed and a new
    server, as a replay run is), then the first run (the miss that asked for the replay), at
    most ``options.runs``. Base: the merge base's check (``basecheck``), which ran the first
    run's seed there, when the first run is among HEAD's: both sides then keep the same
    inputs run for run. Nothing when the caller gave seeds to repeat (a second replay repeats
    the first's runs, all of them), nor when the replay judges an input of its own (a plan's
    ``given``: a drawn or shrunk input the run phase's runs did not all judge); with a catalog
    seed only the runs made with that seed.
    Only for results the caller's own run phase has just made with drawn seeds
    (``ReplayOptions.count_run_phase``: the gate), never a console run that replayed a
    recorded seed."""
    result = review.results.get(rid)
    if options.seeds or result is None or result.first is None or getattr(plan, "given", None) is not None:
        return {"head": [], "base": []}
    records = [*result.reruns, result.first]
    if plan.replay_seed is not None:
        records = [r for r in records if r.seed == plan.replay_seed]
    head = [r for r in records if not r.blocked][:options.runs]
    base = result.base
    same = base is not None and not base.blocked and any(r is result.first for r in head) and \
        base.seed == result.first.seed
    return {"head": head, "base": [base] if same else []}


def load_workspace_leases(review: Review, url: str | None = None) -> None:
    """Fill ``review.workspace_leases`` from the lease store (§5); an unreachable store
    leaves the list empty and says why in ``review.lease_store_note`` (never raises)."""
    try:
        store = open_store(url, review.repo.common_dir)
        try:
            review.workspace_leases = store.list()
        finally:
            store.close()
        review.lease_store_note = ""
    except RelconsoleError as exc:
        review.workspace_leases = []
        review.lease_store_note = f"workspace leases unavailable: {exc.one_line()}"
