"""Messages the console's workflows post when what a view shows has changed, so that an open
view follows (issue 36: a relation's detail kept saying "not replayed" after ``b`` finished
until it was closed and opened again)."""

from __future__ import annotations

from textual.message import Message


class RelationsChanged(Message):
    """A run (``r``) or a replay (``b``) ended: ``relation_ids`` have new results or replay
    sheets; ``what`` is ``run`` or ``replay``. Posted to the App on the UI thread."""

    def __init__(self, relation_ids: tuple[str, ...], what: str):
        super().__init__()
        self.relation_ids, self.what = tuple(relation_ids), what
