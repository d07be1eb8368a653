"""Small AST mutations of ONE subject, for "does it bite" (``relconsole bite``, issue 3 item 6).

``mutants(source, target)`` parses a module, finds the functions the relation's subject
reaches (SPEC §3 ``module:attr.path``), and returns one ``Mutant`` per mutation site: the
whole module re-written with ``ast.unparse`` with exactly one change inside one of those
functions. Everything outside them is unchanged in meaning (comments and layout are lost,
which is fine for a temporary tree).

What is mutated (``target_functions``):

- a function subject: that function, plus the same-module functions it calls by name and
  the methods of a same-module class it calls (a factory), one level deep;
- a class subject (``Store``): its methods; a method subject (``Store.ingest``): that method.

For a subject that is an adapter of the oracle (issue 16), ``relconsole.engine.gate.bite`` mutates
the library the adapter calls instead: ``library_functions`` says what a call from another
module reaches, in two tiers (a function: itself and its same-module helpers; a class: the
methods the caller is seen to use, ``used_attributes``, and its construction and rendering
dunders, ``CONSTRUCTION_METHODS``, first; its other public methods later),
``function_mutants`` gives every mutant of named functions of one library file, and
``choose`` bounds the mutants of all the files together. ``entry_functions`` and
``module_mutants`` are the untiered forms (a class: every ``__init__``, dunder and public
method). ``import_alternatives``, ``import_bindings``, ``top_imports``, ``inner_imports``,
``references`` and ``called_references`` read a module's imports (each alternative of a
``try: ... except ImportError:``) and the dotted names a function uses or calls.

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

Why not an existing library: mutmut 3 (libcst) rewrites every file of a project into a
``mutants/`` copy with trampolines and needs pytest to run the mutants; cosmic-ray keeps a
session database, a config file and a test command per run, with a dozen dependencies
(sqlalchemy, aiohttp, parso...); mutatest drives pytest over whole files with coverage. None
targets one function programmatically, none runs a relation instead of a test suite, and
none has the data-pipeline operators a relation is about (lost sort, lost dedup, first row
only). ``ast`` from the standard library does it in a few hundred lines.
"""

from __future__ import annotations

import ast
import copy
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator, TypeVar

DEFAULT_LIMIT = 40

Path_ = tuple[tuple[str, int | None], ...]  # (field, index-or-None) steps from a function node
Edit = Callable[[ast.AST], "ast.AST | list[ast.stmt]"]


@dataclass(frozen=True)
class Mutant:
    """One mutation of a module: ``source`` is the whole module with one change.

    ``operator`` is a name from OPERATORS, ``label`` a short human text, ``line`` the
    1-based line in the ORIGINAL source, ``function`` the qualified name mutated.
    """

    operator: str
    label: str
    line: int
    function: str
    source: str


@dataclass(frozen=True)
class _Site:
    operator: str
    label: str
    line: int
    path: Path_
    edit: Edit


class TargetNotFound(LookupError):
    """The attribute path names nothing defined in the module (or not a function/class)."""


# --- finding the target --------------------------------------------------------------

def _defs(body: list[ast.stmt]) -> dict[str, ast.AST]:
    return {n.name: n for n in body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}


def _is_func(node: ast.AST) -> bool:
    return isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))


def _methods(cls: ast.ClassDef, prefix: str) -> list[tuple[str, ast.AST]]:
    return [(f"{prefix}.{n.name}", n) for n in cls.body if _is_func(n)]


def _resolve(module: ast.Module, attr_path: str) -> tuple[str, ast.AST]:
    node: ast.AST | None = None
    body = module.body
    for part in attr_path.split("."):
        node = _defs(body).get(part)
        if node is None:
            raise TargetNotFound(f"{attr_path}: no function or class {part!r} defined in the module")
        body = getattr(node, "body", [])
    return attr_path, node


def defines(module: ast.Module, name: str) -> bool:
    """Whether the module's top level defines a function or class ``name``."""
    return name in _defs(module.body)


def reexport(module: ast.Module, name: str) -> list[tuple[str, int, str]]:
    """Where the module's own imports (``top_imports``: also under a top-level ``if``/``try``)
    take ``name`` from, in source order: ``(module, level, name there)`` for ``from .impl
    import name`` (or ``... as name``), and ``(module, level, name)`` for each ``from .impl
    import *`` (the name may be there). ``try: from ._speedups import f`` then ``except
    ImportError: from ._native import f`` gives both, the ``try`` first: a caller takes the
    first with a source file. [] when it imports no such name."""
    found = []
    for node in top_imports(module):
        if not isinstance(node, ast.ImportFrom):
            continue
        for alias in node.names:
            if alias.name == "*" or (alias.asname or alias.name) == name:
                found.append((node.module or "", node.level, name if alias.name == "*" else alias.name))
    return found


def find(module: ast.Module, attr_path: str) -> ast.AST | None:
    """The function or class node ``attr_path`` (``f``, ``Cls``, ``Cls.method``) names in the
    module, or None when it names nothing defined there."""
    try:
        return _resolve(module, attr_path)[1]
    except TargetNotFound:
        return None


def _called_names(func: ast.AST) -> list[str]:
    names = []
    for node in ast.walk(func):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id not in names:
            names.append(node.func.id)
    return names


def target_functions(module: ast.Module, attr_path: str) -> list[tuple[str, ast.AST]]:
    """(qualified name, function node) pairs the subject ``attr_path`` reaches, in order.

    Raises TargetNotFound when ``attr_path`` names nothing defined in the module.
    """
    name, node = _resolve(module, attr_path)
    if isinstance(node, ast.ClassDef):
        return _methods(node, name)
    found = [(name, node)]
    top = _defs(module.body)
    for callee in _called_names(node):
        helper = top.get(callee)
        if helper is None or helper is node:
            continue
        found.extend(_methods(helper, callee) if isinstance(helper, ast.ClassDef) else [(callee, helper)])
    return _unique(found)


def _unique(found: list[tuple[str, ast.AST]]) -> list[tuple[str, ast.AST]]:
    seen: set[int] = set()
    return [(n, f) for n, f in found if not (id(f) in seen or seen.add(id(f)))]


def is_entry_method(name: str) -> bool:
    """Whether another module's code is meant to reach method ``name`` of a class it calls:
    ``__init__`` and the other dunder methods, and public methods (not ``_private`` ones)."""
    return not name.startswith("_") or (name.startswith("__") and name.endswith("__"))


def entry_functions(module: ast.Module, attr_path: str) -> list[tuple[str, ast.AST]]:
    """(qualified name, function node) pairs a caller in ANOTHER module reaches by calling
    ``attr_path`` (issue 16: a library function an adapter of the oracle calls).

    A class: its ``__init__``, dunder and public methods (``is_entry_method``), each with what
    ``target_functions`` adds for it (the same-module functions it calls by name). A function
    or a method: ``target_functions``. Raises TargetNotFound when ``attr_path`` names nothing
    defined in the module.
    """
    name, node = _resolve(module, attr_path)
    if not isinstance(node, ast.ClassDef):
        return target_functions(module, attr_path)
    found = []
    for qualname, method in _methods(node, name):
        if is_entry_method(method.name):
            found.extend(target_functions(module, qualname))
    return _unique(found)


# methods a caller reaches by making or showing an instance, without naming them
CONSTRUCTION_METHODS = frozenset({"__init__", "__new__", "__post_init__", "__str__", "__html__",
                                  "__format__", "__bytes__"})

# the special method a builtin call, an operator or a subscript reaches on its operand
_BUILTIN_DUNDERS = {"str": ("__str__",), "repr": ("__repr__",), "len": ("__len__",), "iter": ("__iter__",),
                    "hash": ("__hash__",), "bool": ("__bool__",), "int": ("__int__",), "float": ("__float__",),
                    "bytes": ("__bytes__",), "format": ("__format__",), "sorted": ("__lt__",),
                    "min": ("__lt__",), "max": ("__gt__", "__lt__"), "reversed": ("__reversed__",)}
_COMPARE_DUNDERS = {ast.Lt: ("__lt__", "__gt__"), ast.Gt: ("__gt__", "__lt__"), ast.LtE: ("__le__", "__ge__"),
                    ast.GtE: ("__ge__", "__le__"), ast.Eq: ("__eq__",), ast.NotEq: ("__ne__", "__eq__"),
                    ast.In: ("__contains__",), ast.NotIn: ("__contains__",)}
_BINOP_DUNDERS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "truediv", ast.FloorDiv: "floordiv",
                  ast.Mod: "mod", ast.Pow: "pow", ast.BitAnd: "and", ast.BitOr: "or", ast.BitXor: "xor",
                  ast.LShift: "lshift", ast.RShift: "rshift", ast.MatMult: "matmul"}


def used_attributes(func: ast.AST) -> set[str]:
    """The method names a function is seen to use on the objects it handles: every attribute
    it reads (``Markup(s).unescape()`` gives ``unescape``, ``v.parts`` gives ``parts``), and the
    special methods its builtin calls (``str(x)``: ``__str__``, ``len``, ``sorted``...),
    operators (``+``: ``__add__``/``__radd__``, ``<``, ``==``, ``in``) and subscripts
    (``__getitem__``) reach. Over-approximate: it only orders what is mutated first."""
    found: set[str] = set()
    for node in ast.walk(func):
        if isinstance(node, ast.Attribute):
            found.add(node.attr)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            found.update(_BUILTIN_DUNDERS.get(node.func.id, ()))
        elif isinstance(node, ast.Compare):
            for op in node.ops:
                found.update(_COMPARE_DUNDERS.get(type(op), ()))
        elif isinstance(node, (ast.BinOp, ast.AugAssign)) and type(node.op) in _BINOP_DUNDERS:
            name = _BINOP_DUNDERS[type(node.op)]
            found.update({f"__{name}__", f"__r{name}__", f"__i{name}__"})
        elif isinstance(node, ast.Subscript):
            found.add("__getitem__")
    return found


def _preferred(method: str, used: set[str] | frozenset[str]) -> bool:
    return method in CONSTRUCTION_METHODS or method in used


def _helpers(module: ast.Module, qualname: str, used) -> tuple[list[str], list[str]]:
    """(first, later) qualified names function ``qualname`` reaches in its own module, one level:
    the top-level functions it calls by name; for a class it calls by name, the methods it is
    seen to use (``used`` plus ``used_attributes`` of the function) and the construction and
    rendering dunders first, its other public methods later; for a method, the methods of its
    own class it calls on ``self`` or ``cls`` (private ones too)."""
    func = find(module, qualname)
    if func is None:
        return [], []
    wanted = set(used) | used_attributes(func)
    top = _defs(module.body)
    first: list[str] = []
    later: list[str] = []
    for callee in _called_names(func):
        helper = top.get(callee)
        if helper is None or helper is func:
            continue
        if isinstance(helper, ast.ClassDef):
            for name, method in _methods(helper, callee):
                if is_entry_method(method.name):
                    (first if _preferred(method.name, wanted) else later).append(name)
        else:
            first.append(callee)
    owner, dot, _ = qualname.rpartition(".")
    cls = find(module, owner) if dot else None
    if isinstance(cls, ast.ClassDef):
        methods = {n.name for n in cls.body if _is_func(n)}
        for node in ast.walk(func):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and isinstance(node.func.value, ast.Name) and node.func.value.id in ("self", "cls") \
                    and node.func.attr in methods:
                first.append(f"{owner}.{node.func.attr}")
    return first, later


def library_functions(module: ast.Module, attr_path: str, used=frozenset(),
                      helpers: bool = True) -> tuple[list[str], list[str]]:
    """(first, later): qualified names of the functions a caller in ANOTHER module reaches
    through ``attr_path``, in two tiers (issue 16: a library function or class an adapter of
    the oracle uses). ``used``: the method names the caller is seen to use (``used_attributes``).

    A function or a method: itself first. A class: first its public or dunder methods
    (``is_entry_method``) the caller uses or that make and show an instance
    (``CONSTRUCTION_METHODS``: ``__init__``, ``__new__``, ``__str__``, ``__html__``...), later
    its other public and dunder methods. With ``helpers``, each function then adds what it
    reaches in the module one level down (``_helpers``: the functions it calls by name, the
    used methods of a class it calls, its own class's methods it calls on ``self``), to the
    tier it is in (a class's other methods always later). Each name appears once, in the
    first tier that has it. Raises TargetNotFound when ``attr_path`` names nothing defined.
    """
    name, node = _resolve(module, attr_path)
    if isinstance(node, ast.ClassDef):
        entries = [(q, m) for q, m in _methods(node, name) if is_entry_method(m.name)]
        first = [q for q, m in entries if _preferred(m.name, used)]
        later = [q for q, m in entries if not _preferred(m.name, used)]
    else:
        first, later = [name], []
    if helpers:
        more_first: list[str] = []
        more_later: list[str] = []
        for qualname in first:
            found, spare = _helpers(module, qualname, used)
            more_first += found
            more_later += spare
        for qualname in later:
            found, spare = _helpers(module, qualname, used)
            more_later += found + spare
        first, later = first + more_first, later + more_later
    first = list(dict.fromkeys(first))
    return first, [q for q in dict.fromkeys(later) if q not in first]


# --- what an adapter imports and names (issue 16) -------------------------------------------

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


# --- walking with paths ----------------------------------------------------------------

def _walk(node: ast.AST, path: Path_ = ()) -> Iterator[tuple[Path_, ast.AST]]:
    """Every node under ``node`` (itself excluded) with its path, depth first, in source order."""
    for name, value in ast.iter_fields(node):
        if isinstance(value, ast.AST):
            yield path + ((name, None),), value
            yield from _walk(value, path + ((name, None),))
        elif isinstance(value, list):
            for index, item in enumerate(value):
                if isinstance(item, ast.AST):
                    yield path + ((name, index),), item
                    yield from _walk(item, path + ((name, index),))


def _get(root: ast.AST, path: Path_) -> ast.AST:
    node = root
    for name, index in path:
        node = getattr(node, name) if index is None else getattr(node, name)[index]
    return node


def _replace(root: ast.AST, path: Path_, new: ast.AST | list[ast.stmt]) -> None:
    parent = _get(root, path[:-1])
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
    for path, node in _walk(func):
        if path[0][0] in ("decorator_list", "returns", "args") or _is_docstring(node):
            continue
        for name, operator in OPERATORS.items():
            for label, edit in operator(node):
                found.append(_Site(name, label, getattr(node, "lineno", func.lineno), path, edit))
    found.extend(_return_early(func))
    return found


def _spread(items: list, limit: int, key: Callable) -> list:
    """At most ``limit`` items, round-robin over ``key`` groups so every operator is kept."""
    groups: dict = {}
    for item in items:
        groups.setdefault(key(item), []).append(item)
    chosen, lists = [], list(groups.values())
    while len(chosen) < limit and any(lists):
        for group in lists:
            if group and len(chosen) < limit:
                chosen.append(group.pop(0))
    return chosen


def mutants(source: str, attr_path: str, limit: int = DEFAULT_LIMIT) -> list[Mutant]:
    """The mutants of ``attr_path`` (``func``, ``Class`` or ``Class.method``) in module ``source``.

    Deterministic: the same source gives the same mutants in the same order (by line).
    Mutants whose text equals the original or another mutant's are dropped; at most
    ``limit``, chosen round-robin across operators. Raises SyntaxError for a module that
    does not parse and TargetNotFound when ``attr_path`` is not defined in it.
    """
    module = ast.parse(source)
    out = _module_mutants(module, target_functions(module, attr_path))
    chosen = _spread(out, limit, lambda m: m.operator)
    return sorted(chosen, key=lambda m: (m.line, out.index(m)))


def module_mutants(source: str, attr_paths: list[str]) -> list[Mutant]:
    """EVERY mutant (no limit; bound them with ``choose``) of the functions a caller in another
    module reaches through ``attr_paths`` in module ``source`` (``entry_functions`` of each;
    a function reached twice is mutated once), in source order of the functions.

    Deterministic; a mutant whose text equals the original or another's is dropped. Raises
    SyntaxError for a module that does not parse, TargetNotFound when an attribute path is
    not defined in it.
    """
    module = ast.parse(source)
    functions = _unique([pair for attr in attr_paths for pair in entry_functions(module, attr)])
    return _module_mutants(module, functions)


def function_mutants(source: str, qualnames: list[str]) -> list[Mutant]:
    """EVERY mutant (no limit; bound them with ``choose``) of exactly the functions
    ``qualnames`` (``f``, ``Cls.method``) of module ``source``, nothing added, in the order
    given. Deterministic; raises SyntaxError for a module that does not parse and
    TargetNotFound when a name is not a function defined in it."""
    module = ast.parse(source)
    functions = []
    for qualname in dict.fromkeys(qualnames):
        node = _resolve(module, qualname)[1]
        if not _is_func(node):
            raise TargetNotFound(f"{qualname}: not a function")
        functions.append((qualname, node))
    return _module_mutants(module, functions)


def _module_mutants(module: ast.Module, functions: list[tuple[str, ast.AST]]) -> list[Mutant]:
    out, seen = [], {ast.unparse(module)}
    for qualname, func in functions:
        func_path = _path_to(module, func)
        for site in sites(func):
            text = _apply(module, func_path + site.path, site.edit)
            if text is None or text in seen:
                continue
            seen.add(text)
            out.append(Mutant(site.operator, site.label, site.line, qualname, text))
    return out


T = TypeVar("T")


def choose(items: list[T], limit: int, operator: Callable[[T], str], owner: Callable[[T], object]) -> list[T]:
    """At most ``limit`` of ``items``, round-robin across operators as ``mutants`` does, and
    within one operator across owners (the functions mutated, in several files), so that the
    sites of one long function do not crowd out every other function. The chosen items keep
    their order in ``items``. Deterministic."""
    rank: dict = {}
    ranked = []
    for index, item in enumerate(items):
        group = (operator(item), owner(item))
        rank[group] = rank.get(group, -1) + 1
        ranked.append((rank[group], index, item))
    ranked.sort(key=lambda r: (r[0], r[1]))
    chosen = _spread(ranked, limit, lambda r: operator(r[2]))
    return [item for _, _, item in sorted(chosen, key=lambda r: r[1])]


def _path_to(module: ast.Module, target: ast.AST) -> Path_:
    return next(path for path, node in _walk(module) if node is target)


def _apply(module: ast.Module, path: Path_, edit: Edit) -> str | None:
    mutated = copy.deepcopy(module)
    _replace(mutated, path, edit(_get(mutated, path)))
    ast.fix_missing_locations(mutated)
    try:
        text = ast.unparse(mutated)
        compile(text, "<mutant>", "exec")
    except (SyntaxError, ValueError, TypeError):  # an edit the grammar does not allow here
        return None
    return text
