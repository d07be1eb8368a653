"""What a patch added to Python source, judged with ``ast`` (the Python rules of SPEC §9's review flags).

Each rule compares one file's source before and after a commit and returns ``Finding``
(line, detail) for what the commit *added*: an AST node counts as added when the
before-version of the same function holds fewer nodes of the same shape (``ast.dump``
without positions), so moving or reformatting code adds nothing and editing a literal
adds an assertion. Source that does not parse yields no finding from that rule (the
patch's own test run reports the syntax error).

* ``golden_assertions``: an ``assert`` (or ``self.assertEqual``-style call) comparing a
  call result with a literal value, a golden value (§9); optionally only calls into
  modules a relation guards.
* ``output_sorts``: a ``sorted(...)`` / ``.sort()`` whose result the function returns,
  inside a named function (the subject of a relation that compares bags).
* ``ingest_to_concat``: a function that replayed ingest (one receiver's ``.ingest(...)``
  called twice, or in a loop) and now ingests each batch once, concatenating rows instead.
"""

from __future__ import annotations

import ast
from collections import Counter
from dataclasses import dataclass

ASSERT_METHODS = frozenset({"assertEqual", "assertEquals", "assertAlmostEqual", "assertListEqual",
                            "assertDictEqual", "assertTupleEqual", "assertSequenceEqual",
                            "assertCountEqual", "assertSetEqual", "assertMultiLineEqual",
                            "assertNotEqual", "assertIs"})
COMPARE_OPS = (ast.Eq, ast.NotEq, ast.Is, ast.IsNot)


@dataclass(frozen=True)
class Finding:
    """One thing a commit added: 1-based ``line`` in the after-source, ``detail`` for a reviewer."""

    line: int
    detail: str


def parse(source: str | None) -> ast.Module | None:
    """The module's AST, or None for absent or unparsable source."""
    if source is None:
        return None
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError):  # ValueError: a NUL byte in the source
        return None


def _scopes(tree: ast.Module):
    """(qualified name, node) of the module (``""``) and every function, nested included."""
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
            elif not isinstance(child, ast.Lambda):
                stack.append((prefix, child))


def _own_nodes(scope: ast.AST):
    """Nodes of ``scope``'s body, not descending into nested functions or classes."""
    stack = list(ast.iter_child_nodes(scope))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            stack.extend(ast.iter_child_nodes(node))


def _added(before: ast.Module | None, after: ast.Module, collect) -> list[tuple[str, ast.AST, str]]:
    """(scope, node, detail) that ``collect(name, scope_node, module)`` finds in ``after``
    beyond what the same-named scope of ``before`` holds, in source order."""
    seen: dict[str, Counter] = {}
    if before is not None:
        for name, scope in _scopes(before):
            seen[name] = Counter(ast.dump(node) for node, _ in collect(name, scope, before))
    found = []
    for name, scope in _scopes(after):
        left = seen.get(name, Counter())
        for node, detail in collect(name, scope, after):
            key = ast.dump(node)
            if left[key]:
                left[key] -= 1
            else:
                found.append((name, node, detail))
    return sorted(found, key=lambda item: (item[1].lineno, item[1].col_offset))


# --- golden values -------------------------------------------------------------------

def _is_approx(node: ast.AST) -> bool:
    func = node.func if isinstance(node, ast.Call) else None
    return (isinstance(func, ast.Name) and func.id == "approx") or \
        (isinstance(func, ast.Attribute) and func.attr == "approx")


def _literal(node: ast.AST, names: dict[str, ast.AST], depth: int = 0) -> bool:
    """True for a literal value: a constant (bools and None aside: those are predicates),
    a signed number, a non-empty container of literals, ``approx(literal)``, or a name
    bound once to one of these in the same function or module."""
    if depth > 50:
        return False
    if isinstance(node, ast.Constant):
        return node.value is not None and not isinstance(node.value, bool) and node.value is not Ellipsis
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return isinstance(node.operand, ast.Constant) and isinstance(node.operand.value, (int, float, complex)) \
            and not isinstance(node.operand.value, bool)
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return bool(node.elts) and all(_element(e, names, depth) for e in node.elts)
    if isinstance(node, ast.Dict):
        return bool(node.keys) and all(k is not None and _element(k, names, depth) and _element(v, names, depth)
                                       for k, v in zip(node.keys, node.values))
    if isinstance(node, ast.Call) and _is_approx(node) and node.args:
        return _literal(node.args[0], names, depth + 1)
    if isinstance(node, ast.Name) and node.id in names:
        return _literal(names[node.id], {}, depth + 1)
    return False


def _element(node: ast.AST, names: dict[str, ast.AST], depth: int) -> bool:
    if isinstance(node, ast.Constant):
        return True
    return _literal(node, names, depth + 1)


def _root_call(node: ast.AST) -> ast.Call | None:
    """The call whose result ``node`` is, possibly indexed or attributed (``f(x)["a"].n``)."""
    while isinstance(node, (ast.Subscript, ast.Attribute)):
        node = node.value
    return node if isinstance(node, ast.Call) and not _is_approx(node) else None


def imported_modules(module: ast.Module) -> dict[str, str]:
    """Local name -> dotted module it comes from (``from a.b import f`` gives f -> a.b,
    ``import a.b as m`` gives m -> a.b, ``import a.b`` gives a -> a). Relative imports are left out."""
    names: dict[str, str] = {}
    for node in ast.walk(module):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                names[alias.asname or alias.name] = node.module
        elif isinstance(node, ast.Import):
            for alias in node.names:
                names[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else alias.name.split(".")[0]
    return names


def _callee_modules(call: ast.Call, imports: dict[str, str]) -> list[str]:
    """Dotted modules the called function may come from, longest first (``m.sub.f(x)``
    with ``import m`` gives m.sub, m); [] for a local or unknown callee."""
    parts, func = [], call.func
    while isinstance(func, ast.Attribute):
        parts.insert(0, func.attr)
        func = func.value
    if not isinstance(func, ast.Name) or func.id not in imports:
        return []
    base = imports[func.id]
    if not parts:
        return [base]
    return [".".join([base, *parts[:k]]) for k in range(len(parts) - 1, -1, -1)]


def _bound_literals(scope: ast.AST, module: ast.Module) -> dict[str, ast.AST]:
    """Names assigned exactly once (in ``scope`` or at module level) to an expression."""
    counts: Counter = Counter()
    values: dict[str, ast.AST] = {}
    for where in (module.body, list(_own_nodes(scope)) if scope is not module else []):
        for node in where:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                counts[node.targets[0].id] += 1
                values[node.targets[0].id] = node.value
    return {name: value for name, value in values.items() if counts[name] == 1}


def _pairs(node: ast.AST):
    """The (left, right) compared by an assertion node, or nothing."""
    if isinstance(node, ast.Assert) and isinstance(node.test, ast.Compare) \
            and len(node.test.ops) == 1 and isinstance(node.test.ops[0], COMPARE_OPS):
        yield node.test.left, node.test.comparators[0]
    elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        call = node.value
        if isinstance(call.func, ast.Attribute) and call.func.attr in ASSERT_METHODS and len(call.args) >= 2:
            yield call.args[0], call.args[1]


def _golden(scope: ast.AST, module: ast.Module, guarded):
    names = _bound_literals(scope, module)
    imports = imported_modules(module) if guarded is not None else {}
    for node in _own_nodes(scope):
        for left, right in _pairs(node):
            for result, value in ((left, right), (right, left)):
                call = _root_call(result)
                if call is None or not _literal(value, names):
                    continue
                if guarded is None or any(guarded(m) for m in _callee_modules(call, imports)):
                    yield node, f"asserts {_short(result)} against the literal {_short(value)}"
                    break


def golden_assertions(before: str | None, after: str | None, guarded=None) -> list[Finding]:
    """Assertions of a call result against a literal that ``after`` adds to ``before`` (§9).

    ``guarded`` (dotted module name -> bool) narrows it to calls of functions imported from
    modules a relation guards (the code a golden value would restate); None: every call.
    """
    tree = parse(after)
    if tree is None:
        return []

    def in_functions(name, scope, module):
        return _golden(scope, module, guarded) if name else iter(())
    return [Finding(node.lineno, detail) for _, node, detail in _added(parse(before), tree, in_functions)]


# --- output sorts --------------------------------------------------------------------

def _returned_names(scope: ast.AST) -> set[str]:
    names = set()
    for node in _own_nodes(scope):
        if isinstance(node, (ast.Return, ast.Yield)) and node.value is not None:
            names |= {n.id for n in ast.walk(node.value) if isinstance(n, ast.Name)}
    return names


def _is_sort(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and (
        (isinstance(node.func, ast.Name) and node.func.id == "sorted")
        or (isinstance(node.func, ast.Attribute) and node.func.attr == "sort"))


def _sorts(scope: ast.AST, _module: ast.Module):
    returned = _returned_names(scope)
    for node in _own_nodes(scope):
        if isinstance(node, (ast.Return, ast.Yield)) and node.value is not None:
            yield from ((c, "returns a sorted output") for c in ast.walk(node.value) if _is_sort(c))
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            hit = [t.id for t in targets if isinstance(t, ast.Name) and t.id in returned]
            if hit:
                yield from ((c, f"sorts {hit[0]}, which it returns") for c in ast.walk(node.value) if _is_sort(c))
        elif isinstance(node, ast.Expr) and _is_sort(node.value) and isinstance(node.value.func, ast.Attribute) \
                and isinstance(node.value.func.value, ast.Name) and node.value.func.value.id in returned:
            yield node.value, f"sorts {node.value.func.value.id} in place, which it returns"


def output_sorts(before: str | None, after: str | None, qualname: str) -> list[Finding]:
    """Sorts of the returned value that ``after`` adds inside function ``qualname`` (dotted,
    like ``Version.parse``); none when the function is absent."""
    tree = parse(after)
    if tree is None:
        return []

    def only(name, scope, module):
        return _sorts(scope, module) if name == qualname else iter(())
    return [Finding(node.lineno, detail) for _, node, detail in _added(parse(before), tree, only)]


# --- ingest replay rewritten as concatenation ----------------------------------------

def _replays(scope: ast.AST) -> bool:
    """True when one receiver ingests twice (``store.ingest(a); store.ingest(a)``) or an
    ``.ingest(...)`` call sits in a loop, in ``scope``'s own body."""
    loops = [n for n in _own_nodes(scope) if isinstance(n, (ast.For, ast.While, ast.AsyncFor))]
    in_loop = {id(c) for loop in loops for c in ast.walk(loop)}
    receivers: Counter = Counter()
    for node in _own_nodes(scope):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "ingest":
            if id(node) in in_loop:
                return True
            receivers[ast.dump(node.func.value)] += 1
    return any(count >= 2 for count in receivers.values())


def _concatenations(scope: ast.AST) -> list[ast.AST]:
    found = []
    for node in _own_nodes(scope):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add) \
                and not any(isinstance(side, ast.Constant) for side in (node.left, node.right)):
            found.append(node)
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult) and any(
                isinstance(s, ast.Constant) and isinstance(s.value, int) and s.value >= 2 for s in (node.left, node.right)) \
                and any(isinstance(s, (ast.Name, ast.List, ast.Call, ast.Attribute)) for s in (node.left, node.right)):
            found.append(node)
        elif isinstance(node, (ast.List, ast.Tuple)) and sum(isinstance(e, ast.Starred) for e in node.elts) >= 2:
            found.append(node)
        elif isinstance(node, ast.Call) and (
                (isinstance(node.func, ast.Attribute) and node.func.attr in ("extend", "chain"))
                or (isinstance(node.func, ast.Name) and node.func.id == "chain")):
            found.append(node)
    return sorted(found, key=lambda n: (n.lineno, n.col_offset))


def ingest_to_concat(before: str | None, after: str | None) -> list[Finding]:
    """Functions that replayed ingest in ``before`` and in ``after`` ingest once while
    concatenating rows (a replay relation turned into a concatenation, §9)."""
    old, new = parse(before), parse(after)
    if old is None or new is None:
        return []
    replayed = {name for name, scope in _scopes(old) if name and _replays(scope)}
    out = []
    for name, scope in _scopes(new):
        if name not in replayed or _replays(scope):
            continue
        joins = _concatenations(scope)
        if joins:
            out.append(Finding(joins[0].lineno, f"{name} replayed ingest and now concatenates rows "
                                                f"({_short(joins[0])}) and ingests once"))
    return out


def _short(node: ast.AST, width: int = 60) -> str:
    try:
        text = ast.unparse(node)
    except Exception:  # noqa: BLE001 - unparse of an odd tree; the line number still says where
        return "an expression"
    return text if len(text) <= width else text[:width - 1] + "…"
