"""The help screen, generated from the bindings in force (so it cannot drift)."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static


from relconsole.console.keymap import key_names, with_active_key
from relconsole.console.widgets.pane import Pane


HELP_GROUPS = (  # binding id prefix -> help section; the rest are "Acting"
    ("Panes and filters", ("pane.", "next_pane", "previous_pane", "filter", "quick.", "clear")),
    ("The console", ("help", "theme", "quit")),
)


def dialog_bindings() -> list[Binding]:
    """The keys of the screens pushed over the panes: help, detail views, yes/no dialogs, forms."""
    from relconsole.console.screens.confirm import ConfirmScreen
    from relconsole.console.screens.detail import DetailScreen
    from relconsole.console.screens.form import FormScreen
    return [*HelpScreen.BINDINGS, *DetailScreen.BINDINGS, *ConfirmScreen.BINDINGS, *FormScreen.BINDINGS]


def help_groups(bindings: list[Binding], active: dict[str, list[str]] | None = None
                ) -> list[tuple[str, list[Binding]]]:
    """The help screen's sections: moving inside a pane (the Pane's keys), then the app's
    bindings by what they do, then the dialogs' keys. Every binding appears exactly once,
    with the keys in force (``active``: binding id -> keys, from the keymap; a binding the
    keymap leaves alone is the same object)."""
    active = active or {}
    moving = [with_active_key(b, active) for b in Pane.BINDINGS]
    sections: dict[str, list[Binding]] = {title: [] for title, _ in HELP_GROUPS}
    acting: list[Binding] = []
    for binding in bindings:
        title = next((t for t, prefixes in HELP_GROUPS if (binding.id or "").startswith(prefixes)), None)
        (sections[title] if title else acting).append(with_active_key(binding, active))
    palette = Binding("ctrl+p", "", tooltip="command palette: every action by name, and the theme picker")
    dialogs = [with_active_key(b, active) for b in dialog_bindings()]
    return [("Moving in a pane", moving), (HELP_GROUPS[0][0], sections[HELP_GROUPS[0][0]]),
            ("Acting", acting), (HELP_GROUPS[1][0], sections[HELP_GROUPS[1][0]] + [palette]),
            ("Dialogs and views", dialogs)]


STACK_BELOW = 50  # columns under which each key's words go on the lines below it


class BindingsHelp:
    """The help's body for whatever width it gets: the two-column table (``bindings_table``),
    or, under STACK_BELOW columns, each key on its own line with its words wrapped below it
    (at 30 columns the table's key column left the words no room: every one read "…")."""

    def __init__(self, groups: list[tuple[str, list[Binding]]]):
        self.groups = groups

    def __rich_console__(self, console, options):
        if options.max_width >= STACK_BELOW:
            yield bindings_table(self.groups)
            return
        text = Text()
        for title, bindings in self.groups:
            text.append(f"{title}\n", "bold underline")
            for binding in bindings:
                text.append(key_names(binding.key), "bold cyan")
                text.append(f"\n  {binding.tooltip or binding.description or binding.action}\n")
            text.append("\n")
        yield text


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

    BINDINGS = [Binding("escape,q,question_mark", "app.pop_screen", "Close", id="help.close",
                        tooltip="close this help")]

    def __init__(self, groups: list[tuple[str, list[Binding]]]):
        super().__init__()
        self.groups = groups

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="dialog"):
            yield Static(Text("relconsole keys", style="bold"), id="dialog-title")
            yield Static(BindingsHelp(self.groups))
