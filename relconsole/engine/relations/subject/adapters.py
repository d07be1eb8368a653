"""The oracle's adapters in a call's child: resolved before the tree is importable, or after its import roots (SPEC §3, §7).

A part of the subject's fork server (``harness.py``; standard library only, merged into its
script by ``script.py``). ``resolve_early`` resolves each adapter (``module:attr`` of the
oracle's protected tree) while only the oracle's own top-level packages can be imported from
the tree (``_OracleOnly``), so an installed module an adapter imports is the installed one.
An adapter whose module imports the library under review at its top (``from verlib import
Version``) misses a module the tree's import roots hold: it is deferred, and ``resolve_late``
resolves it once the subject's input is built and the corpus is out of reach, with the
import roots after the site folders (the tree still cannot stand in for an installed module
the oracle imports) and the oracle's packages still looked up in the tree root alone.
Anything else an adapter raises while it resolves is an ``AdapterFault``.
"""

import sys

from relconsole.engine.relations.subject.calls import _raised, resolve


class AdapterFault(Exception):
    """An adapter that did not resolve. ``args``: (ref, the ``_raised`` mapping of what it raised)."""

    def body(self, step):
        """The ``fault`` of the child's result: the exception's type, message, where and tree
        files, ``by: "adapter"``, the adapter's ``ref`` and the ``step`` it failed in."""
        ref, raised = self.args
        return dict(raised, by="adapter", ref=ref, step=step)


def _needs_tree(exc, oracle_names, import_paths):
    """Whether ``exc`` is the import of a top-level module that one of the tree's
    ``import_paths`` holds (none of the oracle's own packages): the adapter imports the
    library under review."""
    name = getattr(exc, "name", None) if isinstance(exc, ImportError) else None
    if not isinstance(name, str) or not name:
        return False
    from importlib.machinery import PathFinder
    top = name.partition(".")[0]
    return top not in oracle_names and PathFinder.find_spec(top, list(import_paths)) is not None


class _Library:
    """A meta-path finder for the library under review's top-level modules (``names``, the merge
    base's: a package the patch adds is none of them). ``early`` it refuses them, so an adapter
    that imports the library waits for ``resolve_late``; late it finds them in the tree's import
    roots alone. Either way an adapter never binds a copy of the library installed where
    the judge runs (new-user trial, issue 34: with parver installed, an adapter's ``from parver
    import Version`` judged the installed release, and a planted bug passed)."""

    def __init__(self, names, import_paths, early):
        self.names, self.import_paths, self.early = set(names), list(import_paths), early

    def find_spec(self, name, path=None, target=None):
        if path is not None or name not in self.names:
            return None
        if self.early:
            raise ModuleNotFoundError(f"No module named {name!r} (the library under review, not yet)", name=name)
        from importlib.machinery import PathFinder
        return PathFinder.find_spec(name, self.import_paths)


def resolve_early(refs, oracle_names, init, library=()):
    """``({ref: callable}, [deferred refs])`` for ``refs`` resolved now, no tree import root
    on ``sys.path`` (the caller has put ``_OracleOnly`` first on ``sys.meta_path``). A ref
    whose module imports a top-level module of the tree, or of the ``library`` under review
    (installed or not), is deferred (``resolve_late``). Raises AdapterFault for anything else
    a ref raises."""
    adapters, deferred = {}, []
    gate = _Library(library, init["import_paths"], early=True)
    sys.meta_path.insert(0, gate)
    try:
        for ref in refs:
            try:
                adapters[ref] = resolve(ref)
            except BaseException as exc:
                if not _needs_tree(exc, oracle_names, init["import_paths"]):
                    raise AdapterFault(ref, _raised(exc, init["root"])) from None
                deferred.append(ref)
    finally:
        sys.meta_path.remove(gate)
    return adapters, deferred


def resolve_late(deferred, adapters, init, library=()):
    """Resolve each ``deferred`` ref into ``adapters`` with the tree's import roots on
    ``sys.path`` after the site folders, then take them off again (the call puts them in
    their own place, before the site folders); the ``library`` under review comes from the
    tree's import roots alone. Raises AdapterFault for a ref that raises: its innermost frame
    says whose fault it is (the adapter's file, or the library's)."""
    added = [entry for entry in init["import_paths"] if entry not in sys.path]
    sys.path.extend(added)
    gate = _Library(library, init["import_paths"], early=False)
    sys.meta_path.insert(0, gate)
    try:
        for ref in deferred:
            try:
                adapters[ref] = resolve(ref)
            except BaseException as exc:
                raise AdapterFault(ref, _raised(exc, init["root"])) from None
    finally:
        sys.meta_path.remove(gate)
        for entry in added:
            if entry in sys.path:
                sys.path.remove(entry)


def split_ops(ops, deferred):
    """``(now, later)``: the input ops up to the first that applies a deferred adapter (a
    ``transform`` whose module imports the tree), and the rest, applied once it resolves."""
    for index, op in enumerate(ops):
        if op[:1] == ["transform"] and op[1] in deferred:
            return ops[:index], ops[index:]
    return ops, []
