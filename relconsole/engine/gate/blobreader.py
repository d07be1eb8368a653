"""Reading many blobs through one ``git cat-file --batch`` (what the review flags of SPEC §9 read).

``BlobReader`` answers ``rev:path`` (or a blob id) with the blob's bytes, at most
``MAX_TEXT_BYTES`` held in memory; the flag rules, the acks and the lease history read
committed files through it.
"""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path

from relconsole.engine.repo.gitio import clean_env

MAX_TEXT_BYTES = 8 << 20  # larger blobs are compared by id only: no line is given


class Oversized(bytes):
    """What a blob over ``MAX_TEXT_BYTES`` reads as: empty bytes that say they stand for more
    (``oversized``), so an empty file is never taken for one too large to read (red team,
    issue 35: every new empty ``__init__.py`` was "not read for probes")."""


OVERSIZED = Oversized(b"")


def oversized(data) -> bool:
    """Whether ``data`` stands for a blob too large to read (``Oversized``)."""
    return isinstance(data, Oversized)


class BlobReader:
    """Reads ``rev:path`` blobs through one ``git cat-file --batch`` process (a path with a
    newline, which the batch protocol cannot name, goes through ``git cat-file blob``)."""

    def __init__(self, repo_dir: str | Path):
        self.repo_dir = repo_dir
        self._proc: subprocess.Popen | None = None

    def read(self, rev: str | None, path: str | None) -> bytes | None:
        """The blob's bytes; None when absent (or not a blob). A blob over MAX_TEXT_BYTES
        gives ``OVERSIZED`` (empty, ``oversized()``): it is never held in memory, and no line is computed for it."""
        if rev is None or path is None:
            return None
        if "\n" in path:
            proc = subprocess.run(["git", "cat-file", "blob", f"{rev}:{path}"], cwd=self.repo_dir,
                                  env=clean_env(), capture_output=True)
            return proc.stdout if proc.returncode == 0 else None
        self._start()
        self._proc.stdin.write(f"{rev}:{path}\n".encode("utf-8", "surrogateescape"))
        self._proc.stdin.flush()
        return self._answer()

    def read_many(self, wanted: list[tuple[str | None, str | None]],
                  oids: list[str | None] | None = None) -> list[bytes | None]:
        """``read`` of each (rev, path), the requests written by a thread while the answers
        are read, so 20,000 blobs cost one pipe's throughput, not 20,000 round trips.
        ``oids`` (same length, when given): the blob id each (rev, path) is known to hold
        (from a ``git diff-tree`` listing), asked for by id: git then looks up no path in
        any tree, about 20 times faster over 20,000 blobs. None in it: asked by path."""
        names = [oids[i] if oids is not None and oids[i] else
                 None if rev is None or path is None or "\n" in path else f"{rev}:{path}"
                 for i, (rev, path) in enumerate(wanted)]
        batched = [i for i, name in enumerate(names) if name is not None]
        alone = set(range(len(wanted))) - set(batched)  # absent sides, and paths the batch cannot name
        out: list[bytes | None] = [self.read(*wanted[i]) if i in alone else None for i in range(len(wanted))]
        if not batched:
            return out
        self._start()
        requests = b"".join(f"{names[i]}\n".encode("utf-8", "surrogateescape") for i in batched)

        def write() -> None:
            try:
                self._proc.stdin.write(requests)
                self._proc.stdin.flush()
            except (BrokenPipeError, ValueError):
                pass  # git went away: the answers read below come up short
        writer = threading.Thread(target=write, daemon=True)
        writer.start()
        for i in batched:
            out[i] = self._answer()
        writer.join()
        return out

    def _start(self) -> None:
        if self._proc is None:
            self._proc = subprocess.Popen(["git", "cat-file", "--batch"], cwd=self.repo_dir, env=clean_env(),
                                          stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def _answer(self) -> bytes | None:
        """One blob's answer from the batch process, as ``read`` returns it."""
        # "<oid> <type> <size>", or "<object name> missing": the name holds the path, spaces
        # and all, so the answer is read from the right
        header = self._proc.stdout.readline().rstrip(b"\n").rsplit(b" ", 2)
        if len(header) != 3 or not header[2].isdigit():
            return None
        size = int(header[2])
        if header[1] != b"blob" or size > MAX_TEXT_BYTES:
            self._skip(size + 1)
            return OVERSIZED if header[1] == b"blob" else None
        data = self._proc.stdout.read(size)
        self._proc.stdout.read(1)
        return data

    def _skip(self, count: int) -> None:
        while count > 0:
            chunk = self._proc.stdout.read(min(count, 1 << 20))
            if not chunk:  # git went away; the next header read reports nothing
                return
            count -= len(chunk)

    def close(self) -> None:
        """End the batch process and close both of its pipes (no ResourceWarning under -W error)."""
        if self._proc is not None:
            self._proc.stdin.close()
            self._proc.wait()
            self._proc.stdout.close()
            self._proc = None

    def __enter__(self) -> "BlobReader":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
