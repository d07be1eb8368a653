"""The mutation operators of "does it bite" and the sites they apply to in one function (issue 3 item 6).

A site is a node of the function's tree, named by its path from the function node
(``Path_``), with an edit that returns its replacement; ``sites`` lists every site of every
operator in one function, and ``replace_at`` puts an edit's result in its place.

Operators (``OPERATORS``; each site is a separate mutant with a label and a line):

==============  ===========================================================================
drop_sort       ``sorted(x)`` -> ``list(x)`` (the type kept, the order lost); ``x.sort()`` removed
boundary        ``<`` <-> ``<=``, ``>`` <-> ``>=``
negate          ``<`` <-> ``>``, ``<=`` <-> ``>=``, ``==`` <-> ``!=``, ``in`` <-> ``not in``, ``is`` <-> ``is not``
drop_guard      an ``if`` without ``else`` whose body only raises/returns/continues/breaks is removed
swap_args       the first two positional arguments of a call with two or more are swapped
constant        an int ``n`` -> ``n + 1``, a float ``v`` -> ``v + 1.0`` (bools untouched)
first_only      ``break`` appended to a ``for`` body; ``[... for ...]``/``{...: ... for ...}``
                keep only their first element
return_early    a bare ``return`` before the function's last statement
drop_dedup      ``set(x)`` -> ``list(x)``; an upsert ``d[k] = v``, ``d.setdefault(k, ...)``,
                ``d.update(m)`` gets a fresh key per write (``str(k) + '#' + str(len(d))``)
uncompensated   ``math.fsum(x)``/``fsum(x)`` -> ``sum(x)`` (a compensated reduction made plain)
drop_call       one call of a method chain dropped (``x.strip().lower()`` -> ``x.strip()``)
regex           a pattern given to ``re``: ``^``/``$`` dropped, ``+``/``?`` widened to ``*``
and_or          ``and`` <-> ``or``
slice_bound     a slice's bound moved by one (``x[a:b]`` -> ``x[a + 1:b]``, ``x[a:b + 1]``)
==============  ===========================================================================
"""

from __future__ import annotations

import ast
import copy
from dataclasses import dataclass
from typing import Callable, Iterator

Path_ = tuple[tuple[str, int | None], ...]  # (field, index-or-None) steps from a function node
Edit = Callable[[ast.AST], "ast.AST | list[ast.stmt]"]


@dataclass(frozen=True)
class _Site:
    operator: str
    label: str
    line: int
    path: Path_
    edit: Edit



# --- walking with paths ----------------------------------------------------------------

def walk_paths(node: ast.AST, path: Path_ = ()) -> Iterator[tuple[Path_, ast.AST]]:
    """Every node under ``node`` (itself excluded) with its path, depth first, in source order."""
    for name, value in ast.iter_fields(node):
        if isinstance(value, ast.AST):
            yield path + ((name, None),), value
            yield from walk_paths(value, path + ((name, None),))
        elif isinstance(value, list):
            for index, item in enumerate(value):
                if isinstance(item, ast.AST):
                    yield path + ((name, index),), item
                    yield from walk_paths(item, path + ((name, index),))


def node_at(root: ast.AST, path: Path_) -> ast.AST:
    """The node of ``root`` at ``path`` (a sequence of (field, index or None))."""
    node = root
    for name, index in path:
        node = getattr(node, name) if index is None else getattr(node, name)[index]
    return node


def replace_at(root: ast.AST, path: Path_, new: ast.AST | list[ast.stmt]) -> None:
    """Put ``new`` (a node, or statements) at ``path`` of ``root``, in place; an emptied body
    gets a ``pass``."""
    parent = node_at(root, path[:-1])
    name, index = path[-1]
    if index is None:
        setattr(parent, name, new)
        return
    items = getattr(parent, name)
    items[index:index + 1] = new if isinstance(new, list) else [new]
    if not items:  # a body emptied by a removal still needs a statement
        items.append(ast.Pass())


# --- operators: each yields (label, edit) for one node --------------------------------

def _call_name(node: ast.AST) -> str | None:
    if not isinstance(node, ast.Call):
        return None
    func = node.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None


def _src(node: ast.AST, width: int = 40) -> str:
    text = " ".join(ast.unparse(node).split())
    return text if len(text) <= width else text[:width - 1] + "…"


def op_drop_sort(node: ast.AST):
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "sorted" \
            and len(node.args) == 1:
        yield f"drop sort: {_src(node)} -> list(...)", \
            lambda n: ast.Call(ast.Name("list", ast.Load()), [n.args[0]], [])
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) \
            and isinstance(node.value.func, ast.Attribute) and node.value.func.attr == "sort":
        yield f"drop sort: remove {_src(node.value)}", lambda n: []


_BOUNDARY = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt}
_NEGATE = {ast.Lt: ast.Gt, ast.Gt: ast.Lt, ast.LtE: ast.GtE, ast.GtE: ast.LtE, ast.Eq: ast.NotEq,
           ast.NotEq: ast.Eq, ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot, ast.IsNot: ast.Is}
_SYMBOL = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!=",
           ast.In: "in", ast.NotIn: "not in", ast.Is: "is", ast.IsNot: "is not"}


def _compare_op(table: dict, verb: str):
    def op(node: ast.AST):
        if not isinstance(node, ast.Compare):
            return
        for index, cmp in enumerate(node.ops):
            new = table.get(type(cmp))
            if new is None:
                continue

            def edit(n, i=index, new=new):
                n.ops[i] = new()
                return n
            left = node.left if index == 0 else node.comparators[index - 1]
            lhs, rhs = _src(left, 25), _src(node.comparators[index], 25)  # source text may hold braces
            yield f"{verb}: {lhs} {_SYMBOL[type(cmp)]} {rhs} -> {lhs} {_SYMBOL[new]} {rhs}", edit
    return op


def _guard_only(body: list[ast.stmt]) -> bool:
    return bool(body) and all(isinstance(s, (ast.Raise, ast.Return, ast.Continue, ast.Break)) for s in body)


def op_drop_guard(node: ast.AST):
    if isinstance(node, ast.If) and not node.orelse and _guard_only(node.body):
        yield f"drop guard: if {_src(node.test)}: {type(node.body[0]).__name__.lower()}", lambda n: []


def op_swap_args(node: ast.AST):
    if isinstance(node, ast.Call) and len(node.args) >= 2 \
            and not any(isinstance(a, ast.Starred) for a in node.args[:2]):
        def edit(n):
            n.args[0], n.args[1] = n.args[1], n.args[0]
            return n
        yield f"swap arguments of {_src(node.func, 30)}({_src(node.args[0], 15)}, {_src(node.args[1], 15)})", edit


def op_constant(node: ast.AST):
    value = getattr(node, "value", None) if isinstance(node, ast.Constant) else None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return
    new = value + 1 if isinstance(value, int) else value + 1.0
    yield f"constant {value!r} -> {new!r}", lambda n: ast.Constant(new)


def _first_of_comprehension(n: ast.AST) -> ast.AST:
    if isinstance(n, ast.ListComp):
        return ast.Subscript(n, ast.Slice(None, ast.Constant(1)), ast.Load())
    items = ast.Call(ast.Attribute(n, "items", ast.Load()), [], [])
    first = ast.Subscript(ast.Call(ast.Name("list", ast.Load()), [items], []),
                          ast.Slice(None, ast.Constant(1)), ast.Load())
    return ast.Call(ast.Name("dict", ast.Load()), [first], [])


def op_first_only(node: ast.AST):
    if isinstance(node, (ast.For, ast.AsyncFor)):
        def edit(n):
            n.body = n.body + [ast.Break()]
            return n
        yield f"first only: break after one pass of for {_src(node.target, 20)} in {_src(node.iter, 25)}", edit
    if isinstance(node, (ast.ListComp, ast.DictComp)):
        yield f"first only: keep the first element of {_src(node)}", _first_of_comprehension


def _fresh_key(key: ast.expr, mapping: ast.expr) -> ast.expr:
    """``str(key) + '#' + str(len(mapping))``: a new key per write, so nothing is replaced."""
    def call(name, arg):
        return ast.Call(ast.Name(name, ast.Load()), [arg], [])
    left = ast.BinOp(call("str", key), ast.Add(), ast.Constant("#"))
    return ast.BinOp(left, ast.Add(), call("str", call("len", copy.deepcopy(mapping))))


def op_drop_dedup(node: ast.AST):
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "set" \
            and len(node.args) == 1:
        yield f"drop dedup: {_src(node)} -> list(...)", \
            lambda n: ast.Call(ast.Name("list", ast.Load()), n.args, n.keywords)
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Subscript) \
            and not isinstance(node.targets[0].slice, ast.Slice):
        def edit(n):
            target = n.targets[0]
            target.slice = _fresh_key(target.slice, target.value)
            return n
        yield f"drop dedup: {_src(node.targets[0])} = ... writes a fresh key", edit
    name = _call_name(node)
    if name == "setdefault" and isinstance(node.func, ast.Attribute) and node.args:
        def edit(n):
            n.args[0] = _fresh_key(n.args[0], n.func.value)
            return n
        yield f"drop dedup: {_src(node.func)}(...) gets a fresh key", edit
    if name == "update" and isinstance(node.func, ast.Attribute) and len(node.args) == 1 and not node.keywords:
        def edit(n):
            k, v = ast.Name("_k", ast.Load()), ast.Name("_v", ast.Load())
            items = ast.Call(ast.Attribute(n.args[0], "items", ast.Load()), [], [])
            gen = ast.comprehension(ast.Tuple([ast.Name("_k", ast.Store()), ast.Name("_v", ast.Store())],
                                              ast.Store()), items, [], 0)
            n.args[0] = ast.DictComp(_fresh_key(k, n.func.value), v, [gen])
            return n
        yield f"drop dedup: {_src(node.func)}(...) adds fresh keys", edit


def op_uncompensated(node: ast.AST):
    if _call_name(node) == "fsum" and len(node.args) == 1:
        yield f"uncompensated: {_src(node)} -> sum(...)", \
            lambda n: ast.Call(ast.Name("sum", ast.Load()), n.args, [])


# methods a text or sequence goes through that an agent drops or adds by mistake
CHAIN_METHODS = frozenset({"lower", "upper", "casefold", "strip", "lstrip", "rstrip", "title", "capitalize",
                           "swapcase", "copy", "normalize"})


def op_drop_call(node: ast.AST):
    """``x.strip().lower()`` -> ``x.strip()``: one call of a method chain dropped."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in CHAIN_METHODS \
            and len(node.args) <= 1 and not node.keywords:
        yield f"drop call: {_src(node)} -> {_src(node.func.value)}", lambda n: n.func.value


REGEX_CALLS = frozenset({"compile", "match", "fullmatch", "search", "sub", "subn", "findall", "finditer", "split"})


def _regex_edits(pattern: str) -> list[tuple[str, str]]:
    """(words, new pattern) for each small edit: an anchor dropped, a quantifier widened."""
    edits = []
    if pattern.startswith("^"):
        edits.append(("drop the ^ anchor", pattern[1:]))
    if pattern.endswith("$") and not pattern.endswith("\\$"):
        edits.append(("drop the $ anchor", pattern[:-1]))
    for quantifier, wider in (("+", "*"), ("?", "*")):
        at = next((i for i, c in enumerate(pattern) if c == quantifier and (i == 0 or pattern[i - 1] != "\\")), None)
        if at is not None and at > 0 and pattern[at - 1] not in "(*+?{":
            edits.append((f"widen {quantifier} to {wider}", pattern[:at] + wider + pattern[at + 1:]))
    return edits


def op_regex(node: ast.AST):
    """A regular expression literal given to ``re``: an anchor dropped, ``+``/``?`` widened to ``*``."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in REGEX_CALLS
            and isinstance(node.func.value, ast.Name) and node.func.value.id == "re" and node.args
            and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
        return
    for words, pattern in _regex_edits(node.args[0].value):
        def edit(n, pattern=pattern):
            n.args[0] = ast.Constant(pattern)
            return n
        yield f"regex: {words} in {node.args[0].value!r}"[:80], edit


def op_and_or(node: ast.AST):
    """``a and b`` <-> ``a or b``."""
    if isinstance(node, ast.BoolOp):
        new = ast.Or if isinstance(node.op, ast.And) else ast.And
        words = ("and", "or") if isinstance(node.op, ast.And) else ("or", "and")

        def edit(n, new=new):
            n.op = new()
            return n
        yield f"{words[0]} -> {words[1]}: {_src(node)}", edit


def op_slice_bound(node: ast.AST):
    """``x[a:b]``: each bound given moved by one (``a + 1``, ``b + 1``)."""
    if not (isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice)):
        return
    for bound in ("lower", "upper"):
        if getattr(node.slice, bound) is None:
            continue

        def edit(n, bound=bound):
            setattr(n.slice, bound, ast.BinOp(getattr(n.slice, bound), ast.Add(), ast.Constant(1)))
            return n
        yield f"off by one: {bound} bound of {_src(node)} + 1", edit


OPERATORS: dict[str, Callable] = {
    "drop_sort": op_drop_sort, "boundary": _compare_op(_BOUNDARY, "boundary"),
    "negate": _compare_op(_NEGATE, "negate"), "drop_guard": op_drop_guard,
    "swap_args": op_swap_args, "constant": op_constant, "first_only": op_first_only,
    "drop_dedup": op_drop_dedup, "uncompensated": op_uncompensated,
    "drop_call": op_drop_call, "regex": op_regex, "and_or": op_and_or, "slice_bound": op_slice_bound,
}


def _is_docstring(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


def _return_early(func: ast.AST) -> Iterator[_Site]:
    body = [s for s in func.body if not _is_docstring(s)]
    if len(body) < 2:
        return
    last = len(func.body) - 1
    label = f"return early: return before {_src(func.body[last], 40)}"
    yield _Site("return_early", label, func.body[last].lineno,
                (("body", last),), lambda n: [ast.Return(None), n])


def sites(func: ast.AST) -> list[_Site]:
    """Every mutation site inside one function node (docstrings and decorators skipped)."""
    found = []
    for path, node in walk_paths(func):
        if path[0][0] in ("decorator_list", "returns", "args") or _is_docstring(node):
            continue
        for name, operator in OPERATORS.items():
            for label, edit in operator(node):
                found.append(_Site(name, label, getattr(node, "lineno", func.lineno), path, edit))
    found.extend(_return_early(func))
    return found
