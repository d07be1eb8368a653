"""The console uses the room it has (issue 36): at 160x48 four equal panes cut nearly every
second line while two thirds of their rows stayed empty. Side by side, the columns beyond
what every relation id needs go to the panes whose text is long (``panewidths``), and a
pane with rows to spare wraps its long lines (``itemwrap``) instead of cutting them.

What the screen shows is read from Textual's compositor; expectations come from the
items the panes hold and from the functions' own contracts.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st
from rich.cells import cell_len
from rich.text import Text

from relconsole.console.app import PANES, ReviewApp
from relconsole.console.itemwrap import wrap_item, wrap_line
from relconsole.console.listing import pane_width_needed
from relconsole.console.panewidths import share_width, wanted_width
from relconsole.console.widgets.pane import Pane
from tests.conftest import TODAY
from tests.test_console import settle
from tests.test_console_fit import rows_of, shown_panes

words = st.text(alphabet="abcdé漢/-.", min_size=1, max_size=14)
lines = st.builds(lambda lead, ws: " " * lead + " ".join(ws), st.integers(0, 4),
                  st.lists(words, min_size=1, max_size=12))


# --- wrapping a line ----------------------------------------------------------------------------


@given(line=lines, width=st.integers(4, 60), rows=st.integers(1, 4))
@settings(max_examples=300, deadline=None)
def test_a_wrapped_line_keeps_every_word_in_order_and_each_row_but_the_last_fits(line, width, rows):
    out = wrap_line(Text(line), width, rows)
    assert 1 <= len(out) <= rows
    assert all(cell_len(row.plain) <= width for row in out[:-1])
    if cell_len(out[-1].plain) <= width:  # nothing left for an ellipsis to cut: all of it shows
        joined = "".join(row.plain.strip() for row in out)
        assert joined.replace(" ", "") == line.replace(" ", "")
    if cell_len(line) <= width:
        assert [row.plain for row in out] == [line]


def test_continuation_rows_hang_under_the_text_after_the_mark_and_keep_its_style():
    line = Text("  ✗ rejected: vacuous: references no field of its input (symbol, date, price)")
    start = line.plain.index("symbol")
    line.stylize("red", start, start + len("symbol"))
    out = wrap_line(line, 30, 4)
    assert len(out) > 1
    indent = len(line.plain) - len(line.plain.lstrip()) + 2
    assert all(row.plain.startswith(" " * indent) and row.plain[indent] != " " for row in out[1:])
    styled = [row.plain[span.start:span.end] for row in out for span in row.spans if span.style == "red"]
    assert styled == ["symbol"]


def test_a_path_breaks_after_a_slash_not_inside_a_name():
    out = wrap_line(Text("✓ pin oracle/data/seattle-weather.csv"), 24, 2)
    assert [row.plain.strip() for row in out] == ["✓ pin oracle/data/", "seattle-weather.csv"]


def test_an_item_wraps_line_by_line():
    item = Text("first line that is long enough\nsecond")
    assert [row.plain for row in wrap_item(item, 12, 1)] == item.plain.split("\n")
    wrapped = [row.plain for row in wrap_item(item, 12, 3)]
    assert wrapped[-1] == "second" and len(wrapped) == 4


# --- sharing the width ---------------------------------------------------------------------------


@given(total=st.integers(0, 400), need=st.integers(10, 60), wants=st.lists(st.integers(0, 300), min_size=1, max_size=4))
@settings(max_examples=300, deadline=None)
def test_shares_fill_the_width_each_pane_its_need_and_no_one_beyond_its_want_while_another_is_short(total, need, wants):
    widths = share_width(total, need, wants)
    assert sum(widths) == total and len(widths) == len(wants)
    if total < need * len(wants):
        assert max(widths) - min(widths) <= 1
        return
    assert all(width >= need for width in widths)
    over = [n for n, width in enumerate(widths) if width > max(wants[n], need)]
    short = [n for n, width in enumerate(widths) if width < wants[n]]
    assert not (over and short), (widths, wants)


def test_a_pane_whose_text_fits_its_rows_wants_only_its_need_and_a_long_one_more():
    short = ["M a.py", "  ● x.y"]
    assert wanted_width(short, rows=30, need=33, chrome=3) == 33
    long = [f"  ✗ rejected: {'word ' * 20}{n}" for n in range(30)]
    assert wanted_width(long, rows=30, need=33, chrome=3) > 33
    assert wanted_width(long, rows=30, need=33, chrome=3) <= max(len(line) for line in long) + 3
    assert wanted_width(long, rows=0, need=33, chrome=3) == 33  # not laid out yet


# --- on the sample ------------------------------------------------------------------------------


async def test_at_160x48_nothing_the_panes_hold_is_cut_where_they_have_room(demo_repo):
    """Side by side, the longest pane is the widest, and every word of every item in the
    touched, relations and leases panes is on the screen: wrapped, not cut."""
    app = ReviewApp(repo=str(demo_repo), today=TODAY, autorun=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        panes = shown_panes(app)
        assert len(panes) == 4 and len({p.region.y for p in panes}) == 1
        need = pane_width_needed(app.review)
        assert all(p.region.width >= need for p in panes)
        assert sum(p.region.width for p in panes) == 160
        text = {kind: sum(len(line) for line in app.lines_of[kind]) for kind in PANES}
        widest = max(PANES, key=text.get)
        assert app.pane(widest).region.width == max(p.region.width for p in panes)
        for kind in ("touched", "relations", "leases"):
            pane = app.query_one(f"#{kind}", Pane)
            rows = rows_of(app, pane)
            assert not any("…" in row for row in rows), kind
            joined = "".join("".join(row.strip("│").split()) for row in rows)  # a word folded over rows joins up
            for item in pane.options:
                for word in item.prompt.plain.split():
                    assert word in joined, (kind, word)
        quarantine = app.query_one("#quarantine", Pane)
        item_lines = sum(item.prompt.plain.count("\n") + 1 for item in quarantine.options)
        used = [row for row in rows_of(app, quarantine)[1:-1] if row.strip("│ ")]
        assert len(used) > item_lines  # its long lines take a second row


@pytest.mark.parametrize("size", [(100, 30), (80, 24)])
async def test_smaller_terminals_keep_equal_panes_two_by_two(demo_repo, size):
    app = ReviewApp(repo=str(demo_repo), today=TODAY, autorun=False)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        panes = shown_panes(app)
        assert len({p.region.y for p in panes}) == 2
        assert len({p.region.width for p in panes}) <= 2  # an odd width splits one column apart
