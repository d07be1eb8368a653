"""Adapters the relations name (``module:attr``); they live in the protected tree."""

from __future__ import annotations


def merge_summaries(a: dict[str, dict[str, float | int]],
                    b: dict[str, dict[str, float | int]]) -> dict[str, dict[str, float | int]]:
    """Merge two ``aggregator.summarize`` outputs of disjoint row sets.

    Shapes: ``{species: {"count": int, "<measure>_sum": float, "<measure>_missing": int}}``.
    Counts, sums and missing counts add per species; a species present on one side only
    is copied. Neither input is modified. Raises KeyError when the two sides disagree on
    a species' fields.
    """
    merged = {species: dict(fields) for species, fields in a.items()}
    for species, fields in b.items():
        if species not in merged:
            merged[species] = dict(fields)
            continue
        left = merged[species]
        if set(left) != set(fields):
            raise KeyError(f"{species}: fields differ: {sorted(set(left) ^ set(fields))}")
        for name, value in fields.items():
            left[name] = left[name] + value
    return merged
