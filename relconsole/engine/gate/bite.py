"""Does a relation bite? Mutate its subject and see whether the relation notices (issue 3 item 6).

``bite(review, relation_id)`` builds ONE run tree of HEAD with the oracle overlaid (SPEC §2),
runs the relation once unmutated (the baseline), then for each mutant of the subject
(``relconsole.engine.relations.mutations``) writes the mutated module into the tree, runs the relation
once with its base seed in a worker process, and restores the file, always. A mutant is
*caught* when the relation misses, raises or times out, *survived* when it holds. The
verdict (``BiteVerdict``): "bites" when the comparison caught a mutant, "bites by crash
only" when every catch was an exception or a timeout, "does not bite" when none was caught.
When the baseline already misses (or the relation is blocked, §4), mutation results would
mean nothing: the report says so and ``bites`` is None.

A subject that is an adapter of the oracle (its defining file is protected, §2: e.g.
``oracle/adapters.py`` calling ``markupsafe.escape``) is not what the reviewer wants mutated:
the relation guards the library under review (issue 16). For such a subject (and its
``inverse`` or ``merge`` when they are adapters too) bite mutates the library functions the
adapter reaches (``adapter_reach``: the names it calls, resolved statically through its
module-level and function-local imports, star imports and package re-exports, to files of
the tree that are NOT protected), never the adapter, in two tiers:

1. what the adapter calls (a function: itself and the same-module functions it calls; a
   class: the methods the adapter is seen to use on it, ``Markup(s).unescape()``, and its
   construction and rendering dunders, ``__init__``, ``__new__``, ``__str__``, ``__html__``),
   and one level further, the functions those call in OTHER library modules, resolved
   through their module's imports (``try: from ._speedups import f except ImportError: from
   ._native import f`` resolves to ``_native.py``: a compiled extension has no source);
2. the other public methods of the classes it uses, only with the budget the first tier left,
   and never more than half as many mutants as the first tier got (``SPARE_SHARE``): code
   the relation is not seen to run can only dilute the verdict.

A file reached through a symlink is skipped with a reason, never written. Only when the
adapter reaches no function of the tree (it uses the standard library, or installed
packages) is the adapter itself mutated, and the report's notes say so.
``reached_library_paths`` gives the library files an adapter reaches without running
anything (read from git objects).

Results are cached in ``<git_dir>/relconsole/bite.json`` keyed by the relation identity
(§3), the sha256 of every file read to find the mutated functions and of every file
mutated, and of the input, so ``cached_verdict`` (and ``cached_bite``) answer without
running anything.
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import json
import os
import posixpath
import shutil
import stat
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Callable, Iterable, Mapping

from relconsole.engine.relations import bindings, mutations, operators, targeting
from relconsole.engine.oracle.catalog import Relation
from relconsole.engine.errors import RelconsoleError, UsageError
from relconsole.engine.repo.gitio import TreeView
from relconsole.engine.repo.owners import protected
from relconsole.engine.gate.review import Review, import_paths, plan_for
from relconsole.engine.relations.pool import evaluate_once
from relconsole.engine.relations.records import RunPlan, RunRecord
from relconsole.engine.relations.runner import draw_seed
from relconsole.engine.repo.workspace import build_run_tree, scratch_dir
from relconsole.engine.literal import counted

CACHE_FILE = ("relconsole", "bite.json")
CACHE_ENTRIES = 500
MIN_MUTANT_TIMEOUT = 10.0  # seconds; a mutant that loops forever is caught, not waited on
# how bite chooses what to mutate; part of the cache key, so a cached verdict reached by an
# older choice of targets is not served
TARGETING = "tiers-2"
SPARE_SHARE = 0.5  # other public methods get at most this many mutants per first-tier mutant
COMPANION_ROLES = ("inverse", "merge")  # run with the subject: their adapters' reach is mutated too

BITES = "bites"
CRASH_ONLY = "bites by crash only"
NO_BITE = "does not bite"
VERDICTS = (BITES, CRASH_ONLY, NO_BITE)


@dataclass
class MutationResult:
    """One mutant's fate. ``outcome``: ``caught`` or ``survived``; ``detail``: the miss, or "held".

    ``crashed`` says the catch was an exception or a timeout: any caller of the subject
    would have noticed, so it says less about the relation than a disagreement does.
    """

    operator: str
    label: str
    path: str  # repository-relative file mutated: the subject's, or a library file an adapter calls
    line: int  # in the original file
    function: str
    outcome: str
    detail: str
    seconds: float = 0.0
    crashed: bool = False  # caught by an exception (or timeout), not by the comparison


@dataclass(frozen=True)
class BiteVerdict:
    """What a finished bite found, as the cache keeps it and every front end words it.

    ``verdict``: ``BITES`` (its comparison caught a mutant), ``CRASH_ONLY`` (it caught some,
    every one by an exception or a timeout) or ``NO_BITE`` (it caught none, or there was no
    mutant); ``caught``, ``crashed`` (of those caught) and ``total`` count the mutants.
    """

    verdict: str
    caught: int
    crashed: int
    total: int

    @classmethod
    def of(cls, caught: int, crashed: int, total: int) -> "BiteVerdict":
        verdict = BITES if caught > crashed else CRASH_ONLY if caught else NO_BITE
        return cls(verdict, caught, crashed, total)

    @property
    def bites(self) -> bool:
        """True only for ``BITES``: a crash-only catch says nothing of the comparison."""
        return self.verdict == BITES

    def words(self) -> str:
        """The verdict as ``relconsole bite`` prints it after ``RELATION_ID: ``; the console
        shows the same words."""
        if self.verdict == BITES:
            crashes = f" ({self.crashed} by an exception)" if self.crashed else ""
            return f"{BITES}: caught {self.caught} of {counted(self.total, 'mutation')}{crashes}"
        if self.verdict == CRASH_ONLY:
            return (f"{CRASH_ONLY}: caught {self.caught} of {counted(self.total, 'mutation')}, "
                    "every one by an exception or a timeout, none by the comparison")
        return f"{NO_BITE}: caught {self.caught} of {counted(self.total, 'mutation')}"

    def to_json(self) -> dict:
        """``{"verdict", "caught", "crashed", "total"}``: the ``bite`` field of ``run --json``."""
        return {"verdict": self.verdict, "caught": self.caught, "crashed": self.crashed, "total": self.total}


@dataclass
class BiteReport:
    """What ``bite`` found for one relation.

    ``baseline``: ``held``, ``missed`` or ``blocked`` (the unmutated relation); ``results``
    is empty unless it held. ``bites`` is True when the comparison caught a mutant, False
    when none was caught (or there was no mutant) or only by crashes, None when the baseline
    did not hold; ``summary`` the verdict word and counts (None when the baseline did not
    hold). ``notes``: what was mutated instead of the subject, and why (an adapter of the
    oracle, issue 16), how the mutants were spent, and each target left alone with its reason.
    """

    relation_id: str
    subject: str
    subject_path: str | None
    baseline: str
    baseline_detail: str
    key: str | None = None
    results: list[MutationResult] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def caught(self) -> int:
        return sum(1 for r in self.results if r.outcome == "caught")

    @property
    def crashed(self) -> int:
        return sum(1 for r in self.results if r.outcome == "caught" and r.crashed)

    @property
    def total(self) -> int:
        return len(self.results)

    @property
    def crash_only(self) -> bool:
        """Every mutant it caught raised or timed out: any caller would have noticed those,
        so the relation's own comparison caught nothing."""
        return self.caught > 0 and self.crashed == self.caught

    @property
    def summary(self) -> BiteVerdict | None:
        """The verdict word and counts, None when the baseline did not hold."""
        return BiteVerdict.of(self.caught, self.crashed, self.total) if self.baseline == "held" else None

    @property
    def bites(self) -> bool | None:
        """True when its comparison caught a mutant; False when none, or only by crashes."""
        summary = self.summary
        return None if summary is None else summary.bites

    def verdict(self) -> str:
        """One line for a terminal or a pane."""
        if self.baseline == "blocked":
            return f"{self.relation_id}: blocked, cannot run: {self.baseline_detail}"
        if self.baseline != "held":
            return (f"{self.relation_id}: already misses without any mutation "
                    f"({self.baseline_detail}); bite results would mean nothing")
        return f"{self.relation_id}: {self.summary.words()}"

    def to_json(self) -> dict:
        """The report as ``bite --json`` prints it; ``verdict_word`` is one of ``VERDICTS``
        (None when the baseline did not hold)."""
        summary = self.summary
        return {"relation_id": self.relation_id, "subject": self.subject,
                "subject_path": self.subject_path, "baseline": self.baseline,
                "baseline_detail": self.baseline_detail, "bites": self.bites,
                "verdict_word": summary.verdict if summary else None,
                "caught": self.caught, "crashed": self.crashed, "crash_only": self.crash_only, "total": self.total,
                "verdict": self.verdict(), "notes": list(self.notes),
                "mutations": [dataclasses.asdict(r) for r in self.results]}


def _relation(review: Review, relation_id: str) -> Relation:
    if review.catalog is None:
        raise RelconsoleError("the catalog did not load; fix it before biting relations")
    relation = review.catalog.get(relation_id)
    if relation is None:
        raise UsageError(f"no relation {relation_id!r} in the catalog")
    return relation


def _base_seed(relation: Relation) -> int:
    """One drawn seed for the original run and every mutant, so they see the same inputs."""
    return draw_seed()


# --- reading a run tree: a directory, or a commit's objects with the oracle overlaid ----------

class _DirFiles:
    """The files of a run tree on disk (``tree``)."""

    def __init__(self, tree: Path):
        self.tree = Path(tree)

    def is_file(self, path: str) -> bool:
        return (self.tree / path).is_file()

    def read_text(self, path: str) -> str:
        return (self.tree / path).read_text(encoding="utf-8")

    def link(self, path: str) -> str | None:
        return _through_link(self.tree, path)

    def real(self, path: str) -> str:
        """``path`` with the symlinks on the way resolved, when that stays in the tree."""
        try:
            return (self.tree / path).resolve().relative_to(self.tree.resolve()).as_posix()
        except (OSError, ValueError):
            return path


class _CommitFiles:
    """The files a run tree of ``commit`` would hold (SPEC §2: the commit's files, the oracle
    export's at protected paths), read from git objects and the export; nothing is written."""

    def __init__(self, review: Review, commit: str):
        self.view = TreeView(review.repo, commit)
        self.commit = commit
        self.oracle = Path(review.oracle_dir)
        self.patterns = review.layout.protected

    def _in_oracle(self, path: str) -> bool:
        return protected(self.patterns, path)

    def _target(self, path: str) -> str | None:
        """``path`` itself, or where it points when the commit holds it as a symlink inside
        the tree (one hop); None for a link that leaves the tree."""
        target = self.view.symlink_target(path)
        if target is None:
            return path
        resolved = posixpath.normpath(posixpath.join(posixpath.dirname(path), target))
        return None if target.startswith("/") or resolved.startswith("..") else resolved

    def is_file(self, path: str) -> bool:
        if self._in_oracle(path):
            return (self.oracle / path).is_file()
        target = self._target(path)
        return target is not None and self.view.exists(target)

    def read_text(self, path: str) -> str:
        if self._in_oracle(path):
            return (self.oracle / path).read_text(encoding="utf-8")
        target = self._target(path)
        data = self.view.read_bytes(target) if target is not None else None
        if data is None:
            raise FileNotFoundError(f"{path}: no such file in {self.commit[:12]}")
        return data.decode("utf-8")

    def real(self, path: str) -> str:
        return path if self._in_oracle(path) else self._target(path) or path

    def link(self, path: str) -> str | None:
        parts = PurePosixPath(path).parts
        for end in range(1, len(parts) + 1):
            shown = "/".join(parts[:end])
            target = None if self._in_oracle(shown) else self.view.symlink_target(shown)
            if target is not None:
                return (f"{path}: not mutated, {shown} is a symlink (to {target}) and bite "
                        "never writes through a link")
        return None

    def roots(self, layout) -> list[str]:
        """The import roots (§3) as tree-relative paths: configured, or the root plus ``src/``."""
        if layout.import_paths is not None:
            return [posixpath.normpath(p) for p in layout.import_paths]
        return ["."] + (["src"] if self.view.is_dir("src") else [])


def _relative_roots(tree: Path, roots: Iterable[str]) -> list[str]:
    """Absolute import roots as paths relative to ``tree`` ("." the tree itself); a root
    outside the tree holds no code of the review and is left out."""
    out = []
    for root in roots:
        try:
            out.append(Path(root).resolve().relative_to(Path(tree).resolve()).as_posix())
        except ValueError:
            continue
    return out


# --- locating the subject ----------------------------------------------------------------

def subject_file(review: Review, relation: Relation, tree: Path) -> str | None:
    """Repository-relative path of the subject's module file under ``tree``, or None."""
    return _spec_file(_DirFiles(tree), _relative_roots(tree, import_paths(review.layout, tree)), relation.subject)


def _spec_file(files, roots: list[str], spec: str) -> str | None:
    """The tree-relative file of the module of ``module:attr`` under the import ``roots``."""
    module = spec.split(":", 1)[0].replace(".", "/")
    for root in roots:
        for name in (f"{module}.py", f"{module}/__init__.py"):
            candidate = posixpath.normpath(posixpath.join(root, name))
            if files.is_file(candidate):
                return files.real(candidate)
    return None


MAX_REEXPORTS = 8  # ``from .a import f`` hops followed from the subject's module to the definition


def defining_file(tree: Path, roots: list[str], path: str, attr: str,
                  visited: set[str] | None = None) -> tuple[str, str]:
    """(tree-relative path, attribute path) where ``attr`` of the module at ``path`` is defined,
    following re-exports (``pkg/__init__.py``: ``from .impl import func``, ``from .impl import *``,
    ``from pkg.impl import func as name``) to the module that defines it. ``roots``: the tree's
    import roots (absolute imports). Where nothing defines it, the last module reached (the
    mutation step then says what is missing). ``visited``: a set the files read are added to."""
    walk = _Walk(_DirFiles(tree), _relative_roots(tree, roots), lambda p: False, Reach())
    found = _defining(walk, path, attr)
    if visited is not None:
        visited |= walk.reach.consulted
    return found


def _defining(walk: "_Walk", path: str, attr: str) -> tuple[str, str]:
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
            target = _module_file(walk.files, walk.roots, path, source, level)
            if target is not None and target not in seen:
                path, attr = target, name + dot + rest
                break
        else:
            return path, attr
    return path, attr


def _module_file(files, roots: list[str], path: str, module: str, level: int) -> str | None:
    """The tree-relative file of ``module`` imported from the file ``path`` (``level`` dots);
    ``roots``: the tree-relative import roots, for an absolute import. None when the tree
    holds no source for it (a compiled extension, the standard library, an installed package)."""
    if level:
        base = PurePosixPath(path).parent
        for _ in range(level - 1):
            base = base.parent
        bases = [base]
    else:
        bases = [PurePosixPath(root) for root in roots]
    name = module.replace(".", "/")
    for base in bases:
        for candidate in ((base / name).with_suffix(".py") if name else None, base / name / "__init__.py"):
            if candidate is None:
                continue
            relative = posixpath.normpath(candidate.as_posix())
            if not relative.startswith("..") and files.is_file(relative):
                return relative
    return None


# --- what an adapter of the oracle reaches (issue 16) --------------------------------------

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
class _Walk:
    files: _DirFiles | _CommitFiles
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
    walk = _Walk(_DirFiles(tree), _relative_roots(tree, roots), is_protected, Reach())
    return _reach(walk, [(path, attr), *also])


def _scope(module: ast.Module, func: ast.AST) -> tuple[dict[str, list], list]:
    """(name -> alternative Bindings, star imports) a function of ``module`` sees: its own
    imports first, then the module's (``bindings.import_alternatives``)."""
    names, stars = bindings.import_alternatives(module.body)
    local, local_stars = bindings.import_bindings(bindings.inner_imports(func))
    return {**names, **{name: [binding] for name, binding in local.items()}}, local_stars + stars


def _follow(walk: _Walk, path: str, attr: str, depth: int) -> None:
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


def _resolve_ref(walk: _Walk, path: str, module: ast.Module, scope: dict, stars: list,
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


def _through(walk: _Walk, path: str, binding: bindings.Binding, rest: list[str]) -> tuple[str, str] | None:
    """(file, attribute path) of ``binding`` followed by the attributes ``rest``: into a
    submodule while the next name is one (``vers.core.bump``), else an attribute of the module
    reached. None when it names a module only, or a module outside the tree."""
    module, parts = binding.module, ([binding.name] if binding.name else []) + list(rest)
    file = _module_file(walk.files, walk.roots, path, module, binding.level) if module or binding.level else None
    while parts and (file is None or _defined(walk, file, parts[0]) is None):
        module = f"{module}.{parts[0]}" if module else parts[0]
        sub = _module_file(walk.files, walk.roots, path, module, binding.level)
        if sub is None:
            break
        file, parts = sub, parts[1:]
    return (file, ".".join(parts)) if file is not None and parts else None


def _defined(walk: _Walk, file: str, attr: str) -> tuple[str, str] | None:
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


def _library_file(walk: _Walk, path: str) -> bool:
    """Whether bite may mutate the file at tree path ``path``; a symlink on the way is put
    in ``skipped`` with its reason."""
    why = walk.files.link(path)
    if why is not None:
        if why not in walk.reach.skipped:
            walk.reach.skipped.append(why)
        return False
    return True


def _reached(walk: _Walk, found: tuple[str, str], depth: int) -> None:
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


def _expand(walk: _Walk) -> None:
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


def _callee(walk: _Walk, found: tuple[str, str], caller_path: str, caller: str, func: ast.AST) -> None:
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


def _through_link(tree: Path, path: str) -> str | None:
    """Why the file at tree path ``path`` must not be written (a symlink on the way, which
    would carry the write out of the file, perhaps out of the tree), or None."""
    here = Path(tree)
    for part in PurePosixPath(path).parts:
        here = here / part
        if here.is_symlink():
            shown = here.relative_to(tree).as_posix()
            return (f"{path}: not mutated, {shown} is a symlink (to {os.readlink(here)}) and bite "
                    "never writes through a link")
    return None


def _head_bytes(review: Review, path: str, view: TreeView | None = None) -> bytes | None:
    """The file as a run tree holds it: the oracle's for a protected path, else HEAD's
    (``view``: a TreeView of HEAD to reuse)."""
    if protected(review.layout.protected, path):
        oracle = review.oracle_dir / path
        return oracle.read_bytes() if oracle.is_file() else None
    return (view or TreeView(review.repo, review.head_sha)).read_bytes(path)


def _input_pin(review: Review, relation: Relation) -> str:
    if relation.lease_id:
        status = review.lease(relation.lease_id)
        path = status.lease.path if status and status.lease else None
    else:
        path = relation.seeds_path
    file = review.oracle_dir / path if path else None
    return hashlib.sha256(file.read_bytes()).hexdigest() if file and file.is_file() else ""


def cache_key(review: Review, relation: Relation, files: Mapping[str, bytes | None],
              mutated: list[str] | tuple[str, ...] = ()) -> str:
    """sha256 over the relation identity (§3), the input, the operator set and the way
    targets are chosen (``TARGETING``), the bytes of ``files`` (tree path -> bytes, None for
    absent: every file read to find what to mutate, and every file mutated, so a change to
    any library file an adapter reaches changes the key, issue 16) and the names of the
    ``mutated`` files."""
    digests = [f"{path}={hashlib.sha256(data).hexdigest() if data is not None else '-'}"
               for path, data in sorted(files.items())]
    parts = [relation.id, review.identities.get(relation.id, ""), _input_pin(review, relation),
             ",".join(operators.OPERATORS), str(mutations.DEFAULT_LIMIT), TARGETING, *digests,
             "mutated:" + ",".join(sorted(mutated))]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def _key_files(review: Review, paths) -> dict[str, bytes | None]:
    """The bytes the key is made of, as a run tree of HEAD holds them (``_head_bytes``): the
    same function for ``bite`` and ``cached_verdict``, so the two always agree."""
    view = TreeView(review.repo, review.head_sha)
    return {path: _head_bytes(review, path, view) for path in sorted(set(paths))}


# --- the cache ---------------------------------------------------------------------------

def _cache_path(review: Review) -> Path:
    return Path(review.repo.git_dir).joinpath(*CACHE_FILE)


def _read_cache(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _store(review: Review, report: BiteReport, files: list[str], mutated: list[str]) -> None:
    path = _cache_path(review)
    data = _read_cache(path)
    data.pop(report.key, None)
    summary = report.summary
    data[report.key] = {"relation_id": report.relation_id, "bites": report.bites, "verdict": summary.verdict,
                        "caught": summary.caught, "crashed": summary.crashed, "total": summary.total,
                        "head": review.head_sha, "files": sorted(files), "paths": sorted(mutated)}
    data = dict(list(data.items())[-CACHE_ENTRIES:])
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_suffix(f".{os.getpid()}.tmp")
    temp.write_text(json.dumps(data, indent=1), encoding="utf-8")
    os.replace(temp, path)  # readers never see half a file


def _entry_verdict(entry: dict) -> BiteVerdict | None:
    """The verdict a cache entry holds, None when it holds none readable."""
    counts = [entry.get(name) for name in ("caught", "crashed", "total")]
    if entry.get("verdict") not in VERDICTS or not all(isinstance(n, int) and n >= 0 for n in counts):
        return None
    return BiteVerdict(entry["verdict"], *counts)


def cached_verdict(review: Review, relation_id: str) -> BiteVerdict | None:
    """The cached verdict of a relation (word and counts, as ``relconsole bite`` last
    printed it) for HEAD's files, or None when not known.

    An entry answers when the files it was keyed on (``files``: the subject's, the library's
    an adapter reaches, the ones mutated) still hold the same bytes in a run tree of HEAD, the
    newest such entry first. Never runs anything and never raises for an unknown relation (None).
    """
    relation = review.catalog.get(relation_id) if review.catalog else None
    if relation is None:
        return None
    read: dict[str, bytes | None] = {}
    view = None
    for key, entry in reversed(list(_read_cache(_cache_path(review)).items())):
        if not (isinstance(entry, dict) and entry.get("relation_id") == relation.id
                and isinstance(entry.get("files"), list) and isinstance(entry.get("paths"), list)):
            continue
        verdict = _entry_verdict(entry)
        if verdict is None:
            continue
        files = [str(f) for f in entry["files"]]
        view = view or TreeView(review.repo, review.head_sha)
        for path in files:
            if path not in read:
                read[path] = _head_bytes(review, path, view)
        if cache_key(review, relation, {f: read[f] for f in files}, [str(p) for p in entry["paths"]]) == key:
            return verdict
    return None


def cached_bite(review: Review, relation_id: str) -> bool | None:
    """The cached ``bites`` of a relation for HEAD's files (``cached_verdict``): True when it
    bites, False when it does not or only by crashes, None when not known."""
    verdict = cached_verdict(review, relation_id)
    return None if verdict is None else verdict.bites


# --- what bite mutates for a relation ----------------------------------------------------

@dataclass
class _Targets:
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


def _targets(review: Review, relation: Relation, tree: Path) -> tuple[str, str, _Targets]:
    """(subject's defining file, its attribute path, what to mutate) in the run tree ``tree``.
    Raises RelconsoleError when the subject has no source file under the import paths."""
    return _plan(review, relation, _DirFiles(tree), _relative_roots(tree, import_paths(review.layout, tree)))


def _plan(review: Review, relation: Relation, files, roots: list[str]) -> tuple[str, str, _Targets]:
    """``_targets`` over ``files`` (a run tree on disk, or a commit's objects) and its
    tree-relative import ``roots``."""
    path = _spec_file(files, roots, relation.subject)
    if path is None:
        raise RelconsoleError(f"{relation.id}: no source file for subject {relation.subject} "
                              "under the import paths")

    def is_protected(p: str) -> bool:
        return protected(review.layout.protected, p)
    walk = _Walk(files, roots, is_protected, Reach())
    path, attr = _defining(walk, path, relation.subject.split(":", 1)[1])
    if not is_protected(path):
        return path, attr, _Targets({path: [attr]}, False, [], set(walk.reach.consulted))
    companions = []  # the adapters (or library functions) the relation runs with the subject
    for role in COMPANION_ROLES:
        spec = getattr(relation, role, None)
        found = _spec_file(files, roots, spec) if spec and ":" in spec else None
        if found is not None:
            companions.append((role, *_defining(walk, found, spec.split(":", 1)[1])))
    reach = _reach(walk, [(path, attr), *[(p, a) for _, p, a in companions]])
    return path, attr, _adapter_targets(path, attr, companions, reach)


def _reach(walk: _Walk, entries: Iterable[tuple[str, str]]) -> Reach:
    """Follow each (path, attr) entry: an adapter of the oracle through what it calls, a
    library definition as a target itself; then expand the targets into functions."""
    for path, attr in entries:
        if walk.is_protected(path):
            _follow(walk, path, attr, 0)
        else:
            _reached(walk, (path, attr), 0)
    _expand(walk)
    return walk.reach


MAX_NAMES_SHOWN = 8  # functions named per note; the rest counted


def _names(names: list[str], shown: int = MAX_NAMES_SHOWN) -> str:
    more = len(names) - shown
    return ", ".join(names[:shown]) + (f", and {more} more" if more > 0 else "")


def _adapter_targets(path: str, attr: str, companions: list[tuple[str, str, str]], reach: Reach) -> _Targets:
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
        return _Targets(files, True, notes + reach.skipped, consulted,
                        {p: n for p, n in reach.functions.items() if n}, dict(reach.spare), dict(reach.called_by))
    if reach.skipped:
        return _Targets({}, True, [
            f"{where} is an adapter of the oracle; no library function it reaches can be mutated, "
            "and the adapter is not mutated in their place", *reach.skipped], consulted)
    return _Targets({path: [attr]}, False, [
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
    files = _CommitFiles(review, commit or review.head_sha)
    try:
        _, _, targets = _plan(review, relation, files, files.roots(review.layout))
    except RelconsoleError:
        return []
    return sorted(p for p in targets.files if not protected(review.layout.protected, p))


# --- running -----------------------------------------------------------------------------

def bite(review: Review, relation_id: str, progress: Callable[[MutationResult], None] | None = None,
         tree: Path | None = None) -> BiteReport:
    """Mutate the subject of ``relation_id`` and report which mutants the relation catches.

    ``progress`` is called with each MutationResult after its file was restored. ``tree``:
    an empty directory to build the run tree in (the caller removes it); default a
    scratch directory removed on return. The user's repository is never written, except
    the cache under its git dir. Raises UsageError (exit 64) for an unknown relation,
    RelconsoleError when the catalog did not load or the subject's source file cannot be
    found, SyntaxError/TargetNotFound (from mutations) for a subject that cannot be parsed.
    """
    relation = _relation(review, relation_id)
    why = review.blocked_reason(relation)
    if why:
        return BiteReport(relation.id, relation.subject, None, "blocked", why)
    own_tree = tree is None
    tree = scratch_dir("relconsole-bite-") if own_tree else Path(tree)
    try:
        build_run_tree(review.repo, review.head_sha, review.oracle_dir, review.layout.protected, tree)
        return _bite_in(review, relation, tree, progress)
    finally:
        if own_tree:
            shutil.rmtree(tree, ignore_errors=True)


def _operator(pm: tuple[str, mutations.Mutant]) -> str:
    return pm[1].operator


def _owner(pm: tuple[str, mutations.Mutant]) -> tuple[str, str]:
    return pm[0], pm[1].function


def _function_mutants(relation: Relation, tier: dict[str, list[str]],
                      originals: dict[str, bytes]) -> list[tuple[str, mutations.Mutant]]:
    found = []
    for path, names in tier.items():
        try:
            found += [(path, m) for m in mutations.function_mutants(originals[path].decode("utf-8"), names)]
        except (SyntaxError, ValueError, targeting.TargetNotFound) as exc:
            raise RelconsoleError(f"{relation.id}: cannot mutate {', '.join(names)} in {path}: {exc}") from None
    return found


_Pairs = list[tuple[str, mutations.Mutant]]  # (tree path, mutant)


def _mutants(relation: Relation, targets: _Targets, originals: dict[str, bytes]) -> tuple[_Pairs, _Pairs]:
    """(first, spare): the (tree path, mutant) pairs to run, at most ``mutations.DEFAULT_LIMIT``
    together. An adapter's library: the first tier spread over operators and functions
    (``mutations.choose``), then the spare tier with the budget left, at most
    ``SPARE_SHARE`` times as many as the first got (all of it when the first has none)."""
    if not targets.library:
        (path, attrs), = targets.files.items()
        try:
            made = mutations.mutants(originals[path].decode("utf-8"), attrs[0])
        except (SyntaxError, ValueError, targeting.TargetNotFound) as exc:
            raise RelconsoleError(f"{relation.id}: cannot mutate {', '.join(attrs)} in {path}: {exc}") from None
        return [(path, m) for m in made], []
    limit = mutations.DEFAULT_LIMIT
    first = mutations.choose(_function_mutants(relation, targets.first, originals), limit, _operator, _owner)
    room = limit - len(first)
    if first:
        room = min(room, int(len(first) * SPARE_SHARE))
    spare = mutations.choose(_function_mutants(relation, targets.spare, originals), room, _operator, _owner) \
        if room > 0 and targets.spare else []
    return first, spare


def _counts(chosen: list[tuple[str, mutations.Mutant]], called_by: dict) -> str:
    per: dict[tuple[str, str], int] = {}
    for path, mutant in chosen:
        per[(path, mutant.function)] = per.get((path, mutant.function), 0) + 1
    return _names([f"{name} {n}" + (f" ({path})" if (path, name) in called_by else "")
                   for (path, name), n in per.items()])


def _spent(first: list, spare: list, targets: _Targets) -> str:
    """One note: how the mutants were spent over the functions, tier by tier."""
    total = len(first) + len(spare)
    text = f"the {counted(total, 'mutant')}: {len(first)} in what it calls and their callees"
    text += f" ({_counts(first, targets.called_by)})" if first else ""
    if targets.spare:
        text += f"; {len(spare)} in the other public methods of the classes it uses"
        text += f" ({_counts(spare, targets.called_by)})" if spare else ""
    return text


def _bite_in(review: Review, relation: Relation, tree: Path,
             progress: Callable[[MutationResult], None] | None) -> BiteReport:
    path, _attr, targets = _targets(review, relation, tree)
    plan = plan_for(review, relation, tree)
    seed = _base_seed(relation)
    first = evaluate_once(plan, seed)
    keyed = _key_files(review, targets.consulted | set(targets.files))
    report = BiteReport(relation.id, relation.subject, path, "held" if first.held else "missed",
                        first.describe(), cache_key(review, relation, keyed, list(targets.files)),
                        notes=list(targets.notes))
    if not first.held:
        return report
    quick = dataclasses.replace(plan, timeout_seconds=min(
        plan.timeout_seconds, max(MIN_MUTANT_TIMEOUT, 20 * first.seconds)))
    originals = {p: (tree / p).read_bytes() for p in targets.files}
    chosen, spare = _mutants(relation, targets, originals)
    if targets.library and (chosen or spare):
        report.notes.append(_spent(chosen, spare, targets))
    for where, mutant in chosen + spare:
        result = _run_mutant(quick, tree, where, originals[where], mutant, seed)
        report.results.append(result)
        if progress:
            progress(result)
    _store(review, report, list(keyed), list(targets.files))
    return report


def _run_mutant(plan: RunPlan, tree: Path, path: str, original: bytes, mutant: mutations.Mutant,
                seed: int) -> MutationResult:
    """Write the mutant, run once, restore the original bytes whatever happens."""
    try:
        _write(tree, path, mutant.source.encode("utf-8"))
        record: RunRecord = evaluate_once(plan, seed)
    finally:
        _write(tree, path, original)
    # a vacuous run (empty outputs) is stopped by the gate's empty-output rule, not by this relation
    return MutationResult(mutant.operator, mutant.label, path, mutant.line, mutant.function,
                          "survived" if record.held or record.vacuous else "caught", record.describe(), record.seconds,
                          record.error_type is not None)


def _write(tree: Path, path: str, data: bytes) -> None:
    """Put ``data`` at tree path ``path`` without ever following a symlink: a link on the way
    (one a subject running as a plain process put there since) raises RelconsoleError; the
    bytes go to a new file renamed over the old one. The module's cached bytecode is removed:
    a mutant of the same size written within the same second would otherwise run the cache."""
    why = _through_link(tree, path)
    if why is not None:
        raise RelconsoleError(why)
    file = tree / path
    mode = stat.S_IMODE(os.lstat(file).st_mode)
    temp = file.with_name(f".{file.name}.{os.getpid()}.bite")
    temp.unlink(missing_ok=True)
    with os.fdopen(os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode), "wb") as handle:
        os.fchmod(handle.fileno(), mode)  # the umask took bits off
        handle.write(data)
    os.replace(temp, file)
    cache = file.parent / "__pycache__"
    if cache.is_dir() and not cache.is_symlink():
        for compiled in cache.glob(f"{file.stem}.*.pyc"):
            compiled.unlink(missing_ok=True)
