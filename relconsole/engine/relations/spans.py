"""Changed statements as line spans, and whether a run ran one (SPEC §3 covered means exercised).

A changed statement is ``(first, last)`` (its inclusive lines) or, when its effect happens in a
call, ``(first, last, evidence)``: evidence entries are a line, or ``(line, code name)`` for a
line that counts only in that code (``gate.calltime``). Shared by the gate's unexercised gaps
and the judge's drawing, which keeps drawing while one stays unreached.
"""

from __future__ import annotations


def entry_line(entry) -> int:
    """The line of an evidence entry (a line number or ``(line, code name)``)."""
    return entry if isinstance(entry, int) else entry[0]


def span_ran(span, ran: set[int]) -> bool:
    """Whether a changed statement ran: a line of it ran, and for one whose effect happens in a
    call (``(first, last, evidence)``) a line of its evidence too."""
    if not any(n in ran for n in range(span[0], span[1] + 1)):
        return False
    return len(span) < 3 or any(entry_line(n) in ran for n in span[2])
