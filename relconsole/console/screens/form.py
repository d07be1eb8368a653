"""A small form dialog (freeze reason and expiry, lease renewal date)."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label, Static

from relconsole.console.screens.confirm import DialogBody
from relconsole.console.keymap import key_names


class FormScreen(ModalScreen[dict | None]):
    """Dismisses with {field name: text} on enter in the last field, None on escape.

    ``fields`` is a list of (name, label, initial value, placeholder). ``body`` is shown
    literally above the fields. ``check`` may return an error message that keeps the
    dialog open.
    """

    BINDINGS = [Binding("escape", "cancel", "Cancel", id="form.cancel",
                        tooltip="a form (freeze, renewal, acknowledgement): cancel it")]

    def __init__(self, title: str, body: str, fields: list[tuple[str, str, str, str]], check=None):
        super().__init__()
        self.title_text = title
        self.body = body
        self.fields = fields
        self.check = check

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(Text(self.title_text, style="bold"), id="dialog-title")
            with DialogBody(id="dialog-scroll"):  # a long body never hides the input
                yield Static(Text(self.body), id="dialog-body")
            for name, label, value, placeholder in self.fields:
                yield Label(Text(label))
                yield Input(value=value, placeholder=placeholder, id=f"field-{name}")
            yield Static("", id="dialog-error")
            cancel = getattr(self.app, "active_keys", {}).get("form.cancel") or [self.BINDINGS[0].key]
            yield Static(Text(f"enter: next / submit    {key_names(','.join(cancel))}: cancel", style="dim"),
                         id="dialog-keys")

    def on_descendant_focus(self, event) -> None:
        inputs = list(self.query(Input))
        if event.widget in inputs:
            self._at = inputs.index(event.widget)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        inputs = list(self.query(Input))
        # an enter typed before the focus had moved on (enter enter, fast) belongs to the next field
        index = max(inputs.index(event.input), getattr(self, "_at", 0))
        if index + 1 < len(inputs):
            self._at = index + 1
            inputs[index + 1].focus()
            return
        values = {name: self.query_one(f"#field-{name}", Input).value for name, *_ in self.fields}
        problem = self.check(values) if self.check else None
        if problem:
            self.query_one("#dialog-error", Static).update(Text(problem, style="bold red"))
            return
        self.dismiss(values)

    def action_cancel(self) -> None:
        self.dismiss(None)
