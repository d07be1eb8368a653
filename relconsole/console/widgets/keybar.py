"""The footer of the review screen: the keys that work where the focus is, as one line.

Textual's Footer recomposes a widget per key on every focus change (three times per
change, 0.15–0.7 s with the console's bindings on a loaded review); this bar renders
the same active bindings as one Text, and only when they changed.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static


class KeyBar(Static):
    """Shows the screen's enabled ``show=True`` bindings, then the palette key."""

    COMPONENT_CLASSES = {"keybar--key"}
    DEFAULT_CSS = """
    KeyBar {
        height: 1;
        background: $footer-background;
        color: $footer-foreground;
        text-wrap: nowrap;
        text-overflow: ellipsis;
        & > .keybar--key {
            color: $footer-key-foreground;
            text-style: bold;
        }
    }
    """

    def __init__(self, **kwargs):
        super().__init__("", **kwargs)
        self._shown: tuple = ()

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self._bindings_changed)
        self._render_keys()

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def _bindings_changed(self, _screen) -> None:
        # At once, so the keys change in the same frame as the focus; repeats are cheap
        # (the line is rebuilt only when the keys differ).
        self._render_keys()

    def _render_keys(self) -> None:
        keys, seen = [], set()
        for active in self.screen.active_bindings.values():
            binding = active.binding
            if binding.show and active.enabled and (binding.action, binding.description) not in seen:
                seen.add((binding.action, binding.description))  # "?" and "f1": one entry
                keys.append((self.app.get_key_display(binding), binding.action, binding.description))
        shown = tuple(keys)
        if shown != self._shown:
            self._shown = shown
            self.update(self._text(keys), layout=False)  # one row, always

    def _text(self, keys: list) -> Text:
        """Help and the palette first: a narrow terminal cuts the end of the line, and from
        those two every other key can be found."""
        key_style = self.get_component_rich_style("keybar--key", partial=True)
        text = Text(" ")
        first = [k for k in keys if k[1] == "help"]
        for key in first + [k for k in keys if k not in first]:
            display, _action, description = key
            text.append(display, key_style)
            text.append(f" {description}  ")
            if key in first:
                text.append("^p", key_style)
                text.append(" palette  ")
        if not first:
            text.append("^p", key_style)
            text.append(" palette")
        return text
