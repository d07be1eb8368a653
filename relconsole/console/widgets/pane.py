"""A pane: a keyboard-first list of two-line items (touched paths, relations, ...).

Built on OptionList, which renders only the visible lines, so big reviews stay fast.
Items are addressed by id; refilling keeps the highlighted id when it still exists.
"""

from __future__ import annotations

from rich.text import Text
from textual.binding import Binding
from textual.widgets import OptionList
from textual.widgets.option_list import Option


class Pane(OptionList):
    """One of the four panes. ``kind`` names it (touched, relations, leases, quarantine)."""

    BINDINGS = [
        Binding("j", "cursor_down", "Down", show=False),
        Binding("k", "cursor_up", "Up", show=False),
        Binding("g", "first", "First", show=False),
        Binding("G", "last", "Last", show=False),
    ]

    def __init__(self, kind: str, title: str, **kwargs):
        super().__init__(id=kind, **kwargs)
        self.kind = kind
        self.border_title = title

    def fill(self, items: list[tuple[str, Text, bool]], empty: str = "nothing here") -> None:
        """Replace the items: (option id, prompt, disabled). Keeps the highlighted id."""
        keep = self.highlighted_id
        for _oid, prompt, _disabled in items:
            prompt.no_wrap = True  # one item keeps its two lines; the detail strip has the rest
            prompt.overflow = "ellipsis"
        options = [Option(prompt, id=oid, disabled=disabled) for oid, prompt, disabled in items]
        if not options:
            options = [Option(Text(empty, style="dim italic"), id="__empty__", disabled=True)]
        self.set_options(options)
        ids = [o.id for o in options]
        if keep in ids and not options[ids.index(keep)].disabled:
            self.highlighted = ids.index(keep)
        else:
            first = next((i for i, o in enumerate(options) if not o.disabled), None)
            self.highlighted = first

    @property
    def highlighted_id(self) -> str | None:
        """Id of the item under the cursor, or None."""
        option = self.highlighted_option
        return option.id if option is not None else None
