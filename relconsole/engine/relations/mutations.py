"""Small AST mutations of ONE subject, for "does it bite" (``relconsole bite``, issue 3 item 6).

``mutants(source, target)`` parses a module, finds the functions the relation's subject
reaches (SPEC §3 ``module:attr.path``), and returns one ``Mutant`` per mutation site: the
whole module re-written with ``ast.unparse`` with exactly one change inside one of those
functions. Everything outside them is unchanged in meaning (comments and layout are lost,
which is fine for a temporary tree).

What is mutated is ``targeting.target_functions`` (a function subject and what it calls one
level deep; a class's methods; one method). For an adapter of the oracle (issue 16),
``function_mutants`` gives every mutant of named functions of one library file (chosen by
``targeting.library_functions``, reached through ``bindings``), and ``choose`` bounds the
mutants of all the files together; ``module_mutants`` is the untiered form (every
``targeting.entry_functions``). The operators and their sites are ``operators.py``'s.

Why not an existing library: mutmut 3 (libcst) rewrites every file of a project into a
``mutants/`` copy with trampolines and needs pytest to run the mutants; cosmic-ray keeps a
session database, a config file and a test command per run, with a dozen dependencies
(sqlalchemy, aiohttp, parso...); mutatest drives pytest over whole files with coverage. None
targets one function programmatically, none runs a relation instead of a test suite, and
none has the data-pipeline operators a relation is about (lost sort, lost dedup, first row
only). ``ast`` from the standard library does it in a few hundred lines.
"""

from __future__ import annotations

import ast
import copy
from dataclasses import dataclass
from typing import Callable, TypeVar

from relconsole.engine.relations.operators import Edit, Path_, node_at, replace_at, walk_paths, sites
from relconsole.engine.relations.targeting import (TargetNotFound, entry_functions, is_func, resolve_target,
                                                   target_functions, unique_functions)

DEFAULT_LIMIT = 40


@dataclass(frozen=True)
class Mutant:
    """One mutation of a module: ``source`` is the whole module with one change.

    ``operator`` is a name from OPERATORS, ``label`` a short human text, ``line`` the
    1-based line in the ORIGINAL source, ``function`` the qualified name mutated.
    """

    operator: str
    label: str
    line: int
    function: str
    source: str


def _spread(items: list, limit: int, key: Callable) -> list:
    """At most ``limit`` items, round-robin over ``key`` groups so every operator is kept."""
    groups: dict = {}
    for item in items:
        groups.setdefault(key(item), []).append(item)
    chosen, lists = [], list(groups.values())
    while len(chosen) < limit and any(lists):
        for group in lists:
            if group and len(chosen) < limit:
                chosen.append(group.pop(0))
    return chosen


def mutants(source: str, attr_path: str, limit: int = DEFAULT_LIMIT) -> list[Mutant]:
    """The mutants of ``attr_path`` (``func``, ``Class`` or ``Class.method``) in module ``source``.

    Deterministic: the same source gives the same mutants in the same order (by line).
    Mutants whose text equals the original or another mutant's are dropped; at most
    ``limit``, chosen round-robin across operators. Raises SyntaxError for a module that
    does not parse and TargetNotFound when ``attr_path`` is not defined in it.
    """
    module = ast.parse(source)
    out = _module_mutants(module, target_functions(module, attr_path))
    chosen = _spread(out, limit, lambda m: m.operator)
    return sorted(chosen, key=lambda m: (m.line, out.index(m)))


def module_mutants(source: str, attr_paths: list[str]) -> list[Mutant]:
    """EVERY mutant (no limit; bound them with ``choose``) of the functions a caller in another
    module reaches through ``attr_paths`` in module ``source`` (``entry_functions`` of each;
    a function reached twice is mutated once), in source order of the functions.

    Deterministic; a mutant whose text equals the original or another's is dropped. Raises
    SyntaxError for a module that does not parse, TargetNotFound when an attribute path is
    not defined in it.
    """
    module = ast.parse(source)
    functions = unique_functions([pair for attr in attr_paths for pair in entry_functions(module, attr)])
    return _module_mutants(module, functions)


def function_mutants(source: str, qualnames: list[str]) -> list[Mutant]:
    """EVERY mutant (no limit; bound them with ``choose``) of exactly the functions
    ``qualnames`` (``f``, ``Cls.method``) of module ``source``, nothing added, in the order
    given. Deterministic; raises SyntaxError for a module that does not parse and
    TargetNotFound when a name is not a function defined in it."""
    module = ast.parse(source)
    functions = []
    for qualname in dict.fromkeys(qualnames):
        node = resolve_target(module, qualname)[1]
        if not is_func(node):
            raise TargetNotFound(f"{qualname}: not a function")
        functions.append((qualname, node))
    return _module_mutants(module, functions)


def _module_mutants(module: ast.Module, functions: list[tuple[str, ast.AST]]) -> list[Mutant]:
    out, seen = [], {ast.unparse(module)}
    for qualname, func in functions:
        func_path = _path_to(module, func)
        for site in sites(func):
            text = _apply(module, func_path + site.path, site.edit)
            if text is None or text in seen:
                continue
            seen.add(text)
            out.append(Mutant(site.operator, site.label, site.line, qualname, text))
    return out


T = TypeVar("T")


def choose(items: list[T], limit: int, operator: Callable[[T], str], owner: Callable[[T], object]) -> list[T]:
    """At most ``limit`` of ``items``, round-robin across operators as ``mutants`` does, and
    within one operator across owners (the functions mutated, in several files), so that the
    sites of one long function do not crowd out every other function. The chosen items keep
    their order in ``items``. Deterministic."""
    rank: dict = {}
    ranked = []
    for index, item in enumerate(items):
        group = (operator(item), owner(item))
        rank[group] = rank.get(group, -1) + 1
        ranked.append((rank[group], index, item))
    ranked.sort(key=lambda r: (r[0], r[1]))
    chosen = _spread(ranked, limit, lambda r: operator(r[2]))
    return [item for _, _, item in sorted(chosen, key=lambda r: r[1])]


def _path_to(module: ast.Module, target: ast.AST) -> Path_:
    return next(path for path, node in walk_paths(module) if node is target)


def _apply(module: ast.Module, path: Path_, edit: Edit) -> str | None:
    mutated = copy.deepcopy(module)
    replace_at(mutated, path, edit(node_at(mutated, path)))
    ast.fix_missing_locations(mutated)
    try:
        text = ast.unparse(mutated)
        compile(text, "<mutant>", "exec")
    except (SyntaxError, ValueError, TypeError):  # an edit the grammar does not allow here
        return None
    return text
