"""Leases under faults (issue 18, SPEC §5): a lost generation key never revives a fencing token.

The fault: on a Redis server with ``maxmemory-policy allkeys-lru`` the counter
``relconsole:wsgen:<workspace>`` was evicted, the next acquisition got generation 1 again,
and a sheet recorded under the superseded generation 1 was accepted as current.

Here: real ``redis-server`` processes started with ``--maxmemory 2mb`` and an evicting
policy (eviction forced by filling memory), Redis ACL users that may not run CONFIG or
INFO, and a hypothesis search over interleavings of lease operations and lost keys on
both stores (a lost SQLite row stands for a deleted store file).
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from relconsole.engine.errors import EXIT_ABORT
from relconsole.engine.gate.sheets import fence
from relconsole.engine.gate.wslease.wslease import open_store
from relconsole.engine.gate.wslease.wsleasestore import LeaseHeld, NotHolder, StoreUnavailable
from relconsole.engine.gate.wslease.wsleaseredis import RedisLeaseStore
from tests.redis_server import private_redis, redis_url  # noqa: F401 (redis_url: fixture)
from tests.test_workspace_leases import child_env

redis = pytest.importorskip("redis")

ROOT = Path(__file__).resolve().parents[1]
EVICTING = ("--maxmemory", "2mb", "--maxmemory-policy", "allkeys-lru")
BOUNDED = ("--maxmemory", "2mb", "--maxmemory-policy", "noeviction")


def ws_name() -> str:
    return f"ws-{uuid.uuid4().hex[:12]}"


def sheet_of(lease) -> dict:
    """The lease part of a replay sheet recorded under ``lease`` (what ``fence`` checks)."""
    return {"lease": {"state": "fresh", "workspace": lease.workspace, "generation": lease.generation}}


def is_current(lease, store) -> bool:
    return fence(sheet_of(lease), store.generation)["lease"]["state"] == "fresh"


def fill_until_gone(url: str, key: str) -> int:
    """Write 1 kB values until the server evicts ``key``; returns how many were written."""
    client = redis.Redis.from_url(url)
    try:
        for written in range(100_000):
            if not client.exists(key):
                return written
            client.set(f"filler:{uuid.uuid4().hex}", b"x" * 1024)
        raise AssertionError(f"{key} was never evicted")
    finally:
        client.close()


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "relconsole", *args], capture_output=True, text=True,
                          env=child_env(), cwd=ROOT, timeout=60)


# --- an evicting server is refused ----------------------------------------------------

def test_an_evicting_server_is_refused_before_anything_is_written():
    ws = ws_name()
    with private_redis(*EVICTING) as (url, _stop):
        with open_store(url, ".") as store:
            with pytest.raises(StoreUnavailable) as refused:
                store.acquire(ws, "alice", 60)
            status = store.status(ws)
        message = refused.value.one_line()
        assert refused.value.exit_code == EXIT_ABORT
        assert "allkeys-lru" in message and "noeviction" in message and url in message
        assert (status.state, status.reachable) == ("stale", False) and "allkeys-lru" in status.reason
        assert redis.Redis.from_url(url).keys("relconsole:*") == []


def test_the_cli_refuses_an_evicting_server_with_one_line_and_exit_3():
    ws = ws_name()
    with private_redis(*EVICTING) as (url, _stop):
        for action in ("acquire", "status"):
            done = run_cli("workspace", action, "--workspace", ws, "--lease-url", url, "--holder", "alice")
            assert done.returncode == EXIT_ABORT, done
            assert len(done.stderr.splitlines()) == 1 and "allkeys-lru" in done.stderr
            assert "Traceback" not in done.stderr


def test_a_sheet_fenced_against_an_evicting_server_is_stale_evidence():
    with private_redis(*EVICTING) as (url, _stop):
        with open_store(url, ".") as store:
            recorded = {"lease": {"state": "fresh", "workspace": ws_name(), "generation": 1}}
            fenced = fence(recorded, store.generation)["lease"]
    assert fenced["state"] == "stale" and "allkeys-lru" in fenced["fence"]


# --- the policy when CONFIG is refused ------------------------------------------------

def _acl_user(url: str, name: str, *denied: str) -> str:
    """A Redis ACL user allowed everything but ``denied``; returns its URL."""
    admin = redis.Redis.from_url(url)
    admin.execute_command("ACL", "SETUSER", name, "on", ">pw", "~*", "&*", "+@all", *denied)
    admin.close()
    return url.replace("redis://", f"redis://{name}:pw@")


def test_without_config_the_policy_is_read_from_info_memory():
    ws = ws_name()
    with private_redis(*BOUNDED) as (url, _stop):
        user = _acl_user(url, "noconfig", "-config")
        with pytest.raises(redis.exceptions.NoPermissionError):
            redis.Redis.from_url(user).config_get("maxmemory-policy")
        with open_store(user, ".") as store:
            assert store.acquire(ws, "alice", 60).holder == "alice"
    with private_redis(*EVICTING) as (url, _stop):
        with open_store(_acl_user(url, "noconfig", "-config"), ".") as store:
            with pytest.raises(StoreUnavailable, match="allkeys-lru"):
                store.acquire(ws, "alice", 60)


def test_a_policy_that_cannot_be_read_is_refused():
    with private_redis(*BOUNDED) as (url, _stop):
        user = _acl_user(url, "blind", "-config", "-info")
        with open_store(user, ".") as store:
            with pytest.raises(StoreUnavailable) as refused:
                store.acquire(ws_name(), "alice", 60)
    message = refused.value.one_line()
    assert "maxmemory-policy" in message and "noeviction" in message and "pw" not in message


# --- a lost counter only moves the generation forward --------------------------------

def test_a_really_evicted_counter_never_revives_a_superseded_generation():
    """The policy is switched to allkeys-lru behind a connected store's back (an operator's
    CONFIG SET), memory is filled until the counter is evicted: the next generation still
    rises past every earlier one, and the superseded sheet stays stale."""
    ws = ws_name()
    with private_redis(*BOUNDED) as (url, _stop):
        with open_store(url, ".") as store:
            alice = store.acquire(ws, "alice", 60)
            store.release(ws, "alice")
            bob = store.acquire(ws, "bob", 60)
            store.release(ws, "bob")
            assert bob.generation > alice.generation and not is_current(alice, store)
            redis.Redis.from_url(url).config_set("maxmemory-policy", "allkeys-lru")
            assert fill_until_gone(url, RedisLeaseStore.GEN_PREFIX + ws) > 0
            carol = store.acquire(ws, "carol", 60)
            assert carol.generation > bob.generation > alice.generation
            assert is_current(carol, store)
            assert not is_current(alice, store) and not is_current(bob, store)
        with open_store(url, ".") as reconnected:  # a new connection sees the policy
            with pytest.raises(StoreUnavailable, match="allkeys-lru"):
                reconnected.generation(ws)


@pytest.fixture(params=["sqlite", "redis"])
def store_url(request, tmp_path) -> str:
    if request.param == "sqlite":
        return f"sqlite://{tmp_path / 'leases.sqlite3'}"
    return request.getfixturevalue("redis_url")


def lose(store_url: str, ws: str, what: str) -> None:
    """Lose the workspace's counter (``gen``), its lease record (``lease``) or both, as an
    evicting Redis or a deleted SQLite file does."""
    if store_url.startswith("redis"):
        client = redis.Redis.from_url(store_url)
        keys = {"gen": [RedisLeaseStore.GEN_PREFIX], "lease": [RedisLeaseStore.HASH_PREFIX],
                "both": [RedisLeaseStore.GEN_PREFIX, RedisLeaseStore.HASH_PREFIX]}[what]
        client.delete(*(prefix + ws for prefix in keys))
        client.close()
        return
    tables = {"gen": ["generations"], "lease": ["leases"], "both": ["generations", "leases"]}[what]
    with sqlite3.connect(store_url[len("sqlite://"):]) as db:
        for table in tables:
            db.execute(f"DELETE FROM {table} WHERE workspace = ?", (ws,))


def test_a_deleted_counter_and_lease_only_move_the_generation_forward(store_url):
    ws = ws_name()
    with open_store(store_url, ".") as store:
        first = store.acquire(ws, "alice", 60)
        store.release(ws, "alice")
        second = store.acquire(ws, "bob", 60)
        lose(store_url, ws, "both")
        assert store.generation(ws) not in (first.generation, second.generation)
        third = store.acquire(ws, "carol", 60)
        assert third.generation > second.generation > first.generation
        assert not is_current(first, store) and not is_current(second, store) and is_current(third, store)


def test_a_lost_counter_keeps_the_holders_own_generation_current(store_url):
    """Only the counter is lost while a lease is held: the holder's sheets stay current (the
    lease record still names its generation) and the next holder's generation rises."""
    ws = ws_name()
    with open_store(store_url, ".") as store:
        held = store.acquire(ws, "alice", 60)
        lose(store_url, ws, "gen")
        assert store.generation(ws) == held.generation and is_current(held, store)
        store.release(ws, "alice")
        assert store.acquire(ws, "bob", 60).generation > held.generation


OPS = st.one_of(st.tuples(st.sampled_from(["acquire", "renew", "release"]), st.sampled_from("abc")),
                st.tuples(st.just("lose"), st.sampled_from(["gen", "lease", "both"])))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(OPS, min_size=1, max_size=25))
def test_interleaved_operations_and_losses_never_reissue_a_generation(store_url, ops):
    """Whatever the order of acquire/renew/release by three holders and lost keys: every new
    acquisition's generation is above all issued before, and the store's current generation
    is never a superseded one (it is the newest, or 0 when everything was lost)."""
    ws = ws_name()
    issued: list[int] = []
    holder = None
    with open_store(store_url, ".") as store:
        for op, arg in ops:
            if op == "lose":
                lose(store_url, ws, arg)
                holder = None if arg in ("lease", "both") else holder
            elif op == "acquire" and holder not in (None, arg):
                with pytest.raises(LeaseHeld):
                    store.acquire(ws, arg, 60)
            elif op == "acquire":
                lease = store.acquire(ws, arg, 60)
                if holder is None:
                    assert all(lease.generation > earlier for earlier in issued), (lease, issued)
                    issued.append(lease.generation)
                holder = arg
            elif holder != arg:
                with pytest.raises(NotHolder):
                    getattr(store, op)(ws, arg, *([60] if op == "renew" else []))
            else:
                getattr(store, op)(ws, arg, *([60] if op == "renew" else []))
                holder = None if op == "release" else holder
            current = store.generation(ws)
            assert current in (0, max(issued, default=0)), (current, issued)


def test_the_cli_prints_a_generation_that_rises_past_a_lost_counter(redis_url):  # noqa: F811
    ws = ws_name()
    common = ["--workspace", ws, "--lease-url", redis_url, "--json"]
    first = run_cli("workspace", "acquire", *common, "--holder", "alice")
    assert first.returncode == 0, first.stderr
    assert run_cli("workspace", "release", *common, "--holder", "alice").returncode == 0
    lose(redis_url, ws, "both")
    second = run_cli("workspace", "acquire", *common, "--holder", "bob")
    assert json.loads(second.stdout)["generation"] > json.loads(first.stdout)["generation"]
