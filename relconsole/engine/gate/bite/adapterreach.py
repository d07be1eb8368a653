"""What a subject that is an adapter of the oracle reaches in the library under review
(issue 16; SPEC §2 protected paths, §3 subjects), statically: the file defining a name
(package re-exports followed, ``defining_file``), and the library functions an adapter
calls, in two tiers with their callees one level down (``adapter_reach``, ``Reach``).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from relconsole.engine.relations import bindings, targeting
from relconsole.engine.gate.bite.bitefiles import CommitRunTree, DiskRunTree, module_file, relative_roots


MAX_REEXPORTS = 8  # ``from .a import f`` hops followed from the subject's module to the definition


def defining_file(tree: Path, roots: list[str], path: str, attr: str,
                  visited: set[str] | None = None) -> tuple[str, str]:
    """(tree-relative path, attribute path) where ``attr`` of the module at ``path`` is defined,
    following re-exports (``pkg/__init__.py``: ``from .impl import func``, ``from .impl import *``,
    ``from pkg.impl import func as name``) to the module that defines it. ``roots``: the tree's
    import roots (absolute imports). Where nothing defines it, the last module reached (the
    mutation step then says what is missing). ``visited``: a set the files read are added to."""
    walk = Walk(DiskRunTree(tree), relative_roots(tree, roots), lambda p: False, Reach())
    found = _defining(walk, path, attr)
    if visited is not None:
        visited |= walk.reach.consulted
    return found


def _defining(walk: "Walk", path: str, attr: str) -> tuple[str, str]:
    """``defining_file`` over the walk's files (each read once, recorded as consulted)."""
    seen = set()
    for _ in range(MAX_REEXPORTS):
        seen.add(path)
        module = walk.parse(path)
        if module is None:
            return path, attr
        head, dot, rest = attr.partition(".")
        if targeting.defines(module, head):
            return path, attr
        for source, level, name in targeting.reexport(module, head):
            target = module_file(walk.files, walk.roots, path, source, level)
            if target is not None and target not in seen:
                path, attr = target, name + dot + rest
                break
        else:
            return path, attr
    return path, attr


MAX_ADAPTER_HOPS = 3  # functions of the oracle followed from the subject before the library


@dataclass
class Reach:
    """What an adapter subject reaches in the tree under review (``adapter_reach``).

    ``targets``: library file (tree-relative, not protected) -> the attribute paths there the
    adapter calls or names (``Version``, ``bump``, ``Version.parse``), in the order found;
    ``used``: the method names the adapter is seen to use (``targeting.used_attributes``);
    ``functions``: file -> the qualified functions to mutate first (``targeting.library_functions``
    of each target, then ``callees``); ``spare``: file -> the other public methods of the
    classes it uses, mutated only with the budget left; ``callees``: file -> the functions of
    OTHER library modules those call, one level down, with ``called_by`` naming a caller;
    ``skipped``: one line per library file found but left alone, with the reason (a symlink);
    ``consulted``: every file read to find them (the cache key is made of their bytes).
    """

    targets: dict[str, list[str]] = field(default_factory=dict)
    used: set[str] = field(default_factory=set)
    functions: dict[str, list[str]] = field(default_factory=dict)
    spare: dict[str, list[str]] = field(default_factory=dict)
    callees: dict[str, list[str]] = field(default_factory=dict)
    called_by: dict[tuple[str, str], str] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)
    consulted: set[str] = field(default_factory=set)

    def paths(self) -> list[str]:
        """Every library file reached (named by the adapter, or a callee's), sorted."""
        return sorted(set(self.targets) | set(self.functions) | set(self.spare))


@dataclass
class Walk:
    """One walk over a run tree's modules: ``files`` to read them, the import ``roots``, which
    paths are the oracle's (``is_protected``), the ``Reach`` found so far, and the files seen
    and parsed (each parsed once)."""
    files: DiskRunTree | CommitRunTree
    roots: list[str]  # tree-relative import roots ("." the tree itself)
    is_protected: Callable[[str], bool]
    reach: Reach
    seen: set = field(default_factory=set)
    parsed: dict = field(default_factory=dict)

    def parse(self, path: str) -> ast.Module | None:
        """The module at tree path ``path`` (parsed once), or None when it cannot be read."""
        if path not in self.parsed:
            self.reach.consulted.add(path)
            try:
                self.parsed[path] = ast.parse(self.files.read_text(path))
            except (OSError, SyntaxError, ValueError):
                self.parsed[path] = None
        return self.parsed[path]


def adapter_reach(tree: Path, roots: list[str], path: str, attr: str,
                  is_protected: Callable[[str], bool],
                  also: Iterable[tuple[str, str]] = ()) -> Reach:
    """The library functions the function (or class) ``attr`` of the module at tree path
    ``path`` reaches, statically (issue 16; SPEC §2 protected paths, §3 subjects). ``also``:
    more (path, attr) entries of the oracle run with it (a roundtrip's inverse adapter).

    Every dotted name the function reads (``Version(x)``, ``vers.core.bump``, ``key=canonical``)
    is resolved through its own imports (function-local ones first), then its module's
    (including under a top-level ``if``/``try``: the first alternative with a source file,
    ``bindings.import_alternatives``, and ``from m import *``), then the module's own
    functions, to the module that defines it (``defining_file``: package re-exports
    followed). A definition in a protected file (``is_protected``: another function of the
    oracle) is followed in turn, up to ``MAX_ADAPTER_HOPS`` deep; one in any other file of the
    tree is a target. The targets are then expanded into functions (``_expand``: tiers, and
    the callees in other library modules one level down). ``roots``: the tree's absolute
    import roots; modules outside the tree (the standard library, installed packages) are
    never targets. A target reached through a symlink is put in ``skipped`` instead. Never
    raises for unreadable or unparsable files (they reach nothing).
    """
    walk = Walk(DiskRunTree(tree), relative_roots(tree, roots), is_protected, Reach())
    return _reach(walk, [(path, attr), *also])


def _scope(module: ast.Module, func: ast.AST) -> tuple[dict[str, list], list]:
    """(name -> alternative Bindings, star imports) a function of ``module`` sees: its own
    imports first, then the module's (``bindings.import_alternatives``)."""
    names, stars = bindings.import_alternatives(module.body)
    local, local_stars = bindings.import_bindings(bindings.inner_imports(func))
    return {**names, **{name: [binding] for name, binding in local.items()}}, local_stars + stars


def _follow(walk: Walk, path: str, attr: str, depth: int) -> None:
    """Resolve every name the function ``attr`` of ``path`` (and its same-module helpers) reads."""
    if (path, attr) in walk.seen or depth > MAX_ADAPTER_HOPS:
        return
    walk.seen.add((path, attr))
    module = walk.parse(path)
    if module is None or targeting.find(module, attr) is None:
        return
    for _, func in targeting.entry_functions(module, attr):
        walk.reach.used |= targeting.used_attributes(func)
        scope, stars = _scope(module, func)
        for ref in bindings.references(func):
            for found in _resolve_ref(walk, path, module, scope, stars, ref):
                _reached(walk, found, depth)


def _resolve_ref(walk: Walk, path: str, module: ast.Module, scope: dict, stars: list,
                 ref: list[str]) -> list[tuple[str, str]]:
    """(file, attribute path) pairs a dotted name read in ``path`` may stand for: through the
    first of its import alternatives that reaches a definition in the tree."""
    head, rest = ref[0], ref[1:]
    if head in scope:
        found = None
        for binding in scope[head]:
            found = _through(walk, path, binding, rest)
            if found is not None and _defined(walk, *found) is not None:
                return [found]
        return [found] if found else []
    if targeting.defines(module, head):
        return [(path, ".".join(ref))]
    out = []
    for star in stars:  # ``from m import *``: the name may come from m
        found = _through(walk, path, bindings.Binding(star.module, star.level, head), rest)
        out += [found] if found else []
    return out


def _through(walk: Walk, path: str, binding: bindings.Binding, rest: list[str]) -> tuple[str, str] | None:
    """(file, attribute path) of ``binding`` followed by the attributes ``rest``: into a
    submodule while the next name is one (``vers.core.bump``), else an attribute of the module
    reached. None when it names a module only, or a module outside the tree."""
    module, parts = binding.module, ([binding.name] if binding.name else []) + list(rest)
    file = module_file(walk.files, walk.roots, path, module, binding.level) if module or binding.level else None
    while parts and (file is None or _defined(walk, file, parts[0]) is None):
        module = f"{module}.{parts[0]}" if module else parts[0]
        sub = module_file(walk.files, walk.roots, path, module, binding.level)
        if sub is None:
            break
        file, parts = sub, parts[1:]
    return (file, ".".join(parts)) if file is not None and parts else None


def _defined(walk: Walk, file: str, attr: str) -> tuple[str, str] | None:
    """(defining file, attribute path) of ``attr`` of the module ``file`` (re-exports
    followed), the attribute shortened to what is defined (``Version.MAX`` -> ``Version``);
    None when the module defines no such function or class."""
    path, found = _defining(walk, file, attr)
    parts = found.split(".")
    module = walk.parse(path)
    while module is not None and parts:
        if targeting.find(module, ".".join(parts)) is not None:
            return path, ".".join(parts)
        parts.pop()
    return None


def _library_file(walk: Walk, path: str) -> bool:
    """Whether bite may mutate the file at tree path ``path``; a symlink on the way is put
    in ``skipped`` with its reason."""
    why = walk.files.link(path)
    if why is not None:
        if why not in walk.reach.skipped:
            walk.reach.skipped.append(why)
        return False
    return True


def _reached(walk: Walk, found: tuple[str, str], depth: int) -> None:
    """Record a name's definition: a function of the oracle is followed, a library one kept."""
    defined = _defined(walk, *found)
    if defined is None:
        return
    path, attr = defined
    if walk.is_protected(path):
        _follow(walk, path, attr, depth + 1)
        return
    if not _library_file(walk, path):
        return
    attrs = walk.reach.targets.setdefault(path, [])
    if attr not in attrs:
        attrs.append(attr)


def _add(table: dict[str, list[str]], path: str, names: Iterable[str]) -> None:
    have = table.setdefault(path, [])
    have.extend(name for name in names if name not in have)


def _expand(walk: Walk) -> None:
    """The functions to mutate, from the targets: each target's two tiers
    (``targeting.library_functions``, preferring the methods the adapter uses), then, from
    every first-tier function, what it calls in OTHER library modules, one level down: the
    callee function itself (a class: the methods the caller uses and its construction and
    rendering dunders), resolved through the caller's module imports."""
    reach = walk.reach
    for path, attrs in reach.targets.items():
        module = walk.parse(path)
        for attr in attrs:
            first, later = targeting.library_functions(module, attr, reach.used)
            _add(reach.functions, path, first)
            _add(reach.spare, path, later)
    first_tier = {path: list(names) for path, names in reach.functions.items()}
    for path, names in first_tier.items():  # one level: a callee's own calls are not followed
        module = walk.parse(path)
        for qualname in names:
            func = targeting.find(module, qualname)
            scope, stars = _scope(module, func)
            for ref in bindings.called_references(func):
                for found in _resolve_ref(walk, path, module, scope, stars, ref):
                    _callee(walk, found, path, qualname, func)
    for path in list(reach.spare):
        reach.spare[path] = [q for q in reach.spare[path] if q not in reach.functions.get(path, [])]
        if not reach.spare[path]:
            del reach.spare[path]


def _callee(walk: Walk, found: tuple[str, str], caller_path: str, caller: str, func: ast.AST) -> None:
    """Record the definition ``found`` that ``caller`` (in ``caller_path``) calls, when it is
    in another library module."""
    defined = _defined(walk, *found)
    if defined is None or defined[0] == caller_path or walk.is_protected(defined[0]):
        return
    path, attr = defined
    if not _library_file(walk, path):
        return
    first, _ = targeting.library_functions(walk.parse(path), attr, targeting.used_attributes(func), helpers=False)
    _add(walk.reach.callees, path, first)
    _add(walk.reach.functions, path, first)
    for name in first:
        walk.reach.called_by.setdefault((path, name), caller)


def _reach(walk: Walk, entries: Iterable[tuple[str, str]]) -> Reach:
    """Follow each (path, attr) entry: an adapter of the oracle through what it calls, a
    library definition as a target itself; then expand the targets into functions."""
    for path, attr in entries:
        if walk.is_protected(path):
            _follow(walk, path, attr, 0)
        else:
            _reached(walk, (path, attr), 0)
    _expand(walk)
    return walk.reach
