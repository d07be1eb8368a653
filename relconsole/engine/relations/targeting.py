"""Which functions of a module a relation's subject reaches: what "does it bite" mutates (issue 3 item 6, SPEC §3).

``target_functions`` (``mutations.mutants``'s targets):

- a function subject: that function, plus the same-module functions it calls by name and
  the methods of a same-module class it calls (a factory), one level deep;
- a class subject (``Store``): its methods; a method subject (``Store.ingest``): that method.

For a subject that is an adapter of the oracle (issue 16), ``relconsole.engine.gate.bite.bite`` mutates
the library the adapter calls instead: ``library_functions`` says what a call from another
module reaches, in two tiers (a function: itself and its same-module helpers; a class: the
methods the caller is seen to use, ``used_attributes``, and its construction and rendering
dunders, ``CONSTRUCTION_METHODS``, first; its other public methods later). ``entry_functions``
is the untiered form (a class: every ``__init__``, dunder and public method); ``defines``,
``reexport`` and ``find`` look a name up in a module's tree (SPEC §3 ``module:attr.path``).
"""

from __future__ import annotations

import ast

from relconsole.engine.relations.bindings import top_imports


class TargetNotFound(LookupError):
    """The attribute path names nothing defined in the module (or not a function/class)."""


def _defs(body: list[ast.stmt]) -> dict[str, ast.AST]:
    return {n.name: n for n in body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}


def is_func(node: ast.AST) -> bool:
    """Whether ``node`` is a function definition (plain or async)."""
    return isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))


def _methods(cls: ast.ClassDef, prefix: str) -> list[tuple[str, ast.AST]]:
    return [(f"{prefix}.{n.name}", n) for n in cls.body if is_func(n)]


def resolve_target(module: ast.Module, attr_path: str) -> tuple[str, ast.AST]:
    """(``attr_path``, its definition) in ``module``, walking classes for a dotted path.
    Raises TargetNotFound naming the part the module does not define."""
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
        return resolve_target(module, attr_path)[1]
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
    name, node = resolve_target(module, attr_path)
    if isinstance(node, ast.ClassDef):
        return _methods(node, name)
    found = [(name, node)]
    top = _defs(module.body)
    for callee in _called_names(node):
        helper = top.get(callee)
        if helper is None or helper is node:
            continue
        found.extend(_methods(helper, callee) if isinstance(helper, ast.ClassDef) else [(callee, helper)])
    return unique_functions(found)


def unique_functions(found: list[tuple[str, ast.AST]]) -> list[tuple[str, ast.AST]]:
    """``found`` without repeats of the same definition node, in order."""
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
    name, node = resolve_target(module, attr_path)
    if not isinstance(node, ast.ClassDef):
        return target_functions(module, attr_path)
    found = []
    for qualname, method in _methods(node, name):
        if is_entry_method(method.name):
            found.extend(target_functions(module, qualname))
    return unique_functions(found)


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
        methods = {n.name for n in cls.body if is_func(n)}
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
    name, node = resolve_target(module, attr_path)
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
