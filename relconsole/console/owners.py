"""The owners' workflows in the console (SPEC §4, §10): a candidate's second replay, a
lease's re-hash, a lease's renewal and its renewal history.

``OwnerWorkflows`` is mixed into the App. Every step that touches git, hashes a corpus
or runs a subject runs in a thread worker; the UI thread only pushes screens and
renders what the worker reports. Text from the repository is shown literally.
"""

from __future__ import annotations

import datetime as dt

from textual import work
from textual.widgets import ProgressBar

from relconsole.console import questions, reports, views
from relconsole.console.screens.confirm import ALSO, ConfirmScreen
from relconsole.console.itemtext import lease_text
from relconsole.console.screens.detail import DetailView
from relconsole.console.screens.form import FormScreen
from relconsole.console.widgets.status import StatusLine
from relconsole.engine.gate import actions
from relconsole.engine.gate.acceptnote import base_miss_advice
from relconsole.engine.gate.confirm import confirm_candidate
from relconsole.engine.errors import RelconsoleError
from relconsole.engine.gate.leasehistory import lease_history
from relconsole.engine.oracle.rehash import rehash_preview
from relconsole.engine.literal import literal
from relconsole.engine.relations.pool import Cancel
from relconsole.engine.gate.wslease.wslease import open_store

DIGEST_PREFIX = 8  # hex characters of the new digest a re-hash confirmer types


class OwnerWorkflows:
    """Actions ``o`` (confirm a candidate), ``h`` (re-hash a lease), ``n`` (renew a lease) and
    the lease detail."""

    # --- second replay of a candidate (§10) ---------------------------------------------

    def action_confirm_candidate(self, oid: str | None = None, then=None) -> None:
        """``o``: replay the highlighted candidate (or ``oid``) twice in clean worktrees
        (background); ``then()`` (from the accept dialog's ``o``: accept what ``a`` was
        pressed on) runs when the replay confirms it soundly, with no miss on the base (§10)."""
        review = self.review
        oid = oid or self.pane("quarantine").highlighted_id
        candidate = views.candidate_of(review, oid) if review else None
        if candidate is None:
            self.notify("highlight a candidate relation (seed rows need no replay)", severity="information")
            return
        if not candidate.valid:
            self.notify(f"{candidate.id} is rejected: {'; '.join(candidate.reasons)}",
                        title="cannot confirm", severity="error", markup=False)
            return
        if self.busy_reasons & {"confirm", "replay"} or self.running:
            self.notify("a replay or run is in progress: wait for it to finish", severity="warning")
            return
        self.busy_reasons.add("confirm")
        self.after_confirm = then
        self.replay_cancel = Cancel()
        self._show_progress(f"second replay of {literal(candidate.id)}…")
        self.confirm_in_background(review, candidate.id)

    @work(thread=True, exclusive=True, group="confirm", description="confirm")
    def confirm_in_background(self, review, candidate_id: str) -> None:
        """Run ``confirm_candidate`` off the UI thread; failures become notifications."""
        def step(progress) -> None:
            self._from_thread(self._confirm_step, progress.step, progress.fraction)

        try:
            store = open_store(None, review.repo.common_dir)
            try:
                outcome = confirm_candidate(review, candidate_id, store, step, self.replay_cancel)
            finally:
                store.close()
        except RelconsoleError as exc:
            self._from_thread(self._confirm_finished, candidate_id, None, exc.one_line())
            return
        except Exception as exc:  # a notification beats a traceback for any surprise
            self._from_thread(self._confirm_finished, candidate_id, None, f"{type(exc).__name__}: {exc}")
            return
        self._from_thread(self._confirm_finished, candidate_id, outcome, None)

    def _confirm_step(self, step: str, fraction: float | None) -> None:
        bar = self.query_one("#progress", ProgressBar)
        bar.update(total=100 if fraction is not None else None, progress=round((fraction or 0) * 100))
        self.query_one("#status", StatusLine).show_decision(self.review, literal(step))

    def _confirm_finished(self, candidate_id: str, outcome, failed: str | None) -> None:
        self.busy_reasons.discard("confirm")
        self.query_one("#progress").display = False
        if failed:
            self.notify(failed, title=f"{candidate_id}: not confirmed", severity="error", markup=False, timeout=30)
        else:
            state = outcome.state
            sound = state.confirmed and not state.base_miss
            severity = "information" if sound else "warning"
            why = f"{state.base_miss}; {base_miss_advice(state)}" if state.confirmed and state.base_miss else state.reason
            lines = [f"{state.said}: {why}"] + outcome.notes
            if outcome.commit is not None:
                lines.append(f"{outcome.commit.sha[:10]} {outcome.commit.message.splitlines()[0]}")
            then = getattr(self, "after_confirm", None)
            if then is not None and state.confirmed and not state.base_miss:
                then()
                lines.append("marked for accept: c commits it")
            self.notify("\n".join(lines), title=f"second replay of {candidate_id}", severity=severity,
                        markup=False, timeout=20)
        self.after_confirm = None
        self.reload()  # a discard made a commit; states are re-read with the review

    # --- re-hash of a drifted lease (§4) --------------------------------------------------

    def action_rehash(self) -> None:
        """``h``: show old and new digest, size and mtime; the confirmer types the new digest."""
        review = self.review
        status = views.lease_of(review, self.pane("leases").highlighted_id) if review else None
        if status is None or status.lease is None:
            self.notify("highlight a dataset lease", severity="information")
            return
        if "rehash" in self.busy_reasons:
            return
        self.busy_reasons.add("rehash")
        self._show_progress(f"hashing the corpus of {literal(status.id)} as committed…")
        self.preview_in_background(review, status.id)

    @work(thread=True, exclusive=True, group="rehash", description="rehash")
    def preview_in_background(self, review, lease_id: str) -> None:
        try:
            preview, failed = rehash_preview(review, lease_id), None
        except RelconsoleError as exc:
            preview, failed = None, exc.one_line()
        self._from_thread(self._preview_ready, review, lease_id, preview, failed)

    def _preview_ready(self, review, lease_id: str, preview, failed: str | None) -> None:
        self.busy_reasons.discard("rehash")
        self.query_one("#progress").display = False
        self.refresh_status()
        if failed or preview.refusal:
            self.notify(failed or preview.refusal, title=f"cannot re-hash {lease_id}", severity="error",
                        markup=False, timeout=30)
            return
        new = preview.new_sha256

        def check(values: dict) -> str | None:
            typed = values.get("digest", "").strip().lower()
            if len(typed) < DIGEST_PREFIX or not new.startswith(typed):
                return f"type at least the first {DIGEST_PREFIX} characters of the NEW digest to confirm"
            return None

        fields = [("digest", f"Type the new digest's first {DIGEST_PREFIX} characters to confirm", "", new[:4] + "…")]
        self.push_screen(FormScreen(f"Re-hash lease {lease_id}?", questions.rehash_body(preview), fields, check),
                         lambda values: values and self.start_commit(
                             lambda: actions.rehash_lease(review, lease_id, new)))

    # --- renewal of a dataset lease (§4) ----------------------------------------------------

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
        blocker = questions.renewal_blocker(review, status, limit)
        if blocker:
            self.notify(blocker, title=f"cannot renew {status.id}", severity="error", markup=False, timeout=30)
            return

        def check(values: dict) -> str | None:
            return questions.renewal_problem(review, status, values.get("until", ""))

        body = questions.renewal_body(review, status, limit)
        fields = [("until", "New expiry", limit.isoformat(), "YYYY-MM-DD")]
        self.push_screen(FormScreen(f"Renew lease {status.id}", body, fields, check),
                         lambda values: values and self._renew(status.id, values["until"]))

    def _renew(self, lease_id: str, until: str) -> None:
        review = self.review
        self.start_commit(lambda: actions.renew_lease(review, lease_id, dt.date.fromisoformat(until)))


    # --- lease detail with its renewal history (§4) ----------------------------------------

    def open_lease_detail(self, status) -> None:
        """Enter on a dataset lease: its manifest, state and history from git log (worker)."""
        self.lease_detail_in_background(self.review, status)

    @work(thread=True, exclusive=True, group="history", description="history")
    def lease_detail_in_background(self, review, status) -> None:
        try:
            events, failed = lease_history(review, status.lease.id), None
        except RelconsoleError as exc:
            events, failed = [], exc.one_line()
        self._from_thread(self._lease_detail_ready, status, events, failed)

    def _lease_detail_ready(self, status, events, failed: str | None) -> None:
        history = reports.history_text(events, failed)  # in the scrolling body: it can be long
        self.show_view(DetailView(lease_text(status), body=history))

    # --- accept gating (§10): only confirmed candidates, or a recorded override --------------

    def ask_override(self, oid: str, state, then, confirmed=None) -> None:
        """A second confirmation before an unconfirmed candidate may be accepted: ``y`` runs
        ``then()`` (the override); ``o``, offered unless the candidate is confirmed already,
        runs its second replay and ``confirmed()`` if that confirms it."""
        title = ("Accept a candidate that misses on the base?" if state is not None and state.confirmed
                 else "Accept without a confirming second replay?")
        also = questions.CONFIRM_CHOICE if questions.offers_confirm(state) else None

        def answered(answer) -> None:
            if answer == ALSO:
                self.action_confirm_candidate(oid, then=confirmed)
            elif answer:
                then()
        self.push_screen(ConfirmScreen(title, questions.unconfirmed_question(self.review, oid, state), also), answered)

    def _show_progress(self, message: str) -> None:
        bar = self.query_one("#progress", ProgressBar)
        bar.update(total=None, progress=0)
        bar.display = True
        self.query_one("#status", StatusLine).show_decision(self.review, message)
