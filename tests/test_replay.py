"""Replay (SPEC §7) on HEAD and the merge base in pooled worktrees under a workspace lease (§5).

The repositories here hold a subject whose miss is a function of the run's seed (the
worker seeds ``random`` before importing it), so which side misses, and how often, is
known in advance from a model of the subject, not from replay's own output.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bench.gitrepo import git, reviewed_repo
from conftest import TODAY
from test_leases_freezes import FLAKY
from relconsole.engine.gate.basecheck import BASE_RERUNS, rerun_seed
from test_leases_freezes import passes as flip_holds  # the model of FLAKY: holds on this seed?
from relconsole.engine.gate import actions
from relconsole.engine.errors import EXIT_ABORT, RelconsoleError
from relconsole.engine.gate.replay.replay import SHEET_SUFFIX, replay
from relconsole.engine.gate.replay.replayoptions import ReplayOptions, Shard
from relconsole.engine.gate.review import load_review
from relconsole.engine.gate.reviewrun import run_review
from relconsole.engine.gate.wslease.wslease import open_store
from relconsole.engine.gate.wslease.wsleasestore import LeaseHeld

PROJECT = Path(__file__).resolve().parents[1]

CORRECT = "def total(values):\n    return sum(values)\n"
BROKEN = "def total(values):\n    return list(values)  # the order it was given leaks out: every shuffle differs\n"
SEED = 0


def _relation(rid: str, module: str, freeze: bool = True) -> str:
    policy = "\n            freeze: {allowed: true, max_days: 10, min_reruns: 2}" if freeze else ""
    return f"""
          - id: {rid}
            kind: permutation
            subject: {module}:total
            input: {{seeds: oracle/seeds/nums.jsonl}}
            compare: exact
            params: {{shuffles: 2, seed: {SEED}}}
            statement: Shuffling the numbers leaves their total unchanged.{policy}"""


def flaky_repo(tmp_path: Path, base: dict[str, str], patch: dict[str, str], name: str = "repo") -> Path:
    """A repository whose relations own one module each (``<module>.py``)."""
    modules = sorted(set(base) | set(patch))
    owners = "".join(f'\n          "{m}.py": [{m}.sum]' for m in modules)
    relations = "".join(_relation(f"{m}.sum", m) for m in modules)
    catalog = textwrap.dedent(f"""\
        owners:{owners}
        relations:{relations}
        """)
    files = {f"{m}.py": text for m, text in base.items()}
    files |= {"oracle/seeds/nums.jsonl": "[1, 2, 3, 4, 5, 6, 7, 8]\n", "oracle/catalog.yaml": catalog}
    return reviewed_repo(tmp_path / name, files, {f"{m}.py": text + "\n# patched\n" for m, text in patch.items()})


@pytest.fixture(autouse=True)
def _seeds_from_seed(monkeypatch):
    """Run seeds as the model needs them: the first run SEED, each side's replays SEED + n."""
    from relconsole.engine.gate.replay import replayrun
    from relconsole.engine.relations import runner
    draws = [0]

    def drawn() -> int:  # the first run's seed is SEED, then a replay's runs SEED, SEED + 1, ...
        n, draws[0] = draws[0], draws[0] + 1
        return SEED if n == 0 else SEED + n - 1
    monkeypatch.setattr(runner, "draw_seed", drawn)
    monkeypatch.setattr(replayrun, "draw_seed", drawn)


@pytest.fixture(autouse=True)
def _workers_find_relconsole(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(PROJECT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    monkeypatch.delenv("RELCONSOLE_LEASE_URL", raising=False)


def _seed_where(first_misses: bool) -> None:
    """Point SEED at a seed whose first run misses, so `run` reports a miss to replay (or holds).
    A miss's seed is also one on which the merge base's check (``basecheck``) finds a FLAKY base
    intermittent, holding on one of its rerun seeds: the miss is then replayed, not an oracle
    fault (a base that missed on every one of its runs would be)."""
    global SEED
    SEED = next(s for s in range(1000) if flip_holds(s) is not first_misses and
                (not first_misses or any(flip_holds(rerun_seed(s, k)) for k in range(1, BASE_RERUNS + 1))))


def do_replay(repo: Path, runs: int = 6, **options):
    review = load_review(repo, "main", "HEAD", TODAY)
    store = open_store(None, review.repo.common_dir)
    try:
        outcome = replay(review, store, ReplayOptions(runs=runs, **options))
        return review, outcome
    finally:
        store.close()


def run_again(repo: Path, relation_id: str):
    """A new review of ``repo`` (as a new console or CLI call would load) with the relation run."""
    review = load_review(repo, "main", "HEAD", TODAY)
    run_review(review, [relation_id])
    return review


def expected_misses(runs: int) -> int:
    return sum(not flip_holds(SEED + n) for n in range(runs))


def test_intermittent_miss_on_both_sides_is_a_freeze_carrying_its_fields(tmp_path):
    _seed_where(first_misses=True)
    repo = flaky_repo(tmp_path, {"flaky": FLAKY}, {"flaky": FLAKY})
    review, outcome = do_replay(repo, runs=6)
    try:
        sheet = outcome.sheets["flaky.sum"]
        misses = expected_misses(6)
        assert 0 < misses < 6, "the seeds chosen must make the miss intermittent"
        assert sheet["runs"]["head"]["misses"] == misses == sheet["runs"]["base"]["misses"]
        assert sheet["property_result"] == "pass"  # held at least once on HEAD
        assert sheet["signature"] == sheet["base_signature"] != "none"
        decision = outcome.decisions["flaky.sum"]
        assert (decision.decision, decision.row) == ("freeze", 8)
        assert decision.fields["lease_id"] == sheet["lease"]["id"] == outcome.lease.id
        assert decision.fields["signature"] == sheet["signature"]
        on_disk = json.loads(outcome.paths["flaky.sum"].read_text())
        assert on_disk == json.loads(json.dumps(sheet))
        assert on_disk["lease"]["state"] == "fresh"
        row = actions.proposed_freeze(review, "flaky.sum", "flaky on base too")
        assert (row["lease_id"], row["signature"]) == (decision.fields["lease_id"], decision.fields["signature"])
        assert row["expires"] <= decision.fields["expires_at"]
    finally:
        review.close()
    later = run_again(repo, "flaky.sum")  # a new console or the CLI: the sheet on disk decides
    try:
        assert actions.proposed_freeze(later, "flaky.sum", "again")["signature"] == sheet["signature"]
    finally:
        later.close()


def test_a_miss_the_base_never_shows_is_rejected(tmp_path):
    _seed_where(first_misses=True)
    repo = flaky_repo(tmp_path, {"flaky": CORRECT}, {"flaky": FLAKY})
    review, outcome = do_replay(repo, runs=6)
    try:
        sheet = outcome.sheets["flaky.sum"]
        assert sheet["runs"]["base"]["misses"] == 0 and sheet["base_signature"] == "none"
        assert sheet["runs"]["head"]["misses"] == expected_misses(6)
        decision = outcome.decisions["flaky.sum"]
        assert (decision.decision, decision.reason, decision.row) == ("reject", "miss_not_on_base", 6)
        with pytest.raises(RelconsoleError, match="row 6"):
            actions.proposed_freeze(review, "flaky.sum", "not allowed by the table")
    finally:
        review.close()
    later = run_again(repo, "flaky.sum")
    try:
        for override in (False, True):  # no override beats the table
            with pytest.raises(RelconsoleError, match="row 6"):
                actions.proposed_freeze(later, "flaky.sum", "x", without_replay=override)
    finally:
        later.close()


def test_a_miss_on_every_head_run_is_a_property_fail(tmp_path):
    repo = flaky_repo(tmp_path, {"det": CORRECT}, {"det": BROKEN})
    review, outcome = do_replay(repo, runs=3)
    try:
        sheet = outcome.sheets["det.sum"]
        assert sheet["runs"]["head"] == {"commit": review.head_sha, "runs": 3, "misses": 3}
        assert sheet["runs"]["base"]["misses"] == 0
        assert sheet["property_result"] == "fail"
        assert outcome.decisions["det.sum"].row == 3
        assert review.decision().decision == "reject"  # the console's status line follows the sheet
    finally:
        review.close()


def test_held_relations_get_no_sheet_and_earlier_sheets_are_removed(tmp_path):
    repo = flaky_repo(tmp_path, {"det": CORRECT, "ok": CORRECT}, {"det": BROKEN, "ok": CORRECT})
    artifacts = tmp_path / "sheets"
    artifacts.mkdir()
    stale = artifacts / f"ok.sum{SHEET_SUFFIX}"
    stale.write_text('{"test_id": "ok.sum", "lease": {"state": "fresh"}}')
    review, outcome = do_replay(repo, runs=2, artifacts=artifacts)
    review.close()
    assert set(outcome.sheets) == {"det.sum"}
    assert sorted(p.name for p in artifacts.glob(f"*{SHEET_SUFFIX}")) == [f"det.sum{SHEET_SUFFIX}"]
    manifest = json.loads((artifacts / "replay-shard-1-of-1.json").read_text())
    assert manifest["sheets"] == ["det.sum"] and sorted(manifest["relations"]) == ["det.sum", "ok.sum"]


def _worktrees(repo: Path) -> list[str]:
    listing = git(repo, "worktree", "list", "--porcelain")
    return [line.split(" ", 1)[1] for line in listing.splitlines() if line.startswith("worktree ")][1:]


def test_pooled_worktrees_are_reused_and_no_file_of_an_earlier_run_survives(tmp_path):
    repo = flaky_repo(tmp_path, {"det": CORRECT}, {"det": BROKEN})
    (repo / ".gitignore").write_text("*.log\n")
    git(repo, "add", ".gitignore")
    git(repo, "commit", "-q", "-m", "ignore logs")
    review, _ = do_replay(repo, runs=1)
    review.close()
    first = _worktrees(repo)
    assert len(first) == 2
    for tree in map(Path, first):
        assert git(tree, "status", "--porcelain", "--ignored") == ""  # returned to the pool clean
        (tree / "left-over.txt").write_text("from an earlier run")
        (tree / "debug.log").write_text("ignored, but still a left-over")
        (tree / "det.py").write_text("tampered\n")
    review, outcome = do_replay(repo, runs=1)
    review.close()
    assert _worktrees(repo) == first  # the same two, reused
    for tree in map(Path, first):
        assert not (tree / "left-over.txt").exists() and not (tree / "debug.log").exists()
        assert (tree / "det.py").read_text() != "tampered\n"
    assert outcome.decisions["det.sum"].row == 3  # tampering did not leak into the verdict


def test_a_stale_registration_left_by_a_killed_run_is_pruned(tmp_path):
    repo = flaky_repo(tmp_path, {"det": CORRECT}, {"det": BROKEN})
    review, _ = do_replay(repo, runs=1)
    review.close()
    import shutil
    for tree in _worktrees(repo):
        shutil.rmtree(tree)  # what a SIGKILL during `git worktree add` or a cleaner leaves
    review, outcome = do_replay(repo, runs=1)
    review.close()
    assert all(Path(t).is_dir() for t in _worktrees(repo)) and len(_worktrees(repo)) == 2
    assert outcome.decisions["det.sum"].row == 3


def test_fresh_worktrees_are_removed_afterwards(tmp_path):
    repo = flaky_repo(tmp_path, {"det": CORRECT}, {"det": BROKEN})
    review, outcome = do_replay(repo, runs=1, fresh_worktrees=True)
    review.close()
    assert _worktrees(repo) == []
    assert outcome.decisions["det.sum"].row == 3


def test_ctrl_c_releases_the_lease_cleans_the_worktrees_and_writes_no_sheet(tmp_path):
    repo = flaky_repo(tmp_path, {"det": CORRECT}, {"det": BROKEN})
    artifacts = tmp_path / "sheets"
    review = load_review(repo, "main", "HEAD", TODAY)
    store = open_store(None, review.repo.common_dir)

    def interrupt(step):
        for tree in _worktrees(repo):
            (Path(tree) / "scratch.tmp").write_text("mid-run file")
        raise KeyboardInterrupt

    options = ReplayOptions(runs=3, artifacts=artifacts, workspace="ws-ctrl-c")
    with pytest.raises(KeyboardInterrupt):
        replay(review, store, options, interrupt)
    assert store.status("ws-ctrl-c").state == "missing"  # released, not left to its TTL
    store.close()
    review.close()
    assert not artifacts.exists() or not list(artifacts.glob(f"*{SHEET_SUFFIX}"))
    for tree in _worktrees(repo):
        assert git(Path(tree), "status", "--porcelain", "--ignored") == ""


def test_a_workspace_held_by_another_holder_aborts_and_names_it(tmp_path):
    repo = flaky_repo(tmp_path, {"det": CORRECT}, {"det": BROKEN})
    review = load_review(repo, "main", "HEAD", TODAY)
    store = open_store(None, review.repo.common_dir)
    store.acquire("shared-ws", "nightly-job@ci", 60)
    try:
        with pytest.raises(LeaseHeld, match="nightly-job@ci") as caught:
            replay(review, store, ReplayOptions(runs=1, workspace="shared-ws", artifacts=tmp_path / "out"))
        assert caught.value.exit_code == EXIT_ABORT
        assert not list((tmp_path / "out").iterdir())  # no sheet, no manifest
    finally:
        store.close()
        review.close()


def test_redis_stopped_while_the_lease_is_held_aborts_and_leaves_no_fresh_sheet(tmp_path):
    redis_server = pytest.importorskip("redis_server")
    _seed_where(first_misses=True)
    repo = flaky_repo(tmp_path, {"flaky": FLAKY}, {"flaky": FLAKY})
    artifacts = tmp_path / "sheets"
    with redis_server.private_redis() as (url, stop):
        review = load_review(repo, "main", "HEAD", TODAY)
        store = open_store(url, review.repo.common_dir)
        stopped = []

        def stop_once(step):
            if not stopped:
                stop()
                stopped.append(True)

        try:
            with pytest.raises(RelconsoleError) as caught:
                replay(review, store, ReplayOptions(runs=4, artifacts=artifacts, ttl_seconds=1.5,
                                                    workspace="ws-redis"), stop_once)
            status = store.status("ws-redis")
        finally:
            store.close()
            review.close()
    assert caught.value.exit_code == EXIT_ABORT
    assert "no replay sheet was written" in str(caught.value) or "unreachable" in str(caught.value).lower()
    assert status.state == "stale"
    claims = [json.loads(p.read_text()) for p in artifacts.glob(f"**/*{SHEET_SUFFIX}")] if artifacts.exists() else []
    assert not [c for c in claims if (c.get("lease") or {}).get("state") == "fresh"]


def test_replay_cli_in_a_shallow_clone_aborts_and_says_how_to_fetch(tmp_path):
    repo = flaky_repo(tmp_path, {"det": CORRECT}, {"det": BROKEN})
    clone = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "1", "--no-single-branch", repo.as_uri(), str(clone))
    proc = subprocess.run([sys.executable, "-m", "relconsole", "replay", "--repo", str(clone), "--base",
                           "origin/main", "--head", "origin/patch", "--today", TODAY.isoformat()],
                          capture_output=True, text=True, env=os.environ | {"PYTHONPATH": str(PROJECT)})
    assert proc.returncode == EXIT_ABORT
    assert "fetch" in proc.stderr and "Traceback" not in proc.stderr


@given(ids=st.lists(st.text(min_size=1, max_size=8), unique=True, max_size=30), total=st.integers(1, 7),
       seed=st.randoms())
def test_shards_partition_the_relations_whatever_their_order(ids, total, seed):
    shuffled = list(ids)
    seed.shuffle(shuffled)
    parts = [Shard(k, total).select(ids) for k in range(1, total + 1)]
    assert sorted(x for part in parts for x in part) == sorted(ids)  # every id, once
    assert [set(Shard(k, total).select(shuffled)) for k in range(1, total + 1)] == [set(p) for p in parts]
    assert max(map(len, parts)) - min(map(len, parts)) <= 1  # balanced by count


@pytest.mark.parametrize("text", ["0/2", "3/2", "1", "a/b", "1/0", ""])
def test_bad_shard_specs_are_usage_errors(text):
    with pytest.raises(RelconsoleError) as caught:
        Shard.parse(text)
    assert caught.value.exit_code == 64


def test_the_heartbeat_keeps_a_short_lease_alive_through_a_longer_replay(tmp_path, monkeypatch):
    """The runs are held back until the heartbeat has renewed the lease twice (more than one
    TTL later): the sheet must still say fresh, under the same generation."""
    import threading

    from relconsole.engine.gate.replay import replay as replay_module
    from relconsole.engine.gate.wslease import wsleasesqlite
    renewals, renewed = [], threading.Event()
    real_renew = wsleasesqlite.SqliteLeaseStore.renew

    def counting_renew(self, *args, **kwargs):
        lease = real_renew(self, *args, **kwargs)
        renewals.append(lease)
        if len(renewals) >= 2:
            renewed.set()
        return lease
    monkeypatch.setattr(wsleasesqlite.SqliteLeaseStore, "renew", counting_renew)
    real_run_sides = replay_module.run_sides

    def slow_run_sides(*args, **kwargs):
        records = real_run_sides(*args, **kwargs)
        assert renewed.wait(60), "the heartbeat never renewed the lease"
        return records
    monkeypatch.setattr(replay_module, "run_sides", slow_run_sides)
    repo = flaky_repo(tmp_path, {"det": CORRECT}, {"det": BROKEN})
    # a TTL of 3 s (renewed every second): the heartbeat renews twice while the runs are held
    # back, with slack for a loaded machine, where a 0.6 s TTL expired between two renewals
    review, outcome = do_replay(repo, runs=2, ttl_seconds=3.0, workspace="short-ttl")
    review.close()
    assert len(renewals) >= 2 and renewals[-1].expires_at > renewals[0].expires_at
    sheet = outcome.sheets["det.sum"]
    assert sheet["lease"]["state"] == "fresh" and sheet["lease"]["generation"] == outcome.lease.generation
    assert outcome.lease.generation == renewals[0].generation  # renewed, never re-acquired
    assert outcome.decisions["det.sum"].row == 3


def test_run_shards_split_the_touched_relations(tmp_path):
    repo = flaky_repo(tmp_path, {"a": CORRECT, "b": CORRECT, "c": CORRECT}, {"a": BROKEN, "b": CORRECT, "c": BROKEN})
    seen = []
    for k in (1, 2):
        proc = subprocess.run([sys.executable, "-m", "relconsole", "run", "--json", "--shard", f"{k}/2",
                               "--repo", str(repo), "--today", TODAY.isoformat()],
                              capture_output=True, text=True, env=os.environ | {"PYTHONPATH": str(PROJECT)})
        payload = json.loads(proc.stdout)
        ran = {r["relation_id"] for r in payload["relations"]}
        assert proc.returncode == (1 if {"a.sum", "c.sum"} & ran else 0)
        seen.append(ran)
    assert seen[0] and seen[1] and not seen[0] & seen[1]
    assert seen[0] | seen[1] == {"a.sum", "b.sum", "c.sum"}


@given(st.lists(st.sampled_from(["oracle/**", "oracle/", "data/", "fixtures/leases/*.yaml", "*.secret", "/top.txt",
                                 "properties/catalog.json", "**/keys", "a/b/[ab]/c", "docs", "!oracle/x"]),
                min_size=1, max_size=4))
def test_listing_only_the_pattern_directories_finds_every_protected_file(patterns):
    from relconsole.engine.repo.owners import protected
    from relconsole.engine.repo.workspace import _literal_dirs
    paths = ["oracle/catalog.yaml", "oracle/x", "src/oracle/y", "data/a.csv", "src/data/b.csv",
             "fixtures/leases/l.yaml", "deep/fixtures/leases/l.yaml", "k.secret", "src/k.secret", "top.txt",
             "src/top.txt", "properties/catalog.json", "src/keys/k", "a/b/a/c", "docs/x.md", "src/docs/y"]
    dirs = _literal_dirs(tuple(patterns))
    listed = [p for p in paths if not dirs or any(p.startswith(d) for d in dirs)]
    assert [p for p in listed if protected(patterns, p)] == [p for p in paths if protected(patterns, p)]


def test_unwritable_artifacts_fail_before_any_run(tmp_path):
    repo = flaky_repo(tmp_path, {"det": CORRECT}, {"det": BROKEN})
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    review = load_review(repo, "main", "HEAD", TODAY)
    store = open_store(None, review.repo.common_dir)
    steps = []
    try:
        with pytest.raises(RelconsoleError, match="cannot write replay sheets") as caught:
            replay(review, store, ReplayOptions(runs=1, artifacts=blocker / "sub"), steps.append)
    finally:
        store.close()
        review.close()
    assert caught.value.exit_code == 64 and steps == []


def test_workspaces_with_one_slug_never_share_worktrees():
    from relconsole.engine.repo.worktrees import pool_name
    assert pool_name("a:b") != pool_name("a_b") and pool_name("a:b") == pool_name("a:b")


def test_a_lease_left_by_a_dead_local_process_says_how_to_free_it(tmp_path):
    import socket
    repo = flaky_repo(tmp_path, {"det": CORRECT}, {"det": BROKEN})
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    review = load_review(repo, "main", "HEAD", TODAY)
    store = open_store(None, review.repo.common_dir)
    holder = f"someone@{socket.gethostname()}:{dead.pid}"
    store.acquire("ws-dead", holder, 60)
    try:
        with pytest.raises(LeaseHeld) as caught:
            replay(review, store, ReplayOptions(runs=1, workspace="ws-dead", artifacts=tmp_path / "out"))
    finally:
        store.close()
        review.close()
    assert "no longer runs" in str(caught.value) and f"--holder '{holder}'" in str(caught.value)


def hangs(marker: str) -> str:
    """A subject that starts a ``sleep <marker>`` and a double-forked daemon, then hangs."""
    from test_hostile_subjects import _spawner
    return _spawner(marker, hang=True) + "\n\ndef total(values):\n    return sum(values)\n"


def test_cancel_kills_the_runs_in_flight_and_everything_the_subject_started(tmp_path):
    import threading
    import uuid
    from relconsole.engine.relations.pool import Cancel
    from relconsole.engine.gate.replay.replayrun import ReplayCancelled
    from test_hostile_subjects import _alive, _none_left
    marker = f"3333.{uuid.uuid4().int % 10**9}"
    repo = flaky_repo(tmp_path, {"det": CORRECT}, {"det": BROKEN})
    review = run_again(repo, "det.sum")  # the miss to replay; now make every replay run hang
    (repo / "det.py").write_text(hangs(marker))
    git(repo, "commit", "-q", "-am", "hang")
    review.head_sha = git(repo, "rev-parse", "HEAD").strip()
    store = open_store(None, review.repo.common_dir)
    cancel = Cancel()
    seen = []

    def cancel_once_started():
        deadline = time.monotonic() + 90
        while len(_alive(marker)) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        seen.append(len(_alive(marker)))
        cancel.cancel()
    threading.Thread(target=cancel_once_started, daemon=True).start()
    started = time.monotonic()
    try:
        with pytest.raises(ReplayCancelled):
            replay(review, store, ReplayOptions(runs=3, workspace="ws-cancel", artifacts=tmp_path / "out",
                                                cancel=cancel))
        elapsed = time.monotonic() - started
        assert store.status("ws-cancel").state == "missing"
    finally:
        store.close()
        review.close()
        left = _none_left(marker)
        for pid in _alive(marker):
            os.kill(pid, 9)
    assert seen and seen[0] >= 2, "the hanging subject never started its processes"
    assert left == [], "processes the subject started outlived the cancel"
    assert elapsed < 60, f"cancelling took {elapsed:.1f} s"
    assert not list((tmp_path / "out").glob("*.json"))
    for tree in _worktrees(repo):
        assert git(Path(tree), "status", "--porcelain", "--ignored") == ""


# --- the gate's run phase counted among the replay's runs (issue 37) ---------------------------

def _record(seed: int, held: bool = False):
    from relconsole.engine.relations.records import RunRecord
    return RunRecord(held, seed)


def _evidence_of(first, reruns=(), base=None, runs=5, seeds=None, replay_seed=None, given=None):
    from types import SimpleNamespace

    from relconsole.engine.gate.replay.replay import run_phase_evidence
    from relconsole.engine.relations.records import RelationResult
    from relconsole.engine.decision import Decision
    result = RelationResult("r.one", "missed", Decision("reject", "property_fail"), "", first, list(reruns), base=base)
    review = SimpleNamespace(results={"r.one": result})
    plan = SimpleNamespace(replay_seed=replay_seed, given=given)
    return run_phase_evidence(review, "r.one", plan, ReplayOptions(runs=runs, seeds=seeds))


def test_a_freeze_s_reruns_count_first_then_the_first_run_and_the_base_check_with_it():
    first, base = _record(11), _record(11, held=True)
    reruns = [_record(20 + k, held=k == 1) for k in range(5)]
    assert _evidence_of(first, reruns, base) == {"head": reruns, "base": []}  # the first run is not among them
    two = _evidence_of(first, reruns[:2], base)
    assert two == {"head": [*reruns[:2], first], "base": [base]}  # the base ran the first run's seed
    assert _evidence_of(first, [], base, runs=1) == {"head": [first], "base": [base]}
    assert _evidence_of(first, [], _record(99)) == {"head": [first], "base": []}  # another seed: not that run


def test_nothing_counts_when_the_replay_repeats_given_seeds_and_a_catalog_seed_keeps_its_own_runs():
    first, reruns = _record(11), [_record(12), _record(11)]
    assert _evidence_of(first, reruns, seeds=[1, 2]) == {"head": [], "base": []}
    # a replay judging an input of its own (a drawn or shrunk miss) counts no run made on others
    assert _evidence_of(first, reruns, given={"rows": [1]}) == {"head": [], "base": []}
    assert _evidence_of(first, reruns, replay_seed=11)["head"] == [reruns[1], first]


def test_a_replay_runs_what_the_run_phase_left_each_on_a_server_of_its_own(monkeypatch, tmp_path):
    """HEAD runs only what is left of the runs; the base runs the carried runs' seeds first (both
    sides see the same inputs run for run) but not a seed a carried base record ran already;
    every run asks for fresh servers."""
    from types import SimpleNamespace

    from relconsole.engine.gate.replay import replayrun
    from relconsole.engine.relations.records import RunPlan
    asked = []

    class Pool:
        def __init__(self, size, cwd, cancel):
            self.cwd = cwd

        def evaluate(self, plan, seed):
            asked.append((self.cwd.name, seed, plan.fresh_server))
            return _record(seed)

        def close(self):
            pass

    drawn = iter(range(100, 200))
    monkeypatch.setattr(replayrun, "WorkerPool", Pool)
    monkeypatch.setattr(replayrun, "draw_seed", lambda: next(drawn))
    sides = [replayrun.ReplaySide("head", "h", tmp_path / "head"), replayrun.ReplaySide("base", "b", tmp_path / "base")]
    plan = RunPlan(None, tmp_path, [], "seeds", tmp_path / "seeds.jsonl", "pin")
    carried_head, carried_base = [_record(7), _record(8)], [_record(8, held=True)]
    records = replayrun.run_sides({"r.one": {"head": plan, "base": plan}}, sides, ReplayOptions(runs=4, workers=1),
                                  SimpleNamespace(lost=None), None,
                                  {"r.one": {"head": carried_head, "base": carried_base}})
    assert [seed for side, seed, _ in asked if side == "head"] == [102, 103]
    assert sorted(seed for side, seed, _ in asked if side == "base") == [7, 102, 103]
    assert all(fresh for _, _, fresh in asked)
    assert [r.seed for r in records["r.one"]["head"]] == [7, 8, 102, 103]
    assert sorted(r.seed for r in records["r.one"]["base"]) == [7, 8, 102, 103]
