"""Hints about the catalog's owner map (SPEC §3, §10). Read-only: they commit nothing.

After an accept: an owner pattern to propose for each relation no pattern names. Unowned, a
relation runs only with ``run --all`` and nothing says so; ``unowned_hints`` proposes the
file of its subject's module (or, for an oracle adapter, the library it reaches) as a line
the reviewer can add to the catalog's owners.

On ``validate``: ``unmatched_patterns`` names each owner pattern that lists relations but
matches no file of the oracle's commit (a misspelt path, ``src/`` left out): a touched path
it was meant for is a gap or another pattern's, and nothing said so.
"""

from __future__ import annotations

import os

from relconsole.engine.errors import BadInputError, RelconsoleError
from relconsole.engine.gate.actions import tip_view
from relconsole.engine.gate.review import Review
from relconsole.engine.oracle.catalog import load_catalog
from relconsole.engine.repo.gitio import run_git
from relconsole.engine.repo.ownerindex import OwnerIndex
from relconsole.engine.repo.owners import matches, protected

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
        elif found is not None and found.endswith("/__init__.py"):  # a package: its modules too, as init proposes
            found = found.removesuffix("__init__.py") + "**"
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


def unmatched_patterns(review: Review) -> list[str]:
    """One warning per owner pattern of the review's catalog that lists relations and matches
    no file tracked in the oracle's commit (``review.oracle_sha``), naming the catalog file
    and the pattern's line. Exempt patterns (``[]``) and negations are left alone: an
    exemption made ahead of the files (``.github/**``) is deliberate. A warning, not an
    error: a pattern may be written before the code it will own. Raises GitError when git
    cannot list the commit.

    Patterns that win some file are found through one ``OwnerIndex`` pass over the files; only
    the others are matched one by one (a pattern every one of whose files a later pattern
    wins does match files, and is not reported)."""
    catalog = review.catalog
    if catalog is None or not catalog.owners:
        return []
    root = review.repo.working_tree_dir or review.repo.git_dir
    listing = run_git(root, "ls-tree", "-r", "-z", "--name-only", "--full-tree", review.oracle_sha).stdout
    files = [p for p in listing.decode("utf-8", "surrogateescape").split("\0") if p]
    won = set(OwnerIndex(catalog.owners).winner_indexes(files))
    out = []
    for index, (pattern, ids) in enumerate(catalog.owners):
        if index in won or not ids or pattern.startswith("!") or any(matches(pattern, f) for f in files):
            continue
        line = catalog.loaded.line_of(("owners", pattern)) if catalog.loaded else None
        where = f"{review.layout.catalog}:{line}" if line else review.layout.catalog
        out.append(f"{where}: owner pattern {pattern!r} matches no file in {review.oracle_sha[:12]}, so "
                   f"{', '.join(ids)} never runs for the paths it was meant for: fix the pattern (is a "
                   "folder such as src/ missing?); one written ahead of its files can stay")
    return out
