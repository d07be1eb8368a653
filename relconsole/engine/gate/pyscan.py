"""What a patch added to Python source, judged with ``ast`` (the Python rules of SPEC §9's review flags).

Each rule compares source before and after a commit and returns ``Finding`` (line,
detail) for what the commit *added*. Nodes are compared by shape (``ast.dump`` without
positions), so moving or reformatting code adds nothing and editing a literal adds an
assertion. Source that cannot be judged (a syntax error, nesting deeper than the parser
or ``ast.dump`` can follow) raises ``Unjudged``; an unparsable before-version counts as
empty, so everything in the after-version is new.

* ``golden_values`` / ``golden_assertions``: assertions comparing a call result with a
  literal value, a golden value (§9), in every form tests write them (``assert``, chained
  comparisons, ``and``, ``self.assertEqual``/``assertTrue``, ``math.isclose``, numpy's and
  pandas' testing asserts, ``pytest.approx``), a name bound to a call or a literal resolved
  within its function. Counted per file (or, by ``patchflags``, per commit across files),
  keyed without the function's name, so renaming or moving a test adds nothing.
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
                            "assertNotEqual", "assertIs", "assertAlmostEquals", "failUnlessEqual"})
TRUTH_METHODS = frozenset({"assertTrue", "assert_", "failUnless"})
PAIR_FUNCTIONS = frozenset({"isclose", "assert_allclose", "assert_almost_equal", "assert_array_equal",
                            "assert_array_almost_equal", "assert_equal", "assert_frame_equal",
                            "assert_series_equal", "assert_approx_equal", "allclose", "array_equal"})
COMPARE_OPS = (ast.Eq, ast.NotEq, ast.Is, ast.IsNot)


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


@dataclass(frozen=True)
class Golden:
    """One golden assertion in a file: ``key`` (its shape, sides ordered, no position or
    function name), 1-based ``line`` and ``detail``."""

    key: str
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
    return isinstance(node, ast.Call) and _name(node.func) == "approx"


def _name(func: ast.AST) -> str | None:
    """The called name: ``f`` for ``f(...)``, ``attr`` for ``x.attr(...)``."""
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None


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
    if _is_approx(node) and node.args:
        return _literal(node.args[0], names, depth + 1)
    if isinstance(node, ast.Name) and node.id in names:
        return _literal(names[node.id], {}, depth + 1)
    return False


def _element(node: ast.AST, names: dict[str, ast.AST], depth: int) -> bool:
    if isinstance(node, ast.Constant):
        return True
    return _literal(node, names, depth + 1)


def imported_modules(module: ast.Module) -> dict[str, str]:
    """Local name -> dotted module it comes from (``from a.b import f`` gives f -> a.b,
    ``import a.b as m`` gives m -> a.b, ``import a.b`` gives a -> a); ``from m import *``
    gives ``"*"`` -> the star-imported modules joined by spaces. Relative imports are left out."""
    names: dict[str, str] = {}
    stars: list[str] = []
    for node in ast.walk(module):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                if alias.name == "*":
                    stars.append(node.module)
                else:
                    names[alias.asname or alias.name] = node.module
        elif isinstance(node, ast.Import):
            for alias in node.names:
                names[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else alias.name.split(".")[0]
    if stars:
        names["*"] = " ".join(stars)
    return names


def _callee_modules(call: ast.Call, imports: dict[str, str]) -> list[str]:
    """Dotted modules the called function may come from, longest first (``m.sub.f(x)``
    with ``import m`` gives m.sub, m); a name no import binds may come from a star import."""
    parts, func = [], call.func
    while isinstance(func, ast.Attribute):
        parts.insert(0, func.attr)
        func = func.value
    if not isinstance(func, ast.Name):
        return []
    if func.id not in imports:
        return imports.get("*", "").split() if not parts else []
    base = imports[func.id]
    if not parts:
        return [base]
    return [".".join([base, *parts[:k]]) for k in range(len(parts) - 1, -1, -1)]


def _bindings(nodes) -> tuple[Counter, dict[str, ast.AST]]:
    """(how often each name is assigned, its last value) over ``nodes``."""
    counts: Counter = Counter()
    values: dict[str, ast.AST] = {}
    for node in nodes:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            target, value = node.targets[0].id, node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            target, value = node.target.id, node.value
        else:
            continue
        counts[target] += 1
        values[target] = value
    return counts, values


def _bound_once(scope: ast.AST, module_level: tuple[Counter, dict]) -> dict[str, ast.AST]:
    """Names assigned exactly once (in ``scope``'s body or at module level) to one expression."""
    counts, values = module_level
    if not isinstance(scope, ast.Module):
        own_counts, own_values = _bindings(_own_nodes(scope))
        counts, values = counts + own_counts, {**values, **own_values}
    return {name: value for name, value in values.items() if counts[name] == 1}


def _pairs_in(test: ast.AST):
    """(left, right, op) compared anywhere an assertion's truth depends on: comparisons
    (chained ones pair by pair), ``and``, ``not``, and pair-comparing calls."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        for value in test.values:
            yield from _pairs_in(value)
    elif isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        yield from _pairs_in(test.operand)
    elif isinstance(test, ast.Compare):
        left = test.left
        for op, right in zip(test.ops, test.comparators):
            if isinstance(op, COMPARE_OPS):
                yield left, right, type(op).__name__
            left = right
    elif isinstance(test, ast.Call) and _name(test.func) in PAIR_FUNCTIONS and len(test.args) >= 2:
        yield test.args[0], test.args[1], "Eq"


def _pairs(node: ast.AST):
    """(left, right, op) that an assertion statement compares."""
    if isinstance(node, ast.Assert):
        yield from _pairs_in(node.test)
    elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        call, name = node.value, _name(node.value.func)
        keywords = {k.arg: k.value for k in call.keywords if k.arg}
        if name in ASSERT_METHODS:
            args = list(call.args[:2]) + [keywords[k] for k in ("first", "second") if k in keywords]
            if len(args) >= 2:
                yield args[0], args[1], "Eq"
        elif name in TRUTH_METHODS and (call.args or "expr" in keywords):
            yield from _pairs_in(call.args[0] if call.args else keywords["expr"])
        elif name in PAIR_FUNCTIONS:
            yield from _pairs_in(call)


def _calls(node: ast.AST, names: dict[str, ast.AST], depth: int = 0) -> list[ast.Call]:
    """Calls whose result ``node`` holds: calls inside it (``round(f(x), 1)``, ``f(x)[0].get("v")``)
    and, through a name bound once in the function, the calls of its value (``t = f(x); t["a"]``)."""
    if depth > 5:
        return []
    found = [n for n in ast.walk(node) if isinstance(n, ast.Call) and not _is_approx(n)]
    for name in {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} & set(names):
        found += _calls(names[name], {}, depth + 1)
    return found


def _assignments(nodes) -> list[tuple[int, str, ast.AST]]:
    """(line, name, value) of every plain assignment to one name among ``nodes``, in line order."""
    out = []
    for node in nodes:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            out.append((node.lineno, node.targets[0].id, node.value))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            out.append((node.lineno, node.target.id, node.value))
    return sorted(out, key=lambda item: item[0])


def _names_at(line: int, module_names: dict[str, ast.AST], local: list[tuple[int, str, ast.AST]]) -> dict:
    """What each name holds at ``line``: the last assignment above it in the function (a name
    reassigned between two assertions, ``r = f(a); assert r == 1; r = f(b); assert r == 2``,
    holds each value in turn), else the module's name bound once."""
    names = dict(module_names)
    for lineno, name, value in local:
        if lineno >= line:
            break
        names[name] = value
    return names


def _of_itself(result: ast.AST, value: ast.AST) -> bool:
    """The expected side is a name or a container that is also an input of the call
    (``loads(dumps(ROWS)) == ROWS``): a property, not an answer the code restates."""
    if not isinstance(value, (ast.Name, ast.List, ast.Tuple, ast.Set, ast.Dict)):
        return False
    wanted = ast.dump(value)
    return any(ast.dump(node) == wanted for node in ast.walk(result) if node is not result)


def _golden_in(scope: ast.AST, module: ast.Module, imports: dict[str, str] | None, guarded, module_level):
    module_names = _bound_once(module, module_level)
    local = [] if scope is module else _assignments(_own_nodes(scope))
    for node in _own_nodes(scope) if scope is not module else module.body:
        names = _names_at(node.lineno, module_names, local) if hasattr(node, "lineno") else module_names
        for left, right, op in _pairs(node):
            for result, value in ((left, right), (right, left)):
                if not _literal(value, names) or _literal(result, names) or _of_itself(result, value):
                    continue
                calls = _calls(result, names)
                if not calls or (guarded is not None and not any(
                        guarded(m) for c in calls for m in _callee_modules(c, imports))):
                    continue
                key = f"{op}|{ast.dump(result)}|{ast.dump(value)}"
                yield Golden(key, node.lineno, f"asserts {_short(result)} against the literal {_short(value)}")
                break


def golden_values(source: str | None, guarded=None) -> list[Golden]:
    """Every golden assertion in ``source``, in line order ([] for None).

    ``guarded`` (dotted module name -> bool) narrows it to results of calls into modules a
    relation guards (the code a golden value would restate); None: every call. Raises
    Unjudged when the source cannot be judged.
    """
    tree = parse(source)
    if tree is None:
        return []

    def scan():
        imports = imported_modules(tree) if guarded is not None else {}
        module_level = _bindings(tree.body)
        found = [g for _, scope in _scopes(tree) for g in _golden_in(scope, tree, imports, guarded, module_level)]
        return sorted(found, key=lambda g: g.line)
    return _judged(scan)


def new_golden(before: list[Golden], after: list[Golden]) -> list[Golden]:
    """The goldens of ``after`` beyond the same-keyed ones of ``before`` (a multiset)."""
    left = Counter(g.key for g in before)
    out = []
    for golden in after:
        if left[golden.key]:
            left[golden.key] -= 1
        else:
            out.append(golden)
    return out


def golden_assertions(before: str | None, after: str | None, guarded=None) -> list[Finding]:
    """Golden assertions that ``after`` adds to ``before`` (§9). Raises Unjudged for an
    after-version that cannot be judged; an unjudgeable before-version counts as empty."""
    try:
        old = golden_values(before, guarded)
    except Unjudged:
        old = []
    return [Finding(g.line, g.detail) for g in new_golden(old, golden_values(after, guarded))]


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
    return _judged(lambda: [Finding(node.lineno, detail)
                            for _, node, detail in _added(_before(before), tree, only)])


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
        elif isinstance(node, ast.AugAssign) and (
                (isinstance(node.op, ast.Add) and not isinstance(node.value, ast.Constant))
                or (isinstance(node.op, ast.Mult) and isinstance(node.value, ast.Constant)
                    and isinstance(node.value.value, int) and node.value.value >= 2)):
            found.append(node)
        elif isinstance(node, ast.Call) and (
                (isinstance(node.func, ast.Attribute) and node.func.attr in ("extend", "chain"))
                or (isinstance(node.func, ast.Name) and node.func.id == "chain")):
            found.append(node)
    return sorted(found, key=lambda n: (n.lineno, n.col_offset))


def ingest_to_concat(before: str | None, after: str | None) -> list[Finding]:
    """Functions that replayed ingest in ``before`` and in ``after`` ingest once while
    concatenating rows (a replay relation turned into a concatenation, §9). Raises
    Unjudged for an after-version that cannot be judged."""
    new = parse(after)
    old = _before(before)
    if old is None or new is None:
        return []

    def scan():
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
    return _judged(scan)


def _short(node: ast.AST, width: int = 60) -> str:
    try:
        text = ast.unparse(node)
    except Exception:  # noqa: BLE001 - unparse of an odd tree; the line number still says where
        return "an expression"
    return text if len(text) <= width else text[:width - 1] + "…"
