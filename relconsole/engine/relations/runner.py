"""Evaluate relations in worker processes with the counted freeze protocol (SPEC §6, §7 run).

One relation is run once; a hold is a pass. A miss with no live freeze is a reject.
A miss under a live freeze is rerun ``reruns`` times with new seeds and passes only
with ``pass_needed`` passes; every rerun is recorded. Subjects run in child processes
(``relconsole.engine.relations.worker``) with a timeout, never in the caller's process.
"""

from __future__ import annotations

import dataclasses
import json
import os
import queue
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from relconsole.engine.oracle.catalog import Relation
from relconsole.engine.decision import Decision
from relconsole.engine.oracle.freezes import LIVE, FreezeRow, counted_verdict
from relconsole.engine.repo.owners import protected
from relconsole.engine.relations.signatures import failure_class, signature
from relconsole.engine.relations.subject.environment import SCRATCH_VARIABLE
from relconsole.engine.relations.subject.server import readable, wait_exit


@dataclass
class RunRecord:
    """One evaluation: held or not, outputs compared, disagreeing keys, or the error.

    ``inputs`` summarises the source and follow-up inputs (``input_summary``): the input
    file, its digest and row count, and the follow-up transformation in words; {} for a
    record made elsewhere (a pytest-plugin attempt).
    """

    held: bool
    seed: int
    source: Any = None
    followup: Any = None
    differing: list[str] = field(default_factory=list)
    note: str = ""
    error_type: str | None = None
    error: str = ""
    seconds: float = 0.0
    error_files: list[str] = field(default_factory=list)  # tree paths of the traceback, innermost last
    inputs: dict = field(default_factory=dict)  # what the run read and how the follow-up was made (input_summary)
    blocked: str = ""  # why the outputs could not be compared (a type with no canon: adapter), else ""
    vacuous: bool = False  # held only on empty outputs for a non-empty input (SPEC §7)
    run: dict = field(default_factory=dict)  # sandbox, hashseed, clock, call order, tree files imported
    compared: str = ""  # how the outputs were compared, in words (relations.Check.words)

    def describe(self) -> str:
        """One line: what missed and where."""
        if self.blocked:
            return f"blocked: {self.blocked}"
        if self.vacuous:
            return f"vacuous: {self.note}"
        if self.held:
            return "held"
        if self.error_type:
            return f"{self.error_type}: {self.error}"
        keys = ", ".join(self.differing[:4]) + (" …" if len(self.differing) > 4 else "")
        if not keys:
            return self.note or "missed"
        how = f"; compared {self.compared}" if self.compared else ""
        shown = ": {} vs {}".format(*short_pair(self.source, self.followup)) if self.differing == [WHOLE] else ""
        return f"disagree on {keys} ({self.note}{how}){shown}"


WHOLE = "(whole output)"  # relations.path_text of the empty path
SHORT = 60  # characters of a value shown in a one-line miss


def _compact(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=repr)
    except (ValueError, TypeError, RecursionError):
        return repr(value)


def short_pair(source: Any, followup: Any) -> tuple[str, str]:
    """Two values as compact JSON, each cut to about SHORT characters around where they first
    differ: ``(source_text, followup_text)``. Cutting both at their start hid the difference
    behind a shared prefix (two long id lists read "[…,"PB…" vs "[…,"PB…"); here both windows
    start a third of SHORT before the first differing character, with "…" where text is cut,
    so two different texts always show different windows."""
    texts = _compact(source), _compact(followup)
    if all(len(t) <= SHORT for t in texts):
        return texts
    first_difference = len(os.path.commonprefix(texts))
    start = max(0, first_difference - SHORT // 3)
    return tuple(_window(t, start) for t in texts)


def _window(text: str, start: int) -> str:
    body = text[start:start + SHORT - 1]
    return ("…" if start else "") + body + ("…" if start + len(body) < len(text) else "")


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
    protected: tuple[str, ...] = ()  # patterns of the oracle's files (a fault there is not the patch's)
    sandbox: str = "auto"  # "auto" (bubblewrap where it works), "bwrap" (required: abort without) or "process"
    replay_seed: int | None = None  # the recorded run seed to replay (``run --replay-seed``); None: draw one
    replay_hashseed: int | None = None  # the recorded PYTHONHASHSEED to replay with it; None: the server's own
    checkout: str = ""  # the repository's folder name: the tree is /src/<it> in a sandbox ("": the tree's own)
    env: dict[str, str] = field(default_factory=dict)  # [tool.relconsole] pass_env: variables the subject gets
    fresh_server: bool = False  # a new fork server (a new hash seed, §7) for this run alone: reruns
    imports_only: bool = False  # one source call, only for the tree files it imports (importmap)
    spare: bool = False  # with fresh_server: more reruns follow, the worker boots a server ahead for one
    clock_day: bool = False  # with clock: stand at an instant drawn per fork server around its day (clock: frozen)
    clock_today: str | None = None  # with clock_day: the review's today (ISO date), which the drawn span reaches past
    readonly: tuple[str, ...] = ()  # the reviewer's git directories and checkout: read-only to a subject without bwrap




def _worker_env() -> dict[str, str]:
    # bytecode: the worker caches relconsole's own modules like any import, and turns writing
    # off before it imports an adapter from a tree (``worker.main``)
    return {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}


def draw_seed() -> int:
    """A run seed from os.urandom (SPEC §7): every order, split point and the subject's own
    ``random`` seed of one run derive from it, so the subject cannot predict its inputs."""
    return int.from_bytes(os.urandom(6), "big")


def run_seed(plan: RunPlan) -> int:
    """The plan's recorded seed to replay, else a new draw."""
    return plan.replay_seed if plan.replay_seed is not None else draw_seed()


def _request(plan: RunPlan, seed: int) -> dict:
    return {"root": str(plan.root), "import_paths": plan.import_paths, "relation": plan.relation.raw,
            "seed": seed, "clock": plan.clock, "clock_day": plan.clock_day, "clock_today": plan.clock_today,
            "protected": list(plan.protected) or ["oracle/**"],
            "sandbox": plan.sandbox, "timeout": plan.timeout_seconds, "checkout": plan.checkout, "env": plan.env,
            "fresh_server": plan.fresh_server, "imports_only": plan.imports_only,
            "hashseed": plan.replay_hashseed, "spare": plan.spare, "readonly": list(plan.readonly),
            "input": {"kind": plan.input_kind, "path": str(plan.input_path)}}




class Worker:
    """One long-lived worker process (``relconsole.engine.relations.worker``) for one tree.

    Used by one thread at a time. A timeout kills the process; a death is reported
    with its exit status or signal; either way the next request starts a fresh one.
    """

    def __init__(self, cwd: Path):
        self.cwd = cwd
        self.proc: subprocess.Popen | None = None
        self.stderr = None
        self.buffer = b""
        self.mark = 0
        self.scratch: str | None = None
        self.channel: socket.socket | None = None

    def _start(self) -> None:
        self.stderr = tempfile.TemporaryFile()
        self.buffer = b""
        # its own scratch folder (the fork servers' scratch goes there; removed by close() even
        # when the judge was killed), and -P: the tree is never on the judge's sys.path
        self.scratch = tempfile.mkdtemp()  # a plain name: the server's script lives under it
        # one socket, not pipes: a subject cannot reopen it through /proc/<pid>/fd to forge replies
        self.channel, theirs = socket.socketpair()
        try:
            self.proc = subprocess.Popen([sys.executable, "-P", "-m", "relconsole.engine.relations.worker"],
                                         stdin=theirs, stdout=theirs, stderr=self.stderr,
                                         env={**_worker_env(), SCRATCH_VARIABLE: self.scratch}, cwd=self.scratch,
                                         start_new_session=True)
        finally:
            theirs.close()

    def ask(self, plan: RunPlan, seed: int) -> RunRecord:
        """Evaluate ``plan`` once with ``seed``; a crash or timeout is a miss record."""
        if self.proc is None or self.proc.poll() is not None:
            self._start()
        started = time.monotonic()
        self.stderr.seek(0, os.SEEK_END)
        self.mark = self.stderr.tell()  # what this request makes the worker say starts here
        try:
            self.channel.sendall((json.dumps(_request(plan, seed), default=str) + "\n").encode())
            line = self._read_line(started + plan.timeout_seconds + 60)  # the judge times its calls itself
        except (BrokenPipeError, OSError):
            line = b""
        seconds = time.monotonic() - started
        if line is None:
            self.close()
            record = RunRecord(False, seed, error_type="timeout",
                               error=f"no answer within {plan.timeout_seconds:g} s", seconds=seconds)
        elif line == b"":
            record = self._died(seed, seconds)
        else:
            record = _record(json.loads(line), seed, seconds)
        record.inputs = input_summary(plan, record.inputs)
        return record

    def _read_line(self, deadline: float) -> bytes | None:
        """The next reply line; b"" when the worker died; None when the deadline passed."""
        fd = self.channel.fileno()
        while b"\n" not in self.buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not readable(fd, remaining):
                return None
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                return b""
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line

    def _died(self, seed: int, seconds: float) -> RunRecord:
        code = self.proc.wait()
        self.stderr.seek(self.mark)
        tail = (self.stderr.read().decode("utf-8", "replace").strip().splitlines() or ["(no output)"])[-1]
        how = f"killed by {signal.Signals(-code).name}" if code < 0 else f"exit {code}"
        self.close()
        return RunRecord(False, seed, error_type="worker died", error=f"{how}: {tail}", seconds=seconds)

    def kill(self) -> None:
        """SIGKILL the process if it runs (from any thread): its fork servers and everything
        the subject started die with it; the ``ask`` in flight returns a died record."""
        proc = self.proc
        if proc is not None and proc.poll() is None:
            proc.kill()

    def end_input(self) -> None:
        """Send EOF: the judge ends its fork servers and exits (``close`` waits for it), so
        a pool's workers all wind down at once."""
        if self.proc is not None:
            try:
                self.channel.shutdown(socket.SHUT_WR)
            except OSError:
                pass

    def close(self) -> None:
        """Stop the process (EOF first, then a kill) and forget it."""
        if self.proc is not None:
            try:
                self.end_input()
                wait_exit(self.proc, 2)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)  # the fork servers below it, if any remain
            except OSError:
                pass
            self.channel.close()
        if self.stderr is not None:
            self.stderr.close()
        if getattr(self, "scratch", None):
            shutil.rmtree(self.scratch, ignore_errors=True)
        self.proc, self.stderr, self.scratch = None, None, None


def _record(reply: dict, seed: int, seconds: float) -> RunRecord:
    read = reply.get("inputs") if isinstance(reply.get("inputs"), dict) else {}
    run = reply.get("run") if isinstance(reply.get("run"), dict) else {}
    if "error" in reply:
        err = reply["error"]
        where = f" ({err['where']})" if err.get("where") else ""
        return RunRecord(False, seed, error_type=err["type"], error=f"{err['message']}{where}", seconds=seconds,
                         error_files=list(err.get("files") or []), inputs=read, run=run)
    if "blocked" in reply:
        return RunRecord(False, seed, blocked=str(reply["blocked"]), seconds=seconds, inputs=read, run=run)
    return RunRecord(reply["held"], seed, reply["source"], reply["followup"],
                     reply["differing"], reply["note"], seconds=seconds, inputs=read,
                     vacuous=bool(reply.get("vacuous")), run=run, compared=str(reply.get("compared") or ""))


def input_summary(plan: RunPlan, read: dict | None = None) -> dict:
    """What one run of ``plan`` read (SPEC §3 input, §4 lease, §7 fixture pin), small::

        {"kind": "lease" | "seeds", "lease": id | None,
         "path": tree-relative input file, "sha256": its digest (the fixture pin),
         "records": rows or seed rows, "fields": [first row's keys], "field_count": int,
         "followup": the follow-up transformation in words}

    ``read`` is the worker's part (``relations.describe_inputs``: records, fields,
    followup); it is absent ({}) when the worker timed out or died before reading.
    """
    try:
        path = Path(plan.input_path).relative_to(plan.root).as_posix()
    except ValueError:
        path = str(plan.input_path)
    return {"kind": plan.input_kind, "lease": plan.relation.lease_id, "path": path,
            "sha256": plan.fixture_pin, **(read or {})}


class Cancel:
    """Cancels a running run, replay or confirm from another thread (the console quitting):
    no run starts after ``cancel()``, and the worker processes of the runs in flight are
    killed, which ends their fork servers and every process the subject started (§7), so
    their threads return at once."""

    def __init__(self):
        self.event = threading.Event()
        self.lock = threading.Lock()
        self.workers: set[Worker] = set()

    def cancel(self) -> None:
        self.event.set()
        with self.lock:
            for worker in self.workers:
                worker.kill()

    def is_set(self) -> bool:
        return self.event.is_set()

    def adopt(self, worker: "Worker") -> None:
        """Kill ``worker`` on ``cancel()`` (at once when already cancelled)."""
        with self.lock:
            self.workers.add(worker)
        if self.is_set():
            worker.kill()

    def release(self, worker: "Worker") -> None:
        with self.lock:
            self.workers.discard(worker)

    def run(self, plan: RunPlan, seed: int) -> RunRecord | None:
        """One run in a new worker process, or None when cancelled before or during it."""
        if self.is_set():
            return None
        worker = Worker(plan.root)
        self.adopt(worker)
        try:
            if self.is_set():
                return None
            record = worker.ask(plan, seed)
        finally:
            self.release(worker)
            worker.close()
        return None if self.is_set() else record


_STARTED: list[Worker] = []  # worker processes booting ahead of the pool that takes them
_STARTED_LOCK = threading.Lock()


def prestart(count: int | None = None) -> None:
    """Start ``count`` worker processes now (default: one per core) for the next WorkerPool
    to take, so that they boot (Python, the judge's imports, the sandbox probe) while the
    caller is still loading the review. Processes no pool took are closed at exit."""
    count = count or max(1, os.cpu_count() or 1)
    with _STARTED_LOCK:
        if not _STARTED:
            import atexit
            atexit.register(close_started)
        while len(_STARTED) < count:
            worker = Worker(Path.cwd())
            worker._start()
            _STARTED.append(worker)


def _take_started() -> Worker | None:
    with _STARTED_LOCK:
        while _STARTED:
            worker = _STARTED.pop()
            if worker.proc is not None and worker.proc.poll() is None:
                return worker
            worker.close()
    return None


def close_started() -> None:
    """Close the processes ``prestart`` booted that no pool took (run at exit, and by the
    command line's shutdown timer when the normal exit hangs)."""
    while (worker := _take_started()) is not None:
        worker.close()


class WorkerPool:
    """``size`` workers for one tree; ``evaluate`` borrows an idle one per request (a
    process ``prestart`` booted first). With ``cancel``, a cancelled pool kills its workers
    and answers every request with a ``cancelled`` miss without running it."""

    def __init__(self, size: int, cwd: Path, cancel: Cancel | None = None):
        self.idle: queue.Queue[Worker] = queue.Queue()
        self.cancel = cancel
        self.all = [_take_started() or Worker(cwd) for _ in range(max(1, size))]
        for worker in self.all:
            self.idle.put(worker)
            if cancel is not None:
                cancel.adopt(worker)

    def evaluate(self, plan: RunPlan, seed: int) -> RunRecord:
        if self.cancel is not None and self.cancel.is_set():
            return RunRecord(False, seed, error_type="cancelled", error="the run was cancelled")
        worker = self.idle.get()
        try:
            record = worker.ask(plan, seed)
        finally:
            self.idle.put(worker)
        if self.cancel is not None and self.cancel.is_set():
            return RunRecord(False, seed, error_type="cancelled", error="the run was cancelled")
        return record

    def close(self) -> None:
        for worker in self.all:
            worker.end_input()
        for worker in self.all:
            if self.cancel is not None:
                self.cancel.release(worker)
            worker.close()


def evaluate_once(plan: RunPlan, seed: int) -> RunRecord:
    """Run the relation once in a fresh worker process; a crash or timeout is a miss."""
    worker = Worker(plan.root)
    try:
        return worker.ask(plan, seed)
    finally:
        worker.close()


def run_relation(plan: RunPlan, freeze: FreezeRow | None, pool: WorkerPool | None = None) -> RelationResult:
    """The counted freeze protocol of §6 for one relation (reruns in parallel on ``pool``)."""
    relation = plan.relation
    evaluate = pool.evaluate if pool is not None else evaluate_once
    live = freeze is not None and freeze.state == LIVE
    # a miss with a live freeze reruns on new servers: one boots while the first run runs
    first = evaluate(dataclasses.replace(plan, spare=True) if live and pool is not None else plan, run_seed(plan))
    if first.blocked or first.vacuous or first.error_type == "environment":
        return _not_judged(plan, first, freeze)
    sig = None if first.held else signature(relation.id, relation.kind, plan.fixture_pin,
                                            failure_class(first.error_type, first.differing, first.error))
    reruns: list[RunRecord] = []
    if not first.held and live:
        # each rerun a run of its own: new seeds and a new fork server (a new hash seed), every
        # call a new process as always, so no module state carries from the first run (§6, §7)
        seeds = [draw_seed() for _ in range(freeze.reruns)]
        again = dataclasses.replace(plan, fresh_server=True)
        # a worker whose next request is likely another rerun boots its server meanwhile
        ahead = len(seeds) - (len(pool.all) if pool is not None else len(seeds))
        plans = [dataclasses.replace(again, spare=n < ahead) for n in range(len(seeds))]
        with ThreadPoolExecutor(max_workers=max(1, os.cpu_count() or 1)) as threads:
            reruns = list(threads.map(evaluate, plans, seeds))
    outcome, decision, summary = counted_verdict(relation.id, first.held, first.describe(),
                                                 [r.held for r in reruns], freeze)
    fault = oracle_fault(first, plan.protected)
    if fault and outcome == "missed":
        decision = Decision("abort", "oracle_fault", None, relation.id, fault)
    return RelationResult(relation.id, outcome, decision, summary, first, reruns, freeze, sig)


def _not_judged(plan: RunPlan, first: RunRecord, freeze: FreezeRow | None) -> RelationResult:
    """A first run that judged nothing: outputs of a type with no canon: adapter (blocked,
    reject), both outputs empty (vacuous, hold) or an environment fault (abort, §7)."""
    rid = plan.relation.id
    if first.blocked:
        return RelationResult(rid, "blocked", Decision("reject", "not_comparable", None, rid, first.blocked),
                              f"blocked: {first.blocked}", first, [], freeze)
    if first.vacuous:
        return RelationResult(rid, "vacuous", Decision("hold", "vacuous_output", None, rid, first.note),
                              f"vacuous: {first.note}", first, [], freeze)
    return RelationResult(rid, "missed", Decision("abort", "environment", None, rid, first.error),
                          f"abort: {first.error}", first, [], freeze)


def oracle_fault(record: RunRecord, protected_patterns: tuple[str, ...]) -> str | None:
    """Why a miss is the oracle's fault, not the patch's: the innermost frame of the
    exception is in a protected file (an adapter, merge or transform that raised)."""
    if not record.error_files or not protected_patterns:
        return None
    innermost = record.error_files[-1]
    if protected(protected_patterns, innermost):
        return (f"{record.error_type} raised in the oracle's own {innermost}: fix the oracle "
                "on the base branch; the patch is not judged by a broken relation")
    return None


# Relative cost of one evaluation in subject calls, for scheduling before any history exists.
KIND_COST = {"permutation": None, "idempotence": 2, "replay_ingest": 3, "split_merge": None,
             "monotonic": 3, "roundtrip": 10, "invariance": 3, "bound": 1}


def expected_cost(relation: Relation, history: dict[str, float]) -> float:
    """Seconds the relation took last time, else a weight by kind (calls of the subject).

    Only the order matters: the longest relations start first (longest-processing-time
    scheduling), so one slow relation does not run alone at the end.
    """
    if relation.id in history:
        return history[relation.id]
    if relation.kind == "permutation":
        return 1 + int(relation.params.get("shuffles", 6))
    if relation.kind == "split_merge":
        splits = relation.params.get("splits", 3)
        return 1 + (len(splits) if isinstance(splits, list) else int(splits))
    return KIND_COST.get(relation.kind) or 2


def run_all(plans: list[tuple[RunPlan, FreezeRow | None]],
            progress: Callable[[RelationResult], None] | None = None,
            workers: int | None = None, history: dict[str, float] | None = None,
            cancel: Cancel | None = None) -> list[RelationResult]:
    """Run every plan on ``workers`` worker processes (default: one per core).

    Plans share a tree; each worker reads a corpus once and serves every relation that
    reads it. The costliest relations start first (``expected_cost`` over ``history``,
    seconds by relation id). ``progress`` is called as each relation finishes; results
    keep plan order.
    """
    if not plans:
        return []
    size = workers or max(1, os.cpu_count() or 1)
    pool = WorkerPool(min(size, len(plans)) if size > 1 else 1, plans[0][0].root, cancel)
    by_future = {}
    try:
        with ThreadPoolExecutor(max_workers=size) as threads:
            order = sorted(range(len(plans)), key=lambda i: -expected_cost(plans[i][0].relation, history or {}))
            for index in order:
                plan, freeze = plans[index]
                by_future[threads.submit(run_relation, plan, freeze, pool)] = index
            done: dict[int, RelationResult] = {}
            for future in as_completed(by_future):
                result = future.result()
                done[by_future[future]] = result
                if progress:
                    progress(result)
    finally:
        pool.close()
    return [done[i] for i in sorted(done)]
