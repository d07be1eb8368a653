"""The console's first screen: the four panes live here, and help, dialogs and detail
views are pushed over it."""

from __future__ import annotations

from textual.reactive import Reactive
from textual.screen import Screen
from textual.widget import Widget


class ReviewScreen(Screen):
    """Textual's Screen, except that a focus change does not repaint the whole screen.

    Textual declares ``Screen.focused`` as a repainting reactive, so every ``tab`` or
    ``1``-``4`` redrew all 160x48 cells (40 ms of the 70 ms a ``tab`` took on a 20,000-path
    review). The two widgets whose focus changed restyle and repaint themselves anyway
    (``:focus`` rules), which is all a focus change shows."""

    focused: Reactive[Widget | None] = Reactive(None, repaint=False)
