"""A shrunk miss in the console (issue 37): the smallest input and its two outputs first, then
the whole input's result, at 160x48 and 80x24, driven through the real app.

The sample's parallel-sum patch is run once for the module (``penguins.order_invariant``:
a corpus miss shrunk by delta debugging); each app loads the sample without running and is
handed that result. A drawn row's miss (``rollout.monotonic``, a seeds relation with a schema)
is made by the engine's own ``Drawing`` and ``shrunk_reply`` with a judge that is a plain
function. Every expectation is read from the record, never copied from a run.
"""

from __future__ import annotations

import json

import pytest
from rich.console import Console

from relconsole.console.app import ReviewApp
from relconsole.console.outline import resolve
from relconsole.console.screens.detail import DetailScreen
from relconsole.console.shrunktext import ROWS_SHOWN, RowsView, input_band, shrunk_words
from relconsole.engine.decision import Decision
from relconsole.engine.gate.review import load_review
from relconsole.engine.gate.reviewrun import run_review
from relconsole.engine.gate.shrunkfacts import ShrunkFacts, shrunk_facts
from relconsole.engine.oracle.catalog import check_row
from relconsole.engine.relations.drawing import Drawing, Judged
from relconsole.engine.relations.drawnrun import shrunk_reply
from relconsole.engine.relations.outcome import Outcome
from relconsole.engine.relations.records import RelationResult, RunRecord
from tests.conftest import TODAY
from tests.test_console import goto, settle, until
from tests.test_console_fit import rows_of

MISSED = "penguins.order_invariant"  # the agent's parallel sum: a corpus miss, shrunk
DRAWN = "rollout.monotonic"  # seeds with an input schema: a drawn row's miss
SIZES = [(160, 48), (80, 24)]


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    """(repository, the shrunk miss's RelationResult): the sample with its one run."""
    from relconsole.engine.demo import materialise

    root = materialise(tmp_path_factory.mktemp("shrunk") / "sample", TODAY)
    review = load_review(root, today=TODAY)
    try:
        run_review(review, [MISSED])
        result = review.results[MISSED]
        relation = review.catalog.get(DRAWN)
    finally:
        review.close()
    assert shrunk_facts(result.first) is not None, "the parallel sum's miss is shrunk"
    return root, result, relation


class Admitted:
    """A judge of drawn rollout rows: the follow-up admits one fewer when percent is 50..59
    and the population is at least 2 (a bucket swapped at the boundary)."""

    def __init__(self):
        self.now = 0.0

    def clock(self) -> float:
        return self.now

    def __call__(self, recipe: dict) -> Judged:
        self.now += 0.01
        row = recipe["value"]
        admitted = row["population"] * row["percent"] // 100
        miss = 50 <= row["percent"] <= 59 and row["population"] >= 2
        source, followup = {"admitted": admitted, "salt": row["salt"]}, {"admitted": admitted - miss,
                                                                         "salt": row["salt"]}
        return Judged(Outcome(not miss, source, followup, ["admitted"] if miss else [], "percent raised"))


def drawn_result(relation, seed: int = 2024) -> RelationResult:
    """A first run whose seed rows held and whose drawn row missed, shrunk by the engine."""
    schema = relation.input["schema"]
    judge = Admitted()
    report = Drawing({"kind": "monotonic"}, judge, seed, 300, 0.0, 60.0, deadline=1e9,
                     clock=judge.clock).seeds(schema, check_row)
    assert report.miss is not None and report.shrunk is not None, "300 draws never crossed 50..59"
    missed = report.miss["judged"].outcome
    record = RunRecord(False, seed, missed.source, missed.followup, missed.differing, missed.note,
                       inputs={"kind": "seeds", "path": relation.seeds_path, "records": 5, "sha256": "0" * 64},
                       drawn=report.summary(), shrunk=shrunk_reply(report.shrunk, [], schema))
    verdict = Decision("reject", "property_fail", 3, relation.id)
    return RelationResult(relation.id, "missed", verdict, "missed on a drawn input", first=record)


async def _open(app, pilot, rid: str, result: RelationResult) -> None:
    """Hand ``result`` to the loaded app, then open the relation's detail with enter."""
    app.review.results[rid] = result
    app.refresh_all()
    await goto(pilot, "relations", f"r:{rid}")
    await pilot.press("enter")
    await until(pilot, lambda: isinstance(app.screen, DetailScreen), "the relation's view")
    await pilot.pause(0.2)


def _text(app, selector: str) -> str:
    return str(app.screen.query_one(selector).content)


def _keys_after(column: str, marker: str) -> dict[str, str]:
    """Key -> value text of the ≠ lines in the first disagreeing-keys list after ``marker``."""
    tail = column[column.index(marker):] if marker else column
    listed = tail.split("disagreeing keys", 1)[1].split("\nwhole output\n", 1)[0]
    return dict(line[2:].split(": ", 1) for line in listed.splitlines() if line.startswith("≠ "))


def _cells(value) -> list[str]:
    """What the table shows of each field of a corpus row (text as it is)."""
    return [v if isinstance(v, str) else json.dumps(v) for v in value.values()]


@pytest.mark.parametrize("size", SIZES)
async def test_the_smallest_input_and_its_outputs_come_before_the_whole_corpus(sample, size):
    root, result, _ = sample
    facts = shrunk_facts(result.first)
    first = result.first
    app = ReviewApp(repo=str(root), today=TODAY, autorun=False, preferences=False)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await _open(app, pilot, MISSED, result)
        lead = app.screen.query_one("#detail-lead")
        left, right = app.screen.query_one("#detail-left"), app.screen.query_one("#detail-right")
        header = app.screen.query_one("#detail-header")
        assert header.region.bottom <= lead.region.y and lead.region.bottom <= left.region.y, "stacked, no overlap"
        band = "\n".join(rows_of(app, lead))
        assert facts.what in band and len(facts.input) <= 5, "the sample's miss shrinks to at most 5 rows"
        for row in facts.input:  # each row on one screen row, every value shown
            assert any(all(cell in line for cell in _cells(row)) for line in band.splitlines()), row
        assert "smallest input" in left.border_title and "smallest input" in right.border_title
        whole = "▸ on the whole corpus"
        for selector, top, rest in (("#detail-left Static", facts.source, first.source),
                                    ("#detail-right Static", facts.followup, first.followup)):
            column = _text(app, selector)
            shown = _keys_after(column, "")
            assert list(shown) == facts.differing
            assert all(shown[k] == repr(resolve(top, k)) for k in facts.differing)
            assert column.index("disagreeing keys") < column.index(whole), "the smallest input's first"
            later = _keys_after(column, whole)
            assert list(later) == first.differing and all(later[k] == repr(resolve(rest, k)) for k in later)
            assert f"({first.inputs['records']} rows)" in column[column.index(whole):].splitlines()[0]
        key = facts.differing[0]
        on_screen = ["\n".join(rows_of(app, c)) for c in (left, right)]
        for shown, value in zip(on_screen, (facts.source, facts.followup)):  # visible without scrolling
            assert key in shown and repr(resolve(value, key)) in shown.replace("\n", "").replace("│", "")


async def test_the_strip_says_the_miss_was_shrunk_and_to_what(sample):
    root, result, _ = sample
    facts = shrunk_facts(result.first)
    app = ReviewApp(repo=str(root), today=TODAY, autorun=False, preferences=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        app.review.results[MISSED] = result
        app.refresh_all()
        await goto(pilot, "relations", f"r:{MISSED}")
        await pilot.pause(0.2)
        strip = app.query_one("#detail")
        visible = "\n".join(rows_of(app, strip))
        assert f"smallest input: {shrunk_words(facts)}" in visible
        lines = str(strip.content).splitlines()
        smallest = next(n for n, line in enumerate(lines) if line.startswith("smallest input: "))
        assert facts.differing[0] in lines[smallest + 1] and "on it" in lines[smallest + 1]
        assert any(line.startswith("on the whole corpus, ") for line in lines[smallest:])


async def test_a_drawn_rows_miss_shows_the_row_and_the_fields_it_needs(sample):
    root, _, relation = sample
    result = drawn_result(relation)
    facts = shrunk_facts(result.first)
    assert facts.fields, "the shrunk row names the fields its miss needs"
    app = ReviewApp(repo=str(root), today=TODAY, autorun=False, preferences=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await _open(app, pilot, DRAWN, result)
        band = [line.strip() for line in rows_of(app, app.screen.query_one("#detail-lead"))]
        assert any(line.startswith("the miss needs: " + ", ".join(facts.fields)) for line in band)
        head = next(n for n, line in enumerate(band) if all(f"{name} *" in line for name in facts.fields))
        values = band[head + 1].split()
        assert values == [json.dumps(v) if not isinstance(v, str) else v for v in facts.input.values() if v != ""]
        left = _text(app, "#detail-left Static")
        assert left.index("disagreeing keys") < left.index("▸ on the drawn input before shrinking")
        body = _text(app, "#detail-body Static")
        assert result.first.drawn["missed_on"]["label"] in body and "the file input held" in body
        assert f"from seed {result.first.drawn['seed']}" in body


def test_rows_too_wide_for_a_table_are_one_json_row_per_line_and_literal():
    hostile = "[bold red]x[/]\x1b[2J"
    rows = [{f"field_number_{n}": f"{hostile}{n}" for n in range(12)} for _ in range(3)]
    facts = ShrunkFacts(rows, "3 rows of the corpus's 9 rows", "the whole corpus")
    shown = {}
    for width in (40, 1000):
        console = Console(width=width, record=True, color_system=None)
        console.print(input_band(facts)[1])
        shown[width] = console.export_text()
        assert "\x1b" not in shown[width]
    narrow, wide = shown[40], shown[1000].splitlines()
    assert narrow.replace("\n", "").count(json.dumps(rows[0], separators=(",", ":"))[:60]) == len(rows)
    assert all(name in wide[1] for name in rows[0]), "a table's header row"
    assert sum(line.count("[bold red]x[/]\\x1b[2J") == len(rows[0]) for line in wide) == len(rows)


def test_rows_past_the_cap_are_counted():
    rows = [{"n": n} for n in range(ROWS_SHOWN + 7)]
    console = Console(width=80, record=True, color_system=None)
    console.print(RowsView(rows))
    assert f"… {len(rows) - ROWS_SHOWN} more rows" in console.export_text()
