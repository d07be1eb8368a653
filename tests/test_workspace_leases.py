"""Workspace leases (SPEC §5) on both stores, SQLite and Redis, with the same tests.

Every test but one takes ``store_url`` (params ``sqlite`` and ``redis``), so the embedded
and the shared store are held to one set of semantics (the exception stops its own Redis
server while a lease is held); each test uses fresh random workspace
names, so a Redis server shared by the session (or CI's) needs no flushing.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from relconsole.engine.errors import EXIT_ABORT, EXIT_PASS, EXIT_USAGE, UsageError
from relconsole.engine.gate.wslease.wslease import open_store
from relconsole.engine.gate.wslease.wsleaseredis import RedisLeaseStore
from relconsole.engine.gate.wslease.wsleasesqlite import SqliteLeaseStore
from relconsole.engine.gate.wslease.wsleasestore import STATES, LeaseHeld, NotHolder, StoreUnavailable
from bench.gitrepo import git
from tests.redis_server import _free_port, private_redis, redis_url  # noqa: F401 (redis_url: fixture)

ROOT = Path(__file__).resolve().parents[1]
RACERS, ROUNDS = 32, 20


@pytest.fixture(params=["sqlite", "redis"])
def store_url(request, tmp_path) -> str:
    """A store URL per backend: a SQLite file in tmp_path, or the session's Redis server."""
    if request.param == "sqlite":
        return f"sqlite://{tmp_path / 'leases.sqlite3'}"
    return request.getfixturevalue("redis_url")


@pytest.fixture
def store(store_url):
    with open_store(store_url, ".") as opened:
        yield opened


@pytest.fixture
def ws() -> str:
    return f"ws-{uuid.uuid4().hex[:12]}"


def wait_until_expired(store, workspace: str) -> None:
    time.sleep(store.get(workspace).seconds_left() + 0.05)


# --- the rules -------------------------------------------------------------------------

def test_a_second_holder_is_refused_with_the_holder_named(store, ws):
    first = store.acquire(ws, "alice", 30)
    with pytest.raises(LeaseHeld) as refused:
        store.acquire(ws, "bob", 30)
    assert refused.value.exit_code == EXIT_ABORT
    assert refused.value.lease.holder == "alice" and "alice" in str(refused.value) and ws in str(refused.value)
    assert 0 < refused.value.seconds_left <= 30
    assert store.get(ws) == first


def test_an_expired_lease_is_taken_over_and_the_generation_rises(store, ws):
    first = store.acquire(ws, "alice", 0.5)
    assert store.status(ws, "alice").state == "fresh"
    wait_until_expired(store, ws)
    expired = store.status(ws, "alice")
    assert expired.state == "stale" and "expired" in expired.reason and expired.lease == first
    second = store.acquire(ws, "bob", 30)
    assert second.holder == "bob" and second.id != first.id
    assert second.generation > first.generation and second.generation == store.generation(ws)
    assert store.status(ws, "bob").state == "fresh" and store.status(ws, "alice").state == "stale"


def test_renew_and_release_by_a_non_holder_are_refused(store, ws):
    held = store.acquire(ws, "alice", 30)
    for attempt in (lambda: store.renew(ws, "bob", 60), lambda: store.release(ws, "bob")):
        with pytest.raises(NotHolder) as refused:
            attempt()
        assert "alice" in str(refused.value) and refused.value.exit_code == EXIT_ABORT
    assert store.get(ws) == held
    renewed = store.renew(ws, "alice", 60)
    assert (renewed.id, renewed.generation, renewed.acquired_at) == (held.id, held.generation, held.acquired_at)
    assert renewed.expires_at > held.expires_at


def test_the_holder_cannot_renew_or_release_an_expired_lease(store, ws):
    store.acquire(ws, "alice", 0.5)
    wait_until_expired(store, ws)
    for attempt in (lambda: store.renew(ws, "alice", 30), lambda: store.release(ws, "alice")):
        with pytest.raises(NotHolder, match="expired"):
            attempt()


def test_the_same_holder_reacquiring_extends_its_lease(store, ws):
    first = store.acquire(ws, "alice", 1)
    again = store.acquire(ws, "alice", 30)
    assert (again.id, again.generation) == (first.id, first.generation) == (store.get(ws).id, store.generation(ws))
    assert again.expires_at > first.expires_at and again.seconds_left() > 25


def test_release_ends_the_lease_and_keeps_the_generation(store, ws):
    assert store.generation(ws) == 0 and store.status(ws).state == "missing"
    held = store.acquire(ws, "alice", 30)
    store.release(ws, "alice")
    assert store.get(ws) is None and store.generation(ws) == held.generation
    status = store.status(ws, "alice")
    assert (status.state, status.lease, status.generation) == ("missing", None, held.generation)
    with pytest.raises(NotHolder):
        store.release(ws, "alice")
    assert store.acquire(ws, "bob", 30).generation > held.generation


def test_list_shows_expired_leases_but_not_released_ones(store, ws):
    short, long_, gone = f"{ws}-short", f"{ws}-long", f"{ws}-gone"
    store.acquire(short, "alice", 0.5)
    store.acquire(long_, "bob", 30)
    store.acquire(gone, "carol", 30)
    store.release(gone, "carol")
    wait_until_expired(store, short)
    mine = {lease.workspace: lease for lease in store.list() if lease.workspace.startswith(ws)}
    assert sorted(mine) == sorted([short, long_])
    assert mine[short].seconds_left() == 0 and mine[long_].holder == "bob"
    assert [store.status(name).state for name in (short, long_, gone)] == ["stale", "fresh", "missing"]


@pytest.mark.parametrize("ttl", [0, -1.5, float("nan"), float("inf"), "soon"])
def test_a_ttl_must_be_a_positive_number_of_seconds(store, ws, ttl):
    with pytest.raises(UsageError) as refused:
        store.acquire(ws, "alice", ttl)
    assert refused.value.exit_code == EXIT_USAGE and store.get(ws) is None


def test_random_operations_follow_the_single_holder_model(store, ws):
    """200 random acquire/renew/release calls by three holders (TTLs too long to lapse)
    agree with a model of one holder and a generation that rises on every new acquisition
    and stays put otherwise."""
    rng = random.Random(ws)
    holder, generation = None, 0
    for _ in range(200):
        op, who = rng.choice(["acquire", "renew", "release"]), rng.choice("abc")
        allowed = holder in (None, who) if op == "acquire" else holder == who
        error = LeaseHeld if op == "acquire" else NotHolder
        call = (lambda: store.release(ws, who)) if op == "release" else \
            (lambda: getattr(store, op)(ws, who, 60))
        if not allowed:
            with pytest.raises(error):
                call()
            continue
        result = call()
        if op == "acquire" and holder is None:
            assert result.generation > generation
            generation = result.generation
        holder = None if op == "release" else who
        assert (store.get(ws).holder if store.get(ws) else None) == holder
        assert store.generation(ws) == generation


# --- races and crashes ---------------------------------------------------------------

def _racer(url: str, prefix: str, index: int, barrier, results) -> None:
    """One of RACERS processes: in every round, wait for the others, then try to acquire."""
    store = open_store(url, ".")
    holder = f"racer-{index}"
    for round_ in range(ROUNDS):
        barrier.wait()
        try:
            lease = store.acquire(f"{prefix}-{round_}", holder, 60)
            results.put((round_, holder, "won", lease.holder, lease.generation))
        except LeaseHeld as exc:
            results.put((round_, holder, "held", exc.lease.holder, str(exc)))
        except Exception as exc:  # reported, so the assertion below names it
            results.put((round_, holder, "error", type(exc).__name__, str(exc)))
    store.close()


def test_racing_processes_have_exactly_one_winner_per_round(store_url, ws):
    ctx = multiprocessing.get_context("spawn")
    barrier, results = ctx.Barrier(RACERS, timeout=120), ctx.Queue()
    started = time.monotonic()
    procs = [ctx.Process(target=_racer, args=(store_url, ws, i, barrier, results)) for i in range(RACERS)]
    for proc in procs:
        proc.start()
    rows = [results.get(timeout=180) for _ in range(RACERS * ROUNDS)]
    for proc in procs:
        proc.join(timeout=30)
    elapsed = time.monotonic() - started
    print(f"\n{RACERS} processes x {ROUNDS} rounds on {store_url.split(':')[0]}: {elapsed:.1f} s")
    for round_ in range(ROUNDS):
        mine = [row for row in rows if row[0] == round_]
        winners = [row for row in mine if row[2] == "won"]
        assert len(mine) == RACERS and len(winners) == 1, mine
        winner = winners[0][1]
        assert winners[0][3] == winner and winners[0][4] > 0
        losers = [row for row in mine if row is not winners[0]]
        assert all(row[2] == "held" and row[3] == winner and winner in row[4] for row in losers), losers
    assert all(proc.exitcode == 0 for proc in procs)


VICTIM = """
import sys, time
from relconsole.engine.gate.wslease.wslease import open_store
lease = open_store(sys.argv[1], ".").acquire(sys.argv[2], "victim", float(sys.argv[3]))
print(lease.generation, flush=True)
time.sleep(600)
"""


def child_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "RELCONSOLE_LEASE_URL"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    return env | extra


def test_a_killed_holder_blocks_others_until_its_ttl_lapses(store, store_url, ws):
    proc = subprocess.Popen([sys.executable, "-c", VICTIM, store_url, ws, "2"], stdout=subprocess.PIPE,
                            text=True, env=child_env())
    try:
        generation = int(proc.stdout.readline())
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
    assert proc.returncode == -signal.SIGKILL
    with pytest.raises(LeaseHeld, match="victim"):
        store.acquire(ws, "heir", 30)
    assert store.status(ws, "heir").state == "stale" and store.status(ws).state == "fresh"
    wait_until_expired(store, ws)
    heir = store.acquire(ws, "heir", 30)
    assert heir.holder == "heir" and heir.generation > generation


# --- unreachable stores --------------------------------------------------------------

@pytest.fixture
def dead_url(store_url, tmp_path) -> str:
    """A URL of the same backend that cannot be reached: a SQLite file under a regular
    file, or a Redis port nobody listens on."""
    if store_url.startswith("sqlite"):
        (tmp_path / "plain-file").write_text("not a directory")
        return f"sqlite://{tmp_path / 'plain-file' / 'leases.sqlite3'}"
    return f"redis://127.0.0.1:{_free_port()}/0"


def test_an_unreachable_store_is_unavailable_and_named(dead_url, ws, monkeypatch):
    import socket
    where = dead_url.split("://", 1)[1].lstrip("/")
    attempts = []
    connect = socket.socket.connect
    monkeypatch.setattr(socket.socket, "connect", lambda sock, address: attempts.append(address) or connect(sock, address))
    with pytest.raises(StoreUnavailable) as refused:
        with open_store(dead_url, ".") as store:
            assert store.status(ws).state == "stale" and where in store.status(ws).reason
            store.acquire(ws, "alice", 30)
    assert where in str(refused.value) and refused.value.exit_code == EXIT_ABORT
    assert len(attempts) <= 3  # one connection attempt per operation at most: no retry storm


def test_a_redis_server_that_goes_away_leaves_a_stale_lease(ws):
    """Redis only (its own server, stopped mid-lease); the SQLite twin is the test above."""
    with private_redis() as (url, stop):
        store = open_store(url, ".")
        assert store.acquire(ws, "alice", 30).generation > 0
        stop()
        status = store.status(ws, "alice")
        assert (status.state, status.lease, status.reachable) == ("stale", None, False)
        assert url in status.reason
        for call in (lambda: store.acquire(ws, "alice", 30), lambda: store.renew(ws, "alice", 30),
                     lambda: store.release(ws, "alice"), lambda: store.get(ws), store.list):
            with pytest.raises(StoreUnavailable, match=url):
                call()
        store.close()


# --- opening stores ------------------------------------------------------------------

@pytest.mark.parametrize("url", ["http://example.invalid/x", "sqlite://", "sqlite:", "postgres://h/db"])
def test_an_unknown_store_url_is_a_usage_error(store_url, url):
    with pytest.raises(UsageError):
        open_store(url, ".")


def test_the_default_store_is_the_env_url_or_a_file_under_the_git_dir(store_url, tmp_path, monkeypatch, ws):
    repo = tmp_path / "repo"
    git(tmp_path, "init", "-q", str(repo))
    git_dir = Path(git(repo, "rev-parse", "--absolute-git-dir").strip())
    if store_url.startswith("redis"):
        monkeypatch.setenv("RELCONSOLE_LEASE_URL", store_url)
    else:
        monkeypatch.delenv("RELCONSOLE_LEASE_URL", raising=False)
    with open_store(None, git_dir) as default:
        lease = default.acquire(ws, "alice", 30)
    expected = RedisLeaseStore if store_url.startswith("redis") else SqliteLeaseStore
    assert isinstance(default, expected)
    again = store_url if store_url.startswith("redis") else f"sqlite:{git_dir / 'relconsole' / 'workspace-leases.sqlite3'}"
    with open_store(again, ".") as explicit:
        assert explicit.get(ws) == lease


# --- the CLI -------------------------------------------------------------------------

def run_cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "relconsole", "workspace", *args], capture_output=True,
                          text=True, env=env or child_env(), cwd=ROOT, timeout=60)


def test_cli_acquire_has_one_winner_and_names_the_holder(store_url, ws):
    common = ["--workspace", ws, "--lease-url", store_url]
    won = run_cli("acquire", *common, "--holder", "alice", "--ttl-seconds", "30", "--json")
    assert won.returncode == EXIT_PASS, won.stderr
    lease = json.loads(won.stdout)
    assert (lease["holder"], lease["workspace"]) == ("alice", ws)
    with open_store(store_url, ".") as store:
        assert lease["generation"] == store.generation(ws) > 0
    lost = run_cli("acquire", *common, "--holder", "bob")
    assert lost.returncode == EXIT_ABORT and lost.stdout == ""
    assert len(lost.stderr.splitlines()) == 1 and "alice" in lost.stderr
    lost_json = run_cli("acquire", *common, "--holder", "bob", "--json")
    assert lost_json.returncode == EXIT_ABORT
    assert json.loads(lost_json.stdout)["error"]["holder"] == "alice"


def test_cli_status_answers_fresh_stale_and_missing(store_url, ws):
    common = ["--workspace", ws, "--lease-url", store_url]

    def status(*extra: str) -> dict:
        done = run_cli("status", *common, "--json", *extra)
        assert done.returncode == EXIT_PASS, done.stderr
        return json.loads(done.stdout)

    acquired = run_cli("acquire", *common, "--holder", "alice", "--json")
    assert acquired.returncode == EXIT_PASS, acquired.stderr
    generation = json.loads(acquired.stdout)["generation"]
    held = status()
    assert (held["state"], held["holder"], held["generation"]) == ("fresh", "alice", generation)
    assert 0 < held["seconds_left"] <= 600
    assert status("--holder", "bob")["state"] == "stale"
    assert run_cli("release", *common, "--holder", "bob").returncode == EXIT_ABORT
    assert run_cli("release", *common, "--holder", "alice").returncode == EXIT_PASS
    gone = status()
    assert (gone["state"], gone["holder"], gone["generation"]) == ("missing", None, generation)
    assert {held["state"], gone["state"]} <= set(STATES)
    text = run_cli("status", *common)
    assert text.returncode == EXIT_PASS and "missing" in text.stdout


def test_cli_text_says_acquired_and_renewed(store_url, ws):
    """Issue 18: renewing printed "renewd workspace"."""
    common = ["--workspace", ws, "--lease-url", store_url, "--holder", "alice"]
    acquired, renewed = run_cli("acquire", *common), run_cli("renew", *common)
    assert acquired.stdout.startswith(f"acquired workspace {ws} ") and acquired.returncode == EXIT_PASS
    assert renewed.stdout.startswith(f"renewed workspace {ws} ") and renewed.returncode == EXIT_PASS


def test_cli_default_holder_is_the_calling_process(store_url, ws):
    """Two commands run by one parent (a CI step's shell; here this test) are one holder."""
    common = ["--workspace", ws, "--lease-url", store_url]
    assert run_cli("acquire", *common, "--ttl-seconds", "30").returncode == EXIT_PASS
    renewed = run_cli("renew", *common, "--ttl-seconds", "60", "--json")
    assert renewed.returncode == EXIT_PASS, renewed.stderr
    assert json.loads(renewed.stdout)["holder"].endswith(f":{os.getpid()}")
    assert run_cli("release", *common).returncode == EXIT_PASS


def test_cli_uses_the_repository_store_by_default(store_url, tmp_path, ws):
    repo = tmp_path / "repo"
    git(tmp_path, "init", "-q", str(repo))
    (repo / "sub").mkdir()
    env = child_env(RELCONSOLE_LEASE_URL=store_url) if store_url.startswith("redis") else child_env()
    done = run_cli("acquire", "--workspace", ws, "--holder", "alice", "--repo", str(repo / "sub"), env=env)
    assert done.returncode == EXIT_PASS, done.stderr
    url = store_url if store_url.startswith("redis") else f"sqlite:{repo / '.git/relconsole/workspace-leases.sqlite3'}"
    with open_store(url, ".") as store:
        assert store.get(ws).holder == "alice"


def test_cli_status_exits_3_only_when_nothing_can_be_read(dead_url, ws):
    done = run_cli("status", "--workspace", ws, "--lease-url", dead_url, "--json")
    assert done.returncode == EXIT_ABORT
    error = json.loads(done.stdout)["error"]
    assert error["exit_code"] == EXIT_ABORT and dead_url.split("://", 1)[1].lstrip("/") in error["message"]
    assert len(done.stderr.splitlines()) == 1


@pytest.mark.parametrize("args", [[], ["acquire"], ["acquire", "--workspace", "w", "--ttl-seconds", "0"],
                                  ["status", "--workspace", "w", "--lease-url", "ftp://x"],
                                  ["acquire", "--workspace", "w", "--ttl-seconds", "soon"]])
def test_cli_misuse_exits_64(store_url, args):
    done = run_cli(*args, "--lease-url", store_url) if args and "--lease-url" not in args else run_cli(*args)
    assert done.returncode == EXIT_USAGE, done.stderr


def test_ttl_beyond_a_week_is_a_usage_error_and_nothing_is_stored(tmp_path):
    from relconsole.engine.errors import UsageError
    from relconsole.engine.gate.wslease.wslease import open_store
    from relconsole.engine.gate.wslease.wsleasestore import MAX_TTL_SECONDS
    store = open_store(f"sqlite://{tmp_path / 'l.sqlite3'}", tmp_path)
    try:
        for ttl in (MAX_TTL_SECONDS * 2, 1e308):
            with pytest.raises(UsageError):
                store.acquire("w", "h", ttl)
        assert store.get("w") is None
        assert store.acquire("w", "h", MAX_TTL_SECONDS).seconds_left() > 0
    finally:
        store.close()


@pytest.mark.parametrize("url", ["redis://127.0.0.1:6399/0?password=s3cret", "redis://u:s3cret@h:1/0",
                                 "rediss://h:1/0?db=1&PASSWORD=s3cret&x=1"])
def test_passwords_never_appear_in_a_redacted_url(url):
    from relconsole.engine.gate.wslease.wsleasestore import redact
    shown = redact(url)
    assert "s3cret" not in shown and "***" in shown and redact(shown) == shown


def test_a_redis_url_without_the_redis_client_is_one_line_and_exit_64(tmp_path):
    """redis is the optional extra relconsole[redis]: without it a redis:// URL is a usage
    error naming the extra, not a traceback (issue 17)."""
    probe = ("import sys; sys.modules['redis'] = None\n"
             "from relconsole.engine.errors import UsageError\n"
             "from relconsole.engine.gate.wslease.wslease import open_store\n"
             "try:\n    open_store('redis://:secret@127.0.0.1:1/0', sys.argv[1])\n"
             "except UsageError as exc:\n    print(exc.exit_code, exc.one_line())\n")
    proc = subprocess.run([sys.executable, "-c", probe, str(tmp_path)], capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parents[1], check=False)
    code, _, message = proc.stdout.strip().partition(" ")
    assert code == "64" and "relconsole[redis]" in message and "secret" not in message, proc
