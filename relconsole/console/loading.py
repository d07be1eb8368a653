"""Loading the review into the console (SPEC §11): the Review built in a thread worker, what
survives a reload (results, replays, marks and pending accepts follow their items), the panes
and the status line rendered from it, and the workspace leases listed again every few seconds.

``ReviewLoading`` is mixed into the App; the worker reports back through ``_from_thread``.
"""

from __future__ import annotations

import time

from textual import work
from textual.widgets import ProgressBar

from relconsole.console import views
from relconsole.console.replay import saved_replays
from relconsole.console.widgets.status import StatusLine
from relconsole.engine.errors import RelconsoleError
from relconsole.engine.gate.bite.bitecache import cached_verdict
from relconsole.engine.gate.confirmstate import load_candidate_states
from relconsole.engine.gate.replay.replay import load_workspace_leases
from relconsole.engine.gate import importrun
from relconsole.engine.gate.review import Review, load_review
from relconsole.engine.literal import counted, literal

HASH_PROGRESS_MIN_BYTES = 4 << 20  # corpora smaller than this hash too fast to show a bar


class ReviewLoading:
    """Loading and reloading the Review, and rendering every pane from it."""

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

    # --- loading ----------------------------------------------------------------------

    @work(thread=True, exclusive=True, group="load", description="load")
    def load(self, first: bool = False) -> None:
        """Build the Review off the UI thread; on failure show the error, never crash."""
        try:
            review = load_review(self.repo_path, self.base_ref, self.head_ref, self.today,
                                 self.oracle_from, hash_progress=self._hash_reporter())
            if not review.errors:  # ownership follows imports: the record is made here when missing, as bind does
                importrun.ensure(review)
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
