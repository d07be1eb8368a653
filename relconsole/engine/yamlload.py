"""Strict YAML (and JSON) loading with line numbers.

PyYAML reads YAML 1.1 loosely: duplicate keys silently keep the last value, aliases
can expand without bound, and an unquoted ``2026-12-31`` becomes a date. This loader
composes the node graph first so it can refuse duplicate keys (naming both lines),
cap alias expansion and file size, insist on one document, and remember the line of
every value so schema errors can name ``file:line``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
import re
from typing import Any

import yaml

from relconsole.engine.errors import BadInputError

MAX_FILE_BYTES = 1 << 20  # 1 MiB: no catalog, manifest or candidate is legitimately larger
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


def load_yaml_text(text: str, source: str) -> Loaded:
    """Parse ``text`` (YAML or JSON) strictly.

    ``source`` names the file in errors. Raises BadInputError (exit 5) with the line
    for syntax errors, several documents, duplicate keys, oversized input and runaway
    aliases.
    """
    if len(text.encode("utf-8", "surrogateescape")) > MAX_FILE_BYTES:
        raise BadInputError(source, f"file is larger than {MAX_FILE_BYTES} bytes")
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
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
    _check(node, (), lines, source, budget)
    data = yaml.SafeLoader("").construct_document(node)
    return Loaded(data, lines)


def _check(node: yaml.Node, path: Path, lines: dict, source: str, budget: list) -> None:
    budget[0] -= 1
    if budget[0] < 0:
        raise BadInputError(source, "document expands to too many nodes (alias bomb?)",
                            node.start_mark.line + 1)
    lines.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        seen: dict[Any, int] = {}
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                raise BadInputError(source, "YAML merge keys (<<) are not allowed",
                                    key_node.start_mark.line + 1)
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else repr(key_node)
            line = key_node.start_mark.line + 1
            if key in seen:
                raise BadInputError(
                    source, f"duplicate key {key!r} (first on line {seen[key]})", line)
            seen[key] = line
            lines.setdefault(path + (_scalar_key(key_node),), line)
            _check(value_node, path + (_scalar_key(key_node),), lines, source, budget)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _check(item, path + (index,), lines, source, budget)


def _scalar_key(node: yaml.Node) -> Any:
    if isinstance(node, yaml.ScalarNode):
        return yaml.SafeLoader("").construct_object(node)
    return repr(node)


_NUMBER_LIKE = re.compile(r"[-+]?(\.[0-9]+|[0-9][0-9_]*(\.[0-9]*)?)([eE][-+]?[0-9]+)?|0x[0-9a-fA-F]+|0o[0-7]+")


class _Dumper(yaml.SafeDumper):
    """Quotes strings that a YAML 1.2 reader would take for numbers (``1e3``, ``0o17``)."""


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    if _NUMBER_LIKE.fullmatch(value):
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="'")
    return dumper.represent_str(value)


_Dumper.add_representer(str, _represent_str)


def dump_yaml(data: Any) -> str:
    """Block-style YAML for ``data`` with keys in the given order (for writing new rows).

    Strings that look like numbers to any YAML version are quoted, so a reader never
    turns an id or a digest into a number.
    """
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True,
                     default_flow_style=False, width=100)
