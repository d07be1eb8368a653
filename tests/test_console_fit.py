"""The console in daily use at every terminal size (issue 18): the layout chosen by what
fits, a key bar that keeps help and quit, items at 30x8, the quarantine cursor after a
commit, the filter row after esc, a saved replay sheet in the relation's view, small
toasts, and the two output columns of a missed relation scrolling together.

What the screen shows is read from Textual's compositor (the cells a person sees);
expectations come from the engine's Review and the bindings in force.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st
from textual.widgets._toast import Toast

from relconsole.console.app import PANES, ReviewApp
from relconsole.console.listing import pane_width_needed
from relconsole.console.screens.detail import DetailScreen
from relconsole.console.widgets.filterbar import FilterBar
from relconsole.console.widgets.keybar import ALWAYS, GAP, KEEP_ORDER, KeyBar, KeyEntry, fit, rank, wrap
from relconsole.console.widgets.pane import Pane
from relconsole.engine.docsref import decision_row
from relconsole.engine.gate.freezeevidence import freeze_evidence
from tests.conftest import TODAY
from tests.test_console import goto, prompts, settle, until

SIZES = [(160, 48), (120, 40), (100, 30), (80, 24), (70, 24)]


def screen_rows(app) -> list[str]:
    """The text of every row of the active screen, as composited (toasts included)."""
    return [strip.text for strip in app.screen._compositor.render_strips()]


def rows_of(app, widget) -> list[str]:
    """The screen rows ``widget`` covers, cut to its columns."""
    region = widget.region
    return [row[region.x:region.right] for row in screen_rows(app)[region.y:region.bottom]]


def shown_panes(app) -> list[Pane]:
    return [p for p in app.query(Pane) if p.display and p.region.width > 0 and p.region.height > 0]


def key_of(app, binding_id: str) -> str:
    """How the key bar writes the first key in force for ``binding_id``."""
    binding = next(b for b in app.BINDINGS if b.id == binding_id)
    return app.get_key_display(binding.with_key(app.active_keys[binding_id][0]))


def description_of(app, binding_id: str) -> str:
    return next(b for b in app.BINDINGS if b.id == binding_id).description


# --- layout by what fits ----------------------------------------------------------------------


@pytest.mark.parametrize("size", SIZES)
async def test_every_relation_id_shows_uncut_at_every_size(demo_repo, size):
    app = ReviewApp(repo=str(demo_repo), today=TODAY, autorun=False)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        width, _height = size
        need = pane_width_needed(app.review)
        panes = shown_panes(app)
        assert all(p.region.width >= need for p in panes)
        if width >= 4 * need:
            assert len(panes) == 4 and len({p.region.y for p in panes}) == 1  # side by side
        elif width >= 2 * need:
            assert len(panes) == 4 and len({p.region.y for p in panes}) == 2  # two by two
            assert len({p.region.x for p in panes}) == 2
        for relation in app.review.relations:
            await goto(pilot, "relations", f"r:{relation.id}")
            await pilot.pause()
            shown = rows_of(app, app.query_one("#relations", Pane))
            assert any(relation.id in row for row in shown), (relation.id, shown)


async def test_four_panes_side_by_side_when_wide_two_by_two_between_tabs_when_narrow(demo_repo):
    app = ReviewApp(repo=str(demo_repo), today=TODAY, autorun=False)
    async with app.run_test(size=(200, 48)) as pilot:
        await settle(pilot)
        need = pane_width_needed(app.review)
        layouts = {}
        for width in (4 * need, 4 * need - 1, 2 * need, 2 * need - 1):
            await pilot.resize_terminal(width, 40)
            await until(pilot, lambda: app.size.width == width, "the resize")
            await pilot.pause()
            panes = shown_panes(app)
            layouts[width] = (len(panes), len({p.region.y for p in panes}))
            assert all(p.region.width >= need for p in panes)
        assert layouts == {4 * need: (4, 1), 4 * need - 1: (4, 2), 2 * need: (4, 2), 2 * need - 1: (1, 1)}


# --- the key bar ------------------------------------------------------------------------------


@pytest.mark.parametrize("size", [(80, 24), (70, 24), (30, 8)])
async def test_the_key_bar_always_shows_help_and_quit(demo_repo, size):
    app = ReviewApp(repo=str(demo_repo), today=TODAY, autorun=False)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        for number, kind in enumerate(PANES, 1):
            await pilot.press(str(number))
            await pilot.pause()
            bar = " ".join(rows_of(app, app.query_one("#keys", KeyBar)))
            for binding_id in ("help", "quit"):
                assert f"{key_of(app, binding_id)} {description_of(app, binding_id)}" in bar, (kind, bar)
            assert "…" not in bar  # whole entries are left out, never a cut one


@pytest.mark.parametrize("size", [(80, 24), (70, 24)])
async def test_quarantine_keys_show_at_80_and_70_columns(demo_repo, size):
    app = ReviewApp(repo=str(demo_repo), today=TODAY, autorun=False)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await pilot.press("4")
        await pilot.pause()
        bar = " ".join(rows_of(app, app.query_one("#keys", KeyBar)))
        for binding_id in ("accept", "delete", "confirm", "commit", "help", "quit"):
            assert f"{key_of(app, binding_id)} {description_of(app, binding_id)}" in bar, bar


async def test_the_key_bar_shows_the_keymaps_quit_key(demo_repo, tmp_path):
    keymap = tmp_path / "keymap.toml"
    keymap.write_text('[keys]\nquit = "ctrl+x"\n')
    app = ReviewApp(repo=str(demo_repo), today=TODAY, autorun=False, keymap=str(keymap))
    async with app.run_test(size=(70, 24)) as pilot:
        await settle(pilot)
        await pilot.press("4")
        await pilot.pause()
        bar = " ".join(rows_of(app, app.query_one("#keys", KeyBar)))
        assert f"{key_of(app, 'quit')} Quit" in bar and "q Quit" not in bar


async def test_at_30x8_the_focused_panes_items_and_the_decision_show(demo_repo):
    app = ReviewApp(repo=str(demo_repo), today=TODAY, autorun=False)
    async with app.run_test(size=(30, 8)) as pilot:
        await settle(pilot)
        rows = screen_rows(app)
        first = next(b.path for b in app.review.bindings)
        assert any(first[:20] in row for row in rows), rows
        assert any(f" {app.review.decision().decision.upper()} " in row for row in rows), rows
        await pilot.press("4")
        await pilot.pause()
        pane = app.query_one("#quarantine", Pane)
        label = pane.highlighted_option.prompt.plain.splitlines()[0][:20]
        assert any(label in row for row in rows_of(app, pane)), screen_rows(app)


# --- quarantine, filter row, replay sheet ----------------------------------------------------


async def test_the_quarantine_cursor_stays_on_the_next_undecided_item_after_a_commit(demo_repo):
    app = ReviewApp(repo=str(demo_repo), today=TODAY, autorun=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        decidable = [oid for oid in prompts(app, "quarantine") if oid.startswith(("c:", "s:"))]
        gone, following = decidable[1], decidable[2]
        await goto(pilot, "quarantine", gone)
        await pilot.press("d", "y")
        await settle(pilot)
        pane = app.query_one("#quarantine", Pane)
        assert gone not in prompts(app, "quarantine")
        assert pane.highlighted_id == following
        last = [oid for oid in prompts(app, "quarantine") if oid.startswith(("c:", "s:"))][-1]
        await goto(pilot, "quarantine", last)
        await pilot.press("d", "y")
        await settle(pilot)
        left = [oid for oid in prompts(app, "quarantine") if oid.startswith(("c:", "s:"))]
        assert last not in left and pane.highlighted_id == left[-1]  # the last one: the one above


async def test_esc_in_a_pane_clears_the_filter_row_too(demo_repo):
    app = ReviewApp(repo=str(demo_repo), today=TODAY, autorun=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await pilot.press("2", "slash", *"split", "enter")
        await until(pilot, lambda: app.filters["relations"] == "split", "the filter applied")
        await pilot.press("escape")
        await until(pilot, lambda: app.filters["relations"] == "", "esc cleared the filter")
        bar = app.query_one("#filter", FilterBar)
        assert bar.value == ""
        assert not any("split" in row for row in rows_of(app, bar))


async def test_a_replay_sheet_saved_earlier_shows_in_the_relations_view(demo_repo: Path):
    first = ReviewApp(repo=str(demo_repo), today=TODAY)
    async with first.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await pilot.press("b")
        await settle(pilot, timeout=120)
        replayed = dict(first.review.replays)
    assert replayed, "the sample's patch must miss a relation"
    app = ReviewApp(repo=str(demo_repo), today=TODAY)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        assert not app.review.replays  # nothing replayed in this session
        for rid, earlier in replayed.items():
            evidence = freeze_evidence(app.review, rid)  # what f goes by
            assert evidence is not None and evidence.path == earlier.path
            await goto(pilot, "relations", f"r:{rid}")
            await pilot.press("enter")
            await until(pilot, lambda: isinstance(app.screen, DetailScreen), "the relation's view")
            body = app.screen.query_one("#detail-body Static").render().plain
            assert str(evidence.path) in body
            assert decision_row(evidence.decision.row) in body
            await pilot.press("escape")
            await pilot.pause()


# --- toasts and the output columns ---------------------------------------------------------


@pytest.mark.parametrize("size", [(160, 48), (80, 24)])
async def test_toasts_are_one_line_few_and_short_lived(demo_repo, size):
    app = ReviewApp(repo=str(demo_repo), today=TODAY, autorun=False)
    async with app.run_test(size=size, notifications=True) as pilot:
        await settle(pilot)
        await pilot.press("4")  # the quarantine keys: two rows of them at 80x24
        for n in range(6):
            app.notify(f"message {n}\n" + "a long second line " * 12, title=f"title {n}",
                       severity="error" if n % 2 else "information", timeout=30, markup=False)
        await until(pilot, lambda: any("message 5" in row for row in screen_rows(app)), "the newest toast shown")
        toasts = list(app.screen.query(Toast))
        assert 1 <= len(toasts) < 6
        assert all(t.region.height == 1 for t in toasts)
        assert all(n.timeout < 30 for n in app._notifications)
        for selector in ("#filter-row", "#status", "#keys"):  # issue 36: never over the status lines
            region = app.query_one(selector).region
            assert all(not t.region.overlaps(region) for t in toasts), selector


async def test_the_two_output_columns_scroll_together_at_80x24(demo_repo):
    app = ReviewApp(repo=str(demo_repo), today=TODAY)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        missed = next(rid for rid in app.review.touched_relations()
                      if app.review.results[rid].first is not None and app.review.results[rid].first.differing)
        await goto(pilot, "relations", f"r:{missed}")
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, DetailScreen), "the relation's view")
        left, right = app.screen.query_one("#detail-left"), app.screen.query_one("#detail-right")
        assert left.max_scroll_y > 0 and right.max_scroll_y > 0
        left.focus()
        await pilot.press("pagedown", "down", "down")
        await until(pilot, lambda: left.scroll_y > 0, "the left column scrolled")
        await until(pilot, lambda: right.scroll_y == left.scroll_y, "the right column followed")
        right.focus()
        await pilot.press("up")
        await until(pilot, lambda: left.scroll_y == right.scroll_y, "the left column followed")
        await pilot.press("home")
        await until(pilot, lambda: left.scroll_y == right.scroll_y == 0, "both columns at the top")
        def aligned(shows_a_key: bool) -> bool:  # wrapped values never push a key off its counterpart's row
            keys = [[re.match(r"[│ ]*(≠ [^:]+:)?", row).group(1) for row in rows_of(app, column)]
                    for column in (left, right)]
            return keys[0] == keys[1] and (any(keys[0]) or not shows_a_key)
        for step in range(3):  # the screen is read once it has painted the scroll (a loaded machine lags)
            # the top rows list a disagreeing key; a shrunk miss lists one or two, so rows further
            # down may show none (issue 37: the smallest input's outputs come first)
            await until(pilot, lambda: aligned(step == 0), "each disagreeing key on the same row in both columns")
            await pilot.press("down")
            await until(pilot, lambda: left.scroll_y == right.scroll_y > 0, "both columns down a row")


# --- the key bar's fitting, as a function ----------------------------------------------------

ids = st.sampled_from([*KEEP_ORDER, "some.new.binding"])
key_entries = st.lists(st.tuples(ids, st.text(alphabet="abcdé漢 ", min_size=1, max_size=8)),
                       max_size=25, unique_by=lambda pair: pair[0]).map(
    lambda pairs: [KeyEntry(bid[:2], words, bid) for bid, words in pairs])


@given(entries=key_entries, width=st.integers(min_value=42, max_value=200), max_rows=st.integers(1, 3))
@settings(max_examples=300, deadline=None)
def test_fit_keeps_help_and_quit_and_order_and_drops_the_least_used_first(entries, width, max_rows):
    rows = fit(entries, width, max_rows)
    shown = [entry for row in rows for entry in row]
    assert len(rows) <= max_rows
    assert all(1 + sum(e.width for e in row) + len(GAP) * (len(row) - 1) <= width for row in rows)
    assert [e for e in entries if e in shown] == shown  # a subsequence: order kept
    assert all(e in shown for e in entries if e.binding_id in ALWAYS)
    dropped = [e for e in entries if e not in shown]
    if dropped:  # only less used ones than any kept (help and quit aside)
        assert min(rank(e) for e in dropped) >= max(rank(e) for e in shown if e.binding_id not in ALWAYS) \
            if any(e.binding_id not in ALWAYS for e in shown) else True
    if len(wrap(entries, width)) <= max_rows:
        assert shown == entries  # nothing left out when everything fits


@pytest.mark.parametrize("width", [50, 48, 60])
async def test_every_tab_shows_whole_when_panes_are_tabs(demo_repo, width):
    """A new user saw 'ouched paths  2 Relations …' at 50x24: the tab bar scrolled its first tab
    off the left edge. Where the tab bar shows, each tab's label is on the screen whole,
    whichever pane is active."""
    app = ReviewApp(repo=str(demo_repo), today=TODAY, autorun=False)
    async with app.run_test(size=(width, 24)) as pilot:
        await settle(pilot)
        assert app.screen.has_class("-tabs")
        for key in ("4", "1", "3"):
            await pilot.press(key)
            await pilot.pause()
            bar = app.screen.query_one("#pane-tabs")
            row = screen_rows(app)[bar.region.y]
            labels = [str(tab.label) for tab in bar.query("Tab")]
            assert all(label in row for label in labels), (row, labels)


@pytest.mark.parametrize("size", [(30, 8), (80, 24)])
async def test_the_help_reads_at_any_width(demo_repo, size):
    """At 30x8 every description of the help read '…' (the key column took the width). Scrolled
    through, the help shows the first words of what each key does."""
    from relconsole.console.screens.help import HelpScreen
    app = ReviewApp(repo=str(demo_repo), today=TODAY, autorun=False)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen), "the help")
        scroll = app.screen.query_one("#dialog")
        seen = []
        for _ in range(400):
            seen += screen_rows(app)
            if scroll.scroll_y >= scroll.max_scroll_y:
                break
            scroll.scroll_to(y=scroll.scroll_y + max(1, scroll.size.height - 1), animate=False)
            await pilot.pause()
        shown = " ".join(" ".join(row.split()) for row in seen)
        words = {" ".join((b.tooltip or b.description or b.action).split()[:2]) for _, bs in app.screen.groups
                 for b in bs}
        missing = [w for w in words if w not in shown]
        assert not missing, missing


@pytest.mark.parametrize("size", [(160, 48), (100, 30), (80, 24), (30, 8)])
async def test_toasts_leave_the_decision_and_oracle_head_lines_readable(demo_repo, size):
    """Issue 36: a toast covered the oracle/head line. With two toasts up, every row of the
    status (the decision, the refs) shows on the composited screen as it does with none."""
    app = ReviewApp(repo=str(demo_repo), today=TODAY, autorun=False)
    async with app.run_test(size=size, notifications=True) as pilot:
        await settle(pilot)
        status = app.query_one("#status")
        before = rows_of(app, status)
        assert any("oracle" in row or "head" in row for row in before) or size == (30, 8)
        for n in range(2):
            app.notify(f"toast {n} " + "wide words " * 20, severity="warning", timeout=30)
        await until(pilot, lambda: len(app.screen.query(Toast)) == 2
                    and any("toast 1" in row for row in screen_rows(app)), "both toasts shown")
        assert rows_of(app, status) == before
        keys = app.query_one("#keys")
        assert not any("toast" in row for row in rows_of(app, keys))
