"""The review's checks beyond its relations: ``m`` the review flags and the merge checklist
(SPEC §9), ``w`` acknowledging a review flag (one review: commit), ``s`` gate health (how often
each §8 row fired in the last seven days).

``ReviewChecks`` is mixed into the App; git is read in thread workers.
"""

from __future__ import annotations

from textual import work

from relconsole.console import questions, reports, views
from relconsole.console.screens.form import FormScreen
from relconsole.engine.gate import actions
from relconsole.engine.gate import checklist
from relconsole.engine.gate import gatehealth
from relconsole.engine.gate.review import Review


class ReviewChecks:
    """Actions ``m``, ``w`` and ``s``."""

    def action_gate_health(self) -> None:
        """``s``: the gate-health view (counts per §8 row from the local decision history)."""
        if self.review is not None:
            self.gate_health(self.review.repo.common_dir)

    @work(thread=True, exclusive=True, group="stats", description="stats")
    def gate_health(self, git_dir: str) -> None:
        result = gatehealth.stats(git_dir, days=7)
        self._from_thread(self.show_view, reports.gate_health_view(result))

    def action_merge_checklist(self) -> None:
        """``m``: review flags and the merge checklist (git is read in a worker)."""
        if self.review is not None:
            self.merge_checklist(self.review)

    @work(thread=True, exclusive=True, group="checklist", description="checklist")
    def merge_checklist(self, review) -> None:
        items = checklist.merge_checklist(review)
        self._from_thread(self.show_view, reports.checklist_view(review, items))

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
        open_flags = [(review.flag_id(f), f) for f in review.flags if review.standing(f)]
        self._from_thread(self._acknowledge_form, review, path, open_flags)

    def _acknowledge_form(self, review: Review, path: str | None, open_flags: list) -> None:
        if not open_flags:
            self.notify("every review flag of this review is acknowledged", title="nothing to acknowledge")
            return
        first = next((fid for fid, f in open_flags if f.path == path), open_flags[0][0])

        def check(values: dict) -> str | None:
            return questions.acknowledge_problem(open_flags, values)

        fields = [("flag", "Flag id (from the list above)", first, "a flag id"),
                  ("reason", "Reason (required: what you checked in the flagged code)", "", "read it: …")]
        self.push_screen(FormScreen("Acknowledge a review flag", questions.acknowledge_body(open_flags), fields, check),
                         lambda values: values and self.start_commit(
                             lambda: actions.acknowledge(review, values["flag"], values["reason"])))
