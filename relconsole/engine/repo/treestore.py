"""One materialised tree per commit, kept under the git dir and reused (SPEC §7: trees as
committed, written once per commit).

``stored_tree`` writes a commit's committed blobs (``blobwrite.write_blobs``: no attributes, no
filters) once into ``<git common dir>/relconsole/trees/<tree id>``, keyed by the tree's own
id, so two commits with one tree share it. Its files are read-only. ``place_tree`` gives a
run its own tree from it: hard links when the subject will see the tree through a read-only
sandbox mount, copies otherwise (a subject running as a plain process could write through
a link into the store). The store keeps the ``KEEP`` trees used last.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
import tempfile
from pathlib import Path


from relconsole.engine.repo.blobwrite import write_blobs
from relconsole.engine.repo.gitio import run_git

STORE = Path("relconsole") / "trees"
KEEP = 4  # trees kept: HEAD, the merge base, the base tip and one more


def stored_tree(repo, commit: str) -> Path:
    """The folder holding ``commit``'s committed files, written on first use (read-only
    files, an atomic rename into place, so a reader never sees half a tree). Raises
    GitError when git cannot list or read the commit."""
    tree_id = run_git(repo.working_tree_dir or repo.git_dir, "rev-parse", "--verify", "--quiet",
                      f"{commit}^{{tree}}").stdout.decode().strip()
    store = Path(repo.common_dir) / STORE
    final = store / tree_id
    if final.is_dir():
        os.utime(final)  # most recently used: kept by ``_evict``
        return final
    store.mkdir(parents=True, exist_ok=True)
    fresh = Path(tempfile.mkdtemp(prefix=".new-", dir=store))
    try:
        write_blobs(repo, commit, fresh)
        _read_only(fresh)
        os.rename(fresh, final)
    except OSError:
        if not final.is_dir():  # not another process's tree that won the rename
            raise
    finally:
        shutil.rmtree(fresh, ignore_errors=True)
    _evict(store, final)
    return final


LINK_REFUSED = {errno.EXDEV, errno.EPERM, errno.EMLINK, errno.ENOTSUP, errno.EACCES}


def place_tree(source: Path, dest: Path, link: bool) -> bool:
    """Make ``dest`` hold the files of the stored tree ``source``: hard links when ``link``
    (only for a tree the subject sees read-only), else copies with their modes; symlinks
    as they are (the store holds only links that stay inside the tree). A link the file
    system refuses (the scratch folder on another file system than the git dir, a tmpfs
    /tmp, say) turns the rest into copies. Returns whether every file is a link. Raises
    OSError."""
    linking = [link]
    _place(source, dest, linking)
    return linking[0]


def _place(source: Path, dest: Path, linking: list[bool]) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    with os.scandir(source) as entries:
        for entry in entries:
            target = dest / entry.name
            if entry.is_symlink():
                os.symlink(os.readlink(entry.path), target)
            elif entry.is_dir():
                _place(Path(entry.path), target, linking)
            elif linking[0] and _linked(entry.path, target, linking):
                continue
            else:
                shutil.copyfile(entry.path, target)
                os.chmod(target, stat.S_IMODE(entry.stat().st_mode) | stat.S_IWUSR)


def _linked(path: str, target: Path, linking: list[bool]) -> bool:
    try:
        os.link(path, target)
        return True
    except OSError as exc:
        if exc.errno not in LINK_REFUSED:
            raise
        linking[0] = False
        return False


def _read_only(root: Path) -> None:
    for folder, _dirs, files in os.walk(root):
        for name in files:
            path = os.path.join(folder, name)
            mode = os.lstat(path).st_mode
            if stat.S_ISREG(mode):
                os.chmod(path, stat.S_IMODE(mode) & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


def _evict(store: Path, keep: Path) -> None:
    """Remove all but the ``KEEP`` trees used last (``keep`` always stays)."""
    trees = sorted((p for p in store.iterdir() if p.is_dir() and not p.name.startswith(".")),
                   key=lambda p: p.stat().st_mtime, reverse=True)
    for old in trees[KEEP:]:
        if old != keep:
            shutil.rmtree(old, ignore_errors=True)
