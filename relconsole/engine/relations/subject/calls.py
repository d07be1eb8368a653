"""One call's work in the forked child: resolve the subject, apply it, say what it raised and used (SPEC §7).

A part of the subject's fork server (``harness.py``; standard library only, merged into its
script by ``script.py``). ``_apply`` makes the call; ``_raised`` and ``_imported`` are what the
result says of an exception and of the tree files the call imported or opened.
"""

import os
import sys
import traceback

from relconsole.engine.relations.subject.inputs import _fresh


def resolve(ref, oracle_names=(), root=None):
    """The callable ``module:attr.path`` names (entry-point style). A module under one of the
    oracle's top-level packages (``oracle_names``) is imported from the tree ``root`` alone
    (``_OracleOnly``, for this import only), never from a same-named package on the path.
    Raises ImportError, AttributeError."""
    import importlib
    module_name, _, attr_path = ref.partition(":")
    if module_name.partition(".")[0] in oracle_names:
        finder = _OracleOnly(oracle_names, root)
        sys.meta_path.insert(0, finder)
        try:
            target = importlib.import_module(module_name)
        finally:
            sys.meta_path.remove(finder)
    else:
        target = importlib.import_module(module_name)
    for part in attr_path.split("."):
        target = getattr(target, part)
    return target


class _OracleOnly:
    """A meta-path finder for the oracle's own top-level packages, looked up in the tree root
    alone, while the rest of the tree is not yet on ``sys.path``."""

    def __init__(self, names, root):
        self.names, self.root = set(names), root

    def find_spec(self, name, path=None, target=None):
        from importlib.machinery import PathFinder
        if path is None and name in self.names:
            return PathFinder.find_spec(name, [self.root])
        return None


def _tree_files(root, frames_or_files):
    """The tree-relative paths of the files named that are in the tree, however they were
    named (``/proc/self/root/...``, a link, ``..``): each is resolved before it is judged.
    A code object's pseudo-file (``<string>``: the harness's own script) is none, though the
    tree is the working folder it would resolve under."""
    root = os.path.realpath(root)
    out = []
    for filename in frames_or_files:
        if not isinstance(filename, str) or filename.startswith("<"):
            continue
        try:
            path = os.path.realpath(filename)
        except (TypeError, ValueError, OSError):
            continue
        if path.startswith(root + os.sep):
            out.append(os.path.relpath(path, root).replace(os.sep, "/"))
    return out


def _raised(exc, root):
    frames = traceback.extract_tb(exc.__traceback__)
    try:
        message = str(exc)
    except BaseException:  # a hostile __str__
        message = "(the exception could not be shown)"
    names = []
    for cls in type(exc).__mro__:
        names += [cls.__name__, f"{cls.__module__}.{cls.__qualname__}"]
    where = f"{os.path.basename(frames[-1].filename)}:{frames[-1].lineno}" if frames else ""
    missing = getattr(exc, "name", None) if isinstance(exc, ImportError) else None
    return {"type": type(exc).__name__, "classes": names, "message": message[:2000], "where": where,
            "files": _tree_files(root, [f.filename for f in frames]),
            "module": missing if isinstance(missing, str) else None}


_PRELOADED = {}  # module name -> its file, loaded by the server before any tree path was importable


def _imported(root, opened=()):
    """Tree files the call used: every module's file, and every file it opened (``opened``,
    absolute paths from the audit hook): a data file a subject reads binds its relation.
    A module the server had loaded (same name, same file) is none of the tree's: not resolved."""
    # an import tries __pycache__ files that are not there, and writes them where it can: neither is the tree's
    files = [path for path in opened if "__pycache__" not in path.split(os.sep) and os.path.exists(path)]
    for key, module in list(sys.modules.items()):
        name = getattr(module, "__file__", None)
        if isinstance(name, str) and _PRELOADED.get(key) != name:
            files.append(name)
    return sorted(set(_tree_files(root, files)))


def _record_opens(opened):
    """An audit hook adding the absolute path of every file the call opens to ``opened``."""
    add, absolute = opened.add, os.path.abspath

    def hook(event, args):
        if event == "open" and args and isinstance(args[0], str):
            add(absolute(args[0]))
    sys.addaudithook(hook)


def _import_roots(init):
    """The tree's import roots on sys.path, after the standard library (once per call)."""
    for index, entry in enumerate(init["import_paths"]):
        sys.path.insert(init["stdlib_count"] + index, entry)


def _apply(call, init, value, adapters, stores=None):
    """The output of one call: the subject on ``value`` (and its inverse, for a roundtrip).
    ``stores``: a list the call's store is added to (mode store), to be read again later."""
    if call.get("mode") == "resolve":  # only check that every name resolves (validate): [[ref, why], ...]
        problems = []
        for ref in call.get("refs", []):
            try:
                resolve(ref)
            except Exception as exc:
                problems.append([ref, _raised(exc, init["root"])])
        return problems
    names = call.get("oracle_roots", ())
    subject = resolve(call["subject"], names, init["root"])
    if call.get("mode") == "store":
        store = subject()
        if stores is not None:
            stores.append(store)
        store.reset()
        for _ in range(int(call.get("times", 1))):  # each ingest reads its rows anew, as a replay does
            store.ingest(_fresh(value) if isinstance(value, list) else value)
        out = store.projection()
    else:
        out = subject(value)
    if call.get("inverse"):
        out = resolve(call["inverse"], names, init["root"])(out)
    if call.get("canon"):
        out = adapters[call["canon"]](out)
    return out
