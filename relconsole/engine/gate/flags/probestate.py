"""State a subject keeps from call to call (SPEC §9 as extended by issue 15): mutable
module-level, class-level, closure and default values a function changes, and instances
whose methods change themselves; the judge sees few calls per process, so a process's later
calls may differ from its first.
"""

from __future__ import annotations

import ast

from relconsole.engine.gate.flags.pysource import own_nodes, _scopes
from relconsole.engine.gate.flags.probetables import _dotted


def module_partial_state(node: ast.AST, imports: dict[str, str]) -> str | None:
    """``_calls = functools.partial(dict.setdefault, {})`` at module level: a mutable object kept
    inside a callable, changed by every call of it (a counter nobody sees)."""
    if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
            and _dotted(node.value.func, imports) in ("functools.partial", "functools.partialmethod")):
        return None
    values = list(node.value.args) + [k.value for k in node.value.keywords]
    if any(isinstance(v, (ast.Dict, ast.List, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp))
           or isinstance(v, ast.Call) and _dotted(v.func, imports) in MUTABLE_MAKERS for v in values):
        return STATE.format("keeps a mutable object inside a module-level functools.partial")
    return None


MUTABLE_MAKERS = frozenset({"dict", "list", "set", "bytearray", "collections.defaultdict", "collections.Counter",
                            "collections.OrderedDict", "collections.deque", "itertools.count", "itertools.cycle",
                            "weakref.WeakValueDictionary", "weakref.WeakKeyDictionary", "weakref.WeakSet",
                            "types.SimpleNamespace", "array.array"})


# calls that change their first argument in place (``heapq.heappush(_HEAP, x)``)
MUTATING_CALLS = frozenset({"bisect.insort", "bisect.insort_left", "bisect.insort_right", "heapq.heappush",
                            "heapq.heappop", "heapq.heapreplace", "heapq.heappushpop", "heapq.heapify",
                            "operator.setitem", "operator.delitem", "operator.iadd", "setattr", "delattr"})


MUTATORS = frozenset({"append", "add", "update", "setdefault", "extend", "insert", "pop", "popitem", "clear",
                      "remove", "discard", "appendleft", "extendleft", "rotate", "__setitem__", "__delitem__"})


STATE = "keeps state from call to call ({}): a process's later calls may differ from its first, and the judge sees few calls per process"


def _mutable_value(node: ast.AST, imports: dict[str, str]) -> bool:
    """A value that a function can change in place: a display, or a call of a known maker."""
    if isinstance(node, (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp)):
        return True
    if isinstance(node, ast.Call):
        func = node.func
        name = func.id if isinstance(func, ast.Name) and func.id not in imports else _dotted(func, imports)
        return name in MUTABLE_MAKERS
    return False


def _mutable_bindings(statements, imports: dict[str, str]) -> frozenset[str]:
    """Names ``statements`` bind to a mutable value (``_CACHE = {}``, ``_calls = itertools.count()``)."""
    names = set()
    for node in statements:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) and node.value else []
        if targets and _mutable_value(node.value, imports):
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return frozenset(names)


def module_state(tree: ast.Module, imports: dict[str, str]) -> frozenset[str]:
    """The mutable names the module binds at its top level: state that outlives one call. (A
    closure's own list, made anew by each call of its enclosing function, is not.)"""
    return _mutable_bindings(tree.body, imports)


def state_probe(node: ast.AST, state: frozenset[str], shadowed: set[str], in_function: bool,
                 defaults: frozenset[str] = frozenset(), owners: dict[str, str] | None = None,
                 instances: frozenset[str] = frozenset(), imports: dict[str, str] | None = None) -> str | None:
    """In a function: ``global x``, or a change in place of a module-level mutable (``_CACHE[k] =``,
    ``_SEEN.add(k)``, ``next(_calls)``), of a mutable default argument or of what a returned
    closure holds (``owners``: name -> words), or a method call on a module-level object whose
    methods change it (``instances``)."""
    if not in_function:
        return None
    if isinstance(node, (ast.Global, ast.Nonlocal)):
        return STATE.format(f"{'global' if isinstance(node, ast.Global) else 'nonlocal'} {', '.join(node.names)}")
    def held(target):
        while isinstance(target, (ast.Subscript, ast.Attribute)):
            target = target.value
        return isinstance(target, ast.Name) and target.id in state and target.id not in shadowed and target.id
    if isinstance(node, (ast.Assign, ast.AugAssign, ast.Delete)):
        targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
        for target in targets:
            if isinstance(target, (ast.Subscript, ast.Attribute)) and held(target):
                return STATE.format(f"changes {_owner(held(target), defaults, owners)}")
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in MUTATORS and held(func.value):
            return STATE.format(f"changes {_owner(held(func.value), defaults, owners)}")
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and held(func.value) in instances:
            return STATE.format(f"calls .{func.attr}() of module-level {func.value.id}, an object its methods change")
        called = _dotted(func, imports or {}) or (func.id if isinstance(func, ast.Name) else None)
        if called in MUTATING_CALLS and node.args and held(node.args[0]):
            return STATE.format(f"changes {_owner(held(node.args[0]), defaults, owners)} ({called})")
        if isinstance(func, ast.Name) and func.id == "next" and node.args and held(node.args[0]):
            return STATE.format(f"advances {_owner(held(node.args[0]), defaults, owners)}")
    return None


def class_state(tree: ast.Module, imports: dict[str, str]) -> frozenset[str]:
    """Names a class binds in its body to a mutable value (``_rows: dict = {}``): one object
    every instance shares, however ``self._rows`` reads."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            names |= _mutable_bindings(node.body, imports)
    return frozenset(names)


def self_state_probe(node: ast.AST, shared: frozenset[str], assigned: frozenset[str],
                      classes: frozenset[str] = frozenset()) -> str | None:
    """``self._rows.update(...)``, ``self._rows[k] = v`` where ``_rows`` is a mutable class
    attribute the method's class never gives an instance its own of (``self._rows = {}``), or
    ``Store._rows[k] = v`` through the name of a class of the module (``classes``)."""
    def attribute(target):
        while isinstance(target, ast.Subscript):
            target = target.value
        if not (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.attr in shared):
            return None
        by_instance = target.value.id in ("self", "cls") and target.attr not in assigned
        return target.attr if by_instance or target.value.id in classes else None
    hit = None
    if isinstance(node, (ast.Assign, ast.AugAssign, ast.Delete)):
        targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
        hit = next((attribute(t) for t in targets if isinstance(t, ast.Subscript) and attribute(t)), None)
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in MUTATORS:
        hit = attribute(node.func.value)
    return STATE.format(f"changes class attribute {hit}, one for every instance") if hit else None


def instance_assigned(tree: ast.Module) -> frozenset[str]:
    """Attributes some method gives the instance itself (``self.x = ...``)."""
    return frozenset(t.attr for node in ast.walk(tree) if isinstance(node, (ast.Assign, ast.AnnAssign))
                     for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
                     if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self")


def _aliases(nodes: list[ast.AST], held: frozenset[str]) -> dict[str, str]:
    """Local names bound to a held mutable by plain assignment (``keys = _recent_keys``, or
    ``keys, answers = _K, _A``): name -> the held name it stands for."""
    out = {}
    for node in nodes:
        if not isinstance(node, ast.Assign):
            continue
        for target in node.targets:
            pairs = zip(target.elts, node.value.elts) if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple) \
                else [(target, node.value)]
            for name, value in pairs:
                if isinstance(name, ast.Name) and isinstance(value, ast.Name) and value.id in held:
                    out[name.id] = value.id
    return out


def _owner(name: str, defaults: frozenset[str], owners: dict[str, str] | None = None) -> str:
    if owners and name in owners:
        return owners[name]
    return f"{'its mutable default' if name in defaults else 'module-level'} {name}"


def closure_state(tree: ast.Module, imports: dict[str, str]) -> dict[int, frozenset[str]]:
    """id(nested function) -> the mutables of its enclosing function it can reach, for every
    nested function its enclosing one returns (``def make(): table = {}; def get(k): ...;
    return get``): bound once at module level (``_get = make()``), that table lives as long
    as the process, as a module-level one does. A closure used only inside its own call is not."""
    out: dict[int, frozenset[str]] = {}
    for _, scope in _scopes(tree):
        if isinstance(scope, ast.Module):
            continue
        own = list(own_nodes(scope))
        nested = {n.name: n for n in own if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        returned = {n.value.id for n in own if isinstance(n, ast.Return) and isinstance(n.value, ast.Name)}
        mutables = _mutable_bindings([n for n in own if isinstance(n, (ast.Assign, ast.AnnAssign))], imports)
        for name in returned & set(nested):
            if mutables:
                out[id(nested[name])] = mutables
    return out


def stateful_instances(tree: ast.Module) -> frozenset[str]:
    """Module-level names bound to an instance of a class of this module some method of which
    (``__init__`` aside) gives or changes an attribute of ``self``: one object every call shares."""
    changing = set()
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            for method in node.body:
                if isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)) and method.name not in (
                        "__init__", "__new__", "__post_init__") and _changes_self(method):
                    changing.add(node.name)
    names = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) \
                and isinstance(node.value.func, ast.Name) and node.value.func.id in changing:
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return frozenset(names)


def _changes_self(method: ast.AST) -> bool:
    def on_self(target):
        while isinstance(target, (ast.Subscript, ast.Attribute)):
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
                return True
            target = target.value
        return False
    for node in ast.walk(method):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            if any(on_self(t) for t in targets):
                return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in MUTATORS \
                and on_self(node.func.value):
            return True
    return False


def held_state(scope: ast.AST, nodes: list[ast.AST], imports: dict[str, str], state: frozenset[str],
                enclosed: frozenset[str], shadowed: set[str]) -> tuple[frozenset[str], frozenset[str], dict, set[str]]:
    """(mutable defaults, held names, owner words, shadowed names) of ``scope``: the shared state
    it may change (module or class ``state`` it does not shadow, its ``enclosed`` function's,
    its mutable defaults, and a local name aliasing one), who owns each name for the message,
    and the names it binds itself less those aliases."""
    defaults = _mutable_defaults(scope, imports)
    owners = {n: f"its enclosing function's {n} (kept as long as the closure it returns)" for n in enclosed}
    held = ((state | enclosed) - shadowed) | defaults  # a mutable default is shared state too
    aliases = _aliases(nodes, held)  # ``keys = _recent_keys``: the same list by a local name
    owners.update((alias, f"module-level {target} (as {alias})") for alias, target in aliases.items())
    held |= frozenset(aliases)
    shadowed = shadowed - set(aliases)
    return defaults, held, owners, shadowed


def _mutable_defaults(scope: ast.AST, imports: dict[str, str]) -> frozenset[str]:
    """Parameters whose default is a mutable value: one object shared by every call."""
    if not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        return frozenset()
    args = scope.args
    positional = args.posonlyargs + args.args
    pairs = list(zip(positional[len(positional) - len(args.defaults):], args.defaults))
    pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
    return frozenset(a.arg for a, d in pairs if _mutable_value(d, imports))
