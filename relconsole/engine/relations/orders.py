"""The orders a permutation relation hands the subject its rows in, drawn from the run's seed (SPEC §3, §7).

``_order`` draws a random order; ``structured_orders`` the orders production is likely to
feed (rows sorted by a drawn column, or grouped by their most repeated columns), where a
subject that is only right on a shuffled input shows.
"""

from __future__ import annotations

import json
import math
import random
from typing import Any


def _order(length: int, rng: random.Random) -> list[int]:
    """A random order of ``length`` indexes drawn from ``rng``: the indexes sorted by one
    random 30-bit key each, in C. A key under 2**30 is one digit of a Python int, which the
    sort compares fastest (0.25 s for 336,776 rows, against 0.37 s with 64-bit keys and
    0.3-0.5 s for ``rng.shuffle``); the few indexes that draw one key keep their order."""
    keys = list(map(((1 << 30) - 1).__and__, memoryview(rng.randbytes(4 * length)).cast("I")))
    return sorted(range(length), key=keys.__getitem__)


def _cell_key(value: Any) -> tuple:
    """A sort key any two cells share an order under: a number (or text that reads as a
    finite one) first, by value; then text; then anything else by its JSON text."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return (0, float(value), "")
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            return (1, 0.0, value)
        return (0, number, value) if math.isfinite(number) else (1, 0.0, value)
    return (2, 0.0, json.dumps(value, sort_keys=True, default=str))


def _sorted_order(rows: list, rng: random.Random) -> tuple[list[int], str]:
    """An order production data often comes in and a shuffle never draws: the rows sorted by
    one drawn column (the rows themselves, when they are not mappings), up or down, rows of
    one value grouped in a random order. Returns (order, words: "sorted by fare, descending").
    A subject right only on shuffled rows (a fast path for sorted or grouped input that is
    wrong, a running state that a run of one key breaks) is compared with one."""
    order = _order(len(rows), rng)
    columns = _columns(rows)
    column = rng.choice(columns) if columns else None
    descending = rng.random() < 0.5
    keys = _sort_keys(_cells(rows, column))
    order.sort(key=keys.__getitem__, reverse=descending)  # stable: ties keep their random order
    by = f"by {column}" if column is not None else "by value"
    return order, f"sorted {by}, {'descending' if descending else 'ascending'}"


def _columns(rows: list) -> list[str]:
    return sorted({key for row in rows[:64] if isinstance(row, dict) for key in row if isinstance(key, str)})


_NO_CELL = object()  # a row that is not a mapping, in a column


def _cells(rows: list, column: str | None) -> list:
    if column is None:
        return rows
    get = dict.get
    return [get(row, column) if type(row) is dict else _NO_CELL for row in rows]


def _sort_keys(cells: list) -> list:
    """Sort keys of ``cells``, in C where it can: the numbers when every cell reads as one, the
    text itself when every cell is text (a column of 300,000 cells in 30 ms), else
    ``_cell_key`` of each (mixed types)."""
    try:
        return list(map(float, cells))
    except (TypeError, ValueError):
        pass
    if _STR_ONLY.issuperset(map(type, cells)):
        return cells
    return [_cell_key(c) if c is not _NO_CELL else (3, 0.0, "") for c in cells]


_STR_ONLY = frozenset({str})


_PLAIN_CELLS = frozenset({str, int, float, bool, type(None), object})  # object: _NO_CELL


def _group_keys(cells: list) -> list:
    """Cells as keys of a dict: the cells themselves when all are scalars (checked in C), else
    each non-scalar as its JSON text."""
    if _PLAIN_CELLS.issuperset(map(type, cells)):
        return cells
    return [c if type(c) in _PLAIN_CELLS else json.dumps(c, sort_keys=True, default=str) for c in cells]


def _grouped_order(rows: list, keys: list, column: str, rng: random.Random) -> tuple[list[int], str]:
    """The rows grouped by ``column`` (``keys``: its cells as dict keys), the groups in a drawn
    order, the rows of a group in a random one: data read per category (a file per species, a
    query per key) comes so."""
    rank = dict.fromkeys(keys)
    for key, draw in zip(rank, _order(len(rank), rng)):  # one drawn place per group
        rank[key] = draw
    order = _order(len(rows), rng)
    place = [rank[key] for key in keys]
    order.sort(key=place.__getitem__)
    return order, f"grouped by {column}"


GROUP_SAMPLE = 2000  # rows a column's distinct values are counted on


def structured_orders(rows: list, rng: random.Random, wanted: int) -> list[tuple[list[int], str]]:
    """Up to ``wanted`` orders of the kinds production data comes in: one sorted by a drawn
    column, then grouped by the most repeated columns (fewest distinct values in a drawn
    sample of rows, more than one; ties drawn), one order per column."""
    if wanted <= 0 or len(rows) < 3:
        return []
    out = [_sorted_order(rows, rng)]
    sample = [rows[i] for i in sorted(rng.sample(range(len(rows)), min(len(rows), GROUP_SAMPLE)))]
    repeated = []
    for column in _columns(rows):
        distinct = len(set(_group_keys(_cells(sample, column))))
        if 1 < distinct < len(sample):
            repeated.append((distinct, rng.random(), column))
    for _, _, column in sorted(repeated)[:wanted - 1]:
        out.append(_grouped_order(rows, _group_keys(_cells(rows, column)), column, rng))
    return out
