"""The pane's own scroll thumb (no Textual scrollbar widget): where it is drawn, that it
follows the cursor, that clicking its column jumps, and that it never covers an item."""

from __future__ import annotations

import pytest
from rich.text import Text

from relconsole.console.widgets.pane import Pane
from tests.test_console_daily import OnePane, many

THUMB = "▐"


def bar_column(pane: Pane) -> list[str]:
    """The last cell of every visible content row."""
    return [pane.render_line(y).text[-1:] for y in range(pane.scrollable_content_region.height)]


def thumb_rows(pane: Pane) -> list[int]:
    return [y for y, cell in enumerate(bar_column(pane)) if cell == THUMB]


async def focused_with(pilot, items) -> Pane:
    """The app's one pane, focused and filled with ``items``, after a refresh."""
    pane = pilot.app.query_one(Pane)
    pane.focus()
    pane.fill(items)
    await pilot.pause()
    return pane


@pytest.mark.parametrize("count", [1, 5])
async def test_no_thumb_when_everything_fits(count):
    app = OnePane()
    async with app.run_test(size=(60, 20)) as pilot:
        pane = await focused_with(pilot, many(count))
        assert pane.virtual_size.height <= pane.scrollable_content_region.height
        assert thumb_rows(pane) == [] and not pane.allow_vertical_scroll


@pytest.mark.parametrize("count", [40, 2_000, 20_000])
async def test_thumb_is_one_run_that_moves_down_with_the_cursor_from_top_to_bottom(count):
    app = OnePane()
    async with app.run_test(size=(60, 20)) as pilot:
        pane = await focused_with(pilot, many(count))
        height = pane.scrollable_content_region.height
        assert pane.allow_vertical_scroll  # the mouse wheel still scrolls without a scrollbar widget
        seen = []
        for keys in ((), ("pagedown",), ("pagedown", "pagedown"), ("end",)):
            await pilot.press(*keys)
            rows = thumb_rows(pane)
            assert rows and rows == list(range(rows[0], rows[-1] + 1)), "one contiguous run"
            seen.append(rows)
        assert seen[0][0] == 0 and seen[-1][-1] == height - 1
        tops = [rows[0] for rows in seen]
        assert tops == sorted(tops), "scrolling down never moves the thumb up"
        assert all(len(rows) == len(seen[0]) for rows in seen), "the thumb keeps its size"


async def test_more_items_never_make_a_bigger_thumb():
    app = OnePane()
    async with app.run_test(size=(60, 20)) as pilot:
        pane = app.query_one(Pane)
        sizes = []
        for count in (30, 300, 3_000, 10_000):
            pane.fill(many(count))
            await pilot.pause()
            sizes.append(len(thumb_rows(pane)))
        assert sizes == sorted(sizes, reverse=True) and sizes[-1] >= 1


async def test_clicking_the_thumb_column_jumps_in_proportion():
    app = OnePane()
    async with app.run_test(size=(60, 20)) as pilot:
        items = many(1_000)
        pane = await focused_with(pilot, items)
        column = pane.scrollable_content_region.width - 1
        height = pane.scrollable_content_region.height
        border = pane.styles.gutter.left  # click offsets count from the widget's outer edge
        await pilot.click(Pane, offset=(column + border, height - 1 + pane.styles.gutter.top))
        await pilot.pause()
        assert pane.highlighted == len(items) - 1, "the last row is the end of the list"
        assert thumb_rows(pane)[-1] == height - 1, "the thumb ends under the click"
        assert app.selected == [], "a click on the thumb column moves, it does not open"
        await pilot.click(Pane, offset=(column + border, pane.styles.gutter.top))
        await pilot.pause()
        assert pane.highlighted == 0


async def test_a_long_item_is_cut_before_the_thumb_column():
    app = OnePane()
    async with app.run_test(size=(40, 12)) as pilot:
        pane = await focused_with(pilot, [(f"t:{i}", Text("x" * 500), False) for i in range(100)])
        width = pane.scrollable_content_region.width
        for y in range(pane.scrollable_content_region.height):
            line = pane.render_line(y).text
            assert len(line) == width
            assert line[-1] in (THUMB, " ") and line[-2] == "…"


async def test_without_a_thumb_the_last_column_is_part_of_the_item():
    app = OnePane()
    async with app.run_test(size=(60, 20)) as pilot:
        pane = await focused_with(pilot, [("a", Text("one"), False), ("b", Text("two"), False)])
        column = pane.scrollable_content_region.width - 1 + pane.styles.gutter.left
        await pilot.click(Pane, offset=(column, 1 + pane.styles.gutter.top))
        await pilot.pause()
        assert app.selected == ["b"]
