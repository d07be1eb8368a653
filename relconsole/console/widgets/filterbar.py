"""The ``/`` filter bar: an Input that posts what the reviewer types and gives up on escape."""

from __future__ import annotations

from textual.binding import Binding
from textual.message import Message
from textual.widgets import Input


class FilterBar(Input):
    """Typing filters the pane named by ``target`` live (the app listens to ``Changed``);
    ``enter`` keeps the filter (``Submitted``), ``escape`` clears it (``Cancelled``)."""

    BINDINGS = [Binding("escape", "cancel", "Clear filter", show=True)]

    class Cancelled(Message):
        """The reviewer pressed escape in the filter bar."""

    class Left(Message):
        """Focus moved away from the bar (tab, a click elsewhere)."""

    def __init__(self, **kwargs):
        super().__init__(placeholder="filter: every word must match (enter keeps, esc clears)", **kwargs)
        self.target: str | None = None

    def action_cancel(self) -> None:
        self.post_message(self.Cancelled())

    def on_blur(self) -> None:
        if self.display:
            self.post_message(self.Left())
