"""Where a module's function is defined, read statically through re-exports (SPEC §3 subjects).

``pkg:f`` names the ``f`` that ``import pkg`` gives, and a package's ``__init__.py`` often
only imports it (``from .core import f``, ``from pkg.core import g as f``, ``from .core import
*``). ``defined_function`` follows those imports from module file to module file, as Python
would resolve the name, without running anything: the files are parsed, never imported.
"""

from __future__ import annotations

import ast
import posixpath
from collections.abc import Callable, Collection

MAX_HOPS = 8  # ``from .a import f`` imports followed from the named module to the definition
ROOTS = ("src/", "")  # where a repository's top-level packages are (a src/ layout, or the root)
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def module_file(files: Collection[str], module: str) -> str | None:
    """The repository file of the dotted ``module`` (``pkg/mod.py`` or ``pkg/mod/__init__.py``,
    under ``src/`` or the root), or None."""
    name = module.replace(".", "/")
    return next((p for root in ROOTS for p in (f"{root}{name}.py", f"{root}{name}/__init__.py") if p in files), None)


def defined_function(files: Collection[str], read_text: Callable[[str], str | None], module: str,
                     name: str) -> tuple[str, ast.Module, ast.FunctionDef | ast.AsyncFunctionDef] | None:
    """``(file, its parsed module, the def)`` of the top-level function ``name`` that the
    module ``module`` defines or imports from another module of ``files`` (repository paths;
    ``read_text(path)`` gives a file's text or None), following imports ``MAX_HOPS`` deep,
    the module's last import of the name first (the one that wins at run time). None when no
    file defines it (a class, an assignment, a module outside the repository, a file that
    does not parse). Raises nothing."""
    parsed: dict[str, ast.Module | None] = {}

    def parse(path: str) -> ast.Module | None:
        if path not in parsed:
            try:
                parsed[path] = ast.parse(read_text(path) or "")
            except (SyntaxError, ValueError):
                parsed[path] = None
        return parsed[path]

    def find(path: str | None, wanted: str, seen: frozenset[str]):
        if path is None or path in seen or len(seen) > MAX_HOPS:
            return None
        tree = parse(path)
        if tree is None:
            return None
        node = next((n for n in tree.body if isinstance(n, FUNCTIONS) and n.name == wanted), None)
        if node is not None:
            return path, tree, node
        for target, there in _imports_of(files, path, tree, wanted):
            found = find(target, there, seen | {path})
            if found is not None:
                return found
        return None

    return find(module_file(files, module), name, frozenset())


def _imports_of(files: Collection[str], path: str, tree: ast.Module, name: str) -> list[tuple[str, str]]:
    """``(file, name there)`` for each top-level ``from X import ...`` of ``tree`` (the module
    at ``path``) that may bind ``name`` (``import name``, ``import other as name``, ``import
    *``), last first, whose module is a file of ``files``."""
    out = []
    for node in reversed(tree.body):
        if not isinstance(node, ast.ImportFrom):
            continue
        for alias in node.names:
            if alias.name == "*" or (alias.asname or alias.name) == name:
                target = _source_file(files, path, node.module or "", node.level)
                if target is not None:
                    out.append((target, name if alias.name == "*" else alias.name))
    return out


def _source_file(files: Collection[str], path: str, module: str, level: int) -> str | None:
    """The repository file of ``from <level dots><module> import`` written in the file ``path``."""
    if not level:
        return module_file(files, module)
    base = posixpath.dirname(path)
    for _ in range(level - 1):
        base = posixpath.dirname(base)
    name = posixpath.join(base, module.replace(".", "/")) if module else base
    return next((p for p in (f"{name}.py", f"{name}/__init__.py") if module or p.endswith("__init__.py")
                 if p in files), None)
