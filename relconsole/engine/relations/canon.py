"""Canonical form and comparison of relation outputs (SPEC §3 ``compare``, ``quantum``).

``exact``: values must be equal as they are (floats to the last bit).
``canon``: mappings by key, numbers rounded to ``quantum``, sequences as bags only
when the relation says output order is free.
``tolerance``: numbers may differ by at most ``quantum``.
A comparison returns the paths of the disagreeing keys so the console can mark them.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from decimal import ROUND_HALF_EVEN, Decimal, getcontext
from typing import Any

from relconsole.engine.relations.subject.wire import Record

Path = tuple


def canonical(value: Any, compare: str = "canon", quantum: float | None = None,
              order_free: bool = False) -> Any:
    """A JSON-able canonical form of ``value``.

    Mappings get sorted string keys; a tuple, set, bytes, Decimal, date, dataclass, named
    tuple or Enum becomes a mapping of one key that names its type (so a tuple never equals
    a list, nor a set a list); numbers are rounded
    to ``quantum`` under ``canon``; with ``order_free`` every sequence is sorted by its
    elements' canonical JSON (a bag). Idempotent: canonical(canonical(x)) == canonical(x).
    Raises NotComparable for any other type (SPEC §7: compare or refuse, never by text).
    """
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return _number(value, compare, quantum)
    if isinstance(value, dict):
        return {name: canonical(v, compare, quantum, order_free)
                for name, v in sorted(_named_items(value), key=lambda kv: kv[0])}
    if isinstance(value, list):
        items = [canonical(v, compare, quantum, order_free) for v in value]
        return sorted(items, key=_sort_key) if order_free else items
    if isinstance(value, (set, frozenset)):
        items = [canonical(v, compare, quantum, order_free) for v in value]
        return {f"({type(value).__name__})": sorted(items, key=_sort_key)}
    if isinstance(value, tuple):
        items = [canonical(v, compare, quantum, order_free) for v in value]
        return {"(tuple)": sorted(items, key=_sort_key) if order_free else items}
    return _tagged(value, compare, quantum, order_free)


class NotComparable(TypeError):
    """A value of a type the canonical form does not know (``args[0]``: its module.Qualname):
    the relation needs a ``canon:`` adapter that maps it to data (SPEC §7), never its text."""


def _tagged(value: Any, compare: str, quantum: float | None, order_free: bool) -> Any:
    """The canonical form of a wire type other than JSON's: one key naming the type."""
    if isinstance(value, bytes):
        return {"(bytes)": value.hex()}
    if isinstance(value, Decimal):
        return {"(Decimal)": str(value)}
    if isinstance(value, (dt.date, dt.datetime)):
        return {f"({type(value).__name__})": value.isoformat()}
    if isinstance(value, Record):
        if value.kind == "enum":  # its name and its value: a member made per call may carry any value
            return {f"(enum {value.type})": [value.value[0], canonical(value.value[1], compare, quantum, order_free)]}
        return {f"({value.kind} {value.type})": canonical(value.value, compare, quantum, order_free)}
    raise NotComparable(f"{type(value).__module__}.{type(value).__qualname__}")


def _named_items(value: dict) -> list[tuple[str, Any]]:
    """Items with string keys; a non-string key whose text another key already has
    (``1`` beside ``"1"``) is named with its type, so no value is lost and the result
    does not depend on insertion order."""
    texts = [str(k) for k in value]
    return [(str(k) if isinstance(k, str) or texts.count(str(k)) == 1
             else f"{str(k)} ({type(k).__name__})", v) for k, v in value.items()]


def _number(value: float, compare: str, quantum: float | None) -> float:
    if compare != "canon" or not quantum or not math.isfinite(value):
        return value
    step = Decimal(repr(quantum))
    ratio = Decimal(repr(value)) / step
    if ratio.adjusted() >= getcontext().prec - 1:
        return value  # the float is far coarser than the quantum: it is on the grid already
    rounded = ratio.quantize(Decimal(1), rounding=ROUND_HALF_EVEN) * step
    return float(rounded)


def _sort_key(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=repr)


def differences(left: Any, right: Any, compare: str = "canon", quantum: float | None = None,
                path: Path = ()) -> list[Path]:
    """Paths where two canonical values disagree; [] when they are equal under ``compare``.

    A path is a tuple of keys and indexes; () means the values differ at the top.
    """
    if isinstance(left, dict) and isinstance(right, dict):
        out: list[Path] = []
        for key in sorted(set(left) | set(right), key=str):
            if key not in left or key not in right:
                out.append(path + (key,))
            else:
                out.extend(differences(left[key], right[key], compare, quantum, path + (key,)))
        return out
    if isinstance(left, list) and isinstance(right, list):
        if len(left) != len(right):
            return [path]
        out = []
        for index, (a, b) in enumerate(zip(left, right)):
            out.extend(differences(a, b, compare, quantum, path + (index,)))
        return out
    if _numbers(left, right):
        if compare == "exact" and (type(left) is not type(right) or _signed_zero(left) != _signed_zero(right)):
            return [path]  # exact: 1 is not 1.0 and -0.0 is not 0.0 (bit-identical, as the catalog says)
        if left == right or (_isnan(left) and _isnan(right)):
            return []
        if compare == "tolerance" and quantum is not None:
            try:
                return [] if abs(left - right) <= quantum else [path]
            except OverflowError:  # an int too large for a float is no near neighbour
                return [path]
        return [path]
    return [] if left == right and type(left) is type(right) else [path]


def _signed_zero(value: Any) -> bool:
    return isinstance(value, float) and value == 0.0 and math.copysign(1.0, value) < 0


def _isnan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


def _numbers(*values: Any) -> bool:
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)


def path_text(path: Path) -> str:
    """A disagreeing key path as a reviewer reads it: ``Adelie.bill_length_mm_sum``."""
    return ".".join(str(p) for p in path) if path else "(whole output)"
