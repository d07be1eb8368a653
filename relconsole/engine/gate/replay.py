"""Replay (SPEC §7): classify each miss by running it on HEAD and on the merge base.

For every touched relation that missed (or was blocked), ``replay`` runs it ``runs``
times on HEAD and ``runs`` times on the merge base, each side in a clean worktree of
that commit with the oracle's protected files overlaid (§2), under one workspace lease
(§5) kept alive by a heartbeat. One replay sheet per relation is written to the
artifacts directory, and only after a last check that the lease is still ours and
fresh: a run that lost its lease (expired, taken over, store unreachable) writes no
sheet and aborts (exit 3). Worktrees go back to the pool (or are removed) afterwards,
on failure and on Ctrl-C too.
"""

from __future__ import annotations

import collections
import datetime as dt
import hashlib
import json
import os
import socket
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from relconsole.engine.oracle.catalog import Relation
from relconsole.engine.decision import Decision, decide, worst
from relconsole.engine.errors import RelconsoleError, UsageError
from relconsole.engine.gate.review import Replayed, Review, plan_for, run_review
from relconsole.engine.relations.pool import Cancel, Worker  # noqa: F401 (Cancel: API)
from relconsole.engine.relations.records import RunPlan, RunRecord
from relconsole.engine.relations.runner import draw_seed
from relconsole.engine.gate.sheets import manifest_name, write_json
from relconsole.engine.relations.signatures import failure_class, signature
from relconsole.engine.repo.workspace import overlay_oracle
from relconsole.engine.repo.worktrees import WorktreePool, slug
from relconsole.engine.gate.wslease import LeaseHeld, LeaseStore, WorkspaceLease, default_holder, open_store

SHEET_SUFFIX = ".sheet.json"
SHEET_VERSION = 1
EVIDENCE_CHARS = 4000  # per canonical output kept in a sheet


class LeaseLost(RelconsoleError):
    """The workspace lease ended while replay ran (expired, taken over, store gone): abort."""


class ReplayCancelled(RelconsoleError):
    """The replay was cancelled (the console quit, Ctrl-C): no sheet written, lease released."""


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


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` of ``total`` (1-based): a CI matrix splits the relations with it."""

    index: int = 1
    total: int = 1

    @classmethod
    def parse(cls, text: str) -> "Shard":
        """``"K/N"`` with 1 <= K <= N. Raises UsageError otherwise."""
        try:
            k, n = (int(part) for part in text.split("/"))
        except ValueError:
            raise UsageError(f"--shard {text!r}: expected K/N, for example 1/4") from None
        if not 1 <= k <= n:
            raise UsageError(f"--shard {text!r}: K must be between 1 and N")
        return cls(k, n)

    def select(self, ids: list[str]) -> list[str]:
        """This shard's ids: every N-th of ``ids`` sorted, starting at the K-th.

        Sorting makes the split the same on every machine whatever order the ids came in.
        """
        ordered = sorted(ids)
        mine = set(ordered[self.index - 1::self.total])
        return [rid for rid in ids if rid in mine]

    def __str__(self) -> str:
        return f"{self.index}/{self.total}"


@dataclass
class ReplayOptions:
    """How to replay: runs per side, the workspace lease, where sheets go.

    ``ttl_seconds`` is the workspace lease's TTL (renewed every third of it);
    ``artifacts`` defaults to ``<git dir>/relconsole/replay/<head sha 12>``; ``seeds``: the run
    seeds to replay, one per run (a second replay repeats the first's); None draws ``runs``
    seeds, the same on HEAD and on the merge base (SPEC §7).
    """

    runs: int = 5
    workspace: str | None = None
    holder: str | None = None
    ttl_seconds: float = 300.0
    artifacts: Path | None = None
    shard: Shard = field(default_factory=Shard)
    fresh_worktrees: bool = False
    workers: int | None = None
    cancel: Cancel = field(default_factory=Cancel)
    seeds: list[int] | None = None


@dataclass
class Progress:
    """One step of a replay, for a progress bar: ``done`` of ``total`` runs, and what."""

    done: int
    total: int
    label: str


@dataclass
class ReplayOutcome:
    """What a replay produced: sheets by relation id, their §8 decisions, where they are."""

    sheets: dict[str, dict]
    decisions: dict[str, Decision]
    paths: dict[str, Path]
    artifacts: Path
    lease: WorkspaceLease | None

    def overall(self) -> Decision:
        """The worst decision of this replay's sheets (pass when nothing missed)."""
        if not self.decisions:
            return Decision("pass", "no_missed_relations")
        return worst(list(self.decisions.values()))


def default_workspace(review: Review, shard: Shard) -> str:
    """``<host>:<repository path>`` plus the shard: the worktree pool this replay uses."""
    host = os.uname().nodename
    where = hashlib.sha256(str(Path(review.repo.common_dir).resolve()).encode()).hexdigest()[:12]
    suffix = f":shard{shard.index}of{shard.total}" if shard.total > 1 else ""
    return f"{host}:{where}{suffix}"


def default_artifacts(review: Review) -> Path:
    return Path(review.repo.common_dir).resolve() / "relconsole" / "replay" / review.head_sha[:12]


def to_replay(review: Review, shard: Shard) -> list[str]:
    """The touched relations of ``shard`` that missed or were blocked in ``review.results``."""
    ids = shard.select(review.touched_relations())
    return [rid for rid in ids if rid in review.results and review.results[rid].outcome != "held"]


class Heartbeat(threading.Thread):
    """Renews the workspace lease every third of its TTL; remembers why it could not."""

    def __init__(self, store: LeaseStore, lease: WorkspaceLease, ttl: float):
        super().__init__(daemon=True, name="relconsole-lease-heartbeat")
        self.store, self.lease, self.ttl = store, lease, ttl
        self.stop_event = threading.Event()
        self.lost: str | None = None

    def run(self) -> None:
        while not self.stop_event.wait(self.ttl / 3):
            try:
                self.lease = self.store.renew(self.lease.workspace, self.lease.holder, self.ttl)
            except RelconsoleError as exc:
                self.lost = exc.one_line()
                return

    def stop(self) -> None:
        self.stop_event.set()
        self.join(timeout=5)


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
    return ReplayOutcome(sheets, decisions, paths, artifacts, final)


def release_workspace(store: LeaseStore, workspace: str, holder: str) -> None:
    """Release ``holder``'s workspace lease; an expired or unreachable one is left to its TTL."""
    try:
        store.release(workspace, holder)
    except RelconsoleError:
        pass  # expired or unreachable: the TTL frees it


def confirm_fresh(store: LeaseStore, lease: WorkspaceLease, heartbeat: Heartbeat) -> WorkspaceLease:
    """The lease as the store has it now, when still ours at the same generation; else LeaseLost."""
    if heartbeat.lost:
        raise LeaseLost(f"lost workspace lease {lease.workspace!r} while replaying: {heartbeat.lost}; "
                        "no replay sheet was written")
    status = store.status(lease.workspace, lease.holder)
    if status.state != "fresh" or status.lease is None or status.lease.generation != lease.generation:
        raise LeaseLost(f"workspace lease {lease.workspace!r} is {status.state} ({status.reason}); "
                        "no replay sheet was written")
    return status.lease


def _clear_sheets(artifacts: Path, ids: list[str]) -> None:
    """Remove earlier sheets of this shard's relations: they would claim a lease no longer held."""
    for rid in ids:
        (artifacts / f"{slug(rid)}{SHEET_SUFFIX}").unlink(missing_ok=True)


def dead_holder_hint(lease: WorkspaceLease | None) -> str:
    """When the holder is a process of this host that no longer runs (a ``kill -9``), say
    so and how to free the lease now; otherwise ''."""
    user_host, _, pid = (lease.holder if lease else "").rpartition(":")
    if not pid.isdigit() or user_host.rpartition("@")[2] != socket.gethostname():
        return ""
    try:
        os.kill(int(pid), 0)
        return ""
    except ProcessLookupError:
        return (f"; process {pid} no longer runs on this host: free the lease now with "
                f"`relconsole workspace release --workspace '{lease.workspace}' --holder '{lease.holder}'`")
    except OSError:
        return ""


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


@dataclass
class ReplaySide:
    """One side of a replay: ``name`` (head or base), its ``commit`` and the worktree it runs in."""

    name: str
    commit: str
    tree: Path


def _replay_all(review: Review, ids: list[str], pool: WorktreePool, options: ReplayOptions,
                heartbeat: Heartbeat, progress) -> dict[str, dict]:
    runnable = [rid for rid in ids if review.results[rid].outcome != "blocked"]
    sheets = {rid: _blocked_sheet(review, rid, options) for rid in ids if rid not in runnable}
    if not runnable:
        return sheets
    sides = []
    for name, commit in (("head", review.head_sha), ("base", review.merge_base)):
        tree = pool.checkout(name, commit)
        overlay_oracle(review.repo, commit, review.oracle_dir, review.layout.protected, tree)
        sides.append(ReplaySide(name, commit, tree))
    plans = {rid: {side.name: plan_for(review, review.catalog.get(rid), side.tree) for side in sides}
             for rid in runnable}
    records = run_sides(plans, sides, options, heartbeat, progress)
    for rid in runnable:
        sheets[rid] = _sheet(review, review.catalog.get(rid), plans[rid], records[rid], options)
    return sheets


def run_sides(plans: dict[str, dict[str, RunPlan]], sides: list[ReplaySide], options: ReplayOptions,
               heartbeat: Heartbeat, progress) -> dict[str, dict[str, list[RunRecord]]]:
    """Every (relation, side, run) evaluated, in parallel, each in a new worker process:
    runs must be independent, so no module state (an import-time draw, a cache) carries
    from one run into the next as it would in a long-lived worker."""
    jobs = []
    seeds = list(options.seeds) if options.seeds else [draw_seed() for _ in range(options.runs)]
    for rid, by_side in plans.items():
        for side in sides:
            plan = by_side[side.name]
            run_seeds = seeds if plan.replay_seed is None else [plan.replay_seed] * len(seeds)
            jobs += [(rid, side, plan, seed) for seed in run_seeds]
    records: dict[str, dict[str, list[RunRecord]]] = {rid: {s.name: [] for s in sides} for rid in plans}
    lock, done = threading.Lock(), [0]

    cancel = options.cancel

    def one(job) -> None:
        rid, side, plan, seed = job
        if heartbeat.lost:
            return
        record = cancel.run(plan, seed)
        if record is None:
            return
        with lock:
            records[rid][side.name].append(record)
            done[0] += 1
            if progress:
                progress(Progress(done[0], len(jobs), f"{rid} on {side.name}"))

    threads = max(1, options.workers or os.cpu_count() or 1)
    with ThreadPoolExecutor(max_workers=threads) as executor:
        try:
            list(executor.map(one, jobs))
        except BaseException:  # Ctrl-C: kill the runs in flight so the pool shuts down at once
            cancel.cancel()
            raise
    if cancel.is_set():
        raise ReplayCancelled("replay cancelled: no replay sheet was written")
    if heartbeat.lost:
        raise LeaseLost(f"lost the workspace lease while replaying: {heartbeat.lost}; "
                        "no replay sheet was written")
    return records


def miss_signature(relation: Relation, pin: str, misses: list[RunRecord]) -> str:
    """The signature of the most common failure class among ``misses`` (ties: the first sorted)."""
    classes = collections.Counter(failure_class(r.error_type, r.differing, r.error) for r in misses)
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
           options: ReplayOptions) -> dict:
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
        "runs": {"head": side_counts(review.head_sha, head), "base": side_counts(review.merge_base, base)},
        "evidence": {"head": miss_evidence(head_misses), "base": miss_evidence(base_misses)},
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


def _blocked_sheet(review: Review, rid: str, options: ReplayOptions) -> dict:
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
            "lease": {"id": None, "holder": options.holder or default_holder(), "state": None,
                      "workspace": options.workspace, "generation": None, "store": None},
            "predicate_state": "active", "expires_at": expires.isoformat(),
            "freeze_allowed": policy.allowed, "shard": str(options.shard),
            "head": review.head_sha, "merge_base": review.merge_base, "oracle": review.oracle_sha,
            "created_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")}


def side_counts(commit: str, records: list[RunRecord]) -> dict:
    """``{commit, runs, misses}`` of one side's run records (a sheet's ``runs.<side>``)."""
    return {"commit": commit, "runs": len(records), "misses": sum(1 for r in records if not r.held)}


def miss_evidence(misses: list[RunRecord]) -> dict | None:
    """The first miss: what disagreed, and the two canonical outputs (trimmed)."""
    if not misses:
        return None
    record = misses[0]
    return {"describe": record.describe(), "differing": record.differing[:50],
            "error_type": record.error_type, "error": record.error[:EVIDENCE_CHARS],
            "source": _trim(record.source), "followup": _trim(record.followup), "seed": record.seed}


def _trim(value) -> object:
    text = json.dumps(value, sort_keys=True, default=str)
    return value if len(text) <= EVIDENCE_CHARS else text[:EVIDENCE_CHARS] + " …"


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
