"""Packaging files read as the settings that change what is built, shipped or loaded (review
flag ``packaging_changed``; which settings count and their kinds: ``packagingkeys``).

``settings(path, data)`` reads one file's bytes into ``{key: Setting}``: a ``pyproject.toml``
parsed with ``tomllib``, a ``setup.cfg`` with ``configparser``, a ``setup.py`` with ``ast`` (the
keywords of its ``setup()`` call, and the code it runs besides), a ``MANIFEST.in`` as its
commands. Each value is normalised so that what does not change the build compares equal:
a table's key order, a file's formatting and comments, the order of a requirement list and
the spaces inside a requirement. Each setting carries the line of its key in the file (None
where no line can be told). A file that does not parse is one setting holding its text, so any
change to it counts.
"""

from __future__ import annotations

import ast
import configparser
import json
import re
import tomllib
from dataclasses import dataclass, field

from relconsole.engine.gate.flags.packagingkeys import (
    BUILD, DESCEND, DIRECTIVE, LAYOUT, PACKAGE_DATA, PYPROJECT_RULES, REQUIREMENTS, SETUP_CFG_RULES, SETUP_PY_KEYWORDS,
    SETUP_PY_PATTERNS)

PACKAGING_FILES = frozenset({"pyproject.toml", "setup.cfg", "setup.py", "MANIFEST.in"})
MANIFEST = "manifest"  # a Setting's shape: MANIFEST.in commands
UNPARSED = ("(the whole file: it does not parse)",)


@dataclass(frozen=True)
class Setting:
    """One setting of a packaging file: its ``kind`` (``packagingkeys.KINDS``), ``label`` for a
    reader (``[tool.hatch.build.targets.wheel] packages``), normalised ``value`` (JSON data or
    an AST dump) and 1-based ``line`` of its key (None: not found)."""

    kind: str
    label: str
    value: object
    line: int | None
    lines: tuple = field(default=(), compare=False)  # a list value's item lines (commands, statements)
    code: bool = field(default=False, compare=False)  # the value is code (AST dumps): the line shows it
    shape: str | None = field(default=None, compare=False)  # packagingkeys.PATTERNS, MANIFEST, or None


def settings(path: str, data: bytes | None) -> dict[tuple, Setting]:
    """``{key path: Setting}`` of the packaging file ``path`` (by its name: ``PACKAGING_FILES``)
    from its bytes; {} when absent. A file that does not parse is one ``UNPARSED`` setting of
    kind ``layout`` holding its text (what it builds is unknown)."""
    if data is None:
        return {}
    name = path.rsplit("/", 1)[-1]
    text = data.decode("utf-8", "replace")
    reader = {"pyproject.toml": _pyproject, "setup.cfg": _setup_cfg, "setup.py": _setup_py,
              "MANIFEST.in": _manifest}[name]
    try:
        return reader(text)
    except (ValueError, SyntaxError, RecursionError, configparser.Error):
        return {UNPARSED: Setting(LAYOUT, "the whole file (it does not parse)", text, None)}


# --- pyproject.toml ------------------------------------------------------------------------

RULES = tuple((tuple(pattern.split(".")), kind, shape) for pattern, kind, shape in PYPROJECT_RULES)


def _pyproject(text: str) -> dict[tuple, Setting]:
    data = tomllib.loads(text)
    lines = toml_key_lines(text)
    out = {}
    for key, kind, shape, value in _walk(data, ()):
        out[key] = Setting(kind, toml_label(key, isinstance(value, dict)), _normal(value, shape), _line_of(key, lines),
                           shape=shape)
    return out


def _walk(table: dict, path: tuple):
    """(key path, kind, shape, value) of each setting ``RULES`` names under ``table``."""
    for key, value in table.items():
        here = (*path, key)
        rule = next((r for r in RULES if len(r[0]) == len(here) and _matches(r[0], here)), None)
        if rule is not None and rule[1] != DESCEND:
            if rule[1] is not None:
                yield here, rule[1], rule[2], value
            continue
        if isinstance(value, dict) and any(len(r[0]) > len(here) and _matches(r[0][:len(here)], here) for r in RULES):
            yield from _walk(value, here)


def _matches(pattern: tuple, path: tuple) -> bool:
    return all(p in ("*", k) for p, k in zip(pattern, path))


def toml_label(key: tuple, table: bool = False) -> str:
    """``[table] key`` (``[table.key]`` for a ``table`` value) as TOML writes the setting, keys
    quoted where TOML needs it."""
    shown = [k if re.fullmatch(r"[A-Za-z0-9_-]+", k) else json.dumps(k, ensure_ascii=False) for k in key]
    if table or len(shown) == 1:
        return f"[{'.'.join(shown)}]"
    return f"[{'.'.join(shown[:-1])}] {shown[-1]}"


_BARE_OR_QUOTED = r'(?:[A-Za-z0-9_-]+|"(?:[^"\\]|\\.)*"|\'[^\']*\')'
_DOTTED = rf"{_BARE_OR_QUOTED}(?:\s*\.\s*{_BARE_OR_QUOTED})*"
_HEADER = re.compile(rf"^\s*\[\[?\s*({_DOTTED})\s*\]\]?\s*(#.*)?$")
_ASSIGN = re.compile(rf"^\s*({_DOTTED})\s*=")
_PART = re.compile(_BARE_OR_QUOTED)


def _keys(dotted: str) -> tuple:
    """``a."b.c".d`` -> ('a', 'b.c', 'd')."""
    out = []
    for part in _PART.findall(dotted):
        if part[:1] == '"':
            out.append(json.loads(part))
        elif part[:1] == "'":
            out.append(part[1:-1])
        else:
            out.append(part)
    return tuple(out)


def toml_key_lines(text: str) -> dict[tuple, int]:
    """``{key path: first line}`` of each table header and key of a TOML text, every prefix of
    a dotted key included; lines inside multi-line strings are skipped. A line scan, not a
    parser: a key it cannot place is simply absent."""
    lines: dict[tuple, int] = {}
    table: tuple = ()
    in_string = None
    for number, line in enumerate(text.splitlines(), 1):
        if in_string is None:
            header = _HEADER.match(line)
            if header:
                table = _keys(header.group(1))
                _note(lines, table, number)
            else:
                assign = _ASSIGN.match(line)
                if assign:
                    _note(lines, (*table, *_keys(assign.group(1))), number)
        for quote in ('"""', "'''"):
            if line.count(quote) % 2 and in_string in (None, quote):
                in_string = quote if in_string is None else None
    return lines


def _note(lines: dict, key: tuple, number: int) -> None:
    for end in range(1, len(key) + 1):
        lines.setdefault(key[:end], number)


def _line_of(key: tuple, lines: dict[tuple, int]) -> int | None:
    """The line of ``key``, else of its nearest enclosing table or key that has one (an inline
    table's key is on its parent's line), else None."""
    for end in range(len(key), 0, -1):
        if key[:end] in lines:
            return lines[key[:end]]
    return None


def _normal(value, shape: str | None):
    """``value`` as compared: a requirement list sorted with its spaces dropped (the order and
    the spacing change nothing an install does); anything else as it parsed (a table's key
    order never counts: dicts compare unordered)."""
    if shape == REQUIREMENTS and isinstance(value, list):
        return sorted((_requirement(v) for v in value), key=lambda v: json.dumps(v, sort_keys=True))
    return value


def _requirement(item):
    return "".join(item.split()) if isinstance(item, str) else item


# --- setup.cfg -----------------------------------------------------------------------------

def _setup_cfg(text: str) -> dict[tuple, Setting]:
    parser = configparser.RawConfigParser(comment_prefixes=("#", ";"), inline_comment_prefixes=None)
    parser.optionxform = str  # setuptools reads option names as written
    parser.read_string(text)
    lines = ini_key_lines(text)
    out = {}
    for section in parser.sections():
        for option, value in parser.items(section):
            rule = SETUP_CFG_RULES.get((section, option)) or SETUP_CFG_RULES.get((section, "*"))
            if rule is None:
                continue
            kind, shape = rule
            if shape == DIRECTIVE and not value.strip().startswith(("attr:", "file:")):
                continue  # a literal version or description: metadata, nothing runs
            items = [line.strip() for line in value.splitlines()]
            items = [item for item in items if item and not item.startswith("#")]
            normal = sorted("".join(i.split()) for i in items) if shape == REQUIREMENTS else items
            out[(section, option)] = Setting(kind, f"[{section}] {option}", normal,
                                             lines.get((section, option), lines.get((section,))), shape=shape)
    return out


_SECTION = re.compile(r"^\[([^\]]+)\]")
_OPTION = re.compile(r"^([^\s=:#;][^=:]*?)\s*[=:]")


def ini_key_lines(text: str) -> dict[tuple, int]:
    """``{(section,): line, (section, option): line}`` of an INI text (options start at column
    0; indented lines continue a value)."""
    lines: dict[tuple, int] = {}
    section = None
    for number, line in enumerate(text.splitlines(), 1):
        found = _SECTION.match(line)
        if found:
            section = found.group(1).strip()
            lines.setdefault((section,), number)
        elif section is not None and (option := _OPTION.match(line)):
            lines.setdefault((section, option.group(1).strip()), number)
    return lines


# --- setup.py ------------------------------------------------------------------------------

def _setup_py(text: str) -> dict[tuple, Setting]:
    """The build keywords of each ``setup()`` call (``SETUP_PY_KEYWORDS``; ``**kwargs``, a
    positional argument and a metadata keyword computed by a call count as ``build``), each as
    its literal value or else its AST dump; and ``("code",)``: the module's other statements,
    which run at every build (a constant assigned to a name only the call's metadata reads,
    such as a version string, is left out)."""
    tree = ast.parse(text)
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call) and _call_name(node.func) == "setup"]
    out = {}
    metadata_values = []
    for index, call in enumerate(calls):
        for keyword in call.keywords:
            kind = BUILD if keyword.arg is None else SETUP_PY_KEYWORDS.get(keyword.arg)
            if kind is None and not _calls(keyword.value):
                metadata_values.append(keyword.value)
                continue
            kind = kind or BUILD  # metadata computed by a call (version=get_version()): code run at build
            name = keyword.arg or "**"
            literal = _literal(keyword.value)
            out[("setup", index, name)] = Setting(
                kind, f"setup({name}=...)", ast.dump(keyword.value) if literal is None else literal[0],
                keyword.lineno, code=literal is None, shape=PACKAGE_DATA if name in SETUP_PY_PATTERNS else None)
        for number, arg in enumerate(call.args):  # positional arguments: an attrs dict
            out[("setup", index, f"*{number}")] = Setting(BUILD, "setup(*args)", ast.dump(arg), arg.lineno, code=True)
    dumps, lines = _other_code(tree, calls, metadata_values)
    out[("code",)] = Setting(BUILD, "the code setup.py runs besides setup()", dumps, lines[0] if lines else None,
                             tuple(lines), code=True)
    return out


def _calls(node) -> bool:
    """Whether an expression runs code when evaluated: a call, or a lambda or comprehension
    that may (a name, a constant, an attribute read or an f-string of them runs none)."""
    return any(isinstance(n, (ast.Call, ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp,
                              ast.Await, ast.Yield, ast.YieldFrom, ast.NamedExpr)) for n in ast.walk(node))


def _literal(node) -> tuple | None:
    """(the value,) of a literal expression (a list, a dict, a string...), None for code."""
    try:
        return (ast.literal_eval(node),)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


def _call_name(func) -> str | None:
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None


def _other_code(tree: ast.Module, calls: list, metadata_values: list) -> tuple[list[str], list[int]]:
    """([dump of each top-level statement], [its line]), the imports first and sorted, with
    each setup() call's keyword values and its module docstring blanked, and a constant assigned to names that only
    metadata keywords read kept by name only (a version bump there builds nothing else)."""
    skip = {node for value in metadata_values for node in ast.walk(value)}  # AST nodes hash by identity
    read_elsewhere = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)
                      and isinstance(node.ctx, ast.Load) and node not in skip}
    for call in calls:
        call.keywords, call.args = [], []
    body = tree.body[1:] if tree.body and _is_docstring(tree.body[0]) else tree.body
    imports = sorted((_import_dump(s), s.lineno) for s in body if isinstance(s, (ast.Import, ast.ImportFrom)))
    out = list(imports)  # their order is isort's business: the same modules load either way
    for statement in body:
        if isinstance(statement, (ast.Import, ast.ImportFrom)):
            continue
        if _metadata_constant(statement, read_elsewhere):
            out.append(("constant " + ",".join(sorted(t.id for t in statement.targets)), statement.lineno))
        else:
            out.append((ast.dump(statement), statement.lineno))
    return [dump for dump, _ in out], [line for _, line in out]


def _import_dump(statement) -> str:
    """An import as the names it binds, in sorted order (``import b, a`` is ``import a, b``)."""
    names = sorted((alias.name, alias.asname or "") for alias in statement.names)
    return f"import {getattr(statement, 'module', None)} {getattr(statement, 'level', 0)} {names}"


def _is_docstring(node) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)


def _metadata_constant(statement, read_elsewhere: set[str]) -> bool:
    return (isinstance(statement, ast.Assign) and all(isinstance(t, ast.Name) for t in statement.targets)
            and isinstance(statement.value, ast.Constant)
            and not any(t.id in read_elsewhere for t in statement.targets))


# --- MANIFEST.in ---------------------------------------------------------------------------

def _manifest(text: str) -> dict[tuple, Setting]:
    """The commands, in order (a later one overrides an earlier one), each with its words
    single-spaced; comments, blank lines and continuations do not count."""
    commands, lines, pending, start = [], [], "", None
    for number, line in enumerate(text.splitlines(), 1):
        start = start or number
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        words = (pending + line).split("#", 1)[0].split()
        pending = ""
        if words:
            commands.append(" ".join(words))
            lines.append(start)
        start = None
    return {("commands",): Setting(LAYOUT, "its commands", commands, lines[0] if lines else None, tuple(lines),
                                   shape=MANIFEST)}
