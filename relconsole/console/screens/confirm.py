"""A yes/no dialog that says exactly what will happen before a commit."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static


class DialogBody(VerticalScroll, can_focus=False):
    """A dialog's text, scrolling when long; never takes focus from the keys or the input."""


class ConfirmScreen(ModalScreen[bool]):
    """Dismisses with True on ``y``/``enter``, False on ``n``/``escape``.

    ``question`` is shown literally (it may hold paths and ids).
    """

    BINDINGS = [
        Binding("y,enter", "answer(True)", "Yes", id="dialog.yes", tooltip="a yes/no question: yes"),
        Binding("n,escape", "answer(False)", "No", id="dialog.no", tooltip="a yes/no question: no"),
    ]

    def __init__(self, title: str, question: str):
        super().__init__()
        self.title_text = title
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(Text(self.title_text, style="bold"), id="dialog-title")
            with DialogBody(id="dialog-scroll"):  # a long question never hides the keys
                yield Static(Text(self.question), id="dialog-body")
            yield Static(Text(f"{self.keys_of('dialog.yes')}: yes    {self.keys_of('dialog.no')}: no",
                              style="dim"), id="dialog-keys")

    def keys_of(self, binding_id: str) -> str:
        """The keys in force for one of this dialog's bindings (after the reviewer's keymap)."""
        from relconsole.console.screens.help import key_names
        binding = next(b for b in self.BINDINGS if b.id == binding_id)
        active = getattr(self.app, "active_keys", {}).get(binding_id)
        return key_names(",".join(active) if active else binding.key)

    def action_answer(self, value: bool) -> None:
        self.dismiss(value)
