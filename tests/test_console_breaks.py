"""What a fresh tester broke in the daily-use console (issue 7), kept broken-proof:
markup in paths and filters, palette entries, keys typed right after a pane switch,
the filter row losing focus, and the narrowing title."""

from __future__ import annotations

from relconsole.console.app import ReviewApp
from relconsole.console.commands import palette_entries
from relconsole.console.screens.help import HelpScreen
from relconsole.console.widgets.filterbar import FilterBar
from relconsole.console.widgets.pane import Pane
from bench.gitrepo import git
from tests.conftest import TODAY
from tests.test_console import SIZE, prompts, settle, until


async def test_markup_in_a_touched_path_and_a_filter_is_shown_literally(demo_repo):
    evil = "src/x[/].py"  # a directory "x[" holding "].py": the path reads as a closing tag
    (demo_repo / evil).parent.mkdir(parents=True, exist_ok=True)
    (demo_repo / evil).write_text("VALUE = 1\n")
    git(demo_repo, "add", evil)
    git(demo_repo, "commit", "-qm", "a path that is markup")
    app = ReviewApp(repo=str(demo_repo), today=TODAY, autorun=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        index = next(i for i, b in enumerate(app.review.bindings) if b.path == evil)
        pane = app.query_one("#touched", Pane)
        await pilot.press("1")
        pane.highlighted = index
        await pilot.press("enter")  # narrows the relations to the path's owners: the title names it
        await pilot.pause()
        relations = app.query_one("#relations", Pane)
        assert evil in relations.border_title.replace("\\[", "[")
        await pilot.press("2", "slash", *"[/]", "enter")
        await pilot.pause(0.2)
        assert app.is_running and "[/]" in relations.border_title.replace("\\[", "[")


async def test_every_palette_entry_acts(demo_repo):
    app = ReviewApp(repo=str(demo_repo), today=TODAY, autorun=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert ("help" in {action for _text, action in palette_entries(app)})
        app.run_from_palette("help")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        app.run_from_palette("focus_pane('relations')")
        await pilot.pause()
        assert app.focused.kind == "relations"
        app.run_from_palette("quick_filter('relations')")  # the same pane: it used to do nothing
        await pilot.pause()
        assert "relations" in app.quick
        titles = {command.title for command in app.get_system_commands(app.screen)}
        assert "Quit" not in titles and "Theme" in titles  # Textual's Quit skipped the pending question


async def test_keys_typed_right_after_a_pane_switch_act_on_the_new_pane(demo_repo):
    for size in (SIZE, (80, 24)):
        app = ReviewApp(repo=str(demo_repo), today=TODAY, autorun=False)
        async with app.run_test(size=size) as pilot:
            await settle(pilot)
            await pilot.press("2", "x", "3", "x")  # no pause between the switch and the key
            await pilot.pause()
            assert app.quick == {"relations", "leases"}
            await pilot.press("4", "slash")
            await pilot.pause()
            assert app.query_one("#filter", FilterBar).target == "quarantine"


async def test_tab_out_of_the_filter_bar_keeps_the_filter(demo_repo):
    app = ReviewApp(repo=str(demo_repo), today=TODAY, autorun=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        term = app.review.relations[0].id.split(".")[0]
        await pilot.press("2", "slash", *term, "tab")
        await pilot.pause(0.3)
        bar = app.query_one("#filter", FilterBar)
        assert app.focused is not bar and app.filters["relations"] == term
        assert all(term in text.casefold() for oid, text in prompts(app, "relations").items() if oid.startswith("r:"))


async def test_narrowing_title_leads_with_the_count_and_says_esc_once(demo_repo):
    app = ReviewApp(repo=str(demo_repo), today=TODAY, autorun=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        index = next(i for i, b in enumerate(app.review.bindings) if b.relations)
        path = app.review.bindings[index].path
        await pilot.press("1")
        app.query_one("#touched", Pane).highlighted = index
        await pilot.press("enter", "2", "x")
        await pilot.pause()
        title = app.query_one("#relations", Pane).border_title
        owners = {r for b in app.review.bindings if b.path == path for r in b.relations}
        assert title.index(" of ") < title.index("owners of")
        assert f" of {len(app.items['relations']):,}" in title  # of every relation, not of the narrowed few
        assert title.count("esc clears") == 1 and owners


async def test_the_filter_row_shows_the_focused_panes_filter(demo_repo):
    app = ReviewApp(repo=str(demo_repo), today=TODAY, autorun=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("2", "slash", *"held", "enter", "3")
        await pilot.pause(0.2)
        bar = app.query_one("#filter", FilterBar)
        assert (bar.target, bar.value) == ("leases", "")
        await pilot.press("2")
        await pilot.pause()
        assert (bar.target, bar.value) == ("relations", "held") == ("relations", app.filters["relations"])


async def test_keys_typed_right_after_enter_or_esc_in_the_filter_act_on_panes(demo_repo):
    app = ReviewApp(repo=str(demo_repo), today=TODAY, autorun=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("2", "slash", *"pen", "enter", "3")  # no pause: "3" must not be typed
        await pilot.pause(0.2)
        assert app.filters["relations"] == "pen" and app.focused.kind == "leases"
        await pilot.press("2", "slash", "escape", "4")
        await pilot.pause(0.2)
        assert app.filters["relations"] == "" and app.focused.kind == "quarantine"


async def test_keys_sent_in_the_same_instant_as_slash_are_typed_into_the_filter(demo_repo):
    """A fast typist or a terminal that sends "/src" at once: the letters were queued for the
    pane before "/" moved focus to the filter row, so they were lost as text and ran as the
    app's bindings ("r" started a run). They are the filter's now."""
    from textual import events
    app = ReviewApp(repo=str(demo_repo), today=TODAY, autorun=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("1")
        for key in ("slash", "s", "r", "c"):
            app.post_message(events.Key(key, "/" if key == "slash" else key))
        bar = app.query_one("#filter", FilterBar)
        await until(pilot, lambda: len(bar.value) >= 3 or app.running, "the three letters land somewhere", 10)
        await pilot.pause()
        assert app.focused is bar and bar.value == "src"
        assert not app.running and len(app.screen_stack) == 1, "no binding ran: no run, no dialog"
