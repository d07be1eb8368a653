"""What a focus change paints: only what changed, and all of it at once (issue 7 item 1).

The main screen's focus changes must not repaint the whole screen (Textual's Screen does,
40 ms at 160x48 on a big review), and must leave no stale paint: the pane that lost the
focus looks like one that never had it, and the detail strip shows the new pane's item."""

from __future__ import annotations

from textual._compositor import Compositor
from textual.geometry import Region

from relconsole.console import views
from relconsole.console.app import PANES, ReviewApp
from relconsole.console.widgets.pane import Pane
from tests.conftest import TODAY
from tests.test_console import SIZE, settle


def top_border_styles(pane: Pane) -> set:
    """The styles on the pane's top border row (border and title), as painted."""
    strip = pane.render_lines(Region(0, 0, pane.outer_size.width, 1))[0]
    return {segment.style for segment in strip}


async def test_tab_repaints_the_panes_not_the_whole_screen(demo_repo, monkeypatch):
    full_updates = []
    original = Compositor.render_full_update

    def counting(self, *args, **kwargs):
        full_updates.append(self)
        return original(self, *args, **kwargs)

    app = ReviewApp(repo=str(demo_repo), today=TODAY, autorun=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        monkeypatch.setattr(Compositor, "render_full_update", counting)
        for _ in range(len(PANES)):
            before = app.focused
            await pilot.press("tab")
            await pilot.pause()
            assert app.focused is not before
        assert full_updates == []


async def test_after_a_focus_change_the_old_pane_looks_never_focused_and_the_strip_follows(demo_repo):
    app = ReviewApp(repo=str(demo_repo), today=TODAY, autorun=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        never = app.query_one("#leases", Pane)
        blurred_look = top_border_styles(never)
        for key, kind in (("2", "relations"), ("4", "quarantine"), ("1", "touched")):
            old = app.focused
            await pilot.press(key)
            await pilot.pause()
            pane = app.query_one(f"#{kind}", Pane)
            assert app.focused is pane
            assert top_border_styles(pane) != blurred_look, "the focused pane is marked"
            if old is not never:
                assert top_border_styles(old) == blurred_look, "no stale focus paint"
            strip = str(app.query_one("#detail").content)
            assert strip == views.detail_text(app.review, kind, pane.highlighted_id).plain


async def test_the_strip_shows_the_item_again_after_a_dialog_or_view_closes(demo_repo):
    app = ReviewApp(repo=str(demo_repo), today=TODAY, autorun=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        for opened in (("question_mark",), ("2", "enter"), ("3", "enter")):
            await pilot.press(*opened)
            await settle(pilot)
            assert app.screen is not app.screen_stack[0]
            await pilot.press("escape")
            await settle(pilot)
            pane = app.focused
            assert isinstance(pane, Pane)
            strip = str(app.query_one("#detail").content)
            assert strip and strip == views.detail_text(app.review, pane.kind, pane.highlighted_id).plain


async def test_a_view_opened_from_a_view_replaces_it(demo_repo):
    app = ReviewApp(repo=str(demo_repo), today=TODAY, autorun=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        depth = len(app.screen_stack)
        await pilot.press("2", "enter")
        await settle(pilot)
        for _ in range(3):
            await pilot.press("m")
            await settle(pilot)
        assert len(app.screen_stack) == depth + 1
        await pilot.press("escape")
        await settle(pilot)
        assert len(app.screen_stack) == depth and isinstance(app.focused, Pane)


async def test_moving_the_focus_before_the_filter_pause_keeps_what_was_typed(demo_repo):
    app = ReviewApp(repo=str(demo_repo), today=TODAY, autorun=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("1", "slash")
        app.query_one("#filter").value = "export"  # typed; the 80 ms pause has not passed
        app.action_next_pane()  # tab, at once
        assert app.filters["touched"] == "export"
        assert app.filters["relations"] == ""
        await pilot.pause()
        shown = [item.id for item in app.query_one("#touched", Pane).options]
        assert shown and all("export" in app.query_one("#touched", Pane).options[n].prompt.plain
                              for n in range(len(shown)))
