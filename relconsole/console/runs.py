"""``r``: running the touched relations in the background (SPEC §7, §11): each result
swaps its own Relations item as it ends, and the status line, the detail strip and a filtered
pane catch up at most every STATUS_EVERY_SECONDS so keys stay fast.

``RelationRuns`` is mixed into the App; ``q`` cancels a run through ``run_cancel``.
"""

from __future__ import annotations

from textual import work
from textual.css.query import NoMatches
from textual.widgets import ProgressBar

from relconsole.console import views
from relconsole.console.messages import RelationsChanged
from relconsole.engine.gate.review import Review
from relconsole.engine.gate.reviewrun import RunCancelled, run_review
from relconsole.engine.relations.pool import Cancel

STATUS_EVERY_SECONDS = 0.2  # while relations finish, the status line and filtered panes catch up this often


class RelationRuns:
    """Action ``r`` and the run worker's reports."""

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
        touched = None
        try:
            review.unexercised()  # the changed lines no relation ran: git reads, here on the worker
            touched = views.touched_items(review)
        except Exception as exc:
            self._from_thread(self.notify, f"could not read the changed lines: {exc}", severity="error", markup=False)
        self._from_thread(self._run_finished, review, touched)

    def _relation_done(self, review: Review, result) -> None:
        self.running.discard(result.relation_id)
        if self.review is not review and self.review is not None:
            self.review.results[result.relation_id] = result
        else:
            review.results[result.relation_id] = result
        self.query_one("#progress", ProgressBar).advance(1)
        self.update_relations([result.relation_id], refilter=False)  # one row, not 5,000
        self._catch_up_soon()
        self.post_message(RelationsChanged((result.relation_id,), "run"))  # its open view follows

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

    def _run_finished(self, review: Review, touched=None) -> None:
        self.collector.settled()  # the results stay as long as the review
        if touched is not None and self.review is review:
            self.show_items("touched", touched)
        unreported = list(self.running)  # a run that failed part-way: these show "running" still
        self.running.clear()
        self.busy_reasons.discard("run")
        self.query_one("#progress").display = False
        self.update_relations(unreported)
        if self.is_filtered("relations"):
            self.show_items("relations")
        self.refresh_status()

