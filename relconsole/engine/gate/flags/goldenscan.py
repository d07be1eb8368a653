"""Golden assertions in Python source (SPEC §9 ``golden_literal``): a call result compared with
a literal value, in every form tests write them (``assert``, chained comparisons, ``and``,
``self.assertEqual``/``assertTrue``, ``math.isclose``, numpy's and pandas' testing asserts,
``pytest.approx``), a name bound to a call or a literal resolved within its function.
"""

from __future__ import annotations

import ast
import copy
from collections import Counter
from dataclasses import dataclass

from relconsole.engine.gate.flags.pysource import own_nodes, short_source


ASSERT_METHODS = frozenset({"assertEqual", "assertEquals", "assertAlmostEqual", "assertListEqual",
                            "assertDictEqual", "assertTupleEqual", "assertSequenceEqual",
                            "assertCountEqual", "assertSetEqual", "assertMultiLineEqual",
                            "assertNotEqual", "assertIs", "assertAlmostEquals", "failUnlessEqual"})


TRUTH_METHODS = frozenset({"assertTrue", "assert_", "failUnless"})


PAIR_FUNCTIONS = frozenset({"isclose", "assert_allclose", "assert_almost_equal", "assert_array_equal",
                            "assert_array_almost_equal", "assert_equal", "assert_frame_equal",
                            "assert_series_equal", "assert_approx_equal", "allclose", "array_equal"})


COMPARE_OPS = (ast.Eq, ast.NotEq, ast.Is, ast.IsNot)


@dataclass(frozen=True)
class Golden:
    """One golden assertion in a file: ``key`` (its shape, sides ordered, no position or
    function name), 1-based ``line`` and ``detail``; ``shape`` is the key without the
    expected value (what is asserted: the same ``shape`` with another ``key`` is the same
    question given another answer), ``scope`` the enclosing definition's name ("" at module
    level), ``asked`` and ``expected`` the two sides' source, ``modules`` the dotted modules the
    asserted calls may come from."""

    key: str
    line: int
    detail: str
    shape: str = ""
    scope: str = ""
    asked: str = ""
    expected: str = ""
    modules: tuple[str, ...] = ()


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
    """Local name -> dotted module it comes from (``from a.b import f`` gives f -> a.b, and
    ``"f."`` -> a.b.f in case f is a submodule; ``import a.b as m`` gives m -> a.b, ``import
    a.b`` gives a -> a); ``from m import *`` gives ``"*"`` -> the star-imported modules joined
    by spaces. Relative imports are left out."""
    names: dict[str, str] = {}
    stars: list[str] = []
    for node in ast.walk(module):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                if alias.name == "*":
                    stars.append(node.module)
                else:
                    names[alias.asname or alias.name] = node.module
                    names[f"{alias.asname or alias.name}."] = f"{node.module}.{alias.name}"  # it may be a submodule
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
    found = [".".join([base, *parts[:k]]) for k in range(len(parts) - 1, -1, -1)]
    submodule = imports.get(f"{func.id}.")  # ``from pkg import sub as sq; sq.f()``: pkg.sub
    return ([".".join([submodule, *parts[:k]]) for k in range(len(parts) - 1, -1, -1)] + found) if submodule else found


def _rebound(node: ast.AST) -> list[str]:
    """Names ``node`` gives a value that is no expression of its own: ``n += 1``, a ``for``
    or ``with`` target, ``(n := ...)``. A counter bound to ``0`` and then counted is no literal
    (issue 35: ``assertEqual(result, len(tees))`` with ``result`` a counter)."""
    if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
        return [node.target.id]
    if isinstance(node, (ast.For, ast.AsyncFor)):
        return [n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)]
    if isinstance(node, (ast.With, ast.AsyncWith)):
        return [n.id for item in node.items if item.optional_vars is not None
                for n in ast.walk(item.optional_vars) if isinstance(n, ast.Name)]
    if isinstance(node, ast.NamedExpr) and isinstance(node.target, ast.Name):
        return [node.target.id]
    return []


def bindings(nodes) -> tuple[Counter, dict[str, ast.AST]]:
    """(how often each name is assigned, its last value) over ``nodes``; a name also counted,
    looped over or bound by ``with`` (``_rebound``) counts twice: it is bound to no one value."""
    counts: Counter = Counter()
    values: dict[str, ast.AST] = {}
    for node in nodes:
        for name in _rebound(node):
            counts[name] += 2
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
        own_counts, own_values = bindings(own_nodes(scope))
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
        out += [(node.lineno, name, node) for name in _rebound(node)]  # a value of no literal
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


def golden_in(scope: ast.AST, module: ast.Module, imports: dict[str, str] | None, guarded, module_level,
              scope_name: str = ""):
    """Yield a ``Golden`` for each comparison in ``scope`` of ``module`` that asserts a call's
    result against a literal (the golden-literal review flag); ``imports``: local name ->
    module, ``guarded`` and ``module_level`` as ``pyscan`` passes them.

    A golden's question (``shape``) is read through the function's own names (``r = f(x);
    assert r == 3`` asks ``f(x)``) and its answer through the names bound once around it
    (``EXPECTED = 3`` is the answer 3), so renaming a variable or moving the answer into a
    constant changes neither; a
    ``pytest.mark.parametrize`` row of the test is a golden of its own, at the row's line
    (the answer the row gives for the call with the row's inputs)."""
    module_names = _bound_once(module, module_level)
    local = [] if scope is module else _assignments(own_nodes(scope))
    rows = _parametrize_rows(scope)
    for node in own_nodes(scope) if scope is not module else module.body:
        names = _names_at(node.lineno, module_names, local) if hasattr(node, "lineno") else module_names
        own = _names_at(node.lineno, {}, local) if hasattr(node, "lineno") else {}  # the question reads these
        for left, right, op in _pairs(node):
            for result, value in ((left, right), (right, left)):
                if _literal(result, names) or _of_itself(result, value):
                    continue
                calls = _calls(result, names)
                modules = tuple(dict.fromkeys(m for c in calls for m in _callee_modules(c, imports or {})))
                if not calls or (guarded is not None and not any(guarded(m) for m in modules)):
                    continue
                found = list(_row_goldens(rows, result, value, op, own, scope_name, modules))
                if not found and _literal(value, names):
                    asked = _substituted(result, own)
                    answer = _resolved(value, names)
                    shape = f"{op}|{ast.dump(asked)}"
                    found = [Golden(f"{shape}|{ast.dump(answer)}", node.lineno,
                                    f"asserts {short_source(result)} against the literal {short_source(answer)}",
                                    shape, scope_name, short_source(asked), short_source(answer), modules)]
                if found:
                    yield from found
                    break


def _resolved(node: ast.AST, names: dict[str, ast.AST]) -> ast.AST:
    """A name bound once, as its value; anything else as it is."""
    return names[node.id] if isinstance(node, ast.Name) and node.id in names else node


def _substituted(node: ast.AST, names: dict[str, ast.AST], values: dict[str, ast.AST] | None = None) -> ast.AST:
    """A copy of ``node`` with each name of ``names`` (the function's own, one level) or of
    ``values`` (a parametrize row's) replaced by its value."""
    table = {**{k: v for k, v in names.items() if not isinstance(v, ast.Name)}, **(values or {})}

    class Swap(ast.NodeTransformer):
        def visit_Name(self, name):
            return table.get(name.id, name) if isinstance(name.ctx, ast.Load) else name
    return Swap().visit(copy.deepcopy(node))


PARAMETRIZE = ("parametrize",)


def _parametrize_rows(scope: ast.AST) -> list[tuple[dict[str, ast.AST], int]]:
    """``({argument name: value node}, line)`` of each row of each ``parametrize`` decorator of a
    test function (``pytest.mark.parametrize("n, want", [(1, "one"), pytest.param(2, "two")])``);
    [] for anything else, or a table that is not written out as rows."""
    out = []
    for decorator in getattr(scope, "decorator_list", []):
        if not (isinstance(decorator, ast.Call) and _name(decorator.func) in PARAMETRIZE and len(decorator.args) >= 2):
            continue
        argnames, table = decorator.args[0], decorator.args[1]
        if isinstance(argnames, ast.Constant) and isinstance(argnames.value, str):
            params = [p.strip() for p in argnames.value.split(",") if p.strip()]
        elif isinstance(argnames, (ast.List, ast.Tuple)) and all(isinstance(e, ast.Constant) for e in argnames.elts):
            params = [str(e.value) for e in argnames.elts]
        else:
            continue
        if not isinstance(table, (ast.List, ast.Tuple)):
            continue
        for row in table.elts:
            if isinstance(row, ast.Call) and _name(row.func) == "param":
                cells = list(row.args)
            elif len(params) > 1 and isinstance(row, (ast.Tuple, ast.List)):
                cells = list(row.elts)
            else:
                cells = [row]
            if len(cells) == len(params):
                out.append((dict(zip(params, cells)), row.lineno))
    return out


def _row_goldens(rows, result, value, op, names, scope_name, modules):
    """The goldens of parametrize ``rows`` for an assertion of ``result`` against a row's
    argument ``value`` (a name the rows give)."""
    if not isinstance(value, ast.Name):
        return
    for cells, line in rows:
        answer = cells.get(value.id)
        if answer is None or not _literal(answer, {}):
            continue
        asked = _substituted(result, names, {k: v for k, v in cells.items() if k != value.id})
        shape = f"{op}|{ast.dump(asked)}"
        yield Golden(f"{shape}|{ast.dump(answer)}", line,
                     f"asserts {short_source(asked)} against the literal {short_source(answer)} (a parametrize row)",
                     shape, scope_name, short_source(asked), short_source(answer), modules)
