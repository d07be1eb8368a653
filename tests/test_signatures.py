"""The miss signature and its normaliser (SPEC §7).

Under-normalising blocks every honest freeze (two runs of one miss get two signatures);
over-normalising hides regressions (two misses get one). Both directions are tested.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relconsole.engine.relations import signatures
from relconsole.engine.relations.signatures import failure_class, normalise, signature

# One honest run of a miss, in its own process and its own temporary directory: a real
# traceback with real paths, the time, an object address, a duration, the pid, a request id.
RUN = textwrap.dedent('''
    import datetime, os, sys, time, traceback, uuid
    workdir, error, relation, key, pause = sys.argv[1:6]
    started = time.time()
    data = os.path.join(workdir, "data", "penguins.csv")
    os.makedirs(os.path.dirname(data))
    open(data, "w").write("species,mass\\n")
    time.sleep(float(pause))
    probe = object()
    took = time.time() - started
    try:
        raise getattr(__builtins__, error)(
            f"{relation} disagrees on {key} reading {data} after {took:.3f}s "
            f"at {datetime.datetime.now().isoformat()} probe {probe!r}")
    except Exception:
        print(traceback.format_exc())
    print(f"{datetime.datetime.now():%Y-%m-%d %H:%M:%S},123 INFO run took {took * 1000:.0f} ms "
          f"epoch {time.time()} ({int(time.time() * 1000)} ms) id {hex(id(probe))} pid {os.getpid()} "
          f"request_id={uuid.uuid4()} trace={uuid.uuid4().hex}{uuid.uuid4().hex[:8]}")
''')


def honest_run(tmp_root: Path, error="AssertionError", relation="penguins.order_invariant",
               key="species=Adelie", pause="0.01") -> tuple[str, str]:
    """(error type, failure text) of one run in a fresh temporary directory under ``tmp_root``."""
    workdir = tempfile.mkdtemp(prefix="replay-", dir=tmp_root)
    script = Path(workdir) / "relation_under_test.py"
    script.write_text(RUN)
    proc = subprocess.run([sys.executable, str(script), workdir, error, relation, key, pause],
                          capture_output=True, text=True, check=True, timeout=60)
    return error, proc.stdout


def miss_signature(error: str, text: str, relation="penguins.order_invariant") -> str:
    last = [line for line in text.splitlines() if line.strip()]
    message = next(line for line in last if line.startswith(error))  # the exception line
    return signature(relation, "permutation", "sha256:" + "11" * 32, failure_class(error, [], message))


def test_two_honest_runs_of_one_miss_have_one_signature(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = honest_run(tmp_path / "a", pause="0.01")
    second = honest_run(tmp_path / "b", pause="0.35")
    assert first[1] != second[1]  # the raw texts differ: paths, times, addresses, pids
    assert normalise(first[1]) == normalise(second[1])
    assert miss_signature(*first) == miss_signature(*second)


def test_honest_runs_keep_the_exception_relation_and_key(tmp_path):
    _, text = honest_run(tmp_path)
    kept = normalise(text)
    assert "AssertionError: penguins.order_invariant disagrees on species=Adelie" in kept
    assert str(tmp_path) not in kept and "<tmp>" in kept


def test_a_different_disagreeing_key_is_another_signature(tmp_path):
    one = honest_run(tmp_path, key="species=Adelie")
    two = honest_run(tmp_path, key="species=Gentoo")
    assert miss_signature(*one) != miss_signature(*two)
    assert failure_class(None, ["species=Adelie"]) != failure_class(None, ["species=Gentoo"])


def test_a_different_exception_type_is_another_signature(tmp_path):
    one = honest_run(tmp_path, error="AssertionError")
    two = honest_run(tmp_path, error="KeyError")
    assert miss_signature(*one) != miss_signature(*two)


def test_a_different_relation_id_is_another_signature(tmp_path):
    one = honest_run(tmp_path, relation="penguins.order_invariant")
    two = honest_run(tmp_path, relation="penguins.split_merge")
    assert normalise(one[1]) != normalise(two[1])
    assert miss_signature(*one) != miss_signature(*two, relation="penguins.order_invariant")


def test_failure_class_keeps_its_two_argument_form():
    assert failure_class("KeyError", ["x"]) == "raised KeyError"
    assert failure_class(None, ["b.total", "a.total"]) == "disagree a.total,b.total"
    assert failure_class("KeyError", [], "\n  'Adelie' at 0x7f3a2b1c9d40\nmore") == "raised KeyError: 'Adelie' at <addr>"
    assert failure_class(None, ["k"], "ignored without a type") == "disagree k"


def test_the_local_host_name_is_stripped(monkeypatch):
    monkeypatch.setattr(signatures.socket, "gethostname", lambda: "ci-runner-7")
    monkeypatch.setattr(signatures.socket, "getfqdn", lambda: "ci-runner-7.build.corp")
    signatures._local_hosts.cache_clear()
    try:
        assert normalise("connect to ci-runner-7 failed") == "connect to <host> failed"
        assert normalise("from ci-runner-7.build.corp:5432") == "from <host>:<port>"
    finally:
        signatures._local_hosts.cache_clear()


# Pairs that vary between honest runs: each must normalise to one text.
SAME = [
    ("/tmp/pytest-of-ci/pytest-12/test_a0/out.json", "/tmp/pytest-of-ci/pytest-31/test_a0/out.json"),
    ("/var/folders/x1/T/tmpab12cd/x.csv", "/private/var/folders/zz/T/tmpq9/x.csv"),
    (r"C:\Users\ci\AppData\Local\Temp\pytest-of-ci\pytest-3\a.csv", r"C:\Users\ci\AppData\Local\Temp\tmp9\a.csv"),
    ('File "/home/ci/wt-3/src/penguins.py", line 42', 'File "/srv/pool/wt-9/src/penguins.py", line 57'),
    ("took 0.31s", "took 12.5s"), ("in 12 ms", "in 3 ms"), ("after 1.2 seconds", "after 14 seconds"),
    ("at 2026-11-30T08:27:07Z", "at 2026-12-01T23:01:59.123456+01:00"),
    ("2026-11-30 08:27:07,123 INFO", "2026-11-30 08:27:09,871 INFO"),
    ("ts 1764491227", "ts 1764491300"), ("ts 1764491227123", "ts 1764491227999"),
    ("<Frame object at 0x7f3a2b1c9d40>", "<Frame object at 0x7f3a2b1e0010>"),
    ("ip-10-0-0-1.ec2.internal", "ip-10-0-3-77.ec2.internal"),
    ("worker-3.ci.example.com", "worker-12.ci.example.com"),
    ("redis://10.0.0.1:6379/0", "redis://10.0.4.2:6380/0"), ("localhost:54321", "localhost:40113"),
    ("request_id=3f2a9c1b7d4e5f60", "request_id=a9b8c7d6e5f40312"),
    ("id 123e4567-e89b-12d3-a456-426614174000", "id 9a1c2b3d-0000-4000-8000-abcdefabcdef"),
    ("trace 0123456789abcdef0123", "trace fedcba9876543210fedc"),
    ("pid 1234", "pid 98"), ("pid=1234", "pid=77"),
    ("tmpk3j2_x9q missing", "tmpab_c1234 missing"),
]

# Pairs that name different misses: each must stay different after normalising.
DIFFERENT = [
    ("KeyError: 'Adelie'", "KeyError: 'Gentoo'"),
    ("ValueError: bad row", "TypeError: bad row"),
    ("species=Adelie", "species=Gentoo"),
    ("['2024-01-02', 'sunny']", "['2024-01-03', 'sunny']"),
    ("day 2026-11-30", "day 2026-12-01"),
    ("row 3", "row 4"), ("count=12", "count=13"), ("user_id=42", "user_id=43"),
    ("expected 3 rows, got 4", "expected 3 rows, got 5"),
    ("penguins.order_invariant", "penguins.split_merge"),
    ("Adelie.mean_mass", "Adelie.mean_flipper"),
    ("/health", "/users"),
    ("ratio 1/2", "ratio 3/4"),
    ('File "/home/ci/src/penguins.py"', 'File "/home/ci/src/weather.py"'),
    ("rollout 10%", "rollout 20%"), ("mass 2.5", "mass 2.6"), ("year 2024", "year 2025"),
    ("order 123456789", "order 123456780"), ("version 1.2.3", "version 1.2.4"),
    ("flags 0x1f", "flags 0x2f"), ("slot 10:00", "slot 11:00"),
    ("3 rows", "3 cols"), ("threading.local", "threading.Lock"),
    ("request_id is missing", "request_id is empty"),
    ("sha 0123abcd", "sha 0123abce"), ("tmpfiles missing", "tmpstore missing"),
]


@pytest.mark.parametrize(("one", "two"), SAME)
def test_what_varies_between_honest_runs_is_stripped(one, two):
    assert normalise(one) == normalise(two)


@pytest.mark.parametrize(("one", "two"), DIFFERENT)
def test_over_normalisation_guards(one, two):
    assert normalise(one) != normalise(two)


@settings(max_examples=1500, deadline=None)
@given(st.text())
def test_normalise_is_idempotent_over_any_text(text):
    once = normalise(text)
    assert normalise(once) == once


FRAGMENTS = st.sampled_from([
    "AssertionError: ", "KeyError: ", "penguins.order_invariant", " disagrees on ", "species=Adelie",
    "['2024-01-02', 'sunny']", " reading ", "/tmp/pytest-of-ci/pytest-", "/test_a0/data.csv",
    r"C:\Users\ci\AppData\Local\Temp\x", " after ", "0.31s", "12 ms", " at ", "2026-11-30T08:27:07",
    "+01:00", "Z", ",123", " 1764491227", ".5", " <object at 0x7f3a2b1c9d40>", " pid ", "=", "1234",
    " ip-10-0-0-1.ec2.internal", ":6379", " worker-3.ci.example.com", " request_id=", "3f2a9c1b7d4e5f60",
    "\n", " ", '"', "'", "/", "\\", ":", ".", "-", "<", ">", "<path>", "<tmp>", "s", "7", "a",
])


@settings(max_examples=1500, deadline=None)
@given(st.lists(FRAGMENTS, max_size=25).map("".join))
def test_normalise_is_idempotent_over_failure_messages(text):
    once = normalise(text)
    assert normalise(once) == once
