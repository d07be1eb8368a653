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

from relconsole.engine.relations.spans import entry_line  # noqa: F401 (the gate reads it here)

FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
GETTERS = frozenset({"getattr", "hasattr"})


def call_time_evidence(text: str) -> dict[int, tuple]:
    """Statement line -> its evidence entries (see the module's docstring), ``{}`` when
    ``text`` does not parse."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return {}
    evidence: dict[int, set] = {}
    scopes = _function_scopes(tree)
    for node in ast.walk(tree):
        if isinstance(node, FUNCTIONS):
            if _never_called(node):
                continue  # an @overload or abstract signature: no body of its own ever runs
            body = _body_entries(node)
            for line in _header_lines(node):
                evidence.setdefault(line, set()).update(body)
        elif isinstance(node, ast.ClassDef):
            methods = set().union(*(_body_entries(f) for f in node.body if isinstance(f, FUNCTIONS)
                                    and not _never_called(f)))
            if methods:  # a base or decorator changes what the methods do, only when they run
                for line in _class_header_lines(node):
                    evidence.setdefault(line, set()).update(methods)
    readers = _Readers(tree)
    for statement, owner in _definition_time_statements(tree):
        if isinstance(statement, (*FUNCTIONS, ast.ClassDef)):
            continue
        entries = {(n, "<lambda>") for lam in ast.walk(statement) if isinstance(lam, ast.Lambda)
                   for n in range(lam.body.lineno, (lam.body.end_lineno or lam.body.lineno) + 1)}
        for name in _assigned_names(statement):
            entries |= readers.evidence(name) or set()
        value = getattr(statement, "value", None)
        if value is not None:  # an alias, a tuple of them, a partial or factory over a function of its scope
            functions = scopes.get(owner, {})
            named = [value] if isinstance(value, ast.Name) else [n for n in ast.walk(value) if isinstance(n, ast.Name)]
            for name in named:
                if name.id in functions and not _never_called(functions[name.id]):
                    entries |= _body_entries(functions[name.id])
        if entries:
            evidence.setdefault(statement.lineno, set()).update(entries)
    return {line: tuple(sorted(entries, key=entry_line)) for line, entries in evidence.items()}


def lambda_evidence(text: str) -> dict[int, tuple]:
    """Each line of a definition-time lambda's body -> that lambda's own lines, run by a lambda:
    a changed line of one lambda in a table of them counts only when that lambda ran, never
    because another one of the table did. ``{}`` when ``text`` does not parse."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return {}
    out = {}
    for statement, _ in _definition_time_statements(tree):
        if isinstance(statement, (*FUNCTIONS, ast.ClassDef)):
            continue
        for lam in (n for n in ast.walk(statement) if isinstance(n, ast.Lambda)):
            lines = range(lam.body.lineno, (lam.body.end_lineno or lam.body.lineno) + 1)
            for line in lines:
                out[line] = tuple((n, "<lambda>") for n in lines)
    return out


def _function_scopes(tree: ast.Module) -> dict:
    """``{None: module-level functions by name, ClassDef: its methods by name}``: an alias at
    module level names a module function, one in a class body a method of that class."""
    scopes: dict = {None: {}}
    for statement, owner in _definition_time_statements(tree):
        if isinstance(statement, FUNCTIONS):
            scopes.setdefault(owner, {}).setdefault(statement.name, statement)
    return scopes


NEVER_CALLED = frozenset({"overload", "abstractmethod"})


def _never_called(node) -> bool:
    """An ``@overload`` signature or an ``@abstractmethod``: its body never runs."""
    return any((d.id if isinstance(d, ast.Name) else d.attr if isinstance(d, ast.Attribute) else None)
               in NEVER_CALLED for d in node.decorator_list)


def _class_header_lines(node: ast.ClassDef) -> range:
    """From the class's first decorator to the line before its body."""
    first = min([node.lineno] + [d.lineno for d in node.decorator_list])
    return range(first, max(node.lineno, node.body[0].lineno - 1) + 1)


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
    """(statement, the ClassDef whose body holds it or None) of the statements that run when
    their module is imported or their class defined: the module's and every class body's,
    through ``if``/``try``/``with`` blocks, never inside a function."""
    stack = [(node, None) for node in tree.body]
    while stack:
        node, owner = stack.pop()
        yield node, owner
        if isinstance(node, ast.ClassDef):
            stack.extend((child, node) for child in node.body)
        elif isinstance(node, (ast.If, ast.Try, ast.With, ast.For, ast.While)) or type(node).__name__ == "TryStar":
            for field in ("body", "orelse", "finalbody"):
                stack.extend((child, owner) for child in getattr(node, field, []) or [])
            for handler in getattr(node, "handlers", []) or []:
                stack.extend((child, owner) for child in handler.body)


def _assigned_names(statement: ast.AST) -> set[str]:
    """Names a definition-time statement binds: assignments (tuples too), imports (``from math
    import floor as _cut``), ``for`` and ``with`` targets, and ``:=`` inside it."""
    if isinstance(statement, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in statement.names if a.name != "*"}
    targets = (statement.targets if isinstance(statement, ast.Assign) else
               [statement.target] if isinstance(statement, (ast.AnnAssign, ast.AugAssign, ast.For)) else
               [i.optional_vars for i in statement.items if i.optional_vars is not None]
               if isinstance(statement, ast.With) else [])
    names = {n.id for target in targets for n in ast.walk(target) if isinstance(n, ast.Name)}
    if not isinstance(statement, (ast.For, ast.With)):  # their bodies are statements of their own
        names |= {n.target.id for n in ast.walk(statement) if isinstance(n, ast.NamedExpr)}
    return names


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
        self.classes = {n.name for n in ast.walk(tree) if isinstance(n, ast.ClassDef)}
        for function in ast.walk(tree):
            if isinstance(function, FUNCTIONS):
                self._function(function)
            elif isinstance(function, ast.Lambda):
                for name in _loaded(function.body) - _arguments(function.args):
                    self.direct.setdefault(name, set()).add(function.body.lineno)
        self.derived: dict[str, list[set[str]]] = {}
        for statement, _ in _definition_time_statements(tree):
            if isinstance(statement, (ast.If, ast.While)):  # a flag that chooses which definitions exist
                chosen = set().union(*(_body_entries(f) for f in [*statement.body, *statement.orelse]
                                       if isinstance(f, FUNCTIONS) and not _never_called(f)), set())
                for name in _loaded(statement.test):
                    self.direct.setdefault(name, set()).update(chosen)
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
                elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load) and self._own(node.value):
                    self.direct.setdefault(node.attr, set()).add(node.lineno)
                elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in GETTERS
                      and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant)
                      and isinstance(node.args[1].value, str)):  # getattr(self, "PER")
                    self.direct.setdefault(node.args[1].value, set()).add(node.lineno)
        if _never_called(function):
            return  # its body never runs: what it reads counts for nothing
        at_definition = [*function.args.defaults, *(d for d in function.args.kw_defaults if d is not None),
                         *function.decorator_list]
        for name in set().union(*(_loaded(d) for d in at_definition)) if at_definition else ():
            self.direct.setdefault(name, set()).update(_body_entries(function))

    def _own(self, value: ast.AST) -> bool:
        """Whether an attribute read is of the file's own class: through ``self``, ``cls``,
        ``type(...)``, ``super()`` or a class of the file by name (``stream.encoding`` is not)."""
        if isinstance(value, ast.Name):
            return value.id in ("self", "cls") or value.id in self.classes
        return isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in ("type", "super")

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
                if more is None and not found:  # read where no rule can see, and by none of the file's functions
                    self._memo[name] = None
                    return None
                found |= more or set()
        result = found or None
        if not seen:
            self._memo[name] = result
        return result


def _arguments(args: ast.arguments) -> set[str]:
    names = [*args.posonlyargs, *args.args, *args.kwonlyargs, *filter(None, (args.vararg, args.kwarg))]
    return {a.arg for a in names}
