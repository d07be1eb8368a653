"""After an accept: an owner pattern to propose for each relation no pattern names (SPEC §3, §10).

Unowned, a relation runs only with ``run --all`` and nothing says so; ``unowned_hints``
proposes the file of its subject's module (or, for an oracle adapter, the library it
reaches) as a line the reviewer can add to the catalog's owners. Read-only: it commits
nothing.
"""

from __future__ import annotations

import os

from relconsole.engine.errors import BadInputError, RelconsoleError
from relconsole.engine.gate.actions import tip_view
from relconsole.engine.gate.review import Review
from relconsole.engine.oracle.catalog import load_catalog
from relconsole.engine.repo.owners import protected

def unowned_hints(review: Review, relation_ids: list[str]) -> list[str]:
    """For each of ``relation_ids`` that no owner pattern of the oracle branch's catalog names,
    a line proposing one (the file of its subject's module, where the tree has it): unowned, a
    relation runs only with ``run --all``, and nothing says so."""
    view = tip_view(review)
    try:
        catalog = load_catalog(view.read_text(review.layout.catalog) or "", review.layout.catalog)
    except BadInputError:
        return []
    out = []
    for relation in catalog.unowned():
        if relation.id not in relation_ids:
            continue
        module = relation.subject.split(":", 1)[0].replace(".", "/")
        found = next((p for p in (f"{root}{module}{tail}" for root in ("src/", "") for tail in (".py", "/__init__.py"))
                      if view.read_text(p) is not None), None)
        if found is not None and protected(review.layout.protected, found):
            found = _guarded_by_adapter(review, relation)  # the library an adapter calls, not itself
        where = f"'{found}': [{relation.id}]" if found else f"'<the paths of the code it guards>': [{relation.id}]"
        out.append(f"relation {relation.id} is named by no owner pattern: no touched path runs it, only "
                   f"run --all; add to owners in {review.layout.catalog}: {where}")
    return out


def _guarded_by_adapter(review: Review, relation) -> str | None:
    """The owners pattern for a relation whose subject is an oracle adapter: the one library
    file it reaches, or the folder holding all of them (``dir/**``); None when it reaches none."""
    from relconsole.engine.gate.bite.bitetargets import reached_library_paths  # static: reads git objects, runs nothing
    try:
        paths = reached_library_paths(review, relation)
    except (RelconsoleError, OSError, SyntaxError, ValueError):  # a hint, never a reason to refuse the accept
        return None
    if len(paths) <= 1:
        return paths[0] if paths else None
    common = os.path.commonpath(paths)
    return f"{common}/**" if common else None
