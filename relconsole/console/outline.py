"""Two canonical outputs side by side (SPEC §11: "opening a failing relation shows the two
canonical outputs side by side with the disagreeing keys marked"): each output as an outline
of ``key: value`` lines, the disagreeing keys listed first on both sides, ``≠`` on a key that
disagrees and ``›`` on a key with one below it. Rich Text only, every value shown literally.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text

from relconsole.console.render import lit
from relconsole.engine.literal import counted

OUTLINE_LINES = 400  # lines of one output column before "… N more keys"
DIFF_LINES = 60  # disagreeing keys listed at the top of each column
VALUE_CHARS = 160  # characters of one value's repr in a column
_ABSENT = object()
ABSENT = _ABSENT  # what ``resolve`` gives for a key path the value does not hold


def _ancestors(differing: set[str]) -> set[str]:
    """Dotted paths that contain a disagreeing key (``a`` and ``a.b`` for ``a.b.c``)."""
    out: set[str] = set()
    for dotted in differing:
        parts = dotted.split(".")
        out.update(".".join(parts[:n]) for n in range(1, len(parts)))
    return out


def _walk(value: Any, differing: set[str], within: set[str], path: tuple, indent: int):
    """Lazily yield ``(indent, label, value, mark, leaf, keyed)`` for each outline line.

    ``label`` is a dict key (``keyed``) or a list index; ``mark`` is ``≠`` (this path
    disagrees), ``›`` (a disagreeing key lies below) or ``""``. Nothing is rendered here,
    so the lines past the cap are only counted.
    """
    keyed = isinstance(value, dict)
    for key, item in (value.items() if keyed else enumerate(value)):
        here = path + (key,)
        dotted = ".".join(str(p) for p in here)
        mark = "≠" if dotted in differing else ("›" if dotted in within else "")
        nested = isinstance(item, (dict, list)) and bool(item)
        yield indent, key, item, mark, not nested, keyed
        if nested:
            yield from _walk(item, differing, within, here, indent + 1)


def _value(item: Any, style: str = "") -> Text:
    text = repr(item)
    return lit(text if len(text) <= VALUE_CHARS else text[:VALUE_CHARS] + "…", style)


_MARKS = {"≠": ("≠ ", "bold red"), "›": ("› ", "red"), "": ("  ", "")}


def _line(indent: int, label: Any, item: Any, mark: str, leaf: bool, keyed: bool) -> Text:
    prefix = Text(*_MARKS[mark])
    pad = "  " * indent
    hot = "reverse red" if mark == "≠" else ""
    if keyed:
        if not leaf:
            return Text.assemble(prefix, pad, lit(label, "bold"), ":")
        return Text.assemble(prefix, pad, lit(label, "bold"), ": ", _value(item, hot))
    if not leaf:
        return Text.assemble(prefix, pad, f"- [{label}]")
    return Text.assemble(prefix, pad, "- ", _value(item, hot))


def outline(value: Any, differing: set[str], path: tuple = (), indent: int = 0,
            limit: int = OUTLINE_LINES) -> list[Text]:
    """A canonical output as indented ``key: value`` lines, at most ``limit`` of them.

    A disagreeing key (its dotted path in ``differing``, as ``canon.path_text`` writes
    it; list indexes count as keys) is marked ``≠`` with its value reversed; a key with a
    disagreeing key somewhere below it is marked ``›``, so nested differences stay
    visible when folded away. Lines past ``limit`` are counted, not built: the last line
    says "… N more keys". A top-level scalar is one line, ``≠`` when ``(whole output)``
    disagrees.
    """
    whole = "(whole output)" in differing
    if not isinstance(value, (dict, list)) or not value:
        return [Text.assemble(Text(*_MARKS["≠" if whole else ""]), _value(value, "reverse red" if whole else ""))]
    lines: list[Text] = []
    if whole:
        lines.append(Text.assemble(Text(*_MARKS["≠"]), ("(whole output) disagrees: ", "bold"),
                                   f"{type(value).__name__} of {counted(len(value), 'entry', 'entries')}"))
    within = _ancestors(differing)
    rest = 0
    for entry in _walk(value, differing, within, path, indent):
        if len(lines) >= limit:
            rest += 1
            continue
        lines.append(_line(*entry))
    if rest:
        lines.append(Text(f"  … {rest} more keys (the disagreeing ones are listed at the top)", "dim"))
    return lines


def resolve(value: Any, dotted: str) -> Any:
    """The entry of ``value`` at a disagreeing key path as ``canon.path_text`` writes it
    (``Adelie.bill_length_mm_sum``, list indexes as digits, ``(whole output)``), or
    ``_ABSENT``. A dict key holding dots is found too (the longest key that matches wins)."""
    if dotted == "(whole output)":
        return value
    return _resolve(value, dotted.split("."))


def _resolve(node: Any, parts: list[str]) -> Any:
    if not parts:
        return node
    if isinstance(node, dict):
        for n in range(len(parts), 0, -1):
            key = ".".join(parts[:n])
            if key in node:
                found = _resolve(node[key], parts[n:])
                if found is not _ABSENT:
                    return found
        return _ABSENT
    if isinstance(node, list) and parts[0].isdigit() and int(parts[0]) < len(node):
        return _resolve(node[int(parts[0])], parts[1:])
    return _ABSENT


def disagreeing_lines(source: Any, followup: Any, differing: list[str],
                      limit: int = DIFF_LINES) -> tuple[list[Text], list[Text]]:
    """The top of both columns: each disagreeing key (at most ``limit``) with its value on
    that side, ``≠``-marked, the same keys in the same order on both sides so they line up.

    A key one side lacks shows ``(absent)``; an entry that names no key (``lost 2
    member(s)``, ``(no exception)``) is shown as written, once per side.
    """
    left: list[Text] = [Text(f"disagreeing keys ({len(differing)})", "bold")]
    right: list[Text] = [Text(f"disagreeing keys ({len(differing)})", "bold")]
    for dotted in differing[:limit]:
        a, b = resolve(source, dotted), resolve(followup, dotted)
        for column, found in ((left, a), (right, b)):
            line = Text.assemble(Text(*_MARKS["≠"]), lit(dotted, "bold"))
            if a is not _ABSENT or b is not _ABSENT:
                line.append(": ")
                line.append_text(Text("(absent)", "italic red") if found is _ABSENT else _value(found, "reverse red"))
            column.append(line)
    if len(differing) > limit:
        more = Text(f"  … {len(differing) - limit} more disagreeing keys", "dim")
        left.append(more)
        right.append(more.copy())
    return left, right


def listed_whole(value: Any, differing: set[str], limit: int = DIFF_LINES) -> bool:
    """Whether the disagreeing keys listed at the top of a column already show all of
    ``value``: a scalar (or empty) output that disagrees as a whole, or one whose every
    leaf is a disagreeing key (one key, say), at most ``limit`` of them."""
    if not isinstance(value, (dict, list)) or not value:
        return "(whole output)" in differing
    if "(whole output)" in differing:
        return False  # listed as one cut repr: the outline shows its entries
    leaves = 0
    for _indent, _label, _item, mark, leaf, _keyed in _walk(value, differing, set(), (), 0):
        if leaf:
            leaves += 1
            if mark != "≠" or leaves > limit:
                return False
    return True


def output_columns(source: Any, followup: Any, differing: list[str],
                   limit: int = OUTLINE_LINES) -> tuple[list[Text], list[Text]]:
    """The two canonical outputs side by side (§11): the disagreeing keys first, then each
    whole output as an outline capped at ``limit`` lines, disagreeing keys marked ``≠``.
    When the disagreeing keys already show both outputs whole (``listed_whole``: a scalar,
    or one key), the outline is left out: each value shows once (issue 36)."""
    marked = set(differing)
    left, right = disagreeing_lines(source, followup, differing) if differing else ([], [])
    if left and listed_whole(source, marked) and listed_whole(followup, marked):
        return left, right
    for column, value in ((left, source), (right, followup)):
        if column:
            column.append(Text("whole output", "bold"))
        column.extend(outline(value, marked, limit=limit))
    return left, right
