"""The diff screen (``v`` on a touched path): a header, the file's diff as a list with a
cursor (one item a line, a ``Pane``, so only the rows on screen are rendered), and a footer
line that names everything about the line under the cursor: every relation that ran it and
which of them missed, or that none did, and the review flags there. The texts are built in
``diffs``, literally.
"""

from __future__ import annotations

from typing import NamedTuple

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Static

from relconsole.console.widgets.keybar import KeyBar
from relconsole.console.widgets.pane import Pane, PaneItem


class DiffView(NamedTuple):
    """What the diff screen shows: ``header`` Text on top; ``items`` one ``PaneItem`` per
    row (a hunk header disabled); ``about`` item id -> the footer's Text for that line;
    ``first`` the item id the cursor starts on (None: the first row)."""

    header: Text
    items: list[PaneItem]
    about: dict[str, Text]
    first: str | None = None


class DiffScreen(Screen):
    """A full-screen diff; ``escape``/``q`` goes back; ``j``/``k`` move the cursor line."""

    BINDINGS = [Binding("escape,q", "app.pop_screen", "Back", id="view.back",
                        tooltip="a detail view: back to the panes")]

    def __init__(self, view: DiffView):
        super().__init__()
        self.view = view

    def compose(self) -> ComposeResult:
        yield Static(self.view.header, id="diff-header")
        yield Pane("diff", "")
        yield Static(id="diff-line")
        yield KeyBar()

    def on_mount(self) -> None:
        lines = self.query_one(Pane)
        lines.fill(self.view.items, empty="no change git shows as text (a binary file, or a mode change)")
        if self.view.first is not None:
            lines.highlight_id(self.view.first)
        lines.focus()

    @on(Pane.Highlighted)
    def _line_moved(self, event: Pane.Highlighted) -> None:
        """The footer follows the cursor; the message stops here (the panes' is the app's)."""
        event.stop()
        about = self.view.about.get(event.item_id or "", Text(""))
        self.query_one("#diff-line", Static).update(about)

    @on(Pane.Selected)
    def _line_opened(self, event: Pane.Selected) -> None:
        event.stop()  # nothing opens from a diff line: its footer says everything
