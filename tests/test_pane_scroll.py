"""The pane's own scroll thumb (no Textual scrollbar widget): where it is drawn, that it
follows the cursor, that clicking its column jumps, and that it never covers an item."""

from __future__ import annotations

import pytest
from textual import events
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


# --- the top row is an item's first line (issue 36) ---------------------------------------------


def uneven(n: int) -> list:
    """Items of 1 to 4 lines whose later lines never look like a first line."""
    return [(f"t:{i}", Text("\n".join([f"item {i}"] + [f"  more of {i}"] * (i % 4))), False) for i in range(n)]


def top_row_is_a_first_line(pane: Pane) -> bool:
    return pane.render_line(0).text.startswith("item ")


def cursor_item_shown(pane: Pane) -> bool:
    """Every line of the highlighted item is on a visible row."""
    rows = [pane.render_line(y).text for y in range(pane.scrollable_content_region.height)]
    first = pane.highlighted_option.prompt.plain.split("\n")
    start = next((y for y, row in enumerate(rows) if row.startswith(first[0] + " ")), None)
    return start is not None and start + len(first) <= len(rows)


async def test_moving_the_cursor_down_and_up_never_leaves_half_an_item_at_the_top():
    app = OnePane()
    async with app.run_test(size=(40, 9)) as pilot:
        pane = await focused_with(pilot, uneven(30))
        for key in ["j"] * 29 + ["k"] * 29:
            await pilot.press(key)
            assert top_row_is_a_first_line(pane), (key, pane.highlighted, pane.render_line(0).text)
            assert cursor_item_shown(pane), (key, pane.highlighted)


@pytest.mark.parametrize("keys", [("end",), ("pagedown", "pagedown"), ("end", "pageup"), ("end", "home")])
async def test_paging_and_jumping_stop_on_an_item(keys):
    app = OnePane()
    async with app.run_test(size=(40, 9)) as pilot:
        pane = await focused_with(pilot, uneven(30))
        await pilot.press(*keys)
        assert top_row_is_a_first_line(pane) and cursor_item_shown(pane)


async def test_the_mouse_wheel_scrolls_item_by_item_to_the_last_one():
    app = OnePane()
    async with app.run_test(size=(40, 9)) as pilot:
        items = uneven(30)
        pane = await focused_with(pilot, items)
        tops = []
        for _ in range(60):
            before = pane.scroll_y
            pane.post_message(events.MouseScrollDown(pane, 2, 2, 0, 1, 0, False, False, False, screen_x=2, screen_y=2))
            await pilot.pause()
            assert top_row_is_a_first_line(pane), pane.render_line(0).text
            tops.append(pane.render_line(0).text.split()[1])
            if pane.scroll_y == before:
                break
        assert f"item {len(items) - 1}" in [pane.render_line(y).text.strip() for y in range(9)]
        assert [int(t) for t in tops] == sorted(int(t) for t in tops)  # down only
        for _ in range(60):
            pane.post_message(events.MouseScrollUp(pane, 2, 2, 0, -1, 0, False, False, False, screen_x=2, screen_y=2))
            await pilot.pause()
            assert top_row_is_a_first_line(pane), pane.render_line(0).text
        assert pane.scroll_y == 0
