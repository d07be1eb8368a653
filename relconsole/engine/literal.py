"""Untrusted text made safe to show: control and format characters become visible escapes.

Paths, drafted candidates and failure messages may carry terminal escape sequences;
printed raw they would recolour or retitle the reviewer's terminal. Invisible format
characters (bidi overrides and isolates, zero-width joiners, a word joiner, a soft hyphen,
a BOM: Unicode category Cf) make a path or an id read as a name it is not. The console also
never passes such text to Rich markup (it uses ``rich.text.Text``).
"""

from __future__ import annotations

import re
import unicodedata

# Text with none of these prints as it is (checked in C by str.isprintable, which is False
# for every category escaped here): the common case costs no per-character work.
_ESCAPED = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})
# Characters that may need escaping: every one but tab, newline and printable ASCII; each
# found is escaped when its category is in _ESCAPED (others, as U+00A0, stay as they are).
_SUSPECT = re.compile(r"[^\t\n\x20-\x7e]")


def literal(text: object) -> str:
    """``text`` with control, format, separator and surrogate characters (except tab and
    newline) escaped: Unicode categories Cc (C0, DEL, C1), Cf (bidi marks and isolates,
    U+200B..U+200F, U+2060.., soft hyphen, BOM, tags...), Zl and Zp (U+2028, U+2029) and
    Cs (lone surrogates: a path's bytes that are not UTF-8 arrive as U+DC80..U+DCFF,
    surrogateescape).

    ``\\xNN`` for a C0 character, DEL and a byte that was not UTF-8; ``\\uNNNN`` for other
    characters of the Basic Multilingual Plane (C1 too, so that U+0085 and the byte 0x85
    print differently), ``\\UNNNNNNNN`` above it. Every escape is printable ASCII, so the
    result is its own ``literal``; two texts without a backslash never give the same result.
    """
    text = str(text)
    if text.isprintable() or text.replace("\n", "").replace("\t", "").isprintable():
        return text
    return _SUSPECT.sub(_escape, text)


def _escape(match: re.Match) -> str:
    char = match.group()
    if unicodedata.category(char) not in _ESCAPED:
        return char
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:  # an undecodable byte, kept by surrogateescape
        return f"\\x{code - 0xDC00:02x}"
    if code < 0x80:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


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
