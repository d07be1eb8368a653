"""Many machines (issue 4 item 7): shards replay as separate processes against one Redis
lease store, and `decide` over every shard's sheets equals the unsharded decision."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import test_replay
from conftest import TODAY
from redis_server import redis_url  # noqa: F401 (fixture)
from test_replay import BROKEN, CORRECT, FLAKY, PROJECT, flaky_repo

ENV = os.environ | {"PYTHONPATH": str(PROJECT), "RELCONSOLE_TODAY": TODAY.isoformat()}


SEEDED = Path(__file__).with_name("seeded_relconsole.py")


def relconsole(*args: str, cwd: Path) -> subprocess.Popen:
    """relconsole in its own process, its run seeds pinned to the model's (``test_replay.SEED``)."""
    return subprocess.Popen([sys.executable, str(SEEDED), str(test_replay.SEED), *args], cwd=cwd, env=ENV,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(proc: subprocess.Popen) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=300)
    return proc.returncode, out, err


def decide(directory: Path, repo: Path, url: str) -> dict:
    code, out, err = finish(relconsole("decide", "--sheet", str(directory), "--json", "--no-history",
                                       "--lease-url", url, cwd=repo))
    payload = json.loads(out)
    assert code == payload["exit_code"], err
    return payload


def test_two_shards_on_redis_decide_like_one_run(tmp_path, redis_url):  # noqa: F811
    test_replay._seed_where(first_misses=True)
    repo = flaky_repo(tmp_path, {"both": FLAKY, "headonly": CORRECT, "det": CORRECT, "fine": CORRECT},
                      {"both": FLAKY, "headonly": FLAKY, "det": BROKEN, "fine": CORRECT})
    common = ["--runs", "4", "--lease-url", redis_url]
    code, out, err = finish(relconsole("replay", *common, "--artifacts", str(tmp_path / "whole"), cwd=repo))
    assert code in (0, 1, 3, 4), err
    whole = decide(tmp_path / "whole", repo, redis_url)
    shards = [relconsole("replay", *common, "--shard", f"{k}/2", "--artifacts", str(tmp_path / "shards" / str(k)),
                         cwd=repo) for k in (1, 2)]
    results = [finish(p) for p in shards]
    for code, _out, err in results:
        assert code in (0, 1, 3, 4) and "Traceback" not in err, err
    per_shard = [sorted(p.name for p in (tmp_path / "shards" / str(k)).glob("*.sheet.json")) for k in (1, 2)]
    assert per_shard[0] and per_shard[1], "each shard replays some of the missed relations"
    assert not set(per_shard[0]) & set(per_shard[1])
    merged = decide(tmp_path / "shards", repo, redis_url)
    key = ("decision", "reason", "row", "exit_code")
    assert [merged[k] for k in key] == [whole[k] for k in key]

    def by_relation(payload):
        return {r["test_id"]: (r["decision"], r["reason"], r["row"]) for r in payload["relations"]}
    assert by_relation(merged) == by_relation(whole)
    assert set(by_relation(whole)) == {"both.sum", "headonly.sum", "det.sum"}  # fine.sum held


def test_a_sheet_whose_lease_generation_moved_on_is_stale_evidence(tmp_path, redis_url):  # noqa: F811
    repo = flaky_repo(tmp_path, {"det": CORRECT}, {"det": BROKEN})
    args = ["--runs", "1", "--lease-url", redis_url, "--workspace", f"fence-{os.getpid()}-{tmp_path.name}"]
    finish(relconsole("replay", *args, "--artifacts", str(tmp_path / "old"), cwd=repo))
    assert decide(tmp_path / "old", repo, redis_url)["row"] == 3
    finish(relconsole("replay", *args, "--artifacts", str(tmp_path / "new"), cwd=repo))
    old = decide(tmp_path / "old", repo, redis_url)  # a newer holder has run since: row 2
    assert (old["decision"], old["reason"], old["row"]) == ("abort", "lease_not_fresh", 2)
    assert decide(tmp_path / "new", repo, redis_url)["row"] == 3
