"""Canonical form and comparison (SPEC §3 compare/quantum) and the relation kinds.

``canonical``/``differences`` are checked by properties (idempotence, key-order
invariance, rounding to the quantum grid, symmetry, a value never differs from itself).
Each relation kind runs on small subjects written into ``tmp_path``: a correct one holds
and a broken one misses. Worker isolation (a raise, a dying process, a hang) goes
through ``runner.evaluate_once`` in real child processes.
"""

from __future__ import annotations

import json
import math
import os
import random
import textwrap
import time
import uuid
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relconsole.engine.relations.canon import canonical, differences
from relconsole.engine.relations.worker import evaluate_values
from relconsole.engine.relations.pool import evaluate_once
from relconsole.engine.relations.records import RunPlan
from tests.conftest import seeds_plan

PROJECT = Path(__file__).resolve().parents[1]
COMPARES = ("exact", "canon", "tolerance")

# --- strategies ----------------------------------------------------------------------------

_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-10**20, 10**20), st.text(max_size=6),
    st.floats(allow_nan=True, allow_infinity=True),
)
_keys = st.one_of(st.text(max_size=5), st.integers(-5, 5))
values = st.recursive(
    _scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_keys, inner, max_size=4),
                            st.tuples(inner, inner)),
    max_leaves=16,
)
quanta = st.sampled_from([None, 1e-9, 1e-6, 1e-3, 0.25, 0.1, 1.0, 5.0, 1e3])


def reordered(value, rng: random.Random):
    """The same value with every mapping's items inserted in a shuffled order."""
    if isinstance(value, dict):
        items = list(value.items())
        rng.shuffle(items)
        return {k: reordered(v, rng) for k, v in items}
    if isinstance(value, list):
        return [reordered(v, rng) for v in value]
    if isinstance(value, tuple):
        return tuple(reordered(v, rng) for v in value)
    return value


def dumps(value) -> str:
    return json.dumps(value, allow_nan=True)  # keeps key order: order is what we compare


# --- canonical -------------------------------------------------------------------------------

@settings(max_examples=400)
@given(value=values, compare=st.sampled_from(COMPARES), quantum=quanta, order_free=st.booleans())
def test_canonical_is_idempotent(value, compare, quantum, order_free):
    once = canonical(value, compare, quantum, order_free)
    twice = canonical(once, compare, quantum, order_free)
    assert dumps(twice) == dumps(once)


@settings(max_examples=400)
@given(value=values, compare=st.sampled_from(COMPARES), quantum=quanta, order_free=st.booleans(),
       seed=st.integers(0, 2**32))
def test_canonical_does_not_depend_on_key_order(value, compare, quantum, order_free, seed):
    shuffled = reordered(value, random.Random(seed))
    assert dumps(canonical(shuffled, compare, quantum, order_free)) == \
        dumps(canonical(value, compare, quantum, order_free))


@settings(max_examples=300)
@given(value=values, compare=st.sampled_from(COMPARES), quantum=quanta, order_free=st.booleans())
def test_a_value_never_differs_from_itself(value, compare, quantum, order_free):
    c = canonical(value, compare, quantum, order_free)
    assert differences(c, c, compare, quantum) == []
    assert differences(c, canonical(value, compare, quantum, order_free), compare, quantum) == []


@settings(max_examples=300)
@given(value=values)
def test_canonical_output_is_json(value):
    text = json.dumps(canonical(value, "canon", 1e-6, True), allow_nan=True)
    assert isinstance(text, str)


_cells = st.one_of(st.none(), st.booleans(), st.integers(-2, 2), st.sampled_from([0.0, 1.0, -0.0]), st.text(max_size=3))
_rows = st.one_of(st.lists(st.dictionaries(st.one_of(st.text(max_size=2), st.integers(0, 1), st.booleans()), _cells,
                                           max_size=3), max_size=3),
                  st.dictionaries(st.one_of(st.text(max_size=2), st.integers(0, 1)), _cells, max_size=3))


def _twisted(value, pick):
    """``value`` with some cells swapped for an ==-equal cell of another type (1 for True, 0.0 for 0)."""
    twin = {True: 1, 1: True, False: 0, 0: 0.0, 1.0: 1, 0.0: False}
    swap = lambda c: twin.get(c, c) if type(c) in (bool, int, float) and pick() else c  # noqa: E731
    if isinstance(value, dict):
        return {swap(k): swap(v) for k, v in value.items()}
    return [_twisted(row, pick) for row in value]


@given(_rows, st.randoms(use_true_random=False))
def test_equal_as_written_means_equal_in_canonical_form(left, rng):
    """Two outputs the quick check calls identical are equal under every compare; an output
    with a bool where the other has an int (``True == 1``) is never identical."""
    from relconsole.engine.relations.outcome import _identical
    right = _twisted(left, lambda: rng.random() < 0.5)
    if _identical(left, right) is not None:
        for compare in COMPARES:
            assert differences(canonical(left, compare), canonical(right, compare), compare, 1e-9) == []


def test_keys_that_print_alike_are_kept_apart():
    """``1`` and ``"1"`` are two keys: neither value may vanish, whatever the insertion order."""
    a = canonical({1: "int", "1": "str"})
    b = canonical({"1": "str", 1: "int"})
    assert a == b
    assert sorted(a.values()) == ["int", "str"]
    assert differences(canonical({1: "x", "1": "y"}), canonical({1: "z", "1": "y"})) != []


@settings(max_examples=400)
@given(k=st.integers(-10**6, 10**6), quantum=st.sampled_from([1e-9, 1e-6, 1e-3, 0.25, 0.5, 2.0, 10.0]),
       a=st.floats(-0.49, 0.49), b=st.floats(-0.49, 0.49))
def test_values_within_half_a_quantum_of_a_grid_point_compare_equal(k, quantum, a, b):
    grid = k * quantum
    left, right = grid + a * quantum, grid + b * quantum
    assert differences(canonical(left, "canon", quantum), canonical(right, "canon", quantum), "canon", quantum) == []
    assert math.isclose(canonical(left, "canon", quantum), grid, rel_tol=1e-12, abs_tol=quantum * 1e-6)


@settings(max_examples=300)
@given(k=st.integers(-10**6, 10**6), quantum=st.sampled_from([1e-6, 1e-3, 0.25, 2.0]),
       a=st.floats(0.02, 0.48), b=st.floats(0.52, 0.98))
def test_values_a_grid_step_apart_differ_under_canon(k, quantum, a, b):
    left = k * quantum + a * quantum  # rounds to k
    right = (k + 1) * quantum + b * quantum  # rounds to k + 1 or k + 2
    assert differences(canonical(left, "canon", quantum), canonical(right, "canon", quantum),
                       "canon", quantum) != []


@pytest.mark.parametrize("value", [1e20, -3.5e300, 1.7e18 + 123.0, 5e-324, 1e308])
def test_canon_rounding_survives_extreme_magnitudes(value):
    rounded = canonical(value, "canon", 1e-9)
    assert math.isfinite(rounded)
    assert abs(rounded - value) <= 1e-9 / 2 or rounded == value
    assert canonical(rounded, "canon", 1e-9) == rounded


@settings(max_examples=300)
@given(data=st.data(), quantum=st.floats(1e-9, 1e3), compare=st.sampled_from(COMPARES))
def test_differences_are_symmetric(data, quantum, compare):
    left = data.draw(values)
    right = data.draw(st.one_of(values, st.just(left)))
    one = differences(canonical(left, compare, quantum), canonical(right, compare, quantum), compare, quantum)
    two = differences(canonical(right, compare, quantum), canonical(left, compare, quantum), compare, quantum)
    assert sorted(map(repr, one)) == sorted(map(repr, two))


@settings(max_examples=300)
@given(x=st.floats(-1e12, 1e12), d=st.floats(-1e3, 1e3), quantum=st.floats(1e-9, 1e3))
def test_tolerance_admits_exactly_the_numbers_within_quantum(x, d, quantum):
    y = x + d
    within = abs(x - y) <= quantum
    assert (differences(x, y, "tolerance", quantum) == []) is within
    assert (differences({"k": [x]}, {"k": [y]}, "tolerance", quantum) == []) is within


@pytest.mark.parametrize("value", [float("inf"), float("-inf"), float("nan"), 10**400, -(10**400)])
@pytest.mark.parametrize("compare", COMPARES)
def test_non_finite_and_huge_numbers_equal_themselves(value, compare):
    assert differences({"x": value}, {"x": value}, compare, 1e-6) == []


@pytest.mark.parametrize("compare", COMPARES)
def test_huge_numbers_and_infinities_differ_from_others(compare):
    assert differences(10**400, 1.0, compare, 1e-6) == [()]
    assert differences(float("inf"), float("-inf"), compare, 1e-6) == [()]
    assert differences(float("nan"), 0.0, compare, 1e-6) == [()]


def test_differences_name_the_disagreeing_paths():
    left = {"Adelie": {"count": 152, "mass": 1.0}, "Gentoo": {"count": 124}}
    right = {"Adelie": {"count": 152, "mass": 2.0}, "Chinstrap": {"count": 68}}
    found = set(differences(left, right, "exact"))
    assert found == {("Adelie", "mass"), ("Gentoo",), ("Chinstrap",)}


@settings(max_examples=200)
@given(items=st.lists(st.one_of(st.integers(-50, 50), st.text(max_size=3)), max_size=8), seed=st.integers(0, 2**32))
def test_order_free_compares_bags(items, seed):
    shuffled = list(items)
    random.Random(seed).shuffle(shuffled)
    assert differences(canonical(items, "exact", None, True), canonical(shuffled, "exact", None, True), "exact") == []
    if shuffled != items:
        assert differences(canonical(items, "exact"), canonical(shuffled, "exact"), "exact") != []
    if items:
        fewer = shuffled[1:]
        assert differences(canonical(items, "exact", None, True), canonical(fewer, "exact", None, True), "exact") != []


# --- relation kinds with subjects written here ----------------------------------------------------

@pytest.fixture
def module(tmp_path, monkeypatch):
    """Write a module into tmp_path, importable under a fresh name; returns its name."""
    monkeypatch.syspath_prepend(str(tmp_path))

    def write(source: str) -> str:
        name = f"subj_{uuid.uuid4().hex[:12]}"
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(source), encoding="utf-8")
        return name
    return write


def evaluate(rel: dict, inputs: list, seed: int):
    """The relation judged here, its subject (a module written by ``module``, found on
    sys.path) called in a fork server; its adapters are the test's own (all protected)."""
    import sys
    name = rel["subject"].split(":", 1)[0]
    folder = next(p for p in sys.path if (Path(p) / f"{name}.py").exists())
    return evaluate_values(rel, inputs, seed, folder, [folder], protected=("**",))[0]


def relation(kind: str, subject: str, compare: str = "exact", **fields) -> dict:
    rel = {"id": f"t.{kind}", "kind": kind, "subject": subject, "compare": compare,
           "input": {"seeds": "x.jsonl"}, "statement": "test"}
    rel.update(fields)
    return rel


SUMS = """
import math

def naive(xs):
    total = 0.0
    for x in xs:
        total += x
    return {"total": total}

def compensated(xs):
    return {"total": math.fsum(xs)}
"""
SPREAD = [1e16, 1.0, -1e16, 3.14159, 2.5e-3, 7e15, -7e15, 0.1, 0.2, 0.3, 1e-8, 123456.789]


def test_permutation_holds_for_a_compensated_sum(module):
    name = module(SUMS)
    out = evaluate(relation("permutation", f"{name}:compensated", params={"shuffles": 8}), [SPREAD], seed=7)
    assert out.held


def test_permutation_misses_an_order_dependent_float_sum(module):
    name = module(SUMS)
    out = evaluate(relation("permutation", f"{name}:naive", params={"shuffles": 8}), [SPREAD], seed=7)
    assert not out.held
    assert out.differing == ["total"]
    assert "shuffle" in out.note


@settings(max_examples=50, deadline=None)
@given(xs=st.lists(st.floats(-1e15, 1e15), max_size=30), seed=st.integers(0, 2**31))
def test_compensated_sum_is_permutation_stable_for_any_floats(tmp_path_factory, xs, seed):
    folder = tmp_path_factory.mktemp("fsum")
    name = f"fsum_{uuid.uuid4().hex[:8]}"
    (folder / f"{name}.py").write_text(SUMS)
    import sys
    sys.path.insert(0, str(folder))
    try:
        out = evaluate(relation("permutation", f"{name}:compensated", params={"shuffles": 4}), [xs], seed)
    finally:
        sys.path.remove(str(folder))
        sys.modules.pop(name, None)
    assert out.held


def test_permutation_tolerance_forgives_what_exact_does_not(module):
    name = module(SUMS)
    loose = evaluate(relation("permutation", f"{name}:naive", "tolerance", quantum=10.0,
                              params={"shuffles": 8}), [SPREAD], seed=7)
    assert loose.held


STORES = """
class Upsert:
    def __init__(self): self.rows = {}
    def reset(self): self.rows = {}
    def ingest(self, rows):
        for row in rows: self.rows[row["date"]] = dict(row)
    def projection(self): return dict(self.rows)

class Append:
    def __init__(self): self.rows = []
    def reset(self): self.rows = []
    def ingest(self, rows): self.rows.extend(dict(r) for r in rows)
    def projection(self): return {"rows": list(self.rows)}

def upsert(): return Upsert()
def append(): return Append()
"""
WEATHER = [{"date": f"2012/01/{d:02d}", "precipitation": str(d / 10)} for d in range(1, 9)]


def test_replay_ingest_holds_for_an_upserting_store(module):
    name = module(STORES)
    assert evaluate(relation("replay_ingest", f"{name}:upsert"), [WEATHER], seed=0).held


def test_replay_ingest_misses_a_store_that_appends(module):
    name = module(STORES)
    out = evaluate(relation("replay_ingest", f"{name}:append"), [WEATHER], seed=0)
    assert not out.held
    assert out.differing


MERGES = """
def counts(rows):
    out = {}
    for row in rows:
        out[row["k"]] = out.get(row["k"], 0) + 1
    return out

def merge(a, b):
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, 0) + v
    return out

def lossy_merge(a, b):
    return {k: a[k] + b.get(k, 0) for k in a}  # drops keys only the right half has
"""
ROWS = [{"k": k} for k in "aabbbcaddeef"]


def test_split_merge_holds_with_a_correct_merge(module):
    name = module(MERGES)
    rel = relation("split_merge", f"{name}:counts", merge=f"{name}:merge", params={"splits": 3})
    assert evaluate(rel, [ROWS], seed=0).held


def test_split_merge_misses_a_merge_that_drops_a_key(module):
    name = module(MERGES)
    rel = relation("split_merge", f"{name}:counts", merge=f"{name}:lossy_merge", params={"splits": 3})
    out = evaluate(rel, [ROWS], seed=0)
    assert not out.held
    assert "split" in out.note
    whole = {}
    for row in ROWS:
        whole[row["k"]] = whole.get(row["k"], 0) + 1
    assert set(out.differing) <= set(whole)


ROLLOUTS = """
import hashlib

def _bucket(text):
    return int.from_bytes(hashlib.sha256(text.encode()).digest(), "big") % 100

def stable(x):
    return sorted(u for u in (f"u{i:05d}" for i in range(x["population"]))
                  if _bucket(x["salt"] + u) < x["percent"])

def reshuffled(x):
    # the bucket depends on the percent itself: raising it reshuffles everyone
    return sorted(u for u in (f"u{i:05d}" for i in range(x["population"]))
                  if _bucket(f'{x["salt"]}{x["percent"]}{u}') < x["percent"])
"""
SETTINGS = [{"percent": 10, "salt": "a", "population": 300}, {"percent": 45, "salt": "b", "population": 300},
            {"percent": 95, "salt": "c", "population": 300}, {"percent": 100, "salt": "d", "population": 50}]
MONO = {"field": "percent", "step": 10, "max": 100}


def test_monotonic_holds_for_stable_buckets(module):
    name = module(ROLLOUTS)
    assert evaluate(relation("monotonic", f"{name}:stable", params=MONO), SETTINGS, seed=0).held


def test_monotonic_misses_a_rollout_that_reshuffles_buckets(module):
    name = module(ROLLOUTS)
    out = evaluate(relation("monotonic", f"{name}:reshuffled", params=MONO), SETTINGS, seed=0)
    assert not out.held
    assert any("lost" in d for d in out.differing)


CODECS = """
import json

def dumps(rows): return json.dumps(rows)
def loads(text): return json.loads(text)

def lossy_dumps(rows):
    return json.dumps([{k: (str(round(float(v), 1)) if k == "price" else v) for k, v in r.items()} for r in rows])
"""
STOCKS = [{"symbol": "MSFT", "date": "Jan 1 2000", "price": "39.81"},
          {"symbol": "IBM", "date": "Feb 1 2000", "price": "100.52"}]


def test_roundtrip_holds_for_a_faithful_codec(module):
    name = module(CODECS)
    assert evaluate(relation("roundtrip", f"{name}:dumps", inverse=f"{name}:loads"), [STOCKS], seed=0).held


def test_roundtrip_misses_a_lossy_codec(module):
    name = module(CODECS)
    out = evaluate(relation("roundtrip", f"{name}:lossy_dumps", inverse=f"{name}:loads"), [STOCKS], seed=0)
    assert not out.held
    assert all(d.endswith("price") for d in out.differing)


def test_a_codec_that_returns_its_input_proves_nothing(module):
    name = module(CODECS + "\ndef same(rows): return rows\ndef back(rows): return rows\n")
    out = evaluate(relation("roundtrip", f"{name}:same", inverse=f"{name}:back"), [STOCKS], seed=0)
    assert out.vacuous and "identity" in out.note, out
    faithful = evaluate(relation("roundtrip", f"{name}:dumps", inverse=f"{name}:loads"), [STOCKS], seed=0)
    assert faithful.held and not faithful.vacuous


@pytest.mark.parametrize("encoded,held", [("str", True), (["bytes", "str"], True), ("bytes", False)])
def test_a_roundtrip_checks_the_type_f_encodes_to(module, encoded, held):
    name = module(CODECS + "\ndef wrap(rows): return [rows]\ndef unwrap(box): return box[0]\n")
    text = evaluate(relation("roundtrip", f"{name}:dumps", inverse=f"{name}:loads", params={"encoded": encoded}),
                    [STOCKS], seed=0)
    assert text.held is held and (held or "(type of f(x))" in text.differing)
    boxed = evaluate(relation("roundtrip", f"{name}:wrap", inverse=f"{name}:unwrap", params={"encoded": encoded}),
                     [STOCKS], seed=0)
    assert not boxed.held and "list" in boxed.note, boxed


OTHERS = """
def dedupe(xs): return sorted(set(xs))
def append_marker(xs): return list(xs) + ["*"]
def upper(xs): return [x.upper() for x in xs]
def reverse(xs): return list(reversed(xs))
def count(xs): return len(xs)
def first(xs): return xs[0]
def strict(xs):
    if not xs:
        raise LookupError("empty input")
    return xs
"""


def test_idempotence(module):
    name = module(OTHERS)
    words = [["b", "a", "b", "c"]]
    assert evaluate(relation("idempotence", f"{name}:dedupe"), words, seed=0).held
    assert not evaluate(relation("idempotence", f"{name}:append_marker"), words, seed=0).held


def test_invariance(module):
    name = module(OTHERS)
    words = [["b", "a", "c"]]
    assert evaluate(relation("invariance", f"{name}:count", transform=f"{name}:reverse"), words, seed=0).held
    assert not evaluate(relation("invariance", f"{name}:first", transform=f"{name}:reverse"), words, seed=0).held


def test_bound_edges(module):
    name = module(OTHERS)
    assert evaluate(relation("bound", f"{name}:strict", params={"raises": "LookupError"}), [[]], seed=0).held
    assert not evaluate(relation("bound", f"{name}:strict", params={"raises": "ValueError"}), [[]], seed=0).held
    assert not evaluate(relation("bound", f"{name}:dedupe", params={"raises": "LookupError"}), [[]], seed=0).held
    assert evaluate(relation("bound", f"{name}:dedupe", params={"equals": []}), [[]], seed=0).held
    assert not evaluate(relation("bound", f"{name}:append_marker", params={"equals": []}), [[]], seed=0).held


def test_the_first_missing_seed_row_is_named(module):
    name = module(ROLLOUTS)
    inputs = [{"percent": 0, "salt": "z", "population": 10}] + SETTINGS
    out = evaluate(relation("monotonic", f"{name}:reshuffled", params=MONO), inputs, seed=0)
    assert not out.held and out.note.startswith("seed row ")
    row = int(out.note.split()[2].rstrip(":"))
    assert 2 <= row <= len(inputs)  # the percent-0 row admits nobody before or after


# --- worker isolation ---------------------------------------------------------------------------

@pytest.fixture(autouse=True)
def _workers_find_relconsole(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(PROJECT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))


BAD_SUBJECTS = """
import os, time

class LedgerMismatch(Exception):
    pass

def fine(x): return x

def raises(x): raise LedgerMismatch("totals disagree")

def dies(x): os._exit(3)

def hangs(x):
    time.sleep(60)
    return x

def chatty(x):
    print("noise on stdout that is not JSON")
    return x
"""


def worker_plan(tmp_path: Path, subject: str, timeout: float = 60.0) -> RunPlan:
    return seeds_plan(tmp_path / "tree", "bad", BAD_SUBJECTS, subject, '["a", "b"]\n', timeout=timeout)


def test_a_healthy_subject_holds_in_a_worker(tmp_path):
    record = evaluate_once(worker_plan(tmp_path, "fine"), seed=0)
    assert record.held and record.error_type is None


def test_a_chatty_subject_does_not_corrupt_the_reply(tmp_path):
    record = evaluate_once(worker_plan(tmp_path, "chatty"), seed=0)
    assert record.held


def test_a_raising_subject_is_a_miss_naming_the_exception(tmp_path):
    record = evaluate_once(worker_plan(tmp_path, "raises"), seed=0)
    assert not record.held
    assert record.error_type == "LedgerMismatch"
    assert "totals disagree" in record.error


def test_a_dying_worker_is_a_miss(tmp_path):
    record = evaluate_once(worker_plan(tmp_path, "dies"), seed=0)
    assert not record.held
    assert record.error_type == "subject died"
    assert "3" in record.error


def test_a_hanging_subject_times_out(tmp_path):
    timeout = 2.0
    started = time.monotonic()
    record = evaluate_once(worker_plan(tmp_path, "hangs", timeout=timeout), seed=0)
    elapsed = time.monotonic() - started
    assert not record.held
    assert record.error_type == "timeout"  # the subject never returns: the timeout ended it
    assert elapsed >= timeout  # not before its timeout (a lower bound no slow machine breaks)


@given(st.text(min_size=1, max_size=8), st.integers(), st.integers())
def test_two_members_of_one_enum_type_agree_only_when_their_values_do(name, a, b):
    """A member made per call can carry any value under one name: the value is compared too."""
    from relconsole.engine.relations.subject.wire import Record
    left, right = Record("enum", "m.E", (name, a)), Record("enum", "m.E", (name, b))
    assert (differences(canonical(left), canonical(right)) == []) == (a == b)


@given(st.integers(min_value=-10 ** 6, max_value=10 ** 6))
def test_exact_tells_an_int_from_the_float_of_the_same_number(n):
    assert differences(n, float(n), "exact") != []
    assert differences(n, float(n), "canon", 1e-6) == []
    assert differences(float(n), float(n), "exact") == []


def test_exact_tells_minus_zero_from_zero_and_tolerance_does_not():
    assert differences(-0.0, 0.0, "exact") != [] and differences(0.0, 0.0, "exact") == []
    assert differences(-0.0, 0.0, "tolerance", 1e-9) == []


@given(st.integers(min_value=0, max_value=2000), st.integers())
def test_a_drawn_order_is_a_permutation_the_seed_replays_and_the_wire_carries(n, seed):
    from relconsole.engine.relations.orders import _order
    from relconsole.engine.relations.subject.inputs import pack_order, unpack_order
    order = _order(n, random.Random(seed))
    assert sorted(order) == list(range(n))
    assert _order(n, random.Random(seed)) == order
    assert list(unpack_order(pack_order(order))) == order


def test_every_order_of_three_rows_is_drawn_about_as_often():
    """Uniform: over 6,000 draws (one fixed seed, so the count is the same on every run) each
    of the 6 orders of 3 rows comes up 1,000 times give or take 4 standard deviations."""
    from collections import Counter

    from relconsole.engine.relations.orders import _order
    rng = random.Random(2026)
    counts = Counter(tuple(_order(3, rng)) for _ in range(6000))
    assert len(counts) == 6 and all(abs(c - 1000) < 4 * math.sqrt(6000 * (1 / 6) * (5 / 6)) for c in counts.values())


@given(st.lists(st.one_of(st.floats(allow_nan=False, allow_infinity=False).map(repr), st.text(max_size=4)), max_size=8))
def test_the_judge_s_check_of_a_raised_field_fails_exactly_where_raising_it_does(cells):
    from relconsole.engine.relations.subject.inputs import check_raisable, raise_field
    rows = [{"x": c, "other": "NA"} for c in cells]
    try:
        raise_field(rows, "x", 1, None)
        raised = None
    except ValueError:
        raised = ValueError
    try:
        check_raisable(rows, "x")
        checked = None
    except ValueError:
        checked = ValueError
    assert raised is checked


POISONED = """
import math

def totals(rows):
    out = {}
    for row in rows:
        out[row["k"]] = out.get(row["k"], 0.0) + (math.inf if row["v"] is None else row["v"])
    return out
"""
ROWS = [{"k": "a", "v": 0.1}, {"k": "a", "v": None}, {"k": "a", "v": 0.7}, {"k": "b", "v": 1e16}, {"k": "b", "v": 1.0}]


def test_an_infinite_total_proves_nothing_there_unless_the_relation_allows_it(module):
    """A missing value read as infinity makes ``a`` inf in every order: the relation cannot
    fail there, so it is vacuous (hold), not a pass."""
    name = module(POISONED)
    out = evaluate(relation("permutation", f"{name}:totals", params={"shuffles": 3}), [ROWS], seed=1)
    assert out.held and out.vacuous and "inf at a" in out.note, out
    allowed = evaluate(relation("permutation", f"{name}:totals", params={"shuffles": 3}, nan_ok=True),
                       [ROWS], seed=1)
    assert allowed.held and not allowed.vacuous


WARMED = """
import math

_CALLS = [0]


def totals(rows):
    # exact on a process's first call, a plain (order-dependent) sum after it
    out = {}
    for row in rows:
        out.setdefault(row["k"], []).append(row["v"])
    _CALLS[0] += 1
    add = math.fsum if _CALLS[0] == 1 else sum
    return {k: add(v) for k, v in out.items()}


_STORES = []


class Store:
    def __init__(self):
        self.rows = {}
        self.replica = bool(_STORES)  # the first store of a process is right, later ones append
        _STORES.append(self)

    def reset(self):
        self.rows.clear()

    def ingest(self, rows):
        for row in rows:
            if self.replica and row["k"] in self.rows:
                self.rows[row["k"]] = self.rows[row["k"]] + row["v"]
            else:
                self.rows[row["k"]] = row["v"]

    def projection(self):
        return dict(self.rows)


def make_store():
    return Store()


_LAST = {"key": None, "answer": None, "calls": 0}


def remembered(rows):
    # round 8: exact on a process's first call, and the last input's answer kept, so a second
    # call on that same input agrees with the first
    key = tuple((r["k"], r["v"]) for r in rows)
    if key == _LAST["key"]:
        return dict(_LAST["answer"])
    add = math.fsum if _LAST["calls"] == 0 else sum
    out = {}
    for row in rows:
        out.setdefault(row["k"], []).append(row["v"])
    answer = {k: add(v) for k, v in out.items()}
    _LAST.update(key=key, answer=answer, calls=_LAST["calls"] + 1)
    return dict(answer)


def cached(rows):
    # a cache is no state a caller sees: the same answer every time
    return _cache(tuple(sorted((r["k"], r["v"]) for r in rows)))


_MEMO = {}


def _cache(key):
    if key not in _MEMO:
        _MEMO[key] = {k: v for k, v in key}
    return dict(_MEMO[key])


def stamped(rows):
    # round 10: a parse cache kept in the caller's rows; the first call fills it, a later
    # call on rows a pipeline has since corrected reads the stale one
    out = {}
    for row in rows:
        out.setdefault(row["k"], []).append(row.setdefault("_v", row["v"]))
    return {k: math.fsum(v) for k, v in out.items()}


class SharedStore:
    _rows = {}  # round 10: one table for every store of the process

    def reset(self):
        self._rows.clear()

    def ingest(self, rows):
        for row in rows:
            self._rows[row["k"]] = row["v"]

    def projection(self):
        return dict(self._rows)


def make_shared_store():
    return SharedStore()


def _remembered(function, key, rows):
    # the memo both keep on the function itself: the last key and its answer (and the rows,
    # so their ids stay theirs)
    last = getattr(function, "last", None)
    if last is not None and last[0] == key:
        return dict(last[1])
    out = {}
    for row in rows:
        out.setdefault(row["k"], []).append(row["v"])
    result = {k: math.fsum(v) for k, v in out.items()}
    function.last = (key, dict(result), rows)
    return result


def fingerprinted(rows):
    # round 13: a memo on the function itself, keyed by the length and the two ends: a caller
    # who corrects a row in the middle and asks again gets the old answer
    return _remembered(fingerprinted, (len(rows), tuple(rows[0].items()), tuple(rows[-1].items())) if rows else None,
                       rows)


def identified(rows):
    # a memo keyed by the length and the end rows' ids: a caller who replaces a row in the
    # middle of its list (the other rows the same objects) and asks again gets the old answer
    return _remembered(identified, (len(rows), id(rows[0]), id(rows[-1])) if rows else None, rows)


_BUFFER = {}


def reused(rows):
    # round 12: one result object handed back by every call, cleared and filled again, so
    # a caller's earlier answer changes under it
    out = {}
    for row in rows:
        out.setdefault(row["k"], []).append(row["v"])
    _BUFFER.clear()
    _BUFFER.update({k: math.fsum(v) for k, v in out.items()})
    return _BUFFER


def sorts_in_place(rows):
    # an honest subject that reorders the list it is given (list.sort): not a change of its rows
    rows.sort(key=lambda r: (r["k"], r["v"]))
    out = {}
    for row in rows:
        out[row["k"]] = out.get(row["k"], 0.0) + row["v"]
    return out
"""
FLOATS = [{"k": "a", "v": 0.1}, {"k": "c", "v": 1e16}, {"k": "a", "v": 0.2}, {"k": "c", "v": 1.0},
          {"k": "a", "v": 0.3}, {"k": "c", "v": -1e16}, {"k": "b", "v": 2.5}]


def _judged_under_a_frozen_clock(rel: dict, rows: list, seed: int) -> str:
    """"held", "missed" or "state" (a second call on one input disagreed) for ``rel``."""
    from relconsole.engine.repo.config import Layout
    from relconsole.engine.relations.outcome import SubjectFailed
    name = rel["subject"].split(":", 1)[0]
    folder = next(p for p in __import__("sys").path if (Path(p) / f"{name}.py").exists())
    try:
        out, _ = evaluate_values(rel, [rows], seed, folder, [folder], protected=("**",), clock=Layout().frozen_clock)
    except SubjectFailed as exc:
        assert exc.error["type"] == "state across calls" and "keeps state" in str(exc), exc.error
        return "state"
    return "held" if out.held else "missed"


@pytest.mark.parametrize("kind,subject", [("permutation", "totals"), ("replay_ingest", "make_store"),
                                          ("permutation", "remembered"), ("permutation", "stamped"),
                                          ("replay_ingest", "make_shared_store"), ("permutation", "reused"),
                                          ("permutation", "fingerprinted"), ("permutation", "identified")])
@pytest.mark.parametrize("seed", [3, 5])
def test_code_that_is_right_only_on_a_process_s_first_call_is_caught(module, kind, subject, seed):
    """Every call is a fresh process: one call of each run, drawn, runs in its process after a
    call on other input and a call on a copy of its own, so a counter, a 'first store' or a
    first call that remembers its input is seen (without it, all three hold here)."""
    name = module(WARMED)
    rel = relation(kind, f"{name}:{subject}", params={"shuffles": 4})
    assert _judged_under_a_frozen_clock(rel, FLOATS, seed) in ("missed", "state")


@pytest.mark.parametrize("seed", [3, 5])
def test_a_subject_that_only_reorders_the_list_it_is_given_keeps_no_state(module, seed):
    name = module(WARMED)
    rel = relation("permutation", f"{name}:sorts_in_place", params={"shuffles": 4})
    assert _judged_under_a_frozen_clock(rel, FLOATS, seed) == "held"


def test_a_cache_that_gives_the_same_answer_is_no_history(module):
    name = module(WARMED)
    assert evaluate(relation("permutation", f"{name}:cached", params={"shuffles": 2}), [FLOATS], seed=3).held



SALTED = """
import hashlib


def bucket(salt, uid):
    # round 13: each user's bucket hashed once, the memo keyed by the user alone: a second
    # feature's rollout in the same process gets the first feature's buckets
    known = bucket.known
    if uid not in known:
        known[uid] = int.from_bytes(hashlib.sha256((salt + uid).encode()).digest(), "big") % 100
    return known[uid]


bucket.known = {}


def admitted(x):
    return sorted(u for u in (f"u{i}" for i in range(x["population"])) if bucket(x["salt"], u) < x["percent"])


def honest(x):
    return sorted(u for u in (f"u{i}" for i in range(x["population"]))
                  if int.from_bytes(hashlib.sha256((x["salt"] + u).encode()).digest(), "big") % 100 < x["percent"])
"""
ROLLOUT_SEEDS = [{"percent": p, "salt": salt, "population": 300} for p, salt in ((20, "a"), (40, "b"), (60, "c"))]


@pytest.mark.parametrize("seed", [3, 5])
@pytest.mark.parametrize("subject,judged", [("admitted", "missed"), ("honest", "held")])
def test_a_memo_that_forgets_part_of_a_seed_meets_another_seed_first(module, seed, subject, judged):
    """The repeated call on a seed runs another seed of the relation first (and every seed of
    a run has one): a memo keyed by part of the seed answers the judged seed with the other's."""
    from relconsole.engine.repo.config import Layout
    name = module(SALTED)
    folder = next(p for p in __import__("sys").path if (Path(p) / f"{name}.py").exists())
    rel = relation("monotonic", f"{name}:{subject}", params={"field": "percent", "step": 10, "max": 100})
    out, _ = evaluate_values(rel, ROLLOUT_SEEDS, seed, folder, [folder], protected=("**",), clock=Layout().frozen_clock)
    assert ("held" if out.held else "missed") == judged, out


versions = st.tuples(st.integers(0, 3), st.integers(0, 3), st.integers(0, 3))


@settings(max_examples=200, deadline=None)
@given(versions, versions)
def test_a_version_that_rises_holds_and_one_that_falls_misses(before, after):
    """Issue 16: a version (a tuple, or a named tuple's fields) rising from 1.2.3 to 1.2.4 missed
    with "disagree on (whole output)": ordered values are now ordered, as Python orders them."""
    from collections import namedtuple

    from relconsole.engine.relations.kinds import never_below
    from relconsole.engine.relations.subject.wire import Record
    assert (never_below(before, after) == []) == (after >= before)
    Version = namedtuple("Version", "major minor patch")  # noqa: F841 (as the wire decodes one:)
    as_record = [Record("namedtuple", "semver.Version", dict(zip("abc", v))) for v in (before, after)]
    assert [found.replace("a named tuple's fields in order", "a tuple") for found in never_below(*as_record)] \
        == never_below(before, after)
    assert never_below({"v": before}, {"v": after}) == ([] if after >= before else
                                                        ["v fell, ordered as one value (a tuple)"])


@pytest.mark.parametrize("before,after", [((1, "a"), (1, 2)), ("1.2", 12), (b"x", "x")])
def test_values_with_no_order_between_them_are_incomparable_not_equal_or_below(before, after):
    from relconsole.engine.relations.kinds import never_below
    found = never_below(before, after)
    assert len(found) == 1 and "incomparable" in found[0]
