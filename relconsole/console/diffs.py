"""``v`` on a touched Python path: its diff, merge base -> HEAD, each changed line marked by the
relations whose calls ran it (``✓ id``; ``✗ id`` when one of them missed, named first; ``+N``
when N more ran it), ``◌`` where none did, and ``⚑`` where a review flag points, with the
flag's level (SPEC §3 covered means exercised, §9); the footer of the diff screen lists every
relation of the line under the cursor. The marks are ``diffview``'s; git is read in a thread
worker, never on the UI thread.

``DiffViews`` is mixed into the App; ``diff_view`` builds the screen's rows, literally.
"""

from __future__ import annotations

from rich.text import Text
from textual import work

from relconsole.console import views
from relconsole.console.render import lit
from relconsole.console.screens.detail import DetailScreen
from relconsole.console.screens.diff import DiffScreen, DiffView
from relconsole.console.widgets.pane import PaneItem
from relconsole.engine.gate import diffview
from relconsole.engine.gate.review import Review
from relconsole.engine.literal import counted, one_line

MARK_WIDTH = 26  # cells of the marks column at most: "✗ relation.id +1", the name cut to fit
MARK_WIDTHS = ((100, 20), (120, MARK_WIDTH))  # (screens narrower than, at most); wider: WIDE_MARK_WIDTH
WIDE_MARK_WIDTH = 40
UNEXERCISED_MARK = "◌ no relation ran it"
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
        self.file_diff(review, path, self.size.width)

    @work(thread=True, exclusive=True, group="diff", description="diff")
    def file_diff(self, review: Review, path: str, screen_width: int) -> None:
        try:
            hunks = diffview.file_diff(review, path)
        except Exception as exc:  # git could not diff it: said, never a crash
            self._from_thread(self.notify, f"could not read the diff of {path}: {exc}", severity="error",
                              markup=False)
            return
        self._from_thread(self.show_diff, diff_view(review, path, hunks, screen_width))

    def show_diff(self, view: DiffView) -> None:
        """Open the diff screen on ``view`` (a detail or diff view on top is replaced)."""
        if isinstance(self.screen, (DetailScreen, DiffScreen)):
            self.switch_screen(DiffScreen(view))
        else:
            self.push_screen(DiffScreen(view))


def diff_header(review: Review, path: str) -> Text:
    text = Text.assemble(("diff ", "bold"), lit(path, "bold"),
                         (f"  merge base {review.merge_base[:8]} -> head {review.head_sha[:8]}", "dim"))
    text.append("\n✓ a relation ran the line on HEAD · ✗ and missed · +N more ran it · ◌ none ran it · "
                "⚑ a review flag · j/k: a line's relations, below", "dim")
    if not review.results and not getattr(review, "recorded", {}):
        text.append("\nno relation has run yet: r runs them, then the marks show what ran", "yellow")
    return text


def _lead(line: diffview.DiffLine) -> tuple[str, bool]:
    """(the relation the marks column names, whether it missed): a missed one first."""
    return (line.missed[0], True) if line.missed else (line.ran[0], False)


def gutter(line: diffview.DiffLine, width: int = MARK_WIDTH) -> tuple[str, str]:
    """(the marks column's text, at most ``width`` cells, and its style) of one line: its
    flags; else the relation that ran it, one that missed first (``✗``), and ``+N`` for the
    N more that ran it, the name cut to keep the count; else ``◌`` for a statement none ran."""
    if line.flags:
        words = ", ".join(f"{name} [{level}]" for name, level in line.flags)
        return _cut(f"⚑ {words}", width), "bold yellow" if any(lv == "block" for _, lv in line.flags) else "yellow"
    if line.ran:
        name, missed = _lead(line)
        more = f" +{len(line.ran) - 1}" if len(line.ran) > 1 else ""
        head = "✗ " if missed else "✓ "
        return head + _cut(one_line(name), width - len(head) - len(more)) + more, "bold red" if missed else "green"
    if line.unexercised:
        return _cut(UNEXERCISED_MARK, width), "bold red"
    return "", ""


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[:max(0, width - 1)] + "…"


def line_about(line: diffview.DiffLine) -> Text:
    """The footer for the line under the cursor: where it is, every relation that ran it
    (those that missed first, marked ``✗ … missed``), or that none did, and its flags."""
    if line.kind == "-":
        return Text(f"line {line.old} of the merge base, removed", "dim")
    text = Text(f"line {line.new}", "bold")
    if line.kind == " ":
        return text.append(": unchanged (context)", "dim")
    if line.ran:
        text.append(f": {counted(len(line.ran), 'relation')} ran it: ")
        order = list(line.missed) + [rid for rid in line.ran if rid not in line.missed]
        for n, rid in enumerate(order):
            missed = rid in line.missed
            text.append(", " if n else "")
            text.append("✗ " if missed else "✓ ", "bold red" if missed else "green")
            text.append_text(lit(rid, "bold red" if missed else ""))
            text.append(" missed" if missed else "", "bold red")
    elif line.unexercised:
        text.append(": ◌ a changed statement no relation's calls ran on HEAD", "bold red")
    else:
        text.append(": changed, no statement (blank, comment or docstring)", "dim")
    for name, level in line.flags:
        text.append("\n⚑ ", "bold yellow" if level == "block" else "yellow")
        text.append_text(lit(f"{name} [{level}]"))
    return text


def mark_width(hunks: list[diffview.Hunk], screen_width: int) -> int:
    """Cells of the marks column: as many as the longest mark needs (at least those of
    ``◌ no relation ran it``), up to what a screen of ``screen_width`` columns gives it
    (MARK_WIDTHS: the code keeps the rest)."""
    cap = next((most for narrower, most in MARK_WIDTHS if screen_width < narrower), WIDE_MARK_WIDTH)
    longest = max((len(gutter(line, cap)[0]) for hunk in hunks for line in hunk.lines), default=0)
    return min(cap, max(len(UNEXERCISED_MARK), longest))


def diff_view(review: Review, path: str, hunks: list[diffview.Hunk], screen_width: int = 0) -> DiffView:
    """The diff screen's content: one item a line (``d:<n>``), each hunk's header a
    disabled item, the cursor on the first added line with a mark (else the first added
    line); the marks column as wide as
    ``mark_width`` for a screen of ``screen_width`` columns."""
    width = mark_width(hunks, screen_width)
    items: list[PaneItem] = []
    about: dict[str, Text] = {}
    first, marked = None, False
    for hunk in hunks:
        items.append(PaneItem(f"h:{len(items)}", lit(hunk.header, "cyan"), True))
        for line in hunk.lines:
            oid = f"d:{len(items)}"
            items.append(PaneItem(oid, line_text(line, width)))
            about[oid] = line_about(line)
            if line.kind == "+" and (first is None or not marked and (line.ran or line.unexercised or line.flags)):
                first, marked = oid, bool(line.ran or line.unexercised or line.flags)
    return DiffView(diff_header(review, path), items, about, first)


def line_text(line: diffview.DiffLine, width: int = MARK_WIDTH) -> Text:
    """One row of the diff as ``git diff`` shows it, the marks column (``width`` cells) on the left."""
    mark, style = gutter(line, width)
    text = Text(f"{mark:<{width}} ", style)
    number = line.new if line.new is not None else line.old
    text.append(f"{number:>5} " if number is not None else "      ", "dim")
    return text.append_text(lit(line.kind + line.text, KIND_STYLE[line.kind]))
