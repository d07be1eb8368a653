"""engine/processes.py: the one helper that watches a child's exit and kills its process group
(the judge's fork servers, the worker pool and the drafter share it since issue 19)."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import textwrap

import pytest

from relconsole.engine.processes import kill_group, wait_exit


def _exits_within(pidfd: int, seconds: float) -> bool:
    """Whether the process behind ``pidfd`` (any process, not only a child) has exited."""
    poller = select.poll()
    poller.register(pidfd, select.POLLIN)
    return bool(poller.poll(int(seconds * 1000)))


def test_kill_group_ends_the_child_and_what_it_left_in_its_group():
    script = ("import subprocess, sys, time\n"
              "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
              "print(p.pid, flush=True)\n"
              "time.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-c", script], start_new_session=True, stdout=subprocess.PIPE)
    try:
        grandchild = int(proc.stdout.readline())
        watch = os.pidfd_open(grandchild)
        try:
            assert not _exits_within(watch, 0), "the grandchild runs before the kill"
            kill_group(proc)
            assert proc.returncode is not None, "the child is reaped, not left a zombie"
            assert _exits_within(watch, 30), "the grandchild in the child's group is killed too"
        finally:
            os.close(watch)
    finally:
        kill_group(proc)
        proc.stdout.close()


def test_kill_group_on_a_reaped_process_raises_nothing():
    proc = subprocess.Popen(["true"], start_new_session=True)
    proc.wait()
    kill_group(proc)
    assert proc.returncode == 0


def test_wait_exit_gives_the_status_and_times_out_as_wait_does():
    quick = subprocess.Popen([sys.executable, "-c", "raise SystemExit(7)"])
    assert wait_exit(quick, 30) == 7
    slow = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    try:
        with pytest.raises(subprocess.TimeoutExpired):
            wait_exit(slow, 0.05)
    finally:
        kill_group(slow)
    assert slow.returncode is not None


def test_wait_exit_works_when_descriptors_above_1024_are_in_use():
    """A long run holds many descriptors; select() refuses one above 1024, poll() does not."""
    code = textwrap.dedent("""
        import os, resource, subprocess, sys
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if hard != resource.RLIM_INFINITY and hard < 2048:
            print("skip"); raise SystemExit(0)
        resource.setrlimit(resource.RLIMIT_NOFILE, (2048, hard))
        held = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]
        proc = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
        from relconsole.engine.processes import wait_exit
        print(wait_exit(proc, 30))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    if out.stdout.strip() == "skip":
        pytest.skip("the hard descriptor limit is below 2048 here")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "3"
