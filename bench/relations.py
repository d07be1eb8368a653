"""Relation engine benchmark over the real flights corpus (issues 3, 15).

Prints, from one run on this machine:
  engine/plain   the engine (one worker: the judge, the subject in fork-server children, one
                 call per process) against the same subject calls in a plain in-process loop
  1 vs 2 workers the speed-up of two worker processes on the eight flights relations
  per call       the fork server's cost of one call: fork, import of the subject, one tiny
                 call, encode and decode of its output
  run vs REF     ``relconsole run`` on the sample against the same command of another commit
                 of relconsole (``--against``, default main), from a git worktree of it
  pytest/run     ``pytest --relconsole`` against ``relconsole run`` on the sample repository

Usage: python -m bench.relations [--corpus ../shared/data/flights.csv.gz] [--shuffles 6]
       [--rows N] [--against REF]
"""

from __future__ import annotations

import argparse
import datetime as dt
import gzip
import importlib
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
from bench.timing import timed, verdict  # noqa: E402
from relconsole.engine.relations.kinds import split_points  # noqa: E402
from relconsole.engine.gate.review import load_review  # noqa: E402
from relconsole.engine.gate.reviewrun import run_review  # noqa: E402
from relconsole.engine.relations.subject.inputs import read_corpus  # noqa: E402

TODAY = dt.date(2026, 11, 30)


def load_callable(ref: str):
    """``module:attr`` imported here, in the benchmark's own process (the plain loop only:
    the engine never imports a subject)."""
    module_name, _, attr_path = ref.partition(":")
    target = importlib.import_module(module_name)
    for part in attr_path.split("."):
        target = getattr(target, part)
    return target


def plain_loop(repo: Path, shuffles: int) -> float:
    """The same subject calls as the engine makes, in one process, compared with ``==``."""
    saved = list(sys.path)
    # this project's own oracle/ (a regular package) would win over the repo's namespace oracle/
    sys.path[:] = [str(repo / "src"), str(repo)] + [p for p in sys.path if Path(p or ".").resolve() != ROOT]
    for name in [m for m in sys.modules if m == "oracle" or m.startswith("oracle.")]:
        del sys.modules[name]
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
    sys.path[:] = saved
    for name in [m for m in sys.modules if m.split(".")[0] in ("oracle", "summary")]:
        del sys.modules[name]
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
    return timed(subprocess.run, args, cwd=cwd, capture_output=True, text=True, env=env)


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
    best = {k: min(v) for k, v in times.items()}
    best["same"] = _verdicts(run.stdout) == _verdicts(out.read_text()) is not None
    return best


def per_call_ms(scratch: Path, calls: int = 30) -> dict:
    """Median milliseconds of one fork-server call (fork, import of a small subject, one call,
    encode in the child and decode in the judge), in the sandbox and as a plain process."""
    from relconsole.engine.relations.subject.server import ForkServer, bwrap_path
    tree = scratch / "percall"
    tree.mkdir()
    (tree / "tiny.py").write_text("def f(x):\n    return {'n': len(x), 'first': x[:1]}\n")
    out = {}
    for sandbox in (["bwrap"] if bwrap_path() else []) + ["process"]:
        server = ForkServer(tree, [str(tree)], None, None, sandbox=sandbox)
        try:
            times = []
            for _ in range(calls):
                started = time.perf_counter()
                result = server.call({"subject": "tiny:f", "ops": [["value", "[1,2,3]"]], "seed": 1}, 30)
                times.append(time.perf_counter() - started)
                assert result.status == "ok" and result.body["ok"] == {"n": 3, "first": [1]}, result
        finally:
            server.close()
        out[sandbox] = 1000 * sorted(times)[len(times) // 2]
    return out


def run_against(scratch: Path, ref: str, repeat: int) -> dict | None:
    """Best-of-``repeat`` wall times of ``relconsole run --json`` on the sample, this tree's
    code against ``ref``'s (a git worktree of this repository), interleaved. The sample is
    ``ref``'s own (materialised by its code), so both do the same work even when the sample
    has changed since (a catalog field ``ref`` does not know would make its run a quick exit 5);
    ``same`` says whether both gave the same verdicts."""
    other = scratch / "against"
    made = subprocess.run(["git", "worktree", "add", "-q", "--detach", str(other), ref], cwd=ROOT,
                          capture_output=True, text=True)
    if made.returncode != 0:
        print(f"run vs {ref}: no worktree of {ref} ({made.stderr.strip()})")
        return None
    try:
        repo = scratch / "sample-against"
        theirs_env = dict(os.environ, PYTHONPATH=str(other))
        # -P and a neutral cwd: ``ref``'s relconsole (PYTHONPATH), never this checkout's from the cwd
        subprocess.run([sys.executable, "-P", "-c", "import datetime, sys\nfrom relconsole.engine.demo import materialise\n"
                        f"materialise(__import__('pathlib').Path(sys.argv[1]), datetime.date.fromisoformat('{TODAY}'))",
                        str(repo)], check=True, env=theirs_env, capture_output=True, cwd=scratch)
        args = [sys.executable, "-m", "relconsole", "run", "--json", "--today", TODAY.isoformat()]
        mine_env = dict(os.environ, PYTHONPATH=str(ROOT))
        mine, theirs = [], []
        for _ in range(repeat):
            seconds, mine_run = _timed(args, repo, mine_env)
            mine.append(seconds)
            seconds, theirs_run = _timed(args, repo, theirs_env)
            theirs.append(seconds)
        return {"mine": min(mine), "theirs": min(theirs),
                "same": _verdicts(mine_run.stdout) == _verdicts(theirs_run.stdout) is not None}
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(other)], cwd=ROOT, capture_output=True)


def _verdicts(stdout: str):
    """{(relation id, decision)} of a ``run --json`` output, or None when it is not one."""
    try:
        return {(r["relation_id"], r["decision"]) for r in json.loads(stdout)["relations"]}
    except (ValueError, KeyError, TypeError):
        return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    shared = Path(os.environ.get("RELCONSOLE_SHARED", ROOT.parent / "shared"))
    parser.add_argument("--corpus", type=Path, default=shared / "data" / "flights.csv.gz",
                        help="flights.csv.gz (default: $RELCONSOLE_SHARED or ../shared, /data/)")
    parser.add_argument("--shuffles", type=int, default=6)
    parser.add_argument("--repeat", type=int, default=2, help="runs of each measure, interleaved; best kept")
    parser.add_argument("--rows", type=int, default=None, help="use only the corpus's first N rows (a smoke run)")
    parser.add_argument("--against", default="main", help="the relconsole commit `run` is compared with")
    args = parser.parse_args()
    if not args.corpus.is_file():
        parser.error(f"{args.corpus} is missing: pass --corpus PATH/flights.csv.gz or set RELCONSOLE_SHARED")
    scratch = Path(tempfile.mkdtemp(prefix="relconsole-bench-"))
    try:
        corpus = args.corpus
        if args.rows:
            corpus = scratch / "flights.csv.gz"
            with gzip.open(args.corpus, "rt") as source, gzip.open(corpus, "wt") as cut:
                for number, line in enumerate(source):
                    if number > args.rows:
                        break
                    cut.write(line)
        repo = make_repo(scratch / "flights", corpus, args.shuffles)
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
              f"(target <= 1.5x: {verdict(one / plain <= 1.5)})")
        print(f"engine, 2 workers {two:8.2f} s   speed-up 1->2 = {one / two:.2f}x  "
              f"(target >= 1.7x: {verdict(one / two >= 1.7)}; needs two idle cores)")
        for sandbox, ms in per_call_ms(scratch).items():
            print(f"fork server, one call ({sandbox}): {ms:.1f} ms  (fork + import + call + encode/decode)")
        against = run_against(scratch, args.against, args.repeat + 1)
        if against:
            ratio = against["mine"] / against["theirs"]
            print(f"sample: relconsole run {against['mine']:.2f} s, {args.against}'s {against['theirs']:.2f} s "
                  f"(anchor) = {ratio:.2f}x  (target <= 1.5x: {verdict(ratio <= 1.5)}); "
                  f"same verdicts: {against['same']}")
        sample = sample_pytest_vs_run(scratch, args.repeat)
        if sample:
            run = sample["run"]
            print(f"sample: relconsole run --json {run:.2f} s (anchor); same verdicts: {sample['same']}")
            print(f"  pytest --relconsole, relconsole plugin only {sample['pytest_own']:.2f} s = "
                  f"{sample['pytest_own'] / run:.2f}x  (target <= 1.5x: {verdict(sample['pytest_own'] / run <= 1.5)})")
            print(f"  pytest --relconsole, every installed plugin {sample['pytest']:.2f} s = "
                  f"{sample['pytest'] / run:.2f}x  (the environment's plugins' import time included)")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
