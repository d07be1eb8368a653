"""Every binding of the console, by the context it fires in, and the reviewer's keymap read
against them (``keymap`` holds the rules; this module knows the screens)."""

from __future__ import annotations

from pathlib import Path

from textual.binding import Binding

from relconsole.console.keymap import Keymap, read_requested, reserved_keys, resolve, split_keys
from relconsole.console.screens.confirm import ConfirmScreen
from relconsole.console.screens.detail import DetailScreen
from relconsole.console.screens.form import FormScreen
from relconsole.console.screens.help import HelpScreen
from relconsole.console.widgets.pane import Pane


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
