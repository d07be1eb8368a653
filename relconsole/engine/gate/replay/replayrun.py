"""Running a replay's sides (SPEC §7, §5): every (relation, side, run) a run of its own (new
seed, new fork servers, each call a new process) on a pool of worker processes per side,
under a workspace lease kept alive by a heartbeat and checked fresh before any sheet is
written; a lost lease or a cancel aborts with no sheet.
"""

from __future__ import annotations

import dataclasses
import os
import socket
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from relconsole.engine.errors import RelconsoleError
from relconsole.engine.relations.pool import WorkerPool
from relconsole.engine.relations.records import RunPlan, RunRecord
from relconsole.engine.relations.runner import draw_seed
from relconsole.engine.gate.wslease.wsleasestore import LeaseStore, WorkspaceLease
from relconsole.engine.gate.replay.replayoptions import Progress, ReplayOptions


class LeaseLost(RelconsoleError):
    """The workspace lease ended while replay ran (expired, taken over, store gone): abort."""


class ReplayCancelled(RelconsoleError):
    """The replay was cancelled (the console quit, Ctrl-C): no sheet written, lease released."""


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


@dataclass
class ReplaySide:
    """One side of a replay: ``name`` (head or base), its ``commit`` and the worktree it runs in."""

    name: str
    commit: str
    tree: Path


def run_sides(plans: dict[str, dict[str, RunPlan]], sides: list[ReplaySide], options: ReplayOptions,
               heartbeat: Heartbeat, progress,
               carried: dict[str, list[RunRecord]] | None = None) -> dict[str, dict[str, list[RunRecord]]]:
    """Every (relation, side, run) evaluated, in parallel within a side and one side after the
    other; returns records by relation id and side name.

    Each run is a run of its own, as a counted freeze's reruns are (§6): a new seed, new fork
    servers (a new PYTHONHASHSEED), every call a new process; the subject's modules are only
    ever imported in a call's own process, so no module state (an import-time draw, a cache)
    carries from one run into the next. The runs of a side share a pool of worker processes
    (the judge: it holds the decoded input and the oracle's merge adapter, no code of the
    tree), which boot one server ahead while a run's calls run; no HEAD run shares the
    machine with a base run.

    ``carried``: by relation id, ``{side name: records}`` that count as runs here
    (``replay.run_phase_evidence``: the same gate's run phase made them a moment before); HEAD then
    runs only what is left of the runs, and the base's runs take the carried HEAD runs' seeds
    first (a carried base record stands for the run of its seed), so both sides still see the
    same inputs run for run. Raises ReplayCancelled and LeaseLost.
    """
    carried = carried or {}
    seeds = list(options.seeds) if options.seeds else [draw_seed() for _ in range(options.runs)]
    jobs = []
    records: dict[str, dict[str, list[RunRecord]]] = {}
    for rid, by_side in plans.items():
        kept = {s.name: list(carried.get(rid, {}).get(s.name, []))[:len(seeds)] for s in sides}
        records[rid] = {name: list(runs) for name, runs in kept.items()}
        for side in sides:
            plan = by_side[side.name]
            head = kept.get("head", [])
            run_seeds = seeds[len(head):] if side.name == "head" else [r.seed for r in head] + seeds[len(head):]
            if plan.replay_seed is not None:
                run_seeds = [plan.replay_seed] * len(run_seeds)
            if side.name != "head":
                for record in kept[side.name]:  # its seed has run already
                    if record.seed in run_seeds:
                        run_seeds.remove(record.seed)
            jobs += [(rid, side, plan, seed) for seed in run_seeds]
    lock, done = threading.Lock(), [sum(len(runs) for by_side in records.values() for runs in by_side.values())]
    total = done[0] + len(jobs)  # the carried runs are done already
    cancel = options.cancel
    threads = max(1, options.workers or os.cpu_count() or 1)

    def one(pool: WorkerPool, job) -> None:
        rid, side, plan, seed = job
        if heartbeat.lost or cancel.is_set():
            return
        record = pool.evaluate(plan, seed)
        if cancel.is_set():
            return
        with lock:
            records[rid][side.name].append(record)
            done[0] += 1
            if progress:
                progress(Progress(done[0], total, f"{rid} on {side.name}"))

    with ThreadPoolExecutor(max_workers=threads) as executor:
        # one side after the other: a HEAD run that hogs the machine (a livelock, a fork of busy
        # children) must not make a base run time out beside it, or the base would seem to show
        # the patch's miss (red team, issue 34)
        for side in sides:
            mine = _own_runs([job for job in jobs if job[1] is side], threads)
            if not mine:
                continue
            pool = WorkerPool(min(threads, len(mine)), side.tree, cancel)
            try:
                list(executor.map(lambda job: one(pool, job), mine))
            except BaseException:  # Ctrl-C: kill the runs in flight so the pool shuts down at once
                cancel.cancel()
                raise
            finally:
                pool.close()
    if cancel.is_set():
        raise ReplayCancelled("replay cancelled: no replay sheet was written")
    if heartbeat.lost:
        raise LeaseLost(f"lost the workspace lease while replaying: {heartbeat.lost}; "
                        "no replay sheet was written")
    return records


def _own_runs(jobs: list[tuple], workers: int) -> list[tuple]:
    """``jobs`` (relation id, side, plan, seed) with each plan made a run of its own
    (``fresh_server``), and ``spare`` where more runs of the same plan follow than there are
    ``workers``: the worker boots the next run's server while this run's calls run."""
    out = []
    for rid in dict.fromkeys(job[0] for job in jobs):
        same = [job for job in jobs if job[0] == rid]
        ahead = len(same) - workers
        out += [(rid, side, dataclasses.replace(plan, fresh_server=True, spare=n < ahead), seed)
                for n, (rid, side, plan, seed) in enumerate(same)]
    return out
