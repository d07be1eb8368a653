"""Drawn inputs and shrinking, judge side (issue 37): schema strategies, delta debugging over
rows, and ``Drawing``'s choices, with a judge that is a plain function (no subject process).
The subject-process half is in tests/test_drawn_inputs.py."""

from __future__ import annotations

import datetime as dt
import itertools
import json

from hypothesis import given, settings, strategies as st

from relconsole.engine.oracle.catalog import check_row
from relconsole.engine.relations.drawing import Drawing, Judged, recipe_rows, recipe_seed
from relconsole.engine.relations.outcome import Outcome
from relconsole.engine.relations.rowshrink import ddmin
from relconsole.engine.relations.schemadraw import fields_that_matter, minimal_row, row_strategy

TYPES = ["str", "int", "float", "bool", "date"]


@st.composite
def schemas(draw) -> dict:
    """Input schemas in the catalog's vocabulary: plain types, bounds, choices, optional fields."""
    names = draw(st.lists(st.text("abcdefgh_", min_size=1, max_size=6), min_size=1, max_size=4, unique=True))
    out = {}
    for name in names:
        kind = draw(st.sampled_from(TYPES))
        if kind in ("int", "float") and draw(st.booleans()):
            low = draw(st.integers(-1000, 1000))
            spec = {"type": kind, "min": low, "max": low + draw(st.integers(0, 500))}
        elif kind == "str" and draw(st.booleans()):
            spec = {"type": kind, "choices": draw(st.lists(st.text(max_size=5), min_size=1, max_size=3, unique=True))}
        elif kind == "str" and draw(st.booleans()):
            spec = {"type": kind, "pattern": draw(st.sampled_from([r"[a-z]+", r"\d{1,3}(\.\d{1,3})*", r"v[0-9]"]))}
        else:
            spec = kind
        if draw(st.booleans()):
            spec = dict({"type": spec} if isinstance(spec, str) else spec, optional=True)
        out[name] = spec
    return out


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_every_drawn_row_passes_the_seed_rows_schema_check(data):
    schema = data.draw(schemas())
    row = data.draw(row_strategy(schema))
    assert check_row(row, schema) == []
    assert json.loads(json.dumps(row)) == row  # JSON carries it unchanged: a seed row could hold it


@settings(max_examples=40, deadline=None)
@given(schemas())
def test_the_minimal_row_needs_no_field(schema):
    floor = minimal_row(schema)
    assert fields_that_matter(floor, schema) == []
    changed = {name: ("x" if value != "x" else "y") for name, value in floor.items()}
    assert fields_that_matter(changed, schema) == list(schema)


@settings(max_examples=50, deadline=None)
@given(row_strategy({"day": "date"}))
def test_drawn_dates_are_calendar_dates(row):
    assert dt.date.fromisoformat(row["day"]).isoformat() == row["day"]


@settings(max_examples=80, deadline=None)
@given(st.integers(1, 60), st.data())
def test_ddmin_finds_exactly_the_rows_a_monotone_miss_needs(size, data):
    needed = set(data.draw(st.lists(st.integers(0, size - 1), min_size=1, max_size=4)))
    calls = []

    def misses(rows):
        calls.append(len(rows))
        return needed <= set(rows)

    found, judged = ddmin(list(range(size)), misses, deadline=float("inf"))
    assert set(found) == needed
    assert found == sorted(found)  # the rows keep their order
    assert judged == len(calls)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 30), min_size=2, max_size=40, unique=True), st.integers(2, 4))
def test_ddmin_result_is_one_minimal_for_any_miss(rows, modulus):
    """A miss that is no monotone condition (an odd count of multiples): still a subset that
    misses, and no single row can go."""
    def misses(subset):
        return sum(1 for r in subset if r % modulus == 0) % 2 == 1

    if not misses(rows):
        rows = rows + [modulus * 100]
    found, _ = ddmin(rows, misses, deadline=float("inf"))
    assert misses(found) and set(found) <= set(rows)
    assert not any(misses(found[:i] + found[i + 1:]) for i in range(len(found)) if len(found) > 1)


def test_ddmin_stops_at_its_deadline_with_the_smallest_found_so_far():
    ticks = itertools.count()
    found, judged = ddmin(list(range(1000)), lambda rows: 7 in rows, deadline=5, clock=lambda: next(ticks))
    assert 7 in found and len(found) < 1000 and judged <= 5


class FakeRows:
    """A judge over corpus recipes: misses when the rows fed hold every row of ``needs`` (a
    non-empty set) or pass ``limit`` rows; records every recipe; a tick of the clock per judgement."""

    def __init__(self, rows: int, limit: int | None = None, needs: frozenset = frozenset()):
        self.rows, self.limit, self.needs, self.seen, self.now = rows, limit, needs, [], 0.0

    def clock(self) -> float:
        return self.now

    def __call__(self, recipe: dict) -> Judged:
        self.now += 0.5
        self.seen.append(recipe)
        fed = recipe_rows(recipe, self.rows)
        miss = bool(self.needs) and self.needs <= set(fed) or (self.limit is not None and len(fed) > self.limit)
        return Judged(Outcome(not miss, [1], [2] if miss else [1], ["(whole output)"] if miss else [], "n"))


def drawing(judge, count=4, seed=1234, budget=0.0, unreached=dict) -> Drawing:
    return Drawing({"kind": "permutation"}, judge, seed, count, budget, 60.0, deadline=1e9,
                   unreached=unreached, clock=judge.clock)


def test_corpus_draws_a_scaled_copy_past_half_the_cap_and_subsamples_of_other_sizes():
    judge = FakeRows(344)
    report = drawing(judge).corpus(344, scale_rows=20000)
    scaled = [r for r in judge.seen if "scale" in r]
    picked = [r for r in judge.seen if "pick" in r]
    assert report.tried == 4 and report.miss is None
    first = scaled[0]
    assert first["scale"] * 344 + first["extra"] >= 10000  # a path taken above some size under the cap is reached
    assert (first["scale"] * 344 + first["extra"]) % 344 != 0  # no multiple of the corpus
    assert all(2 <= len(r["pick"]) < 344 and r["pick"] == sorted(set(r["pick"])) for r in picked)


def test_a_miss_only_above_a_size_is_found_and_shrunk_to_just_past_it():
    judge = FakeRows(344, limit=5000)
    report = drawing(judge).corpus(344, scale_rows=20000)
    assert report.miss is not None and "scale" in report.miss["recipe"]
    assert len(report.shrunk["recipe"]["pick"]) == 5001


def test_drawing_goes_on_while_a_changed_line_is_unreached_until_the_budget():
    judge = FakeRows(10 ** 6)
    report = drawing(judge, count=2, budget=10.0, unreached=lambda: {"a.py": [7]}).corpus(10 ** 6)
    assert report.tried > 2 and report.extra == report.tried - 2 and report.miss is None
    assert report.unreached == {"a.py": [7]}
    assert judge.now - 0.5 <= 10.0  # the budget: no draw starts after it


def test_a_corpus_miss_is_shrunk_to_the_rows_it_needs():
    judge = FakeRows(344, needs=frozenset({3, 11}))
    shrunk = drawing(judge).shrink_rows({}, 344, judge({"pick": list(range(344))}))
    assert shrunk["recipe"]["pick"] == [3, 11] and shrunk["from_rows"] == 344


def test_the_same_run_seed_draws_the_same_inputs_and_another_does_not():
    def run(seed):
        judge = FakeRows(344)
        drawing(judge, seed=seed).corpus(344)
        return [json.dumps(r, sort_keys=True) for r in judge.seen]
    assert run(99) == run(99)
    assert run(99) != run(100)


def test_a_recipes_seed_follows_its_input_not_its_label():
    a = {"pick": [1, 2], "label": "x"}
    assert recipe_seed(5, a) == recipe_seed(5, dict(a, label="y")) != recipe_seed(5, {"pick": [2, 1]})
    assert recipe_seed(5, a) != recipe_seed(6, a)


class FakeSeeds:
    """A judge of drawn rows: misses when percent is within 50..59 and population >= 2."""

    def __init__(self):
        self.seen, self.now = [], 0.0

    def clock(self) -> float:
        return self.now

    def __call__(self, recipe: dict) -> Judged:
        self.now += 0.01
        row = recipe["value"]
        self.seen.append(row)
        miss = 50 <= row["percent"] <= 59 and row["population"] >= 2
        return Judged(Outcome(not miss, [1], [2] if miss else [1], ["(whole output)"] if miss else [], "n"))


SCHEMA = {"percent": {"type": "int", "min": 0, "max": 100}, "salt": "str",
          "population": {"type": "int", "min": 1, "max": 100000}}


def test_a_drawn_miss_is_shrunk_to_its_simplest_row_and_replays_from_its_seed():
    def run(seed):
        judge = FakeSeeds()
        return drawing(judge, count=300, seed=seed).seeds(SCHEMA, check_row), judge
    report, judge = run(2024)
    assert report.miss is not None, "300 draws never crossed 50..59"
    assert report.shrunk["recipe"]["value"] == {"percent": 50, "salt": "", "population": 2}
    assert fields_that_matter(report.shrunk["recipe"]["value"], SCHEMA) == ["percent", "population"]
    again, judge_again = run(2024)
    assert judge_again.seen == judge.seen  # every draw and shrink step, in order
    assert again.shrunk["recipe"] == report.shrunk["recipe"]


class OneRecord:
    """A worker pool whose every evaluation is ``record``."""

    def __init__(self, record):
        self.record, self.all = record, [None]

    def evaluate(self, plan, seed):
        return self.record


def test_drawn_inputs_not_all_judged_hold_the_relation_instead_of_passing(tmp_path):
    from relconsole.engine.oracle.catalog import load_catalog
    from relconsole.engine.relations.records import RunPlan, RunRecord
    from relconsole.engine.relations.runner import run_relation
    catalog = load_catalog("owners: {}\nrelations:\n  - {id: a.b, kind: monotonic, subject: 'm:f', "
                           "input: {seeds: s.jsonl, schema: {p: int}}, compare: exact, params: {field: p}, "
                           "statement: s}\n", "c.yaml")
    plan = RunPlan(catalog.get("a.b"), tmp_path, [str(tmp_path)], "seeds", tmp_path / "s.jsonl", "pin")
    cut = RunRecord(True, 1, drawn={"asked": 100, "tried": 37, "stopped": "the relation's time ran out"})
    result = run_relation(plan, None, OneRecord(cut))
    assert result.verdict.decision == "hold" and result.verdict.reason == "drawn_incomplete"
    assert "37 of 100" in result.verdict.detail
    whole = RunRecord(True, 1, drawn={"asked": 100, "tried": 100, "stopped": ""})
    assert run_relation(plan, None, OneRecord(whole)).verdict.decision == "pass"
    exhausted = RunRecord(True, 1, drawn={"asked": 100, "tried": 12, "stopped": ""})  # a small domain, all drawn
    assert run_relation(plan, None, OneRecord(exhausted)).verdict.decision == "pass"


def test_a_miss_that_needs_a_size_is_cut_to_it_in_a_few_judgements():
    judged = []

    def misses(rows):
        judged.append(len(rows))
        return len(rows) > 5000

    found, _ = ddmin(list(range(20000)), misses, deadline=float("inf"))
    assert len(found) == 5001 and len(judged) < 25  # bisection and three probes, no ddmin pass


def test_two_far_rows_a_miss_needs_are_still_found_past_the_size_probe():
    found, _ = ddmin(list(range(4001)), lambda rows: {0, 4000} <= set(rows), deadline=float("inf"))
    assert found == [0, 4000]


def test_drawn_text_and_days_resemble_the_seeds_and_the_review_day():
    """A subject wrong only on realistic values (a salt shaped like a flag name, a day of this
    year) is reached: arbitrary text and days of years 1 to 9999 almost never were (red team)."""
    import re

    from hypothesis import find

    schema = {"salt": "str", "day": "date", "n": {"type": "int", "min": 0, "max": 10 ** 9}}
    seeds = [{"salt": "dark-mode", "day": "2013-02-01", "n": 500}]
    today = dt.date(2026, 12, 7)
    strategy = row_strategy(schema, seeds, today)
    kebab = find(strategy, lambda row: re.fullmatch(r"[a-z]+-[a-z]+", row["salt"]) is not None
                 and row["salt"] != "dark-mode")
    assert check_row(kebab, schema) == []
    this_year = find(strategy, lambda row: row["day"].startswith(str(today.year)))
    assert check_row(this_year, schema) == []


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_rows_drawn_beside_seed_values_still_pass_the_schema_check(data):
    schema = data.draw(schemas())
    examples = data.draw(st.lists(row_strategy(schema), max_size=3))
    today = data.draw(st.dates(dt.date(1990, 1, 1), dt.date(2100, 1, 1)))
    row = data.draw(row_strategy(schema, examples, today))
    assert check_row(row, schema) == []


class Empty(FakeRows):
    """Empty outputs (a vacuous hold) on inputs of more than ``limit`` rows."""

    def __call__(self, recipe):
        self.now += 0.5
        self.seen.append(recipe)
        empty = len(recipe_rows(recipe, self.rows)) > self.limit
        return Judged(Outcome(True, {} if empty else {"a": 1}, {} if empty else {"a": 1}, [], "n", vacuous=empty))


def test_a_scaled_copy_with_empty_outputs_is_a_miss_and_a_subsample_with_them_is_not():
    """A corpus whose outputs were not empty: empty ones for a copy holding all its rows is a
    path that gives up on large inputs; for a subsample of a few rows it may be right (a
    filter that keeps none of them), so it is no miss."""
    big = Empty(344, limit=5000)
    report = drawing(big, count=6).corpus(344)
    assert report.miss is not None and "scale" in report.miss["recipe"]
    few = Empty(10 ** 6, limit=0)  # a corpus past generate_rows: no scaled copy, subsamples only
    assert drawing(few, count=6).corpus(10 ** 6, scale_rows=20000).miss is None
