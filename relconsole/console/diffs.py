"""``v`` on a touched Python path: its diff, merge base -> HEAD, each changed line marked by the
relations whose calls ran it (``✓ id``), ``◌`` where none did, and ``⚑`` where a review flag
points, with the flag's level (SPEC §3 covered means exercised, §9). The marks are
``diffview``'s; git is read in a thread worker, never on the UI thread.

``DiffViews`` is mixed into the App; ``diff_text`` builds the view's text, literally.
"""

from __future__ import annotations

from rich.text import Text
from textual import work

from relconsole.console import views
from relconsole.console.render import lit
from relconsole.console.screens.detail import DetailView
from relconsole.engine.gate import diffview
from relconsole.engine.gate.review import Review

MARK_WIDTH = 24  # cells of the marks column: "✓ relation.id, …" cut to fit
KIND_STYLE = {"+": "green", "-": "red", " ": ""}


class DiffViews:
    """Action ``v``."""

    def action_view_diff(self) -> None:
        """``v``: the highlighted touched path's diff with what ran each changed line."""
        pane = self.focused_pane()
        review = self.review
        path = views.touched_path(review, pane.highlighted_id) if review is not None and pane is not None \
            and pane.kind == "touched" else None
        if path is None:
            self.notify("highlight a touched path first (pane 1)", title="no path")
            return
        self.file_diff(review, path)

    @work(thread=True, exclusive=True, group="diff", description="diff")
    def file_diff(self, review: Review, path: str) -> None:
        try:
            hunks = diffview.file_diff(review, path)
        except Exception as exc:  # git could not diff it: said, never a crash
            self._from_thread(self.notify, f"could not read the diff of {path}: {exc}", severity="error",
                              markup=False)
            return
        self._from_thread(self.show_view, DetailView(diff_header(review, path), body=diff_text(hunks)))


def diff_header(review: Review, path: str) -> Text:
    text = Text.assemble(("diff ", "bold"), lit(path, "bold"),
                         (f"  merge base {review.merge_base[:8]} -> head {review.head_sha[:8]}", "dim"))
    text.append("\n✓ the relations whose calls ran the line on HEAD · ◌ a changed statement no relation ran · "
                "⚑ a review flag (its level)", "dim")
    if not review.results and not getattr(review, "recorded", {}):
        text.append("\nno relation has run yet: r runs them, then the marks show what ran", "yellow")
    return text


def _mark(line: diffview.DiffLine) -> tuple[str, str]:
    """(the marks column's text, its style) of one line."""
    if line.flags:
        words = ", ".join(f"{name} [{level}]" for name, level in line.flags)
        return f"⚑ {words}", "bold yellow" if any(lv == "block" for _, lv in line.flags) else "yellow"
    if line.ran:
        return "✓ " + ", ".join(line.ran), "green"
    if line.unexercised:
        return "◌ no relation ran it", "bold red"
    return "", ""


def diff_text(hunks: list[diffview.Hunk]) -> Text:
    """The hunks as a reviewer reads them in ``git diff``, a marks column on the left."""
    text = Text()
    if not hunks:
        return Text("no change git shows as text (a binary file, or a mode change)", "dim")
    for hunk in hunks:
        text.append_text(lit(hunk.header, "cyan"))
        text.append("\n")
        for line in hunk.lines:
            mark, style = _mark(line)
            cut = mark if len(mark) <= MARK_WIDTH else mark[:MARK_WIDTH - 1] + "…"
            text.append(f"{cut:<{MARK_WIDTH}} ", style)
            number = line.new if line.new is not None else line.old
            text.append(f"{number:>5} " if number is not None else "      ", "dim")
            text.append_text(lit(line.kind + line.text, KIND_STYLE[line.kind]))
            text.append("\n")
    return text
