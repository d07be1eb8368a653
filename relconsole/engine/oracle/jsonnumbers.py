"""JSON read from a repository or a replay sheet, where a number can be hostile (issue 18).

Python refuses to turn an integer of more than ``sys.get_int_max_str_digits()`` digits
(4300 by default) into an ``int`` and ``json.loads`` lets that ``ValueError`` out: a
5,000-digit integer in a sheet, ``freezes.json`` or a seeds file ended every command in a
traceback and exit 1 (the reject code). ``loads`` raises ``json.JSONDecodeError`` instead,
positioned at the integer, so every reader that already names file and line for malformed
JSON (SPEC §8, exit 5) names them for this too. ``count_problem`` says why a value where a
count is expected (a replay sheet's runs and misses) is not one: ``-Infinity``, ``NaN``,
``1e400`` and ``2.5`` are not counts.
"""

from __future__ import annotations

import json
import math
import re
import sys
from typing import Any

_NUMBER_TOKEN = r"(?<![\w.\"]){}(?![\w.])"


class _TooLong(ValueError):
    def __init__(self, digits: str):
        super().__init__(digits)
        self.digits = digits


def _int(text: str) -> int:
    limit = sys.get_int_max_str_digits()
    if limit and len(text.lstrip("-")) > limit:
        raise _TooLong(text)
    return int(text)


def loads(text: str | bytes, **kwargs: Any) -> Any:
    """``json.loads(text, **kwargs)``; an integer longer than the interpreter converts raises
    ``json.JSONDecodeError`` (a ValueError) whose ``lineno``/``colno`` point at it. Other
    malformed JSON raises ``json.JSONDecodeError`` as ``json.loads`` does."""
    if isinstance(text, (bytes, bytearray)):
        text = text.decode("utf-8")
    try:
        return json.loads(text, parse_int=_int, **kwargs)
    except _TooLong as exc:
        digits = len(exc.digits.lstrip("-"))
        found = re.search(_NUMBER_TOKEN.format(re.escape(exc.digits)), text)
        raise json.JSONDecodeError(f"an integer of {digits} digits (more than "
                                   f"{sys.get_int_max_str_digits()}: not a number relconsole reads)",
                                   text, found.start() if found else 0) from None


def json_line_problem(exc: json.JSONDecodeError) -> str:
    """Why a line of a JSON Lines file (seeds) is not one JSON value, for a message that also
    names the file and line: json's own words (``Extra data``, ``Expecting value``) and the
    column, then what the file wants. Two values on a line and an unquoted word are the
    usual mistakes: the line ``hello`` or ``a b`` is not JSON, ``"hello"`` is."""
    said = f"not JSON ({exc.msg}, column {exc.colno})"
    if exc.msg.startswith("an integer of"):  # loads' own: the advice below is not about it
        return said
    return f"{said}: one JSON value a line (JSON Lines): quote strings, as \"text\""


def count_problem(value: Any) -> str | None:
    """Why ``value`` is not a count (a non-negative integer; a bool is not one), or None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"a count is a whole number, not {type(value).__name__}"
    if isinstance(value, float) and not math.isfinite(value):
        return f"a count is a finite whole number, not {json.dumps(value)}"
    if isinstance(value, float) or value < 0:
        return f"a count is a whole number of at least 0, not {value}"
    return None


def line_of_key(text: str, *keys: str) -> int | None:
    """The 1-based line of the last of ``keys`` found in order in ``text`` (each searched
    from where the previous one was found), or None when one is missing. Good enough to
    blame a nested value (``"runs"``, then ``"head"``, then ``"misses"``) in a JSON file."""
    position = 0
    for key in keys:
        found = re.compile(rf"{re.escape(json.dumps(key))}\s*:").search(text, position)
        if found is None:
            return None
        position = found.start()
    return text.count("\n", 0, position) + 1
