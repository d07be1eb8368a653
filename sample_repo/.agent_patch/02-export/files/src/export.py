"""Export a species summary as CSV text for the nightly report."""

from __future__ import annotations

import csv
import io


def to_csv(summary: dict[str, dict[str, float | int]]) -> str:
    """CSV text with a ``species`` column and one column per summary field.

    ``summary`` is what ``aggregator.summarize`` returns; species are written in
    sorted order, fields in the order of the first species. An empty summary gives
    just the ``species`` header.
    """
    species = sorted(summary)
    fields = list(summary[species[0]]) if species else []
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["species", *fields])
    for name in species:
        writer.writerow([name, *(summary[name].get(field, "") for field in fields)])
    return out.getvalue()
