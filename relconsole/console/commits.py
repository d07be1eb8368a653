"""Every commit the console makes (SPEC §9) runs in one git worker: a refusal is a
notification, a commit reloads the review, and the decided quarantine items leave the pending
set, the Quarantine cursor moving to the next item still to decide (issue 18).

``CommitWorker`` is mixed into the App; the quarantine, freeze, renewal, re-hash and
acknowledgement workflows hand it a function that makes the commit.
"""

from __future__ import annotations

from textual import work

from relconsole.console import views
from relconsole.engine.errors import RelconsoleError


class CommitWorker:
    """``start_commit`` and what follows a commit."""

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
