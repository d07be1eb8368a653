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


ALSO = "also"  # what a dialog dismisses with when its third choice (``also``) is taken


class ConfirmScreen(ModalScreen[bool]):
    """Dismisses with True on ``y``/``enter``, False on ``n``/``escape``, and ``ALSO`` on
    ``o`` when the dialog offers a third choice (``also``: its words in the key line).

    ``question`` is shown literally (it may hold paths and ids).
    """

    BINDINGS = [
        Binding("y,enter", "answer(True)", "Yes", id="dialog.yes", tooltip="a yes/no question: yes"),
        Binding("n,escape", "answer(False)", "No", id="dialog.no", tooltip="a yes/no question: no"),
        Binding("o", "also", "Other choice", id="dialog.also",
                tooltip="a dialog's third choice, when it offers one (an unconfirmed candidate: confirm it first)"),
    ]

    def __init__(self, title: str, question: str, also: str | None = None):
        super().__init__()
        self.title_text = title
        self.question = question
        self.also = also

    def check_action(self, action: str, parameters: tuple) -> bool | None:
        return self.also is not None if action == "also" else True

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(Text(self.title_text, style="bold"), id="dialog-title")
            with DialogBody(id="dialog-scroll"):  # a long question never hides the keys
                yield Static(Text(self.question), id="dialog-body")
            keys = f"{self.keys_of('dialog.yes')}: yes    {self.keys_of('dialog.no')}: no"
            if self.also is not None:
                keys += f"    {self.keys_of('dialog.also')}: {self.also}"
            yield Static(Text(keys, style="dim"), id="dialog-keys")

    def keys_of(self, binding_id: str) -> str:
        """The keys in force for one of this dialog's bindings (after the reviewer's keymap)."""
        from relconsole.console.keymap import key_names
        binding = next(b for b in self.BINDINGS if b.id == binding_id)
        active = getattr(self.app, "active_keys", {}).get(binding_id)
        return key_names(",".join(active) if active else binding.key)

    def action_answer(self, value: bool) -> None:
        self.dismiss(value)

    def action_also(self) -> None:
        if self.also is not None:
            self.dismiss(ALSO)
