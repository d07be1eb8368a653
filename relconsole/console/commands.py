"""Command palette entries (ctrl+p) for every console action."""

from __future__ import annotations

from functools import partial

from textual.command import Hit, Hits, Provider

ACTIONS = [
    ("Run the touched relations", "run"),
    ("Replay the missed relations on HEAD and the merge base", "replay"),
    ("Gate health: how often each decision-table row fired", "gate_health"),
    ("Review flags and the merge checklist", "merge_checklist"),
    ("Accept the highlighted or marked quarantine items", "accept"),
    ("Delete the highlighted or marked quarantine items", "delete"),
    ("Mark the highlighted quarantine item", "mark"),
    ("Commit pending catalog changes", "commit"),
    ("Commit a freeze for the highlighted missed relation", "freeze"),
    ("Renew the highlighted lease", "renew"),
    ("Re-hash the highlighted drifted lease (shows old and new digest)", "rehash"),
    ("Confirm the highlighted candidate: second replay on a new workspace lease", "confirm_candidate"),
    ("Focus touched paths", "focus_pane('touched')"),
    ("Focus relations", "focus_pane('relations')"),
    ("Focus leases", "focus_pane('leases')"),
    ("Focus quarantine", "focus_pane('quarantine')"),
    ("Show keys (help)", "help"),
    ("Quit", "quit_review"),
]


class ReviewCommands(Provider):
    """Fuzzy-matches the console's actions by their description."""

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for text, action in ACTIONS:
            score = matcher.match(text)
            if score > 0:
                yield Hit(score, matcher.highlight(text), partial(self.app.run_action, action))

    async def discover(self) -> Hits:
        for text, action in ACTIONS:
            yield Hit(1.0, text, partial(self.app.run_action, action))
