"""What bite mutates for a relation (issue 16): the subject's defining function, or for an
adapter of the oracle (SPEC §2) the library functions it reaches, first tier then spare,
with the notes that say so; ``reached_library_paths`` gives those files without running.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from relconsole.engine.oracle.catalog import Relation
from relconsole.engine.errors import RelconsoleError, UsageError, did_you_mean
from relconsole.engine.repo.owners import protected
from relconsole.engine.gate.review import Review
from relconsole.engine.gate.runplans import import_paths
from relconsole.engine.gate.bite.bitefiles import CommitRunTree, DiskRunTree, relative_roots, spec_file
from relconsole.engine.gate.bite.adapterreach import Reach, Walk, _defining, _reach


COMPANION_ROLES = ("inverse", "merge")  # run with the subject: their adapters' reach is mutated too


def _relation(review: Review, relation_id: str) -> Relation:
    if review.catalog is None:
        raise RelconsoleError("the catalog did not load; fix it before biting relations")
    relation = review.catalog.get(relation_id)
    if relation is None:
        raise UsageError(f"no relation {relation_id!r} in the catalog{did_you_mean(relation_id, review.catalog.relations)}")
    return relation


def subject_file(review: Review, relation: Relation, tree: Path) -> str | None:
    """Repository-relative path of the subject's module file under ``tree``, or None."""
    return spec_file(DiskRunTree(tree), relative_roots(tree, import_paths(review.layout, tree)), relation.subject)


@dataclass
class Targets:
    """What bite mutates for one relation. ``files``: tree path -> attribute paths there;
    ``library``: they are what an adapter of the oracle reaches, mutated function by function
    in two tiers (``first``, then ``spare`` with the budget left: file -> qualified names;
    ``called_by``: a callee's caller, for the notes), not the subject itself
    (``mutations.mutants``); ``notes`` for the report; ``consulted``: the files read to
    decide (part of the key)."""

    files: dict[str, list[str]]
    library: bool
    notes: list[str]
    consulted: set[str]
    first: dict[str, list[str]] = field(default_factory=dict)
    spare: dict[str, list[str]] = field(default_factory=dict)
    called_by: dict[tuple[str, str], str] = field(default_factory=dict)


def _targets(review: Review, relation: Relation, tree: Path) -> tuple[str, str, Targets]:
    """(subject's defining file, its attribute path, what to mutate) in the run tree ``tree``.
    Raises RelconsoleError when the subject has no source file under the import paths."""
    return _plan(review, relation, DiskRunTree(tree), relative_roots(tree, import_paths(review.layout, tree)))


def _plan(review: Review, relation: Relation, files, roots: list[str]) -> tuple[str, str, Targets]:
    """``_targets`` over ``files`` (a run tree on disk, or a commit's objects) and its
    tree-relative import ``roots``."""
    path = spec_file(files, roots, relation.subject)
    if path is None:
        raise RelconsoleError(f"{relation.id}: no source file for subject {relation.subject} "
                              "under the import paths")

    def is_protected(p: str) -> bool:
        return protected(review.layout.protected, p)
    walk = Walk(files, roots, is_protected, Reach())
    path, attr = _defining(walk, path, relation.subject.split(":", 1)[1])
    if not is_protected(path):
        return path, attr, Targets({path: [attr]}, False, [], set(walk.reach.consulted))
    companions = []  # the adapters (or library functions) the relation runs with the subject
    for role in COMPANION_ROLES:
        spec = getattr(relation, role, None)
        found = spec_file(files, roots, spec) if spec and ":" in spec else None
        if found is not None:
            companions.append((role, *_defining(walk, found, spec.split(":", 1)[1])))
    reach = _reach(walk, [(path, attr), *[(p, a) for _, p, a in companions]])
    return path, attr, _adapter_targets(path, attr, companions, reach)


MAX_NAMES_SHOWN = 8  # functions named per note; the rest counted


def _names(names: list[str], shown: int = MAX_NAMES_SHOWN) -> str:
    more = len(names) - shown
    return ", ".join(names[:shown]) + (f", and {more} more" if more > 0 else "")


def _adapter_targets(path: str, attr: str, companions: list[tuple[str, str, str]], reach: Reach) -> Targets:
    """An adapter of the oracle: the library it reaches; the adapter only when it reaches none."""
    where = f"{path}:{attr}" + "".join(f" (with its {role} {p}:{a})" for role, p, a in companions)
    consulted = set(reach.consulted)
    if reach.functions or reach.spare:
        files = {p: reach.functions.get(p, []) + reach.spare.get(p, []) for p in reach.paths()
                 if reach.functions.get(p) or reach.spare.get(p)}

        def shown(p: str, name: str) -> str:
            caller = reach.called_by.get((p, name))
            return f"{name}, called by {caller}" if caller else name
        first = "; ".join(f"{p} ({_names([shown(p, n) for n in names])})"
                          for p, names in reach.functions.items() if names) or "nothing"
        notes = [f"{where} is an adapter of the oracle: mutating the library code it reaches instead, "
                 f"first what it calls and their callees in other modules: {first}"]
        if reach.spare:
            spare = "; ".join(f"{p} ({_names(names, 4)})" for p, names in reach.spare.items())
            notes.append("then, only with the budget left and at most half as many mutants, the other "
                         f"public methods of the classes it uses: {spare}")
        return Targets(files, True, notes + reach.skipped, consulted,
                        {p: n for p, n in reach.functions.items() if n}, dict(reach.spare), dict(reach.called_by))
    if reach.skipped:
        return Targets({}, True, [
            f"{where} is an adapter of the oracle; no library function it reaches can be mutated, "
            "and the adapter is not mutated in their place", *reach.skipped], consulted)
    return Targets({path: [attr]}, False, [
        f"{where} is an adapter of the oracle that reaches no function of the tree under review "
        "(only the standard library or installed packages): mutating the adapter itself, which "
        "shows whether the relation watches the adapter, not the library"], consulted)


def reached_library_paths(review: Review, relation: Relation | str, commit: str | None = None) -> list[str]:
    """The library files (repository-relative, sorted) a relation's subject reaches, found
    statically: what ``bite`` would mutate for it, without running or writing anything.

    For a subject that is an adapter of the oracle (its defining file is protected, §2):
    every file of the tree under review its ``adapter_reach`` finds (the files defining what
    it calls, and the files of their callees in other modules one level down), its
    ``inverse``'s and ``merge``'s too; files reached through a symlink are left out. For a
    subject that is library code itself: its defining file. [] when the subject has no
    source file in that tree, or the adapter reaches no file of it (only the standard library
    or installed packages). Meant for suggesting the ``owners`` pattern (§3) a newly accepted
    relation should guard.

    ``relation``: a catalog Relation or its id. ``commit``: the code read (default the
    review's HEAD; ``review.merge_base`` or ``review.base_tip`` for the base), from git
    objects, with the oracle export's files at protected paths as in a run tree. Raises
    UsageError for an unknown id, RelconsoleError when the catalog did not load, GitError
    when git cannot read the commit.
    """
    if isinstance(relation, str):
        relation = _relation(review, relation)
    files = CommitRunTree(review, commit or review.head_sha)
    try:
        _, _, targets = _plan(review, relation, files, files.roots(review.layout))
    except RelconsoleError:
        return []
    return sorted(p for p in targets.files if not protected(review.layout.protected, p))
