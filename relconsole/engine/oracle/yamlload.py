"""Strict YAML (and JSON) loading with line numbers.

PyYAML reads YAML 1.1 loosely: duplicate keys silently keep the last value, aliases
can expand without bound, and an unquoted ``2026-12-31`` becomes a date. This loader
composes the node graph first so it can refuse duplicate keys (naming both lines),
cap alias expansion and file size, insist on one document, and remember the line of
every value so schema errors can name ``file:line``.
"""

from __future__ import annotations

import bisect
import json
import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from relconsole.engine.errors import BadInputError

MAX_FILE_BYTES = 1 << 20  # 1 MiB: no catalog, manifest or candidate is legitimately larger
_ODD_BREAKS = re.compile("[\x85\u2028\u2029]|\r(?!\n)")
MAX_NODES = 100_000  # nodes visited while expanding aliases (a "billion laughs" stops here)

Path = tuple  # a path into the loaded document: keys and list indexes


@dataclass
class Loaded:
    """A loaded document: ``data`` (plain Python values) and ``lines`` (path -> 1-based line)."""

    data: Any
    lines: dict[Path, int] = field(default_factory=dict)

    def line_of(self, path: Path) -> int | None:
        """The line of ``path`` or of its nearest ancestor that has one."""
        path = tuple(path)
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path[:-1]
        return self.lines.get((), None)


# libyaml's parser when PyYAML was built with it (five times faster on a 10,000-pattern
# owner map); the nodes, marks and errors are the same as the pure-Python loader's.
_COMPOSER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_yaml_text(text: str, source: str) -> Loaded:
    """Parse ``text`` (YAML or JSON) strictly.

    ``source`` names the file in errors. Raises BadInputError (exit 5) with the line
    for syntax errors, several documents, duplicate keys, oversized input and runaway
    aliases.
    """
    if len(text.encode("utf-8", "surrogateescape")) > MAX_FILE_BYTES:
        raise BadInputError(source, f"file is larger than {MAX_FILE_BYTES} bytes")
    try:
        node = yaml.compose(text, Loader=_COMPOSER)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = line_counter(text)(mark) if mark else None
        problem = exc.problem or exc.context or "invalid YAML"
        if "expected a single document" in str(exc):
            problem = "several YAML documents in one file (only one is allowed)"
        raise BadInputError(source, f"invalid YAML: {problem}", line) from None
    except yaml.YAMLError as exc:
        raise BadInputError(source, f"invalid YAML: {exc}") from None
    if node is None:
        return Loaded(None, {(): 1})
    lines: dict[Path, int] = {}
    budget = [MAX_NODES]
    try:
        _check(node, (), lines, source, budget, line_counter(text))
        data = yaml.SafeLoader("").construct_document(node)
    except (ValueError, OverflowError, yaml.YAMLError) as exc:  # e.g. an unquoted 2031-02-30
        bad = _unconstructible(node)
        what = f"invalid value {bad.value!r}" if bad is not None else "invalid value"
        raise BadInputError(source, f"{what}: {exc} (quote it if it is text)",
                            line_counter(text)(bad.start_mark) if bad is not None else None) from None
    return Loaded(_as_json(text, data), lines)


def _as_json(text: str, data: Any) -> Any:
    """JSON text read as JSON: YAML 1.1 would read ``1e-06`` as a string (no dot)."""
    if not text.lstrip().startswith(("{", "[")):
        return data
    try:
        return json.loads(text)
    except ValueError:
        return data


def _unconstructible(node: yaml.Node, seen: set | None = None) -> yaml.ScalarNode | None:
    """The first scalar PyYAML cannot turn into a value (depth first), or None."""
    seen = set() if seen is None else seen
    if id(node) in seen:
        return None
    seen.add(id(node))
    if isinstance(node, yaml.ScalarNode):
        try:
            yaml.constructor.SafeConstructor().construct_object(node)
        except (ValueError, OverflowError, yaml.YAMLError):
            return node
        return None
    children = node.value if isinstance(node, yaml.SequenceNode) else \
        [n for pair in node.value for n in pair] if isinstance(node, yaml.MappingNode) else []
    for child in children:
        bad = _unconstructible(child, seen)
        if bad is not None:
            return bad
    return None


def line_counter(text: str):
    """mark -> 1-based line counting ``\\n`` only, as editors, ``sed`` and JSON do.

    PyYAML also breaks lines at NEL, LS, PS and a lone CR, which would shift every
    later line number of a file that holds one (say, inside a quoted reason).
    """
    if not _ODD_BREAKS.search(text):
        return lambda mark: mark.line + 1
    newlines = [i for i, char in enumerate(text) if char == "\n"]
    return lambda mark: bisect.bisect_left(newlines, mark.index) + 1


def _check(node: yaml.Node, path: Path, lines: dict, source: str, budget: list,
           line_of=lambda mark: mark.line + 1) -> None:
    budget[0] -= 1
    if budget[0] < 0:
        raise BadInputError(source, "document expands to too many nodes (alias bomb?)",
                            line_of(node.start_mark))
    lines.setdefault(path, line_of(node.start_mark))
    if isinstance(node, yaml.MappingNode):
        seen: dict[Any, int] = {}
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                raise BadInputError(source, "YAML merge keys (<<) are not allowed",
                                    line_of(key_node.start_mark))
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else repr(key_node)
            line = line_of(key_node.start_mark)
            if key in seen:
                raise BadInputError(
                    source, f"duplicate key {key!r} (first on line {seen[key]})", line)
            seen[key] = line
            child = path + (_scalar_key(key_node),)
            lines.setdefault(child, line)
            _check(value_node, child, lines, source, budget, line_of)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _check(item, path + (index,), lines, source, budget, line_of)


def _scalar_key(node: yaml.Node) -> Any:
    if isinstance(node, yaml.ScalarNode):  # a bare constructor: a whole SafeLoader per key cost 5 s on 5,000 relations
        return yaml.constructor.SafeConstructor().construct_object(node)
    return repr(node)


_NUMBER_LIKE = re.compile(r"[-+]?(\.[0-9]+|[0-9][0-9_]*(\.[0-9]*)?)([eE][-+]?[0-9]+)?|0x[0-9a-fA-F]+|0o[0-7]+")


class _Dumper(yaml.SafeDumper):
    """Quotes strings that a YAML 1.2 reader would take for numbers (``1e3``, ``0o17``)."""


_UNICODE_BREAKS = ("\x85", "\u2028", "\u2029")  # line breaks to a reader; PyYAML may write them raw


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    if _NUMBER_LIKE.fullmatch(value):
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="'")
    if any(brk in value for brk in _UNICODE_BREAKS):  # only double quotes escape them
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style='"')
    return dumper.represent_str(value)


_Dumper.add_representer(str, _represent_str)


def dump_yaml(data: Any) -> str:
    """Block-style YAML for ``data`` with keys in the given order (for writing new rows).

    Strings that look like numbers to any YAML version are quoted, so a reader never
    turns an id or a digest into a number.
    """
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True,
                     default_flow_style=False, width=100)
