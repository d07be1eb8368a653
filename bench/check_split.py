"""check-split benchmark (SPEC §9): 1,000 commits against ``git log --name-status`` over the same range.

Builds a repository of ``--commits`` commits (default 1,000) with ``git fast-import``: most touch
a few code paths, some an oracle file alone, a few mix the two (so there is something to
report), with spaces and non-ASCII characters in some names. Then times, median of
``--repeat`` runs each, the anchor ``git log --name-status`` over the range and
``relconsole check-split`` (the engine call, and the whole command as a process).
Targets (issue 5): under 10 s, and within 2x of the anchor.

Usage: python -m bench.check_split [--commits 1000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.fastimport import FastImport
from bench.timing import median_seconds, verdict
from relconsole.engine.repo.splitcheck import check_split


def build(root: Path, commits: int) -> None:
    """A repository at ``root`` with ``commits`` commits on main, built in one fast-import."""
    stream = FastImport()
    for n in range(commits):
        paths = [f"src/mod{n % 50}/file {n % 7}-ü.py", f"src/lib{n % 13}.py"]
        if n % 10 == 0:
            paths = [f"oracle/leases/l{n % 5}.yaml"]
        if n % 97 == 0:
            paths.append("oracle/freezes.json")
        stream.commit("refs/heads/main", n + 1, 1700000000 + n, f"commit {n}\n", parent=n or None)
        for path in paths:
            stream.put(path, f"{n} {path}\n")
    stream.run(root)
    subprocess.run(["git", "reset", "-q", "--hard", "main"], cwd=root, check=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="relconsole-bench-split-"))
    try:
        repo = scratch / "repo"
        build(repo, args.commits)
        first = subprocess.run(["git", "rev-list", "--max-parents=0", "HEAD"], cwd=repo, capture_output=True,
                               text=True, check=True).stdout.split()[0]
        spec = f"{first}..HEAD"
        anchor = median_seconds(lambda: subprocess.run(["git", "log", "--name-status", spec], cwd=repo,
                                                       capture_output=True, check=True), args.repeat)
        found = check_split(repo, spec)
        engine = median_seconds(lambda: check_split(repo, spec), args.repeat)
        command = median_seconds(lambda: subprocess.run([sys.executable, "-m", "relconsole", "check-split", spec],
                                                        cwd=repo, capture_output=True, env=os.environ),
                                 args.repeat)
        print(f"check-split over {args.commits - 1} commits ({len(found)} offending paths found)")
        print(f"  git log --name-status (anchor)    {anchor:7.3f} s")
        print(f"  check_split (engine)              {engine:7.3f} s   = {engine / anchor:.2f}x anchor")
        print(f"  relconsole check-split (process)  {command:7.3f} s   = {command / anchor:.2f}x anchor")
        ok = command < 10 and engine / anchor <= 2
        print(f"  target: < 10 s and engine <= 2x anchor: {verdict(ok)}")
        return 0 if ok else 1
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
