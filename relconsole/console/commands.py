"""Command palette entries (ctrl+p), generated from the console's bindings.

Every binding with an id becomes one entry worded by its tooltip, so a new key is in the
palette without anyone remembering to add it. A pane's action focuses that pane first
(``accept`` works from anywhere in the palette).
"""

from __future__ import annotations

from functools import partial

from textual.command import Hit, Hits, Provider

from relconsole.console.keymap import with_active_key
from relconsole.console.keymap import key_names

NOT_IN_PALETTE = {"next_pane", "previous_pane", "filter.keep", "filter.clear"}  # keys of moving and typing


def palette_entries(app) -> list[tuple[str, str]]:
    """(text, action) for every binding of ``app`` that belongs in the palette, in binding order;
    the text is the tooltip with its key in force, e.g. ``Quarantine: accept the item … (a)``."""
    entries = []
    active = getattr(app, "active_keys", None) if not isinstance(app, type) else None
    for binding in app.BINDINGS:
        binding = with_active_key(binding, active or {})
        if binding.id is None or binding.id in NOT_IN_PALETTE:
            continue
        words = binding.tooltip or binding.description or binding.action
        entries.append((f"{words[:1].upper()}{words[1:]} ({key_names(binding.key)})", binding.action))
    return entries


class ReviewCommands(Provider):
    """Fuzzy-matches the console's actions by their description."""

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for text, action in palette_entries(self.app):
            score = matcher.match(text)
            if score > 0:
                yield Hit(score, matcher.highlight(text), partial(self.app.run_from_palette, action))

    async def discover(self) -> Hits:
        for text, action in palette_entries(self.app):
            yield Hit(1.0, text, partial(self.app.run_from_palette, action))
