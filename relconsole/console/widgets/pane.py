"""A pane: a keyboard-first, virtual list of multi-line items (touched paths, relations, ...).

A Line API widget (``ScrollView``): it keeps the items as data and renders only the
lines on screen, so a review with 20,000 touched paths costs one list and the visible
rows, never 20,000 widgets or a render of every item to measure it. Items are addressed
by id; refilling keeps the highlighted id when it still exists.

A pane with rows to spare wraps its items' long lines (``itemwrap``, at most
``WRAP_ROWS`` rows a line) instead of cutting them, when every wrapped item still fits;
it is only then that items are measured by their text, so it costs a screenful at most.
Scrolling stops on item boundaries only: the top row of a pane is always an item's first
line (issue 36), the end of the list included (the last screen is padded with blank rows).

The widget only renders and posts messages (``Pane.Highlighted``, ``Pane.Selected``,
``Pane.QuickFilter``); the app decides what they mean.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from typing import NamedTuple

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.geometry import Region, Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from relconsole.console.itemwrap import wrap_item

RENDER_CACHE_ITEMS = 2048  # rendered items kept (per width and style); a screen shows a few dozen
WRAP_ROWS = (3, 2)  # rows a wrapped line may take, tried in turn until the items fit (issue 36)


class PaneItem(NamedTuple):
    """One item: ``id`` (e.g. ``t:12``), ``prompt`` (Rich Text, one or more lines, shown
    literally), ``disabled`` (a header: shown, never highlighted)."""

    id: str
    prompt: Text
    disabled: bool = False


class Pane(ScrollView, can_focus=True):
    """One of the four panes. ``kind`` names it (touched, relations, leases, quarantine).

    ``fill(items)`` replaces the items in O(n) without rendering them; ``render_line``
    renders an item's line when it scrolls into view (cached per width and cursor state).
    """

    BINDINGS = [
        Binding("down,j", "cursor_down", "Down", show=False, id="cursor.down", tooltip="next item"),
        Binding("up,k", "cursor_up", "Up", show=False, id="cursor.up", tooltip="previous item"),
        Binding("home,g", "first", "First", show=False, id="cursor.first", tooltip="first item"),
        Binding("end,G", "last", "Last", show=False, id="cursor.last", tooltip="last item"),
        Binding("pagedown", "page_down", "Page down", show=False, id="cursor.page_down", tooltip="one screen down"),
        Binding("pageup", "page_up", "Page up", show=False, id="cursor.page_up", tooltip="one screen up"),
        Binding("enter", "select", "Open", show=False, id="item.open",
                tooltip="open the item: a touched path narrows the relations to its owners "
                        "(again: all); a relation, lease or candidate opens its full view"),
    ]
    COMPONENT_CLASSES = {"pane--cursor", "pane--disabled", "pane--thumb"}
    # No Textual scrollbar: the pane draws its own one-column thumb (``_bar_line``). Textual
    # re-renders all four scrollbars on every frame that crosses the panes and restyles them
    # on every focus change, which relaid the whole screen out on each ``tab``.
    DEFAULT_CSS = """
    Pane {
        overflow-x: hidden;
        overflow-y: auto;
        scrollbar-size-vertical: 0;
        & > .pane--thumb { color: $scrollbar; }
        &:focus > .pane--thumb { color: $scrollbar-active; }
        &:focus > .pane--cursor {
            color: $block-cursor-foreground;
            background: $block-cursor-background;
            text-style: $block-cursor-text-style;
        }
        & > .pane--cursor { background: $block-cursor-blurred-background; }
        & > .pane--disabled { color: $text-disabled; }
    }
    """

    class Highlighted(Message):
        """The cursor moved to ``item_id`` in ``pane``."""

        def __init__(self, pane: "Pane", item_id: str | None):
            super().__init__()
            self.pane, self.item_id = pane, item_id

    class Selected(Message):
        """``enter`` or a click on ``item_id`` in ``pane``."""

        def __init__(self, pane: "Pane", item_id: str):
            super().__init__()
            self.pane, self.item_id = pane, item_id

    def __init__(self, kind: str, title: str, **kwargs):
        super().__init__(id=kind, **kwargs)
        self.kind = kind
        self.title = title
        self.border_title = title
        self._items: list[PaneItem] = []
        self._starts: list[int] = [0]  # first line of item i; last entry = total lines
        self._cut_total = 0  # lines of all items, each line cut to the width (no wrapping)
        self._wrap = 1  # rows a line may take (``WRAP_ROWS``); 1: lines are cut
        self._index: dict[str, int] = {}
        self._highlighted: int | None = None
        self._lines: dict[tuple, Strip] = {}
        self._styles: dict | None = None

    @staticmethod
    def item(item) -> PaneItem:
        """A PaneItem from an (id, prompt, disabled) tuple (or a PaneItem)."""
        return item if isinstance(item, PaneItem) else PaneItem(*item)

    # --- data -------------------------------------------------------------------------

    def fill(self, items, empty: str = "nothing here") -> None:
        """Replace the items: (id, prompt Text, disabled) tuples or PaneItems. Keeps the
        highlighted id when it is still there, else the first enabled item. O(n), no render."""
        keep = self.highlighted_id
        fresh = [self.item(item) for item in items]
        if not fresh:
            fresh = [PaneItem("__empty__", Text(empty, style="dim italic"), True)]
        self._items = fresh
        self._index = {item.id: n for n, item in enumerate(fresh)}
        self._measure()
        target = self._index.get(keep) if keep is not None else None
        if target is None or fresh[target].disabled:
            target = self._next_enabled(-1, 1)
        self._highlighted = None
        self._move_to(target, announce=True)

    def replace_items(self, items: list[PaneItem]) -> int:
        """Swap shown items' prompts in place by id (relations that started or finished
        running); ids not shown are ignored. Re-measures once, and only when a height
        changed. Returns how many were swapped."""
        swapped: set[int] = set()
        resize = False
        for item in items:
            n = self._index.get(item.id)
            if n is None:
                continue
            old = self._items[n]
            self._items[n] = item
            resize = resize or self._wrap > 1 or old.prompt.plain.count("\n") != item.prompt.plain.count("\n")
            swapped.add(n)
        if resize:
            self._measure()
        elif swapped:
            for key in [key for key in self._lines if key[0] in swapped]:
                del self._lines[key]
            for n in swapped:
                self._refresh_item(n)
        return len(swapped)

    def _measure(self) -> None:
        """Count the items' lines (O(n), no render), then lay them out for the view."""
        self._cut_total = sum(item.prompt.plain.count("\n") + 1 for item in self._items)
        self._lay_out()

    def _lay_out(self) -> None:
        """Item starts for the current view: lines cut when the items fill the pane, else
        wrapped (``_wrap``) at the most rows a line that still fit; then the virtual size,
        padded so the last screen starts at an item (``_padded_height``)."""
        room, width = self.scrollable_content_region.height, self._text_width()
        self._wrap, heights = 1, None
        if 0 < self._cut_total < room and width > 0:
            for rows in WRAP_ROWS:
                heights = [len(wrap_item(item.prompt, width, rows)) for item in self._items]
                if sum(heights) <= room:
                    self._wrap = rows
                    break
        if self._wrap == 1:
            heights = (item.prompt.plain.count("\n") + 1 for item in self._items)
        starts = [0]
        for height in heights:
            starts.append(starts[-1] + height)
        self._starts = starts
        self._lines.clear()
        self.virtual_size = Size(self.scrollable_content_region.width, self._padded_height())
        self.refresh()

    def _text_width(self) -> int:
        """Cells an item's line may use: the content width less the thumb column."""
        return max(0, self.scrollable_content_region.width - 1)

    def _padded_height(self) -> int:
        """The virtual height: every item's lines, plus blank rows so that the last screen
        starts at an item's first line (the furthest scroll is an item's start)."""
        total, room = self._starts[-1], self.scrollable_content_region.height
        if total <= room or room <= 0:
            return total
        return self._starts[bisect_left(self._starts, total - room)] + room

    def _snap(self, value: float, current: float) -> float:
        """``value`` moved to an item's first line: the next one down when scrolling down,
        the one above when scrolling up, never past the furthest scroll."""
        starts = self._starts
        line = round(value)
        if line >= round(current):
            snapped = starts[min(bisect_left(starts, line), len(starts) - 1)]
        else:
            snapped = starts[max(0, bisect_right(starts, line) - 1)]
        return float(min(snapped, self.max_scroll_y))

    def validate_scroll_y(self, value: float) -> float:
        return self._snap(super().validate_scroll_y(value), self.scroll_y)

    def validate_scroll_target_y(self, value: float) -> float:
        return round(self._snap(super().validate_scroll_target_y(value), self.scroll_target_y))

    @property
    def options(self) -> list[PaneItem]:
        """The items shown, in order (tests and screenshots read ids and prompts)."""
        return list(self._items)

    def item_rows(self, index: int) -> range:
        """The virtual rows item ``index`` takes now (more than its lines when it wraps)."""
        return range(self._starts[index], self._starts[index + 1])

    @property
    def option_count(self) -> int:
        return len(self._items)

    @property
    def highlighted(self) -> int | None:
        """Index of the item under the cursor."""
        return self._highlighted

    @highlighted.setter
    def highlighted(self, index: int | None) -> None:
        self._move_to(index)

    @property
    def highlighted_option(self) -> PaneItem | None:
        n = self._highlighted
        return self._items[n] if n is not None and 0 <= n < len(self._items) else None

    @property
    def highlighted_id(self) -> str | None:
        """Id of the item under the cursor, or None."""
        item = self.highlighted_option
        return item.id if item is not None else None

    # --- cursor -----------------------------------------------------------------------

    def highlight_id(self, item_id: str) -> bool:
        """Put the cursor on the item ``item_id``; False (cursor unmoved) when it is not
        shown or cannot take the cursor."""
        n = self._index.get(item_id)
        if n is None or self._items[n].disabled:
            return False
        self._move_to(n)
        return True

    def _next_enabled(self, start: int, step: int) -> int | None:
        n = start + step
        while 0 <= n < len(self._items):
            if not self._items[n].disabled:
                return n
            n += step
        return None

    def _item_at(self, line: int) -> int:
        """Index of the item that virtual line ``line`` belongs to."""
        return bisect_right(self._starts, line) - 1

    def _enabled_near(self, n: int, direction: int) -> int | None:
        """Item ``n`` when it can take the cursor, else the nearest one ``direction``-wards,
        else the nearest one the other way."""
        if not self._items[n].disabled:
            return n
        ahead = self._next_enabled(n, direction)
        return ahead if ahead is not None else self._next_enabled(n, -direction)

    def _move_to(self, index: int | None, announce: bool = False, keep: bool = False) -> None:
        """Put the cursor on item ``index`` (None: no cursor; with ``keep``, None leaves it where it is)."""
        if index is None and keep:
            return
        if index is not None and not (0 <= index < len(self._items) and not self._items[index].disabled):
            return
        old, self._highlighted = self._highlighted, index
        if old != index or announce:
            self._refresh_item(old)
            self._refresh_item(index)
            self.scroll_to_cursor()
            self.post_message(self.Highlighted(self, self.highlighted_id))

    def _refresh_item(self, n: int | None) -> None:
        """Repaint only item ``n``'s rows (the cursor moved on or off it)."""
        if n is None or n >= len(self._items):
            return
        top = self._starts[n] - round(self.scroll_offset.y)
        self.refresh(Region(0, top, self.size.width, self._starts[n + 1] - self._starts[n]))

    def scroll_to_cursor(self) -> None:
        """Scroll so the highlighted item is fully visible (its top when it is taller than
        the view), the top row staying an item's first line; on the last item the cursor
        takes, the items after it (notes such as the Leases pane's last one) come too."""
        n = self._highlighted
        room = self.scrollable_content_region.height
        if n is None or not self.is_mounted or room <= 0:
            return
        top, bottom = self._starts[n], self._starts[n + 1]
        if self._next_enabled(n, 1) is None:
            bottom = self._starts[-1]
        y = round(self.scroll_y)
        if top < y or bottom - top >= room:
            target = top
        elif bottom > y + room:
            target = self._starts[bisect_left(self._starts, bottom - room)]
        else:
            return
        self.scroll_to(y=target, animate=False, force=True, immediate=True)

    def action_cursor_down(self) -> None:
        start = -1 if self._highlighted is None else self._highlighted
        self._move_to(self._next_enabled(start, 1), keep=True)

    def action_cursor_up(self) -> None:
        start = len(self._items) if self._highlighted is None else self._highlighted
        self._move_to(self._next_enabled(start, -1), keep=True)

    def action_first(self) -> None:
        self._move_to(self._next_enabled(-1, 1), keep=True)

    def action_last(self) -> None:
        self._move_to(self._next_enabled(len(self._items), -1), keep=True)

    def _page(self, direction: int) -> None:
        if self._highlighted is None:
            return
        line = self._starts[self._highlighted] + direction * max(1, self.scrollable_content_region.height)
        line = min(max(line, 0), self._starts[-1] - 1)
        self._move_to(self._enabled_near(self._item_at(line), direction), keep=True)

    def action_page_down(self) -> None:
        self._page(1)

    def action_page_up(self) -> None:
        self._page(-1)

    def action_select(self) -> None:
        item = self.highlighted_option
        if item is not None and not item.disabled:
            self.post_message(self.Selected(self, item.id))

    @property
    def allow_vertical_scroll(self) -> bool:
        """The mouse wheel scrolls whenever the items do not fit (there is no scrollbar widget)."""
        return not self._check_disabled() and self._starts[-1] > self.scrollable_content_region.height

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None:
            return
        if offset.x == self.scrollable_content_region.width - 1 and self.allow_vertical_scroll:
            self._jump_to_fraction(offset.y)  # the thumb column, when there is a thumb
            return
        line = round(self.scroll_offset.y) + offset.y
        if 0 <= line < self._starts[-1]:
            n = self._item_at(line)
            if not self._items[n].disabled:
                self._move_to(n)
                self.action_select()

    def _jump_to_fraction(self, row: int) -> None:
        """A click on the thumb column at ``row``: the cursor goes that far down the list."""
        last_row = max(1, self.scrollable_content_region.height - 1)
        line = min(self._starts[-1] - 1, max(0, row) * (self._starts[-1] - 1) // last_row)  # last row: last line
        self._move_to(self._enabled_near(self._item_at(line), 1), keep=True)

    def on_focus(self) -> None:
        self._refresh_item(self._highlighted)

    def on_blur(self) -> None:
        self._refresh_item(self._highlighted)

    def notify_style_update(self) -> None:
        self._styles = None  # the theme or a pseudo-class may have changed the colours
        super().notify_style_update()

    def on_resize(self) -> None:
        self._lay_out()  # the width or the rows changed: wrap, or stop wrapping
        self.scroll_to_cursor()

    # --- rendering --------------------------------------------------------------------

    def render_line(self, y: int) -> Strip:
        """The line ``y`` rows below the top of the view: a slice of one item, then one
        column of the scroll thumb."""
        width = self._text_width()
        return Strip.join([self._item_line(y, width), self._bar_line(y)])

    def _bar_line(self, y: int) -> Strip:
        """Row ``y`` of the thumb column: ``▐`` where the visible part of the list is, blank
        elsewhere and when everything fits."""
        styles = self._line_styles()
        height, total = self.scrollable_content_region.height, self._starts[-1]
        if total <= height or height <= 0:
            return Strip.blank(1, styles["base"])
        size = max(1, height * height // total)
        top = round(self.scroll_offset.y * (height - size) / (total - height))
        if top <= y < top + size:
            return Strip([Segment("▐", styles["thumb"])], 1)
        return Strip.blank(1, styles["base"])

    def _line_styles(self) -> dict[str, Style]:
        styles = self._styles
        if styles is None:
            base = self.rich_style
            styles = self._styles = {name: base + self.get_component_rich_style(f"pane--{name}")
                                     for name in ("cursor", "disabled", "thumb")}
            styles["base"] = base
        return styles

    def _item_line(self, y: int, width: int) -> Strip:
        line = self.scroll_offset.y + y
        styles = self._line_styles()
        if not (0 <= line < self._starts[-1]):
            return Strip.blank(width, styles["base"])
        n = self._item_at(line)
        item = self._items[n]
        style = styles["disabled" if item.disabled else "cursor" if n == self._highlighted else "base"]
        key = (n, width, style)  # the style, not a flag: a theme or focus change misses the cache
        strips = self._lines.get(key)
        if strips is None:
            if len(self._lines) > RENDER_CACHE_ITEMS:
                self._lines.clear()
            strips = self._lines[key] = self._render_item(n, width, style)
        offset = line - self._starts[n]
        return strips[offset] if offset < len(strips) else Strip.blank(width, style)

    def _render_item(self, n: int, width: int, style: Style) -> list[Strip]:
        """Every row of item ``n`` (its lines, wrapped when the pane wraps), each cut to
        ``width`` with an ellipsis, on ``style``."""
        console = self.app.console
        options = console.options.update(width=width, no_wrap=True, overflow="ellipsis", highlight=False)
        if self._wrap == 1:
            lines = console.render_lines(self._items[n].prompt, options, style=style, pad=True, new_lines=False)
            return [Strip(line, width) for line in lines]
        strips = []
        for row in wrap_item(self._items[n].prompt, width, self._wrap):
            lines = console.render_lines(row, options, style=style, pad=True, new_lines=False)
            strips.extend(Strip(line, width) for line in lines)
        return strips
