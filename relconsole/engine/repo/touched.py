"""The paths a patch touched: ``git diff --name-status -z -M`` of two commits, parsed (SPEC §3: the
touched-path owner map is matched against them; §8).

No C-quoting of odd names (``-z``), renames with both paths (``-M``), submodule changes
always seen (``IGNORE_NO_SUBMODULE``). The diff runs in the background (``start_touched``)
while the caller reads the oracle; rows are named tuples, made with the cyclic collector
paused (a diff of 100,000 paths makes 100,000 of them).
"""

from __future__ import annotations

import gc
import subprocess
import threading
from collections import namedtuple

from relconsole.engine.errors import GitError
from relconsole.engine.repo.gitio import IGNORE_NO_SUBMODULE, NO_FSMONITOR, clean_env


class Touched(namedtuple("Touched", "status path old_path", defaults=(None,))):
    """One path the patch touched: ``Touched(status, path, old_path=None)``; ``status`` is
    git's letter (A, M, D, R, C, T). For renames and copies ``old_path`` is the source path;
    else None. Immutable (a named tuple: a diff of 100,000 paths makes 100,000 of them, and
    a tuple costs less to make, read and free than a frozen dataclass; importing
    ``dataclasses`` alone cost a command-line start 6 ms)."""

    __slots__ = ()


class TouchedDiff:
    """``git diff --name-status -z -M`` of two commits, running: started by ``start_touched``
    so that git works while the caller reads the oracle; ``result()`` waits for it and
    parses it into ``Touched`` rows (``touched_paths``). Raises GitError from ``result``
    with git's first error line when git fails (an unknown or missing commit, a broken
    object database)."""

    def __init__(self, repo, base: str, head: str):
        self.base, self.head = base, head
        self.cwd = repo.working_tree_dir or repo.git_dir
        try:
            self.proc = subprocess.Popen(
                ["git", *NO_FSMONITOR, "diff", "--name-status", "-z", "-M", "--no-ext-diff", IGNORE_NO_SUBMODULE, base, head],
                cwd=self.cwd, env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        except OSError as exc:
            raise GitError(f"cannot run git diff in {self.cwd}: {exc.strerror or exc}") from None
        self._out: list = []
        # drained on a thread: git would stop at a full pipe (64 KiB) until result() reads
        self._drain = threading.Thread(target=self._communicate, name="relconsole-diff", daemon=True)
        self._drain.start()

    def _communicate(self) -> None:
        try:
            self._out[:] = self.proc.communicate()
        except BaseException as exc:  # raised by result(), on the caller's thread
            self._out[:] = [exc]

    def cancel(self) -> None:
        """Stop git (the caller no longer wants the diff) and wait for it."""
        if self.proc.poll() is None:
            self.proc.kill()
        self._drain.join()

    def result(self) -> list[Touched]:
        self._drain.join()
        if len(self._out) == 1:
            raise self._out[0]
        raw, said = self._out
        if self.proc.returncode != 0:
            lines = said.decode("utf-8", "replace").strip().splitlines()
            raise GitError(f"git diff {self.base[:12]} {self.head[:12]} failed in {self.cwd}: "
                           f"{lines[0] if lines else f'exit {self.proc.returncode}'}")
        return _parse_touched(raw.decode("utf-8", "surrogateescape"))


def start_touched(repo, base: str, head: str) -> TouchedDiff:
    """Start ``touched_paths(repo, base, head)`` in the background (see ``TouchedDiff``)."""
    return TouchedDiff(repo, base, head)


def touched_paths(repo, base: str, head: str) -> list[Touched]:
    """Paths changed between ``base`` and ``head`` (commits), renames detected. Raises
    GitError (abort, §8) with git's message when git cannot diff them."""
    return TouchedDiff(repo, base, head).result()


def _parse_touched(raw: str) -> list[Touched]:
    """Touched rows of ``--name-status -z`` output. The cyclic garbage collector is paused
    while they are made (100,000 acyclic rows would otherwise trigger collections that walk
    the caller's whole heap); each row is made by ``tuple.__new__`` (the named tuple's own
    ``__new__`` adds an argument-handling call per row)."""
    fields = raw.split("\0")
    out: list[Touched] = []
    append = out.append
    make = tuple.__new__
    collecting = gc.isenabled()
    gc.disable()
    try:
        i = 0
        count = len(fields)
        while i < count and fields[i]:
            letter = fields[i][0]
            if letter in "RC":
                append(make(Touched, (letter, fields[i + 2], fields[i + 1])))
                i += 3
            else:
                append(make(Touched, (letter, fields[i + 1], None)))
                i += 2
    finally:
        if collecting:
            gc.enable()
    return out

