"""The review console (SPEC §11): four panes, a status line, keyboard first.

The App holds the engine's Review and the reviewer's pending decisions; widgets only
render. Loading, running relations and committing run in thread workers and report
back through ``_from_thread`` (queued, never waited on), so input never waits on git or
on a subject, and no worker waits on the UI.

This module keeps the App's composition, its key dispatch (which action works where) and
the detail strip; the bindings table is ``bindings.py`` and each workflow is a mixin of one
concern: ``loading`` (the Review and the panes), ``runs`` (``r``), ``replay`` (``b``, ``f``),
``quarantine`` (``space``, ``a``, ``d``, ``c``), ``commits`` (the git worker), ``owners``
(``o``, ``h``, ``n``), ``checks`` (``m``, ``w``, ``s``) and ``listing`` (panes, filters, layout).
"""

from __future__ import annotations

import datetime as dt

from rich.text import Text
from textual import events, on
from textual.app import App, ComposeResult
from textual.containers import Horizontal
from textual.css.query import NoMatches
from textual.widgets import Header, Input, ProgressBar, Static, Tab, Tabs
from textual.widgets._toast import ToastRack

from relconsole.console.bindings import APP_BINDINGS, MAIN_SCREEN_ACTIONS, PANE_ACTIONS, default_keys, load_keymap
from relconsole.console.checks import ReviewChecks
from relconsole.console.collector import SWEEP_EVERY_SECONDS, Collector
from relconsole.console.commands import ReviewCommands
from relconsole.console.commits import CommitWorker
from relconsole.console.diffs import DiffViews
from relconsole.console.keymap import keymap_path
from relconsole.console.listing import PANE_TITLES, PANES, TAB_TITLES, PaneListing
from relconsole.console.loading import ReviewLoading
from relconsole.console.messages import RelationsChanged
from relconsole.console.owners import OwnerWorkflows
from relconsole.console.quarantine import QuarantineWorkflow
from relconsole.console.replay import ReplayWorkflow
from relconsole.console.runs import RelationRuns
from relconsole.console.settings import load_settings, save_setting
from relconsole.console import views
from relconsole.console.screens.confirm import ConfirmScreen
from relconsole.console.screens.detail import DetailScreen, DetailView
from relconsole.console.screens.help import HelpScreen, help_groups
from relconsole.console.screens.main import ReviewScreen
from relconsole.console.widgets.filterbar import FilterBar
from relconsole.console.widgets.keybar import KeyBar
from relconsole.console.widgets.pane import Pane
from relconsole.console.widgets.status import StatusLine
from relconsole.engine.relations.pool import Cancel
from relconsole.engine.gate.review import Review
from relconsole.engine.literal import counted, literal, one_line

LEASE_REFRESH_SECONDS = 5.0
KEYMAP_PROBLEMS_SHOWN = 5  # one notification each; more are counted in one more
TOASTS_SHOWN = 2  # a newer toast retires the oldest (issue 18: stacks covered the panes)
TOAST_SECONDS = {"information": 4.0, "warning": 6.0, "error": 10.0}  # at most, whatever a caller asks
UNDER_TOASTS = ("#filter-row", "#progress", "#status", "#keys")  # rows a toast never covers (issue 36)


class ReviewApp(PaneListing, ReviewLoading, RelationRuns, ReplayWorkflow, QuarantineWorkflow, CommitWorker,
                OwnerWorkflows, ReviewChecks, DiffViews, App[int]):
    """The console over one review. Arguments mirror ``relconsole review``."""

    CSS_PATH = "app.tcss"
    TITLE = "relconsole"
    COMMANDS = App.COMMANDS | {ReviewCommands}
    BINDINGS = APP_BINDINGS

    def __init__(self, repo: str = ".", base_ref: str | None = None, head_ref: str = "HEAD",
                 today: dt.date | None = None, oracle_from: str = "base", autorun: bool = True,
                 preferences: bool = True, keymap: str | None = None,
                 run_seed: int | None = None, replay_seeds: list[int] | None = None):
        super().__init__()
        # recorded seeds (the demo's tour, engine.demo.TOUR_RUN_SEED and TOUR_REPLAY_SEEDS): every first run replays
        # ``run_seed`` and ``b`` replays ``replay_seeds``; None: each run draws its own (§7)
        self.run_seed = run_seed
        self.replay_seeds = list(replay_seeds) if replay_seeds else None
        self.preferences = preferences  # the user's saved theme and keymap; screenshots use the defaults
        self.keymap_file = keymap  # --keymap PATH; None: $RELCONSOLE_KEYMAP or the user's config folder
        self.active_keys: dict[str, list[str]] = default_keys(self.BINDINGS)  # binding id -> keys in force
        self.repo_path = repo
        self.base_ref = base_ref
        self.head_ref = head_ref
        self.today = today
        self.oracle_from = oracle_from
        self.autorun = autorun
        self.review: Review | None = None
        self.load_error: str | None = None
        self.load_exit = 3
        self.marked: set[str] = set()
        self.pending: dict[str, str] = {}
        self.overrides: set[str] = set()  # candidates the reviewer accepts unconfirmed (§10)
        self.running: set[str] = set()
        self.busy_reasons: set[str] = set()
        self.replay_cancel = Cancel()
        self.run_cancel = Cancel()  # the touched relations' run; q cancels it with the replay
        self.init_listing()
        self._catch_up_pending = False
        self.saved_replays: dict = {}  # relation id -> replay sheet saved before this session (saved_replays)
        self.cursor_after_reload: str | None = None  # the Quarantine item to highlight once a commit reloads
        self._after_load: list = []  # what waits for the reload in flight (a commit asked meanwhile)
        self._focus_shown = None  # the widget focus_shown last showed
        self.collector = Collector()
        self._quitting = False
        theme = load_settings().get("theme") if preferences else None
        if isinstance(theme, str) and theme in self.available_themes:
            self.theme = theme

    # --- composition ------------------------------------------------------------------

    def get_default_screen(self) -> ReviewScreen:
        return ReviewScreen(id="_default")

    def compose(self) -> ComposeResult:
        yield Header()
        tabs = Tabs(*[Tab(TAB_TITLES[kind], id=f"tab-{kind}") for kind in PANES], id="pane-tabs")
        tabs.can_focus = False  # numbers and tab switch panes; the bar shows which one is up
        yield tabs
        with Horizontal(id="panes"):
            for kind in PANES:
                yield Pane(kind, PANE_TITLES[kind])
        yield Static(id="detail")
        with Horizontal(id="filter-row"):
            yield Static("/", id="filter-label")
            yield FilterBar(id="filter")
        yield ProgressBar(id="progress", show_eta=False)
        yield StatusLine(Text(" loading review…", style="italic"), id="status")
        yield KeyBar(id="keys")

    def on_mount(self) -> None:
        self.query_one("#progress").display = False
        if self.preferences:
            self.apply_user_keymap()
        if self.preferences:
            self.theme_changed_signal.subscribe(self, lambda theme: save_setting("theme", theme.name))
        self.layout_for(self.size.width, self.size.height)
        self.screen.screen_layout_refresh_signal.subscribe(self, lambda _screen: self.place_toasts())
        self.query_one("#touched", Pane).focus()
        self.reload(first=True)
        self.set_interval(LEASE_REFRESH_SECONDS, self.refresh_workspace_leases)
        self.collector.start()
        self.set_interval(SWEEP_EVERY_SECONDS, lambda: self.collector.sweep_if_idle(self.busy))

    def apply_user_keymap(self) -> None:
        """Read the reviewer's keymap (``keymap.load_keymap``) and hand it to Textual
        (``App.set_keymap``); each problem is a one-line notification naming the file, and
        the entries it concerns keep their default keys. Never raises."""
        try:
            keymap = load_keymap(keymap_path(self.keymap_file), self.BINDINGS)
        except Exception as exc:  # a keymap is never worth a crash
            self.notify(f"keymap not read: {type(exc).__name__}: {exc}", title="keymap",
                        severity="warning", markup=False)
            return
        if keymap.keys:
            self.set_keymap(keymap.keys)
        self.active_keys = keymap.active
        for problem in keymap.problems[:KEYMAP_PROBLEMS_SHOWN]:
            self.notify(one_line(problem), title="keymap", severity="warning", markup=False, timeout=30)
        if len(keymap.problems) > KEYMAP_PROBLEMS_SHOWN:
            self.notify(f"{counted(len(keymap.problems) - KEYMAP_PROBLEMS_SHOWN, 'more keymap problem')} in "
                        f"{one_line(keymap.path)}", title="keymap", severity="warning", markup=False, timeout=30)

    def notify(self, message: str, *, title: str = "", severity="information", timeout: float | None = None,
               markup: bool = False) -> None:
        """The one sink of every notification (issue 18), shown as one line: ``message`` through
        ``literal``, ``title`` through ``one_line``, never as Rich markup (a drafted ``source``
        in a commit toast once retitled and cleared the reviewer's terminal); the title leads,
        line breaks become `` · ``, the toast cuts what does not fit and stays at most
        TOAST_SECONDS[severity]. Widgets and screens reach it too (Textual's ``Widget.notify``
        calls ``app.notify``). ``markup`` is accepted for Textual's signature and ignored.
        Thread-safe like Textual's."""
        parts = [part.strip() for part in literal(str(message)).splitlines() if part.strip()]
        line = " · ".join(parts)
        if title:
            line = f"{one_line(title)}: {line}"
        cap = TOAST_SECONDS.get(severity, TOAST_SECONDS["information"])
        super().notify(line, severity=severity, markup=False, timeout=cap if timeout is None else min(timeout, cap))

    def _on_notify(self, event) -> None:
        """Keep at most TOASTS_SHOWN toasts: the oldest go first, errors last."""
        current = list(self._notifications)
        while len(current) >= TOASTS_SHOWN:
            oldest = next((n for n in current if n.severity != "error"), current[0])
            current.remove(oldest)
            self._unnotify(oldest, refresh=False)
        self.place_toasts()
        super()._on_notify(event)

    def place_toasts(self) -> None:
        """Stack the main screen's toasts right above the filter row (over the detail strip,
        or the panes' last rows when it is hidden): the rows UNDER_TOASTS (filter, progress,
        the decision and oracle/head lines, the keys) stay readable under any toast. Runs
        after every layout of the screen (its rows come and go: progress, a second key
        row, a tiny terminal); sets the margin only when it changed."""
        screen = self.screen_stack[0] if self.screen_stack else None
        if screen is None:
            return
        try:
            rack = screen.get_child_by_type(ToastRack)
        except NoMatches:  # notifications disabled
            return
        tops = [widget.region.y for selector in UNDER_TOASTS for widget in screen.query(selector)
                if widget.display and widget.region.height]
        below = screen.size.height - min(tops) if tops else 1
        if rack.styles.margin.bottom != below:
            rack.styles.margin = (0, 0, below, 0)


    def on_resize(self, event) -> None:
        self.layout_for(event.size.width, event.size.height)

    @property
    def busy(self) -> bool:
        """True while loading, running or committing (tests and screenshots wait on it)."""
        return bool(self.busy_reasons)

    def pane(self, kind: str) -> Pane:
        return self.query_one(f"#{kind}", Pane)

    def focused_pane(self) -> Pane | None:
        focused = self.focused
        return focused if isinstance(focused, Pane) else None

    # --- detail strip and detail screens ------------------------------------------------

    @on(Pane.Highlighted)
    def _highlighted(self, _event: Pane.Highlighted) -> None:
        self.show_detail()  # it shows the focused pane's item (or the filtered one's); others change nothing

    def on_descendant_focus(self, event) -> None:
        main = self.screen_stack[0]
        if event.widget is not self._focus_shown and event.widget.screen is main:  # a click, say
            self.focus_shown(event.widget)

    def focus_shown(self, widget) -> None:
        """Show what follows the focus on ``widget`` (tab, filter row, detail strip). A key
        calls it just before it moves the focus: these refreshes must reach the screen before
        the panes' own, or they paint a frame (about 30 ms) later than the focus."""
        self._focus_shown = widget
        if isinstance(widget, Pane):
            self.activate(widget.kind)
            self.show_filter_of(widget.kind)
        self.show_detail(widget)

    def show_detail(self, focused=None) -> None:
        """The bottom strip: everything about the highlighted item of the focused pane (or of
        ``focused``, about to be), literally."""
        if focused is None:
            focused = self.screen_stack[0].focused  # a dialog or view on top leaves the strip as it was
        if isinstance(focused, FilterBar) and focused.target is not None:
            focused = self.pane(focused.target)  # typing a filter: the item the filter leaves first
        pane = focused if isinstance(focused, Pane) else None
        detail = self.query_one("#detail", Static)
        if self.review is None or pane is None:
            detail.update("", layout=False)
            return
        detail.update(views.detail_text(self.review, pane.kind, pane.highlighted_id), layout=False)

    @on(Pane.Selected)
    def _selected(self, event: Pane.Selected) -> None:
        if self.review is None:
            return
        kind, oid = event.pane.kind, event.item_id
        if kind == "touched":
            path = views.touched_path(self.review, oid)
            self.narrow_to(None if self.narrow == path else path)
            return
        status = views.lease_of(self.review, oid) if kind == "leases" and oid and oid[:2] == "l:" else None
        if status is not None and status.lease is not None:
            self.open_lease_detail(status)
            return
        view = views.detail_view(self.review, kind, oid, self.saved_replays)
        if view is not None:
            self.show_view(view)

    @on(RelationsChanged)
    async def _views_follow(self, event: RelationsChanged) -> None:
        """An open relation view (on top or under a dialog) shows its relation's new result
        or replay once the run or the replay reports it (issue 36)."""
        changed = set(event.relation_ids)
        for screen in list(self.screen_stack):
            source = screen.view.source if isinstance(screen, DetailScreen) else None
            if self.review is None or not source or source[0] != "relations" or \
                    views.relation_of(source[1]) not in changed:
                continue
            try:
                view = views.detail_view(self.review, *source, self.saved_replays)
            except KeyError:  # the relation left the catalog (a reload): the view stays as it was
                continue
            if view is not None:
                await screen.show(view)

    def show_view(self, view: DetailView) -> None:
        """Open a detail screen on ``view``; one already on top is replaced, so ``m`` pressed
        on a detail view does not stack views that each need an ``esc``."""
        if isinstance(self.screen, DetailScreen):
            self.switch_screen(DetailScreen(view))
        else:
            self.push_screen(DetailScreen(view))

    def get_system_commands(self, screen):
        """Textual's palette entries minus Quit (it skipped the pending-accepts question and
        the §8 exit code: the console's own quit entry does both), Maximize (it hid the key
        bar) and Screenshot (``relconsole screenshots`` makes them)."""
        for command in super().get_system_commands(screen):
            if command.title not in ("Quit", "Maximize", "Minimize", "Screenshot"):
                yield command

    def run_from_palette(self, action: str) -> None:
        """Run a palette entry's action; one that works in a single pane focuses it first."""
        name, _, params = action.partition("(")
        kind = PANE_ACTIONS.get(name) or (params.strip("')\"") if name == "quick_filter" else None)
        pane = self.focused_pane()
        if kind and (pane is None or pane.kind != kind):
            self.action_focus_pane(kind)
        self.call_later(self.run_action, action)  # run_action is a coroutine: queued, it is awaited

    def check_action(self, action: str, parameters: tuple) -> bool | None:
        """Keys that act on one pane only work (and show) while that pane has focus; pane
        switching keys belong to the main screen (dialogs keep tab for their fields)."""
        if action in ("filter_keep", "filter_clear"):
            return isinstance(self.focused, FilterBar)
        on_main = self.screen is self.screen_stack[0] and not isinstance(self.focused, Input)
        if action in MAIN_SCREEN_ACTIONS and not on_main:
            return False
        pane = self.focused_pane()
        if action == "quick_filter":
            return pane is not None and parameters[:1] == (pane.kind,)
        wanted = PANE_ACTIONS.get(action)
        if wanted is None:
            return True
        return pane is not None and pane.kind == wanted

    # --- workers report back ----------------------------------------------------------------

    def _from_thread(self, callback, *args, **kwargs) -> bool:
        """Queue ``callback(*args)`` for the UI thread without waiting for it; False when the
        console is closing. ``call_from_thread`` waits, and a worker waiting on a console
        whose terminal went away (SIGHUP) never returned: its thread held the process at
        exit, spinning on the dead terminal at full CPU."""
        try:
            return self.call_later(callback, *args, **kwargs)
        except RuntimeError:  # the event loop is closed
            return False

    # --- help and quit --------------------------------------------------------------------

    def action_help(self) -> None:
        """``?``: every key, generated from the bindings in force, grouped by where it works."""
        self.push_screen(HelpScreen(help_groups(self.BINDINGS, self.active_keys)))

    def exit_code(self) -> int:
        """The §8 code of what the console shows (a load failure: its error's code)."""
        if self.review is not None:
            return self.review.exit_code()
        return self.load_exit

    def action_quit_review(self) -> None:
        if not self.pending:
            self._quit()
            return
        self.push_screen(ConfirmScreen("Quit?", f"{counted(len(self.pending), 'accepted item')} {'is' if len(self.pending) == 1 else 'are'} not committed yet "
                                                "(press c to commit them). Quit anyway?"),
                         lambda yes: yes and self._quit())

    def _quit(self) -> None:
        """Exit with the §8 code; a running run or replay is cancelled (its runs killed, with
        every process the subject started; a replay's lease released)."""
        self.run_cancel.cancel()
        self.replay_cancel.cancel()
        self._quitting = True
        self.exit(self.exit_code(), return_code=self.exit_code())

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, (events.Key, events.MouseEvent)):
            if self._quitting:  # "q t" typed together: t opened the theme picker on a closing app
                return
            self.collector.input_seen()  # full collections wait until the reviewer pauses
        await super().on_event(event)

    def on_unmount(self) -> None:
        self.collector.stop()
        self.run_cancel.cancel()
        self.replay_cancel.cancel()  # a running replay stops, releases its lease and cleans its worktrees
        if self.review is not None:
            self.review.close()
