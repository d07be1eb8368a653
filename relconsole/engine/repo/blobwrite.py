"""A commit's blobs written into a folder byte for byte (SPEC §7: trees as committed).

``tree_listing`` lists a commit's blobs (``git ls-tree -r -z``); ``write_blobs`` streams
them through one ``git cat-file --batch`` into a folder, whatever the tree's
``.gitattributes`` or the user's ``core.autocrlf`` say. ``place_target`` decides where a
repository path may go under that folder: never outside it, never through a symlink, never
into ``.git``. ``exportstore`` places its files with the same parts.
"""

from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path

from relconsole.engine.errors import GitError
from relconsole.engine.repo.gitio import clean_env


def tree_listing(repo, commit: str, paths: list[str] | None = None) -> list[tuple[int, str, str]]:
    """(mode, blob id, path) of every blob ``commit`` holds (under ``paths``), from
    ``git ls-tree -r -z``. Raises GitError."""
    args = ["ls-tree", "-r", "-z", "--full-tree", commit]
    if paths:
        args += ["--", *paths]
    proc = subprocess.run(["git", *args], cwd=repo.working_tree_dir or repo.git_dir, env=clean_env(),
                          capture_output=True)
    if proc.returncode != 0:
        raise GitError(f"git ls-tree {commit[:12]} failed: {proc.stderr.decode(errors='replace').strip()}")
    out = []
    for record in proc.stdout.split(b"\0"):
        if not record:
            continue
        meta, _, path = record.partition(b"\t")
        mode, kind, oid = meta.split()
        if kind == b"blob":
            out.append((int(mode, 8), oid.decode(), path.decode("utf-8", "surrogateescape")))
    return out


def write_blobs(repo, commit: str, dest: Path, paths: list[str] | None = None,
                unchanged: dict[str, tuple] | None = None) -> dict[str, tuple]:
    """Write ``commit``'s blobs (under ``paths``) into ``dest`` byte for byte (see
    ``TreeView.export``). ``unchanged``: what an earlier call returned for the same ``dest``;
    a path whose blob id and stat are still as recorded there is not written again.
    Returns path -> (blob id, size, mtime_ns, ctime_ns, inode) of every file now there.
    Raises GitError."""
    entries = tree_listing(repo, commit, paths)
    written: dict[str, tuple] = {}
    if unchanged:
        kept = []
        for mode, oid, path in entries:
            state = _stat(Path(dest) / path, oid)
            if state is not None and list(unchanged.get(path) or ()) == list(state):
                written[path] = state
            else:
                kept.append((mode, oid, path))
        entries = kept
    if not entries:
        return written
    os.makedirs(dest, exist_ok=True)
    root = os.path.realpath(dest)
    proc = subprocess.Popen(["git", "cat-file", "--batch"], cwd=repo.working_tree_dir or repo.git_dir,
                            env=clean_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    feeder = threading.Thread(target=feed_oids, args=(proc.stdin, [oid for _, oid, _ in entries]), daemon=True)
    feeder.start()
    try:
        for mode, oid, path in entries:
            header = proc.stdout.readline().split()
            if len(header) != 3 or header[1] != b"blob":
                raise GitError(f"git cat-file: blob {oid} of {path} is missing from the object database")
            placed = _place(root, path, mode, proc.stdout, int(header[2]))
            proc.stdout.read(1)  # the newline after the content
            if placed:
                state = _stat(Path(dest) / path, oid)
                if state is not None:
                    written[path] = state
    finally:
        proc.stdout.close()
        proc.kill()
        proc.wait()
        feeder.join(timeout=5)
    return written


def _stat(path: Path, oid: str) -> tuple | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return (oid, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def feed_oids(stream, oids: list[str]) -> None:
    """Write ``oids`` to ``stream`` (cat-file --batch's stdin) 1,000 lines at a time, then close it;
    a reader that went away (a broken pipe, a closed stream) ends the feed quietly."""
    try:
        for start in range(0, len(oids), 1000):
            stream.write("".join(o + "\n" for o in oids[start:start + 1000]).encode())
        stream.close()
    except (BrokenPipeError, OSError, ValueError):
        pass


def _copy(stream, size: int, out=None) -> bytes:
    """Read ``size`` bytes of ``stream`` (into ``out`` in chunks, when given; else returned)."""
    chunks, left = [], size
    while left:
        chunk = stream.read(min(left, 1 << 20))
        if not chunk:
            raise GitError("git cat-file stopped in the middle of a blob")
        left -= len(chunk)
        if out is not None:
            out.write(chunk)
        else:
            chunks.append(chunk)
    return b"".join(chunks)


def place_target(root: str, path: str) -> str | None:
    """Where the repository path ``path`` goes under the real folder ``root``: every folder
    on the way made a real folder (a file in the way removed), whatever is at the target
    removed. None for a path that would leave ``root`` (absolute,
    ``..``, ``.``, an empty part, ``.git``, a folder on the way that is a symlink)."""
    parts = path.split("/")
    if path.startswith("/") or any(p in ("", ".", "..", ".git") for p in parts):
        return None
    parent = root
    for part in parts[:-1]:
        parent = os.path.join(parent, part)
        if os.path.islink(parent):
            return None
        if not os.path.isdir(parent):
            if os.path.lexists(parent):
                os.unlink(parent)
            os.mkdir(parent)
    target = os.path.join(parent, parts[-1])
    if os.path.isdir(target) and not os.path.islink(target):
        import shutil  # here: a command that writes no tree never loads it
        shutil.rmtree(target)
    elif os.path.lexists(target):
        os.unlink(target)
    return target


def _place(root: str, path: str, mode: int, stream, size: int) -> bool:
    """Write the next ``size`` bytes of ``stream`` (one blob) at ``root/path``, never through
    a symlink, streamed (a 1 GiB corpus never sits in memory); False when it is not written
    (a path that leaves ``root``, a symlink whose target leaves it): its bytes are read anyway."""
    target = place_target(root, path)
    if target is None:
        _copy(stream, size, _Discard())
        return False
    parent = os.path.dirname(target)
    if mode == 0o120000:
        link = _copy(stream, size).decode("utf-8", "surrogateescape")
        resolved = os.path.normpath(os.path.join(parent, link))
        if os.path.isabs(link) or not (resolved == root or resolved.startswith(root + os.sep)):
            return False  # a symlink out of the tree is left out (a lease on it reads as absent)
        os.symlink(link, target)
        return True
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o755 if mode == 0o100755 else 0o644)
    with os.fdopen(fd, "wb") as handle:
        _copy(stream, size, handle)
    return True


class _Discard:
    def write(self, chunk: bytes) -> None:
        pass
