"""Relation engine benchmark over the real flights corpus (issue 3).

Prints, from one run on this machine:
  engine/plain   the engine (one worker) against the same subject calls in a plain loop
  1 vs 2 workers the speed-up of two worker processes on the eight flights relations
  pytest/run     ``pytest --relconsole`` against ``relconsole run`` on the sample repository

Usage: python bench/relations.py [--corpus ../shared/data/flights.csv.gz] [--shuffles 6]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.flights import RELATIONS, make_repo  # noqa: E402
from relconsole.engine.relations import load_callable, split_points  # noqa: E402
from relconsole.engine.review import load_review, run_review  # noqa: E402
from relconsole.engine.worker import read_corpus  # noqa: E402

TODAY = dt.date(2026, 11, 30)


def plain_loop(repo: Path, shuffles: int) -> float:
    """The same subject calls as the engine makes, in one process, compared with ``==``."""
    sys.path[:0] = [str(repo / "src"), str(repo)]
    started = time.perf_counter()
    rows = read_corpus(str(repo / "oracle" / "data" / "flights.csv.gz"))
    for relation in RELATIONS:
        f = load_callable(relation["subject"])
        kind = relation["kind"]
        if kind == "permutation":
            rng = random.Random(relation["params"]["seed"])
            base = f(rows)
            for _ in range(shuffles):
                y = list(rows)
                rng.shuffle(y)
                assert f(y) == base
        elif kind == "split_merge":
            merge = load_callable(relation["merge"])
            whole = f(rows)
            for point in split_points(len(rows), relation["params"]["splits"]):
                merge(f(rows[:point]), f(rows[point:])) == whole  # noqa: B015 (compared as the engine does)
        elif kind == "invariance":
            assert f(rows) == f(load_callable(relation["transform"])(rows))
        elif kind == "monotonic":
            raised = [dict(r, distance=str(float(r["distance"]) + 100)) for r in rows]
            before, after = f(rows), f(raised)
            assert all(after[k]["distance"] >= before[k]["distance"] for k in before)
        elif kind == "roundtrip":
            assert load_callable(relation["inverse"])(f(rows)) == rows
    return time.perf_counter() - started


def engine(repo: Path, workers: int) -> tuple[float, dict]:
    review = load_review(repo, "main", "HEAD", TODAY)
    try:
        started = time.perf_counter()
        results = run_review(review, workers=workers)
        return time.perf_counter() - started, {r.relation_id: r.outcome for r in results}
    finally:
        review.close()


def _timed(args: list[str], cwd: Path, env: dict | None = None) -> tuple[float, subprocess.CompletedProcess]:
    started = time.perf_counter()
    proc = subprocess.run(args, cwd=cwd, capture_output=True, text=True, env=env)
    return time.perf_counter() - started, proc


def sample_pytest_vs_run(scratch: Path, repeat: int) -> dict | None:
    """Best-of-``repeat`` wall times of ``relconsole run --json`` and ``pytest --relconsole``.

    pytest is timed twice: as installed (every plugin in the environment auto-loads,
    hypothesis's alone imports for about 1.6 s here) and with third-party autoload off
    (``-p relconsole.pytest_plugin`` only), which is what relconsole itself costs.
    """
    from relconsole.engine.demo import materialise

    repo = materialise(scratch / "sample", TODAY)
    out = scratch / "pytest.json"
    run_args = [sys.executable, "-m", "relconsole", "run", "--json", "--today", TODAY.isoformat()]
    plug_args = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--relconsole",
                 f"--relconsole-today={TODAY.isoformat()}", f"--relconsole-json={out}"]
    bare_env = dict(os.environ, PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    times = {"run": [], "pytest": [], "pytest_own": []}
    for _ in range(repeat):
        seconds, run = _timed(run_args, repo)
        times["run"].append(seconds)
        times["pytest"].append(_timed(plug_args, repo)[0])
        times["pytest_own"].append(_timed(plug_args[:3] + ["-p", "relconsole.pytest_plugin"] + plug_args[3:],
                                          repo, bare_env)[0])
    if not out.exists():
        print("pytest --relconsole wrote no JSON")
        return None
    verdicts = lambda payload: {(r["relation_id"], r["decision"]) for r in payload["relations"]}  # noqa: E731
    best = {k: min(v) for k, v in times.items()}
    best["same"] = verdicts(json.loads(run.stdout)) == verdicts(json.loads(out.read_text()))
    return best


def _verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    shared = Path(os.environ.get("RELCONSOLE_SHARED", ROOT.parent / "shared"))
    parser.add_argument("--corpus", type=Path, default=shared / "data" / "flights.csv.gz",
                        help="flights.csv.gz (default: $RELCONSOLE_SHARED or ../shared, /data/)")
    parser.add_argument("--shuffles", type=int, default=6)
    parser.add_argument("--repeat", type=int, default=2, help="runs of each measure, interleaved; best kept")
    args = parser.parse_args()
    if not args.corpus.is_file():
        parser.error(f"{args.corpus} is missing: pass --corpus PATH/flights.csv.gz or set RELCONSOLE_SHARED")
    scratch = Path(tempfile.mkdtemp(prefix="relconsole-bench-"))
    try:
        repo = make_repo(scratch / "flights", args.corpus, args.shuffles)
        plains, ones, twos = [], [], []
        for _ in range(args.repeat):  # interleaved, so machine noise hits every measure alike
            plains.append(plain_loop(repo, args.shuffles))
            seconds, outcomes = engine(repo, 1)
            ones.append(seconds)
            seconds, outcomes_two = engine(repo, 2)
            twos.append(seconds)
        plain, one, two = min(plains), min(ones), min(twos)
        print(f"flights relations: {len(outcomes)}, all held: {set(outcomes.values()) == {'held'}}, "
              f"same with 2 workers: {outcomes == outcomes_two}")
        print(f"plain loop        {plain:8.2f} s   (anchor)")
        print(f"engine, 1 worker  {one:8.2f} s   engine/plain = {one / plain:.2f}x  "
              f"(target <= 1.3x: {_verdict(one / plain <= 1.3)})")
        print(f"engine, 2 workers {two:8.2f} s   speed-up 1->2 = {one / two:.2f}x  "
              f"(target >= 1.7x: {_verdict(one / two >= 1.7)}; needs two idle cores)")
        sample = sample_pytest_vs_run(scratch, args.repeat)
        if sample:
            run = sample["run"]
            print(f"sample: relconsole run --json {run:.2f} s (anchor); same verdicts: {sample['same']}")
            print(f"  pytest --relconsole, relconsole plugin only {sample['pytest_own']:.2f} s = "
                  f"{sample['pytest_own'] / run:.2f}x  (target <= 1.5x: {_verdict(sample['pytest_own'] / run <= 1.5)})")
            print(f"  pytest --relconsole, every installed plugin {sample['pytest']:.2f} s = "
                  f"{sample['pytest'] / run:.2f}x  (the environment's plugins' import time included)")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
