"""Untrusted text made safe to show: control characters become visible escapes.

Paths, drafted candidates and failure messages may carry terminal escape sequences;
printed raw they would recolour or retitle the reviewer's terminal. The console also
never passes such text to Rich markup (it uses ``rich.text.Text``).
"""

from __future__ import annotations

import re

# C0/C1 controls, line and paragraph separators, and bidirectional overrides and isolates
# (which can make a path or a candidate read differently from what it is).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def literal(text: object) -> str:
    """``text`` with control, separator and bidi characters (except tab, newline) escaped.

    ``\\xNN`` for the C0/C1 range, ``\\uNNNN`` above it.
    """
    return _CONTROL.sub(_escape, str(text))


def _escape(match: re.Match) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def one_line(text: object) -> str:
    """``literal(text)`` with newlines and tabs shown as ``\\n`` / ``\\t`` (for a cell)."""
    return literal(text).replace("\n", "\\n").replace("\t", "\\t")
