"""Delta debugging over corpus rows: the smallest subset on which a relation still misses (SPEC §3, §7).

``ddmin`` first cuts the rows to the shortest prefix that still misses (bisection), then runs
Zeller and Hildebrandt's minimising delta debugging: split the rows into ``n``
parts, keep a part (or the rest without one) on which the miss stays, refine ``n`` when none
does. What it returns is 1-minimal (no single row can go) when it finishes in time, and the
smallest subset found so far when the time runs out; a miss that needs a row count (dropping
any of three probed rows of its shortest prefix makes it go: ``every_row_counts``) stops at that
prefix. Every candidate is judged by the caller
(``misses``: a fresh subject call per relation call, as every run); the same subset is never
judged twice.
"""

from __future__ import annotations

import time
from typing import Callable

Rows = list[int]


def ddmin(rows: Rows, misses: Callable[[Rows], bool], deadline: float,
          clock: Callable[[], float] = time.monotonic) -> tuple[Rows, int]:
    """``(smallest rows found, candidates judged)``: a subset of ``rows`` (indexes, in their
    order) on which ``misses`` is still true, 1-minimal unless ``clock()`` passed ``deadline``
    (seconds, the clock's own) first. ``rows`` itself is taken to miss and is not judged."""
    judged: dict[tuple, bool] = {}

    def miss(candidate: Rows) -> bool:
        key = tuple(candidate)
        if key not in judged:
            judged[key] = bool(candidate) and misses(candidate)
        return judged[key]

    current, parts = shortest_prefix(list(rows), miss, deadline, clock), 2
    if len(current) > SIZE_PROBE_ROWS and every_row_counts(current, miss):
        return current, len(judged)
    while len(current) >= 2 and clock() < deadline:
        chunks = _split(current, parts)
        smaller = next((c for c in chunks if clock() < deadline and miss(c)), None)
        if smaller is not None:
            current, parts = smaller, 2
            continue
        rest = next((r for r in (_without(chunks, i) for i in range(len(chunks)))
                     if len(chunks) > 2 and clock() < deadline and miss(r)), None)
        if rest is not None:
            current, parts = rest, max(parts - 1, 2)
            continue
        if parts >= len(current):
            break
        parts = min(parts * 2, len(current))
    return current, len(judged)


def shortest_prefix(rows: Rows, miss: Callable[[Rows], bool], deadline: float,
                    clock: Callable[[], float] = time.monotonic) -> Rows:
    """The shortest prefix of ``rows`` found to miss by bisection (``rows`` itself misses): a
    miss that needs a size (a path taken above some row count) is cut to just past it in
    log2(n) judgements, where delta debugging would take one per row beyond it."""
    low, high = 0, len(rows)  # rows[:low] not known to miss, rows[:high] misses
    while high - low > 1 and clock() < deadline:
        middle = (low + high) // 2
        if miss(rows[:middle]):
            high = middle
        else:
            low = middle
    return rows[:high]


SIZE_PROBE_ROWS = 64  # a prefix longer than this is probed for a miss that needs a size before ddmin


def every_row_counts(prefix: Rows, miss: Callable[[Rows], bool]) -> bool:
    """Whether dropping any one of three rows of ``prefix`` (the shortest missing prefix: its
    last row is known to count) makes the miss go: the first row, and the ones at a third and two
    thirds. Then the miss needs the prefix's size (a path taken above some row count), and
    delta debugging would judge one smaller candidate after another, every one holding, until
    its time ran out (rows {0, 4000} of a 4001-row prefix still pass this probe: a middle row
    dropped keeps them both)."""
    return not any(miss(prefix[:k] + prefix[k + 1:]) for k in (0, len(prefix) // 3, 2 * len(prefix) // 3))


def _split(rows: Rows, parts: int) -> list[Rows]:
    """``rows`` in ``parts`` consecutive chunks of near-equal size (none empty)."""
    size, extra = divmod(len(rows), parts)
    out, start = [], 0
    for index in range(parts):
        end = start + size + (1 if index < extra else 0)
        if end > start:
            out.append(rows[start:end])
        start = end
    return out


def _without(chunks: list[Rows], index: int) -> Rows:
    return [row for n, chunk in enumerate(chunks) if n != index for row in chunk]
