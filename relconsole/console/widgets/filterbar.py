"""The ``/`` filter row: an Input showing the focused pane's filter.

``enter`` and ``escape`` in it are app priority bindings (``listing.PaneListing``), handled
when the key arrives: a key typed right after them (``enter 3``) was already queued for
this Input when the Input itself handled ``enter``, and was typed into the filter.
"""

from __future__ import annotations

from textual.message import Message
from textual.widgets import Input


class FilterBar(Input):
    """Typing filters the pane named by ``target`` (the app listens to ``Changed``); focus
    leaving it any other way posts ``Left`` (the app keeps what was typed)."""

    class Left(Message):
        """Focus moved away from the row (tab, a click elsewhere)."""

    def __init__(self, **kwargs):
        super().__init__(placeholder="/ filter: every word typed must match (enter keeps, esc clears)", **kwargs)
        self.target: str | None = None

    def on_blur(self) -> None:
        self.post_message(self.Left())
