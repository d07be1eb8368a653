"""A commit's Python as the review flags read it (SPEC §9): parsed (``Unjudged`` when it cannot
be), its scopes (module, functions, nested ones, lambdas), each scope's own nodes, and the
``Finding`` a rule reports.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass


class Unjudged(Exception):
    """The source cannot be judged (syntax error, or nesting too deep to walk); ``line``: the
    1-based line Python stopped at, when it says."""

    def __init__(self, message: str, line: int | None = None):
        super().__init__(message)
        self.line = line


@dataclass(frozen=True)
class Finding:
    """One thing a commit added: 1-based ``line`` in the after-source, ``detail`` for a reviewer."""

    line: int
    detail: str


def parse(source: str | None) -> ast.Module | None:
    """The module's AST (None for absent source). Raises Unjudged when it does not parse."""
    if source is None:
        return None
    try:
        return ast.parse(source.removeprefix("\ufeff"))
    except (SyntaxError, ValueError) as exc:  # ValueError: a NUL byte in the source
        line = getattr(exc, "lineno", None)
        raise Unjudged(f"does not parse{f' at line {line}' if line else ''}: {exc.__class__.__name__}: "
                       f"{getattr(exc, 'msg', exc)}", line) from None
    except (RecursionError, MemoryError):
        raise Unjudged("nested too deeply to parse") from None


def _judged(rule):
    """Run ``rule``; nesting too deep for ``ast.dump`` or a walk becomes Unjudged."""
    try:
        return rule()
    except RecursionError:
        raise Unjudged("nested too deeply to judge") from None


def _before(source: str | None) -> ast.Module | None:
    """The before-version's AST; unparsable counts as nothing (all of the after-version is new)."""
    try:
        return parse(source)
    except Unjudged:
        return None


def _scopes(tree: ast.Module, lambdas: bool = False):
    """(qualified name, node) of the module (``""``) and every function, nested included;
    with ``lambdas``, every lambda too (named ``<lambda>`` in its scope)."""
    yield "", tree
    stack = [("", tree)]
    while stack:
        prefix, node = stack.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}.{child.name}" if prefix else child.name
                if not isinstance(child, ast.ClassDef):
                    yield name, child
                stack.append((name, child))
            elif isinstance(child, ast.Lambda):
                if lambdas:
                    name = f"{prefix}.<lambda>" if prefix else "<lambda>"
                    yield name, child
                    stack.append((name, child))
            else:
                stack.append((prefix, child))


def own_nodes(scope: ast.AST):
    """Nodes of ``scope``'s body, not descending into nested functions or classes."""
    stack = list(ast.iter_child_nodes(scope))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            stack.extend(ast.iter_child_nodes(node))


def short_source(node: ast.AST, width: int = 60) -> str:
    """The source of ``node``, cut to ``width`` characters with an ellipsis."""
    try:
        text = ast.unparse(node)
    except Exception:  # noqa: BLE001 - unparse of an odd tree; the line number still says where
        return "an expression"
    return text if len(text) <= width else text[:width - 1] + "…"
