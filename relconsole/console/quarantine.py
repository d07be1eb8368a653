"""The quarantine's decisions in the console (SPEC §10): ``space`` marks, ``a`` accepts
(pending until ``c``; an unconfirmed candidate asks for an override first), ``d`` deletes
(asks, then one quarantine: commit), ``c`` commits the pending accepts as one catalog: commit.

``QuarantineWorkflow`` is mixed into the App; the commits run in the git worker
(``commits.CommitWorker``).
"""

from __future__ import annotations

from relconsole.console import questions, views
from relconsole.console.screens.confirm import ConfirmScreen
from relconsole.engine.gate import actions, ownerhints
from relconsole.engine.gate.confirmstate import DISCARDED
from relconsole.engine.gate.review import Review


class QuarantineWorkflow:
    """Actions ``space``, ``a``, ``d`` and ``c`` on the Quarantine pane."""

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
        question = questions.describe_change(self.review, targets, "delete")
        self.push_screen(ConfirmScreen("Delete from quarantine?", question),
                         lambda yes: yes and self._commit_asked("delete", targets, self.review))

    def action_commit(self) -> None:
        accepts = [oid for oid, what in self.pending.items() if what == "accept"]
        if not accepts or self.review is None:
            self.notify("no pending catalog changes: accept candidates or rows with a first",
                        severity="information")
            return
        question = questions.describe_change(self.review, accepts, "accept", self.overrides)
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
                for hint in ownerhints.unowned_hints(review, candidates):
                    self._from_thread(self.notify, hint, title="accepted relation runs only with --all",
                                      severity="warning", markup=False, timeout=30)
                return result
            self.start_commit(accept_and_hint, oids)
        else:
            self.start_commit(lambda: actions.delete(review, candidates, rows), oids)

