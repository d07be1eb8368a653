"""Code a patch adds that looks at the process around it (the ``environment_probe`` rule of
the review flags, SPEC §9 as extended by issue 15).

A subject runs in a sandbox, and a sandbox can always be told from a production process by
something: its parent's pid, a read-only tree, a network with only ``lo``, a clock that does not
move, the mounts, the user namespace's uid map. A subject that behaves only when it sees one
passes every relation. So the judge also reads the patch: a commit that adds, to code that
is not a test, a read of the process's surroundings, a clock read, a write to a file, a way to
run code the reviewer cannot read (``exec``, ``ctypes``, a computed attribute of a module) or
a compiled module, gets a flag a reviewer must see and acknowledge.

How one would cheat it, and why that is flagged too: an alias (``import os as o``,
``from os import getppid as g``) resolves to the same dotted name; ``getattr(os, "getppid")``
with a literal resolves too, and with a computed name it is itself a probe; ``__import__``,
``importlib``, ``exec``/``eval``/``compile``, ``pickle``/``marshal`` loads and ``ctypes``
are probes; a compiled module (``.so``) cannot be read, so adding one is a probe; moving,
renaming or reformatting code adds nothing (probes are counted by shape over the whole
module). Not found: a path built at run time and read (``open("/" + "proc/...")``) and a
counting thread used as a clock; both are noted on issue 15.

This module walks each scope and reports; what counts as a probe lives in ``probetables``
(the names) and is judged node by node in ``probecalls``, ``probeexprs`` and ``probestate``.
"""

from __future__ import annotations

import ast
import sys
from collections import Counter

from relconsole.engine.gate.flags.flaglevels import probe_kind
from relconsole.engine.gate.flags.pysource import Finding, _before, _judged, own_nodes, _scopes, parse
from relconsole.engine.gate.flags.probetables import (ATTRIBUTE_PROBES, CODE_ATTRS, FRAME_ATTRS, STAT_TIMES, constant_probe,
                                                _dotted, import_targets)
from relconsole.engine.gate.flags.probecalls import (bound_probe, call_probe, import_probe, patch_words, spec_text,
                                               thread_like)
from relconsole.engine.gate.flags.probeexprs import (constant_dunder, identity_probe, name_probe, optional_file,
                                               optional_import, path_probe, salted_hash, suppressed_import,
                                               where_probe)
from relconsole.engine.gate.flags.probestate import (held_state, module_partial_state, self_state_probe,
                                               state_probe, class_state, closure_state, instance_assigned,
                                               module_state, stateful_instances)

COMPILED_SUFFIXES = (".so", ".pyd", ".dll", ".dylib", ".pyc")


def _local_names(scope: ast.AST, nodes: list[ast.AST]) -> set[str]:
    """Names a function binds itself (parameters, assignments): ``monotonic`` as a flag
    parameter is not ``time.monotonic``."""
    names = set()
    if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        args = scope.args
        names |= {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
        names |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
        names |= {n.id for n in nodes if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    return names


def _probes(_name: str, scope: ast.AST, module: ast.Module, module_imports: dict[str, str],
            state: frozenset[str] = frozenset(), shared: tuple = (frozenset(), frozenset()),
            enclosed: frozenset[str] = frozenset(), instances: frozenset[str] = frozenset()):
    """(node, detail) of every probe in ``scope``'s own body (docstrings aside)."""
    nodes = list(own_nodes(scope))
    shadowed = _local_names(scope, nodes)
    # __import__("json") names its module: judged as that import, not as a computed name
    literal_imports = {id(n.func): n.args[0].value for n in nodes if isinstance(n, ast.Call)
                       and isinstance(n.func, ast.Name) and n.func.id == "__import__" and n.args
                       and isinstance(n.args[0], ast.Constant) and isinstance(n.args[0].value, str)}
    imports = {k: v for k, v in module_imports.items() if k not in shadowed} if shadowed else module_imports
    docs = {id(n.value) for n in nodes if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)}
    in_function = not isinstance(scope, ast.Module)
    constant = constant_dunder(scope)
    if constant:
        yield scope, constant
    defaults, held, owners, shadowed = held_state(scope, nodes, imports, state, enclosed, shadowed)
    for node in nodes:
        why = state_probe(node, held, shadowed - defaults, in_function, defaults, owners, instances - shadowed,
                           imports) \
            or (self_state_probe(node, *shared) if in_function else None)
        if why is not None:
            pass
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            why = import_probe(node)
        elif isinstance(node, ast.Call):
            why = (call_probe(node, imports) or where_probe(node) or salted_hash(node, _name, imports)
                   or _stdlib_private(_dotted(node, imports)))  # getattr(tempfile, "_name_sequence")
        elif isinstance(node, ast.Compare):
            why = where_probe(node) or identity_probe(node)
        elif id(node) in literal_imports:
            why = import_probe(ast.Import(names=[ast.alias(name=literal_imports[id(node)])]))
        elif isinstance(node, (ast.Attribute, ast.Name)) and isinstance(node.ctx, ast.Load):
            why = _read_probe(node, imports, shadowed, _name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, (ast.Store, ast.Del)) and _dotted(node, imports):
            why = patch_words(_dotted(node, imports))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            why = constant_probe(node.value)
        elif isinstance(node, (ast.BinOp, ast.JoinedStr)):
            why = path_probe(node, imports)
        elif isinstance(node, ast.FormattedValue) and spec_text(node.format_spec).endswith("n"):
            why = "formats a number by the machine's locale (the n format)"
        elif isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr == "__dict__":
            why = "reaches names through __dict__"
        elif isinstance(node, ast.Try):
            why = optional_import(node) or optional_file(node)
        elif isinstance(node, ast.With):
            why = suppressed_import(node, imports)
        elif isinstance(node, ast.Assert) and any(isinstance(n, ast.NamedExpr) for n in ast.walk(node.test)):
            why = "does work inside an assert (python -O removes it, and what it binds with it)"
        if why is None and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.Assign)):
            why = bound_probe(node, imports)
        if why is None and not in_function:
            why = module_partial_state(node, imports)
        if why:
            yield node, why


def _read_probe(node: ast.Attribute | ast.Name, imports: dict[str, str], shadowed: set[str],
                scope_name: str) -> str | None:
    """What reading the name or attribute ``node`` says (``name_probe``; for an attribute also a
    module's ``__dict__``, a frame, a thread's id, ``ATTRIBUTE_PROBES``, a file's times); a name
    the scope binds itself (``shadowed``) reads nothing."""
    why = None if isinstance(node, ast.Name) and node.id in shadowed else name_probe(node, imports, scope_name)
    if why is None and isinstance(node, ast.Attribute) and node.attr == "__dict__" and _dotted(node.value, imports):
        why = f"reaches the names of module {_dotted(node.value, imports)} through __dict__"
    if why is None and isinstance(node, ast.Attribute) and node.attr in FRAME_ATTRS:
        why = f"reads a frame (.{node.attr}): the call stack around it says who called"
    if why is None and isinstance(node, ast.Attribute) and _private(node.attr):
        why = _stdlib_private(_dotted(node, imports))
    if why is None and isinstance(node, ast.Attribute) and node.attr in CODE_ATTRS:
        why = f"reads where its code lives or its module's names (.{node.attr}), as __file__ or globals() would"
    if why is None and isinstance(node, ast.Attribute) and node.attr in ("native_id", "ident") \
            and thread_like(node.value, imports):
        why = f"reads the process's identity (.{node.attr} of a thread)"
    if why is None and isinstance(node, ast.Attribute) and node.attr in ATTRIBUTE_PROBES:
        why = f"{ATTRIBUTE_PROBES[node.attr]} (.{node.attr})"
    if why is None and isinstance(node, ast.Attribute) and node.attr in STAT_TIMES:
        why = f"reads when a file was touched (.{node.attr}): a clock the frozen one does not stop"
    return why


def _private(name: str) -> bool:
    """``_name``, not ``__name__``: a module's own business, not its interface."""
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _stdlib_private(dotted: str | None) -> str | None:
    """Why reading ``dotted`` (a name resolved through the imports) probes: a private name of a
    standard library module (``tempfile._name_sequence``), which holds what ran before the call."""
    if dotted and dotted.split(".")[0] in sys.stdlib_module_names and any(map(_private, dotted.split(".")[1:])):
        return f"reads {dotted}, private state of the standard library (what ran in the process before the call)"
    return None


HELD = (ast.Import, ast.ImportFrom, ast.Try, ast.With, ast.AsyncWith, ast.FunctionDef, ast.AsyncFunctionDef,
        ast.ClassDef, ast.Lambda, ast.Assign, ast.AnnAssign, ast.AugAssign)


def _statements(scope: ast.AST) -> dict[int, tuple[ast.AST | None, ast.stmt | None]]:
    """id(node) -> (its parent, the innermost statement of ``scope``'s own body that holds it)."""
    out: dict[int, tuple] = {}
    stack = [(child, None, None) for child in ast.iter_child_nodes(scope)]
    while stack:
        node, parent, statement = stack.pop()
        statement = node if isinstance(node, ast.stmt) else statement
        out[id(node)] = (parent, statement)
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            stack.extend((child, node, statement) for child in ast.iter_child_nodes(node))
    return out


def _use(node: ast.AST, detail: str, places: dict) -> str:
    """What a probe is used for, as part of the key of its newness: "" for a probe the code
    holds (an import, a guard, a cache, a definition: editing around it adds nothing), else the
    chain of what holds its value, from the probe up to its statement (each comparison with its
    operators). A probe kept but put to another use (``if os.getppid() == 0: raise`` ->
    ``return a if os.getppid() in (0, 1) else b``) is new (red team, issue 35); moving it,
    reformatting it or changing the arguments it is called with is not."""
    if isinstance(node, HELD) or probe_kind(detail) in ("cache", "optional_import"):
        return ""
    chain, current = [], node
    while id(current) in places:
        parent, statement = places[id(current)]
        if parent is None or current is statement:
            break
        if isinstance(parent, (ast.Try, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return ""
        ops = " ".join(type(op).__name__ for op in getattr(parent, "ops", ()))
        chain.append(type(parent).__name__ + (f"({ops})" if ops else ""))
        if parent is statement:
            break
        current = parent
    return ">".join(chain)


def _all_probes(tree: ast.Module) -> list[tuple[str, ast.AST, str]]:
    """(enclosing definition and use, node, detail) of every probe of ``tree`` (``_use``)."""
    imports = import_targets(tree)  # once per module: per function it made big files quadratic
    instances = stateful_instances(tree)
    state = module_state(tree, imports) | instances
    shared = (class_state(tree, imports), instance_assigned(tree),
              frozenset(n.name for n in ast.walk(tree) if isinstance(n, ast.ClassDef)))
    enclosed = closure_state(tree, imports)
    # a lambda's body is code too (``JUDGED = lambda: os.getppid()``)
    out = []
    for name, scope in _scopes(tree, lambdas=True):
        statements = None
        for node, detail in _probes(name, scope, tree, imports, state, shared, enclosed.get(id(scope), frozenset()),
                                    instances):
            statements = _statements(scope) if statements is None else statements
            out.append((name + "\0" + _use(node, detail, statements), node, detail))
    return out


def environment_probes(before: str | None, after: str | None) -> list[Finding]:
    """Probes of the process's surroundings that ``after`` adds to ``before`` (module source
    text, None when absent), one Finding per probe, in source order. A probe is new when its
    (enclosing definition, what it reads) pair is new in ``after`` (issue 35), counted: the
    words name the probe and its target (``uses random.randrange``, ``module-level _cache``),
    so editing a line that held it already (an import line gaining a name, a guard or a cache
    restructured), reformatting or moving it within its definition adds nothing, and a new
    one is located at the line that made the pair new. Raises Unjudged when ``after`` cannot
    be judged (the caller flags that too: unread code is not cleared)."""
    tree = parse(after)
    if tree is None:
        return []

    def scan():
        old = _before(before)
        left = Counter((name, detail) for name, _, detail in _all_probes(old)) if old is not None else Counter()
        found, seen = [], set()
        for name, node, detail in sorted(_all_probes(tree), key=lambda item: (item[1].lineno, item[1].col_offset)):
            if left[(name, detail)]:
                left[(name, detail)] -= 1
                continue
            # one finding per line and known kind: datetime.now() is one clock read, not two; two
            # kinds on one line stay two (a warning never hides a block), and so do two different
            # findings of no known kind ("/" + a + b, one path, is one: the same words twice)
            kind = probe_kind(detail)
            key = (node.lineno, kind) if kind != "other" else (node.lineno, detail)
            if key not in seen:
                seen.add(key)
                found.append(Finding(node.lineno, detail))
        return found
    return _judged(scan)


def is_compiled(path: str) -> bool:
    """Whether ``path`` is a compiled module or library Python could load (code nobody can read)."""
    return path.lower().endswith(COMPILED_SUFFIXES) or ".so." in path.rsplit("/", 1)[-1]
