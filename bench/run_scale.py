"""``relconsole run`` at 1,000 and at 20,000 touched paths (issue 15): what a run costs per
touched path, the relation work held equal.

Two generated repositories (``bench.bigrepo``) with the same relations, leases and
candidates, touching ``--small`` and ``--large`` paths; ``relconsole run --json`` is timed
on each (best of ``--repeat``, interleaved) and the ratio printed against the target (the
large run at most 2x the small one). The relations that run are the touched ones: the
same count in both, since only the first fifth of the packages is touched either way.

Usage: python -m bench.run_scale [--small 1000] [--large 20000] [--relations 200] [--repeat 2]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.bigrepo import generate
from bench.timing import timed, verdict

TODAY = dt.date(2026, 3, 1)


def timed_run(repo: Path) -> tuple[float, int]:
    seconds, proc = timed(subprocess.run, [sys.executable, "-m", "relconsole", "run", "--json", "--today",
                                           TODAY.isoformat()], cwd=repo, capture_output=True, text=True)
    try:
        ran = len(json.loads(proc.stdout)["relations"])
    except (ValueError, KeyError):
        raise SystemExit(f"run printed no JSON (exit {proc.returncode}): {proc.stderr[-2000:]}")
    return seconds, ran


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=1000)
    parser.add_argument("--large", type=int, default=20000)
    parser.add_argument("--relations", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="relconsole-bench-scale-"))
    try:
        repos = {n: generate(scratch / f"r{n}", today=TODAY, paths=n, relations=args.relations, leases=20,
                             candidates=10) for n in (args.small, args.large)}
        best = {n: float("inf") for n in repos}
        ran = {}
        for _ in range(args.repeat):
            for n, repo in repos.items():
                seconds, ran[n] = timed_run(repo)
                best[n] = min(best[n], seconds)
        small, large = best[args.small], best[args.large]
        print(f"relconsole run, {args.small:,} touched paths: {small:6.2f} s  ({ran[args.small]} relations; anchor)")
        print(f"relconsole run, {args.large:,} touched paths: {large:6.2f} s  ({ran[args.large]} relations)")
        per_path = (large - small) / (args.large - args.small) * 1000
        ok = large <= 2 * small
        print(f"  ratio {large / small:.2f}x, {per_path:.3f} ms per extra path  (target: <= 2x: {verdict(ok)})")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
