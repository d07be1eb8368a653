"""Byte-preserving edits of the human files the console writes (SPEC §9, "YAML habits").

Each edit splices text at positions taken from the YAML node marks, so a reviewer's
comments, blank lines, quoting and key order survive; then it re-parses the result and
refuses (BadInputError) unless exactly the intended value changed. Pure functions on
text: no git, no files.
"""

from __future__ import annotations

import datetime
import json
import re
from typing import Any

import yaml

from relconsole.engine.errors import BadInputError, UsageError
from relconsole.engine.oracle.yamlload import dump_yaml, load_yaml_text
from relconsole.engine.literal import counted

_DEFAULT_INDENT = 2
_YAML_UNSAFE = re.compile("[^\n\x20-\x7e\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]|[\u2028\u2029\ufeff]")


# ---------------------------------------------------------------------------- catalog

def append_catalog_relation(catalog_text: str, row: dict, source: str) -> str:
    """The catalog text with ``row`` appended to the top-level ``relations:`` list (§3, §10).

    A block list gets a block item indented like the existing ones (keys in ``row``'s
    order, written by ``dump_yaml``, so strings YAML would misread are quoted); an empty
    ``relations: []`` or ``relations:`` becomes a block list; a flow list (a JSON catalog)
    gets a JSON item. Every other character is kept, including CRLF line ends and a
    missing final newline. Raises BadInputError(source, ...) when the catalog is
    malformed, has no top-level ``relations`` list, or the result would not parse to the
    old catalog plus ``row``.
    """
    old = load_yaml_text(catalog_text, source).data
    root = yaml.compose(catalog_text, Loader=yaml.SafeLoader)
    key, value, next_key = _top_level(root, "relations")
    if key is None or not isinstance(old.get("relations", 0), (list, type(None))):
        line = key.start_mark.line + 1 if key is not None else None
        raise BadInputError(source, "the catalog has no top-level relations: list to append to", line)
    if isinstance(value, yaml.SequenceNode) and not value.flow_style:
        new_text = _append_block_item(catalog_text, value, row)
    elif isinstance(value, yaml.SequenceNode) and (value.value or root.flow_style):
        new_text = _append_flow_item(catalog_text, value, row)
    elif root.flow_style:
        raise BadInputError(source, "relations is not a list", key.start_mark.line + 1)
    else:
        new_text = _fill_empty_relations(catalog_text, root, key, value, next_key, row)
    expected = dict(old)
    expected["relations"] = list(old.get("relations") or []) + [_plain(row)]
    _verify(new_text, expected, source, "appending the relation", key.start_mark.line + 1)
    return new_text


def _top_level(root: yaml.Node | None, name: str):
    """(key node, value node, following key node or None) of a top-level key, or Nones."""
    if not isinstance(root, yaml.MappingNode):
        return None, None, None
    pairs = root.value
    for i, (key, value) in enumerate(pairs):
        if isinstance(key, yaml.ScalarNode) and key.value == name:
            return key, value, pairs[i + 1][0] if i + 1 < len(pairs) else None
    return None, None, None


def _append_block_item(text: str, seq: yaml.SequenceNode, row: dict) -> str:
    dash = seq.start_mark.column
    first = seq.value[0].start_mark
    gap = first.column - dash if first.line == seq.start_mark.line and first.column > dash else 2
    lines = text.splitlines(keepends=True)
    after = _last_owned_line(lines, seq.value[-1].start_mark.line, _stop_line(seq.end_mark), dash)
    return _insert_after_line(text, lines, after, _block_item(row, dash, gap))


def _fill_empty_relations(text: str, root: yaml.MappingNode, key: yaml.Node, value: yaml.Node,
                          next_key: yaml.Node | None, row: dict) -> str:
    """Turn ``relations: []`` / ``relations:`` / ``relations: ~`` into a one-item block list."""
    dash = _indent_step(root)
    lines = text.splitlines(keepends=True)
    stop = next_key.start_mark.line if next_key is not None else _stop_line(root.end_mark)
    empty = value.end_mark.index <= value.start_mark.index
    start = key.start_mark.line if empty else value.end_mark.line
    after = _last_owned_line(lines, start, stop, dash)
    new_text = _insert_after_line(text, lines, after, _block_item(row, dash, 2))
    placeholder_start, placeholder_end = value.start_mark.index, value.end_mark.index
    if placeholder_end <= placeholder_start:
        return new_text
    line_end = _line_end_index(text, placeholder_end)
    if not text[placeholder_end:line_end].strip():
        while placeholder_start > 0 and text[placeholder_start - 1] in " \t":
            placeholder_start -= 1
    return new_text[:placeholder_start] + new_text[placeholder_end:]


def _indent_step(root: yaml.MappingNode) -> int:
    """How far the file indents the children of top-level keys (2 when it has none)."""
    for _key, value in root.value:
        if isinstance(value, (yaml.MappingNode, yaml.SequenceNode)) and not value.flow_style:
            if value.start_mark.column > 0:
                return value.start_mark.column
    return _DEFAULT_INDENT


def _block_item(row: dict, dash: int, gap: int) -> list[str]:
    body = dump_yaml(row).rstrip("\n").split("\n")
    head = " " * dash + "-" + " " * (gap - 1) + body[0]
    pad = " " * (dash + gap)
    return [head] + [pad + line if line else line for line in body[1:]]


def _last_owned_line(lines: list[str], start: int, stop: int, dash: int) -> int:
    """The last line in [start, stop) with content, or a comment indented past the dash.

    Blank lines and comments at or left of the list's dash column stay after the new item:
    they introduce what follows rather than annotate the last item.
    """
    last = start
    for number in range(start, min(stop, len(lines))):
        stripped = lines[number].strip()
        if not stripped:
            continue
        indent = len(lines[number]) - len(lines[number].lstrip(" "))
        if not stripped.startswith("#") or indent > dash:
            last = number
    return last


def _stop_line(mark: yaml.Mark) -> int:
    """First line not covered by a node ending at ``mark`` (end of text counts as covered)."""
    return mark.line + 1 if mark.column > 0 else mark.line


def _insert_after_line(text: str, lines: list[str], after: int, block: list[str]) -> str:
    line = lines[after]
    ending = _line_ending(line)
    offset = sum(len(x) for x in lines[: after + 1])
    if ending:
        return text[:offset] + "".join(b + ending for b in block) + text[offset:]
    newline = _first_line_ending(text)
    return text[:offset] + newline + newline.join(block) + text[offset:]


def _append_flow_item(text: str, seq: yaml.SequenceNode, row: dict) -> str:
    """Add ``row`` as a JSON item to a flow list, on its own line when the items are."""
    if not seq.value:
        close = seq.end_mark.index - 1  # the "]"
        return text[:close] + _json(row) + text[close:]
    last = seq.value[-1]
    line_start = text.rfind("\n", 0, last.start_mark.index) + 1
    own_line = not text[line_start:last.start_mark.index].strip() and last.start_mark.line > seq.start_mark.line
    if not own_line:
        return _splice(text, last.end_mark.index, ", " + _json(row))
    column = last.start_mark.column
    newline = _first_line_ending(text[line_start:])
    if last.start_mark.line == last.end_mark.line:
        item = _json(row)
    else:
        item = _json(row, indent=_json_step(last))
        item = newline.join((" " * column if i else "") + part for i, part in enumerate(item.split("\n")))
    return _splice(text, last.end_mark.index, "," + newline + " " * column + item)


def _json(row: dict, indent: int | None = None) -> str:
    text = json.dumps(row, ensure_ascii=False, default=str, indent=indent)
    # YAML refuses control characters and folds raw NEL/LS/PS inside quoted scalars.
    return _YAML_UNSAFE.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text)


def _json_step(item: yaml.Node) -> int:
    if isinstance(item, yaml.MappingNode) and item.value:
        key = item.value[0][0].start_mark
        if key.line > item.start_mark.line and key.column > item.start_mark.column:
            return key.column - item.start_mark.column
    return _DEFAULT_INDENT


# ---------------------------------------------------------------------------- jsonl

def append_jsonl_rows(text: str, rows: list[dict]) -> str:
    """``text`` (a ``.jsonl`` file) with ``rows`` added as compact JSON lines at the end (§10).

    A missing final newline is added first; the file's CRLF line ends are kept.
    """
    newline = "\r\n" if text.split("\n", 1)[0].endswith("\r") and "\n" in text else "\n"
    if text and not text.endswith("\n"):
        text += newline
    return text + "".join(json.dumps(row, ensure_ascii=False) + newline for row in rows)


def first_bad_jsonl_line(text: str) -> tuple[int, str] | None:
    """(1-based line, the parser's message) of the first non-blank line of ``text`` that is
    not JSON, or None when every line is."""
    for number, line in enumerate(jsonl_lines(text), 1):
        if not line.strip():
            continue
        try:
            json.loads(line)
        except ValueError as exc:
            return number, getattr(exc, "msg", str(exc))
    return None


def jsonl_lines(text: str) -> list[str]:
    """The lines of a JSON Lines text without their ``\\n`` (1-based line n is item n-1).

    Lines end at "\\n" only, so numbering agrees with ``remove_jsonl_lines``; a trailing
    "\\r" stays on the line (JSON ignores it as whitespace).
    """
    return [line.removesuffix("\n") for line in re.findall(r"[^\n]*\n|[^\n]+\Z", text)]


def remove_jsonl_lines(text: str, line_numbers: set[int]) -> str:
    """``text`` without the given 1-based lines; every other byte kept ("" when none is left).

    Lines end at "\\n" only, as JSON Lines says (a U+2028 inside a string is not a break).
    Raises UsageError for a line number the text does not have.
    """
    lines = re.findall(r"[^\n]*\n|[^\n]+\Z", text)
    missing = sorted(n for n in line_numbers if not 1 <= n <= len(lines))
    if missing:
        raise UsageError(f"no line {missing[0]} in a file of {counted(len(lines), 'line')}")
    return "".join(line for number, line in enumerate(lines, 1) if number not in line_numbers)


# ---------------------------------------------------------------------------- lease

def set_lease_expires(manifest_text: str, new_date: datetime.date, source: str) -> str:
    """The lease manifest with only the value of its top-level ``expires:`` replaced (§4).

    Quoting style and a trailing comment are kept; ``sha256`` and every other byte are
    untouched. Raises BadInputError(source, ...) for a malformed manifest, no ``expires``
    key, a non-scalar or block-scalar value, or a result that parses differently elsewhere.
    """
    if isinstance(new_date, datetime.datetime):
        new_date = new_date.date()

    def written(style: str) -> tuple[str, object]:
        quote = style if style in ("'", '"') else ""
        return f"{quote}{new_date.isoformat()}{quote}", new_date.isoformat() if quote else new_date

    return _replace_lease_scalar(manifest_text, "expires", written, source,
                                 "expires must be a date like 2026-12-31", "renewing the lease")


_SHA256_HEX = re.compile(r"[0-9a-f]{64}")


def set_lease_sha256(manifest_text: str, new_digest: str, source: str) -> str:
    """The lease manifest with only the value of its top-level ``sha256:`` replaced (§4 re-hash).

    The digest is always written as a quoted string (§4: "64 hex chars, always a string"):
    a single- or double-quoted value keeps its quote, a plain one becomes double-quoted.
    A trailing comment and every other byte are kept. Raises UsageError when
    ``new_digest`` is not 64 lowercase hex characters, and BadInputError(source, ...) for a
    malformed manifest, no ``sha256`` key, a non-scalar or block-scalar value, or a result
    that parses differently anywhere else.
    """
    if not isinstance(new_digest, str) or not _SHA256_HEX.fullmatch(new_digest):
        raise UsageError(f"{new_digest!r} is not a sha256 digest (64 lowercase hex characters)")
    def written(style: str) -> tuple[str, object]:
        quote = style if style in ("'", '"') else '"'
        return f"{quote}{new_digest}{quote}", new_digest

    return _replace_lease_scalar(manifest_text, "sha256", written, source,
                                 "sha256 must be a quoted string of 64 hex characters", "re-hashing the lease")


def _replace_lease_scalar(manifest_text: str, name: str, written, source: str, shape: str, action: str) -> str:
    """Replace the value of the manifest's top-level ``name:`` keeping every other byte.

    ``written(style)`` gives (the literal to write, the value it must load as) for the old
    value's quoting style. Raises BadInputError(source, ...) for a malformed manifest, no
    such key, a non-scalar or block-scalar value (``shape`` says what it must be), or a
    result that parses differently anywhere else (``action`` names the edit).
    """
    old = load_yaml_text(manifest_text, source).data
    root = yaml.compose(manifest_text, Loader=yaml.SafeLoader)
    key, value, _next = _top_level(root, name)
    if key is None:
        raise BadInputError(source, f"the lease manifest has no top-level {name}: key")
    line = key.start_mark.line + 1
    if not isinstance(value, yaml.ScalarNode) or value.style in ("|", ">"):
        raise BadInputError(source, shape, line)
    literal, loads_as = written(value.style or "")
    if value.end_mark.index > value.start_mark.index:
        new_text = manifest_text[:value.start_mark.index] + literal + manifest_text[value.end_mark.index:]
    else:
        colon = manifest_text.index(":", key.end_mark.index)
        new_text = _splice(manifest_text, colon + 1, " " + literal)
    expected = dict(old)
    expected[name] = loads_as
    _verify(new_text, expected, source, action, line)
    return new_text


# ---------------------------------------------------------------------------- freezes

def upsert_freeze_row(freezes_text: str | None, row: dict, source: str) -> str:
    """freezes.json text with ``row`` replacing the rows of its ``relation_id``, or appended (§6).

    An absent or blank file is ``[]``. Output is ``json.dumps(rows, indent=2)`` plus a
    newline. Raises BadInputError(source, msg, line) for malformed JSON, a top level that
    is not a list, or an entry that is not an object; UsageError when ``row`` has no
    ``relation_id``.
    """
    relation_id = row.get("relation_id")
    if not relation_id:
        raise UsageError("a freeze row needs a relation_id")
    rows = _freeze_rows(freezes_text, source)
    kept: list[dict] = []
    placed = False
    for existing in rows:
        if existing.get("relation_id") != relation_id:
            kept.append(existing)
        elif not placed:
            kept.append(dict(row))
            placed = True
    if not placed:
        kept.append(dict(row))
    return json.dumps(kept, indent=2, ensure_ascii=False) + "\n"


def _freeze_rows(text: str | None, source: str) -> list[dict]:
    """The existing rows, validated as the review validates them (a bad file blocks writing)."""
    from relconsole.engine.oracle.freezes import parse_rows

    return [row for row, _line in parse_rows(text, source)]


# ---------------------------------------------------------------------------- shared

def _verify(new_text: str, expected: Any, source: str, action: str, line: int | None) -> None:
    try:
        new = load_yaml_text(new_text, source).data
    except BadInputError as exc:
        raise BadInputError(source, f"{action} would make the file invalid ({exc.message}); "
                                    "nothing was written", line) from None
    if not _same(new, expected):
        raise BadInputError(source, f"{action} would change more than intended; nothing was written", line)


def _same(a: Any, b: Any) -> bool:
    """Deep equality that also requires equal types (True is not 1, "1" is not 1)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b or (a != a and b != b)  # NaN (.nan) equals itself here


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _splice(text: str, at: int, insert: str) -> str:
    return text[:at] + insert + text[at:]


def _line_ending(line: str) -> str:
    for ending in ("\r\n", "\n", "\r", "\x85", "\u2028", "\u2029"):
        if line.endswith(ending):
            return ending
    return ""


def _first_line_ending(text: str) -> str:
    match = re.search(r"\r\n|\n|\r", text)
    return match.group(0) if match else "\n"


def _line_end_index(text: str, at: int) -> int:
    match = re.compile(r"\r\n|\n|\r").search(text, at)
    return match.start() if match else len(text)
