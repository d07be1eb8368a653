"""Untrusted text made safe to show: control characters become visible escapes.

Paths, drafted candidates and failure messages may carry terminal escape sequences;
printed raw they would recolour or retitle the reviewer's terminal. The console also
never passes such text to Rich markup (it uses ``rich.text.Text``).
"""

from __future__ import annotations

import re

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def literal(text: object) -> str:
    """``text`` with C0/C1 control characters (except tab and newline) as ``\\xNN``."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", str(text))


def one_line(text: object) -> str:
    """``literal(text)`` with newlines and tabs shown as ``\\n`` / ``\\t`` (for a cell)."""
    return literal(text).replace("\n", "\\n").replace("\t", "\\t")
