"""Per-species summary of the Palmer penguins corpus.

Rows arrive as ``csv.DictReader`` gives them: every value a string, missing values
written as the string ``NA``. A missing measurement is counted, never summed and never
an error. Rows are summed in chunks on a thread pool.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

MISSING = "NA"
MEASURES = ("bill_length_mm", "bill_depth_mm", "flipper_length_mm", "body_mass_g")
CHUNK_ROWS = 32
WORKERS = 4


def reading(value: str | None) -> float | None:
    """The measurement as a float, or None when it is missing (``NA``, empty or absent).

    Raises ValueError for any other non-numeric text.
    """
    if value is None or value.strip() in ("", MISSING):
        return None
    return float(value)


def chunks(rows: list[dict[str, str]], size: int = CHUNK_ROWS) -> list[list[dict[str, str]]]:
    """Consecutive slices of at most ``size`` rows."""
    return [rows[i:i + size] for i in range(0, len(rows), size)]


def partial(rows: list[dict[str, str]]) -> dict[str, dict[str, float | int]]:
    """The summary of one chunk: ``{species: {"count", "<measure>_sum", "<measure>_missing"}}``."""
    groups: dict[str, list[dict[str, str]]] = {}
    for row in rows:
        groups.setdefault(row["species"], []).append(row)
    out: dict[str, dict[str, float | int]] = {}
    for species, group in groups.items():
        acc: dict[str, float | int] = {"count": len(group)}
        for measure in MEASURES:
            readings = [reading(row.get(measure)) for row in group]
            present = [r for r in readings if r is not None]
            acc[f"{measure}_sum"] = sum(present, 0.0)
            acc[f"{measure}_missing"] = len(readings) - len(present)
        out[species] = acc
    return out


def combine(parts: list[dict[str, dict[str, float | int]]]) -> dict[str, dict[str, float | int]]:
    """Add chunk summaries field by field, in chunk order."""
    total: dict[str, dict[str, float | int]] = {}
    for part in parts:
        for species, fields in part.items():
            acc = total.setdefault(species, {name: 0 for name in fields})
            for name, value in fields.items():
                acc[name] = acc[name] + value
    return total


def summarize(rows: list[dict[str, str]]) -> dict[str, dict[str, float | int]]:
    """Summarize penguin rows per species.

    ``rows``: list of mappings with string values (``species`` plus the measures in
    ``MEASURES``). Returns ``{species: {"count": int, "<measure>_sum": float,
    "<measure>_missing": int, ...}}`` with sums in the corpus units (mm, g).
    Raises KeyError when a row has no ``species`` and ValueError when a measure is
    neither a number nor ``NA``.
    """
    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        parts = list(pool.map(partial, chunks(rows)))
    return combine(parts)
