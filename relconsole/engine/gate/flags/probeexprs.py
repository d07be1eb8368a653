"""Probes seen in a name, a path, a comparison or a guarded block (SPEC §9 as extended by
issue 15): a builtin or attribute that reads the process, a system path, the module's own
location, a salted hash, an identity test against a fresh object, a constant dunder, and an
import or file read whose failure is swallowed.
"""

from __future__ import annotations

import ast

from relconsole.engine.gate.flags.probetables import (BUILTINS, OWN_LOCATION, PROBE_NAMES, ROOT_SEPARATORS, constant_probe,
                                                _dotted, names_own_file)


QUIET_SCOPES = ("__repr__", "__str__", "__hash__", "__init__")  # id(self) in a repr, a cached hash


def name_probe(node: ast.AST, imports: dict[str, str], scope_name: str = "") -> str | None:
    """Why the bare name ``node`` probes its environment (a probed builtin, the module's own
    location, ``__builtins__``), or None; ``scope_name``: the enclosing function's name."""
    if isinstance(node, ast.Name) and node.id not in imports:
        if node.id == "id" and scope_name.rsplit(".", 1)[-1] in QUIET_SCOPES:
            return None
        if node.id in BUILTINS:
            return f"uses {node.id} ({BUILTINS[node.id]})"
        if node.id in OWN_LOCATION - {"__file__"}:  # __file__ alone names a data file beside it
            return f"reads where its module was loaded from ({node.id})"
        return "reaches the builtins module" if node.id == "__builtins__" else None
    dotted = _dotted(node, imports)
    return f"uses {dotted} ({PROBE_NAMES[dotted]})" if dotted in PROBE_NAMES else None


def _leftmost(node: ast.AST) -> ast.AST:
    while isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        node = node.left
    return node


def _folded(node: ast.BinOp) -> str:
    """The leading text of a ``+`` chain of string constants (``"/pr" + "oc" + x`` gives ``/proc``)."""
    parts = []
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, ast.BinOp) and isinstance(item.op, ast.Add):
            stack += [item.right, item.left]
        elif isinstance(item, ast.Constant) and isinstance(item.value, str):
            parts.append(item.value)
        else:
            break
    return "".join(parts)


def path_probe(node: ast.AST, imports: dict[str, str]) -> str | None:
    """A path built at run time that starts at the root: ``"/" + x``, ``os.sep + x``,
    ``"/pr" + "oc"``, ``f"/{x}"``."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        first = _leftmost(node)
        if _dotted(first, imports) in ROOT_SEPARATORS:
            return "builds a path from the root folder (os.sep + ...)"
        text = _folded(node)
        if text.startswith("/"):
            return constant_probe(text) or "builds a path from the root folder (/ + ...)"
    if isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant) \
            and str(node.values[0].value).startswith("/"):
        return "builds a path from the root folder (an f-string)"
    return None


def where_probe(node: ast.AST) -> str | None:
    """A comparison of where the module's own file is (``__file__.startswith("/src/")``)."""
    if isinstance(node, ast.Compare) and names_own_file(node):
        return "compares where its own file is"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
            and node.func.attr in ("startswith", "endswith", "find", "index", "count") and names_own_file(node):
        return "inspects where its own file is"
    return None


def salted_hash(node: ast.AST, scope_name: str, imports: dict[str, str]) -> str | None:
    """``hash(...)`` outside a ``__hash__``: str and bytes hashes are salted per process, so an
    output built from them agrees between the calls of one judge and nowhere else."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "hash" \
            and "hash" not in imports and scope_name.rsplit(".", 1)[-1] not in ("__hash__", "__init__"):
        return "uses hash(), salted per process (its value differs in every production process)"
    return None


SENTINELS = frozenset({"None", "True", "False", "NotImplemented", "Ellipsis"})


SENTINEL_WORDS = ("sentinel", "missing", "marker", "unset", "notset", "nothing", "default", "empty", "undefined")


def _sentinel(node: ast.AST) -> bool:
    """An operand ``is`` is for: a constant, a singleton, a module-level marker by convention
    (``_MISSING``, ``SENTINEL``), a class or ``type(x)``."""
    if isinstance(node, ast.Constant):
        return True
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
    if name is not None:
        bare = name.strip("_")
        return (name in SENTINELS or bare.isupper() or bare[:1].isupper()
                or any(word in bare.lower() for word in SENTINEL_WORDS))
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "type"


def identity_probe(node: ast.AST) -> str | None:
    """``a is b`` between two values of the data (``row["species"] is prev["species"]``):
    whether two equal cells are one object says how the input was built (the judge reads a
    corpus once and shares equal cells; ``csv.DictReader`` does not), never what it holds."""
    if not isinstance(node, ast.Compare) or not any(isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops):
        return None
    operands = [node.left, *node.comparators]
    for op, left, right in zip(node.ops, operands, operands[1:]):
        if isinstance(op, (ast.Is, ast.IsNot)) and not _sentinel(left) and not _sentinel(right):
            return "compares two values by identity (is): which equal values are one object says how the input was built"
    return None


IMPORT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError"})


BROAD_ERRORS = frozenset({"Exception", "BaseException"})  # they catch an import's failure too


def suppressed_import(node: ast.AST, imports: dict[str, str]) -> str | None:
    """``with contextlib.suppress(ImportError): import x``: the same choice as ``optional_import``."""
    if not isinstance(node, ast.With) or not any(isinstance(n, (ast.Import, ast.ImportFrom)) for n in node.body):
        return None
    for item in node.items:
        call = item.context_expr
        if isinstance(call, ast.Call) and _dotted(call.func, imports) in ("contextlib.suppress",) and any(
                isinstance(a, ast.Name) and a.id in IMPORT_ERRORS | BROAD_ERRORS for a in call.args):
            return "chooses its code by what can be imported (the judge and production may not reach the same modules)"
    return None


FILE_ERRORS = frozenset({"FileNotFoundError", "OSError", "IOError", "EnvironmentError", "PermissionError",
                         "IsADirectoryError", "NotADirectoryError"})


READS_FILE = frozenset({"open", "read_text", "read_bytes", "load", "loadtxt"})


def optional_file(node: ast.AST) -> str | None:
    """``try: open("symbols.json") / except FileNotFoundError: <other code>``: which code runs
    depends on a file being there, and the judge's tree holds only what git holds."""
    if not isinstance(node, ast.Try):
        return None
    opens = any(isinstance(n, ast.Call) and (isinstance(n.func, ast.Name) and n.func.id == "open" or
                                              isinstance(n.func, ast.Attribute) and n.func.attr in READS_FILE)
                for stmt in node.body for n in ast.walk(stmt))
    if not opens:
        return None
    for handler in node.handlers:
        caught = handler.type
        names = [caught] if not isinstance(caught, ast.Tuple) else list(caught.elts)
        if caught is None or any(isinstance(n, ast.Name) and n.id in FILE_ERRORS | BROAD_ERRORS for n in names):
            return ("chooses its code by whether a file is there (the judge's tree holds only what git holds; "
                    "production may hold more)")
    return None


def optional_import(node: ast.AST) -> str | None:
    """``try: import x / except ImportError: <other code>``: which code runs depends on what
    the interpreter can import, and a module only the judge's import path reaches (the tree's
    root) makes the subject behave otherwise there than in production."""
    if not isinstance(node, ast.Try) or not any(isinstance(n, (ast.Import, ast.ImportFrom)) for n in node.body):
        return None
    for handler in node.handlers:
        caught = handler.type
        names = [caught] if not isinstance(caught, ast.Tuple) else list(caught.elts)
        if caught is None or any(isinstance(n, ast.Name) and n.id in IMPORT_ERRORS | BROAD_ERRORS for n in names):
            return "chooses its code by what can be imported (the judge and production may not reach the same modules)"
    return None


CONSTANT_DUNDERS = {"__eq__": "equality", "__ne__": "equality", "__hash__": "a hash", "__lt__": "an order",
                    "__le__": "an order", "__gt__": "an order", "__ge__": "an order"}


def constant_dunder(node: ast.AST) -> str | None:
    """``def __eq__(self, other): return True``: an equality (hash, order) that ignores the
    value makes every two values one to a set, a dict or a cache."""
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or node.name not in CONSTANT_DUNDERS:
        return None
    body = [n for n in node.body if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
    if len(body) == 1 and isinstance(body[0], ast.Return) and isinstance(body[0].value, ast.Constant) \
            and body[0].value.value is not NotImplemented and not isinstance(body[0].value.value, type(NotImplemented)):
        return (f"defines {CONSTANT_DUNDERS[node.name]} that ignores the value ({node.name} returns "
                f"{body[0].value.value!r}): every two values are one to a set, a dict or a cache")
    return None
