"""The judge's worker processes from the caller's side: one per request or a pool of them (SPEC §7).

A ``Worker`` is one long-lived ``relconsole.engine.relations.worker`` process for one tree,
asked one request at a time over a socket; ``WorkerPool`` lends idle workers to parallel
runs, ``prestart`` boots them while the review loads (and from then on a closed pool's
workers, reset, wait for the next pool: one command's phases share them), and ``Cancel``
kills the workers of the runs in flight when the caller quits.
"""

from __future__ import annotations

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
from pathlib import Path

from relconsole.engine.relations.records import RunPlan, RunRecord, input_summary
from relconsole.engine.relations.subject.environment import SCRATCH_VARIABLE
from relconsole.engine.processes import kill_group, wait_exit
from relconsole.engine.relations.subject.server import readable


def _worker_env() -> dict[str, str]:
    # bytecode: the worker caches relconsole's own modules like any import, and turns writing
    # off before it imports an adapter from a tree (``worker.main``)
    return {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}



def _request(plan: RunPlan, seed: int) -> dict:
    return {"root": str(plan.root), "import_paths": plan.import_paths, "relation": plan.relation.raw,
            "seed": seed, "clock": plan.clock, "clock_day": plan.clock_day, "clock_today": plan.clock_today,
            "protected": list(plan.protected) or ["oracle/**"],
            "sandbox": plan.sandbox, "timeout": plan.timeout_seconds, "checkout": plan.checkout, "env": plan.env,
            "fresh_server": plan.fresh_server, "imports_only": plan.imports_only,
            "hashseed": plan.replay_hashseed, "spare": plan.spare, "readonly": list(plan.readonly),
            "library": list(plan.library), "record_lines": plan.record_lines if isinstance(plan.record_lines, bool)
            else [[row[0], list(row[1]), *([list(e) if isinstance(e, tuple) else e for e in part] for part in row[2:])]
                  for row in plan.record_lines],
            "input": {"kind": plan.input_kind, "path": str(plan.input_path)},
            "generate": plan.generate, "given": plan.given,
            "targets": [[path, [list(span[:2]) + ([list(span[2])] if len(span) > 2 else []) for span in spans]]
                        for path, spans in plan.targets]}



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

    def reset(self, seconds: float = 5.0) -> bool:
        """Have the process forget its tree (``worker.forget_tree``: its fork servers, decoded
        inputs and the oracle's modules) so that a pool for another tree can use it. True when
        it said so within ``seconds``; otherwise it is closed and False returned."""
        if self.proc is None or self.proc.poll() is not None:
            self.close()
            return False
        try:
            self.channel.sendall(b'{"op": "reset"}\n')
            line = self._read_line(time.monotonic() + seconds)
            done = bool(line) and json.loads(line).get("reset") is True
        except (OSError, ValueError, AttributeError):
            done = False
        if not done:
            self.close()
        return done

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
            kill_group(self.proc)  # the fork servers below it, if any remain
            self.channel.close()
        if self.stderr is not None:
            self.stderr.close()
        if getattr(self, "scratch", None):
            shutil.rmtree(self.scratch, ignore_errors=True)
        self.proc, self.stderr, self.scratch = None, None, None


def _record(reply: dict, seed: int, seconds: float) -> RunRecord:
    record = _outcome_record(reply, seed, seconds)
    for name in ("drawn", "shrunk", "given"):
        if isinstance(reply.get(name), dict):
            setattr(record, name, reply[name])
    return record


def _outcome_record(reply: dict, seed: int, seconds: float) -> RunRecord:
    read = reply.get("inputs") if isinstance(reply.get("inputs"), dict) else {}
    run = reply.get("run") if isinstance(reply.get("run"), dict) else {}
    if "error" in reply:
        err = reply["error"]
        where = f" ({err['where']})" if err.get("where") else ""
        module = err.get("module") if err.get("type") == "ModuleNotFoundError" else None
        return RunRecord(False, seed, error_type=err["type"], error=f"{err['message']}{where}", seconds=seconds,
                         error_files=list(err.get("files") or []), inputs=read, run=run,
                         missing_module=module if isinstance(module, str) else "")
    if "blocked" in reply:
        return RunRecord(False, seed, blocked=str(reply["blocked"]), seconds=seconds, inputs=read, run=run)
    return RunRecord(reply["held"], seed, reply["source"], reply["followup"],
                     reply["differing"], reply["note"], seconds=seconds, inputs=read,
                     vacuous=bool(reply.get("vacuous")), run=run, compared=str(reply.get("compared") or ""))


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


_STARTED: list[Worker] = []  # worker processes booting ahead of the pool that takes them, or kept from one
_STARTED_LOCK = threading.Lock()
_SHELF: list[int] = []  # [count] once ``prestart`` ran: a closed pool's workers wait there for the next pool


def prestart(count: int | None = None) -> None:
    """Start ``count`` worker processes now (default: one per core) for the next WorkerPool
    to take, so that they boot (Python, the judge's imports, the sandbox probe) while the
    caller is still loading the review. Processes no pool took are closed at exit."""
    count = count or max(1, os.cpu_count() or 1)
    with _STARTED_LOCK:
        if not _SHELF:
            import atexit
            atexit.register(close_started)
            _SHELF.append(count)
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
    """Close the processes ``prestart`` booted, or pools left, that no pool took (run at exit,
    and by the command line's shutdown timer when the normal exit hangs): all are told to end
    first, so they wind down at once."""
    with _STARTED_LOCK:
        workers, _STARTED[:] = list(_STARTED), []
    for worker in workers:
        worker.end_input()
    for worker in workers:
        worker.close()


def _shelve(workers: list[Worker]) -> list[Worker]:
    """Keep ``workers`` (each reset, ``Worker.reset``) for the next pool, up to ``prestart``'s
    count; returns the ones not kept, for the caller to close. Only once ``prestart`` ran:
    a command that ends soon (run, gate) and closes what is left at exit; a console or a
    library caller keeps no idle process."""
    with _STARTED_LOCK:
        room = _SHELF[0] - len(_STARTED) if _SHELF else 0
        kept, rest = workers[:max(0, room)], workers[max(0, room):]
        _STARTED.extend(kept)
    return rest


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
        """Release the workers: with ``prestart`` on, reset for the next pool (a pool for
        another tree, the next phase of the same command: no new process to boot); otherwise,
        or cancelled, closed."""
        for worker in self.all:
            if self.cancel is not None:
                self.cancel.release(worker)
        cancelled = self.cancel is not None and self.cancel.is_set()
        rest = self.all if cancelled or not _SHELF else _shelve([w for w in self.all if w.reset()])
        for worker in rest:
            worker.end_input()
        for worker in rest:
            worker.close()


def evaluate_once(plan: RunPlan, seed: int) -> RunRecord:
    """Run the relation once in a fresh worker process; a crash or timeout is a miss."""
    worker = Worker(plan.root)
    try:
        return worker.ask(plan, seed)
    finally:
        worker.close()
