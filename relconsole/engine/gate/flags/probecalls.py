"""Probes seen in one import or one call (SPEC §9 as extended by issue 15): an import of a
probing module, a call of a probing function (clock, environment, processes, files written,
a path built from the root, a locale format, ``setattr`` on a module, a getter by name).
"""

from __future__ import annotations

import ast
import re

from relconsole.engine.gate.flags.probetables import (ANY_ARGS_METHODS, MODE_LETTERS, PROBE_MODULES, PROBE_NAMES,
                                                READ_METHODS, REROOTED, ROOT_SEPARATORS, STAMPING, STAR_PROBED,
                                                WRITE_METHODS, WRITE_MODE, canonical, constant_probe, _dotted,
                                                names_own_file)


def import_probe(node: ast.AST) -> str | None:
    """Why the import ``node`` probes its environment (the builtins, a star import of a probed
    module, a probed module), or None."""
    names = []
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
        names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
    if isinstance(node, ast.Import) and "builtins" in names:
        return "imports builtins (reaches the builtins)"
    if isinstance(node, ast.ImportFrom) and node.module and not node.level \
            and any(alias.name == "*" for alias in node.names) and canonical(node.module).split(".")[0] in STAR_PROBED:
        return f"star-imports {node.module} (its names are then used unseen)"
    for name in names:
        for candidate in (name, name.split(".")[0]):
            if candidate in PROBE_MODULES:
                return f"imports {candidate} ({PROBE_MODULES[candidate]})"
            if candidate in PROBE_NAMES:
                return f"imports {candidate} ({PROBE_NAMES[candidate]})"
    return None


def call_probe(node: ast.Call, imports: dict[str, str]) -> str | None:
    """Why the call ``node`` probes its environment (a probed function, a getattr of one, a
    root-path join, a setattr patch, a stack walk), or None; ``imports``: local name -> module."""
    func = node.func
    called = _dotted(func, imports)
    dotted = _dotted(node, imports)  # getattr(module, "literal")
    if dotted in PROBE_NAMES:
        return f"uses {dotted} ({PROBE_NAMES[dotted]})"
    getter = (_getter_probe(node, imports) or _root_join(node, imports) or _format_probe(node, imports)
              or _setattr_probe(node, imports) or _stack_keyword_probe(node, imports))
    if getter:
        return getter
    if isinstance(func, ast.Name) and func.id in ("getattr", "setattr", "hasattr", "delattr") and len(node.args) >= 2:
        if not (isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)):
            target = node.args[0]
            if isinstance(target, ast.Name) and (target.id in imports or target.id in ("__builtins__", "builtins")):
                return f"reaches an attribute of module {target.id} by a computed name"
    if isinstance(func, ast.Name) and func.id == "hasattr" and len(node.args) == 2 \
            and isinstance(node.args[0], ast.Name) and node.args[0].id in imports:
        return f"asks whether module {node.args[0].id} has a name (a test of which version runs)"
    if isinstance(func, ast.Attribute) and func.attr in ANY_ARGS_METHODS:
        return f"{ANY_ARGS_METHODS[func.attr]} (.{func.attr}())"
    if isinstance(func, ast.Attribute) and func.attr == "fromtimestamp" and _no_zone(node):
        return "reads the machine's time zone (fromtimestamp without a tz)"
    if called in STAMPING and not any(k.arg == STAMPING[called] for k in node.keywords):
        return f"stamps the clock into its output ({called} without {STAMPING[called]}=)"
    if _locale_format(node, called):
        return "formats a number by the machine's locale (the n format)"
    if isinstance(func, ast.Attribute) and func.attr in WRITE_METHODS:
        return f"writes to the file system (.{func.attr})"
    if isinstance(func, ast.Attribute) and func.attr in READ_METHODS and not node.args and not node.keywords \
            and not names_own_file(func.value):
        return f"{READ_METHODS[func.attr]} (.{func.attr}())"
    if called in ("os.path.abspath", "os.path.realpath") and node.args and not names_own_file(node.args[0]):
        return f"resolves a path against the working folder ({called.rsplit('.', 1)[-1]})"
    if any(isinstance(a, ast.Constant) and a.value == "/" or _dotted(a, imports) in ROOT_SEPARATORS
           for a in node.args) and _builds_paths(func, imports):
        return "builds a path from the root folder (/)"
    opened = _open_probe(node, called, imports)
    if opened:
        return opened
    if called == "random.Random" and not node.args and not node.keywords:
        return "draws random numbers (an unseeded random.Random)"
    return None


def _open_probe(node: ast.Call, called: str | None, imports: dict[str, str]) -> str | None:
    """What a call that opens a file says (``open``, ``io.open``, ``codecs.open``, ``os.fdopen``,
    a ``.open()`` method): a write mode, a computed mode, a path relative to the working folder."""
    func = node.func
    plain_open = (isinstance(func, ast.Name) and func.id == "open" and "open" not in imports) \
        or called in ("io.open", "codecs.open", "os.fdopen")
    is_open = plain_open or (isinstance(func, ast.Attribute) and func.attr == "open" and not node.args[1:])
    if is_open:
        args = node.args if plain_open else [None] + node.args
        mode = args[1] if len(args) > 1 else next((k.value for k in node.keywords if k.arg == "mode"), None)
        if isinstance(mode, ast.Constant) and isinstance(mode.value, str) and set(mode.value) <= MODE_LETTERS \
                and WRITE_MODE & set(mode.value):
            return f"opens a file to write (mode {mode.value!r})"
        if mode is not None and not isinstance(mode, ast.Constant):
            return "opens a file with a computed mode"
        where = args[0] if args else None
        if plain_open and isinstance(where, ast.Constant) and isinstance(where.value, str) \
                and not where.value.startswith("/"):
            return f"opens {where.value!r}, a path relative to the working folder (which differs from machine to machine)"
    return None


def spec_text(spec: ast.AST | None) -> str:
    """An f-string field's format spec as far as it is literal (``{x:>10n}`` -> ``>10n``)."""
    if not isinstance(spec, ast.JoinedStr):
        return ""
    return "".join(v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else "\0" for v in spec.values)


def _no_zone(node: ast.Call) -> bool:
    """``fromtimestamp(ts)`` or ``fromtimestamp(ts, None)`` / ``tz=None``: local time."""
    zone = node.args[1] if len(node.args) > 1 else next((k.value for k in node.keywords if k.arg == "tz"), None)
    return len(node.args) <= 2 and (zone is None or isinstance(zone, ast.Constant) and zone.value is None)


_LOCALE_SPEC = re.compile(r"\{[^{}]*:[^{}]*n\}")


def _locale_format(node: ast.Call, called: str | None) -> bool:
    """``format(x, "n")`` or ``"{:n}".format(x)``: a number written by the locale's rules."""
    func = node.func
    if isinstance(func, ast.Name) and func.id == "format" and len(node.args) == 2:
        spec = node.args[1]
        return isinstance(spec, ast.Constant) and isinstance(spec.value, str) and spec.value.endswith("n")
    return isinstance(func, ast.Attribute) and func.attr == "format" and isinstance(func.value, ast.Constant) \
        and isinstance(func.value.value, str) and bool(_LOCALE_SPEC.search(func.value.value))


# the last part of every probe's dotted name: ``operator.attrgetter("environ")(os)`` is os.environ
PROBE_ATTRS = frozenset(name.rsplit(".", 1)[-1] for name in PROBE_NAMES)


ATTRIBUTE_GETTERS = {"operator.attrgetter": None, "operator.methodcaller": 1}  # how many args are names


def _getter_probe(node: ast.Call, imports: dict[str, str]) -> str | None:
    """``operator.attrgetter("environ")``, ``methodcaller("getppid")``: getattr by another name,
    judged as getattr is (a probe's name, or a computed one)."""
    called = _dotted(node.func, imports)
    if called not in ATTRIBUTE_GETTERS:
        return None
    names = node.args[:ATTRIBUTE_GETTERS[called]] if ATTRIBUTE_GETTERS[called] else node.args
    for arg in names:
        if not (isinstance(arg, ast.Constant) and isinstance(arg.value, str)):
            return f"reaches an attribute by a computed name ({called.rsplit('.', 1)[-1]})"
        hit = next((part for part in arg.value.split(".") if part in PROBE_ATTRS), None)
        if hit:
            return f"reaches .{hit} through {called.rsplit('.', 1)[-1]} (getattr by another name)"
    return None


def _format_probe(node: ast.Call, imports: dict[str, str]) -> str | None:
    """``"{0.sys.flags}".format(os)``: a template reaches attributes of a module it is given."""
    func = node.func
    if not (isinstance(func, ast.Attribute) and func.attr in ("format", "format_map", "vformat")):
        return None
    for arg in [*node.args, *(k.value for k in node.keywords)]:
        target = _dotted(arg, imports)
        if target is not None and _probe_target(target):
            return f"gives {target} to a format template (its attributes are reached unseen)"
    return None


def patch_words(dotted: str) -> str:
    """The finding text for patching ``dotted`` (a module attribute) in place."""
    module = dotted.rsplit(".", 1)[0]
    return (f"patches {dotted} (every caller of {module} then gets it, the judge's own code in the "
            "subject's process among them)")


def _setattr_probe(node: ast.Call, imports: dict[str, str]) -> str | None:
    """``setattr(json, "dumps", f)``, ``object.__setattr__(os.path, ...)``: a module patched by a call."""
    func = node.func
    plain = isinstance(func, ast.Name) and func.id in ("setattr", "delattr") and func.id not in imports
    dunder = isinstance(func, ast.Attribute) and func.attr in ("__setattr__", "__delattr__")
    if not (plain or dunder) or not node.args:
        return None
    target = _dotted(node.args[0], imports)
    if target is None:
        return None
    name = node.args[1].value if len(node.args) > 1 and isinstance(node.args[1], ast.Constant) else "…"
    return patch_words(f"{target}.{name}")


CATCHING = {"warnings.catch_warnings": "record"}  # reads back what it raised: a warning's filename is its caller's


def _stack_keyword_probe(node: ast.Call, imports: dict[str, str]) -> str | None:
    """``warnings.catch_warnings(record=True)`` and ``logger.info(..., stack_info=True)``: the
    call stack read by another way (a recorded warning's file and line are a caller's)."""
    called = _dotted(node.func, imports)
    for keyword in node.keywords:
        on = not (isinstance(keyword.value, ast.Constant) and not keyword.value.value)
        if keyword.arg == "stack_info" and on:
            return "writes the call stack (stack_info): the frames around it say who called"
        if called in CATCHING and keyword.arg == CATCHING[called] and on:
            return "records the warnings it raises (a warning's file and line are its caller's)"
    return None


def _probe_target(dotted: str) -> bool:
    """Whether an imported name is a probe or a module probes are made of."""
    return dotted in PROBE_NAMES or dotted in PROBE_MODULES or dotted.split(".")[0] in REROOTED


def bound_probe(node: ast.AST, imports: dict[str, str]) -> str | None:
    """``def f(x, os=os)`` or ``o = os``: a module (or a probe) under a name the scan cannot follow."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        values = [*node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)]
    elif isinstance(node, ast.Assign):
        values = [node.value]
    else:
        return None
    for value in values:
        target = _dotted(value, imports) if isinstance(value, (ast.Name, ast.Attribute)) else None
        if target is not None and _probe_target(target):
            return f"binds {target} to another name (its uses there are not seen as {target})"
    return None


def _root_join(node: ast.Call, imports: dict[str, str]) -> str | None:
    """``"/".join(["", "proc", "1", "cmdline"])``: a path from the root built by a join."""
    func = node.func
    if not (isinstance(func, ast.Attribute) and func.attr == "join" and len(node.args) == 1):
        return None
    separator = func.value
    if not ((isinstance(separator, ast.Constant) and separator.value == "/")
            or _dotted(separator, imports) in ROOT_SEPARATORS):
        return None
    parts = node.args[0]
    if isinstance(parts, (ast.List, ast.Tuple)) and parts.elts:
        first = parts.elts[0]
        if isinstance(first, ast.Constant) and first.value == "":
            named = "/" + "/".join(str(e.value) for e in parts.elts[1:3] if isinstance(e, ast.Constant))
            return constant_probe(named) or "builds a path from the root folder ('/'.join)"
    return None


PATH_BUILDERS = frozenset({"open", "io.open", "os.path.join", "posixpath.join", "pathlib.Path", "pathlib.PurePath",
                           "pathlib.PosixPath", "pathlib.PurePosixPath", "os.listdir", "os.scandir", "os.walk",
                           "os.stat", "os.lstat", "glob.glob", "glob.iglob"})


def _builds_paths(func: ast.AST, imports: dict[str, str]) -> bool:
    """Whether a call of ``func`` makes or opens a path (``"/".join`` and ``s.split("/")`` do not)."""
    if isinstance(func, ast.Name) and func.id in ("open", "Path") and func.id not in imports:
        return True
    return _dotted(func, imports) in PATH_BUILDERS


def thread_like(node: ast.AST, imports: dict) -> bool:
    """Whether ``node`` is a thread reached from threading (``threading.main_thread()``,
    ``current_thread()``) or any call or name ending in ``thread``: its ``native_id`` is a pid."""
    target = node.func if isinstance(node, ast.Call) else node
    dotted = _dotted(target, imports) or ""
    name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
    return dotted.startswith("threading.") or name.lower().endswith("thread")
