"""The help screen, generated from the bindings in force (so it cannot drift)."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from relconsole.console.widgets.pane import Pane


KEY_NAMES = {"question_mark": "?", "space": "space", "escape": "esc", "enter": "enter",
             "shift+tab": "shift+tab", "ctrl+p": "ctrl+p", "slash": "/"}


def key_names(keys: str) -> str:
    """``question_mark,f1`` -> ``? / f1``."""
    return " / ".join(KEY_NAMES.get(k.strip(), k.strip()) for k in keys.split(","))


HELP_GROUPS = (  # binding id prefix -> help section; the rest are "Acting"
    ("Panes and filters", ("pane.", "next_pane", "previous_pane", "filter", "quick.", "clear")),
    ("The console", ("help", "theme", "quit")),
)


def help_groups(bindings: list[Binding]) -> list[tuple[str, list[Binding]]]:
    """The help screen's sections: moving inside a pane (the Pane's keys), then the app's
    bindings by what they do. Every binding appears exactly once."""
    moving = list(Pane.BINDINGS)
    sections: dict[str, list[Binding]] = {title: [] for title, _ in HELP_GROUPS}
    acting: list[Binding] = []
    for binding in bindings:
        title = next((t for t, prefixes in HELP_GROUPS if (binding.id or "").startswith(prefixes)), None)
        (sections[title] if title else acting).append(binding)
    palette = Binding("ctrl+p", "", tooltip="command palette: every action by name, and the theme picker")
    return [("Moving in a pane", moving), (HELP_GROUPS[0][0], sections[HELP_GROUPS[0][0]]),
            ("Acting", acting), (HELP_GROUPS[1][0], sections[HELP_GROUPS[1][0]] + [palette])]


def bindings_table(groups: list[tuple[str, list[Binding]]]) -> Table:
    """One row per binding: its keys and what it does, under a heading per group; long
    descriptions wrap in their own column."""
    table = Table.grid(padding=(0, 2))
    table.add_column(no_wrap=True, style="bold cyan")
    table.add_column(ratio=1)
    for title, bindings in groups:
        table.add_row(Text(title, style="bold underline"), "")
        for binding in bindings:
            table.add_row("  " + key_names(binding.key),
                          Text(binding.tooltip or binding.description or binding.action))
        table.add_row("", "")
    return table


class HelpScreen(ModalScreen[None]):
    """Lists every key; ``escape``, ``q`` or ``?`` closes it."""

    BINDINGS = [Binding("escape,q,question_mark", "app.pop_screen", "Close")]

    def __init__(self, groups: list[tuple[str, list[Binding]]]):
        super().__init__()
        self.groups = groups

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="dialog"):
            yield Static(Text("relconsole keys", style="bold"), id="dialog-title")
            yield Static(bindings_table(self.groups))
