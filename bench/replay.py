"""Replay benchmark (SPEC §7): pooled worktrees on a big tree, and replay's own overhead.

Prints, from one run on this machine:
  worktrees  on a synthetic repository of ``--files`` files (default 100,000: 100 directories of
             1,000 small files; commits A and B differ in 50 files), cached under ``--scratch``:
             (a) anchor: ``git worktree add --detach`` of A (a full checkout) and its removal;
             (b) WorktreePool's first checkout (an empty pool: a full add);
             (c) WorktreePool moving its worktree A->B->A (``checkout --force`` + ``clean -ffdx``),
                 and the pool's release (``reset --hard`` + ``clean -ffdx``) that follows each replay;
             (d) five fresh add/remove cycles (``WorktreePool(fresh=True)``): do they slow down?
             Target: a pooled move costs far less than a full add (move/add <= 0.2x, this bench's bar).
  replay     on the sample repository: ``replay()`` end to end (SQLite lease store, warm pool) against
             the same work done directly (anchor): ``git worktree add --detach`` of HEAD and of the
             merge base, the oracle overlaid, and the missed touched relations run ``--runs`` times
             per side, each a run of its own (new fork servers) on a pool of os.cpu_count()
             workers per side, one side after the other, as replay runs them.
             Target (issue): replay/anchor <= 1.5x. The cold first replay (an empty pool) is shown too.

Every timed step of part 1 starts after an untimed ``sync``. On a slow disk part 1 takes minutes
(ten full checkouts and removals of the big tree); ``--skip-worktrees`` runs part 2 alone.

Usage: python -m bench.replay [--files 100000] [--scratch DIR] [--runs 5] [--repeat 3] [--moves 6]
                              [--cycles 5] [--skip-worktrees] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import dataclasses
import datetime as dt
import io
import json
import os
import pstats
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import git  # noqa: E402

from bench.fastimport import FastImport  # noqa: E402
from bench.timing import timed, verdict  # noqa: E402

from relconsole.engine.demo import materialise  # noqa: E402
from relconsole.engine.repo.gitio import clean_env  # noqa: E402
from relconsole.engine.gate.replay.replay import replay, to_replay  # noqa: E402
from relconsole.engine.gate.replay.replayoptions import ReplayOptions, Shard
from relconsole.engine.gate.review import load_review  # noqa: E402
from relconsole.engine.gate.reviewrun import run_review
from relconsole.engine.gate.runplans import plan_for
from relconsole.engine.relations.pool import WorkerPool  # noqa: E402
from relconsole.engine.repo.workspace import overlay_oracle  # noqa: E402
from relconsole.engine.repo.worktrees import WorktreePool  # noqa: E402
from relconsole.engine.gate.wslease.wslease import open_store  # noqa: E402

TODAY = dt.date(2026, 11, 30)
FILES_PER_DIR = 1000
CHANGED = 50  # files that differ between A and B
MOVE_TARGET = 0.2  # pooled move / full add
REPLAY_TARGET = 1.5  # replay / direct work (the target)


# --- helpers -------------------------------------------------------------------------

def git_run(cwd: Path, *args: str, stdin: bytes | None = None) -> str:
    proc = subprocess.run(["git", *args], cwd=cwd, env=clean_env(), input=stdin, capture_output=True,
                          check=False)
    if proc.returncode != 0:
        raise SystemExit(f"git {' '.join(args[:3])} failed: {proc.stderr.decode(errors='replace').strip()}")
    return proc.stdout.decode().strip()


def settled(fn, *args, **kwargs) -> tuple[float, object]:
    """``timed`` after an untimed ``sync``: the dirty pages of the previous 100,000-file write or
    delete are flushed first instead of being charged to this measure by writeback throttling."""
    os.sync()
    return timed(fn, *args, **kwargs)


# --- 1. worktrees on a synthetic repository --------------------------------------------

def _fast_import_stream(files: int) -> bytes:
    """Commit A with ``files`` small files in directories of 1,000, then B changing 50 of them."""
    who = "Bench <bench@example.invalid>"
    paths = [f"d{i // FILES_PER_DIR:04d}/f{i % FILES_PER_DIR:04d}.txt" for i in range(files)]
    out = FastImport()
    out.commit("refs/heads/main", 1, 1700000000, "A: every file", who=who)
    for p in paths:
        out.put(p, f"line one of {p}\nline two\n")
    out.commit("refs/heads/main", 2, 1700000000, f"B: {CHANGED} files changed", parent=1, who=who)
    step = max(1, files // CHANGED)
    for p in paths[::step][:CHANGED]:
        out.put(p, f"line one of {p}\nchanged in B\n")
    return out.stream()


def synthetic_repo(scratch: Path, files: int) -> tuple[Path, str, str]:
    """A bare repository with commits A and B (``main~1``, ``main``), reused when already built."""
    path = scratch / f"synthetic-{files}.git"
    marker = path / "relconsole-bench.json"
    if marker.is_file():
        known = json.loads(marker.read_text())
        return path, known["a"], known["b"]
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    git_run(path, "init", "--quiet", "--bare")
    seconds, _ = timed(git_run, path, "fast-import", "--quiet", stdin=_fast_import_stream(files))
    a, b = git_run(path, "rev-parse", "main~1"), git_run(path, "rev-parse", "main")
    marker.write_text(json.dumps({"a": a, "b": b, "files": files}))
    print(f"built {path} in {seconds:.1f} s")
    return path, a, b


def full_add_remove(repo: Path, where: Path, commit: str) -> tuple[float, float]:
    """(seconds to ``git worktree add --detach``, seconds to remove it)."""
    add, _ = settled(git_run, repo, "worktree", "add", "--quiet", "--detach", str(where), commit)
    remove, _ = settled(git_run, repo, "worktree", "remove", "--force", str(where))
    return add, remove


def empty_pool(repo: Path, workspace: str) -> WorktreePool:
    """A WorktreePool with nothing in it (leftovers of an earlier run removed)."""
    pool = WorktreePool(git.Repo(repo), workspace)
    for leftover in (pool.root / side for side in ("head", "base")):
        if leftover.exists():
            subprocess.run(["git", "worktree", "remove", "--force", str(leftover)], cwd=repo,
                           env=clean_env(), capture_output=True, check=False)
            shutil.rmtree(leftover, ignore_errors=True)
    git_run(repo, "worktree", "prune")
    return pool


def pooled_moves(pool: WorktreePool, a: str, b: str, moves: int) -> tuple[list[float], list[float]]:
    """Move the pooled ``head`` worktree A->B->A... ``moves`` times; each move is followed by the
    pool's release (as at the end of a replay), with an untracked file for the clean to remove."""
    move_times, release_times = [], []
    for n in range(moves):
        target = b if n % 2 == 0 else a
        seconds, tree = settled(pool.checkout, "head", target)
        move_times.append(seconds)
        (tree / "d0000" / "run-output.tmp").write_text("left by a run\n")
        release_times.append(settled(pool.release)[0])
    return move_times, release_times


def fresh_cycles(repo: Path, a: str, cycles: int) -> list[float]:
    """Seconds of each ``WorktreePool(fresh=True)`` checkout + release (add + remove) of A."""
    pool = empty_pool(repo, "bench-fresh")
    pool.fresh = True
    times = []
    for _ in range(cycles):
        os.sync()
        started = time.perf_counter()
        pool.checkout("head", a)
        pool.release()
        times.append(time.perf_counter() - started)
    return times


def bench_worktrees(scratch: Path, files: int, repeat: int, moves: int, cycles: int) -> None:
    repo, a, b = synthetic_repo(scratch, files)
    changed = git_run(repo, "diff", "--name-only", a, b).splitlines()
    print(f"\n1. worktrees: {files:,} files, A and B differ in {len(changed)} ({repo})")
    anchor_dir = scratch / "anchor-worktree"
    shutil.rmtree(anchor_dir, ignore_errors=True)
    git_run(repo, "worktree", "prune")
    adds, removes = zip(*(full_add_remove(repo, anchor_dir, a) for _ in range(repeat)))
    add, remove = statistics.median(adds), statistics.median(removes)
    print(f"  (a) git worktree add --detach A     {add:7.2f} s   (anchor; median of {repeat}; "
          f"each {', '.join(f'{s:.2f}' for s in adds)})")
    print(f"      git worktree remove             {remove:7.2f} s")

    pool = empty_pool(repo, "bench-pool")
    first, _ = settled(pool.checkout, "head", a)
    print(f"  (b) pool, first checkout of A       {first:7.2f} s   = {first / add:.2f}x full add")
    move_times, release_times = pooled_moves(pool, a, b, moves)
    move, release = statistics.median(move_times), statistics.median(release_times)
    print(f"  (c) pool, move A<->B                {move:7.2f} s   = {move / add:.3f}x full add  "
          f"(target <= {MOVE_TARGET}x: {verdict(move / add <= MOVE_TARGET)}; median of {moves}; "
          f"each {', '.join(f'{s:.2f}' for s in move_times)})")
    print(f"      pool, release (reset + clean)   {release:7.2f} s   = {release / add:.3f}x full add; "
          f"move + release {(move + release) / add:.3f}x")
    empty_pool(repo, "bench-pool")

    times = fresh_cycles(repo, a, cycles)
    print(f"  (d) fresh add + remove, {cycles} cycles    {', '.join(f'{s:.2f}' for s in times)} s   "
          f"last/first = {times[-1] / times[0]:.2f}x, max/min = {max(times) / min(times):.2f}x "
          f"(no slow-down, last <= 1.5x first: {verdict(times[-1] / times[0] <= 1.5)})")
    empty_pool(repo, "bench-fresh")


# --- 2. replay's own overhead on the sample repository --------------------------------

def sample_review(scratch: Path):
    """The sample repository's review with its touched relations run; (review, missed ids)."""
    repo = materialise(scratch / "sample", TODAY)
    review = load_review(repo, None, "HEAD", TODAY)
    run_review(review)
    ids = [rid for rid in to_replay(review, Shard()) if review.results[rid].outcome != "blocked"]
    return review, ids


def direct(review, ids: list[str], runs: int, where: Path) -> tuple[float, dict]:
    """The anchor: what replay must do, done directly. Returns (seconds, misses per side).

    Both commits get a fresh ``git worktree add --detach`` with the oracle overlaid; each
    missed relation runs ``runs`` times per side (seeds seed..seed+runs-1), each on new fork
    servers, on a pool of os.cpu_count() workers per side. Removing the worktrees is not timed.
    """
    started = time.perf_counter()
    trees = {}
    for side, commit in (("head", review.head_sha), ("base", review.merge_base)):
        tree = where / side
        git_run(review.root, "worktree", "add", "--quiet", "--detach", str(tree), commit)
        trees[side] = overlay_oracle(review.repo, commit, review.oracle_dir, review.layout.protected, tree)
    records = []
    for side, tree in trees.items():
        jobs = []
        for rid in ids:
            relation = review.catalog.get(rid)
            seed = int(relation.params.get("seed", 0))
            plan = dataclasses.replace(plan_for(review, relation, tree), fresh_server=True)
            jobs += [(side, plan, seed + n) for n in range(runs)]
        pool = WorkerPool(min(os.cpu_count() or 1, len(jobs)), tree)
        try:
            with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as executor:
                records += list(executor.map(lambda job: (job[0], pool.evaluate(job[1], job[2])), jobs))
        finally:
            pool.close()
    seconds = time.perf_counter() - started
    for tree in trees.values():
        git_run(review.root, "worktree", "remove", "--force", str(tree))
    return seconds, {side: sum(1 for s, r in records if s == side and not r.held) for side in trees}


def replayed(review, store, runs: int, artifacts: Path) -> tuple[float, dict]:
    """``replay()`` end to end. Returns (seconds, misses per side summed over its sheets)."""
    seconds, outcome = timed(replay, review, store, ReplayOptions(runs=runs, artifacts=artifacts))
    misses = {side: sum(s["runs"][side]["misses"] for s in outcome.sheets.values()) for side in ("head", "base")}
    return seconds, misses


def profile_replay(review, store, runs: int, artifacts: Path, top: int = 30) -> None:
    """One warm replay under cProfile (this thread only: worker threads' time shows as waits)."""
    profiler = cProfile.Profile()
    profiler.runcall(replay, review, store, ReplayOptions(runs=runs, artifacts=artifacts))
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("cumulative").print_stats(top)
    print(text.getvalue())


def bench_replay(scratch: Path, runs: int, repeat: int, profile: bool) -> None:
    review, ids = sample_review(scratch)
    try:
        print(f"\n2. replay on the sample repository: {len(ids)} missed relation(s) {ids}, "
              f"{runs} runs per side, {os.cpu_count()} threads")
        if not ids:
            print("  nothing missed: nothing to replay")
            return
        store = open_store("sqlite:" + str(scratch / "leases.sqlite3"), review.repo.git_dir)
        artifacts = scratch / "artifacts"
        cold, _ = replayed(review, store, runs, artifacts)  # also the warm-up: it fills the pool
        anchors, replays, same = [], [], True
        for n in range(repeat):  # interleaved, so machine noise hits both alike
            seconds, anchor_misses = direct(review, ids, runs, scratch / f"direct-{n}")
            anchors.append(seconds)
            seconds, replay_misses = replayed(review, store, runs, artifacts)
            replays.append(seconds)
            same = same and anchor_misses == replay_misses
        anchor, warm = statistics.median(anchors), statistics.median(replays)
        print(f"  direct: worktree add x2 + overlay + worker pools  {anchor:6.2f} s   (anchor; "
              f"each {', '.join(f'{s:.2f}' for s in anchors)})")
        print(f"  replay, warm pool                                  {warm:6.2f} s   "
              f"replay/anchor = {warm / anchor:.2f}x  (target <= {REPLAY_TARGET}x: "
              f"{verdict(warm / anchor <= REPLAY_TARGET)}; each {', '.join(f'{s:.2f}' for s in replays)})")
        print(f"  replay, cold (first, empty pool)                   {cold:6.2f} s   = {cold / anchor:.2f}x anchor")
        print(f"  same misses per side in both: {same} (last: direct {anchor_misses}, replay {replay_misses})")
        if profile:
            profile_replay(review, store, runs, artifacts)
        store.close()
    finally:
        review.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=100_000, help="files in the synthetic repository")
    parser.add_argument("--scratch", type=Path, default=Path(tempfile.gettempdir()) / "relconsole-bench-replay",
                        help="where the synthetic repository is cached (reused by the next run)")
    parser.add_argument("--runs", type=int, default=5, help="runs per side of each missed relation")
    parser.add_argument("--repeat", type=int, default=3, help="repeats of each measure; medians kept")
    parser.add_argument("--moves", type=int, default=6, help="pooled moves A<->B (median kept)")
    parser.add_argument("--cycles", type=int, default=5, help="fresh add/remove cycles")
    parser.add_argument("--skip-worktrees", action="store_true", help="only the replay part")
    parser.add_argument("--profile", action="store_true", help="also print a cProfile of one warm replay")
    args = parser.parse_args()
    if args.files < CHANGED or min(args.moves, args.runs, args.repeat, args.cycles) < 1:
        parser.error(f"--files must be at least {CHANGED}; --moves, --runs, --repeat and --cycles at least 1")
    started = time.perf_counter()
    args.scratch.mkdir(parents=True, exist_ok=True)
    print(f"relconsole replay benchmark: {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}, "
          f"git {git_run(args.scratch, 'version').split()[-1]}")
    if not args.skip_worktrees:
        bench_worktrees(args.scratch.resolve(), args.files, args.repeat, args.moves, args.cycles)
        os.sync()  # the last removal's writeback is not charged to the replay part
    sample_scratch = Path(tempfile.mkdtemp(prefix="relconsole-bench-replay-sample-"))
    try:
        bench_replay(sample_scratch, args.runs, args.repeat, args.profile)
    finally:
        shutil.rmtree(sample_scratch, ignore_errors=True)
    print(f"\nbenchmark took {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
