"""What a module imports and what a function names: the bindings bite follows from an adapter to its library (issue 16).

``import_alternatives``, ``import_bindings``, ``top_imports`` and ``inner_imports`` read a
module's imports (each alternative of a ``try: ... except ImportError:``); ``references`` and
``called_references`` the dotted names a function uses or calls. ``relconsole.engine.gate.bite.bite``
follows them from an oracle adapter to the library functions it reaches (SPEC §3).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Iterable, Iterator


@dataclass(frozen=True)
class Binding:
    """What an import binds a name to: the module ``module`` (dotted; relative by ``level``
    dots, like ``ast.ImportFrom``), or with ``name`` the attribute ``name`` of that module
    (``from module import name``; ``"*"`` for a star import)."""

    module: str
    level: int = 0
    name: str | None = None


def _nested_statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Statements of ``body`` and of the blocks under them (if/try/with/for), never inside a
    function or class body."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for name in ("body", "orelse", "finalbody"):
            yield from _nested_statements(getattr(stmt, name, None) or [])
        for handler in getattr(stmt, "handlers", None) or []:
            yield from _nested_statements(handler.body)


def top_imports(module: ast.Module) -> list[ast.stmt]:
    """The module's own import statements, in source order, including those under a top-level
    ``if``/``try`` (``try: from fast import f except ImportError: ...``), not those in a function."""
    return [s for s in _nested_statements(module.body) if isinstance(s, (ast.Import, ast.ImportFrom))]


def inner_imports(func: ast.AST) -> list[ast.stmt]:
    """The import statements anywhere in a function's body, in source order."""
    found = [n for n in ast.walk(func) if isinstance(n, (ast.Import, ast.ImportFrom)) and n is not func]
    return sorted(found, key=lambda n: (n.lineno, n.col_offset))


def import_bindings(statements: Iterable[ast.stmt]) -> tuple[dict[str, Binding], list[Binding]]:
    """(name -> Binding, star imports) of import statements, a later binding of a name winning.

    ``import a.b`` binds ``a`` to module ``a``; ``import a.b as x`` binds ``x`` to ``a.b``;
    ``from .m import n as k`` binds ``k`` to attribute ``n`` of ``.m``; ``from m import *`` is
    listed among the star imports (``Binding(m, level, "*")``), which may bind any name.
    """
    names: dict[str, Binding] = {}
    stars: list[Binding] = []
    for stmt in statements:
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                bound = alias.asname or alias.name.split(".", 1)[0]
                names[bound] = Binding(alias.name if alias.asname else bound)
        elif isinstance(stmt, ast.ImportFrom):
            for alias in stmt.names:
                binding = Binding(stmt.module or "", stmt.level, alias.name)
                if alias.name == "*":
                    stars.append(binding)
                else:
                    names[alias.asname or alias.name] = binding
    return names, stars


def import_alternatives(body: list[ast.stmt]) -> tuple[dict[str, list[Binding]], list[Binding]]:
    """(name -> the Bindings it may have, in the order Python tries them; star imports) of the
    import statements of a module body (not inside functions or classes).

    A later statement rebinding a name replaces what came before; the branches of one
    statement are alternatives: ``try: from ._speedups import f`` then ``except ImportError:
    from ._native import f`` gives ``f -> [._speedups.f, ._native.f]`` (the ``try`` body first,
    then each handler), as do the two branches of an ``if``, and what the name was bound to
    before comes last (a branch may not run). A caller takes the first alternative that
    resolves to a file (a compiled extension has none).
    """
    names: dict[str, list[Binding]] = {}
    stars: list[Binding] = []
    for stmt in body:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            bound, star = import_bindings([stmt])
            names.update({name: [binding] for name, binding in bound.items()})
            stars += star
            continue
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if isinstance(stmt, ast.If):
            branches = [stmt.body, stmt.orelse]
        elif isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":
            branches = [stmt.body + stmt.orelse, *[h.body for h in stmt.handlers], stmt.finalbody]
        else:
            branches = [getattr(stmt, "body", None) or [], getattr(stmt, "orelse", None) or []]
        merged: dict[str, list[Binding]] = {}
        for branch in branches:
            bound, star = import_alternatives(branch)
            stars += star
            for name, found in bound.items():
                merged[name] = list(dict.fromkeys(merged.get(name, []) + found))
        for name, found in merged.items():  # a branch that does not run leaves the earlier binding
            names[name] = list(dict.fromkeys(found + names.get(name, [])))
    return names, stars


def _dotted(node: ast.AST) -> list[str] | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return [node.id, *reversed(parts)] if isinstance(node, ast.Name) else None


def references(func: ast.AST) -> list[list[str]]:
    """The dotted names a function reads, in order of first appearance: ``Version(x)`` gives
    ``["Version"]``, ``vers.core.bump(v)`` gives ``["vers", "core", "bump"]`` (and its prefixes),
    ``map(canonical, xs)`` gives ``["canonical"]`` too. Names it assigns are not references."""
    found: list[list[str]] = []
    for node in ast.walk(func):
        if isinstance(node, (ast.Name, ast.Attribute)) and isinstance(node.ctx, ast.Load):
            dotted = _dotted(node)
            if dotted and dotted not in found:
                found.append(dotted)
    return found


def called_references(func: ast.AST) -> list[list[str]]:
    """The dotted names a function calls, in order of first appearance: ``_escape_inner(s)``
    gives ``["_escape_inner"]``, ``vers.core.bump(v)`` gives ``["vers", "core", "bump"]``;
    a call of anything else (``Markup(s).unescape()``'s outer call) gives nothing."""
    found: list[list[str]] = []
    for node in ast.walk(func):
        if isinstance(node, ast.Call):
            dotted = _dotted(node.func)
            if dotted and dotted not in found:
                found.append(dotted)
    return found
