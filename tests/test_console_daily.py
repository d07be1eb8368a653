"""The console for daily use (issue 7): filters, quick filters, tabs on narrow terminals,
the palette and help generated from the bindings, the theme, and a virtual pane that
holds 20,000 items without a widget each.

Expectations come from the engine's Review (which relations missed, which paths are
unowned, which leases expire), never from the words the console prints.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings, strategies as st
from rich.text import Text
from textual.app import App

from relconsole.console import filters
from relconsole.console.app import PANES, ReviewApp
from relconsole.console.commands import NOT_IN_PALETTE, palette_entries
from relconsole.console.keymap import key_names
from relconsole.console.screens.help import HelpScreen, help_groups
from relconsole.console.widgets.keybar import KeyBar
from relconsole.console.widgets.pane import Pane
from tests.conftest import TODAY
from tests.test_console import SIZE, prompts, settle, until

# --- filters as pure functions -------------------------------------------------------------

words = st.text(alphabet="abcXYZ é/._-", min_size=0, max_size=12)
item_lists = st.lists(st.tuples(words, st.booleans()), max_size=30).map(
    lambda rows: [(f"i:{n}", Text(text), disabled) for n, (text, disabled) in enumerate(rows)])


@given(items=item_lists, text=words, more=words)
@settings(max_examples=200, deadline=None)
def test_text_filter_keeps_order_and_only_narrows(items, text, more):
    shown = filters.apply(None, "touched", items, text)
    ids = [i[0] for i in items]
    shown_ids = [i[0] for i in shown]
    assert shown_ids == [i for i in ids if i in set(shown_ids)]  # a subsequence, order kept
    narrower = filters.apply(None, "touched", items, f"{text} {more}")
    assert {i[0] for i in narrower if not i[2]} <= {i[0] for i in shown if not i[2]}
    assert filters.apply(None, "touched", items, text.upper()) == filters.apply(None, "touched", items, text.lower())


@given(items=item_lists, text=words)
@settings(max_examples=100, deadline=None)
def test_every_shown_item_has_every_term_and_no_match_is_dropped(items, text):
    shown = {i[0] for i in filters.apply(None, "touched", items, text) if not i[2]}
    for oid, prompt, disabled in items:
        if disabled:
            continue
        has_all = all(t in prompt.plain.casefold() for t in text.casefold().split())
        assert (oid in shown) == has_all


def test_headers_stay_only_above_kept_items():
    items = [("g:a", Text("group a"), True), ("s:1", Text("row one"), False),
             ("g:b", Text("group b"), True), ("s:2", Text("row two"), False)]
    shown = [i[0] for i in filters.apply(None, "quarantine", items, "two")]
    assert shown == ["g:b", "s:2"]


# --- the console on the sample repository ---------------------------------------------------


def quick_expected(review, kind: str) -> set[str]:
    """What each quick filter must keep, straight from engine state."""
    if kind == "touched":
        return {f"t:{i}" for i, b in enumerate(review.bindings) if b in review.gaps()}
    if kind == "relations":
        return {f"r:{rid}" for rid, r in review.results.items() if r.outcome == "missed"} | \
            {f"e:{i}" for i in range(len(review.errors)) if review.errors[i].path not in {s.source for s in review.leases}}
    if kind == "leases":
        return {f"l:{s.source}" for s in review.leases if s.state in ("expiring", "expired")}
    return {f"c:{c.path}" for c in review.candidates if not c.valid} | \
        {f"s:{r.key}" for r in review.seed_rows if not r.valid}


async def test_quick_filters_follow_engine_state_and_escape_restores(demo_repo):
    app = ReviewApp(repo=str(demo_repo), today=TODAY)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        review = app.review
        for number, kind in enumerate(PANES, 1):
            everything = set(prompts(app, kind))
            await pilot.press(str(number), "x")
            await pilot.pause()
            shown = {oid for oid in prompts(app, kind) if not oid.startswith(("g:", "__"))}
            expected = quick_expected(review, kind)
            assert expected, f"the sample should have a problem item in {kind}"
            assert shown == expected
            pane = app.query_one(f"#{kind}", Pane)
            assert f"{len(expected)} of" in pane.border_title
            await pilot.press("escape")
            await pilot.pause()
            assert set(prompts(app, kind)) == everything


async def test_slash_filters_the_focused_pane_only(demo_repo):
    app = ReviewApp(repo=str(demo_repo), today=TODAY)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        leases_before = prompts(app, "leases")
        relation_ids = [r.id for r in app.review.relations]
        term = relation_ids[0].split(".")[0]  # a catalog prefix, e.g. "penguins"
        await pilot.press("2", "slash", *term)
        await until(pilot, lambda: all(term in t.casefold() for t in prompts(app, "relations").values()),
                    f"the relations pane filtered by {term!r}")
        shown = prompts(app, "relations")
        assert shown and all(term in text.casefold() for text in shown.values())
        assert set(shown) == {f"r:{rid}" for rid in relation_ids if term in rid} | \
            {oid for oid, text in shown.items() if not oid.startswith("r:")}
        assert prompts(app, "leases") == leases_before
        await pilot.press("enter")  # keeps the filter, back in the pane
        await pilot.pause()
        assert isinstance(app.focused, Pane) and app.focused.kind == "relations"
        assert set(prompts(app, "relations")) == set(shown)
        await pilot.press("slash", "escape")  # esc in the bar clears it
        await until(pilot, lambda: {f"r:{rid}" for rid in relation_ids} <= set(prompts(app, "relations")),
                    "every relation back after esc")
        assert len(prompts(app, "relations")) == len(relation_ids) + len(
            [o for o in prompts(app, "relations") if o.startswith("e:")])


async def test_a_filter_matching_nothing_says_so_and_keys_stay_safe(demo_repo):
    app = ReviewApp(repo=str(demo_repo), today=TODAY)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("4", "slash", *"[bold]no-such", "enter")
        await pilot.pause()
        pane = app.query_one("#quarantine", Pane)
        assert pane.highlighted_id is None
        assert "[bold]no-such" in pane.options[0].prompt.plain  # shown literally
        await pilot.press("a", "d", "space", "j", "enter")  # nothing to act on: no crash, no screen
        await pilot.pause()
        assert app.pending == {} and type(app.screen).__name__ != "ConfirmScreen"


# --- layout -------------------------------------------------------------------------------


def visible_panes(app) -> list[Pane]:
    return [p for p in app.query(Pane) if p.display and p.region.width > 0 and p.region.height > 0]


async def test_narrow_terminal_shows_one_pane_as_tabs_and_wide_shows_four(demo_repo):
    app = ReviewApp(repo=str(demo_repo), today=TODAY)
    async with app.run_test(size=(60, 24)) as pilot:  # two sample panes need 62 columns
        await settle(pilot)
        for number, kind in reversed(list(enumerate(PANES, 1))):
            await pilot.press(str(number))
            await pilot.pause()
            shown = visible_panes(app)
            assert [p.kind for p in shown] == [kind]
            assert app.focused is shown[0]
        await pilot.press("tab")
        await pilot.pause()
        assert [p.kind for p in visible_panes(app)] == [PANES[1]]
        await pilot.resize_terminal(160, 48)
        await pilot.pause()
        shown = visible_panes(app)
        assert [p.kind for p in shown] == list(PANES)
        assert len({p.region.y for p in shown}) == 1  # side by side
        assert [p.region.x for p in shown] == sorted(p.region.x for p in shown)


@pytest.mark.parametrize("size", [(40, 12), (30, 8), (80, 24), (200, 60)])
async def test_no_size_down_to_40x12_crashes(demo_repo, size):
    app = ReviewApp(repo=str(demo_repo), today=TODAY)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        for keys in (["4", "j", "enter"], ["escape", "question_mark"], ["escape", "2", "x", "slash", "a"],
                     ["escape", "3", "G", "enter"], ["escape", "1", "pagedown", "enter"]):
            await pilot.press(*keys)
            await pilot.pause()
        assert app.is_running and app.review is not None


# --- help, palette, footer, theme -----------------------------------------------------------


def test_palette_has_an_entry_for_every_action_key():
    entries = palette_entries(ReviewApp)
    actions = {action for _text, action in entries}
    for binding in ReviewApp.BINDINGS:
        if binding.id not in NOT_IN_PALETTE:
            assert binding.action in actions
    assert len(actions) == len(entries)  # no action listed twice


def test_help_lists_every_binding_once():
    groups = help_groups(ReviewApp.BINDINGS)
    listed = [b for _title, bindings in groups for b in bindings]
    for binding in list(ReviewApp.BINDINGS) + list(Pane.BINDINGS):
        assert sum(1 for b in listed if b is binding) == 1
        assert key_names(binding.key)


async def test_palette_action_of_another_pane_focuses_it_first(demo_repo):
    app = ReviewApp(repo=str(demo_repo), today=TODAY)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.focused.kind == "touched"
        app.run_from_palette("quick_filter('leases')")
        await pilot.pause()
        await pilot.pause()
        assert app.focused.kind == "leases" and "leases" in app.quick
        assert set(prompts(app, "leases")) == quick_expected(app.review, "leases")


async def test_footer_shows_the_keys_of_the_focused_pane(demo_repo):
    app = ReviewApp(repo=str(demo_repo), today=TODAY)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        seen, bar = {}, {}
        for number, kind in enumerate(PANES, 1):
            await pilot.press(str(number))
            await pilot.pause()
            await pilot.pause()
            seen[kind] = {key: b.binding.description for key, b in app.screen.active_bindings.items()}
            bar[kind] = str(app.query_one(KeyBar).content)
        assert "a" in seen["quarantine"] and all("a" not in seen[k] for k in PANES if k != "quarantine")
        assert "n" in seen["leases"] and "n" not in seen["relations"]
        labels = {seen[kind]["x"] for kind in PANES}
        assert labels == {q.label for q in filters.QUICK_FILTERS.values()}
        for kind in PANES:  # what the footer line shows follows the focused pane
            assert filters.QUICK_FILTERS[kind].label in bar[kind]
            assert ("a Accept" in bar[kind]) == (kind == "quarantine")
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)


async def test_theme_choice_is_remembered(demo_repo, tmp_path, monkeypatch):
    monkeypatch.setenv("RELCONSOLE_CONFIG_DIR", str(tmp_path / "config"))
    app = ReviewApp(repo=str(demo_repo), today=TODAY, autorun=False)
    other = None
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        other = next(name for name in app.available_themes if name != app.theme)
        app.theme = other
        await pilot.pause()
    saved = json.loads((tmp_path / "config" / "console.json").read_text())
    assert saved["theme"] == other
    again = ReviewApp(repo=str(demo_repo), today=TODAY, autorun=False)
    async with again.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert again.theme == other


# --- the virtual pane -----------------------------------------------------------------------


class OnePane(App):
    def __init__(self):
        super().__init__()
        self.selected: list[str] = []

    def compose(self):
        yield Pane("touched", "paths")

    def on_pane_selected(self, event: Pane.Selected) -> None:
        self.selected.append(event.item_id)


def many(n: int, extra_line_every: int = 7) -> list:
    return [(f"t:{i}", Text(f"path {i}" + ("\nsecond\nthird" if i % extra_line_every == 0 else "\nsecond")), False)
            for i in range(n)]


async def test_a_pane_of_20000_items_builds_no_widget_per_item_and_moves_by_keys():
    app = OnePane()
    async with app.run_test(size=(60, 20)) as pilot:
        pane = app.query_one(Pane)
        pane.focus()
        items = many(20_000)
        widgets_before = len(list(app.query("*")))
        pane.fill(items)
        await pilot.pause()
        assert len(list(app.query("*"))) == widgets_before
        assert pane.virtual_size.height == sum(t.plain.count("\n") + 1 for _i, t, _d in items)
        await pilot.press("end")
        assert pane.highlighted_id == items[-1][0]
        assert pane.scroll_offset.y + pane.scrollable_content_region.height >= pane.virtual_size.height - 1
        await pilot.press("home", "pagedown")
        assert 0 < pane.highlighted < 20
        for _ in range(5):
            await pilot.press("j")
        kept = pane.highlighted_id
        pane.fill(list(reversed(items)))  # refilling keeps the highlighted id
        assert pane.highlighted_id == kept


async def test_cursor_skips_headers_and_clicks_select():
    app = OnePane()
    selected = app.selected
    async with app.run_test(size=(60, 20)) as pilot:
        pane = app.query_one(Pane)
        pane.focus()
        pane.fill([("g:1", Text("header"), True), ("a", Text("one\nx"), False), ("g:2", Text("header"), True),
                   ("b", Text("two\nx"), False)])
        assert pane.highlighted_id == "a"
        await pilot.press("j")
        assert pane.highlighted_id == "b"
        await pilot.press("k", "k")
        assert pane.highlighted_id == "a"
        await pilot.press("enter")
        await pilot.pause()
        assert selected == ["a"]
        await pilot.click(Pane, offset=(3, 4))  # row 4: "two" (header, a×2, header, b)
        await pilot.pause()
        assert pane.highlighted_id == "b" and selected[-1] == "b"


def test_a_saved_theme_applies_only_with_preferences(tmp_path, monkeypatch):
    monkeypatch.setenv("RELCONSOLE_CONFIG_DIR", str(tmp_path))
    default = ReviewApp().theme
    other = next(name for name in ReviewApp().available_themes if name != default)
    (tmp_path / "console.json").write_text(json.dumps({"theme": other}))
    assert ReviewApp().theme == other
    assert ReviewApp(preferences=False).theme == default  # screenshots look the same for everyone
    (tmp_path / "console.json").write_text("{not json")
    assert ReviewApp().theme == default
