"""``b``: replaying the missed relations against the merge base (SPEC §7, §8), and ``f``:
the freeze such a replay allows (§6, §8 row 8), proposed from the saved replay sheet and
committed through a form the reviewer fills in.

``ReplayWorkflow`` is mixed into the App; the replay holds a workspace lease (§5) while it
runs and ``q`` cancels it through ``replay_cancel``.
"""

from __future__ import annotations

from textual import work
from textual.widgets import ProgressBar

from relconsole.console import questions, views
from relconsole.console.messages import RelationsChanged
from relconsole.console.screens.confirm import ConfirmScreen
from relconsole.console.screens.form import FormScreen
from relconsole.console.widgets.status import StatusLine
from relconsole.engine.errors import RelconsoleError
from relconsole.engine.gate import actions, freezeevidence
from relconsole.engine.gate.replay.replay import SHEET_SUFFIX, default_artifacts, load_workspace_leases, replay, to_replay
from relconsole.engine.gate.replay.replayoptions import ReplayOptions, Shard
from relconsole.engine.gate.report import record_decisions
from relconsole.engine.gate.review import Review
from relconsole.engine.gate.wslease.wslease import open_store
from relconsole.engine.relations.pool import Cancel
from relconsole.engine.literal import counted, literal
from relconsole.engine.repo.worktrees import slug


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
class ReplayWorkflow:
    """Actions ``b`` (replay) and ``f`` (freeze a missed relation)."""

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
        self.post_message(RelationsChanged(tuple(review.replays), "replay"))  # an open view follows

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

    # --- freeze of a missed relation (§6) ---------------------------------------------------

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
        self.push_screen(ConfirmScreen("Freeze without a replay?", questions.override_question(rid)),
                         lambda yes: yes and self._start_proposal(self.review, rid, True))

    def _cannot_freeze(self, message: str) -> None:
        self.busy_reasons.discard("evidence")
        self.notify(message, title="cannot freeze", severity="error", markup=False)

    def _freeze_form(self, review: Review, rid: str, row: dict) -> None:
        self.busy_reasons.discard("evidence")
        policy = review.catalog.get(rid).freeze

        def check(values: dict) -> str | None:
            return questions.freeze_problem(review, row, values)

        body = questions.freeze_body(review, row)
        fields = [("reason", "Reason (required: why is this miss tolerable for now?)", "", "flaky because …"),
                  ("expires", f"Expires (at most {counted(policy.max_days, 'day')} from today)", row["expires"], "YYYY-MM-DD")]
        self.push_screen(FormScreen(f"Commit a freeze for {rid}", body, fields, check),
                         lambda values: values and self._freeze(row, values))

    def _freeze(self, row: dict, values: dict) -> None:
        final = dict(row, reason=values["reason"].strip(), expires=values["expires"].strip())
        review = self.review
        self.start_commit(lambda: actions.commit_freeze(review, final))

