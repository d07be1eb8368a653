"""Statements whose effect happens in a call, and the lines that must run in one for them to
count as exercised (SPEC §3 "covered means exercised"; red team, issue 35).

A module's import runs every definition in it: a changed decorator, signature, default, a
body on the ``def`` line, a module-level ``lambda`` or a constant all "run" then, and do
their harm only when code is called. ``call_time_evidence`` gives, per such statement, the
lines whose run in a function's code is the evidence that the change took part in a call:

- a function definition (each line from its first decorator to its signature's last):
  its body's lines; a body line that shares a header line counts only when run by that
  function's own code (``(line, name)``), never by a lambda in a default;
- a module- or class-level statement holding a ``lambda``: the lambda's lines, run by a lambda;
- a module- or class-level binding of a name the file's functions read (``PER = 60`` read by
  ``to_seconds``; read in a default or decorator counts as read by that function's body;
  a derived binding ``JOIN = SEP.join`` passes its readers on to ``SEP``): those lines. A
  name no function of the file reads, or one a derived binding hands to unknown readers,
  may be read anywhere: its import counts;
- a binding of a function of the file under another name (``to_cents = _truncate``): the
  function's body.

Evidence entries are line numbers (run by any function's code) or ``(line, code name)``.
"""

from __future__ import annotations

import ast

FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def call_time_evidence(text: str) -> dict[int, tuple]:
    """Statement line -> its evidence entries (see the module's docstring), ``{}`` when
    ``text`` does not parse."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return {}
    evidence: dict[int, set] = {}
    functions = {}
    for node in ast.walk(tree):
        if isinstance(node, FUNCTIONS):
            functions.setdefault(node.name, node)
            body = _body_entries(node)
            for line in _header_lines(node):
                evidence.setdefault(line, set()).update(body)
    readers = _Readers(tree)
    for statement in _definition_time_statements(tree):
        if isinstance(statement, (*FUNCTIONS, ast.ClassDef)):
            continue
        entries = {(n, "<lambda>") for lam in ast.walk(statement) if isinstance(lam, ast.Lambda)
                   for n in range(lam.body.lineno, (lam.body.end_lineno or lam.body.lineno) + 1)}
        for name in _assigned_names(statement):
            entries |= readers.evidence(name) or set()
        value = getattr(statement, "value", None)
        if isinstance(value, ast.Name) and value.id in functions:
            entries |= _body_entries(functions[value.id])
        if entries:
            evidence.setdefault(statement.lineno, set()).update(entries)
    return {line: tuple(sorted(entries, key=entry_line)) for line, entries in evidence.items()}


def entry_line(entry) -> int:
    """The line of an evidence entry (a line number or ``(line, code name)``)."""
    return entry if isinstance(entry, int) else entry[0]


def _header_lines(node) -> range:
    """From the first decorator to the signature's last line (the ``def`` line too when the
    body shares it)."""
    first = min([node.lineno] + [d.lineno for d in node.decorator_list])
    signature = [node.args, *node.args.defaults, *(d for d in node.args.kw_defaults if d is not None),
                 *([node.returns] if node.returns else [])]
    last = max([node.lineno] + [getattr(part, "end_lineno", None) or node.lineno for part in signature
                                if hasattr(part, "lineno")] + [a.end_lineno or a.lineno for a in
                                                                 (*node.args.posonlyargs, *node.args.args,
                                                                  *node.args.kwonlyargs)])
    body_first = node.body[0].lineno
    return range(first, (body_first if body_first <= last else body_first - 1) + 1)


def _body_entries(node) -> set:
    """A function's body lines as evidence: a line shared with its header only by its own code."""
    header = set(_header_lines(node))
    return {(n, node.name) if n in header else n
            for n in range(node.body[0].lineno, (node.end_lineno or node.lineno) + 1)}


def _definition_time_statements(tree: ast.Module):
    """Statements that run when their module is imported or their class defined: the module's
    and every class body's, through ``if``/``try``/``with`` blocks, never inside a function."""
    stack = list(tree.body)
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, ast.ClassDef):
            stack.extend(node.body)
        elif isinstance(node, (ast.If, ast.Try, ast.With, ast.For, ast.While)) or type(node).__name__ == "TryStar":
            for field in ("body", "orelse", "finalbody"):
                stack.extend(getattr(node, field, []) or [])
            for handler in getattr(node, "handlers", []) or []:
                stack.extend(handler.body)


def _assigned_names(statement: ast.AST) -> set[str]:
    targets = (statement.targets if isinstance(statement, ast.Assign) else
               [statement.target] if isinstance(statement, (ast.AnnAssign, ast.AugAssign)) else [])
    return {n.id for target in targets for n in ast.walk(target) if isinstance(n, ast.Name)}


def _loaded(node: ast.AST) -> set[str]:
    """Names and attribute names ``node`` reads."""
    return ({n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
            | {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load)})


class _Readers:
    """Who reads a module- or class-level name: the lines of the file's functions that read it
    as a global (a local of the same name is another variable), a function whose defaults or
    decorators read it (its body), and derived bindings at definition time."""

    def __init__(self, tree: ast.Module):
        self.direct: dict[str, set] = {}
        for function in ast.walk(tree):
            if isinstance(function, FUNCTIONS):
                self._function(function)
            elif isinstance(function, ast.Lambda):
                for name in _loaded(function.body) - _arguments(function.args):
                    self.direct.setdefault(name, set()).add(function.body.lineno)
        self.derived: dict[str, list[set[str]]] = {}
        for statement in _definition_time_statements(tree):
            if isinstance(statement, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and statement.value is not None:
                targets = _assigned_names(statement)
                for name in _loaded(statement.value) - targets:
                    self.derived.setdefault(name, []).append(targets)
        self._memo: dict[str, set | None] = {}

    def _function(self, function) -> None:
        local = _arguments(function.args) | {n.id for n in ast.walk(function) if isinstance(n, ast.Name)
                                             and isinstance(n.ctx, ast.Store)}
        local -= {name for n in ast.walk(function) if isinstance(n, (ast.Global, ast.Nonlocal)) for name in n.names}
        for statement in function.body:
            for node in ast.walk(statement):
                if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id not in local:
                    self.direct.setdefault(node.id, set()).add(node.lineno)
                elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
                    self.direct.setdefault(node.attr, set()).add(node.lineno)
        at_definition = [*function.args.defaults, *(d for d in function.args.kw_defaults if d is not None),
                         *function.decorator_list]
        for name in set().union(*(_loaded(d) for d in at_definition)) if at_definition else ():
            self.direct.setdefault(name, set()).update(_body_entries(function))

    def evidence(self, name: str, seen: frozenset = frozenset()) -> set | None:
        """The evidence of ``name``'s binding, or None: its import counts (no reader known, or
        a derived binding whose own readers are unknown)."""
        if name in self._memo:
            return self._memo[name]
        if name in seen:
            return set()
        found = set(self.direct.get(name, ()))
        for targets in self.derived.get(name, []):
            for target in targets:
                more = self.evidence(target, seen | {name})
                if more is None:
                    self._memo[name] = None
                    return None
                found |= more
        result = found or None
        if not seen:
            self._memo[name] = result
        return result


def _arguments(args: ast.arguments) -> set[str]:
    names = [*args.posonlyargs, *args.args, *args.kwonlyargs, *filter(None, (args.vararg, args.kwarg))]
    return {a.arg for a in names}
