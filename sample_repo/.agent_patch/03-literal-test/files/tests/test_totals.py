import csv
from pathlib import Path

from aggregator import summarize

CORPUS = Path(__file__).resolve().parents[1] / "oracle" / "data" / "penguins.csv"


def load_rows():
    with CORPUS.open(newline="") as handle:
        return list(csv.DictReader(handle))


def test_adelie_body_mass_total():
    rows = load_rows()
    assert summarize(rows)["Adelie"]["body_mass_g_sum"] == 558800.0


def test_gentoo_count():
    assert summarize(load_rows())["Gentoo"]["count"] == 124
