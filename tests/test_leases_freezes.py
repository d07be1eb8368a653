"""Dataset leases (SPEC §4), freezes (§6) and the counted freeze protocol, on real files.

Lease states are checked as relations between dates (days left against the window)
on corpora written into ``tmp_path`` and hashed here with hashlib; path rules against
real ``..``, absolute paths, symlinks (out of the tree, loops), NUL bytes, directories, FIFOs
(also one swapped in after the path check), sockets, devices and unreadable files. The counted protocol runs
a real relation in worker processes on a tiny tree whose subject is flaky by seed, and
the expected pass count is computed here from the seeds the protocol must use.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import random
import shutil
import signal
import socket
import stat
import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from relconsole.engine.oracle.catalog import load_catalog
from relconsole.engine.repo.config import Layout
from relconsole.engine.errors import BadInputError, CommitRefused
from relconsole.engine.oracle.freezes import (EXPIRED, INVALID, LIVE, assess, check_new_row, for_relation,
                                       parse_rows)
from relconsole.engine.oracle import leases
from relconsole.engine.oracle.leases import (DRIFTED, EXPIRING, MISSING, OK, check_renewal, identity_matches,
                                      lease_status, parse_lease, pin_states, reading_refusal)
from relconsole.engine.oracle.leases import EXPIRED as LEASE_EXPIRED
from relconsole.engine.oracle.leases import INVALID as LEASE_INVALID
from relconsole.engine.relations import runner
from relconsole.engine.relations.records import RunPlan
from relconsole.engine.relations.runner import run_relation
from relconsole.engine.relations.worker import subject_seed

PROJECT = Path(__file__).resolve().parents[1]
PENGUINS = PROJECT / "sample_repo" / "oracle" / "data" / "penguins.csv"
WINDOW = Layout().expiring_window_days
RENEW_MAX = Layout().renew_max_days
_dates = st.dates(min_value=dt.date(2000, 1, 1), max_value=dt.date(2090, 12, 31))


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def manifest(path: str, digest: str, expires: dt.date, owner: str | list[str] = "alice@example.com",
             allowed: tuple[str, ...] = ("orders.order_invariant",)) -> str:
    owner_text = json.dumps(owner)
    return textwrap.dedent(f"""\
        id: orders
        path: {json.dumps(path)}
        sha256: "{digest}"
        expires: {expires.isoformat()}
        owner: {owner_text}
        allowed_relations: {json.dumps(list(allowed))}
        """)


@pytest.fixture
def root(tmp_path) -> Path:
    repo = tmp_path / "repo"
    (repo / "oracle" / "data").mkdir(parents=True)
    shutil.copyfile(PENGUINS, repo / "oracle" / "data" / "penguins.csv")
    return repo


def status_of(root: Path, path: str, expires: dt.date, today: dt.date, digest: str | None = None,
              window: int = WINDOW, **kw):
    digest = digest or sha(root / "oracle" / "data" / "penguins.csv")
    lease = parse_lease(manifest(path, digest, expires, **kw), "oracle/leases/orders.yaml")
    return lease_status(lease, root, today, window)


# --- states against today ----------------------------------------------------------------

@settings(max_examples=200, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(today=_dates, offset=st.integers(-400, 400), window=st.integers(0, 60))
def test_state_follows_days_left_against_the_window(root, today, offset, window):
    expires = today + dt.timedelta(days=offset)
    status = status_of(root, "oracle/data/penguins.csv", expires, today, window=window)
    assert status.days_left == (expires - today).days
    if expires < today:
        assert status.state == LEASE_EXPIRED
    elif (expires - today).days <= window:
        assert status.state == EXPIRING
    else:
        assert status.state == OK
    assert expires.isoformat() in status.reason


def test_window_boundaries(root):
    today = dt.date(2031, 5, 17)
    at = lambda days: status_of(root, "oracle/data/penguins.csv", today + dt.timedelta(days=days), today).state
    assert at(WINDOW + 1) == OK
    assert at(WINDOW) == EXPIRING  # exactly window days left: within the window
    assert at(0) == EXPIRING  # expires today: still readable today
    assert at(-1) == LEASE_EXPIRED


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(position=st.floats(0, 1, exclude_max=True), delta=st.integers(1, 255))
def test_any_changed_byte_is_drift(root, position, delta):
    corpus = root / "oracle" / "data" / "penguins.csv"
    original = PENGUINS.read_bytes()
    digest = hashlib.sha256(original).hexdigest()
    data = bytearray(original)
    index = int(position * len(data))
    data[index] = (data[index] + delta) % 256
    corpus.write_bytes(bytes(data))
    today = dt.date(2031, 5, 17)
    status = status_of(root, "oracle/data/penguins.csv", today + dt.timedelta(days=90), today, digest)
    assert status.state == DRIFTED
    assert status.actual_sha256 == hashlib.sha256(bytes(data)).hexdigest() != digest
    assert "renew" in status.reason and "do not patch the corpus" in status.reason


def test_untouched_copy_is_not_drift_and_drift_beats_expiry(root):
    today = dt.date(2031, 5, 17)
    assert status_of(root, "oracle/data/penguins.csv", today + dt.timedelta(days=90), today).state == OK
    stale = status_of(root, "oracle/data/penguins.csv", today - dt.timedelta(days=3), today, "0" * 64)
    assert stale.state == DRIFTED  # worse than expired: it is shown first


def test_missing_corpus(root):
    today = dt.date(2031, 5, 17)
    status = status_of(root, "oracle/data/absent.csv", today + dt.timedelta(days=90), today)
    assert status.state == MISSING
    assert "oracle/data/absent.csv" in status.reason


def _outside(tmp_path: Path) -> Path:
    outside = tmp_path / "outside.csv"
    shutil.copyfile(PENGUINS, outside)  # same bytes: only the path rule can refuse it
    return outside


@pytest.mark.parametrize("make_path", [
    lambda root, outside: "../outside.csv",
    lambda root, outside: "oracle/../../outside.csv",
    lambda root, outside: str(outside),
    lambda root, outside: "C:/outside.csv",
], ids=["dotdot", "nested-dotdot", "absolute", "drive-letter"])
def test_paths_out_of_the_repository_are_invalid(root, tmp_path, make_path):
    outside = _outside(tmp_path)
    today = dt.date(2031, 5, 17)
    status = status_of(root, make_path(root, outside), today + dt.timedelta(days=90), today)
    assert status.state == LEASE_INVALID


def test_symlink_pointing_outside_is_invalid(root, tmp_path):
    outside = _outside(tmp_path)
    os.symlink(outside, root / "oracle" / "data" / "link.csv")
    today = dt.date(2031, 5, 17)
    status = status_of(root, "oracle/data/link.csv", today + dt.timedelta(days=90), today)
    assert status.state == LEASE_INVALID
    assert "outside" in status.reason


def test_symlinked_directory_pointing_outside_is_invalid(root, tmp_path):
    _outside(tmp_path)
    os.symlink(tmp_path, root / "oracle" / "elsewhere")
    today = dt.date(2031, 5, 17)
    status = status_of(root, "oracle/elsewhere/outside.csv", today + dt.timedelta(days=90), today)
    assert status.state == LEASE_INVALID


def test_symlink_that_stays_inside_is_read_through(root):
    os.symlink("penguins.csv", root / "oracle" / "data" / "alias.csv")
    today = dt.date(2031, 5, 17)
    assert status_of(root, "oracle/data/alias.csv", today + dt.timedelta(days=90), today).state == OK


@pytest.fixture
def alarm():
    """Fail instead of hanging when something blocks for more than a few seconds."""
    def on_alarm(*_):
        raise TimeoutError("blocked: the corpus was opened instead of refused")
    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(5)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


def test_directory_corpus_is_invalid_at_once(root, alarm):
    (root / "oracle" / "data" / "dir.csv").mkdir()
    today = dt.date(2031, 5, 17)
    status = status_of(root, "oracle/data/dir.csv", today + dt.timedelta(days=90), today)
    assert status.state == LEASE_INVALID


def test_fifo_corpus_is_invalid_at_once(root, alarm):
    os.mkfifo(root / "oracle" / "data" / "pipe.csv")
    today = dt.date(2031, 5, 17)
    status = status_of(root, "oracle/data/pipe.csv", today + dt.timedelta(days=90), today)
    assert status.state == LEASE_INVALID
    assert "FIFO" in status.reason


def test_socket_corpus_is_invalid_at_once(root, alarm, monkeypatch):
    monkeypatch.chdir(root / "oracle" / "data")  # bind by a short relative name (108-byte limit)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind("sock.csv")
        server.listen(1)
        today = dt.date(2031, 5, 17)
        status = status_of(root, "oracle/data/sock.csv", today + dt.timedelta(days=90), today)
    assert status.state == LEASE_INVALID and "socket" in status.reason


@pytest.mark.skipif(os.geteuid() != 0, reason="creating a device node needs root")
def test_device_corpus_is_invalid_at_once(root, alarm):
    os.mknod(root / "oracle" / "data" / "null.csv", 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # /dev/null
    today = dt.date(2031, 5, 17)
    status = status_of(root, "oracle/data/null.csv", today + dt.timedelta(days=90), today)
    assert status.state == LEASE_INVALID and "device" in status.reason


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a chmod 000 file")
def test_unreadable_corpus_is_invalid(root, alarm):
    corpus = root / "oracle" / "data" / "penguins.csv"
    os.chmod(corpus, 0)
    try:
        today = dt.date(2031, 5, 17)
        status = status_of(root, "oracle/data/penguins.csv", today + dt.timedelta(days=90), today,
                           digest="0" * 64)
    finally:
        os.chmod(corpus, 0o644)
    assert status.state == LEASE_INVALID and "unreadable" in status.reason


def test_symlink_loop_is_invalid_not_a_traceback(root, alarm):
    data = root / "oracle" / "data"
    os.symlink("b.csv", data / "a.csv")
    os.symlink("a.csv", data / "b.csv")
    today = dt.date(2031, 5, 17)
    status = status_of(root, "oracle/data/a.csv", today + dt.timedelta(days=90), today)
    assert status.state == LEASE_INVALID


def test_nul_byte_in_the_path_is_invalid_not_a_traceback(root):
    today = dt.date(2031, 5, 17)
    status = status_of(root, "oracle/data/penguins.csv\x00.txt", today + dt.timedelta(days=90), today)
    assert status.state == LEASE_INVALID and "NUL" in status.reason


def test_fifo_swapped_in_after_the_path_check_is_invalid_at_once(root, alarm, monkeypatch):
    """Between corpus_file's stat and the hashing a FIFO replaces the corpus: the hash
    opens non-blocking and checks the opened file, so the lease is invalid, not hung."""
    pipe = root / "oracle" / "data" / "pipe.csv"
    os.mkfifo(pipe)
    monkeypatch.setattr(leases, "corpus_file", lambda _root, _relative: (pipe, ""))
    today = dt.date(2031, 5, 17)
    status = status_of(root, "oracle/data/penguins.csv", today + dt.timedelta(days=90), today)
    assert status.state == LEASE_INVALID and "FIFO" in status.reason


def test_unsafe_or_special_pin_targets_are_mismatches_at_once(root, alarm, tmp_path):
    data = root / "oracle" / "data"
    os.mkfifo(data / "pipe.json")
    (data / "dir.json").mkdir()
    os.symlink(_outside(tmp_path), data / "out.csv")
    good = sha(data / "penguins.csv")
    names = ["oracle/data/pipe.json", "oracle/data/dir.json", "oracle/data/out.csv", "../outside.csv",
             "oracle/data/absent.csv", "oracle/data/penguins.csv"]
    pins = json.dumps({name: f"sha256:{good}" for name in names})
    states = pin_states(pins, root, "oracle/pins.json")
    assert states == {**{name: "mismatch" for name in names[:-1]}, "oracle/data/penguins.csv": "match"}


def test_reading_refusal_fails_closed(root):
    today = dt.date(2031, 5, 17)
    good = status_of(root, "oracle/data/penguins.csv", today + dt.timedelta(days=90), today)
    soon = status_of(root, "oracle/data/penguins.csv", today, today)
    old = status_of(root, "oracle/data/penguins.csv", today - dt.timedelta(days=1), today)
    assert reading_refusal(good, "orders.order_invariant", "orders") is None
    assert reading_refusal(soon, "orders.order_invariant", "orders") is None
    assert "expired" in reading_refusal(old, "orders.order_invariant", "orders")
    assert "allowed_relations" in reading_refusal(good, "orders.split_merge", "orders")
    assert reading_refusal(None, "orders.order_invariant", "orders")


@pytest.mark.parametrize("text", [
    "id: x\npath: a.csv\nsha256: \"ABCDEF" + "0" * 58 + "\"\nexpires: 2031-01-01\nowner: a\nallowed_relations: []\n",
    "id: x\npath: a.csv\nsha256: \"abc\"\nexpires: 2031-01-01\nowner: a\nallowed_relations: []\n",
    "id: x\npath: a.csv\nsha256: \"" + "0" * 64 + "\"\nexpires: 2031-02-30\nowner: a\nallowed_relations: []\n",
    "id: x\npath: a.csv\nsha256: \"" + "0" * 64 + "\"\nexpires: \"someday\"\nowner: a\nallowed_relations: []\n",
    "id: x\npath: a.csv\nsha256: \"" + "0" * 64 + "\"\nexpires: 2031-01-01\nowner: []\nallowed_relations: []\n",
    "- not\n- a mapping\n",
], ids=["uppercase-hex", "short-hex", "impossible-date", "not-a-date", "no-owner", "list"])
def test_malformed_manifests_are_bad_input(text):
    with pytest.raises(BadInputError) as caught:
        parse_lease(text, "oracle/leases/x.yaml")
    assert caught.value.path == "oracle/leases/x.yaml"
    assert caught.value.line is not None and 1 <= caught.value.line <= len(text.splitlines())


# --- renewal -------------------------------------------------------------------------------

def _renewable(root, expires_in: int, owner="alice@example.com", today=dt.date(2031, 5, 17)):
    return status_of(root, "oracle/data/penguins.csv", today + dt.timedelta(days=expires_in), today,
                     owner=owner), today


@settings(max_examples=200, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(expires_in=st.integers(-60, 60), until_in=st.integers(-60, 90), max_days=st.integers(1, 60))
def test_renewal_limits_as_date_relations(root, expires_in, until_in, max_days):
    status, today = _renewable(root, expires_in)
    until = today + dt.timedelta(days=until_in)
    allowed = today < until <= today + dt.timedelta(days=max_days) and until > status.lease.expires
    if allowed:
        check_renewal(status, "Alice", "alice@example.com", until, today, max_days)
    else:
        with pytest.raises(CommitRefused):
            check_renewal(status, "Alice", "alice@example.com", until, today, max_days)


def test_renewal_boundary_at_the_maximum(root):
    status, today = _renewable(root, 3)
    check_renewal(status, "Alice", "alice@example.com", today + dt.timedelta(days=RENEW_MAX), today, RENEW_MAX)
    with pytest.raises(CommitRefused, match="maximum"):
        check_renewal(status, "Alice", "alice@example.com", today + dt.timedelta(days=RENEW_MAX + 1),
                      today, RENEW_MAX)


def test_non_owner_is_refused(root):
    status, today = _renewable(root, 3)
    with pytest.raises(CommitRefused, match="owner"):
        check_renewal(status, "Mallory", "mallory@example.com", today + dt.timedelta(days=10), today)
    with pytest.raises(CommitRefused):
        check_renewal(status, "alice@example.com", "", today + dt.timedelta(days=10), today)


@pytest.mark.parametrize("owner,name,email,ok", [
    ("alice@example.com", "whoever", "ALICE@Example.COM", True),
    ("Alice.Smith@Example.com", "whoever", "alice.smith@example.com", True),
    ("Alice <alice@example.com>", "not alice", "Alice@EXAMPLE.com", True),
    ("alice@example.com", "alice@example.com", "other@example.com", False),
    ("alice@example.com", "Alice", "alice@example.org", False),
    ("data-team", "data-team", "x@example.com", True),
    ("data-team", "Data-Team", "x@example.com", False),
    (["bob@example.com", "alice@example.com"], "", "Alice@example.com", True),
])
def test_owner_matching(root, owner, name, email, ok):
    status, today = _renewable(root, 3, owner=owner)
    owners = status.lease.owners
    assert identity_matches(owners, name, email) is ok
    until = today + dt.timedelta(days=10)
    if ok:
        check_renewal(status, name, email, until, today)
    else:
        with pytest.raises(CommitRefused):
            check_renewal(status, name, email, until, today)


def test_expired_lease_can_be_renewed_but_a_drifted_one_cannot(root):
    today = dt.date(2031, 5, 17)
    expired = status_of(root, "oracle/data/penguins.csv", today - dt.timedelta(days=20), today)
    assert expired.state == LEASE_EXPIRED
    check_renewal(expired, "", "alice@example.com", today + dt.timedelta(days=5), today)
    drifted = status_of(root, "oracle/data/penguins.csv", today + dt.timedelta(days=2), today, "f" * 64)
    with pytest.raises(CommitRefused, match="drifted"):
        check_renewal(drifted, "", "alice@example.com", today + dt.timedelta(days=5), today)


# --- freezes ---------------------------------------------------------------------------------

def catalog(max_days: int = 14, min_reruns: int = 3, allowed: bool = True, base_seed: int = 0):
    return load_catalog(textwrap.dedent(f"""\
        relations:
          - id: flaky.sum
            kind: permutation
            subject: flaky:total
            input: {{seeds: oracle/seeds/flaky.jsonl}}
            compare: exact
            params: {{shuffles: 2, seed: {base_seed}}}
            statement: Shuffling the numbers leaves their total unchanged.
            freeze: {{allowed: {str(allowed).lower()}, max_days: {max_days}, min_reruns: {min_reruns}}}
          - id: strict.sum
            kind: permutation
            subject: flaky:total
            input: {{seeds: oracle/seeds/flaky.jsonl}}
            compare: exact
            statement: Not freezable.
        """), "oracle/catalog.yaml")


def freeze_text(*rows: dict) -> str:
    return json.dumps(list(rows), indent=2)


def row(relation_id="flaky.sum", expires: dt.date = dt.date(2031, 5, 20), reruns=5, pass_needed=4,
        reason="runner pool replaced (INFRA-1)", **extra) -> dict:
    return {"relation_id": relation_id, "expires": expires.isoformat(), "reruns": reruns,
            "pass_needed": pass_needed, "reason": reason, **extra}


@settings(max_examples=200)
@given(today=_dates, offset=st.integers(-100, 100), max_days=st.integers(1, 60))
def test_freeze_state_against_today_and_policy(today, offset, max_days):
    expires = today + dt.timedelta(days=offset)
    rows = parse_rows(freeze_text(row(expires=expires)), "oracle/freezes.json")
    [assessed] = assess(rows, catalog(max_days=max_days), today)
    if expires < today:
        assert assessed.state == EXPIRED
        assert expires.isoformat() in assessed.why
    elif (expires - today).days > max_days:
        assert assessed.state == INVALID
    else:
        assert assessed.state == LIVE


def test_freeze_boundaries():
    today = dt.date(2031, 5, 17)
    cat = catalog(max_days=14)
    state = lambda days: assess(parse_rows(freeze_text(row(expires=today + dt.timedelta(days=days))), "f"),
                                cat, today)[0].state
    assert state(0) == LIVE  # the expiry day itself is still covered
    assert state(-1) == EXPIRED
    assert state(14) == LIVE
    assert state(15) == INVALID


def test_freeze_of_an_unfreezable_or_unknown_relation_is_invalid():
    today = dt.date(2031, 5, 17)
    rows = parse_rows(freeze_text(row("strict.sum"), row("no.such")), "f")
    states = [r.state for r in assess(rows, catalog(), today)]
    assert states == [INVALID, INVALID]
    forbidden = parse_rows(freeze_text(row()), "f")
    assert assess(forbidden, catalog(allowed=False), today)[0].state == INVALID


@pytest.mark.parametrize("bad,word", [
    (row(skip=True), "skip"),
    (row(reruns=3, pass_needed=4), "pass_needed"),
    (row(reason=""), "reason"),
    (row(reason="   "), "reason"),
    (row(reruns="5"), "reruns"),
    (row(expires=dt.date(2031, 5, 20)) | {"expires": "2031-02-30"}, "expires"),
    (row() | {"note": "unknown"}, "note"),
])
def test_invalid_freeze_rows_are_bad_input_naming_the_row_line(bad, word):
    text = freeze_text(row("strict.sum"), bad)
    with pytest.raises(BadInputError) as caught:
        parse_rows(text, "oracle/freezes.json")
    lines = text.split("\n")
    start = [n for n, line in enumerate(lines, 1) if line.strip() == "{"][1]
    end = next(n for n in range(start, len(lines) + 1) if lines[n - 1].strip().startswith("}"))
    key_line = next((n for n in range(start, end) if lines[n - 1].strip().startswith(f'"{word}"')), None)
    # the offending key's own line, or the row's first line when the key is not in it
    assert caught.value.line in {start, key_line} - {None}
    assert word in caught.value.message


def test_for_relation_prefers_a_live_row_then_the_latest():
    today = dt.date(2031, 5, 17)
    cat = catalog()
    old = row(expires=today - dt.timedelta(days=9))
    older = row(expires=today - dt.timedelta(days=30))
    live = row(expires=today + dt.timedelta(days=2))
    other = row("strict.sum", expires=today + dt.timedelta(days=2))
    assessed = assess(parse_rows(freeze_text(old, live, older, other), "f"), cat, today)
    chosen = for_relation(assessed, "flaky.sum")
    assert chosen.state == LIVE and chosen.expires == today + dt.timedelta(days=2)
    assessed = assess(parse_rows(freeze_text(older, old, other), "f"), cat, today)
    chosen = for_relation(assessed, "flaky.sum")
    assert chosen.state == EXPIRED and chosen.expires == today - dt.timedelta(days=9)
    assert for_relation(assessed, "absent.relation") is None


def test_check_new_row_enforces_the_policy():
    today = dt.date(2031, 5, 17)
    cat = catalog(max_days=14, min_reruns=3)
    assert check_new_row(row(expires=today + dt.timedelta(days=14), reruns=3, pass_needed=3), cat, today) is None
    assert "min_reruns" in check_new_row(row(reruns=2, pass_needed=2, expires=today + dt.timedelta(days=3)), cat, today)
    assert check_new_row(row(expires=today + dt.timedelta(days=15)), cat, today)
    assert check_new_row(row(expires=today), cat, today)  # must expire after today
    assert check_new_row(row("strict.sum", expires=today + dt.timedelta(days=3)), cat, today)


# --- the counted protocol (§6) in worker processes -------------------------------------------

FLAKY = '''\
"""Flaky by seed: each call seeds ``random`` with a seed drawn from its run's before it loads."""
import random

FLIP = random.random()  # the first draw after the run's seed decides this run


def total(values):
    if FLIP < 0.5:
        return sum(sorted(values))
    return list(values)  # the order the call was given leaks out: shuffles disagree
'''


def passes(seed: int) -> bool:
    """Whether the flaky subject holds on run seed ``seed``: the model of FLAKY above. Each
    of the relation's 3 calls (source and 2 shuffles) seeds ``random`` with the run's
    subject seed XOR one draw from the run's call-order stream, drawn after that stream
    ordered the calls (worker.ServerCalls); the run holds only if every call sums."""
    order = random.Random(f"order {seed}")
    order.shuffle([f"order {n}" for n in range(3)])
    return all(random.Random(subject_seed(seed) ^ order.getrandbits(32)).random() < 0.5 for _ in range(3))


def drawn_from(monkeypatch, first: int) -> None:
    """Make the runner's seed draws (reruns, replays) ``first``, ``first + 1``, ... in order."""
    counter = iter(range(first, first + 10_000))
    monkeypatch.setattr(runner, "draw_seed", lambda: next(counter))


@pytest.fixture(autouse=True)
def _workers_find_relconsole(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(PROJECT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))


def flaky_tree(tmp_path: Path) -> Path:
    tree = tmp_path / "tree"
    (tree / "oracle" / "seeds").mkdir(parents=True)
    (tree / "flaky.py").write_text(FLAKY)
    (tree / "oracle" / "seeds" / "flaky.jsonl").write_text("[1, 2, 3, 4, 5, 6, 7, 8]\n")
    return tree


def plan_for(tree: Path, base_seed: int) -> RunPlan:
    """The flaky relation's plan, its first run replaying seed ``base_seed``."""
    relation = catalog(max_days=30, min_reruns=1, base_seed=base_seed).get("flaky.sum")
    return RunPlan(relation, tree, [str(tree)], "seeds", tree / "oracle" / "seeds" / "flaky.jsonl",
                   "pin", timeout_seconds=60, replay_seed=base_seed)


def live_freeze(reruns: int, pass_needed: int, today=dt.date(2031, 5, 17)):
    rows = parse_rows(freeze_text(row(expires=today + dt.timedelta(days=3), reruns=reruns,
                                      pass_needed=pass_needed)), "f")
    [freeze] = assess(rows, catalog(max_days=30, min_reruns=1), today)
    assert freeze.state == LIVE
    return freeze


def _first_failing_seed(start: int) -> int:
    return next(s for s in range(start, start + 1000) if not passes(s))


def _cases():
    """(base seed, reruns, pass_needed) around the pass count computed from the seeds."""
    out = []
    for start, reruns in ((0, 5), (100, 6), (4242, 4)):
        base = _first_failing_seed(start)
        count = sum(passes(base + n) for n in range(1, reruns + 1))
        if count >= 1:
            out.append((base, reruns, count))  # exactly enough passes: PASS
        if count + 1 <= reruns:
            out.append((base, reruns, count + 1))  # one short: FAIL
    return out


@pytest.mark.parametrize("base,reruns,pass_needed", _cases())
def test_counted_freeze_passes_iff_enough_reruns_pass(tmp_path, monkeypatch, base, reruns, pass_needed):
    tree = flaky_tree(tmp_path)
    drawn_from(monkeypatch, base + 1)
    result = run_relation(plan_for(tree, base), live_freeze(reruns, pass_needed))
    expected_seeds = [base + n for n in range(1, reruns + 1)]
    expected = [passes(s) for s in expected_seeds]
    assert result.first is not None and result.first.seed == base and not result.first.held
    assert [r.seed for r in result.reruns] == expected_seeds  # every rerun recorded, re-seeded
    assert [r.held for r in result.reruns] == expected
    assert result.rerun_passes == sum(expected)
    verdict_pass = sum(expected) >= pass_needed
    assert (result.verdict.decision == "freeze") is verdict_pass
    assert (result.outcome == "held") is verdict_pass
    assert result.verdict.exit_code == (0 if verdict_pass else 1)
    assert f"{sum(expected)}/{reruns}" in result.summary and str(pass_needed) in result.summary


def test_first_pass_needs_no_reruns(tmp_path):
    base = next(s for s in range(10_000) if passes(s))
    result = run_relation(plan_for(flaky_tree(tmp_path), base), live_freeze(5, 5))
    assert result.outcome == "held" and result.reruns == []
    assert result.verdict.decision == "pass"


@pytest.mark.parametrize("state_days,relation", [(-1, "flaky.sum"), (3, "strict.sum")],
                         ids=["expired", "not-freezable"])
def test_miss_without_a_live_freeze_is_a_reject_with_no_reruns(tmp_path, state_days, relation):
    today = dt.date(2031, 5, 17)
    rows = parse_rows(freeze_text(row(relation, expires=today + dt.timedelta(days=state_days))), "f")
    [freeze] = assess(rows, catalog(), today)
    assert freeze.state != LIVE
    base = _first_failing_seed(0)
    result = run_relation(plan_for(flaky_tree(tmp_path), base), freeze)
    assert result.outcome == "missed" and result.reruns == []
    assert result.verdict.decision == "reject"
    assert freeze.why in result.summary  # the console says why the freeze did not apply


_reason_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=30).filter(
    lambda s: s.strip())


@settings(max_examples=300)
@given(reasons=st.lists(_reason_text, min_size=1, max_size=5), bad_index=st.data(), ascii_only=st.booleans())
def test_the_line_of_a_bad_row_survives_any_reason_text(reasons, bad_index, ascii_only):
    """Braces, quotes, backslashes and non-ASCII in a reason never shift the reported row line."""
    rows = [row(reason=r, reruns=5, pass_needed=5) for r in reasons]
    index = bad_index.draw(st.integers(0, len(rows) - 1))
    rows[index]["pass_needed"] = 6
    text = json.dumps(rows, indent=2, ensure_ascii=ascii_only)
    starts, line = [], 2  # "[" is line 1; each row takes as many lines as it dumps to
    for one in rows:
        starts.append(line)
        line += json.dumps(one, indent=2, ensure_ascii=ascii_only).count("\n") + 1  # lines end at \n only
    own = json.dumps(rows[index], indent=2, ensure_ascii=ascii_only).split("\n")
    key_line = starts[index] + next(n for n, ln in enumerate(own) if ln.strip().startswith('"pass_needed"'))
    with pytest.raises(BadInputError) as caught:
        parse_rows(text, "oracle/freezes.json")
    assert caught.value.line in (starts[index], key_line)  # the row, or its offending key
    assert text.split("\n")[caught.value.line - 1].strip() in ("{", '"pass_needed": 6,')


@pytest.mark.parametrize("odd", ["\u2028", "\u2029", "\x85", "\r", "\r\n", "\x0b\x0c", "\ufeff"],
                         ids=["LS", "PS", "NEL", "CR", "CRLF", "VT-FF", "BOM"])
def test_unusual_line_breaks_in_a_reason_do_not_shift_line_numbers(odd):
    """JSON lines end at \\n: a raw LS/PS/NEL inside a string is not a line break."""
    rows = [row(reason=f"before{odd}after", reruns=5, pass_needed=5), row(reruns=5, pass_needed=6)]
    text = json.dumps(rows, indent=2, ensure_ascii=False)
    lines = text.split("\n")
    second = [n for n, line in enumerate(lines, 1) if line.strip() == "{"][1]
    key_line = next(n for n in range(second, len(lines) + 1) if lines[n - 1].strip().startswith('"pass_needed"'))
    with pytest.raises(BadInputError) as caught:
        parse_rows(text, "oracle/freezes.json")
    assert caught.value.line in (second, key_line)


@settings(max_examples=100)
@given(reruns=st.integers(1, 12), min_reruns=st.integers(1, 12))
def test_a_hand_written_row_below_the_policy_s_min_reruns_freezes_nothing(reruns, min_reruns):
    """Red team: a committed row with reruns 1, pass_needed 1 under a policy of min_reruns 5
    was honoured (the console's writer checked the policy; the reader did not)."""
    today = dt.date(2031, 5, 17)
    rows = parse_rows(freeze_text(row(reruns=reruns, pass_needed=1)), "oracle/freezes.json")
    [assessed] = assess(rows, catalog(min_reruns=min_reruns), today)
    assert (assessed.state == INVALID) == (reruns < min_reruns)
    if reruns < min_reruns:
        assert str(min_reruns) in assessed.why
