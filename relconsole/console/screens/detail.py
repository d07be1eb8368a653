"""The detail screen: a header, optionally two columns scrolled together (a missed
relation's two canonical outputs, ``outline.output_columns``), and a scrolling body. The
texts are built elsewhere (``relationtext``, ``itemtext``, ``reports``), literally.
"""

from __future__ import annotations

from typing import NamedTuple

from rich.console import RenderableType
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Static

from relconsole.console.listing import SHORT_BELOW_HEIGHT
from relconsole.console.widgets.keybar import KeyBar


def aligned_rows(left: list[Text], right: list[Text], widths: list[int], console) -> tuple[list[Text], list[Text]]:
    """The two columns' lines, each pair padded with blank lines to the same wrapped height
    (at ``widths``, cells), so that line ``n`` starts on the same row on both sides and the
    columns, scrolled together, keep a key beside its counterpart (issue 18)."""
    out: tuple[list[Text], list[Text]] = ([], [])
    for n in range(max(len(left), len(right))):
        pair = [column[n] if n < len(column) else Text("") for column in (left, right)]
        heights = [len(line.wrap(console, width)) for line, width in zip(pair, widths)]
        for column, line, height in zip(out, pair, heights):
            column.append(line if height == max(heights) else Text.assemble(line, "\n" * (max(heights) - height)))
    return out


class DetailView(NamedTuple):
    """What a detail view shows: ``header`` Text on top; an optional ``lead`` (title,
    renderable) band under it (a shrunk miss's smallest input, scrolling when tall);
    ``left``/``right`` optional (title, lines) columns side by side (a missed relation's two
    canonical outputs); an optional scrolling ``body``; ``source``: the (pane kind, item id) it was built from, for a
    view that follows its item (``DetailScreen.show``)."""

    header: Text
    left: tuple[str, list[Text]] | None = None
    right: tuple[str, list[Text]] | None = None
    body: Text | None = None
    source: tuple[str, str] | None = None  # (pane kind, item id) it shows, so that it can be rebuilt
    lead: tuple[str, RenderableType] | None = None  # (title, what) above the columns: a miss's smallest input


class DetailScreen(Screen):
    """A full-screen detail view of a ``DetailView``; ``escape``/``q`` goes back."""

    BINDINGS = [Binding("escape,q", "app.pop_screen", "Back", id="view.back",
                        tooltip="a detail view: back to the panes")]

    class Updated(Message):
        """The screen shows a rebuilt view (``show``): what a test waits for."""

        def __init__(self, screen: "DetailScreen"):
            super().__init__()
            self.screen = screen

    def __init__(self, view: DetailView):
        super().__init__()
        self.view = view
        self._following = False

    async def show(self, view: DetailView) -> None:
        """Show ``view`` in place of the current one (its item changed: a replay or run
        ended), the body and columns kept at the row they were scrolled to; then post
        ``Updated``."""
        kept = {node.id: node.scroll_y for node in self.query(VerticalScroll)}
        self.view = view
        self._aligned_for = None
        await self.recompose()
        for node in self.query(VerticalScroll):
            if node.id in kept:
                node.scroll_to(y=kept[node.id], animate=False, immediate=True)
        self._wire_columns()
        self.post_message(self.Updated(self))

    def on_mount(self) -> None:
        self._fit_height()
        self._wire_columns()

    def _fit_height(self) -> None:
        """A short terminal (as the main screen's, ``listing.SHORT_BELOW_HEIGHT``) gives the
        header and the smallest input less room and the columns twice the body's."""
        self.set_class(self.size.height < SHORT_BELOW_HEIGHT, "-short")

    def _wire_columns(self) -> None:
        """The two output columns scroll together (issue 18): the same key sits on the same
        row on both sides, so scrolling one moves the other to the same offset."""
        if self.view.left and self.view.right:
            left, right = self.query_one("#detail-left"), self.query_one("#detail-right")
            self.watch(left, "scroll_y", lambda y: self._follow(right, y), init=False)
            self.watch(right, "scroll_y", lambda y: self._follow(left, y), init=False)
            self.call_after_refresh(self._align_columns)

    def on_resize(self) -> None:
        self._fit_height()
        if self.view.left and self.view.right:
            self.call_after_refresh(self._align_columns)

    def _align_columns(self) -> None:
        """Line ``n`` of each column starts on the same row, at the columns' widths now."""
        statics = [self.query_one(f"#{column} Static", Static) for column in ("detail-left", "detail-right")]
        widths = [static.content_region.width for static in statics]
        if min(widths) <= 0 or getattr(self, "_aligned_for", None) == widths:
            return
        self._aligned_for = widths
        padded = aligned_rows(self.view.left[1], self.view.right[1], widths, self.app.console)
        for static, lines in zip(statics, padded):
            static.update(Text("\n").join(lines) if lines else Text("(empty)"))

    def _follow(self, other, y: float) -> None:
        if self._following or other.scroll_y == y:
            return
        self._following = True  # the other column's own watcher must not move this one back
        try:
            other.scroll_to(y=y, animate=False, immediate=True)
        finally:
            self._following = False

    def compose(self) -> ComposeResult:
        view = self.view
        yield Static(view.header, id="detail-header")
        if view.lead is not None:
            lead = VerticalScroll(Static(view.lead[1]), id="detail-lead")
            lead.border_title = view.lead[0]
            yield lead
        if view.left and view.right:
            with Horizontal(id="detail-columns"):
                for column_id, (title, lines) in (("detail-left", view.left), ("detail-right", view.right)):
                    scroll = VerticalScroll(Static(Text("\n").join(lines) if lines else Text("(empty)")),
                                            id=column_id)
                    scroll.border_title = title
                    yield scroll
        if view.body is not None:
            yield VerticalScroll(Static(view.body), id="detail-body")
        yield KeyBar()
