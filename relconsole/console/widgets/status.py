"""The status line: the PR's decision, the table row that fired, gaps, flags, refs."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from relconsole.console.render import DECISION_STYLE, lit
from relconsole.engine import docsref
from relconsole.engine.literal import counted

# whose a decision's reason is to fix, when it is not the patch's
WHOSE = {"oracle_fault": "the catalog keeper's to fix, not the patch's",
         "environment": "the machine's: install or declare the module, not the patch's",
         "intermittent_on_base": "missed on the merge base too: a replay ({replay}) classifies it"}


class StatusLine(Static):
    """Shows one review's headline; ``show_*`` methods only build Text (no markup)."""

    def show_decision(self, review, running: str = "") -> None:
        """Render the decision line for ``review`` (an engine Review)."""
        decision = review.decision()
        text = Text()
        if review.oracle_from == "HEAD":
            text.append(" ⚠ ORACLE FROM HEAD (the patch's own) ", "reverse bold yellow")
            text.append(" ")
        if review.errors:
            text.append(" BAD INPUT ", "reverse bold red")
            text.append(" exit 5 · ")
            text.append_text(lit(review.errors[0].one_line(), "red"))
            if len(review.errors) > 1:
                text.append(f" (+{len(review.errors) - 1} more)", "red")
            text.append("\n")
            self._refs(text, review, running)
            return
        text.append(f" {decision.decision.upper()} ", f"reverse {DECISION_STYLE[decision.decision]}")
        row = f"decision table row {decision.row}: " if decision.row else ""
        text.append(f" {row}{decision.reason}", "bold")
        if decision.reason in WHOSE:
            text.append(f" ({WHOSE[decision.reason].format(replay=self._key('replay'))})", "bold")
        gaps = len(review.gaps())
        if gaps:
            text.append(f" ✗ {counted(gaps, 'unowned path')} (a gap: exit 2 unless worse)", "bold red")
        unexercised = review.unexercised(compute=False)  # made on the run's thread
        if unexercised:
            gap = review.layout.unexercised == "gap"
            text.append(f" ◌ {counted(len(unexercised), 'file')} with changed lines no relation ran"
                        + (" (a gap: exit 2 unless worse)" if gap else ""), "bold red" if gap else "yellow")
        standing = [f for f in review.flags if review.standing(f)]
        warned = [f for f in review.flags if review.flag_level(f) == "warn" and review.acknowledgement(f) is None]
        if standing:
            text.append(f" ⚑ {len(standing)} review flag{'s' if len(standing) > 1 else ''} ({self._key('merge_checklist')})",
                        "bold yellow")
        if review.split:
            text.append(f" ✗ {len(review.split)} mixed commit path{'s' if len(review.split) > 1 else ''} "
                        f"({docsref.doc_path('commits')})", "bold red")
        if warned:
            text.append(f" · {len(warned)} flag warning{'s' if len(warned) > 1 else ''}", "yellow")
        acknowledged = len(review.flags) - len(standing) - len(warned)
        if acknowledged:
            text.append(f" ✓ {acknowledged} acknowledged", "green")
        if decision.relation_id:
            text.append(" · ")
            text.append_text(lit(decision.relation_id))
        if decision.detail:
            text.append(" · ")
            text.append_text(lit(decision.detail, "dim"))
        text.append("\n")
        self._refs(text, review, running, decision.row)

    def _key(self, binding_id: str) -> str:
        """The first key in force for a binding (the reviewer's keymap may have moved it)."""
        keys = getattr(self.app, "active_keys", {}).get(binding_id) or ["?"]
        return keys[0]

    def _refs(self, text: Text, review, running: str, row: int | None = None) -> None:
        """The second line: the oracle's and head's refs and commits, the merge base, today;
        then where the decision table row that fired is explained (``docsref``)."""
        oracle = review.head_ref if review.oracle_from == "HEAD" else review.base_ref
        text.append_text(lit(f" oracle {oracle}@{review.oracle_sha[:8]} · head {review.head_ref}"
                             f"@{review.head_sha[:8]} · merge base {review.merge_base[:8]}"
                             f" · today {review.today.isoformat()}", "dim"))
        if row:
            text.append(f" · row {row}: {docsref.doc_path('decision-table', f'row-{row}')}", "dim")
        if running:
            text.append(f" · {running}", "italic yellow")
        self.update(text, layout=False)  # a fixed height: no relayout of the screen

    def show_error(self, message: str) -> None:
        """Render a fatal load error (one line, literal)."""
        self.update(Text.assemble((" ABORT ", "reverse bold magenta"), " ", lit(message)), layout=False)

    def show_text(self, message: str) -> None:
        """Render a progress message while there is no review to show (literal)."""
        self.update(lit(message, "italic"), layout=False)
