"""The help screen, generated from the bindings in force (so it cannot drift)."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static


KEY_NAMES = {"question_mark": "?", "space": "space", "escape": "esc", "enter": "enter",
             "shift+tab": "shift+tab", "ctrl+p": "ctrl+p"}


def key_names(keys: str) -> str:
    """``question_mark,f1`` -> ``? / f1``."""
    return " / ".join(KEY_NAMES.get(k.strip(), k.strip()) for k in keys.split(","))


def bindings_text(groups: list[tuple[str, list[Binding]]]) -> Text:
    """One line per binding: keys and what they do, grouped by where they work."""
    width = 2 + max((len(key_names(b.key)) for _t, bs in groups for b in bs), default=10)
    text = Text()
    for title, bindings in groups:
        text.append(f"{title}\n", "bold underline")
        for binding in bindings:
            text.append(f"  {key_names(binding.key):<{width}}", "bold cyan")
            text.append(f"{binding.tooltip or binding.description or binding.action}\n")
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
