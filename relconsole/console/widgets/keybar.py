"""The footer of the review screen: the keys that work where the focus is.

Textual's Footer recomposes a widget per key on every focus change (three times per
change, 0.15–0.7 s with the console's bindings on a loaded review); this bar renders
the same active bindings as Text, and only when they (or its width) changed.

A narrow terminal (issue 18) wraps the keys onto a second row when the screen has
``TWO_ROWS_MIN_HEIGHT`` rows, and leaves out the least used keys (``KEEP_ORDER``, last
first) until the rest fit; help and quit are never left out, and no key is cut.
"""

from __future__ import annotations

from typing import NamedTuple

from rich.cells import cell_len
from rich.text import Text
from textual.widgets import Static

PALETTE = "palette"  # the pseudo-entry for Textual's command palette (^p)
ALWAYS = ("help", "quit")  # binding ids never left out: from help every other key can be found
# Binding ids from the most to the least used; the bar leaves out the last ones first. Ids
# not listed (a new binding) go just before the palette.
KEEP_ORDER = (*ALWAYS, "accept", "delete", "confirm", "commit", "freeze", "renew", "rehash", "replay",
              "mark", "filter", "filter.keep", "filter.clear", "view.back", "quick.touched", "quick.relations",
              "quick.leases", "quick.quarantine", "merge_checklist", "run", "acknowledge", PALETTE)
TWO_ROWS_MIN_HEIGHT = 20  # a shorter screen keeps one row of keys (the panes need the rows)
GAP = "  "


class KeyEntry(NamedTuple):
    """One key shown: its display (``?``, ``^p``), what it does, and its binding id."""

    display: str
    description: str
    binding_id: str

    @property
    def width(self) -> int:
        return cell_len(f"{self.display} {self.description}")


def rank(entry: KeyEntry) -> float:
    """Where ``entry`` stands in KEEP_ORDER (unknown ids just before the palette)."""
    if entry.binding_id in KEEP_ORDER:
        return KEEP_ORDER.index(entry.binding_id)
    return KEEP_ORDER.index(PALETTE) - 0.5


def wrap(entries: list[KeyEntry], width: int) -> list[list[KeyEntry]]:
    """Greedy rows of ``entries`` in order, each row at most ``width`` cells (a leading space,
    GAP between entries); an entry wider than a row gets a row of its own."""
    rows: list[list[KeyEntry]] = [[]]
    used = 1
    for entry in entries:
        extra = entry.width + (len(GAP) if rows[-1] else 0)
        if rows[-1] and used + extra > width:
            rows.append([])
            used, extra = 1, entry.width
        rows[-1].append(entry)
        used += extra
    return rows if rows[0] else []


def fit(entries: list[KeyEntry], width: int, max_rows: int) -> list[list[KeyEntry]]:
    """The rows the bar shows: all of ``entries`` when they fit in ``max_rows`` rows of
    ``width`` cells, else without the least used ones (KEEP_ORDER), never without ALWAYS.
    Order is kept. Raises nothing; a width of 0 (not laid out yet) keeps everything."""
    kept = list(entries)
    if width <= 0:
        return wrap(kept, 10**6)
    while True:
        rows = wrap(kept, width)
        droppable = [e for e in kept if e.binding_id not in ALWAYS]
        if len(rows) <= max_rows or not droppable:
            return rows[:max(max_rows, 1)] if droppable else rows
        kept.remove(max(droppable, key=rank))


class KeyBar(Static):
    """Shows the screen's enabled ``show=True`` bindings, help and the palette key first."""

    COMPONENT_CLASSES = {"keybar--key"}
    DEFAULT_CSS = """
    KeyBar {
        height: 1;
        background: $footer-background;
        color: $footer-foreground;
        text-wrap: nowrap;
        text-overflow: ellipsis;
        & > .keybar--key {
            color: $footer-key-foreground;
            text-style: bold;
        }
    }
    """

    def __init__(self, **kwargs):
        super().__init__("", **kwargs)
        self._shown: tuple = ()
        self._rows = 1

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self._bindings_changed)
        self._render_keys()

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def on_resize(self) -> None:
        self._render_keys()

    def _bindings_changed(self, _screen) -> None:
        # At once, so the keys change in the same frame as the focus; repeats are cheap
        # (the line is rebuilt only when the keys differ).
        self._render_keys()

    def entries(self) -> list[KeyEntry]:
        """The keys in force where the focus is, help and the palette first (one entry for
        keys sharing an action and description, as ``?`` and ``f1``)."""
        keys, seen = [], set()
        for active in self.screen.active_bindings.values():
            binding = active.binding
            if binding.show and active.enabled and (binding.action, binding.description) not in seen:
                seen.add((binding.action, binding.description))
                keys.append(KeyEntry(self.app.get_key_display(binding), binding.description,
                                     binding.id or binding.action))
        first = [k for k in keys if k.binding_id == "help"]
        return first + [KeyEntry("^p", "palette", PALETTE)] + [k for k in keys if k not in first]

    def _render_keys(self) -> None:
        max_rows = 2 if self.app.size.height >= TWO_ROWS_MIN_HEIGHT else 1
        rows = fit(self.entries(), self.size.width, max_rows)
        shown = (tuple(tuple(row) for row in rows), self.size.width)
        if shown == self._shown:
            return
        self._shown = shown
        height = max(1, len(rows))
        if height != self._rows:  # a relayout only when the bar gains or loses a row
            self._rows = height
            self.styles.height = height
            self.screen.set_class(height > 1, "-two-key-rows")  # toasts sit above the bar (app.tcss)
        self.update(self._text(rows), layout=False)

    def _text(self, rows: list[list[KeyEntry]]) -> Text:
        key_style = self.get_component_rich_style("keybar--key", partial=True)
        lines = []
        for row in rows:
            text = Text(" ")
            for n, entry in enumerate(row):
                if n:
                    text.append(GAP)
                text.append(entry.display, key_style)
                text.append(f" {entry.description}")
            lines.append(text)
        return Text("\n").join(lines) if lines else Text(" ")
