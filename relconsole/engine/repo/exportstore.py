"""The oracle's files, kept once per blob under the git dir and hard-linked into each export
(SPEC §2, §7: trees as committed; issue 17).

A review exports the oracle commit's protected files into a private temporary folder
(``workspace.export_oracle``). Writing 2,300 files anew on every load of a large oracle cost
half a second (creating a file is the expensive part); linking them costs a twentieth of
that. ``export_blobs`` keeps each regular blob once in ``<git common dir>/relconsole/exports/``
as ``<blob id>`` (``<blob id>.x`` for an executable), read-only (0444, 0555), and makes
each exported file a hard link to it.

What the store may not do, and why it cannot:

* Hand back other bytes than the blob's. Every linked file is hashed as git hashes a blob
  (``blob <size>\\0`` and the bytes, SHA-1 or SHA-256 by the id's length) *after* it is
  linked, so what is checked is the very inode the export holds; a file that fails
  (edited, truncated, replaced by a symlink or a folder, its mode changed) is unlinked
  from the export and from the store and written again from git. It is never used.
* Carry anything of the reviewed tree. Only blobs of the oracle commit are asked for, by
  the ids its tree lists; a file of the patch with the same id is the same bytes.
* Write outside the export. Paths are placed as ``blobwrite.write_blobs`` places them
  (``blobwrite.place_target``: no ``..``, no ``.git``, never through a symlink); symlinks
  are not kept in the store but written as before (only those that stay inside).
* Let a run change it. Exported files are links to read-only files; nothing in relconsole
  writes to the oracle export (run trees copy from it, ``workspace.overlay_oracle``).

Where the file system refuses links (the export on another file system than the git dir,
say a tmpfs ``/tmp``), files are written from git as before. The store keeps the files
the last export used and, beyond twice their number and ``SPARE``, drops the others.
"""

from __future__ import annotations

import errno
import hashlib
import os
import shutil
import stat
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from relconsole.engine.errors import GitError
from relconsole.engine.repo.blobwrite import _copy, feed_oids, _place, place_target
from relconsole.engine.repo.gitio import clean_env

STORE = Path("relconsole") / "exports"
SPARE = 1000  # files kept beyond twice what one export uses before unused ones are dropped
STALE_SECONDS = 3600  # a file written this recently is never dropped (another export may be linking it)
LINK_REFUSED = {errno.EXDEV, errno.EPERM, errno.EMLINK, errno.ENOTSUP, errno.EACCES}
_CHUNK = 1 << 20


def store_dir(repo) -> Path:
    """``<git common dir>/relconsole/exports`` (made on first use, private to its owner);
    ``repo``: a ``gitio.Repository`` (or a GitPython ``Repo``: only its directories are read)."""
    store = Path(repo.common_dir) / STORE
    store.mkdir(mode=0o700, parents=True, exist_ok=True)
    return store


def blob_digest(path: str | os.PathLike, oid: str) -> bool:
    """Whether the regular file at ``path`` (never followed if a symlink) holds the blob
    ``oid``: its bytes hashed as git hashes a blob, SHA-1 for a 40-digit id, SHA-256 for
    a 64-digit one. False for anything else (absent, a symlink, a folder, unreadable)."""
    algorithm = {40: "sha1", 64: "sha256"}.get(len(oid))
    if algorithm is None:
        return False
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return False
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            return False
        digest = hashlib.new(algorithm, b"blob %d\0" % info.st_size)
        left = info.st_size
        while left > 0:
            chunk = handle.read(min(left, _CHUNK))
            if not chunk:
                return False
            digest.update(chunk)
            left -= len(chunk)
        if handle.read(1):  # grew while read
            return False
    return digest.hexdigest() == oid


def _name(oid: str, mode: int) -> str:
    return oid + (".x" if mode == 0o100755 else "")


def _stored_mode(mode: int) -> int:
    return 0o555 if mode == 0o100755 else 0o444


def _sound(target: str, oid: str, mode: int) -> bool:
    """The linked file is the blob, with the store's read-only mode (executable or not)."""
    try:
        info = os.lstat(target)
    except OSError:
        return False
    return (stat.S_ISREG(info.st_mode) and stat.S_IMODE(info.st_mode) == _stored_mode(mode)
            and blob_digest(target, oid))


def _regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def _discard(path: str | os.PathLike) -> None:
    try:
        os.unlink(path)
    except IsADirectoryError:
        shutil.rmtree(path, ignore_errors=True)
    except OSError:
        pass


def export_blobs(repo, entries: list[tuple[int, str, str]], dest: Path) -> None:
    """Place each (mode, blob id, path) of ``entries`` (``blobwrite.tree_listing`` rows of one
    commit) under ``dest``: regular files as hard links to the store's verified copy,
    written there from git first when it lacks one or holds one that fails its hash;
    symlinks (those that stay inside ``dest``) and everything where links are refused
    written from git, as ``blobwrite.write_blobs`` writes them. Raises GitError when git
    cannot give a blob, OSError when a file cannot be written."""
    os.makedirs(dest, exist_ok=True)
    root = os.path.realpath(dest)
    store = store_dir(repo)
    linking = os.stat(store).st_dev == os.stat(root).st_dev  # a link never crosses file systems
    direct: list[tuple[int, str, str]] = []  # written from git into dest
    missing: dict[str, tuple[str, int]] = {}  # store name -> (oid, mode): written into the store
    links: list[tuple[str, str, str, int]] = []  # (store name, target, oid, mode), linked once stored
    used: set[str] = set()
    ready: set[str] = set()  # folders place_target made real in this call: their files need no walk
    for mode, oid, path in entries:
        if mode == 0o120000 or not linking:
            direct.append((mode, oid, path))
            continue
        target = _target(root, path, ready)
        if target is None:
            continue  # a path that leaves the export: left out, as write_blobs leaves it
        name = _name(oid, mode)
        used.add(name)
        try:
            os.link(store / name, target)
        except FileNotFoundError:
            missing[name] = (oid, mode)
            links.append((name, target, oid, mode))
            continue
        except OSError as exc:
            if exc.errno not in LINK_REFUSED:
                raise
            if os.path.lexists(store / name) and not _regular(store / name):  # a folder where the file should be
                _discard(store / name)
                missing[name] = (oid, mode)
                links.append((name, target, oid, mode))
                continue
            linking = exc.errno == errno.EMLINK  # one file linked too often: only it is written
            direct.append((mode, oid, path))
            continue
        if not _sound(target, oid, mode):  # damaged or planted: never used, written again
            _discard(target)
            _discard(store / name)
            missing[name] = (oid, mode)
            links.append((name, target, oid, mode))
    if missing or direct:
        _from_git(repo, store, root, missing, direct)
    unlinked = []  # links refused (or a store file another review dropped meanwhile): written from git
    for name, target, oid, mode in links:
        if linking:
            try:
                os.link(store / name, target)
                continue
            except OSError as exc:
                if exc.errno not in LINK_REFUSED and not isinstance(exc, FileNotFoundError):
                    raise
                linking = exc.errno == errno.EMLINK or isinstance(exc, FileNotFoundError)
        unlinked.append((mode, oid, os.path.relpath(target, root).replace(os.sep, "/")))
    if unlinked:
        _from_git(repo, store, root, {}, unlinked)
    if used:
        _evict(store, used)


def _target(root: str, path: str, ready: set[str]) -> str | None:
    """``blobwrite.place_target(root, path)``, without walking a folder it already made real
    in this export again (no symlink is placed before every regular file is linked)."""
    parent, _, leaf = path.rpartition("/")
    if parent in ready and leaf not in ("", ".", "..", ".git") and not path.startswith("/"):
        target = os.path.join(root, path)
        if not os.path.lexists(target):
            return target
    target = place_target(root, path)
    if target is not None:
        ready.add(parent)
    return target


def _from_git(repo, store: Path, root: str, missing: dict[str, tuple[str, int]],
              direct: list[tuple[int, str, str]]) -> None:
    """One streamed ``git cat-file --batch``: the ``missing`` store files (each written to
    a temporary file, checked against its id, made read-only, renamed into place), then the
    ``direct`` entries placed under ``root`` by ``blobwrite._place``."""
    asks = [oid for oid, _mode in missing.values()] + [oid for _mode, oid, _path in direct]
    proc = subprocess.Popen(["git", "cat-file", "--batch"], cwd=repo.working_tree_dir or repo.git_dir,
                            env=clean_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    feeder = threading.Thread(target=feed_oids, args=(proc.stdin, asks), daemon=True)
    feeder.start()
    try:
        for name, (oid, mode) in missing.items():
            _store(store, name, oid, mode, proc.stdout, _size(proc.stdout, oid, name))
            proc.stdout.read(1)  # the newline after the content
        for mode, oid, path in direct:
            _place(root, path, mode, proc.stdout, _size(proc.stdout, oid, path))
            proc.stdout.read(1)
    finally:
        proc.stdout.close()
        proc.kill()
        proc.wait()
        feeder.join(timeout=5)


def _size(stream, oid: str, what: str) -> int:
    header = stream.readline().split()
    if len(header) != 3 or header[1] != b"blob":
        raise GitError(f"git cat-file: blob {oid} of {what} is missing from the object database")
    return int(header[2])


def _store(store: Path, name: str, oid: str, mode: int, stream, size: int) -> None:
    fd, scratch = tempfile.mkstemp(prefix=".new-", dir=store)
    try:
        with os.fdopen(fd, "wb") as handle:
            _copy(stream, size, handle)
        if not blob_digest(scratch, oid):
            raise GitError(f"git cat-file: the bytes given for blob {oid} do not hash to it")
        os.chmod(scratch, _stored_mode(mode))
        os.replace(scratch, store / name)
    except BaseException:
        _discard(scratch)
        raise


def _evict(store: Path, used: set[str]) -> None:
    """Drop files no export used lately once the store holds more than twice ``used`` plus
    ``SPARE``: the files of ``used`` stay, and so does anything written in the last
    ``STALE_SECONDS`` (another review may be about to link it)."""
    try:
        with os.scandir(store) as scan:
            names = [entry.name for entry in scan]
    except OSError:
        return
    if len(names) <= 2 * len(used) + SPARE:
        return
    cutoff = time.time() - STALE_SECONDS
    for name in names:
        if name in used:
            continue
        path = store / name
        try:
            if os.lstat(path).st_mtime < cutoff:
                _discard(path)
        except OSError:
            pass
