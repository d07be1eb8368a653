"""How fast the command line starts (issue 17): ``relconsole --help`` and ``relconsole bind``.

Each command runs as a user runs it (a new process), interleaved with its anchor and timed
best-of ``--repeat``, so machine load moves both sides alike:

* ``relconsole --help`` against ``python -c "import argparse"`` (the interpreter's start and
  the parser library): target at most 2x. Building the parser must load no engine.
* ``relconsole bind`` on the sample repository against ``git diff --name-status`` of the
  same range plus ``python -c pass`` (git's own work and Python's own start): target at
  most 1.5x.

Usage: python -m bench.cli [--repeat 7]
Exit 1 when a target is missed (the figures are printed either way).
"""

from __future__ import annotations

import argparse
import datetime as dt
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from relconsole.engine.demo import materialise

TODAY = dt.date(2026, 11, 30)
TARGETS = {"help": 2.0, "bind": 1.5}


def best_of(repeat: int, commands: dict[str, list[list[str]]], cwd: Path) -> dict[str, float]:
    """name -> best wall seconds of running its command(s) in sequence, interleaved by round."""
    best = {name: float("inf") for name in commands}
    for _ in range(repeat):
        for name, steps in commands.items():
            started = time.perf_counter()
            for step in steps:
                proc = subprocess.run(step, cwd=cwd, capture_output=True)
                if proc.returncode not in (0, 2):  # bind exits 2 on the sample's gap
                    raise SystemExit(f"{' '.join(step)} exited {proc.returncode}: {proc.stderr[-2000:]!r}")
            best[name] = min(best[name], time.perf_counter() - started)
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    py = sys.executable
    scratch = Path(tempfile.mkdtemp(prefix="relconsole-bench-cli-"))
    try:
        repo = materialise(scratch / "sample", TODAY)
        base = subprocess.run(["git", "merge-base", "main", "HEAD"], cwd=repo, capture_output=True,
                              text=True, check=True).stdout.strip()
        best = best_of(args.repeat, {
            "argparse": [[py, "-c", "import argparse"]],
            "help": [[py, "-m", "relconsole", "--help"]],
            "git+python": [["git", "diff", "--name-status", f"{base}..HEAD"], [py, "-c", "pass"]],
            "bind": [[py, "-m", "relconsole", "bind", "--today", TODAY.isoformat()]],
        }, repo)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    ratios = {"help": best["help"] / best["argparse"], "bind": best["bind"] / best["git+python"]}
    print(f"python -c 'import argparse':      {best['argparse'] * 1000:7.1f} ms  (anchor)")
    print(f"relconsole --help:                {best['help'] * 1000:7.1f} ms  = {ratios['help']:.2f}x  "
          f"target: <= {TARGETS['help']}x  {'PASS' if ratios['help'] <= TARGETS['help'] else 'FAIL'}")
    print(f"git diff --name-status + python:  {best['git+python'] * 1000:7.1f} ms  (anchor)")
    print(f"relconsole bind (sample):         {best['bind'] * 1000:7.1f} ms  = {ratios['bind']:.2f}x  "
          f"target: <= {TARGETS['bind']}x  {'PASS' if ratios['bind'] <= TARGETS['bind'] else 'FAIL'}")
    return 0 if all(ratios[k] <= TARGETS[k] for k in TARGETS) else 1


if __name__ == "__main__":
    sys.exit(main())
