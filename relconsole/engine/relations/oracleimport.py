"""The base oracle's adapters as the judge imports them: only from the tree's protected files (SPEC §3, §7).

``oracle_roots`` checks that every adapter a relation names (merge, transform, canon)
resolves to a protected path of the tree; ``OracleFinder`` imports those top-level packages
from the tree root and nothing else of the tree, so the judge never imports the patch's code.
``load_merge`` imports the one adapter the judge runs itself, a split_merge's ``merge``, with
the finder refusing the tree (``OracleFinder.refusing_tree``): a merge whose module imports
the library under review is refused (the oracle's fault), never run on a copy of the library
the judge's own interpreter may hold.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.machinery
import os
import sys


class OracleFinder:
    """Imports the oracle's own top-level packages from the tree root, and only those whose
    files are protected (the base's overlay): the judge never imports the patch's code. While
    it is ``refusing_tree``, it refuses (TreeImportRefused) every other top-level module the
    tree's import roots hold, but the standard library's: an adapter the judge runs (a merge)
    imports nothing of the tree, not even a copy installed where the judge runs."""

    def __init__(self, root: str):
        self.root = root
        self.names: set[str] = set()
        self.refused: list[str] = []  # the tree's import roots, while refusing_tree

    def find_spec(self, name, path=None, target=None):
        if path is not None:
            return None
        if name in self.names:
            return importlib.machinery.PathFinder.find_spec(name, [self.root])
        if self.refused and name not in sys.stdlib_module_names and any(top_entry(r, name) for r in self.refused):
            raise TreeImportRefused(name)
        return None

    @contextlib.contextmanager
    def refusing_tree(self, import_paths: list[str]):
        """Refuse the modules of the tree's ``import_paths`` while the block runs (see the class)."""
        self.refused = list(import_paths)
        try:
            yield
        finally:
            self.refused = []


def top_entry(root: str, name: str) -> str | None:
    """The tree-relative file or folder a top-level module name resolves to, or None."""
    for candidate in (name, f"{name}.py"):
        if os.path.lexists(os.path.join(root, candidate)):
            return candidate
    return None


def module_entry(root: str, dotted: str) -> str | None:
    """The tree-relative file or folder a dotted module name resolves to under ``root`` (a
    module file, a package, or a folder a namespace package could be), or None."""
    parts = dotted.split(".")
    folder = os.path.join(root, *parts[:-1])
    return top_entry(folder, parts[-1]) and "/".join(parts)


class AdapterRefused(Exception):
    """An adapter the relation names is not among the oracle's protected files."""


def oracle_roots(relation: dict, root: str, patterns: list[str]) -> list[str]:
    """Top-level names of the adapters ``relation`` names (merge, transform, canon), each
    checked to resolve to a protected path of the tree, and of its subject and inverse when
    they are the oracle's (an adapter calling the library) rather than the tree's: each is
    then imported from the tree root alone, never from a same-named package of the patch.
    Raises AdapterRefused."""
    names = []
    for role in ("merge", "transform", "canon", "subject", "inverse"):
        ref = relation.get(role)
        if not ref:
            continue
        top = str(ref).split(":", 1)[0].split(".", 1)[0]
        if _protected_entry(root, top, patterns):
            names.append(top)
        elif role not in ("subject", "inverse"):
            raise AdapterRefused(f"the {role} adapter {ref} is not in the oracle's protected files: "
                                 "adapters come from the base branch's oracle, never from the patch")
    return sorted(set(names))


def _protected_entry(root: str, top: str, patterns: list[str]) -> bool:
    """Whether top-level module ``top`` resolves at the tree ``root`` to a protected path (not through a symlink)."""
    from relconsole.engine.repo.owners import protected

    entry = top_entry(root, top)
    probe = f"{entry}/__init__.py" if entry and not entry.endswith(".py") else entry
    return entry is not None and not os.path.islink(os.path.join(root, entry)) and protected(patterns, probe)


class TreeImportRefused(ImportError):
    """The judge refused to import a module of the tree under review for an adapter it runs
    (a merge): the oracle's fault."""


def _refused(ref: str, exc: TreeImportRefused) -> TreeImportRefused:
    """``exc`` in words naming the merge adapter ``ref``."""
    return TreeImportRefused(
        f"the merge adapter {ref} imports {exc.args[0]}, a module of the tree under review: a merge runs in the "
        "judge, which never runs the tree's code; merge the outputs as plain data (a canon: adapter, which runs "
        "with the subject, may turn the library's objects into data first)")


def load_merge(ref: str, finder: OracleFinder, import_paths: list[str]):
    """The merge adapter ``ref`` (``module:attr`` of the oracle's protected files) imported in
    the judge (``finder``: the judge's OracleFinder, on ``sys.meta_path``), as a callable that
    runs it with the finder refusing the tree too. Raises TreeImportRefused (its import, or a
    call, imports a module of the tree's ``import_paths``) and what its import raises."""
    module_name, _, attr = str(ref).partition(":")
    finder.names.add(module_name.split(".", 1)[0])
    try:
        with finder.refusing_tree(import_paths):
            target = importlib.import_module(module_name)
            for part in attr.split("."):
                target = getattr(target, part)
    except TreeImportRefused as exc:
        raise _refused(ref, exc) from None

    def merge(left, right):
        try:
            with finder.refusing_tree(import_paths):
                return target(left, right)
        except TreeImportRefused as exc:
            raise _refused(ref, exc) from None
    return merge
