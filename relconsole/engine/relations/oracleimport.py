"""The base oracle's adapters as the judge imports them: only from the tree's protected files (SPEC §3, §7).

``oracle_roots`` checks that every adapter a relation names (merge, transform, canon)
resolves to a protected path of the tree; ``OracleFinder`` imports those top-level packages
from the tree root and nothing else of the tree, so the judge never imports the patch's code.
"""

from __future__ import annotations

import importlib.machinery
import os


class OracleFinder:
    """Imports the oracle's own top-level packages from the tree root, and only those whose
    files are protected (the base's overlay): the judge never imports the patch's code."""

    def __init__(self, root: str):
        self.root = root
        self.names: set[str] = set()

    def find_spec(self, name, path=None, target=None):
        if path is not None or name not in self.names:
            return None
        return importlib.machinery.PathFinder.find_spec(name, [self.root])


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
    checked to resolve to a protected path of the tree. Raises AdapterRefused."""
    from relconsole.engine.repo.owners import protected

    names = []
    for role in ("merge", "transform", "canon"):
        ref = relation.get(role)
        if not ref:
            continue
        top = str(ref).split(":", 1)[0].split(".", 1)[0]
        entry = top_entry(root, top)
        probe = f"{entry}/__init__.py" if entry and not entry.endswith(".py") else entry
        if entry is None or os.path.islink(os.path.join(root, entry)) or not protected(patterns, probe):
            raise AdapterRefused(f"the {role} adapter {ref} is not in the oracle's protected files: "
                                 "adapters come from the base branch's oracle, never from the patch")
        names.append(top)
    return sorted(set(names))
