"""What the four panes list, how they are filtered, and how they are laid out (issue 7).

A mixin for ReviewApp. Each pane keeps its unfiltered items (``items[kind]``, with an id
-> position index) so a filter, a quick filter or narrowing the relations to a path only
refilters them, and a finished relation swaps its own item: nothing rebuilds 20,000
prompts on a key press. The layout is chosen by what fits (issue 18): four panes side by
side when each gets ``pane_width_needed`` columns, two by two when two columns of them do
(and the terminal has ``GRID_MIN_HEIGHT`` rows), else one pane at a time under a tab bar.
Side by side, the columns beyond that go to the panes whose text is long (``panewidths``,
issue 36), measured when a pane's items are replaced, not on every filter or key.
"""

from __future__ import annotations

from rich.cells import cell_len
from rich.text import Text
from textual import events
from textual.widgets import Input, Tabs

from relconsole.console import filters
from relconsole.console.panewidths import share_width, wanted_width
from relconsole.console.widgets.filterbar import FilterBar
from relconsole.console.widgets.pane import Pane
from relconsole.engine.literal import literal

PANES = ("touched", "relations", "leases", "quarantine")
PANE_TITLES = {"touched": "1 Touched paths", "relations": "2 Relations", "leases": "3 Leases",
               "quarantine": "4 Quarantine"}
TAB_TITLES = {"touched": "1 Touched", "relations": "2 Relations", "leases": "3 Leases",
              "quarantine": "4 Quarantine"}  # a tab bar is for narrow terminals: 48 columns hold all four
EMPTY = {"touched": "no touched paths", "relations": "no relations", "leases": "no leases",
         "quarantine": "quarantine is empty"}
MIN_PANE_WIDTH = 30  # columns under which a pane is unreadable whatever its ids
PANE_CHROME = 3  # two border columns and the pane's thumb column
RELATION_MARKS = 4  # "✓ ❄ " before a relation id (result symbol, freeze mark)
CANDIDATE_MARKS = 2  # "☐ " before a candidate id
GRID_MIN_HEIGHT = 20  # two rows of panes need this many terminal rows (3 items each at 80x24)
SHORT_BELOW_HEIGHT = 30  # shorter ones hide the detail strip (enter still opens the full view)
TINY_BELOW_HEIGHT = 16  # and below this the header, the tab bar and the progress bar go too
LAYOUTS = ("-grid", "-tabs")  # screen classes; neither: four panes side by side
FILTER_PAUSE_SECONDS = 0.08  # typing in the filter bar refilters after this pause


def pane_width_needed(review) -> int:
    """Columns (borders included) a pane needs so that every relation id, in the Relations
    pane and as a quarantine candidate, shows uncut; at least MIN_PANE_WIDTH. ``review``
    None (still loading): MIN_PANE_WIDTH. One pass over the ids (issue 18)."""
    if review is None:
        return MIN_PANE_WIDTH
    longest = max([cell_len(r.id) + RELATION_MARKS for r in review.relations]
                  + [cell_len(c.id) + CANDIDATE_MARKS for c in review.candidates], default=0)
    return max(MIN_PANE_WIDTH, longest + PANE_CHROME)


def layout_class(width: int, height: int, need: int) -> str | None:
    """The screen class of the pane layout for a ``width`` x ``height`` terminal whose panes
    need ``need`` columns each: None (four side by side), ``-grid`` (two by two) or
    ``-tabs`` (one pane under a tab bar)."""
    if width >= 4 * need:
        return None
    if width >= 2 * need and height >= GRID_MIN_HEIGHT:
        return "-grid"
    return "-tabs"


class PaneListing:
    """Pane contents, filters and layout for the console (mixed into ReviewApp)."""

    def init_listing(self) -> None:
        """Set up the listing state (called from ReviewApp.__init__)."""
        self.filters: dict[str, str] = dict.fromkeys(PANES, "")
        self.quick: set[str] = set()
        self.narrow: str | None = None  # a touched path: Relations shows only its owners
        self.items: dict[str, list] = {kind: [] for kind in PANES}  # unfiltered, rebuilt when data changes
        self.positions: dict[str, dict[str, int]] = {kind: {} for kind in PANES}
        self.empty: dict[str, str] = dict(EMPTY)
        self.active = "touched"  # the pane shown when panes are tabs
        self.lines_of: dict[str, list[str]] = {kind: [] for kind in PANES}  # each item's lines, for widths
        self.pane_widths: dict[str, int | None] = {}  # columns set side by side (fit_pane_widths)
        self._filter_timer = None

    # --- contents -----------------------------------------------------------------------

    def show_items(self, kind: str, items: list | None = None, empty: str | None = None) -> None:
        """Fill pane ``kind`` with ``items`` (kept unfiltered) or, with none given, show the
        kept ones again through the pane's filters; the title says what is filtered."""
        if items is not None:
            self.items[kind] = list(items)
            self.positions[kind] = {item[0]: n for n, item in enumerate(self.items[kind])}
            self.empty[kind] = empty or EMPTY[kind]
            self.lines_of[kind] = [line for item in self.items[kind] for line in item[1].plain.split("\n")]
            self.call_after_refresh(self.fit_pane_widths)
        everything = self.items[kind]
        text, quick = self.filters[kind], kind in self.quick
        narrowed = self._narrowed(everything) if kind == "relations" and self.narrow is not None else everything
        shown = filters.apply(self.review, kind, narrowed, text, quick)
        filtered = shown is not everything
        owners = literal(self.narrow) if narrowed is not everything else None
        pane = self.pane(kind)
        if not filtered:
            empty = self.empty[kind]
        elif owners is not None and not narrowed:
            empty = f"no relation owns {owners} (esc shows all)"
        else:
            empty = filters.empty_text(kind, text, quick)
        pane.fill(shown, empty=empty)
        title = PANE_TITLES[kind]
        if filtered:
            title += filters.describe(kind, text, quick, filters.count(shown), filters.count(everything), owners)
        pane.border_title = Text(title)  # a Text is never read as markup: paths and filters are untrusted

    def update_items(self, kind: str, changed: list, refilter: bool = True) -> None:
        """Swap the kept items whose ids are in ``changed`` and repaint only them; a filtered
        pane is refiltered instead (an item may now match or not), or left for the caller
        to refilter later when ``refilter`` is false."""
        kept, where = self.items[kind], self.positions[kind]
        fresh = []
        for item in changed:
            n = where.get(item[0])
            if n is not None:
                kept[n] = item
                fresh.append(item)
        if not fresh:
            return
        if self.is_filtered(kind):
            if refilter:
                self.show_items(kind)
        else:
            self.pane(kind).replace_items([Pane.item(item) for item in fresh])

    def is_filtered(self, kind: str) -> bool:
        """True when pane ``kind`` shows fewer than all its items."""
        return bool(self.filters[kind].strip()) or kind in self.quick or (kind == "relations" and self.narrow is not None)

    def _narrowed(self, items: list) -> list:
        owners = {f"r:{rid}" for b in self.review.bindings if b.path == self.narrow for rid in b.relations}
        return [item for item in items if not item[0].startswith("r:") or item[0] in owners]

    def narrow_to(self, path: str | None) -> None:
        """Show only the relations owning ``path`` (None: all of them)."""
        self.narrow = path
        self.show_items("relations")

    # --- filters --------------------------------------------------------------------------

    def action_filter(self) -> None:
        """``/``: type to filter the focused pane; enter keeps the filter, esc clears it."""
        pane = self.focused_pane()
        kind = pane.kind if pane is not None else self.active
        bar = self.query_one("#filter", FilterBar)
        self.show_filter_of(kind)
        self.screen_stack[0].add_class("-filtering")  # a tiny terminal shows the row only now
        self.screen_stack[0].set_focus(bar, scroll_visible=False)  # now: the next key (esc, a letter) is the row's

    def on_key(self, event: events.Key) -> None:
        """A letter that reaches the app while the filter row has focus was read by the pane
        ``/`` was leaving (the pane reads "/src" sent at once before the app runs ``/``'s
        action): it is the filter's, typed there, never an app binding (``r`` ran the
        relations). Keys the row itself passes on (enter, esc, tab) keep their bindings."""
        bar = self.focused
        if isinstance(bar, FilterBar) and event.is_printable and event is not getattr(self, "_resent_key", None):
            event.stop()
            event.prevent_default()
            self._resent_key = events.Key(event.key, event.character)  # sent once: never a loop
            bar.post_message(self._resent_key)

    def show_filter_of(self, kind: str) -> None:
        """The filter row always shows the focused pane's filter (it never appears or goes:
        a row that comes and goes relays the whole screen out, 50 ms on a big review)."""
        bar = self.query_one("#filter", FilterBar)
        if bar.target not in (None, kind):
            self._apply_filter(bar)  # typed for the pane being left, not yet applied: kept for it
        if bar.target != kind or bar.value != self.filters[kind]:
            bar.target = kind
            bar.value = self.filters[kind]
            bar.placeholder = f"filter {PANE_TITLES[kind][2:]}: press / and type words every item must contain"

    def on_input_changed(self, event: Input.Changed) -> None:
        """Typing shows at once; the pane refilters once typing pauses (FILTER_PAUSE_SECONDS),
        so a 20,000-item pane does not refilter on every character."""
        bar = event.input
        if isinstance(bar, FilterBar) and bar.target is not None:
            if self._filter_timer is not None:
                self._filter_timer.stop()
            self._filter_timer = self.set_timer(FILTER_PAUSE_SECONDS, lambda: self._apply_filter(bar))

    def _apply_filter(self, bar: FilterBar) -> None:
        if self._filter_timer is not None:
            self._filter_timer.stop()
        self._filter_timer = None
        if bar.target is not None and self.filters[bar.target] != bar.value:
            self.filters[bar.target] = bar.value
            self.show_items(bar.target)

    def action_filter_keep(self) -> None:
        """``enter`` in the filter row: apply what was typed, back to the pane."""
        bar = self.query_one("#filter", FilterBar)
        self._apply_filter(bar)
        self.action_focus_pane(bar.target or self.active)

    def action_filter_clear(self) -> None:
        """``escape`` in the filter row: clear the pane's filter, back to the pane."""
        bar = self.query_one("#filter", FilterBar)
        if self._filter_timer is not None:
            self._filter_timer.stop()
            self._filter_timer = None
        bar.value = ""  # focus leaving the row keeps what it shows: it must show nothing
        if bar.target is not None and self.filters[bar.target]:
            self.filters[bar.target] = ""
            self.show_items(bar.target)
        self.action_focus_pane(bar.target or self.active)

    def on_filter_bar_left(self, _event: FilterBar.Left) -> None:
        """Focus left the bar (enter, esc, tab, a click): keep what was typed."""
        self.screen_stack[0].remove_class("-filtering")
        self._apply_filter(self.query_one("#filter", FilterBar))

    def action_quick_filter(self, kind: str) -> None:
        """``x``: show only the pane's problem items (unowned, missed, expiring, rejected); again: all."""
        self.quick ^= {kind}
        self.show_items(kind)

    def action_clear_filters(self) -> None:
        """``escape``: clear the focused pane's filters; in Relations also the narrowing."""
        pane = self.focused_pane()
        if pane is None:
            return
        narrowed = pane.kind == "relations" and self.narrow is not None
        if narrowed or self.filters[pane.kind] or pane.kind in self.quick:
            self.filters[pane.kind] = ""
            self.quick.discard(pane.kind)
            if narrowed:
                self.narrow = None
            self.show_items(pane.kind)
            self.show_filter_of(pane.kind)  # the row shows the filter, now none

    # --- layout and focus -------------------------------------------------------------------

    def layout_for(self, width: int, height: int) -> None:
        """Lay the panes out for a ``width`` x ``height`` terminal (``layout_class``); called
        on every resize and when a review loads (its ids decide the width a pane needs)."""
        screen = self.screen_stack[0] if self.screen_stack else self.screen
        screen.set_class(height < SHORT_BELOW_HEIGHT, "-short")
        screen.set_class(height < TINY_BELOW_HEIGHT, "-tiny")
        wanted = layout_class(width, height, pane_width_needed(self.review))
        if not screen.has_class(wanted or "-side"):
            for name in LAYOUTS:
                screen.set_class(name == wanted, name)
            screen.set_class(wanted is None, "-side")
            self.activate(self.active, force=True)
        self.call_after_refresh(self.fit_pane_widths)

    def fit_pane_widths(self) -> None:
        """Side by side: each pane's width from ``share_width`` over what its lines want
        (``wanted_width``) in the rows it has; other layouts: equal (the stylesheet's 1fr).
        Sets a width only when it changed (each one relays the screen out)."""
        screen = self.screen_stack[0] if self.screen_stack else None
        if screen is None or not screen.is_mounted:
            return
        panes = [self.pane(kind) for kind in PANES]
        widths: list[int | None] = [None] * len(panes)
        if screen.has_class("-side"):
            need = pane_width_needed(self.review)
            rows = panes[0].scrollable_content_region.height
            wants = [wanted_width(self.lines_of[kind], rows, need, PANE_CHROME) for kind in PANES]
            widths = share_width(self.query_one("#panes").size.width, need, wants)
        for pane, width in zip(panes, widths):
            if self.pane_widths.get(pane.kind) != width:
                self.pane_widths[pane.kind] = width
                pane.styles.width = width  # None: the stylesheet's 1fr again

    def activate(self, kind: str, force: bool = False) -> None:
        """Make ``kind`` the pane shown in tab mode and the tab bar's active tab. Side by
        side nothing is hidden, so only the choice is kept (``force``: apply it anyway, the
        layout just changed)."""
        self.active = kind
        tabbed = self.screen_stack[0].has_class("-tabs")
        if not (force or tabbed):
            return
        for pane in self.query(Pane):
            pane.display = pane.kind == kind or not tabbed  # inline: takes effect at once, focusable now
        tabs = self.query_one("#pane-tabs", Tabs)
        if tabs.active != f"tab-{kind}":
            tabs.active = f"tab-{kind}"

    def on_tabs_tab_activated(self, event: Tabs.TabActivated) -> None:
        kind = (event.tab.id or "").removeprefix("tab-")
        if kind in PANES and kind != self.active:
            self.action_focus_pane(kind)

    def action_focus_pane(self, kind: str) -> None:
        """Focus pane ``kind`` now, not after a refresh: keys typed right after ``2`` (``2 x``)
        must act on the new pane."""
        pane = self.pane(kind)
        self.focus_shown(pane)  # first: the detail strip and filter row paint with the focus
        self.screen_stack[0].set_focus(pane, scroll_visible=False)  # panes never scroll into view

    def action_next_pane(self) -> None:
        self._cycle(1)

    def action_previous_pane(self) -> None:
        self._cycle(-1)

    def _cycle(self, step: int) -> None:
        pane = self.focused_pane()
        current = PANES.index(pane.kind if pane is not None else self.active)
        self.action_focus_pane(PANES[(current + step) % len(PANES)])
