"""The review console (SPEC §11): four panes, a status line, keyboard first.

The App holds the engine's Review and the reviewer's pending decisions; widgets only
render. Loading, running relations and committing run in thread workers and report
back through ``_from_thread`` (queued, never waited on), so input never waits on git or
on a subject, and no worker waits on the UI.
"""

from __future__ import annotations

import datetime as dt
import time

from rich.text import Text
from textual import events, on, work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.css.query import NoMatches
from textual.containers import Horizontal
from textual.widgets import Header, Input, ProgressBar, Static, Tab, Tabs

from relconsole.console import filters, views
from relconsole.console.collector import SWEEP_EVERY_SECONDS, Collector
from relconsole.console.commands import ReviewCommands
from relconsole.console.bindings import default_keys, load_keymap
from relconsole.console.keymap import keymap_path
from relconsole.console.listing import PANE_TITLES, PANES, TAB_TITLES, PaneListing
from relconsole.console.settings import load_settings, save_setting
from relconsole.console.owners import OwnerWorkflows
from relconsole.console.screens.confirm import ConfirmScreen
from relconsole.console.screens.detail import DetailScreen, DetailView
from relconsole.console.screens.form import FormScreen
from relconsole.console.screens.help import HelpScreen, help_groups
from relconsole.console.screens.main import ReviewScreen
from relconsole.console.widgets.filterbar import FilterBar
from relconsole.console.widgets.keybar import KeyBar
from relconsole.console.widgets.pane import Pane
from relconsole.console.widgets.status import StatusLine
from relconsole.engine.gate import actions, freezeevidence
from relconsole.engine.gate import checklist
from relconsole.engine.gate import gatehealth
from relconsole.engine.gate.bitecache import cached_verdict
from relconsole.engine.gate.confirmstate import DISCARDED, load_candidate_states
from relconsole.engine.errors import RelconsoleError
from relconsole.engine.literal import counted, literal, one_line
from relconsole.engine.gate.replay import SHEET_SUFFIX, default_artifacts, load_workspace_leases, replay, to_replay
from relconsole.engine.gate.replayoptions import ReplayOptions, Shard
from relconsole.engine.relations.pool import Cancel
from relconsole.engine.gate.report import record_decisions
from relconsole.engine.gate.review import Review, load_review
from relconsole.engine.gate.reviewrun import RunCancelled, run_review
from relconsole.engine.repo.worktrees import slug
from relconsole.engine.gate.wslease import open_store

STATUS_EVERY_SECONDS = 0.2  # while relations finish, the status line and filtered panes catch up this often
LEASE_REFRESH_SECONDS = 5.0
HASH_PROGRESS_MIN_BYTES = 4 << 20  # corpora smaller than this hash too fast to show a bar
PANE_ACTIONS = {"accept": "quarantine", "delete": "quarantine", "mark": "quarantine",
                "confirm_candidate": "quarantine", "freeze": "relations", "renew": "leases",
                "rehash": "leases"}
QUICK_KEY = "x"
KEYMAP_PROBLEMS_SHOWN = 5  # one notification each; more are counted in one more
TOASTS_SHOWN = 2  # a newer toast retires the oldest (issue 18: stacks covered the panes)
TOAST_SECONDS = {"information": 4.0, "warning": 6.0, "error": 10.0}  # at most, whatever a caller asks
MAIN_SCREEN_ACTIONS = {"next_pane", "previous_pane", "filter", "quick_filter", "focus_pane", "clear_filters"}


def saved_replays(review: Review) -> dict:
    """Relation id -> the replay sheet saved for this HEAD before this session (in the default
    artifacts directory, decided again after fencing: ``freezeevidence.freeze_evidence``), for the
    touched relations this review has not replayed. It is what ``f`` goes by, so the
    relation's view shows it (issue 18). Reads only sheets that exist; never raises."""
    folder = default_artifacts(review)
    try:
        names = {entry.name for entry in folder.iterdir()}
    except OSError:
        return {}
    out = {}
    for rid in review.touched_relations():
        if rid not in review.replays and f"{slug(rid)}{SHEET_SUFFIX}" in names:
            try:
                evidence = freezeevidence.freeze_evidence(review, rid)
            except Exception:  # unreadable evidence is shown as none; f says why when pressed
                evidence = None
            if evidence is not None:
                out[rid] = evidence
    return out


class ReviewApp(PaneListing, OwnerWorkflows, App[int]):
    """The console over one review. Arguments mirror ``relconsole review``."""

    CSS_PATH = "app.tcss"
    TITLE = "relconsole"
    COMMANDS = App.COMMANDS | {ReviewCommands}
    BINDINGS = [
        Binding("1", "focus_pane('touched')", "Paths", show=False, id="pane.touched",
                tooltip="focus the touched paths pane"),
        Binding("2", "focus_pane('relations')", "Relations", show=False, id="pane.relations",
                tooltip="focus the relations pane"),
        Binding("3", "focus_pane('leases')", "Leases", show=False, id="pane.leases",
                tooltip="focus the leases pane"),
        Binding("4", "focus_pane('quarantine')", "Quarantine", show=False, id="pane.quarantine",
                tooltip="focus the quarantine pane"),
        Binding("r", "run", "Run", id="run", tooltip="run the touched relations again (in the background)"),
        Binding("b", "replay", "Replay", id="replay",
                tooltip="replay the missed relations on HEAD and the merge base under a workspace lease "
                        "(background; one sheet each, §8 row shown)"),
        Binding("s", "gate_health", "Gate health", show=False, id="gate_health",
                tooltip="gate health: how often each §8 row fired in the last 7 days, and warnings"),
        Binding("m", "merge_checklist", "Checklist", id="merge_checklist",
                tooltip="the patch's review flags (§9) and the merge checklist, each item with its evidence"),
        Binding("space", "mark", "Mark", id="mark",
                tooltip="quarantine: mark or unmark the item and move down (a and d act on marked items)"),
        Binding("a", "accept", "Accept", id="accept",
                tooltip="quarantine: accept the item or the marked items (pending until c)"),
        Binding("d", "delete", "Delete", id="delete",
                tooltip="quarantine: delete the item or the marked items (asks, then one quarantine: commit)"),
        Binding("c", "commit", "Commit", id="commit",
                tooltip="commit the pending accepts as one catalog: commit (asks first)"),
        Binding("f", "freeze", "Freeze", id="freeze",
                tooltip="relations: commit a freeze for the missed relation (you type the reason)"),
        Binding("w", "acknowledge", "Acknowledge", id="acknowledge",
                tooltip="acknowledge a review flag you have read (you type the reason; one review: commit)"),
        Binding("n", "renew", "Renew", id="renew", tooltip="leases: renew a lease you own (one lease: commit)"),
        Binding("h", "rehash", "Re-hash", id="rehash",
                tooltip="leases: re-pin a drifted lease to its committed corpus (confirm old and new digest)"),
        Binding("o", "confirm_candidate", "Confirm", id="confirm",
                tooltip="quarantine: second replay of a candidate on a new workspace lease (§10)"),
        Binding("slash", "filter", "Filter", id="filter",
                tooltip="filter the focused pane: type words that every shown item must contain"),
        Binding("enter", "filter_keep", "Keep filter", priority=True, id="filter.keep",
                tooltip="in the filter row: keep the filter and go back to the pane"),
        Binding("escape", "filter_clear", "Clear filter", priority=True, id="filter.clear",
                tooltip="in the filter row: clear the filter and go back to the pane"),
        *[Binding(QUICK_KEY, f"quick_filter('{kind}')", quick.label, id=f"quick.{kind}",
                  tooltip=f"{PANE_TITLES[kind][2:].lower()}: show only {quick.title} (again: show all)")
          for kind, quick in filters.QUICK_FILTERS.items()],
        Binding("escape", "clear_filters", "Clear filter", show=False, id="clear",
                tooltip="clear the focused pane's filters (and the narrowing of relations to a path)"),
        Binding("t", "change_theme", "Theme", show=False, id="theme",
                tooltip="pick a theme (every state also has a word or symbol; remembered for next time)"),
        Binding("tab", "next_pane", show=False, priority=True, id="next_pane", tooltip="next pane"),
        Binding("shift+tab", "previous_pane", show=False, priority=True, id="previous_pane",
                tooltip="previous pane"),
        Binding("question_mark,f1", "help", "Help", id="help", tooltip="this help"),
        Binding("q", "quit_review", "Quit", id="quit",
                tooltip="quit (asks when accepts are pending); exits with the review's §8 code"),
    ]

    def __init__(self, repo: str = ".", base_ref: str | None = None, head_ref: str = "HEAD",
                 today: dt.date | None = None, oracle_from: str = "base", autorun: bool = True,
                 preferences: bool = True, keymap: str | None = None,
                 run_seed: int | None = None, replay_seeds: list[int] | None = None):
        super().__init__()
        # recorded seeds (the demo's tour, engine.demo.TOUR_SEEDS): every first run replays
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
        super()._on_notify(event)

    def refresh_workspace_leases(self) -> None:
        """Every few seconds: workspace leases change under us (CI holders, TTLs running out)."""
        if self.review is not None and not self.busy_reasons & {"load", "git"}:
            self.list_workspace_leases(self.review)

    # Every worker names itself: without a description Textual reprs the arguments on the UI
    # thread, and the repr of a Review with 20,000 bindings took 0.4 s every 5 s.
    @work(thread=True, exclusive=True, group="leases", description="leases")
    def list_workspace_leases(self, review: Review) -> None:
        load_workspace_leases(review)
        self._from_thread(self._leases_listed, review)

    def _leases_listed(self, review: Review) -> None:
        if review is self.review:
            self.refresh_workspace_items()

    def refresh_workspace_items(self) -> None:
        """Redo the Leases pane's workspace leases only (a handful), keeping the 1,000
        dataset lease items it already has."""
        workspace = views.workspace_lease_items(self.review)
        kept = [item for item in self.items["leases"] if not item[0].startswith("w:")]
        old = [item for item in self.items["leases"] if item[0].startswith("w:")]
        if [(i[0], i[1].plain) for i in old] != [(i[0], i[1].plain) for i in workspace]:
            self.show_items("leases", kept + workspace)

    def reload(self, first: bool = False) -> None:
        """Start (re)loading the review; ``busy`` is true from this call on."""
        self.busy_reasons.add("load")
        self.load(first)

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

    # --- loading ----------------------------------------------------------------------

    @work(thread=True, exclusive=True, group="load", description="load")
    def load(self, first: bool = False) -> None:
        """Build the Review off the UI thread; on failure show the error, never crash."""
        try:
            review = load_review(self.repo_path, self.base_ref, self.head_ref, self.today,
                                 self.oracle_from, hash_progress=self._hash_reporter())
            review.bites = {r.id: cached_verdict(review, r.id) for r in review.relations}
            load_candidate_states(review)
            load_workspace_leases(review)
            carried = self._carry_over(self.review, review)
            saved = saved_replays(review)
            built = {"touched": views.touched_items(review), "leases": views.lease_items(review),
                     "relations": views.relation_items(review, None, set(self.running))}
        except RelconsoleError as exc:
            self._from_thread(self._load_failed, exc.one_line(), exc.exit_code)
            return
        except Exception as exc:  # a pane message beats a traceback for any surprise
            self._from_thread(self._load_failed, f"{type(exc).__name__}: {exc}", 3)
            return
        if not self._from_thread(self._loaded, review, first, built, carried, saved):
            review.close()  # the console quit while loading: nobody else will close this review

    def _hash_reporter(self):
        """A load_review ``hash_progress`` callback: big corpora move the progress bar, at
        most ten times a second (called on the loading thread)."""
        last = [0.0]

        def report(label: str, done: int, total: int) -> None:
            now = time.monotonic()
            if total < HASH_PROGRESS_MIN_BYTES or (done < total and now - last[0] < 0.1):
                return
            last[0] = now
            self._from_thread(self._hash_step, label, done, total)

        return report

    def _hash_step(self, label: str, done: int, total: int) -> None:
        bar = self.query_one("#progress", ProgressBar)
        bar.display = True
        bar.update(total=total, progress=done)
        self.query_one("#status", StatusLine).show_text(
            f" hashing {literal(label)}: {done >> 20} / {total >> 20} MiB (cached for the next load)")

    def _load_failed(self, message: str, exit_code: int) -> None:
        self.busy_reasons.discard("load")
        self.load_error = message
        self.load_exit = exit_code
        self.query_one("#status", StatusLine).show_error(message)
        self.show_items("touched", [], literal(message))
        self.notify(message, title="cannot load the review", severity="error", markup=False, timeout=30)

    @staticmethod
    def _carry_over(old: Review | None, review: Review) -> dict:
        """Results and replays of relations whose identity did not change survive a reload
        (a commit). Returns what was carried, to spot what arrived after (the loading thread
        reads a snapshot; the UI thread adds later results in ``_loaded``)."""
        if old is None:
            return {}
        carried = {}
        for rid, result in dict(old.results).items():
            if review.identities.get(rid) == old.identities.get(rid):
                review.results.setdefault(rid, result)
                carried[rid] = review.results[rid]
                replayed = old.replays.get(rid)
                if replayed is not None:
                    review.replays.setdefault(rid, replayed)
        return carried

    def _carry_marks(self, old: Review, review: Review) -> None:
        """Marks, pending accepts and overrides follow their items into the reloaded review
        (a seed row's line moves after a commit; a mark must not land on the row now there)."""
        moved = views.moved_items(old, review)
        self.marked = {moved[o] for o in self.marked if o in moved}
        self.pending = {moved[o]: what for o, what in self.pending.items() if o in moved}
        self.overrides = {moved[o] for o in self.overrides if o in moved}
        if self.cursor_after_reload is not None:
            self.cursor_after_reload = moved.get(self.cursor_after_reload, self.cursor_after_reload)

    def _loaded(self, review: Review, first: bool, built: dict, carried: dict, saved: dict) -> None:
        self.collector.releasing()
        self.saved_replays = saved
        old = self.review
        late = []
        if old is not None:
            self._carry_over(old, review)
            self._carry_marks(old, review)
            late = [rid for rid, result in old.results.items() if carried.get(rid) is not result
                    and review.results.get(rid) is result]
            old.close()
        self.review = review
        self.load_error = None
        live = {views.item_id(x) for x in views.quarantine_items(review)}
        self.marked &= live
        self.pending = {k: v for k, v in self.pending.items() if k in live}
        self.overrides &= set(self.pending)
        self.busy_reasons.discard("load")
        self.layout_for(self.size.width, self.size.height)  # its ids decide the width a pane needs
        if not self.busy_reasons & {"replay", "confirm", "rehash"}:
            self.query_one("#progress").display = False
        self.refresh_all(built)
        self.update_relations(late)
        self.collector.settled()
        waiting, self._after_load = self._after_load, []
        for then in waiting:
            then()
        if first and self.autorun and review.catalog is not None and review.touched_relations():
            self.action_run()

    def refresh_all(self, built: dict | None = None) -> None:
        """Re-render every pane, the status line and the detail strip from the Review;
        ``built`` holds pane items the loading thread already made."""
        review = self.review
        if review is None:
            return
        built = built or {}
        self.show_items("touched", built.get("touched") or views.touched_items(review))
        self.show_items("relations", built.get("relations") or views.relation_items(review, None, self.running))
        self.show_items("leases", built.get("leases") or views.lease_items(review))
        self.show_items("quarantine", views.quarantine_options(review, self.marked, self.pending))
        if self.cursor_after_reload is not None:
            self.pane("quarantine").highlight_id(self.cursor_after_reload)
            self.cursor_after_reload = None
        self.refresh_status()
        self.show_detail()

    def update_relations(self, ids, refilter: bool = True) -> None:
        """Rebuild only these relations' items (they started, finished or were replayed);
        without ``refilter`` a filtered pane waits for the next catch-up."""
        review = self.review
        if review is None or review.catalog is None:
            return
        touched = set(review.touched_relations())
        relations = [review.catalog.get(rid) for rid in ids]
        self.update_items("relations", [views.relation_item(review, r, r.id in touched, r.id in self.running)
                                        for r in relations if r is not None], refilter)

    def refresh_status(self) -> None:
        running = f"running {counted(len(self.running), 'relation')}…" if self.running else ""
        self.query_one("#status", StatusLine).show_decision(self.review, running)

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

    # --- running relations ------------------------------------------------------------

    def action_run(self) -> None:
        if self.review is None or self.review.catalog is None:
            self.notify("nothing to run: the review did not load", severity="warning")
            return
        if self.running or "replay" in self.busy_reasons:
            self.notify("relations are already running", severity="warning")
            return
        ids = self.review.touched_relations()
        if not ids:
            self.notify("no touched path is owned by a relation", severity="information")
            return
        self.running = set(ids)
        for rid in ids:
            self.review.replays.pop(rid, None)  # a new run makes an older replay stale evidence
        bar = self.query_one("#progress", ProgressBar)
        bar.update(total=len(ids), progress=0)
        bar.display = True
        self.busy_reasons.add("run")
        self.update_relations(ids)
        self.refresh_status()
        self.run_cancel = Cancel()
        self.run_relations(self.review, ids)

    @work(thread=True, exclusive=True, group="run", description="run")
    def run_relations(self, review: Review, ids: list[str]) -> None:
        """Evaluate the touched relations in worker processes, reporting each as it ends."""
        try:
            run_review(review, ids, lambda result: self._from_thread(self._relation_done, review, result),
                       replay_seed=self.run_seed, cancel=self.run_cancel)
        except RunCancelled:
            return  # the console is quitting
        except Exception as exc:
            self._from_thread(self.notify, f"run failed: {exc}", severity="error", markup=False)
        self._from_thread(self._run_finished, review)

    def _relation_done(self, review: Review, result) -> None:
        self.running.discard(result.relation_id)
        if self.review is not review and self.review is not None:
            self.review.results[result.relation_id] = result
        else:
            review.results[result.relation_id] = result
        self.query_one("#progress", ProgressBar).advance(1)
        self.update_relations([result.relation_id], refilter=False)  # one row, not 5,000
        self._catch_up_soon()

    def _catch_up_soon(self) -> None:
        """The status line, the detail strip and a filtered Relations pane follow the results
        at most every STATUS_EVERY_SECONDS, so keys stay fast while relations finish."""
        if not self._catch_up_pending:
            self._catch_up_pending = True
            self.set_timer(STATUS_EVERY_SECONDS, self._catch_up)

    def _catch_up(self) -> None:
        self._catch_up_pending = False
        if self.review is None or not self.is_running:
            return
        try:
            if self.is_filtered("relations"):
                self.show_items("relations")
            self.refresh_status()
            self.show_detail()
        except NoMatches:  # the console is quitting: its widgets are gone
            pass

    def _run_finished(self, review: Review) -> None:
        self.collector.settled()  # the results stay as long as the review
        unreported = list(self.running)  # a run that failed part-way: these show "running" still
        self.running.clear()
        self.busy_reasons.discard("run")
        self.query_one("#progress").display = False
        self.update_relations(unreported)
        if self.is_filtered("relations"):
            self.show_items("relations")
        self.refresh_status()

    # --- replay against the merge base ---------------------------------------------------

    def action_replay(self) -> None:
        """``b``: replay every missed touched relation in the background (§7)."""
        review = self.review
        if review is None or review.catalog is None:
            self.notify("nothing to replay: the review did not load", severity="warning")
            return
        if self.running or "replay" in self.busy_reasons:
            self.notify("relations are running: wait for them to finish", severity="warning")
            return
        if all(rid in review.results for rid in review.touched_relations()) and \
                not to_replay(review, Shard()):
            self.notify("no touched relation missed: there is nothing to replay", severity="information")
            return
        self.busy_reasons.add("replay")
        self.replay_cancel = Cancel()
        self._replay_started_at = self._where()
        bar = self.query_one("#progress", ProgressBar)
        bar.update(total=None, progress=0)
        bar.display = True
        self.query_one("#status", StatusLine).show_decision(review, "replaying on HEAD and the merge base…")
        self.replay_in_background(review)

    @work(thread=True, exclusive=True, group="replay", description="replay")
    def replay_in_background(self, review: Review) -> None:
        """Run replay off the UI thread; a held or lost lease is a notification, not a crash."""
        listed = []

        def step(progress) -> None:
            if not listed:  # the lease is held now: show it in the Leases pane
                listed.append(True)
                load_workspace_leases(review)
            self._from_thread(self._replay_step, progress)

        try:
            store = open_store(None, review.repo.common_dir)
            try:
                outcome = replay(review, store, ReplayOptions(cancel=self.replay_cancel, seeds=self.replay_seeds), step)
            finally:
                store.close()
            record_decisions(review.repo.common_dir, list(outcome.decisions.values()))
            message = f"{counted(len(outcome.sheets), 'sheet')} in {outcome.artifacts}"
            failed = None
        except RelconsoleError as exc:
            failed, message = exc.one_line(), ""
        except Exception as exc:
            failed, message = f"{type(exc).__name__}: {exc}", ""
        load_workspace_leases(review)
        self._from_thread(self._replay_finished, review, failed, message)

    def _from_thread(self, callback, *args, **kwargs) -> bool:
        """Queue ``callback(*args)`` for the UI thread without waiting for it; False when the
        console is closing. ``call_from_thread`` waits, and a worker waiting on a console
        whose terminal went away (SIGHUP) never returned: its thread held the process at
        exit, spinning on the dead terminal at full CPU."""
        try:
            return self.call_later(callback, *args, **kwargs)
        except RuntimeError:  # the event loop is closed
            return False

    def _replay_step(self, step) -> None:
        if step.done == 1:
            self.refresh_workspace_items()
        self.query_one("#progress", ProgressBar).update(total=step.total, progress=step.done)
        self.query_one("#status", StatusLine).show_decision(
            self.review, f"replaying {step.done}/{step.total}: {literal(step.label)}")

    def _replay_finished(self, review: Review, failed: str | None, message: str) -> None:
        self.busy_reasons.discard("replay")
        current = self.review
        if current is not None and current is not review:  # reloaded meanwhile (a commit)
            for rid, replayed in review.replays.items():
                if current.identities.get(rid) == review.identities.get(rid):
                    current.replays[rid] = replayed
            current.workspace_leases, current.lease_store_note = review.workspace_leases, review.lease_store_note
        self.query_one("#progress").display = False
        if failed:
            self.notify(failed, title="replay aborted", severity="error", markup=False, timeout=30)
        else:
            self.notify(message, title="replay done", markup=False)
        if self.review is not None:
            self.update_relations(list(review.replays))
            self.refresh_workspace_items()
            if not failed:
                self._show_freezable(review)
            self.refresh_status()
            self.show_detail()

    def _where(self) -> tuple[str | None, str | None]:
        """(focused pane kind, its highlighted item id): where the reviewer is."""
        pane = self.focused_pane()
        return (pane.kind, pane.highlighted_id) if pane is not None else (None, None)

    def _show_freezable(self, review: Review) -> None:
        """After a replay whose table row allows a freeze (§8 row 8), put the Relations cursor on
        that relation, so ``f`` is the next key; only when the reviewer has not moved since ``b``
        (a cursor they moved meanwhile stays where they put it)."""
        freezable = [rid for rid in review.touched_relations()
                     if rid in review.replays and review.replays[rid].decision.decision == "freeze"]
        if not freezable or self._where() != getattr(self, "_replay_started_at", None) or \
                self.screen is not self.screen_stack[0]:
            return
        pane = self.pane("relations")
        index = next((n for n, item in enumerate(pane.options) if item.id == f"r:{freezable[0]}"), None)
        if index is None:
            return
        self.action_focus_pane("relations")
        pane.highlighted = index

    def action_gate_health(self) -> None:
        """``s``: the gate-health view (counts per §8 row from the local decision history)."""
        if self.review is not None:
            self.gate_health(self.review.repo.common_dir)

    @work(thread=True, exclusive=True, group="stats", description="stats")
    def gate_health(self, git_dir: str) -> None:
        result = gatehealth.stats(git_dir, days=7)
        self._from_thread(self.show_view, views.gate_health_view(result))

    def action_merge_checklist(self) -> None:
        """``m``: review flags and the merge checklist (git is read in a worker)."""
        if self.review is not None:
            self.merge_checklist(self.review)

    @work(thread=True, exclusive=True, group="checklist", description="checklist")
    def merge_checklist(self, review) -> None:
        items = checklist.merge_checklist(review)
        self._from_thread(self.show_view, views.checklist_view(review, items))

    # --- quarantine decisions -----------------------------------------------------------

    def _targets(self) -> list[str]:
        if self.marked:
            return sorted(self.marked)
        oid = self.pane("quarantine").highlighted_id
        return [oid] if oid and views.is_decidable(oid) else []

    def action_mark(self) -> None:
        oid = self.pane("quarantine").highlighted_id
        if not oid or not views.is_decidable(oid):
            return
        self.marked ^= {oid}
        self.pane("quarantine").action_cursor_down()
        self.refresh_quarantine()

    def refresh_quarantine(self) -> None:
        self.show_items("quarantine", views.quarantine_options(self.review, self.marked, self.pending),
                        "quarantine is empty")
        self.show_detail()

    def action_accept(self) -> None:
        """Mark the targets as pending accepts (``c`` commits them); rejected ones refuse."""
        targets = self._targets()
        if not targets or self.review is None:
            return
        for oid in targets:
            reasons = views.rejection(self.review, oid)
            state = views.confirm_state(self.review, oid)
            if not reasons and state is not None and state.state == DISCARDED:
                reasons = f"discarded: {state.reason}"
            if reasons:
                self.notify(f"{views.item_label(self.review, oid)} is rejected: {reasons}",
                            title="cannot accept", severity="error", markup=False)
                return
        if len(targets) == 1 and self.pending.get(targets[0]) == "accept":
            self.pending.pop(targets[0])
            self.overrides.discard(targets[0])
            self.refresh_quarantine()
            return
        unconfirmed = [o for o in targets if o.startswith("c:") and o not in self.overrides
                       and not views.sound_confirmation(self.review, views.confirm_state(self.review, o))]
        if unconfirmed:  # one at a time: each override is its own second confirmation
            oid = unconfirmed[0]

            def override() -> None:
                self.overrides.add(oid)
                self.action_accept()

            def confirmed() -> None:  # the dialog's o: a second replay confirmed the candidate
                others = set(unconfirmed[1:])
                ready = [o for o in targets if o not in others]
                for ready_oid in ready:
                    self.pending[ready_oid] = "accept"
                self.marked -= set(ready)
                self.refresh_quarantine()

            self.ask_override(oid, views.confirm_state(self.review, oid), override, confirmed)
            return
        for oid in targets:
            self.pending[oid] = "accept"
        self.marked.clear()
        self.refresh_quarantine()

    def action_delete(self) -> None:
        targets = self._targets()
        if not targets or self.review is None:
            return
        question = views.describe_change(self.review, targets, "delete")
        self.push_screen(ConfirmScreen("Delete from quarantine?", question),
                         lambda yes: yes and self._commit_asked("delete", targets, self.review))

    def action_commit(self) -> None:
        accepts = [oid for oid, what in self.pending.items() if what == "accept"]
        if not accepts or self.review is None:
            self.notify("no pending catalog changes: accept candidates or rows with a first",
                        severity="information")
            return
        question = views.describe_change(self.review, accepts, "accept", self.overrides)
        self.push_screen(ConfirmScreen("Commit catalog changes?", question),
                         lambda yes: yes and self._commit_asked("accept", accepts, self.review))

    def _commit_asked(self, what: str, oids: list[str], asked_on: Review) -> None:
        """The commit a dialog asked about, for the same items. A seed row's item id is its
        line, which a commit moves: while a commit or reload is in flight this waits for the
        reloaded review, and the ids are carried to it (``views.moved_items``) before committing."""
        if self.busy_reasons & {"git", "load"}:
            self._after_load.append(lambda: self._commit_asked(what, oids, asked_on))
            return
        if self.review is None:
            return
        if self.review is not asked_on:
            moved = views.moved_items(asked_on, self.review)
            oids = [moved[o] for o in oids if o in moved]
            if not oids:
                return
        self._commit(what, oids)

    def _commit(self, what: str, oids: list[str]) -> None:
        candidates, rows = views.split_targets(oids)
        review = self.review
        if what == "accept":
            overridden = [c for c in candidates if "c:" + c in self.overrides]

            def accept_and_hint():  # in the git worker: the hint reads the new catalog from git
                result = actions.accept(review, candidates, rows, unconfirmed_ok=overridden)
                for hint in actions.unowned_hints(review, candidates):
                    self._from_thread(self.notify, hint, title="accepted relation runs only with --all",
                                      severity="warning", markup=False, timeout=30)
                return result
            self.start_commit(accept_and_hint, oids)
        else:
            self.start_commit(lambda: actions.delete(review, candidates, rows), oids)

    def start_commit(self, make_commit, decided: list[str] | None = None) -> None:
        """Run ``make_commit`` (returns a CommitResult) in the git worker."""
        self.busy_reasons.add("git")
        self.commit_in_background(make_commit, decided)

    @work(thread=True, exclusive=True, group="git", description="git")
    def commit_in_background(self, make_commit, decided: list[str] | None = None) -> None:
        """Make one commit off the UI thread; a refusal is a notification, not a crash."""
        try:
            result = make_commit()
        except RelconsoleError as exc:
            self._from_thread(self._commit_failed, exc.one_line())
            return
        except Exception as exc:
            self._from_thread(self._commit_failed, f"{type(exc).__name__}: {exc}")
            return
        self._from_thread(self._committed, result, decided or [])

    def _commit_failed(self, message: str) -> None:
        self.busy_reasons.discard("git")
        self._after_load.clear()  # a commit asked after this one was asked on what it would have changed
        self.notify(message, title="no commit made", severity="error", markup=False, timeout=30)

    def next_undecided(self, decided: list[str]) -> str | None:
        """The Quarantine item the cursor goes to when ``decided`` leave it (issue 18): when
        the highlighted item is one of them, the next shown item still to decide (else the
        one above); None when the cursor is elsewhere and may stay."""
        pane = self.pane("quarantine")
        here, shown = pane.highlighted_id, [item.id for item in pane.options]
        if here not in decided or here not in shown:
            return None
        at, gone = shown.index(here), set(decided)
        left = [(n, oid) for n, oid in enumerate(shown) if views.is_decidable(oid) and oid not in gone]
        after = [oid for n, oid in left if n > at]
        before = [oid for n, oid in left if n < at]
        return after[0] if after else (before[-1] if before else None)

    def _committed(self, result, decided: list[str]) -> None:
        self.cursor_after_reload = self.next_undecided(decided)
        for oid in decided:
            self.pending.pop(oid, None)
            self.marked.discard(oid)
            self.overrides.discard(oid)
        self.notify(f"{result.sha[:10]} on {result.branch}: {result.message}\n" + "\n".join(result.paths),
                    title=f"{result.kind} commit made", markup=False)
        self.reload()
        self.busy_reasons.discard("git")

    # --- freeze and lease renewal --------------------------------------------------------

    def action_freeze(self) -> None:
        """``f``: a freeze needs the table's row 8 (a replay); without a sheet, an explicit override."""
        review = self.review
        rid = views.relation_of(self.pane("relations").highlighted_id)
        if review is None or rid is None:
            return
        if "replay" in self.busy_reasons:
            self.notify("a replay is running: its decision says whether this miss may be frozen",
                        title="cannot freeze yet", severity="warning")
            return
        self._start_proposal(review, rid, False)

    def _start_proposal(self, review: Review, rid: str, without_replay: bool) -> None:
        self.busy_reasons.add("evidence")
        self.propose_freeze(review, rid, without_replay)

    @work(thread=True, exclusive=True, group="evidence", description="evidence")
    def propose_freeze(self, review: Review, rid: str, without_replay: bool) -> None:
        """The proposed row, its replay sheet read from disk and fenced in its lease store,
        off the UI thread; no sheet at all asks for the override."""
        try:
            row = actions.proposed_freeze(review, rid, without_replay=without_replay)
        except freezeevidence.NoReplayEvidence:
            self._from_thread(self._ask_override, rid)
            return
        except RelconsoleError as exc:
            self._from_thread(self._cannot_freeze, exc.one_line())
            return
        self._from_thread(self._freeze_form, review, rid, row)

    def _ask_override(self, rid: str) -> None:
        self.busy_reasons.discard("evidence")
        self.push_screen(ConfirmScreen("Freeze without a replay?", views.override_question(rid)),
                         lambda yes: yes and self._start_proposal(self.review, rid, True))

    def _cannot_freeze(self, message: str) -> None:
        self.busy_reasons.discard("evidence")
        self.notify(message, title="cannot freeze", severity="error", markup=False)

    def _freeze_form(self, review: Review, rid: str, row: dict) -> None:
        self.busy_reasons.discard("evidence")
        policy = review.catalog.get(rid).freeze

        def check(values: dict) -> str | None:
            return views.freeze_problem(review, row, values)

        body = views.freeze_body(review, row)
        fields = [("reason", "Reason (required: why is this miss tolerable for now?)", "", "flaky because …"),
                  ("expires", f"Expires (at most {counted(policy.max_days, 'day')} from today)", row["expires"], "YYYY-MM-DD")]
        self.push_screen(FormScreen(f"Commit a freeze for {rid}", body, fields, check),
                         lambda values: values and self._freeze(row, values))

    def _freeze(self, row: dict, values: dict) -> None:
        final = dict(row, reason=values["reason"].strip(), expires=values["expires"].strip())
        review = self.review
        self.start_commit(lambda: actions.commit_freeze(review, final))

    def action_renew(self) -> None:
        review = self.review
        oid = self.pane("leases").highlighted_id
        if oid and oid.startswith("w:"):
            self.notify("a workspace lease is renewed by its holder while it works "
                        "(relconsole workspace renew --workspace ID --holder NAME)", title="not a dataset lease")
            return
        status = views.lease_of(review, oid) if review else None
        if status is None or status.lease is None:
            return
        limit = review.today + dt.timedelta(days=review.layout.renew_max_days)
        blocker = views.renewal_blocker(review, status, limit)
        if blocker:
            self.notify(blocker, title=f"cannot renew {status.id}", severity="error", markup=False, timeout=30)
            return

        def check(values: dict) -> str | None:
            return views.renewal_problem(review, status, values.get("until", ""))

        body = views.renewal_body(review, status, limit)
        fields = [("until", "New expiry", limit.isoformat(), "YYYY-MM-DD")]
        self.push_screen(FormScreen(f"Renew lease {status.id}", body, fields, check),
                         lambda values: values and self._renew(status.id, values["until"]))

    def _renew(self, lease_id: str, until: str) -> None:
        review = self.review
        self.start_commit(lambda: actions.renew_lease(review, lease_id, dt.date.fromisoformat(until)))

    # --- acknowledging a review flag ------------------------------------------------------

    def action_acknowledge(self) -> None:
        """``w``: pick a review flag (the highlighted path's first) and type why it is fine."""
        review = self.review
        if review is None or not review.flags:
            self.notify("this review has no review flag", title="nothing to acknowledge")
            return
        pane = self.focused_pane()
        path = views.touched_path(review, pane.highlighted_id) if pane is not None and pane.kind == "touched" else None
        self.flags_to_acknowledge(review, path)

    @work(thread=True, exclusive=True, group="evidence", description="flags")
    def flags_to_acknowledge(self, review: Review, path: str | None) -> None:
        """The flags' ids read from git off the UI thread, then the form."""
        open_flags = [(review.flag_id(f), f) for f in review.flags if review.acknowledgement(f) is None]
        self._from_thread(self._acknowledge_form, review, path, open_flags)

    def _acknowledge_form(self, review: Review, path: str | None, open_flags: list) -> None:
        if not open_flags:
            self.notify("every review flag of this review is acknowledged", title="nothing to acknowledge")
            return
        first = next((fid for fid, f in open_flags if f.path == path), open_flags[0][0])

        def check(values: dict) -> str | None:
            return views.acknowledge_problem(open_flags, values)

        fields = [("flag", "Flag id (from the list above)", first, "a flag id"),
                  ("reason", "Reason (required: what you checked in the flagged code)", "", "read it: …")]
        self.push_screen(FormScreen("Acknowledge a review flag", views.acknowledge_body(open_flags), fields, check),
                         lambda values: values and self.start_commit(
                             lambda: actions.acknowledge(review, values["flag"], values["reason"])))

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
