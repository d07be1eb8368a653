"""A missed relation's detail view (SPEC §6, §7, §8, §11; issue 7 item 3).

Engine: every run record says what it read (input file, digest, rows, the follow-up
transformation with the run's seed). Console: the two canonical outputs side by side with
the disagreeing keys first and marked (capped for big outputs, nested keys too), the rerun
history, the replay sheet and the §8 row that fired, driven through the real app.
"""

from __future__ import annotations

import csv
import hashlib
import json
import random
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relconsole.console.app import ReviewApp
from relconsole.console import outline
from relconsole.console.relationtext import decision_row_text
from relconsole.engine.docsref import decision_row
from relconsole.engine.relations.canon import differences, path_text
from relconsole.engine.decision import ROWS, Decision
from relconsole.engine.relations.describe import describe_inputs
from relconsole.engine.relations.kinds import split_points
from relconsole.engine.gate.review import load_review
from relconsole.engine.gate.shrunkfacts import shrunk_facts
from relconsole.engine.gate.reviewrun import run_review
from relconsole.engine.relations.records import RunPlan, input_summary
from bench.gitrepo import git
from tests.conftest import TODAY
from tests.test_console import goto, settle

SIZE = (160, 48)
MISSED = "penguins.order_invariant"  # the sample patch's parallel sum breaks it (the demo's premise)


@pytest.fixture(scope="module")
def demo_review(tmp_path_factory):
    """The sample repository's review with its touched relations run once."""
    from relconsole.engine.demo import materialise

    root = materialise(tmp_path_factory.mktemp("detail") / "demo", TODAY)
    review = load_review(root, today=TODAY)
    run_review(review)
    yield review
    review.close()


def _main_bytes(review, path: str) -> bytes:
    return git(review.root, "show", f"main:{path}").encode()


# --- engine: what a run read ---------------------------------------------------------


def test_a_lease_run_names_its_corpus_digest_rows_and_seeded_shuffle(demo_review):
    result = demo_review.results[MISSED]
    relation = demo_review.catalog.get(MISSED)
    lease = demo_review.lease(relation.lease_id).lease
    corpus = _main_bytes(demo_review, lease.path)  # the oracle is main's (§2)
    rows = list(csv.DictReader(corpus.decode().splitlines()))
    assert result.outcome == "missed" and result.reruns, "the sample's freeze reruns the miss"
    for record in [result.first, *result.reruns]:
        facts = record.inputs
        assert (facts["kind"], facts["lease"], facts["path"]) == ("lease", relation.lease_id, lease.path)
        assert facts["sha256"] == hashlib.sha256(corpus).hexdigest() == lease.sha256
        assert facts["records"] == len(rows)
        assert facts["fields"] == list(rows[0]) and facts["field_count"] == len(rows[0])
        assert f"seed {record.seed}" in facts["followup"]
        assert str(relation.params["shuffles"]) in facts["followup"]
    followups = [r.inputs["followup"] for r in [result.first, *result.reruns]]
    assert len(set(followups)) == len(followups), "each rerun is re-seeded and says so"


def test_a_seeds_run_counts_seed_rows_and_shows_the_first_raise(demo_review):
    run_review(demo_review, ["rollout.monotonic"])
    relation = demo_review.catalog.get("rollout.monotonic")
    record = demo_review.results[relation.id].first
    seeds = [json.loads(line) for line in _main_bytes(demo_review, relation.seeds_path).decode().splitlines()
             if line.strip()]
    facts = record.inputs
    assert (facts["kind"], facts["lease"], facts["path"]) == ("seeds", None, relation.seeds_path)
    assert facts["records"] == len(seeds) and facts["fields"] == list(seeds[0])
    field, step, cap = (relation.params[k] for k in ("field", "step", "max"))
    before = seeds[0][field]
    assert f"{field} raised by {step}" in facts["followup"]
    assert f"{before} → {min(before + step, cap)}" in facts["followup"]


def test_split_merge_summary_lists_the_split_points_it_ran(demo_review):
    record = demo_review.results["penguins.split_merge"].first
    relation = demo_review.catalog.get("penguins.split_merge")
    points = split_points(record.inputs["records"], relation.params["splits"], random.Random(record.seed))
    assert points and ", ".join(map(str, points)) in record.inputs["followup"]
    assert relation.raw["merge"] in record.inputs["followup"]


def test_a_run_that_never_answered_still_names_its_input(tmp_path: Path):
    """A timeout or a dead worker read nothing; the plan's file and digest are still known."""
    (tmp_path / "oracle").mkdir()
    seeds = tmp_path / "oracle" / "s.jsonl"
    seeds.write_text('{"a": 1}\n')
    relation = type("R", (), {"lease_id": None})()
    plan = RunPlan(relation, tmp_path, [str(tmp_path)], "seeds", seeds, "digest")
    facts = input_summary(plan)
    assert facts == {"kind": "seeds", "lease": None, "path": "oracle/s.jsonl", "sha256": "digest"}
    assert input_summary(plan, {"records": 1})["records"] == 1


json_leaf = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False),
                      st.text(max_size=5))
row = st.dictionaries(st.text(min_size=1, max_size=6), json_leaf, max_size=30)
KINDS = ["permutation", "idempotence", "replay_ingest", "split_merge", "monotonic", "roundtrip",
         "invariance", "bound", "unknown"]


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(KINDS), st.lists(row, max_size=8), st.integers(0, 10 ** 6), st.booleans(),
       st.dictionaries(st.sampled_from(["shuffles", "splits", "field", "step", "max", "order_free"]),
                       st.one_of(st.integers(0, 5), st.text(max_size=3), st.none())))
def test_describe_inputs_never_raises_and_stays_small(kind, rows, seed, corpus, params):
    """Whatever the rows and params, the summary counts, caps the fields and says something."""
    inputs = [rows] if corpus else rows
    facts = describe_inputs({"kind": kind, "params": params}, inputs, seed, corpus)
    assert facts["records"] == len(rows)
    union = list(dict.fromkeys(str(k) for r in rows for k in r))  # first seen first (issue 16)
    assert facts["fields"] == union[:len(facts["fields"])] and facts["field_count"] == len(union)
    assert len(facts["fields"]) <= 20 and facts["followup"]
    more = describe_inputs({"kind": kind, "params": params}, [rows + [{"optional": 1}]] if corpus
                           else rows + [{"optional": 1}], seed, corpus)
    assert more["field_count"] == facts["field_count"] + ("optional" not in union)  # a row adds, never hides


# --- console: the columns ------------------------------------------------------------

keys = st.text("abcxyz_", min_size=1, max_size=4)
leaf = st.one_of(st.integers(-5, 5), st.text("pq", max_size=3), st.booleans())
tree = st.recursive(leaf, lambda inner: st.one_of(st.lists(inner, min_size=1, max_size=4),
                                                  st.dictionaries(keys, inner, min_size=1, max_size=4)),
                    max_leaves=25)


def _bump(value, flips):
    """``value`` with some leaves changed (``flips`` says which, in walk order)."""
    if isinstance(value, dict):
        return {k: _bump(v, flips) for k, v in value.items()}
    if isinstance(value, list):
        return [_bump(v, flips) for v in value]
    flip = flips.pop(0) if flips else False
    return f"changed {value!r}" if flip else value


def _marks(lines) -> list[str]:
    return [line.plain for line in lines if line.plain.startswith("≠ ")]


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(keys, tree, min_size=1, max_size=5), st.lists(st.booleans(), max_size=30))
def test_every_disagreeing_key_is_marked_once_however_deep(source, flips):
    """canon.differences on a copy with changed leaves: each path is marked ≠ exactly once in
    each outline, its ancestors ›, and the listed values are the ones at that path."""
    followup = _bump(source, list(flips))
    paths = [path_text(p) for p in differences(source, followup, "exact")]
    marked = set(paths)
    for value in (source, followup):
        lines = outline.outline(value, marked, limit=10 ** 6)
        assert len(_marks(lines)) == len(paths)
        ancestors = {".".join(p.split(".")[:n]) for p in paths for n in range(1, p.count(".") + 1)}
        assert sum(line.plain.startswith("› ") for line in lines) == len(ancestors - marked)
    left, right = outline.output_columns(source, followup, paths)
    shown = paths[:outline.DIFF_LINES]
    for column, value in ((left, source), (right, followup)):
        listed = _marks(column[1:1 + len(shown)])
        assert [line.split(": ", 1)[0][2:] for line in listed] == shown
        for line, path in zip(listed, shown):
            assert line.split(": ", 1)[1] == repr(outline.resolve(value, path))


def test_a_big_output_is_capped_with_its_disagreeing_keys_first():
    size = 5000
    source = {f"k{n:05d}": {"total": n, "count": 1} for n in range(size)}
    followup = json.loads(json.dumps(source))
    late = [f"k{size - 1:05d}.total", f"k{size // 2:05d}.count"]
    for dotted in late:
        key, inner = dotted.split(".")
        followup[key][inner] += 1
    paths = [path_text(p) for p in differences(source, followup, "exact")]
    assert sorted(paths) == sorted(late)
    left, right = outline.output_columns(source, followup, paths)
    entries = size * 3  # each key line plus its two leaves
    for column in (left, right):
        assert len(column) <= outline.OUTLINE_LINES + len(paths) + 4
        assert [line.plain[2:].split(":")[0] for line in column[1:1 + len(paths)]] == paths
        more = re.search(r"… (\d+) more keys", column[-1].plain)
        assert more and int(more.group(1)) == entries - outline.OUTLINE_LINES


def test_many_disagreeing_keys_are_capped_too():
    count = outline.DIFF_LINES * 3
    source = {str(n): n for n in range(count)}
    followup = {str(n): n + 1 for n in range(count)}
    paths = [path_text(p) for p in differences(source, followup, "exact")]
    left, _ = outline.output_columns(source, followup, paths)
    top = left[:left.index(next(line for line in left if line.plain == "whole output"))]
    assert len(_marks(top)) == outline.DIFF_LINES
    assert f"{count - outline.DIFF_LINES} more" in top[-1].plain


def test_keys_from_the_subject_are_shown_literally():
    hostile = "[bold red]x[/]\x1b[2J"
    left, right = outline.output_columns({hostile: 1}, {hostile: 2}, [hostile])
    shown = "\n".join(line.plain for line in left + right)
    assert "\x1b" not in shown and "[bold red]x[/]\\x1b[2J" in shown


@pytest.mark.parametrize("row", sorted(ROWS))
def test_the_row_that_fired_is_named_with_the_tables_words(row: int):
    decision, reason, evidence = ROWS[row]
    text = decision_row_text("replay", Decision(decision, reason, row, "r", "why")).plain
    assert decision_row(row) in text and evidence in text and reason in text and decision.upper() in text


# --- the real console ---------------------------------------------------------------


def _static(app, selector: str) -> str:
    return str(app.screen.query_one(selector).content)


def _disagreeing(column: str) -> dict[str, str]:
    """Key -> value text of the ≠ lines above ``whole output``."""
    top = column.split("\nwhole output\n", 1)[0]
    return dict(line[2:].split(": ", 1) for line in top.splitlines() if line.startswith("≠ "))


async def _open(pilot, rid: str) -> None:
    await goto(pilot, "relations", f"r:{rid}")
    await pilot.press("enter")
    for _ in range(100):
        if type(pilot.app.screen).__name__ == "DetailScreen":
            return
        await pilot.pause(0.05)
    raise AssertionError("the detail screen did not open")


async def test_enter_on_the_missed_relation_shows_inputs_outputs_reruns_and_row(demo_repo: Path):
    app = ReviewApp(repo=str(demo_repo), today=TODAY)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await _open(pilot, MISSED)
        result = app.review.results[MISSED]
        first = result.first
        left, right = _static(app, "#detail-left Static"), _static(app, "#detail-right Static")
        body = _static(app, "#detail-body Static")
        header = _static(app, "#detail-header")
        facts = shrunk_facts(first)  # the sample's miss is shrunk: its smallest input's outputs come first
        assert facts is not None
        for column, value, whole in ((left, facts.source, first.source), (right, facts.followup, first.followup)):
            shown = _disagreeing(column)
            assert list(shown) == facts.differing
            assert all(shown[k] == repr(outline.resolve(value, k)) for k in facts.differing)
            later = _disagreeing(column.split("\n▸ on the whole corpus", 1)[1])
            assert list(later) == first.differing
            assert all(later[k] == repr(outline.resolve(whole, k)) for k in first.differing)
        facts = first.inputs
        for fact in (facts["path"], facts["sha256"], str(facts["records"]), facts["followup"], first.note):
            assert fact in body
        rerun_lines = [line for line in body.splitlines() if re.match(r"\s*\d+\. seed ", line)]
        assert len(rerun_lines) == len(result.reruns)
        for line, rerun in zip(rerun_lines, result.reruns):
            assert f"seed {rerun.seed} " in line and ("held" if rerun.held else "missed") in line
            assert all(key in line for key in rerun.differing[:6])
        fired = next(line for line in body.splitlines() if line.startswith("run verdict"))
        assert f"{decision_row(result.verdict.row)} " in fired and result.verdict.reason in fired
        assert "not replayed" in body and MISSED in header
        assert "reruns (every one recorded)" not in header, "the body lists them; the header does not repeat"


async def test_after_b_the_detail_shows_the_replay_sheet_and_its_row(demo_repo: Path):
    app = ReviewApp(repo=str(demo_repo), today=TODAY)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("b")
        await settle(pilot, timeout=120)
        replayed = app.review.replays[MISSED]
        await _open(pilot, MISSED)
        body = _static(app, "#detail-body Static")
        section = body.split("\nreplay: ", 1)[1]
        assert section.startswith(f"{decision_row(replayed.decision.row)} ") and replayed.decision.reason in section
        assert str(replayed.path) in section
        for side in ("head", "base"):
            misses, runs = replayed.misses(side)
            assert f"{side.upper()}" in section and f"missed {misses} of {runs} runs" in section
        evidence = replayed.sheet["evidence"]["head"]
        assert evidence and f"seed {evidence['seed']}" in section


@settings(max_examples=60, deadline=None)
@given(tree, tree, st.sampled_from(["exact", "canon"]), st.one_of(st.none(), st.sampled_from([1e-6, 0.5])),
       st.booleans())
def test_a_miss_says_how_it_compared_and_shows_both_values_of_a_whole_output(source, followup, compare, quantum, bag):
    """Issue 16: "disagree on (whole output)" said nothing of what was compared. The one line
    names the comparison (exactly or under canon, the quantum, lists in order or as bags) and,
    for a whole-output difference, both values, each cut to a short width."""
    from relconsole.engine.relations.outcome import Check
    from relconsole.engine.relations.records import SHORT, RunRecord
    check = Check({"compare": compare, "quantum": quantum, "params": {"order_free": bag}})
    outcome = check.outcome(source, followup, "shuffle 1 of 2")
    record = RunRecord(outcome.held, 1, outcome.source, outcome.followup, outcome.differing, outcome.note,
                       compared=outcome.compared)
    line = record.describe()
    if outcome.held:
        assert line == "held"
        return
    assert outcome.compared in line and ("exactly" in line) == (compare == "exact")
    assert ("as bags" in line) == bag and (quantum is None or str(quantum) in line)
    if outcome.differing == ["(whole output)"]:
        assert " vs " in line and len(line) < 2 * SHORT + len(outcome.compared) + 80


def test_every_compared_kind_names_its_two_sides_and_a_roundtrip_shows_its_input():
    """The two columns of a missed relation say what was compared (a roundtrip compares
    inverse(f(x)) with its input x: calling x an 'output' misled a new user)."""
    from relconsole.console.views import COLUMN_TITLES
    from relconsole.engine.oracle.catalog import KINDS
    assert set(KINDS) - {"bound"} <= set(COLUMN_TITLES)  # bound checks one literal edge: one side
    assert all(left != right for left, right in COLUMN_TITLES.values())
    left, right = COLUMN_TITLES["roundtrip"]
    assert "input" in left and "output" not in left and "inverse" in right


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(max_size=12), max_size=30), st.lists(st.text(max_size=12), max_size=30))
def test_two_different_values_show_different_windows_taken_from_each(source, followup):
    """A new user saw '["PB-14837",…,"PB…' vs the same text: both values cut before they
    differed. Each shown window is a piece of its own value's text, short, and two values whose
    texts differ never show the same window."""
    import json

    from relconsole.engine.relations.records import SHORT, short_pair
    shown = short_pair(source, followup)
    for value, window in zip((source, followup), shown):
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        assert window.strip("…") in text and len(window) <= SHORT + 1
    texts = [json.dumps(v, ensure_ascii=False, separators=(",", ":")) for v in (source, followup)]
    assert (shown[0] == shown[1]) == (texts[0] == texts[1])


def test_a_missing_id_in_a_long_list_is_inside_the_shown_windows():
    """The sample's bands miss: 14 ids against 13, the dropped one far past the cut."""
    from relconsole.engine.relations.records import short_pair
    ids = [f"PB-{n:05d}" for n in range(10000, 80000, 5000)]
    dropped = ids[9]
    source, followup = short_pair(ids, ids[:9] + ids[10:])
    assert dropped in source and dropped not in followup
