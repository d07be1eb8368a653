"""Does it bite (issue 3 item 6): mutation operators on snippets, and ``bite`` on the sample."""

from __future__ import annotations

import ast
import datetime as dt
import json
import re
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relconsole.cli import main
from relconsole.engine.bite import bite, cached_bite
from relconsole.engine.demo import materialise
from relconsole.engine.errors import EXIT_ABORT, EXIT_PASS, EXIT_REJECT, EXIT_USAGE, UsageError
from relconsole.engine.mutations import OPERATORS, TargetNotFound, mutants
from relconsole.engine.review import load_review
from tests.conftest import TODAY, git

SNIPPET = textwrap.dedent('''
    """A module."""
    import math
    import re

    LIMIT = 3


    def helper(xs):
        return [x for x in xs]


    def other(a, b):
        return a < b


    def target(rows):
        """Every operator has a site in here."""
        if not rows:
            return []
        seen = set(rows)
        out = {}
        for r in sorted(seen):
            if r <= LIMIT:
                out[r] = max(r, 0)
        out.update({"n": 1.5})
        out.setdefault("m", 2)
        vals = list(out.values())
        vals.sort()
        label = str(rows[0]).strip().lower() if rows and out else ""
        head = rows[1:3]
        return [math.fsum(vals), rows == rows, {k: v for k, v in out.items()}, re.match(r"^a+$", label), head]
''')

STORE = textwrap.dedent('''
    class Store:
        def __init__(self):
            self.rows = {}

        def ingest(self, rows):
            for row in rows:
                self.rows[row["k"]] = row

        def projection(self):
            return sorted(self.rows)


    def make_store():
        return Store()


    def unrelated(x):
        return x > 1
''')

# A subject that ignores what its input holds: every mutant of it is permutation-invariant.
WEAK_SUBJECT = textwrap.dedent('''
    def count(rows):
        """How many rows there are."""
        total = 0
        for row in rows:
            total = total + 1
        return total
''')
WEAK_RELATION = textwrap.indent(textwrap.dedent('''
      - id: rows.count_invariant
        kind: permutation
        subject: weak:count
        input: {seeds: oracle/seeds/weak.jsonl}
        compare: exact
        params: {shuffles: 3, seed: 1}
        statement: Shuffling the rows leaves their count unchanged.
'''), "  ")


def top_level_dumps(source: str, skip: set[str]) -> list[str]:
    return [ast.dump(n) for n in ast.parse(source).body if getattr(n, "name", None) not in skip]


def function_dump(source: str, name: str) -> str:
    return next(ast.dump(n) for n in ast.parse(source).body if getattr(n, "name", None) == name)


# --- operators -------------------------------------------------------------------------

def test_every_operator_has_a_site_and_changes_only_the_target():
    found = mutants(SNIPPET, "target", limit=1000)
    assert {m.operator for m in found} == set(OPERATORS) | {"return_early"}
    for mutant in found:
        compile(mutant.source, "<mutant>", "exec")
        assert top_level_dumps(mutant.source, {"target"}) == top_level_dumps(SNIPPET, {"target"}), mutant.label
        assert function_dump(mutant.source, "target") != function_dump(SNIPPET, "target"), mutant.label
        assert mutant.function == "target" and mutant.label and mutant.line >= 16


@pytest.mark.parametrize(("operator", "before", "after"), [
    ("drop_sort", "for r in sorted(seen):", "for r in list(seen):"),
    ("drop_sort", "vals.sort()", None),
    ("boundary", "if r <= LIMIT:", "if r < LIMIT:"),
    ("negate", "rows == rows", "rows != rows"),
    ("drop_guard", "if not rows:", None),
    ("swap_args", "max(r, 0)", "max(0, r)"),
    ("constant", "1.5", "2.5"),
    ("first_only", "out[r] = max(r, 0)\n", "break"),
    ("drop_dedup", "seen = set(rows)", "seen = list(rows)"),
    ("drop_dedup", "out[r] = max(r, 0)", "out[str(r) + '#' + str(len(out))] = max(r, 0)"),
    ("uncompensated", "math.fsum(vals)", "sum(vals)"),
    ("return_early", "vals.sort()", "return\n"),
    ("drop_call", "str(rows[0]).strip().lower() if", "str(rows[0]).strip() if"),
    ("drop_call", "str(rows[0]).strip().lower() if", "str(rows[0]).lower() if"),
    ("regex", "re.match('^a+$', label)", "re.match('a+$', label)"),
    ("regex", "re.match('^a+$', label)", "re.match('^a+', label)"),
    ("regex", "re.match('^a+$', label)", "re.match('^a*$', label)"),
    ("and_or", "if rows and out else", "if rows or out else"),
    ("slice_bound", "rows[1:3]", "rows[1 + 1:3]"),
    ("slice_bound", "rows[1:3]", "rows[1:3 + 1]"),
])
def test_operator_edits(operator, before, after):
    texts = [m.source for m in mutants(SNIPPET, "target", limit=1000) if m.operator == operator]
    original = ast.unparse(ast.parse(SNIPPET))
    assert before in original
    if after is None:  # a removal: some mutant lacks the statement
        assert any(before not in t for t in texts)
    else:
        assert any(after in t and t != original for t in texts)


def test_mutating_the_module_behaves_differently():
    namespace: dict = {}
    mutant = next(m for m in mutants(SNIPPET, "target") if m.label.startswith("drop dedup: out[r]"))
    exec(compile(mutant.source, "<mutant>", "exec"), namespace)
    assert namespace["target"]([2, 1, 1])[2] == {"1#0": 1, "2#1": 2, "n": 1.5, "m": 2}


def test_helpers_one_level_deep_and_nothing_else():
    source = SNIPPET.replace("seen = set(rows)", "seen = set(helper(rows))")
    functions = {m.function for m in mutants(source, "target", limit=1000)}
    assert functions == {"target", "helper"}
    for mutant in mutants(source, "target", limit=1000):
        assert top_level_dumps(mutant.source, {"target", "helper"}) == \
            top_level_dumps(source, {"target", "helper"})


def test_factory_subject_mutates_the_returned_class_methods():
    found = mutants(STORE, "make_store", limit=1000)
    assert {m.function for m in found} == {"Store.ingest", "Store.projection"}
    assert all(top_level_dumps(m.source, {"Store"})[1:] == top_level_dumps(STORE, {"Store"})[1:] for m in found)
    assert {m.function for m in mutants(STORE, "Store", limit=1000)} == {"Store.ingest", "Store.projection"}
    assert {m.function for m in mutants(STORE, "Store.ingest", limit=1000)} == {"Store.ingest"}
    with pytest.raises(TargetNotFound):
        mutants(STORE, "Store.missing")


def test_mutants_are_deterministic_capped_and_spread_over_operators():
    assert mutants(SNIPPET, "target") == mutants(SNIPPET, "target")
    few = mutants(SNIPPET, "target", limit=6)
    assert len(few) == 6 and len({m.operator for m in few}) == 6
    assert [m.line for m in few] == sorted(m.line for m in few)
    everything = mutants(SNIPPET, "target", limit=1000)
    assert len({m.source for m in everything}) == len(everything)


# --- bite on the sample repository -------------------------------------------------------

def stocks_ok_day(repo: Path) -> dt.date:
    """A day on which the stocks lease (which the demo makes expired) is comfortably fresh."""
    text = git(repo, "show", "main:oracle/leases/stocks.yaml")
    expires = dt.date.fromisoformat(re.search(r"^expires:\s*(\S+)", text, re.MULTILINE).group(1))
    return expires - dt.timedelta(days=30)


@pytest.fixture(scope="module")
def sample(tmp_path_factory) -> Path:
    repo = materialise(tmp_path_factory.mktemp("bite") / "sample", TODAY)
    git(repo, "checkout", "-q", "main")
    return repo


@pytest.fixture(scope="module")
def reports(sample: Path) -> dict:
    before = git(sample, "status", "--porcelain", "--untracked-files=all")
    review = load_review(sample, "main", "HEAD", stocks_ok_day(sample))
    try:
        out = {r.id: bite(review, r.id) for r in review.relations}
    finally:
        review.close()
    assert before == "" and git(sample, "status", "--porcelain", "--untracked-files=all") == ""
    return out


@pytest.mark.parametrize("relation_id", ["penguins.order_invariant", "penguins.split_merge",
                                         "weather.replay_ingest", "rollout.monotonic", "codec.roundtrip"])
def test_every_sample_relation_bites(reports, relation_id):
    report = reports[relation_id]
    assert report.baseline == "held", report.verdict()
    assert report.bites is True and report.caught >= 1, report.verdict()
    assert report.total == len(report.results) > 0
    assert all(r.outcome in ("caught", "survived") and r.path == report.subject_path for r in report.results)
    assert "bites: caught" in report.verdict()


def test_a_lost_fsum_is_what_the_exact_permutation_relation_is_for(reports):
    result = next(r for r in reports["penguins.order_invariant"].results if r.operator == "uncompensated")
    assert result.outcome == "caught" and not result.crashed


def test_bite_results_are_cached_for_run_json(sample: Path, reports):
    review = load_review(sample, "main", "HEAD", stocks_ok_day(sample))
    try:
        for relation_id, report in reports.items():
            assert cached_bite(review, relation_id) is report.bites is True
        assert cached_bite(review, "no.such.relation") is None
    finally:
        review.close()
    cache = json.loads((sample / ".git" / "relconsole" / "bite.json").read_text())
    assert {entry["relation_id"] for entry in cache.values()} >= set(reports)


def test_blocked_relation_is_reported_not_run(sample: Path):
    review = load_review(sample, "main", "HEAD", TODAY)  # the demo's stocks lease is expired today
    try:
        report = bite(review, "codec.roundtrip")
    finally:
        review.close()
    assert report.baseline == "blocked" and report.bites is None and not report.results
    assert "expired" in report.verdict()


def test_a_relation_that_already_misses_is_reported_as_such(sample: Path):
    review = load_review(sample, "main", "agent/patch", TODAY)
    try:
        report = bite(review, "penguins.order_invariant")
    finally:
        review.close()
    assert report.baseline == "missed" and report.bites is None and not report.results
    assert "already misses" in report.verdict() and "would mean nothing" in report.verdict()


def test_unknown_relation_is_a_usage_error(sample: Path):
    review = load_review(sample, "main", "HEAD", TODAY)
    try:
        with pytest.raises(UsageError):
            bite(review, "no.such.relation")
    finally:
        review.close()


def test_mutants_never_leak_into_the_tree(sample: Path, tmp_path: Path):
    tree = tmp_path / "tree"
    original = git(sample, "show", "main:src/store.py").encode()
    seen: list[bool] = []
    review = load_review(sample, "main", "HEAD", TODAY)
    try:
        report = bite(review, "weather.replay_ingest", lambda r: seen.append(
            (tree / "src/store.py").read_bytes() == original), tree=tree)

        def explode(result):
            raise RuntimeError("stop after the first mutant")
        with pytest.raises(RuntimeError):
            bite(review, "weather.replay_ingest", explode, tree=tmp_path / "tree2")
    finally:
        review.close()
    assert seen and all(seen) and len(seen) == report.total
    assert (tree / "src/store.py").read_bytes() == original
    assert (tmp_path / "tree2/src/store.py").read_bytes() == original
    assert git(sample, "status", "--porcelain", "--untracked-files=all") == ""


# --- a weak relation, and the CLI ----------------------------------------------------------

@pytest.fixture
def weak_repo(demo_repo: Path) -> Path:
    git(demo_repo, "checkout", "-q", "main")
    (demo_repo / "src/weak.py").write_text(WEAK_SUBJECT, encoding="utf-8")
    (demo_repo / "oracle/seeds/weak.jsonl").write_text("[3, 1, 2]\n[5, 4]\n", encoding="utf-8")
    with open(demo_repo / "oracle/catalog.yaml", "a", encoding="utf-8") as catalog:
        catalog.write(WEAK_RELATION)
    git(demo_repo, "add", "src/weak.py", "oracle/seeds/weak.jsonl", "oracle/catalog.yaml")
    git(demo_repo, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-q", "-m", "weak relation")
    return demo_repo


def test_a_relation_over_an_input_blind_subject_does_not_bite(weak_repo: Path):
    review = load_review(weak_repo, "main", "HEAD", TODAY)
    try:
        assert cached_bite(review, "rows.count_invariant") is None
        report = bite(review, "rows.count_invariant")
        assert cached_bite(review, "rows.count_invariant") is False
    finally:
        review.close()
    assert report.baseline == "held" and report.total >= 3
    assert report.bites is False and report.caught == 0
    assert "does not bite" in report.verdict()


def cli(capsys, *args: str) -> tuple[int, str]:
    code = main(list(args))
    return code, capsys.readouterr().out


def test_cli_exit_codes_and_text(weak_repo: Path, capsys):
    common = ["--repo", str(weak_repo), "--today", TODAY.isoformat()]
    code, out = cli(capsys, "bite", "rows.count_invariant", *common)
    assert code == EXIT_REJECT
    lines = out.strip().splitlines()
    assert all(re.match(r"^survived  .+  src/weak\.py:\d+$", line) for line in lines[:-1])
    assert lines[-1].startswith("rows.count_invariant: does not bite")
    code, out = cli(capsys, "bite", "rollout.monotonic", "--json", *common)
    payload = json.loads(out)
    assert code == EXIT_PASS and payload["bites"] is True and payload["caught"] >= 1
    assert {"caught", "survived"} >= {m["outcome"] for m in payload["mutations"]}
    assert cli(capsys, "bite", "codec.roundtrip", *common)[0] == EXIT_ABORT  # blocked today
    assert cli(capsys, "bite", "no.such.relation", *common)[0] == EXIT_USAGE
    assert git(weak_repo, "status", "--porcelain", "--untracked-files=all") == ""


async def test_the_console_flags_a_relation_that_does_not_bite(weak_repo: Path):
    from relconsole.console.app import ReviewApp
    from tests.test_console import prompts, settle

    review = load_review(weak_repo, "main", "HEAD", TODAY)
    try:
        bite(review, "rows.count_invariant")
    finally:
        review.close()
    app = ReviewApp(repo=str(weak_repo), head_ref="main", today=TODAY, autorun=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        shown = prompts(app, "relations")
        assert "does not bite" in shown["r:rows.count_invariant"]
        assert not any("does not bite" in text for oid, text in shown.items()
                       if oid != "r:rows.count_invariant")


SHELF_IMPL = textwrap.dedent('''
    def spread(xs):
        """The largest value minus the smallest."""
        low, high = xs[0], xs[0]
        for x in xs[1:]:
            if x < low:
                low = x
            if x > high:
                high = x
        return high - low
''')


@pytest.mark.parametrize("init", ["from .impl import spread\n", "from .impl import *\n",
                                  "from shelf.impl import spread as spread\n", "from . import impl\nfrom .impl import spread\n"])
def test_a_subject_re_exported_from_a_package_is_mutated_where_it_is_defined(demo_repo: Path, init: str):
    """Issue 16: ``pkg:func`` where ``pkg/__init__.py`` re-exports ``func`` from ``pkg/impl.py``
    crashed bite with a TargetNotFound traceback (exit 1, the "does not bite" code)."""
    git(demo_repo, "checkout", "-q", "main")
    (demo_repo / "src/shelf").mkdir()
    (demo_repo / "src/shelf/__init__.py").write_text(init, encoding="utf-8")
    (demo_repo / "src/shelf/impl.py").write_text(SHELF_IMPL, encoding="utf-8")
    (demo_repo / "oracle/seeds/spread.jsonl").write_text("[3, 1, 2]\n[5, 4, 9, 1]\n[7]\n", encoding="utf-8")
    with open(demo_repo / "oracle/catalog.yaml", "a", encoding="utf-8") as catalog:
        catalog.write(WEAK_RELATION.replace("rows.count_invariant", "shelf.spread_order").replace(
            "weak:count", "shelf:spread").replace("weak.jsonl", "spread.jsonl"))
    git(demo_repo, "add", "-A")
    git(demo_repo, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-q", "-m", "shelf")
    review = load_review(demo_repo, "main", "HEAD", TODAY)
    try:
        report = bite(review, "shelf.spread_order")
    finally:
        review.close()
    assert report.subject_path == "src/shelf/impl.py" and report.baseline == "held"
    assert report.total >= 3 and report.bites is True


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from(["survived", "caught by comparison", "caught by a crash"]), max_size=8))
def test_a_relation_that_catches_only_by_crashes_bites_by_crash_only(fates):
    """Issue 16: a mutant that raises is caught by any caller; a relation whose every catch was
    a crash has its own verdict, never "bites"."""
    from relconsole.engine.bite import BiteReport, MutationResult
    report = BiteReport("r", "m:f", "m.py", "held", "held", results=[
        MutationResult("op", "label", "m.py", 1, "f", "survived" if f == "survived" else "caught", "",
                       crashed=f.endswith("crash")) for f in fates])
    compared = "caught by comparison" in fates
    crashed = "caught by a crash" in fates
    assert report.bites is compared and report.crash_only is (crashed and not compared)
    words = report.verdict()
    assert (": bites:" in words, "bites by crash only" in words, "does not bite" in words) == (
        compared, crashed and not compared, not crashed and not compared)
