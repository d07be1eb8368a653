"""One commit's tree, read through the repository's object reader (SPEC §7: trees as committed).

``tree_entries`` parses a tree object from git's raw format into name -> (mode, id), kept in
a process-wide LRU (a tree's id names its content, so an entry never goes stale);
``TreeView`` reads a commit's files, symlinks and directories from those trees without a
work tree, a checkout or any filter the tree could name.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from pathlib import Path

from relconsole.engine.errors import GitError
from relconsole.engine.repo.blobwrite import write_blobs
from relconsole.engine.repo.gitio import _handle


_TREE_MODE, _SUBMODULE_MODE = 0o040000, 0o160000
_TREES: "OrderedDict[tuple[str, bytes], dict[str, tuple[int, bytes]]]" = OrderedDict()
_TREES_MAX = 1024  # parsed trees kept (a tree of 1,000 entries is ~100 KB parsed)
_TREES_LOCK = threading.Lock()


def tree_entries(repo, binsha: bytes) -> dict[str, tuple[int, bytes]]:
    """name -> (mode, binsha) of the tree object ``binsha``, parsed from git's raw format.

    Kept in a process-wide LRU keyed by (git dir, tree id): a tree object's id is its
    content's hash, so an entry can never go stale. Raises ValueError for a malformed tree,
    GitError when the object database has no such tree.
    """
    key = (str(repo.git_dir), binsha)
    with _TREES_LOCK:
        hit = _TREES.get(key)
        if hit is not None:
            _TREES.move_to_end(key)
            return hit
    found = _handle(repo).read_object(binsha.hex())
    if found is None or found[0] != "tree":
        raise GitError(f"git cat-file: tree {binsha.hex()} is missing from the object database")
    data = found[1]
    entries: dict[str, tuple[int, bytes]] = {}
    at = 0
    while at < len(data):  # "<octal mode> <name>\0<20-byte id>", repeated
        space = data.index(b" ", at)
        nul = data.index(b"\0", space)
        end = nul + 1 + _oid_bytes(binsha)
        entries[data[space + 1:nul].decode("utf-8", "surrogateescape")] = (int(data[at:space], 8),
                                                                          data[nul + 1:end])
        at = end
    with _TREES_LOCK:
        _TREES[key] = entries
        while len(_TREES) > _TREES_MAX:
            _TREES.popitem(last=False)
    return entries


def _oid_bytes(binsha: bytes) -> int:
    return len(binsha)  # 20 (SHA-1) or 32 (SHA-256): a tree names its entries with ids of its own kind


class TreeView:
    """Read-only view of one commit's tree: what the oracle or the code under test holds.
    Raises GitError when ``commit`` names no commit in the object database."""

    def __init__(self, repo, commit: str):
        self.repo = repo
        self.commit = commit
        self._objects = _handle(repo)
        found = self._objects.read_object(commit)
        if found is None or found[0] != "commit" or not found[1].startswith(b"tree "):
            raise GitError(f"git cat-file: {commit} is not a commit in the object database")
        self._root = bytes.fromhex(found[1][5:found[1].index(b"\n")].decode("ascii"))
        self._dirs: dict[str, dict | None] = {}

    def _directory(self, directory: str) -> dict | None:
        """name -> (mode, binsha) of the entries directly under ``directory`` ("" is the
        root), or None when the commit has no such directory. Trees are parsed once per
        process (``tree_entries``)."""
        if directory in self._dirs:
            return self._dirs[directory]
        if directory == "":
            entries = tree_entries(self._objects, self._root)
        else:
            parent, _, name = directory.rpartition("/")
            above = self._directory(parent)
            found = above.get(name) if above is not None else None
            entries = tree_entries(self._objects, found[1]) if found and found[0] == _TREE_MODE else None
        self._dirs[directory] = entries
        return entries

    def _blob(self, path: str) -> tuple[int, bytes] | None:
        """(mode, binsha) of the file (blob: a regular file or a symlink) at ``path``, or None."""
        parent, _, name = path.strip("/").rpartition("/")
        entries = self._directory(parent)
        found = entries.get(name) if entries is not None and name else None
        if found is None or found[0] in (_TREE_MODE, _SUBMODULE_MODE):
            return None
        return found

    def _data(self, binsha: bytes) -> bytes:
        found = self._objects.read_object(binsha.hex())
        if found is None:
            raise GitError(f"git cat-file: blob {binsha.hex()} is missing from the object database")
        return found[1]

    def blob_id(self, path: str) -> str | None:
        """The hex git blob id of the file ``path`` in this commit (it names the bytes), or
        None when the commit has no such file."""
        blob = self._blob(path)
        return None if blob is None else blob[1].hex()

    def exists(self, path: str) -> bool:
        """True when ``path`` is a file in this commit."""
        return self._blob(path) is not None

    def read_bytes(self, path: str) -> bytes | None:
        """The file's exact bytes, or None when the commit has no such file."""
        blob = self._blob(path)
        return None if blob is None else self._data(blob[1])

    def symlink_target(self, path: str) -> str | None:
        """The target ``path`` names when the commit holds it as a symlink, else None."""
        blob = self._blob(path)
        if blob is None or blob[0] != 0o120000:
            return None
        return self._data(blob[1]).decode("utf-8", "surrogateescape")

    def read_text(self, path: str) -> str | None:
        """The file decoded as UTF-8, or None when absent."""
        data = self.read_bytes(path)
        return None if data is None else data.decode("utf-8", "replace")

    def read_texts(self, paths: list[str]) -> dict[str, str | None]:
        """path -> the file decoded as UTF-8 (None when absent), for many files at once,
        through the repository's one ``git cat-file --batch``. Raises GitError when git fails."""
        data: dict[bytes, str] = {}
        out: dict[str, str | None] = {}
        for path in paths:
            blob = self._blob(path)
            if blob is None:
                out[path] = None
                continue
            if blob[1] not in data:
                data[blob[1]] = self._data(blob[1]).decode("utf-8", "replace")
            out[path] = data[blob[1]]
        return out

    def is_dir(self, path: str) -> bool:
        """True when ``path`` is a directory (a tree, not a symlink) in this commit."""
        return self._directory(path.strip("/")) is not None

    def list_files(self, directory: str) -> list[str]:
        """Repository-relative paths of the files directly under ``directory``, sorted."""
        directory = directory.strip("/")
        entries = self._directory(directory)
        if entries is None:
            return []
        return sorted(f"{directory}/{name}" if directory else name for name, (mode, _sha) in entries.items()
                      if mode not in (_TREE_MODE, _SUBMODULE_MODE))

    def export(self, dest: Path, paths: list[str] | None = None) -> None:
        """Write the commit's files (or only those under ``paths``) into ``dest`` as committed.

        The committed blob bytes, whatever the tree's ``.gitattributes`` (``export-ignore``,
        ``export-subst``, ``eol``, filters) or the user's ``core.autocrlf`` say (SPEC §7:
        "trees as committed"): ``git ls-tree`` then one streamed ``git cat-file --batch``.
        Executable bits are kept; a symlink is made only when it stays inside ``dest`` (one
        that leaves the tree is left out, so nothing is ever written outside it);
        submodules are left out. Raises GitError when git fails.
        """
        write_blobs(self.repo, self.commit, Path(dest), paths)
