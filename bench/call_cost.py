"""One judged call under bubblewrap against the same call without it, with the venv under
/tmp and elsewhere (issue 37: generation and shrinking make hundreds of calls where a run
made a few, so a call's fixed cost is what they pay).

A judged call is ``ForkServer.call`` from the judge's side: the fork, the call's own
namespaces, the import of a small subject, one call, the output encoded in the child and
decoded in the judge, and the server's cleanup after it. For each interpreter of
``bench.venvs.placed_venvs`` (this one for the side its venv lies on, a copy of its venv on
the other), a child process starts a bwrap server and a process server on one small tree
and times ``--calls`` calls on each, alternating, so that a noisy spell hits both alike. The
anchor is the call without bubblewrap (``sandbox: process``) in the same child; the ratio is
bwrap / process of the medians. Exit 1 when a ratio misses the target (the figures are
printed all the same); exit 0 with a note when bubblewrap cannot make a sandbox here.

    python -m bench.call_cost [--calls 60] [--target 1.2]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.timing import verdict  # noqa: E402
from bench.venvs import placed_venvs, remove_made  # noqa: E402

CHILD = r"""
import json, statistics, sys, time
from pathlib import Path
from relconsole.engine.relations.subject.server import ForkServer
tree, calls = Path(sys.argv[1]), int(sys.argv[2])
servers = {s: ForkServer(tree, [str(tree)], None, None, sandbox=s) for s in ("bwrap", "process")}
times = {s: [] for s in servers}
try:
    for n in range(calls + 3):  # the first three of each warm the page cache: not kept
        for name, server in servers.items():
            started = time.perf_counter()
            result = server.call({"subject": "tiny:f", "ops": [["value", "[1,2,3]"]], "seed": 1}, 30)
            seconds = time.perf_counter() - started
            assert result.status == "ok" and result.body["ok"] == {"n": 3, "first": [1]}, result
            if n >= 3:
                times[name].append(seconds)
finally:
    for server in servers.values():
        server.close()
print(json.dumps({name: 1000 * statistics.median(t) for name, t in times.items()}))
"""


def measure(python: str, tree: Path, calls: int) -> dict[str, float]:
    """{"bwrap": ms, "process": ms}: the median milliseconds of one call, in a child run by
    ``python``. Raises RuntimeError with the child's last words when it fails."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"} | {"PYTHONPATH": str(ROOT)}
    proc = subprocess.run([python, "-c", CHILD, str(tree), str(calls)], capture_output=True, text=True,
                          env=env, cwd=tree, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError((proc.stderr.strip().splitlines() or ["(no output)"])[-1])
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=60, help="calls timed on each server")
    parser.add_argument("--target", type=float, default=1.2, help="the most bwrap / process may be")
    args = parser.parse_args(argv)
    from relconsole.engine.relations.subject.server import bwrap_path
    if bwrap_path() is None:
        print("bwrap/process: not measured, bubblewrap cannot make a sandbox here (target: not measured)")
        return 0
    scratch = Path(tempfile.mkdtemp(prefix="bench-call-"))
    made: list[Path] = []
    missed = False
    try:
        tree = scratch / "tree"
        tree.mkdir()
        (tree / "tiny.py").write_text("def f(x):\n    return {'n': len(x), 'first': x[:1]}\n")
        pythons, made = placed_venvs()
        print(f"one judged call, median of {args.calls} (fork, namespaces, import, call, encode/decode, cleanup)")
        for where, python in pythons.items():
            ms = measure(python, tree, args.calls)
            ratio = ms["bwrap"] / ms["process"]
            missed |= ratio > args.target
            print(f"  venv {where:<11} process {ms['process']:6.2f} ms (anchor)  bwrap {ms['bwrap']:6.2f} ms  "
                  f"bwrap/process = {ratio:.2f}x  (target: <= {args.target:g}x {verdict(ratio <= args.target)})")
    finally:
        remove_made(made)
        shutil.rmtree(scratch, ignore_errors=True)
    return 1 if missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
