"""The files bite reads (issue 16; SPEC §2): a run tree on disk (``DiskRunTree``) or the files a
run tree of a commit would hold, read from git objects with the oracle export at protected
paths (``CommitRunTree``); the tree-relative import roots (§3), the file of a module, and
whether a path reaches through a symlink (bite never writes through one).
"""

from __future__ import annotations

import os
import posixpath
from pathlib import Path, PurePosixPath
from typing import Iterable

from relconsole.engine.repo.treeview import TreeView
from relconsole.engine.repo.owners import protected
from relconsole.engine.gate.review import Review


class DiskRunTree:
    """The files of a run tree on disk (``tree``)."""

    def __init__(self, tree: Path):
        self.tree = Path(tree)

    def is_file(self, path: str) -> bool:
        return (self.tree / path).is_file()

    def read_text(self, path: str) -> str:
        return (self.tree / path).read_text(encoding="utf-8")

    def link(self, path: str) -> str | None:
        return through_link(self.tree, path)

    def real(self, path: str) -> str:
        """``path`` with the symlinks on the way resolved, when that stays in the tree."""
        try:
            return (self.tree / path).resolve().relative_to(self.tree.resolve()).as_posix()
        except (OSError, ValueError):
            return path


class CommitRunTree:
    """The files a run tree of ``commit`` would hold (SPEC §2: the commit's files, the oracle
    export's at protected paths), read from git objects and the export; nothing is written."""

    def __init__(self, review: Review, commit: str):
        self.view = TreeView(review.repo, commit)
        self.commit = commit
        self.oracle = Path(review.oracle_dir)
        self.patterns = review.layout.protected

    def _in_oracle(self, path: str) -> bool:
        return protected(self.patterns, path)

    def _target(self, path: str) -> str | None:
        """``path`` itself, or where it points when the commit holds it as a symlink inside
        the tree (one hop); None for a link that leaves the tree."""
        target = self.view.symlink_target(path)
        if target is None:
            return path
        resolved = posixpath.normpath(posixpath.join(posixpath.dirname(path), target))
        return None if target.startswith("/") or resolved.startswith("..") else resolved

    def is_file(self, path: str) -> bool:
        if self._in_oracle(path):
            return (self.oracle / path).is_file()
        target = self._target(path)
        return target is not None and self.view.exists(target)

    def read_text(self, path: str) -> str:
        if self._in_oracle(path):
            return (self.oracle / path).read_text(encoding="utf-8")
        target = self._target(path)
        data = self.view.read_bytes(target) if target is not None else None
        if data is None:
            raise FileNotFoundError(f"{path}: no such file in {self.commit[:12]}")
        return data.decode("utf-8")

    def real(self, path: str) -> str:
        return path if self._in_oracle(path) else self._target(path) or path

    def link(self, path: str) -> str | None:
        parts = PurePosixPath(path).parts
        for end in range(1, len(parts) + 1):
            shown = "/".join(parts[:end])
            target = None if self._in_oracle(shown) else self.view.symlink_target(shown)
            if target is not None:
                return (f"{path}: not mutated, {shown} is a symlink (to {target}) and bite "
                        "never writes through a link")
        return None

    def roots(self, layout) -> list[str]:
        """The import roots (§3) as tree-relative paths: configured, or the root plus ``src/``."""
        if layout.import_paths is not None:
            return [posixpath.normpath(p) for p in layout.import_paths]
        return ["."] + (["src"] if self.view.is_dir("src") else [])


def relative_roots(tree: Path, roots: Iterable[str]) -> list[str]:
    """Absolute import roots as paths relative to ``tree`` ("." the tree itself); a root
    outside the tree holds no code of the review and is left out."""
    out = []
    for root in roots:
        try:
            out.append(Path(root).resolve().relative_to(Path(tree).resolve()).as_posix())
        except ValueError:
            continue
    return out


def spec_file(files, roots: list[str], spec: str) -> str | None:
    """The tree-relative file of the module of ``module:attr`` under the import ``roots``."""
    module = spec.split(":", 1)[0].replace(".", "/")
    for root in roots:
        for name in (f"{module}.py", f"{module}/__init__.py"):
            candidate = posixpath.normpath(posixpath.join(root, name))
            if files.is_file(candidate):
                return files.real(candidate)
    return None


def module_file(files, roots: list[str], path: str, module: str, level: int) -> str | None:
    """The tree-relative file of ``module`` imported from the file ``path`` (``level`` dots);
    ``roots``: the tree-relative import roots, for an absolute import. None when the tree
    holds no source for it (a compiled extension, the standard library, an installed package)."""
    if level:
        base = PurePosixPath(path).parent
        for _ in range(level - 1):
            base = base.parent
        bases = [base]
    else:
        bases = [PurePosixPath(root) for root in roots]
    name = module.replace(".", "/")
    for base in bases:
        for candidate in ((base / name).with_suffix(".py") if name else None, base / name / "__init__.py"):
            if candidate is None:
                continue
            relative = posixpath.normpath(candidate.as_posix())
            if not relative.startswith("..") and files.is_file(relative):
                return relative
    return None


def through_link(tree: Path, path: str) -> str | None:
    """Why the file at tree path ``path`` must not be written (a symlink on the way, which
    would carry the write out of the file, perhaps out of the tree), or None."""
    here = Path(tree)
    for part in PurePosixPath(path).parts:
        here = here / part
        if here.is_symlink():
            shown = here.relative_to(tree).as_posix()
            return (f"{path}: not mutated, {shown} is a symlink (to {os.readlink(here)}) and bite "
                    "never writes through a link")
    return None
