"""One writer of ``git fast-import`` streams for the benches that build large histories.

``FastImport`` collects commits with inline files, renames and deletes and either imports
them into a new repository (``run``) or hands the stream over (``stream``) for a repository
made otherwise (a bare one). Paths are quoted as fast-import's C-style strings, so spaces,
quotes and non-ASCII names pass. Used by bench/bind.py, bench/bigrepo.py, bench/check_split.py
and bench/replay.py.
"""

from __future__ import annotations

import subprocess
from pathlib import Path


def _quote(path: str) -> str:
    return '"' + path.replace("\\", "\\\\").replace('"', '\\"') + '"'


class FastImport:
    """A ``git fast-import`` stream being written: commits with inline files, renames and
    deletes, run in one process (every bench that builds a large history builds with it)."""

    def __init__(self) -> None:
        self.out: list[bytes] = []

    def commit(self, ref: str, mark: int, when: int, message: str, parent: int | None = None,
               who: str = "b <b@example.invalid>") -> None:
        """Start commit ``:mark`` on ``ref`` at unix time ``when``, on ``:parent`` when given."""
        data = message.encode()
        self.out.append(f"commit {ref}\nmark :{mark}\ncommitter {who} {when} +0000\n"
                        f"data {len(data)}\n".encode() + data + b"\n")
        if parent is not None:
            self.out.append(f"from :{parent}\n".encode())

    def put(self, path: str, body: str | bytes) -> None:
        """Write ``path`` (mode 100644) with ``body`` (text is UTF-8 encoded) in the current commit."""
        data = body.encode() if isinstance(body, str) else body
        self.out.append(f"M 100644 inline {_quote(path)}\ndata {len(data)}\n".encode() + data + b"\n")

    def rename(self, old: str, new: str) -> None:
        """Rename ``old`` to ``new`` in the current commit."""
        self.out.append(f"R {_quote(old)} {_quote(new)}\n".encode())

    def delete(self, path: str) -> None:
        """Delete ``path`` in the current commit."""
        self.out.append(f"D {_quote(path)}\n".encode())

    def stream(self) -> bytes:
        """The stream written so far, as ``git fast-import`` reads it on stdin."""
        return b"".join(self.out)

    def run(self, root: Path) -> None:
        """``git init`` ``root`` (branch main) and import the stream into it."""
        subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
        subprocess.run(["git", "fast-import", "--quiet"], cwd=root, input=self.stream(), check=True)
