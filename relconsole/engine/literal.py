"""Untrusted text made safe to show: control characters become visible escapes.

Paths, drafted candidates and failure messages may carry terminal escape sequences;
printed raw they would recolour or retitle the reviewer's terminal. The console also
never passes such text to Rich markup (it uses ``rich.text.Text``).
"""

from __future__ import annotations

import re

# C0/C1 controls, zero-width characters and direction marks, line and paragraph separators,
# bidirectional overrides and isolates (which can make a path or a candidate read
# differently from what it is), a BOM, and lone surrogates: a path's bytes that are not
# UTF-8 arrive as U+DC80..U+DCFF (surrogateescape) and would reach the terminal raw.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028\u2029\u202a-\u202e"
                      r"\u2066-\u2069\ufeff\ud800-\udfff]")


def literal(text: object) -> str:
    """``text`` with control, separator and bidi characters (except tab, newline) escaped.

    ``\\xNN`` for the C0/C1 range and for a byte that was not UTF-8, ``\\uNNNN`` above it.
    """
    return _CONTROL.sub(_escape, str(text))


def _escape(match: re.Match) -> str:
    code = ord(match.group())
    if 0xDC80 <= code <= 0xDCFF:  # an undecodable byte, kept by surrogateescape
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def one_line(text: object) -> str:
    """``literal(text)`` with newlines and tabs shown as ``\\n`` / ``\\t`` (for a cell)."""
    return literal(text).replace("\n", "\\n").replace("\t", "\\t")


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """``"1 decision"``, ``"0 decisions"``, ``"3 entries"``: ``count`` and the noun in the
    number it takes (``plural`` when it is not ``noun + "s"``). Words are the caller's own,
    never untrusted text; ``count`` is printed as ``int(count)``, so it is digits whatever was
    passed (TypeError/ValueError for what is not a number)."""
    count = int(count)
    return f"{count} {noun if count == 1 else plural or noun + 's'}"
