"""The diff view's marks when several relations ran a changed line (issue 36: the gutter named
one relation, cut, and not the one that missed), and the missed relation's view of a scalar
output (each value shown once).

A small real repository: two idempotence relations own ``timelib/squash.py``; the patch adds
a branch both run, and only the spaced seeds take it and miss. The marks are checked on
``DiffLine`` values, on the console's screen (the Pilot) and in ``bind --json``.
"""

from __future__ import annotations

import json
import textwrap

import pytest

from bench.gitrepo import reviewed_repo
from relconsole.console.app import ReviewApp
from relconsole.console.outline import output_columns
from relconsole.console.diffs import MARK_WIDTH, gutter, line_about
from relconsole.console.screens.detail import DetailScreen
from relconsole.console.screens.diff import DiffScreen
from relconsole.console.widgets.pane import Pane
from relconsole.engine.gate.diffview import DiffLine
from test_base_decides import cli
from tests.conftest import TODAY
from tests.test_console import goto, settle, until
from tests.test_console_fit import rows_of, screen_rows

SQUASH = 'def squash(text):\n    """Collapse runs of whitespace."""\n    return " ".join(text.split())\n'
BRANCH = '    if "  " in text:'  # the added line both relations run
PATCHED = SQUASH.replace('    return " "', f'{BRANCH}\n        return text.replace("  ", " ", 1)\n    return " "')
HELD, MISSED = "text.a_plain", "text.b_spaced"  # the held one sorts first: the gutter must still name the miss
CATALOG = textwrap.dedent(f"""\
    owners:
      "timelib/squash.py": [{HELD}, {MISSED}]
    relations:
      - id: {HELD}
        kind: idempotence
        subject: timelib.squash:squash
        input: {{seeds: oracle/seeds/plain.jsonl}}
        compare: exact
        statement: Squashing plain words twice is squashing them once.
      - id: {MISSED}
        kind: idempotence
        subject: timelib.squash:squash
        input: {{seeds: oracle/seeds/spaced.jsonl}}
        compare: exact
        statement: Squashing spaced words twice is squashing them once.
    """)
BASE = {"timelib/__init__.py": "", "timelib/squash.py": SQUASH, "oracle/seeds/plain.jsonl": '"plain"\n"x"\n',
        "oracle/seeds/spaced.jsonl": '"  x y   z "\n', "oracle/catalog.yaml": CATALOG}


def squash_repo(tmp_path):
    return reviewed_repo(tmp_path / "repo", BASE, {"timelib/squash.py": PATCHED})


# --- the marks column and the footer, on lines -------------------------------------------------

def test_the_gutter_counts_every_relation_and_names_one_that_missed():
    ids = tuple(f"pkg.relation_number_{n}_with_a_long_name" for n in range(3))
    line = DiffLine("+", None, 7, "x = 1", ran=ids, missed=(ids[2],))
    mark, style = gutter(line)
    assert mark.startswith("✗ ") and mark.endswith(f" +{len(ids) - 1}") and "red" in style
    assert len(mark) <= MARK_WIDTH and ids[2][:10] in mark  # the name cut, never the count
    held = gutter(DiffLine("+", None, 7, "x = 1", ran=ids[:1]))[0]
    assert held.startswith("✓ ") and "+" not in held


def test_the_footer_lists_every_relation_of_the_line_those_that_missed_first():
    ids = ("a.first", "b.second", "c.third")
    about = line_about(DiffLine("+", None, 12, "x = 1", ran=ids, missed=("c.third",))).plain
    assert all(rid in about for rid in ids) and about.index("c.third") < about.index("a.first")
    assert "3 relations" in about and "missed" in about and "12" in about


@pytest.mark.parametrize("source, followup, differing, once", [
    ("a b.", "a b..", ["(whole output)"], True),  # a scalar: the disagreeing value is the output
    ({"text": "a"}, {"text": "b"}, ["text"], True),  # one key
    ({"box": {"text": "a"}}, {"box": {"text": "b"}}, ["box.text"], True),  # one key, nested
    ({"text": "a", "n": 1}, {"text": "b", "n": 1}, ["text"], False),  # the whole output says more
    ([1, 2], [2, 1], ["(whole output)"], False),  # listed as one repr: the outline shows its entries
])
def test_the_whole_output_is_left_out_only_when_the_listed_keys_show_all_of_it(source, followup, differing, once):
    left, right = output_columns(source, followup, differing)
    for column in (left, right):
        assert ("whole output" in [line.plain for line in column]) is not once


# --- the console and bind, on a real repository -------------------------------------------------

async def test_v_marks_the_missed_relation_counts_the_rest_and_lists_them_under_the_cursor(tmp_path):
    repo = squash_repo(tmp_path)
    app = ReviewApp(repo=str(repo), base_ref="main", today=TODAY)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot, timeout=300)
        results = app.review.results
        assert results[MISSED].outcome == "missed" and results[HELD].outcome == "held"
        await goto(pilot, "touched", f"t:{[b.path for b in app.review.bindings].index('timelib/squash.py')}")
        await pilot.press("v")
        await until(pilot, lambda: isinstance(app.screen, DiffScreen), "the diff view")
        await until(pilot, lambda: any(BRANCH in row for row in screen_rows(app)), "the diff's rows")
        row = next(row for row in screen_rows(app) if BRANCH in row)
        assert f"✗ {MISSED} +1" in row and HELD not in row
        lines = app.screen.query_one(Pane)
        target = next(item.id for item in lines.options if BRANCH in item.prompt.plain)
        for _ in range(lines.option_count):
            if lines.highlighted_id == target:
                break
            await pilot.press("j")
        await pilot.pause()
        footer = "\n".join(rows_of(app, app.screen.query_one("#diff-line")))
        assert HELD in footer and f"{MISSED} missed" in footer and "2 relations" in footer
    # bind reads the lines the console's run recorded: every relation of the line, no run again
    payload = json.loads(cli(repo, "bind", "--base", "main", "--json").stdout)
    [entry] = [p for p in payload["paths"] if p["path"] == "timelib/squash.py"]
    branch = next(line for line in entry["lines"] if line["text"] == BRANCH)
    assert set(branch["ran"]) == {HELD, MISSED} and not branch["unexercised"]


async def test_a_missed_scalar_shows_each_side_once(tmp_path):
    """A whole output that is the disagreeing value itself is listed once per column, not again
    under "whole output" (issue 36)."""
    repo = squash_repo(tmp_path)
    app = ReviewApp(repo=str(repo), base_ref="main", today=TODAY)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot, timeout=300)
        first = app.review.results[MISSED].first
        assert first.differing == ["(whole output)"] and isinstance(first.source, str)
        await goto(pilot, "relations", f"r:{MISSED}")
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, DetailScreen), "the relation's view")
        await pilot.pause()
        for column, value in (("#detail-left", first.source), ("#detail-right", first.followup)):
            shown = "\n".join(rows_of(app, app.screen.query_one(column)))
            assert shown.count(repr(value)) == 1, shown
            assert "whole output" not in shown.replace("(whole output)", "")
