"""A JSON codec for tabular rows (lists of string-to-string mappings)."""

from __future__ import annotations

import json


def dumps(rows: list[dict[str, str]]) -> str:
    """Encode rows as one JSON array of objects, keys and row order kept.

    Raises TypeError when a row is not a mapping of strings to strings.
    """
    for row in rows:
        if not isinstance(row, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in row.items()):
            raise TypeError(f"not a row of strings: {row!r}")
    return json.dumps([dict(row) for row in rows], ensure_ascii=False)


def loads(text: str) -> list[dict[str, str]]:
    """Decode what ``dumps`` wrote. Raises ValueError when the text is not a JSON array of objects."""
    value = json.loads(text)
    if not isinstance(value, list) or not all(isinstance(row, dict) for row in value):
        raise ValueError("expected a JSON array of objects")
    return value
