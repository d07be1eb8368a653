"""The help screen, generated from the bindings in force (so it cannot drift)."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static


def bindings_text(groups: list[tuple[str, list[Binding]]]) -> Text:
    """One line per binding: keys and description, grouped by where they work."""
    text = Text()
    for title, bindings in groups:
        text.append(f"{title}\n", "bold underline")
        for binding in bindings:
            keys = ", ".join(k.strip() for k in binding.key.split(","))
            text.append(f"  {keys:<16}", "bold cyan")
            text.append(f"{binding.description or binding.action}\n")
        text.append("\n")
    return text


class HelpScreen(ModalScreen[None]):
    """Lists every key; ``escape``, ``q`` or ``?`` closes it."""

    BINDINGS = [Binding("escape,q,question_mark", "app.pop_screen", "Close")]

    def __init__(self, groups: list[tuple[str, list[Binding]]]):
        super().__init__()
        self.groups = groups

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="dialog"):
            yield Static(Text("relconsole keys", style="bold"), id="dialog-title")
            yield Static(bindings_text(self.groups))
