"""The drafter of ``propose`` (SPEC §10): the user's command (``shlex``-split, no shell) run
in its own process group with the prompt on its stdin, a wall-clock timeout and a cap on what
it prints. A failed drafter raises ``DrafterError`` (exit 3); nothing it prints is executed.
"""

from __future__ import annotations

import os
import selectors
import shlex
import subprocess
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from relconsole.engine.defaults import DRAFTER_TIMEOUT_SECONDS
from relconsole.engine.errors import EXIT_ABORT, RelconsoleError, UsageError
from relconsole.engine.oracle.yamlload import MAX_FILE_BYTES
from relconsole.engine.processes import exit_watch, kill_group

OUTPUT_LIMIT_BYTES = MAX_FILE_BYTES  # a drafter printing more is stopped: no candidate is this big
STDERR_TAIL_BYTES = 4_000  # of the drafter's stderr kept to explain a failure
DEFAULT_TIMEOUT_SECONDS = DRAFTER_TIMEOUT_SECONDS
STRAGGLER_SECONDS = 1.0  # after the drafter exits, how long its output is still read (a child may hold it)


class DrafterError(RelconsoleError):
    """The drafter failed: not found, timed out, exited non-zero, printed nothing, too much,
    or something that is not YAML of the expected shape. Exit 3 (abort); nothing is written.

    ``stderr_tail`` is the end of the drafter's stderr (untrusted text: show it literally).
    """

    exit_code = EXIT_ABORT

    def __init__(self, message: str, stderr_tail: str = "", returncode: int | None = None):
        super().__init__(message)
        self.stderr_tail = stderr_tail
        self.returncode = returncode


@dataclass(frozen=True)
class DrafterRun:
    """What a drafter printed: ``stdout`` (UTF-8 text), the tail of its stderr, its exit code."""

    command: str
    stdout: str
    stderr_tail: str
    returncode: int


def drafter_argv(command: str) -> list[str]:
    """``command`` split like a POSIX shell would (no shell runs). UsageError when empty
    or unbalanced quotes."""
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise UsageError(f"--drafter {command!r}: {exc}") from None
    if not argv:
        raise UsageError("--drafter: an empty command")
    return argv


def _close_quietly(handle: Any) -> None:
    try:
        handle.close()
    except OSError:
        pass


def run_drafter(command: str, prompt: str, cwd: str | Path,
                timeout: float = DEFAULT_TIMEOUT_SECONDS,
                output_limit: int = OUTPUT_LIMIT_BYTES) -> DrafterRun:
    """Run ``command`` with ``prompt`` on its stdin, in its own process group, in ``cwd``.

    ``timeout`` is wall-clock seconds for the whole run, an upper bound: the prompt is
    written and stdout and stderr are read on this thread from the raw pipes with one
    ``selectors`` loop (no buffered reader, no thread that could keep the call waiting).
    Reading stops when both pipes close; or ``STRAGGLER_SECONDS`` after the drafter itself
    exited (a child it left behind may hold its stdout open, even from a new session that
    cannot be killed from here: its output is not waited for, what the drafter printed
    counts); or at ``timeout``, when the process group is killed. The call therefore
    returns within ``timeout`` + ``STRAGGLER_SECONDS`` and a moment to reap the drafter.

    Raises DrafterError (exit 3) when the command is not found or cannot start, runs past
    ``timeout``, prints more than ``output_limit`` bytes (stopped at once), exits non-zero
    (with the tail of its stderr), prints nothing, or prints bytes that are not UTF-8.
    UsageError for an empty or unparsable command.
    """
    argv = drafter_argv(command)
    proc = _spawn(argv, cwd)
    deadline = time.monotonic() + timeout
    state = _Exchange(memoryview(prompt.encode("utf-8")), {proc.stdout.fileno(): "out", proc.stderr.fileno(): "err"})
    try:
        _exchange(proc, state, deadline, output_limit)
    finally:
        if state.timed_out or state.overflow or state.readers or proc.poll() is None:
            kill_group(proc)  # the drafter and what it left in its group; a new session survives
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            _close_quietly(pipe)
        proc.wait()
    return _outcome(command, proc, state, timeout, output_limit)


def _spawn(argv: list[str], cwd: str | Path) -> subprocess.Popen:
    """Start ``argv`` in ``cwd`` in a new session with raw (unbuffered) pipes on its stdin,
    stdout and stderr. DrafterError when it is not found or cannot start."""
    try:
        return subprocess.Popen(argv, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True, bufsize=0)
    except FileNotFoundError:
        raise DrafterError(f"drafter {argv[0]!r} not found (is it installed and on PATH?)") from None
    except OSError as exc:
        raise DrafterError(f"drafter {argv[0]!r} cannot start: {exc.strerror or exc}") from None


@dataclass
class _Exchange:
    """One drafter run's pipes so far: the prompt bytes (``data``, ``sent`` of them written),
    the output pipes still open (``readers``: fd -> "out" or "err"), what it printed on stdout,
    the last chunks of its stderr (``kept`` bytes in ``err``), and why reading stopped early."""

    data: memoryview
    readers: dict[int, str]
    out: bytearray = field(default_factory=bytearray)
    err: deque[bytes] = field(default_factory=deque)
    kept: int = 0
    sent: int = 0
    timed_out: bool = False
    overflow: bool = False


def _exchange(proc: subprocess.Popen, state: _Exchange, deadline: float, output_limit: int) -> None:
    """Write the prompt and read stdout and stderr with one ``selectors`` loop until both
    pipes close, ``STRAGGLER_SECONDS`` after the drafter exited, ``deadline`` (monotonic
    seconds: ``timed_out``) or more than ``output_limit`` bytes on stdout (``overflow``)."""
    watch = exit_watch(proc)
    exited_at: float | None = None
    selector = selectors.DefaultSelector()
    try:
        for fd, what in state.readers.items():
            os.set_blocking(fd, False)
            selector.register(fd, selectors.EVENT_READ, what)
        if state.data:
            os.set_blocking(proc.stdin.fileno(), False)
            selector.register(proc.stdin.fileno(), selectors.EVENT_WRITE, "in")
        else:
            _close_quietly(proc.stdin)
        if watch is not None:
            selector.register(watch, selectors.EVENT_READ, "exit")
        while state.readers and not state.overflow:
            now = time.monotonic()
            if exited_at is None and proc.poll() is not None:
                exited_at = now
            end = deadline if exited_at is None else min(deadline, exited_at + STRAGGLER_SECONDS)
            if now >= end:
                state.timed_out = exited_at is None
                break
            wait = end - now if exited_at is not None or watch is not None else min(end - now, 0.05)
            for key, _events in selector.select(wait):
                what = key.data
                if what == "exit":  # the drafter exited: poll() above sees it next round
                    selector.unregister(key.fd)
                elif what == "in":
                    _send(selector, key, proc, state)
                else:
                    _receive(selector, key, state, output_limit)
                    if state.overflow:
                        break
        if not state.readers and not state.overflow and proc.poll() is None:
            # both pipes closed but the drafter runs on: wait for it until the deadline
            try:
                proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                state.timed_out = True
    finally:
        selector.close()
        if watch is not None:
            os.close(watch)


def _send(selector: selectors.BaseSelector, key: selectors.SelectorKey, proc: subprocess.Popen,
          state: _Exchange) -> None:
    """Write the next piece of the prompt; stdin is closed once all of it is sent (or the
    drafter closed its end: it need not read all of it)."""
    try:
        state.sent += os.write(key.fd, state.data[state.sent:state.sent + 65536])
    except BlockingIOError:
        return
    except OSError:  # the drafter closed its stdin: it need not read all of it
        state.sent = len(state.data)
    if state.sent >= len(state.data):
        selector.unregister(key.fd)
        _close_quietly(proc.stdin)


def _receive(selector: selectors.BaseSelector, key: selectors.SelectorKey, state: _Exchange,
             output_limit: int) -> None:
    """Read what the drafter printed on one pipe: stdout is kept whole (``overflow`` past
    ``output_limit``), stderr only its last ``STDERR_TAIL_BYTES`` or so; a closed pipe
    leaves ``readers``."""
    try:
        chunk = os.read(key.fd, 65536)
    except BlockingIOError:
        return
    except OSError:
        chunk = b""
    if not chunk:
        selector.unregister(key.fd)
        del state.readers[key.fd]
    elif key.data == "out":
        state.out.extend(chunk)
        if len(state.out) > output_limit:
            state.overflow = True
    else:
        state.err.append(chunk)
        state.kept += len(chunk)
        while state.kept - len(state.err[0]) >= STDERR_TAIL_BYTES:
            state.kept -= len(state.err.popleft())


def _outcome(command: str, proc: subprocess.Popen, state: _Exchange, timeout: float,
             output_limit: int) -> DrafterRun:
    """The finished run as a DrafterRun, or the DrafterError that says why it failed."""
    tail = b"".join(state.err)[-STDERR_TAIL_BYTES:].decode("utf-8", "replace")
    if state.timed_out:
        raise DrafterError(f"drafter `{command}` did not finish within {timeout:g} s: stopped, "
                           "nothing written", tail)
    if state.overflow:
        raise DrafterError(f"drafter `{command}` printed more than {output_limit} bytes: stopped, "
                           "nothing written", tail)
    if proc.returncode != 0:
        raise DrafterError(f"drafter `{command}` exited with status {proc.returncode}: nothing written",
                           tail, proc.returncode)
    out = state.out
    if not bytes(out).strip():
        raise DrafterError(f"drafter `{command}` printed nothing: nothing written", tail, 0)
    try:
        text = bytes(out).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DrafterError(f"drafter `{command}` printed bytes that are not UTF-8 (byte {exc.start})",
                           tail, 0) from None
    return DrafterRun(command, text, tail, proc.returncode)
