"""Streamed sha256 of corpora and fixtures, and a cache of digests (SPEC §4).

Lease corpora and fixture pins are hashed on every review load; corpora can be
gigabytes. Three things keep that cheap and safe:

* ``sha256_stream`` reads a file in ``CHUNK_BYTES`` chunks into one reused, page-aligned
  buffer (``readv``: no allocation per chunk, memory flat for any size) and reports progress.
* ``open_regular`` opens non-blocking, then checks the *opened* descriptor with ``fstat``:
  a directory, FIFO, socket or device is refused at once, even one swapped in after a
  ``stat`` check (a FIFO opened for reading would otherwise block forever).
* ``HashCache`` remembers digests in ``<git dir>/relconsole/hashcache.json``:
  working-tree files by path, trusted only while size, mtime, ctime, inode and device are
  unchanged and the file was not changed within ``RACY_NS`` of being hashed (git's
  "racily clean" rule, on ctime as well as mtime: ``os.utime`` can set an mtime back,
  nothing but the clock sets a ctime); committed files by git blob oid, which names the content, so such
  an entry never goes stale (``CommitFiles``). The cache is an optimisation only: an
  unreadable or corrupt cache file is ignored and a failed write is dropped.
"""

from __future__ import annotations

import errno
import hashlib
import json
import mmap
import os
import stat
import time
from pathlib import Path
from typing import Callable

from relconsole.engine.atomicfile import write_atomic

# 1 MiB: bench/hash.py on a page-cached 1 GiB file (5 interleaved runs, 2 cores) hashed
# at 1188 MiB/s with 1 MiB chunks, 1178 with 256 KiB, 1150 with 4 MiB, 1073 with 16 MiB;
# ``openssl dgst -sha256``: 1076 MiB/s.
CHUNK_BYTES = 1 << 20
RACY_NS = 2_000_000_000  # an entry modified this close to its hashing is not trusted
MAX_ENTRIES = 4096  # per table; the oldest-hashed entries are dropped beyond it
SAVE_EVERY_SECONDS = 1.0  # CommitFiles writes the cache at most this often (and on flush)
CACHE_VERSION = 1

Progress = Callable[[int, int], None]  # (bytes hashed so far, total bytes)

_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISLNK, "a symlink"))


class NotRegularFile(OSError):
    """Raised (an OSError, errno EINVAL) for a path that is not a regular file; ``strerror``
    says what it is, e.g. ``not a regular file (a FIFO)``."""

    def __init__(self, path: str | Path, mode: int):
        super().__init__(errno.EINVAL, f"not a regular file ({file_kind(mode)})", str(path))


def file_kind(mode: int) -> str:
    """``a directory``, ``a FIFO``, ``a socket``, ... for a non-regular ``st_mode``."""
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def open_regular(path: str | Path, follow_symlinks: bool = True) -> tuple[int, os.stat_result]:
    """Open ``path`` read-only and return (descriptor, fstat of it); the caller closes it.

    Refuses anything that is not a regular file with NotRegularFile, before opening when a
    ``stat`` already shows it and again on the opened descriptor (O_NONBLOCK makes opening
    a FIFO return at once instead of waiting for a writer). ``follow_symlinks=False``
    adds O_NOFOLLOW: a symlink as the last component fails with ELOOP. Raises OSError
    when the file is absent or unreadable.
    """
    before = os.stat(path, follow_symlinks=follow_symlinks)
    if not stat.S_ISREG(before.st_mode):
        raise NotRegularFile(path, before.st_mode)
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
    if not follow_symlinks:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags)
    try:
        opened = os.fstat(fd)
        if not stat.S_ISREG(opened.st_mode):
            raise NotRegularFile(path, opened.st_mode)
    except BaseException:
        os.close(fd)
        raise
    return fd, opened


def _digest_fd(fd: int, total: int, progress: Progress | None, chunk_bytes: int) -> str:
    """sha256 of everything readable from ``fd``, read into one reused buffer."""
    if hasattr(os, "posix_fadvise"):
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_SEQUENTIAL)
        except OSError:
            pass
    digest = hashlib.sha256()
    # A page-aligned buffer (anonymous mmap): the kernel copied a page-cached 1 GiB file
    # into it in 0.14 s, into a bytearray (16 bytes past a page boundary) in 0.5 s.
    buffer = mmap.mmap(-1, chunk_bytes)
    view = memoryview(buffer)
    done = 0
    try:
        while True:
            count = os.readv(fd, [view])
            if not count:
                break
            with view[:count] as part:
                digest.update(part)
            done += count
            if progress is not None:
                progress(done, max(total, done))
    finally:
        view.release()
        buffer.close()
    if progress is not None and done == 0:
        progress(0, 0)
    return digest.hexdigest()


def sha256_stream(path: str | Path, progress: Progress | None = None, *, follow_symlinks: bool = True,
                  chunk_bytes: int | None = None) -> str:
    """Hex sha256 of the regular file at ``path``, streamed (§4 lease and pin hashes).

    Reads ``chunk_bytes`` (default ``CHUNK_BYTES``) at a time into one buffer, so memory
    stays flat whatever the size. ``progress(done_bytes, total_bytes)`` is called after
    each chunk with rising ``done_bytes``, ending at ``total_bytes`` (once with (0, 0) for
    an empty file). Raises NotRegularFile for a directory, FIFO, socket or device (at once,
    never blocking) and OSError when the file is absent or unreadable.
    """
    fd, opened = open_regular(path, follow_symlinks)
    try:
        return _digest_fd(fd, opened.st_size, progress, chunk_bytes or CHUNK_BYTES)
    finally:
        os.close(fd)


def _signature(st: os.stat_result) -> dict[str, int]:
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "ctime_ns": st.st_ctime_ns,
            "inode": st.st_ino, "device": st.st_dev}


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _valid_entry(entry, keys: tuple[str, ...]) -> bool:
    return (isinstance(entry, dict) and isinstance(entry.get("sha256"), str)
            and len(entry["sha256"]) == 64 and all(_is_int(entry.get(k)) for k in keys))


_FILE_KEYS = ("size", "mtime_ns", "ctime_ns", "inode", "device", "hashed_at_ns")
_BLOB_KEYS = ("size", "hashed_at_ns")


class HashCache:
    """Digests remembered across runs in one JSON file (``None``: in memory only).

    ``files``: key (a path) -> size, mtime_ns, ctime_ns, inode, device, sha256,
    hashed_at_ns; an entry whose mtime or ctime is less than ``racy_ns`` older than its
    hashing is not trusted (a change in the same timestamp tick would not show). ``blobs``: git blob oid -> sha256, size, context, hashed_at_ns, where
    ``context`` fingerprints what turns the blob into the exported file (attributes,
    filters), so the same oid exported differently is not confused.
    """

    def __init__(self, path: str | Path | None, racy_ns: int = RACY_NS):
        self.path = Path(path) if path is not None else None
        self.racy_ns = racy_ns
        self.files: dict[str, dict] = {}
        self.blobs: dict[str, dict] = {}
        self._dirty: set[tuple[str, str]] = set()
        self.files, self.blobs = self._read()

    @classmethod
    def for_git_dir(cls, git_dir: str | Path) -> "HashCache":
        """The cache of the repository whose git directory is ``git_dir``."""
        return cls(Path(git_dir) / "relconsole" / "hashcache.json")

    def _read(self) -> tuple[dict[str, dict], dict[str, dict]]:
        """(files, blobs) from the cache file; empty tables when it is absent, unreadable or corrupt."""
        if self.path is None:
            return {}, {}
        try:
            data = json.loads(self.path.read_bytes())
        except (OSError, ValueError):
            return {}, {}
        if not isinstance(data, dict) or data.get("version") != CACHE_VERSION:
            return {}, {}
        files, blobs = data.get("files"), data.get("blobs")
        files = {k: v for k, v in files.items() if _valid_entry(v, _FILE_KEYS)} if isinstance(files, dict) else {}
        blobs = {k: v for k, v in blobs.items()
                 if _valid_entry(v, _BLOB_KEYS) and isinstance(v.get("context"), str)} \
            if isinstance(blobs, dict) else {}
        return files, blobs

    # --- working-tree files ------------------------------------------------------------

    def cached_file(self, path: str | Path, key: str | None = None,
                    follow_symlinks: bool = True) -> str | None:
        """The remembered sha256 of ``path`` when its stat still matches and the entry is
        not racy, else None. Only ``stat``s the file; never opens it."""
        entry = self.files.get(key or os.path.abspath(path))
        if entry is None:
            return None
        try:
            now = os.stat(path, follow_symlinks=follow_symlinks)
        except (OSError, ValueError):
            return None
        if not stat.S_ISREG(now.st_mode) or any(entry[k] != v for k, v in _signature(now).items()):
            return None
        if entry["hashed_at_ns"] - max(entry["mtime_ns"], entry["ctime_ns"]) < self.racy_ns:
            return None  # changed too close to its hashing: a same-size rewrite may hide
        return entry["sha256"]

    def file_sha256(self, path: str | Path, key: str | None = None, progress: Progress | None = None,
                    follow_symlinks: bool = True) -> str:
        """sha256 of the working-tree file ``path``: from the cache when still valid, else
        streamed (``sha256_stream``) and remembered under ``key`` (default: the absolute
        path). A file that changed while it was hashed is not remembered. Raises what
        ``sha256_stream`` raises; call ``save()`` to persist."""
        key = key or os.path.abspath(path)
        known = self.cached_file(path, key, follow_symlinks)
        if known is not None:
            return known
        started = time.time_ns()
        fd, opened = open_regular(path, follow_symlinks)
        try:
            digest = _digest_fd(fd, opened.st_size, progress, CHUNK_BYTES)
            after = os.fstat(fd)
        finally:
            os.close(fd)
        if _signature(after) == _signature(opened):
            self.files[key] = {**_signature(opened), "sha256": digest, "hashed_at_ns": started}
            self._dirty.add(("files", key))
        return digest

    # --- committed blobs -----------------------------------------------------------------

    def cached_blob(self, oid: str, context: str = "", size: int | None = None) -> str | None:
        """The sha256 remembered for blob ``oid`` exported under ``context`` (and of
        ``size`` bytes, when given), else None."""
        entry = self.blobs.get(oid)
        if entry is None or entry["context"] != context or (size is not None and entry["size"] != size):
            return None
        return entry["sha256"]

    def remember_blob(self, oid: str, digest: str, size: int, context: str = "") -> None:
        """Record that blob ``oid`` exported under ``context`` is ``size`` bytes hashing to ``digest``."""
        self.blobs[oid] = {"sha256": digest, "size": size, "context": context, "hashed_at_ns": time.time_ns()}
        self._dirty.add(("blobs", oid))

    # --- persistence -----------------------------------------------------------------------

    def save(self) -> bool:
        """Write new entries atomically (``atomicfile.write_atomic``), merged with what another
        process may have written meanwhile; keeps the newest ``MAX_ENTRIES`` of each table.
        Returns False (and changes nothing) when the cache cannot be written."""
        if self.path is None or not self._dirty:
            return True
        files, blobs = self._read()
        for table, key in self._dirty:
            (files if table == "files" else blobs)[key] = (self.files if table == "files" else self.blobs)[key]
        data = {"version": CACHE_VERSION, "files": _newest(files), "blobs": _newest(blobs)}
        try:
            write_atomic(self.path, json.dumps(data, sort_keys=True), durable=False)
        except OSError:
            return False
        self.files, self.blobs = data["files"], data["blobs"]
        self._dirty.clear()
        return True


def _newest(table: dict[str, dict]) -> dict[str, dict]:
    if len(table) <= MAX_ENTRIES:
        return table
    keep = sorted(table, key=lambda k: table[k]["hashed_at_ns"], reverse=True)[:MAX_ENTRIES]
    return {k: table[k] for k in keep}


# --- files exported from a commit ------------------------------------------------------------

_CONVERSION_CONFIG = r"^(core\.(autocrlf|eol|attributesfile|checkroundtripencoding|bigfilethreshold)|filter\..*)$"


class CommitFiles:
    """sha256 of files exported from one commit (``git archive``), memoised by blob oid.

    ``sha256(exported, relative)`` looks ``relative`` up in ``commit``: a regular blob's
    digest comes from ``cache`` by oid when known, else the exported file is streamed and
    remembered. The oid is paired with a context fingerprint (the ``.gitattributes`` blobs
    on the path, ``info/attributes``, the global attributes file and the conversion and
    filter settings), because ``git archive`` applies eol, ident, encoding and smudge
    conversions: the same blob can export to other bytes. A symlink, a submodule or a path
    the commit lacks is hashed from the exported file and not cached.
    """

    def __init__(self, repo_dir: str | Path, git_dir: str | Path, commit: str, cache: HashCache):
        from relconsole.engine.repo import gitio

        self._git = gitio.run_git
        self.repo_dir = Path(repo_dir)
        self.git_dir = Path(git_dir)
        self.commit = commit
        self.cache = cache
        self._global: str | None = None
        self._listings: dict[str, dict[str, tuple[str, str]]] = {}
        self._saved = float("-inf")  # monotonic time of the last write

    def _global_context(self) -> str:
        """Fingerprint of conversion settings outside the commit (config, attribute files)."""
        if self._global is None:
            config = self._git(self.repo_dir, "config", "-z", "--get-regexp", _CONVERSION_CONFIG,
                                   ok=None).stdout
            parts = [config]
            attributes_file = None
            for item in config.split(b"\0"):
                name, _, value = item.partition(b"\n")
                if name.lower() == b"core.attributesfile":
                    attributes_file = Path(os.path.expanduser(value.decode("utf-8", "surrogateescape")))
            if attributes_file is None:
                xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.expanduser("~/.config")
                attributes_file = Path(xdg) / "git" / "attributes"
            for extra in (self.git_dir / "info" / "attributes", attributes_file):
                try:
                    parts.append(extra.read_bytes())
                except OSError:
                    parts.append(b"-")
            self._global = hashlib.sha256(b"\0\1".join(parts)).hexdigest()
        return self._global

    def _list(self, directories: list[str]) -> None:
        """Fill ``_listings``: path -> (mode, oid) of the entries directly in each of
        ``directories`` ("" the root), in one ``git ls-tree`` for those not listed yet. A
        commit never changes, so a listing is kept for the instance's life: a thousand
        corpora in one directory cost one git call, not a thousand."""
        missing = [d for d in dict.fromkeys(directories) if d not in self._listings]
        if not missing:
            return
        for directory in missing:
            self._listings[directory] = {}
        spec = [d + "/" if d else "." for d in missing]
        out = self._git(self.repo_dir, "ls-tree", "-z", "--full-tree", self.commit, "--", *spec, ok=None)
        for record in out.stdout.split(b"\0") if out.returncode == 0 else ():
            meta, _, raw = record.partition(b"\t")
            fields = meta.split()
            if len(fields) != 3:
                continue
            path = raw.decode("utf-8", "surrogateescape")
            listing = self._listings.get(path.rpartition("/")[0])
            if listing is not None:
                listing[path] = (fields[0].decode(), fields[2].decode())

    def _entries(self, relative: str) -> dict[str, tuple[str, str]]:
        """path -> (mode, oid) for ``relative`` and the ``.gitattributes`` on its way."""
        parts = relative.split("/")
        wanted = [relative] + ["/".join(parts[:n] + [".gitattributes"]) for n in range(len(parts))]
        self._list([path.rpartition("/")[0] for path in wanted])
        entries = {}
        for path in wanted:
            found = self._listings[path.rpartition("/")[0]].get(path)
            if found is not None:
                entries[path] = found
        return entries

    def sha256(self, exported: str | Path, relative: str, progress: Progress | None = None) -> str:
        """sha256 of ``exported``, the export of ``relative`` from the commit.

        Raises what ``sha256_stream`` raises (NotRegularFile, OSError).
        """
        entries = self._entries(relative)
        mode, oid = entries.get(relative, ("", ""))
        if mode not in ("100644", "100755"):
            return sha256_stream(exported, progress)
        context = hashlib.sha256("\0".join(
            [self._global_context()] + [f"{p}={o}" for p, (_m, o) in sorted(entries.items()) if p != relative]
        ).encode()).hexdigest()[:32]
        now = os.stat(exported)
        if stat.S_ISREG(now.st_mode):
            known = self.cache.cached_blob(oid, context, now.st_size)
            if known is not None:
                return known  # only stat'ed, never opened
        fd, opened = open_regular(exported)
        try:
            digest = _digest_fd(fd, opened.st_size, progress, CHUNK_BYTES)
        finally:
            os.close(fd)
        self.cache.remember_blob(oid, digest, opened.st_size, context)
        if time.monotonic() - self._saved >= SAVE_EVERY_SECONDS:
            self.flush()
        return digest

    def flush(self) -> bool:
        """Write the digests learnt since the last write (``HashCache.save``). ``sha256``
        writes at most once every ``SAVE_EVERY_SECONDS`` (its first digest at once): writing
        after each of a thousand small corpora rewrote the whole cache a thousand times, so a
        caller hashing many files calls this when done. Returns what ``save`` returns."""
        self._saved = time.monotonic()
        return self.cache.save()
