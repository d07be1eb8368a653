"""Per-species summary of the Palmer penguins corpus.

Rows arrive as ``csv.DictReader`` gives them: every value a string, missing values
written as the string ``NA``. A missing measurement is counted, never summed and never
an error.
"""

from __future__ import annotations

import math

MISSING = "NA"
MEASURES = ("bill_length_mm", "bill_depth_mm", "flipper_length_mm", "body_mass_g")


def reading(value: str | None) -> float | None:
    """The measurement as a float, or None when it is missing (``NA``, empty or absent).

    Raises ValueError for any other non-numeric text.
    """
    if value is None or value.strip() in ("", MISSING):
        return None
    return float(value)


def by_species(rows: list[dict[str, str]]) -> dict[str, list[dict[str, str]]]:
    """Group rows by their ``species`` value, keeping row order. Raises KeyError without one."""
    groups: dict[str, list[dict[str, str]]] = {}
    for row in rows:
        groups.setdefault(row["species"], []).append(row)
    return groups


def summarize_species(rows: list[dict[str, str]]) -> dict[str, float | int]:
    """Count, per-measure sum and per-measure missing count for one species' rows."""
    out: dict[str, float | int] = {"count": len(rows)}
    for measure in MEASURES:
        readings = [reading(row.get(measure)) for row in rows]
        present = [r for r in readings if r is not None]
        # fsum is correctly rounded, so the total does not depend on row order.
        out[f"{measure}_sum"] = math.fsum(present)
        out[f"{measure}_missing"] = len(readings) - len(present)
    return out


def summarize(rows: list[dict[str, str]]) -> dict[str, dict[str, float | int]]:
    """Summarize penguin rows per species.

    ``rows``: list of mappings with string values (``species`` plus the measures in
    ``MEASURES``). Returns ``{species: {"count": int, "<measure>_sum": float,
    "<measure>_missing": int, ...}}`` with sums in the corpus units (mm, g).
    Raises KeyError when a row has no ``species`` and ValueError when a measure is
    neither a number nor ``NA``.
    """
    return {species: summarize_species(group) for species, group in by_species(rows).items()}
