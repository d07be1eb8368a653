"""Running a replay's sides (SPEC §7, §5): every (relation, side, run) in its own worker
process, under a workspace lease kept alive by a heartbeat and checked fresh before any
sheet is written; a lost lease or a cancel aborts with no sheet.
"""

from __future__ import annotations

import os
import socket
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from relconsole.engine.errors import RelconsoleError
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
               heartbeat: Heartbeat, progress) -> dict[str, dict[str, list[RunRecord]]]:
    """Every (relation, side, run) evaluated, in parallel within a side and one side after the
    other, each in a new worker process: runs must be independent, so no module state (an
    import-time draw, a cache) carries from one run into the next as it would in a long-lived
    worker, and no HEAD run shares the machine with a base run."""
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
            # one side after the other: a HEAD run that hogs the machine (a livelock, a fork of busy
            # children) must not make a base run time out beside it, or the base would seem to show
            # the patch's miss (red team, issue 34)
            for side in sides:
                list(executor.map(one, [job for job in jobs if job[1] is side]))
        except BaseException:  # Ctrl-C: kill the runs in flight so the pool shuts down at once
            cancel.cancel()
            raise
    if cancel.is_set():
        raise ReplayCancelled("replay cancelled: no replay sheet was written")
    if heartbeat.lost:
        raise LeaseLost(f"lost the workspace lease while replaying: {heartbeat.lost}; "
                        "no replay sheet was written")
    return records
