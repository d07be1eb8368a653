"""Child processes relconsole starts in a session of their own: watching for their exit and
killing their whole process group (SPEC §7: nothing the subject or a drafter starts outlives
the call that started it). One helper for the judge's fork servers, the worker pool and the
drafter, which each wrote their own before (issue 19). The harness inside the sandbox keeps
its own ``os.killpg``: it runs stdlib-only, without relconsole.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess


def exit_watch(proc: subprocess.Popen) -> int | None:
    """A descriptor that turns readable when ``proc`` exits (Linux pidfd), or None where the
    platform has none or ``proc`` was reaped already. The caller closes it."""
    if proc.returncode is not None:
        return None
    try:
        return os.pidfd_open(proc.pid)  # not reaped yet, so the pid cannot be another's
    except (AttributeError, OSError):
        return None


def wait_exit(proc: subprocess.Popen, seconds: float) -> int:
    """``proc.wait(timeout=seconds)`` without its polling: Popen sleeps 0.5 ms, 1 ms, 2 ms ...
    up to 50 ms between looks, which made every reaped server cost up to tens of ms more
    than its exit. A pidfd turns readable the moment the process exits; ``poll``, not
    ``select``, watches it (select fails for a descriptor above 1024 in a long run).
    Returns the exit status; raises subprocess.TimeoutExpired as ``wait`` does."""
    if proc.returncode is not None:
        return proc.returncode
    fd = exit_watch(proc)
    if fd is None:
        return proc.wait(timeout=seconds)
    try:
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        poller.poll(max(0, int(seconds * 1000) + 1))
    finally:
        os.close(fd)
    return proc.wait(timeout=0)


def kill_group(proc: subprocess.Popen, reap_seconds: float = 5.0) -> None:
    """SIGKILL ``proc``'s process group (it was started with ``start_new_session=True``), and
    ``proc`` itself should the group be gone or not ours, then reap it within
    ``reap_seconds`` seconds (one stuck in the kernel longer is left to the caller's exit).
    A child that started a session of its own is not in the group and cannot be reached
    here: the sandbox's pid namespace ends those. Raises nothing."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass
    try:
        proc.kill()  # a no-op once reaped
    except OSError:
        pass
    try:
        wait_exit(proc, reap_seconds)
    except subprocess.TimeoutExpired:
        pass
