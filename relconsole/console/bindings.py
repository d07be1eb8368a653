"""Every binding of the console: the App's table (``APP_BINDINGS``, SPEC §11's keys) with the
pane each pane-bound action works in, the bindings by the context they fire in, and the
reviewer's keymap read against them (``keymap`` holds the rules; this module knows the screens)."""

from __future__ import annotations

from pathlib import Path

from textual.binding import Binding

from relconsole.console import filters
from relconsole.console.keymap import Keymap, read_requested, reserved_keys, resolve, split_keys
from relconsole.console.listing import PANE_TITLES
from relconsole.console.screens.confirm import ConfirmScreen
from relconsole.console.screens.detail import DetailScreen
from relconsole.console.screens.form import FormScreen
from relconsole.console.screens.help import HelpScreen
from relconsole.console.widgets.pane import Pane
from relconsole.engine import docsref


PANE_ACTIONS = {"accept": "quarantine", "delete": "quarantine", "mark": "quarantine", "view_diff": "touched",
                "confirm_candidate": "quarantine", "freeze": "relations", "renew": "leases",
                "rehash": "leases"}
QUICK_KEY = "x"
MAIN_SCREEN_ACTIONS = {"next_pane", "previous_pane", "filter", "quick_filter", "focus_pane", "clear_filters"}

APP_BINDINGS = [
    Binding("1", "focus_pane('touched')", "Paths", show=False, id="pane.touched",
            tooltip="focus the touched paths pane"),
    Binding("2", "focus_pane('relations')", "Relations", show=False, id="pane.relations",
            tooltip="focus the relations pane"),
    Binding("3", "focus_pane('leases')", "Leases", show=False, id="pane.leases",
            tooltip="focus the leases pane"),
    Binding("4", "focus_pane('quarantine')", "Quarantine", show=False, id="pane.quarantine",
            tooltip="focus the quarantine pane"),
    Binding("r", "run", "Run", id="run", tooltip="run the touched relations again (in the background)"),
    Binding("b", "replay", "Replay", id="replay",
            tooltip="replay the missed relations on HEAD and the merge base under a workspace lease "
                    "(background; one sheet each, with the decision table row that fired)"),
    Binding("s", "gate_health", "Gate health", show=False, id="gate_health",
            tooltip="gate health: how often each decision table row fired in the last 7 days, and warnings "
                    f"({docsref.doc_path('decision-table')})"),
    Binding("v", "view_diff", "Diff", id="view_diff",
            tooltip="touched paths: the file's diff, each changed line marked by the relations that ran it "
                    "(◌ none did, ⚑ a review flag)"),
    Binding("m", "merge_checklist", "Checklist", id="merge_checklist",
            tooltip=f"the patch's review flags ({docsref.doc_path('commits', 'review-flags')}) and the merge "
                    "checklist, each item with its evidence"),
    Binding("space", "mark", "Mark", id="mark",
            tooltip="quarantine: mark or unmark the item and move down (a and d act on marked items)"),
    Binding("a", "accept", "Accept", id="accept",
            tooltip="quarantine: accept the item or the marked items (pending until c)"),
    Binding("d", "delete", "Delete", id="delete",
            tooltip="quarantine: delete the item or the marked items (asks, then one quarantine: commit)"),
    Binding("c", "commit", "Commit", id="commit",
            tooltip="commit the pending accepts as one catalog: commit (asks first)"),
    Binding("f", "freeze", "Freeze", id="freeze",
            tooltip="relations: commit a freeze for the missed relation (you type the reason)"),
    Binding("w", "acknowledge", "Acknowledge", id="acknowledge",
            tooltip="acknowledge a review flag you have read (you type the reason; one review: commit)"),
    Binding("n", "renew", "Renew", id="renew", tooltip="leases: renew a lease you own (one lease: commit)"),
    Binding("h", "rehash", "Re-hash", id="rehash",
            tooltip="leases: re-pin a drifted lease to its committed corpus (confirm old and new digest)"),
    Binding("o", "confirm_candidate", "Confirm", id="confirm",
            tooltip=f"quarantine: second replay of a candidate on a new workspace lease ({docsref.see('quarantine')})"),
    Binding("slash", "filter", "Filter", id="filter",
            tooltip="filter the focused pane: type words that every shown item must contain"),
    Binding("enter", "filter_keep", "Keep filter", priority=True, id="filter.keep",
            tooltip="in the filter row: keep the filter and go back to the pane"),
    Binding("escape", "filter_clear", "Clear filter", priority=True, id="filter.clear",
            tooltip="in the filter row: clear the filter and go back to the pane"),
    *[Binding(QUICK_KEY, f"quick_filter('{kind}')", quick.label, id=f"quick.{kind}",
              tooltip=f"{PANE_TITLES[kind][2:].lower()}: show only {quick.title} (again: show all)")
      for kind, quick in filters.QUICK_FILTERS.items()],
    Binding("escape", "clear_filters", "Clear filter", show=False, id="clear",
            tooltip="clear the focused pane's filters (and the narrowing of relations to a path)"),
    Binding("t", "change_theme", "Theme", show=False, id="theme",
            tooltip="pick a theme (every state also has a word or symbol; remembered for next time)"),
    Binding("tab", "next_pane", show=False, priority=True, id="next_pane", tooltip="next pane"),
    Binding("shift+tab", "previous_pane", show=False, priority=True, id="previous_pane",
            tooltip="previous pane"),
    Binding("question_mark,f1", "help", "Help", id="help", tooltip="this help"),
    Binding("q", "quit_review", "Quit", id="quit",
            tooltip="quit (asks when accepts are pending); exits with the review's exit code "
                    f"({docsref.doc_path('decision-table')})"),
]


def console_contexts(app_bindings: list[Binding]) -> dict[str, list[Binding]]:
    """The console's bindings by where they fire together: the main screen (the app's keys
    and a pane's), and each screen pushed over it (modal: the panes' keys do not fire there)."""
    return {"main": [*app_bindings, *Pane.BINDINGS], "help": list(HelpScreen.BINDINGS),
            "view": list(DetailScreen.BINDINGS), "dialog": list(ConfirmScreen.BINDINGS),
            "form": list(FormScreen.BINDINGS)}


def load_keymap(path: Path, app_bindings: list[Binding]) -> Keymap:
    """Read ``path`` and check it against the console's bindings (see ``resolve``)."""
    requested, problems = read_requested(path)
    contexts = console_contexts(app_bindings)
    keymap = resolve(path, contexts, requested, reserved_keys(contexts))
    keymap.problems[:0] = problems
    return keymap


def default_keys(app_bindings: list[Binding]) -> dict[str, list[str]]:
    """Every binding id -> its default keys (no keymap)."""
    return {b.id: split_keys(b.key) for bindings in console_contexts(app_bindings).values()
            for b in bindings if b.id is not None}
