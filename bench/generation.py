"""What drawn inputs and shrinking cost (issue 37), measured against the same runs without them.

Prints, from one run on this machine:
  sample    every relation of the sample repository on its base (``main``: everything holds, so
            every relation draws its inputs), through ``run_review`` as ``relconsole run --all``
            runs them: with drawn inputs (the catalog's defaults: 100 rows from the schema for
            rollout.monotonic, 4 subsamples and scaled copies for each corpus relation) against
            the same runs with drawing off (anchor), interleaved, ``--repeat`` rounds; the ratio.
  flights   the same on the flights corpus (336,776 rows, eight relations; ``../shared/data``
            or ``--flights FILE``), with ``--flights-repeat`` rounds; skipped without the corpus.
  shrink    a miss on flights (a running mean, exact only in the corpus's own order) found by
            ``flights.carrier_order`` and shrunk by delta debugging over the corpus's rows: the
            run's seconds with shrinking against the same run without it (anchor), the rows the
            miss was shrunk to and the candidates judged.

Budgets (the defaults a repository can change in ``[tool.relconsole]``): generate_seconds 2,
shrink_seconds 30, generate_rows 12000; the figures say what they cost where they apply.

Usage: python -m bench.generation [--repeat 3] [--flights-repeat 1] [--flights FILE] [--skip-flights]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.timing import interleaved, round_ratios, timed  # noqa: E402
from relconsole.engine import demo  # noqa: E402
from relconsole.engine.gate import runplans  # noqa: E402
from relconsole.engine.gate.review import load_review  # noqa: E402
from relconsole.engine.gate.reviewrun import run_review  # noqa: E402

SHARED_FLIGHTS = ROOT.parent / "shared" / "data" / "flights.csv.gz"
RUNNING_MEAN = '''
def _running_mean(values):
    mean = 0.0
    for n, value in enumerate(values, 1):
        mean += (value - mean) / n
    return mean
'''


def run_all_relations(repo: Path, drawing: bool, shrink: bool = True) -> list:
    """Every relation of ``repo``'s catalog run once on HEAD, as ``run --all`` does; with
    ``drawing`` False no input is drawn (and, with ``shrink`` False, no miss shrunk)."""
    settings = runplans.generate_settings
    if not drawing:
        runplans.generate_settings = lambda relation, layout: dict(settings(relation, layout), count=0,
                                                                   shrink=shrink)
    try:
        review = load_review(repo)
        try:
            return run_review(review, [r.id for r in review.relations])
        finally:
            review.close()
    finally:
        runplans.generate_settings = settings


def compare(name: str, repo: Path, repeat: int) -> None:
    """Print the drawn/undrawn medians and their ratio for ``repo``."""
    runs = interleaved({"undrawn": lambda: run_all_relations(repo, False),
                        "drawn": lambda: run_all_relations(repo, True)}, repeat, warmup=1)
    ratios = round_ratios(runs, "drawn", "undrawn")
    print(f"{name}: all relations without drawn inputs (anchor) {statistics.median(runs['undrawn']):.2f} s, "
          f"with them {statistics.median(runs['drawn']):.2f} s; ratio {statistics.median(ratios):.2f}x "
          f"(rounds: {', '.join(f'{r:.2f}' for r in ratios)})")
    results = run_all_relations(repo, True)
    for result in results:
        drawn = (result.first.drawn if result.first else None) or {}
        if drawn:
            print(f"    {result.relation_id}: {drawn.get('tried')} inputs drawn ({drawn.get('what')}), "
                  f"{result.first.seconds:.2f} s")


def flights_miss(repo: Path) -> None:
    """Commit a running mean (order-dependent) into the flights patch branch."""
    from bench.gitrepo import commit_all
    path = repo / "src" / "summary.py"
    text = path.read_text()
    text = text.replace("import math\n", "import math\n" + RUNNING_MEAN, 1)
    text = text.replace('"arr_delay_mean": delay_sum / len(delays[group]) if delays[group] else None',
                        '"arr_delay_mean": _running_mean(delays[group]) if delays[group] else None')
    path.write_text(text)
    commit_all(repo, "perf: a running mean")


def shrink_figures(repo: Path) -> None:
    """The flights miss with and without shrinking, and what it was shrunk to."""
    import dataclasses  # noqa: F401  (kept for readers: the plans are the engine's own)

    def one(shrink: bool):
        review = load_review(repo)
        settings = runplans.generate_settings
        runplans.generate_settings = lambda relation, layout: dict(settings(relation, layout), count=0, shrink=shrink)
        try:
            return run_review(review, ["flights.carrier_order"])[0]
        finally:
            runplans.generate_settings = settings
            review.close()
    plain_seconds, plain = timed(one, False)
    shrunk_seconds, shrunk = timed(one, True)
    facts = shrunk.first.shrunk if shrunk.first else {}
    print(f"shrink: flights.carrier_order misses ({shrunk.outcome}); without shrinking (anchor) {plain_seconds:.2f} s, "
          f"with it {shrunk_seconds:.2f} s; ratio {shrunk_seconds / plain_seconds:.2f}x; shrunk "
          f"{facts.get('from_rows')} rows to {len(facts.get('input') or [])} in {facts.get('candidates')} candidates, "
          f"{facts.get('seconds')} s of shrinking")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--flights-repeat", type=int, default=1)
    parser.add_argument("--flights", type=Path, default=SHARED_FLIGHTS)
    parser.add_argument("--skip-flights", action="store_true")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        sample = demo.materialise(Path(scratch) / "sample")
        from bench.gitrepo import git
        git(sample, "checkout", "-q", demo.BASE_BRANCH)
        compare("sample", sample, args.repeat)
        if args.skip_flights or not args.flights.exists():
            print("flights: skipped (no corpus: --flights FILE, or ../shared/data/flights.csv.gz)")
            return 0
        from bench.flights import make_repo
        flights = make_repo(Path(scratch) / "flights", args.flights)
        compare("flights", flights, args.flights_repeat)
        flights_miss(flights)
        shrink_figures(flights)
    return 0


if __name__ == "__main__":
    sys.exit(main())
