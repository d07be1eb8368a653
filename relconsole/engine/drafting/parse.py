"""Reading what a drafter printed (SPEC §10): the project's strict YAML loader (size and
alias caps, no duplicate keys) over a fenced block, several ``---`` documents, a list, or
(seed rows) JSON lines. Nothing in it is ever executed; text of another shape is a
``DrafterError`` (exit 3).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from relconsole.engine.drafting.drafter import DrafterError
from relconsole.engine.errors import BadInputError
from relconsole.engine.oracle.seedrows import SeedLineError, parse_seed_line
from relconsole.engine.oracle.yamlload import load_yaml_text

_FENCE = re.compile(r"^[ \t]*(?P<fence>`{3,}|~{3,})[^\n]*\n(?P<body>.*?)^[ \t]*(?P=fence)[ \t]*$",
                    re.MULTILINE | re.DOTALL)
_DOC_SEPARATOR = re.compile(r"^---[ \t]*$", re.MULTILINE)
SOURCE = "drafter output"


def _blocks(text: str) -> list[str]:
    """The fenced blocks of ``text`` (```yaml ... ```), or the whole text when it has none."""
    found = [m.group("body") for m in _FENCE.finditer(text)]
    if found:
        return found
    stripped = text.strip()
    if stripped.startswith(("```", "~~~")):  # an opening fence whose end was cut off
        return [stripped.split("\n", 1)[1] if "\n" in stripped else ""]
    return [text]


@dataclass(frozen=True)
class UnreadRow:
    """A JSON-lines line of drafted seed rows that is JSON but not one row: an object that
    holds a key twice (``seedrows.parse_seed_line``). ``text`` is the line, ``reason`` why;
    ``judge_seed_rows`` rejects it as it stands."""

    text: str
    reason: str


def _json_lines(block: str) -> list[Any] | None:
    """Every non-blank line of ``block`` as one JSON value (an UnreadRow for an object with
    a key twice), or None when a line is not JSON."""
    values: list[Any] = []
    for line in block.splitlines():
        if not line.strip():
            continue
        try:
            json.loads(line)
        except ValueError:
            return None
        try:
            values.append(parse_seed_line(line))
        except SeedLineError as exc:
            values.append(UnreadRow(line.strip(), str(exc)))
    return values


def _documents(block: str) -> list[Any]:
    """The YAML documents of ``block`` (split at ``---`` lines), each loaded strictly."""
    docs = []
    for part in _DOC_SEPARATOR.split(block):
        if not part.strip():
            continue
        try:
            docs.append(load_yaml_text(part, SOURCE).data)
        except BadInputError as exc:
            raise DrafterError(f"the drafter's output is not YAML: {exc.one_line()}; nothing written") from None
    return docs


def drafted_items(text: str, seeds: bool = False) -> list[Any]:
    """The drafted items in a drafter's stdout: candidate mappings or (``seeds``) rows.

    Accepts a mapping, a list, several ``---`` documents, any of them inside ``` fences, and
    for seeds also JSON lines, where each line is one item (a line holding a list is one
    item, which the judge rejects, so row numbers stay line numbers; an object with a key
    twice is an UnreadRow). Items that are not mappings are returned as they are (the
    judge rejects them one by one). Raises DrafterError (exit 3) when the text is not YAML
    (syntax, duplicate keys, alias bomb), is prose (a bare scalar), or holds no item.
    """
    items: list[Any] = []
    for block in _blocks(text):
        lines = _json_lines(block) if seeds else None
        if lines is not None:  # JSON lines: each line one row, whatever it holds
            items.extend(lines)
            continue
        for doc in _documents(block):
            if doc is None:
                continue
            if isinstance(doc, list):
                items.extend(doc)
            elif isinstance(doc, dict):
                items.append(doc)
            else:
                first = str(doc).strip().splitlines()[0][:80] if str(doc).strip() else ""
                raise DrafterError(f"the drafter printed text, not YAML {'rows' if seeds else 'mappings'} "
                                   f"(it begins {first!r}); nothing written")
    if not items:
        raise DrafterError("the drafter's output holds no candidate or row; nothing written")
    return items
