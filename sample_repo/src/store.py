"""An in-memory ingest store for the Seattle weather corpus, upserting by day.

The corpus has one row per calendar day, keyed by its ``date`` column (``2012/01/01``).
Ingesting a row for a day already present replaces it, so replaying a batch is harmless.
"""

from __future__ import annotations

KEY = "date"


class WeatherStore:
    """Rows by day. ``ingest`` upserts, ``projection`` is the current state."""

    def __init__(self) -> None:
        self._rows: dict[str, dict[str, str]] = {}

    def reset(self) -> None:
        """Forget every row."""
        self._rows.clear()

    def ingest(self, rows: list[dict[str, str]]) -> int:
        """Upsert ``rows`` (mappings with a ``date`` key) and return how many were given.

        Raises KeyError for a row without ``date``; nothing is written in that case.
        """
        batch = {row[KEY]: dict(row) for row in rows}
        self._rows.update(batch)
        return len(rows)

    def projection(self) -> dict[str, dict[str, str]]:
        """A copy of the state: ``{date: row}``, plain JSON-able values."""
        return {key: dict(row) for key, row in self._rows.items()}


def make_store() -> WeatherStore:
    """A new, empty store (the factory a replay relation calls)."""
    return WeatherStore()
