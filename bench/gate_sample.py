"""``relconsole gate`` on the sample repository against the sample's own ``pytest -q``, with the
venv under /tmp and elsewhere (issue 37: the gate took 10x the tests, 22x with the venv under
/tmp; target <= 4x wherever the venv lies).

The sample is ``relconsole demo``'s (the agent's parallel-sum patch: one relation misses, is
checked on the merge base and replayed). For each interpreter of ``bench.venvs.placed_venvs``
(this one for the side its venv lies on, a copy of its venv on the other), round by round,
interleaved:

  pytest  ``python -m pytest -q -p no:cacheprovider`` in the sample (the anchor)
  gate    ``python -m relconsole gate --base main`` in the sample, as CI runs it on a fresh
          clone: the records a clone does not have (under the git directory) removed first

Prints the medians, the gate/pytest ratio (median of the rounds' ratios) and the gate's exit
code (1: the sample's patch is rejected, as it should be). Exit 1 when a ratio misses the
target; the figures are printed all the same.

    python -m bench.gate_sample [--repeat 3] [--warmup 1] [--target 4] [--only under-tmp|elsewhere]
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.timing import interleaved, round_ratios, verdict  # noqa: E402
from bench.venvs import placed_venvs, remove_made  # noqa: E402


def _env() -> dict[str, str]:
    """The caller's environment as an installation has it: no test or git variable, and
    bytecode caches written and read (a shell with PYTHONDONTWRITEBYTECODE would compile every
    module of relconsole, and of pytest, in every process of every round)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "RELCONSOLE_", "GIT_"))
           and k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(ROOT)
    return env


def run_pytest(python: str, repo: Path) -> int:
    return subprocess.run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=repo, env=_env(),
                          capture_output=True, check=False).returncode


def run_gate(python: str, repo: Path, today: dt.date) -> int:
    shutil.rmtree(repo / ".git" / "relconsole", ignore_errors=True)  # what a fresh clone does not have
    subprocess.run(["git", "worktree", "prune"], cwd=repo, capture_output=True, check=False)
    return subprocess.run([python, "-m", "relconsole", "gate", "--base", "main", "--today", today.isoformat()],
                          cwd=repo, env=_env(), capture_output=True, check=False).returncode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="rounds kept")
    parser.add_argument("--warmup", type=int, default=1, help="rounds run first and not kept (bytecode caches)")
    parser.add_argument("--target", type=float, default=4.0, help="the most gate / pytest may be")
    parser.add_argument("--only", choices=("under-tmp", "elsewhere"), default=None,
                        help="measure one placement of the venv only")
    args = parser.parse_args(argv)
    from relconsole.engine.demo import materialise
    today = dt.date.today()  # the sample's dates are spliced relative to it; the gate is told the same day
    scratch = Path(tempfile.mkdtemp(prefix="bench-gate-sample-"))
    made: list[Path] = []
    missed = False
    try:
        repo = materialise(scratch / "sample", today)
        pythons, made = placed_venvs()
        print(f"relconsole gate on the sample against its pytest -q (median of {args.repeat} rounds)")
        for where, python in pythons.items():
            if args.only and args.only != where.replace(" /", "-").replace(" ", "-"):
                continue
            codes: dict[str, int] = {}
            runs = interleaved({"pytest": lambda: codes.__setitem__("pytest", run_pytest(python, repo)),
                                "gate": lambda: codes.__setitem__("gate", run_gate(python, repo, today))},
                               args.repeat, warmup=args.warmup)
            ratio = statistics.median(round_ratios(runs, "gate", "pytest"))
            missed |= ratio > args.target
            print(f"  venv {where:<11} pytest {statistics.median(runs['pytest']):5.2f} s (anchor, exit "
                  f"{codes['pytest']})  gate {statistics.median(runs['gate']):5.2f} s (exit {codes['gate']})  "
                  f"gate/pytest = {ratio:.2f}x  (target: <= {args.target:g}x {verdict(ratio <= args.target)})")
    finally:
        remove_made(made)
        shutil.rmtree(scratch, ignore_errors=True)
    return 1 if missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
