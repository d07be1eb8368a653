"""Hypothesis strategies for one input row, built from a relation's input schema (SPEC §3).

The schema's vocabulary is five types (``str``, ``int``, ``float``, ``bool``, ``date``) with
``min``/``max``/``choices``/``optional``; this maps each to a strategy of its own rather than
going through JSON Schema (hypothesis-jsonschema): a ``date`` there is only a string pattern,
so most drawn "dates" were not dates (``2013-19-47``) and an honest subject that parses one
would miss on input the schema never meant; here a date is a calendar date written ISO.

Every drawn row is JSON: text without lone surrogates, finite floats, integers within
±2**53 when the schema gives no bound (what a JSON reader in any language keeps exact).
``minimal_row`` is where Hypothesis shrinks each field to, so a shrunk miss can say which
fields it needs (those left elsewhere).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

JSON_SAFE = 2 ** 53  # integers a JSON reader anywhere keeps exact: the bound of an unbounded int field
TEXT_SIZE = 24  # characters of a drawn str field at most


def field_spec(spec: Any) -> dict:
    """A field's schema entry as a mapping: ``"int"`` -> ``{"type": "int"}``."""
    return {"type": spec} if isinstance(spec, str) else dict(spec)


def field_strategy(spec: Any, seen: list | tuple = (), today: dt.date | None = None):
    """The strategy of one field: its type's own (``type_strategy``), and for text and dates,
    beside it, values like the ones ``seen`` in the relation's seeds (``like_seen``) and days
    around ``today``. A subject wrong only on realistic values (a salt shaped like
    a flag name, a day of this year) is reached, which arbitrary text and days of years 1 to
    9999 almost never are (red team, issue 37). The type's own comes first: Hypothesis shrinks
    towards it, so a field the miss does not need still ends at its simplest value."""
    from hypothesis import strategies as st
    spec = field_spec(spec)
    own = type_strategy(spec)
    if spec["type"] not in ("str", "date") or "choices" in spec or "pattern" in spec:
        # numbers keep their own range alone: Hypothesis spreads it, and draws pulled towards the
        # seeds (whose values a schema's bounds usually go past) reached a fault at 50..59 percent
        # half as often (acceptance shape c, 100 draws)
        return own
    alike = like_seen(spec, [v for v in seen if _fits(spec, v)], today)
    return st.one_of(own, *alike) if alike else own


def like_seen(spec: dict, seen: list, today: dt.date | None) -> list:
    """Strategies of values like ``seen`` (a text or date field's values in the seeds, each
    valid): the seen values themselves; text of the same
    shape (runs of lower case, upper case and digits redrawn, other characters kept: "dark-mode"
    gives "bq-xzyt"); days within a year of them, and within five years of ``today``."""
    from hypothesis import strategies as st
    kind, out = spec["type"], []
    if seen:
        out.append(st.sampled_from(seen))
    if kind == "str" and seen:
        out.append(st.sampled_from(sorted({_shape(v) for v in seen})).flatmap(
            lambda shape: st.from_regex(shape, fullmatch=True)))
    elif kind == "date":
        near = [st.integers(-366, 366).map(lambda n, day=day: _day(day, n))
                for day in [dt.date.fromisoformat(v) for v in seen][:20]]
        around_today = [st.integers(-5 * 366, 5 * 366).map(lambda n: _day(today, n))] if today else []
        out += around_today + ([st.one_of(*near)] if near else [])  # today's span weighs as all the seeds' together
    return out


def type_strategy(spec: dict):
    """The strategy of a field's type alone (see the module docstring). Raises ValueError for
    an unknown type (a catalog the loader accepted never has one)."""
    from hypothesis import strategies as st
    if "choices" in spec:
        return st.sampled_from(list(spec["choices"]))
    kind, low, high = spec["type"], spec.get("min"), spec.get("max")
    if kind == "int":
        low = -JSON_SAFE if low is None else _ceil(low)
        high = JSON_SAFE if high is None else _floor(high)
        return _small_first(st, low, high)
    if kind == "float":
        return st.floats(low, high, allow_nan=False, allow_infinity=False)
    if kind == "bool":
        return st.booleans()
    if kind == "str" and "pattern" in spec:
        return st.from_regex(spec["pattern"], fullmatch=True).filter(_no_surrogate)
    if kind == "str":
        return st.text(st.characters(exclude_categories=("Cs",)), max_size=TEXT_SIZE)
    if kind == "date":
        return st.dates().map(dt.date.isoformat)
    raise ValueError(f"no strategy for a field of type {kind!r}")


def row_strategy(schema: dict, examples: list | tuple = (), today: dt.date | None = None):
    """A strategy of rows (dicts) with every required field of ``schema`` and, drawn, each
    optional one; ``examples``: the relation's seed rows, whose values each field's draws
    resemble too (``field_strategy``), ``today``: the review's day."""
    from hypothesis import strategies as st

    def strategy(name: str, spec: Any):
        seen = [row[name] for row in examples if isinstance(row, dict) and name in row]
        return field_strategy(spec, seen, today)
    required = {name: strategy(name, spec) for name, spec in schema.items()
                if not (isinstance(spec, dict) and spec.get("optional") is True)}
    optional = {name: strategy(name, spec) for name, spec in schema.items() if name not in required}
    return st.fixed_dictionaries(required, optional=optional)


def _fits(spec: dict, value: Any) -> bool:
    """Whether a seed's ``value`` is one the field's own type takes (a bad seed row is not
    drawn from: the seeds check reports it)."""
    kind = spec["type"]
    if kind == "int":
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif kind == "float":
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    elif kind == "str":
        return isinstance(value, str) and _no_surrogate(value)
    elif kind == "date":
        try:
            return isinstance(value, str) and dt.date.fromisoformat(value).isoformat() == value
        except ValueError:
            return False
    else:
        return False
    return ok and (spec.get("min") is None or value >= spec["min"]) and (spec.get("max") is None or value <= spec["max"])


def _shape(text: str) -> str:
    """A regular expression of ``text``'s shape: each run of lower case letters, upper case
    letters or digits any run of the same class (1 to twice its length), every other character
    itself."""
    import re
    out = []
    for run in re.finditer(r"[a-z]+|[A-Z]+|[0-9]+|.", text, re.S):
        piece = run.group()
        cls = "a-z" if piece.islower() else "A-Z" if piece.isupper() else "0-9" if piece.isdigit() else None
        out.append(f"[{cls}]{{1,{2 * len(piece)}}}" if cls else re.escape(piece))
    return "".join(out)


def _day(day: dt.date, offset: int) -> str:
    try:
        return (day + dt.timedelta(days=offset)).isoformat()
    except OverflowError:
        return day.isoformat()


SMALL = 100  # the width of the small range half the draws of a wide int field come from


def _small_first(st, low: int, high: int):
    """Integers in [low, high]; for a range wider than 10 * SMALL, half the draws from the
    SMALL values nearest zero within it (most faults show on small inputs, and a size field
    drawn near its 100,000 bound makes every call as slow as production's largest), half from
    the whole range, so the large values are still reached."""
    if high - low <= 10 * SMALL:
        return st.integers(low, high)
    near = min(max(0, low), high - SMALL)
    return st.one_of(st.integers(near, near + SMALL), st.integers(low, high))


def minimal_row(schema: dict) -> dict:
    """Each field's value where Hypothesis's shrinker leaves it when the field does not
    matter: 0 (or the bound nearest it), "", False, 2000-01-01, the first choice."""
    return {name: _minimal(field_spec(spec)) for name, spec in schema.items()}


def _minimal(spec: dict) -> Any:
    if "choices" in spec:
        return list(spec["choices"])[0] if spec["choices"] else None
    kind = spec["type"]
    if kind in ("int", "float"):
        zero = 0 if kind == "int" else 0.0
        low, high = spec.get("min"), spec.get("max")
        if low is not None and low > 0:
            return _ceil(low) if kind == "int" else float(low)
        if high is not None and high < 0:
            return _floor(high) if kind == "int" else float(high)
        return zero
    if kind == "str" and "pattern" in spec:
        return None  # no one simplest text matches every pattern: a patterned field always shows
    return {"bool": False, "str": "", "date": "2000-01-01"}.get(kind)


def fields_that_matter(row: Any, schema: dict) -> list[str]:
    """The fields of a shrunk ``row`` not at their minimal value (``minimal_row``): those the
    miss needs, in schema order. [] for a row that is not a mapping."""
    if not isinstance(row, dict):
        return []
    floor = minimal_row(schema)
    return [name for name in schema if name in row and row[name] != floor.get(name)]


def _no_surrogate(text: str) -> bool:
    return not any("\ud800" <= char <= "\udfff" for char in text)


def _ceil(value: float) -> int:
    whole = int(value)
    return whole + 1 if whole < value else whole


def _floor(value: float) -> int:
    whole = int(value)
    return whole - 1 if whole > value else whole
