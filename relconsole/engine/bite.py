"""Does a relation bite? Mutate its subject and see whether the relation notices (issue 3 item 6).

``bite(review, relation_id)`` builds ONE run tree of HEAD with the oracle overlaid (SPEC §2),
runs the relation once unmutated (the baseline), then for each mutant of the subject
(``relconsole.engine.mutations``) writes the mutated module into the tree, runs the relation
once with its base seed in a worker process, and restores the file, always. A mutant is
*caught* when the relation misses, raises or times out, *survived* when it holds. A relation
that catches none "does not bite". When the baseline already misses (or the relation is
blocked, §4), mutation results would mean nothing: the report says so and ``bites`` is None.

A subject that is an adapter of the oracle (its defining file is protected, §2: e.g.
``oracle/adapters.py`` calling ``packaging.version.Version``) is not what the reviewer wants
mutated: the relation guards the library under review (issue 16). For such a subject bite
mutates the library functions the adapter reaches (``adapter_reach``: the names it calls,
resolved statically through its module-level and function-local imports, star imports and
package re-exports, to files of the tree that are NOT protected), never the adapter; a file
reached through a symlink is skipped with a reason, never written. Only when the adapter
reaches no function of the tree (it uses the standard library, or installed packages) is the
adapter itself mutated, and the report's notes say so.

Results are cached in ``<git_dir>/relconsole/bite.json`` keyed by the relation identity
(§3), the sha256 of every file read to find the mutated functions and of every file
mutated, and of the input, so ``cached_bite`` answers without running anything.
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import json
import os
import shutil
import stat
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Callable, Mapping

from relconsole.engine import mutations
from relconsole.engine.catalog import Relation
from relconsole.engine.errors import RelconsoleError, UsageError
from relconsole.engine.gitio import TreeView
from relconsole.engine.owners import protected
from relconsole.engine.review import Review, import_paths, plan_for
from relconsole.engine.runner import RunPlan, RunRecord, draw_seed, evaluate_once
from relconsole.engine.workspace import build_run_tree, scratch_dir

CACHE_FILE = ("relconsole", "bite.json")
CACHE_ENTRIES = 500
MIN_MUTANT_TIMEOUT = 10.0  # seconds; a mutant that loops forever is caught, not waited on


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


@dataclass
class BiteReport:
    """What ``bite`` found for one relation.

    ``baseline``: ``held``, ``missed`` or ``blocked`` (the unmutated relation); ``results``
    is empty unless it held. ``bites`` is True when a mutant was caught, False when none
    was (or there was no mutant), None when the baseline did not hold. ``notes``: what was
    mutated instead of the subject, and why (an adapter of the oracle, issue 16), and each
    target left alone with its reason.
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
    def bites(self) -> bool | None:
        """True when its comparison caught a mutant; False when none, or only by crashes."""
        return None if self.baseline != "held" else self.caught > self.crashed

    def verdict(self) -> str:
        """One line for a terminal or a pane."""
        if self.baseline == "blocked":
            return f"{self.relation_id}: blocked, cannot run: {self.baseline_detail}"
        if self.baseline != "held":
            return (f"{self.relation_id}: already misses without any mutation "
                    f"({self.baseline_detail}); bite results would mean nothing")
        if self.bites:
            crashes = f" ({self.crashed} by an exception)" if self.crashed else ""
            return f"{self.relation_id}: bites: caught {self.caught} of {self.total} mutations{crashes}"
        if self.crash_only:
            return (f"{self.relation_id}: bites by crash only: caught {self.caught} of {self.total} mutations, "
                    "every one by an exception or a timeout, none by the comparison")
        return f"{self.relation_id}: does not bite: caught 0 of {self.total} mutations"

    def to_json(self) -> dict:
        """The report as ``bite --json`` prints it."""
        return {"relation_id": self.relation_id, "subject": self.subject,
                "subject_path": self.subject_path, "baseline": self.baseline,
                "baseline_detail": self.baseline_detail, "bites": self.bites,
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


# --- locating the subject ----------------------------------------------------------------

def subject_file(review: Review, relation: Relation, tree: Path) -> str | None:
    """Repository-relative path of the subject's module file under ``tree``, or None."""
    roots = [Path(p) for p in import_paths(review.layout, tree)]
    module = relation.subject.split(":", 1)[0].replace(".", "/")
    for root in roots:
        for name in (f"{module}.py", f"{module}/__init__.py"):
            if (root / name).is_file():
                return (root / name).resolve().relative_to(tree.resolve()).as_posix()
    return None


MAX_REEXPORTS = 8  # ``from .a import f`` hops followed from the subject's module to the definition


def defining_file(tree: Path, roots: list[str], path: str, attr: str,
                  visited: set[str] | None = None) -> tuple[str, str]:
    """(tree-relative path, attribute path) where ``attr`` of the module at ``path`` is defined,
    following re-exports (``pkg/__init__.py``: ``from .impl import func``, ``from .impl import *``,
    ``from pkg.impl import func as name``) to the module that defines it. ``roots``: the tree's
    import roots (absolute imports). Where nothing defines it, the last module reached (the
    mutation step then says what is missing). ``visited``: a set the files read are added to."""
    seen = set()
    for _ in range(MAX_REEXPORTS):
        seen.add(path)
        if visited is not None:
            visited.add(path)
        try:
            module = ast.parse((tree / path).read_text(encoding="utf-8"))
        except (OSError, SyntaxError, ValueError):
            return path, attr
        head, dot, rest = attr.partition(".")
        if mutations.defines(module, head):
            return path, attr
        for source, level, name in mutations.reexport(module, head):
            target = _module_file(tree, roots, path, source, level)
            if target is not None and target not in seen:
                path, attr = target, name + dot + rest
                break
        else:
            return path, attr
    return path, attr


def _module_file(tree: Path, roots: list[str], path: str, module: str, level: int) -> str | None:
    """The tree-relative file of ``module`` imported from the file ``path`` (``level`` dots)."""
    if level:
        base = PurePosixPath(path).parent
        for _ in range(level - 1):
            base = base.parent
        bases = [base]
    else:
        bases = []
        for root in roots:
            try:
                bases.append(PurePosixPath(Path(root).resolve().relative_to(tree.resolve()).as_posix()))
            except ValueError:  # an import root outside the tree holds no code of the review
                continue
    name = module.replace(".", "/")
    for base in bases:
        for candidate in ((base / name).with_suffix(".py") if name else None, base / name / "__init__.py"):
            if candidate is not None and (tree / candidate).is_file():
                return candidate.as_posix().removeprefix("./")
    return None


# --- what an adapter of the oracle reaches (issue 16) --------------------------------------

MAX_ADAPTER_HOPS = 3  # functions of the oracle followed from the subject before the library


@dataclass
class Reach:
    """What an adapter subject reaches in the tree under review (``adapter_reach``).

    ``targets``: library file (tree-relative, not protected) -> the attribute paths there the
    adapter calls or names (``Version``, ``bump``, ``Version.parse``), in the order found;
    ``skipped``: one line per library file found but left alone, with the reason (a symlink);
    ``consulted``: every file read to find them (the cache key is made of their bytes).
    """

    targets: dict[str, list[str]] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)
    consulted: set[str] = field(default_factory=set)


@dataclass
class _Walk:
    tree: Path
    roots: list[str]
    is_protected: Callable[[str], bool]
    reach: Reach
    seen: set = field(default_factory=set)
    parsed: dict = field(default_factory=dict)

    def parse(self, path: str) -> ast.Module | None:
        """The module at tree path ``path`` (parsed once), or None when it cannot be read."""
        if path not in self.parsed:
            self.reach.consulted.add(path)
            try:
                self.parsed[path] = ast.parse((self.tree / path).read_text(encoding="utf-8"))
            except (OSError, SyntaxError, ValueError):
                self.parsed[path] = None
        return self.parsed[path]


def adapter_reach(tree: Path, roots: list[str], path: str, attr: str,
                  is_protected: Callable[[str], bool]) -> Reach:
    """The library functions the function (or class) ``attr`` of the module at tree path
    ``path`` reaches, statically (issue 16; SPEC §2 protected paths, §3 subjects).

    Every dotted name the function reads (``Version(x)``, ``vers.core.bump``, ``key=canonical``)
    is resolved through its own imports (function-local ones first), then its module's
    (including under a top-level ``if``/``try``, and ``from m import *``), then the module's
    own functions, to the module that defines it (``defining_file``: package re-exports
    followed). A definition in a protected file (``is_protected``: another function of the
    oracle) is followed in turn, up to ``MAX_ADAPTER_HOPS`` deep; one in any other file of the
    tree is a target. ``roots``: the tree's absolute import roots; modules outside the tree
    (the standard library, installed packages) are never targets. A target reached through a
    symlink is put in ``skipped`` instead. Never raises for unreadable or unparsable files
    (they reach nothing).
    """
    walk = _Walk(Path(tree), roots, is_protected, Reach())
    _follow(walk, path, attr, 0)
    return walk.reach


def _follow(walk: _Walk, path: str, attr: str, depth: int) -> None:
    """Resolve every name the function ``attr`` of ``path`` (and its same-module helpers) reads."""
    if (path, attr) in walk.seen or depth > MAX_ADAPTER_HOPS:
        return
    walk.seen.add((path, attr))
    module = walk.parse(path)
    if module is None or mutations.find(module, attr) is None:
        return
    names, stars = mutations.import_bindings(mutations.top_imports(module))
    for _, func in mutations.entry_functions(module, attr):
        local, local_stars = mutations.import_bindings(mutations.inner_imports(func))
        scope, everywhere = {**names, **local}, local_stars + stars
        for ref in mutations.references(func):
            for found in _resolve_ref(walk, path, module, scope, everywhere, ref):
                _reached(walk, found, depth)


def _resolve_ref(walk: _Walk, path: str, module: ast.Module, scope: dict, stars: list,
                 ref: list[str]) -> list[tuple[str, str]]:
    """(file, attribute path) pairs a dotted name read in ``path`` may stand for."""
    head, rest = ref[0], ref[1:]
    if head in scope:
        found = _through(walk, path, scope[head], rest)
        return [found] if found else []
    if mutations.defines(module, head):
        return [(path, ".".join(ref))]
    out = []
    for star in stars:  # ``from m import *``: the name may come from m
        found = _through(walk, path, mutations.Binding(star.module, star.level, head), rest)
        out += [found] if found else []
    return out


def _through(walk: _Walk, path: str, binding: mutations.Binding, rest: list[str]) -> tuple[str, str] | None:
    """(file, attribute path) of ``binding`` followed by the attributes ``rest``: into a
    submodule while the next name is one (``vers.core.bump``), else an attribute of the module
    reached. None when it names a module only, or a module outside the tree."""
    module, parts = binding.module, ([binding.name] if binding.name else []) + list(rest)
    file = _module_file(walk.tree, walk.roots, path, module, binding.level) if module or binding.level else None
    while parts and (file is None or _defined(walk, file, parts[0]) is None):
        module = f"{module}.{parts[0]}" if module else parts[0]
        sub = _module_file(walk.tree, walk.roots, path, module, binding.level)
        if sub is None:
            break
        file, parts = sub, parts[1:]
    return (file, ".".join(parts)) if file is not None and parts else None


def _defined(walk: _Walk, file: str, attr: str) -> tuple[str, str] | None:
    """(defining file, attribute path) of ``attr`` of the module ``file`` (re-exports
    followed), the attribute shortened to what is defined (``Version.MAX`` -> ``Version``);
    None when the module defines no such function or class."""
    path, found = defining_file(walk.tree, walk.roots, file, attr, walk.reach.consulted)
    parts = found.split(".")
    module = walk.parse(path)
    while module is not None and parts:
        if mutations.find(module, ".".join(parts)) is not None:
            return path, ".".join(parts)
        parts.pop()
    return None


def _reached(walk: _Walk, found: tuple[str, str], depth: int) -> None:
    """Record a name's definition: a function of the oracle is followed, a library one kept."""
    defined = _defined(walk, *found)
    if defined is None:
        return
    path, attr = defined
    if walk.is_protected(path):
        _follow(walk, path, attr, depth + 1)
        return
    why = _through_link(walk.tree, path)
    if why is not None:
        if why not in walk.reach.skipped:
            walk.reach.skipped.append(why)
        return
    attrs = walk.reach.targets.setdefault(path, [])
    if attr not in attrs:
        attrs.append(attr)


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
    """sha256 over the relation identity (§3), the input, the operator set, the bytes of
    ``files`` (tree path -> bytes, None for absent: every file read to find what to mutate,
    and every file mutated, so a change to any library file an adapter reaches changes the
    key, issue 16) and the names of the ``mutated`` files."""
    digests = [f"{path}={hashlib.sha256(data).hexdigest() if data is not None else '-'}"
               for path, data in sorted(files.items())]
    parts = [relation.id, review.identities.get(relation.id, ""), _input_pin(review, relation),
             ",".join(mutations.OPERATORS), str(mutations.DEFAULT_LIMIT), *digests,
             "mutated:" + ",".join(sorted(mutated))]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def _key_files(review: Review, paths) -> dict[str, bytes | None]:
    """The bytes the key is made of, as a run tree of HEAD holds them (``_head_bytes``): the
    same function for ``bite`` and ``cached_bite``, so the two always agree."""
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
    data[report.key] = {"relation_id": report.relation_id, "bites": report.bites,
                        "caught": report.caught, "total": report.total, "head": review.head_sha,
                        "files": sorted(files), "paths": sorted(mutated)}
    data = dict(list(data.items())[-CACHE_ENTRIES:])
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_suffix(f".{os.getpid()}.tmp")
    temp.write_text(json.dumps(data, indent=1), encoding="utf-8")
    os.replace(temp, path)  # readers never see half a file


def cached_bite(review: Review, relation_id: str) -> bool | None:
    """The cached ``bites`` of a relation for HEAD's files, or None when not known.

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
        files = [str(f) for f in entry["files"]]
        view = view or TreeView(review.repo, review.head_sha)
        for path in files:
            if path not in read:
                read[path] = _head_bytes(review, path, view)
        if cache_key(review, relation, {f: read[f] for f in files}, [str(p) for p in entry["paths"]]) == key:
            return entry.get("bites")
    return None


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


@dataclass
class _Targets:
    """What bite mutates for one relation. ``files``: tree path -> attribute paths there;
    ``library``: they are what an adapter of the oracle reaches (every entry function, bounded
    over all files by ``mutations.choose``), not the subject itself (``mutations.mutants``);
    ``notes`` for the report; ``consulted``: the files read to decide (part of the key)."""

    files: dict[str, list[str]]
    library: bool
    notes: list[str]
    consulted: set[str]


def _targets(review: Review, relation: Relation, tree: Path) -> tuple[str, str, _Targets]:
    """(subject's defining file, its attribute path, what to mutate). Raises RelconsoleError
    when the subject has no source file under the import paths."""
    path = subject_file(review, relation, tree)
    if path is None:
        raise RelconsoleError(f"{relation.id}: no source file for subject {relation.subject} "
                              "under the import paths")
    attr = relation.subject.split(":", 1)[1]
    consulted = {path}
    roots = import_paths(review.layout, tree)
    path, attr = defining_file(tree, roots, path, attr, consulted)
    if not protected(review.layout.protected, path):
        return path, attr, _Targets({path: [attr]}, False, [], consulted)
    return path, attr, _adapter_targets(review, tree, roots, path, attr, consulted)


def _adapter_targets(review: Review, tree: Path, roots: list[str], path: str, attr: str,
                     consulted: set[str]) -> _Targets:
    """An adapter of the oracle: the library it reaches; the adapter only when it reaches none."""
    reach = adapter_reach(tree, roots, path, attr, lambda p: protected(review.layout.protected, p))
    consulted |= reach.consulted
    where = f"{path}:{attr}"
    if reach.targets:
        named = "; ".join(f"{f} ({', '.join(a)})" for f, a in reach.targets.items())
        return _Targets(dict(reach.targets), True, [
            f"{where} is an adapter of the oracle: mutating the library code it calls instead: {named}",
            *reach.skipped], consulted)
    if reach.skipped:
        return _Targets({}, True, [
            f"{where} is an adapter of the oracle; no library function it reaches can be mutated, "
            "and the adapter is not mutated in their place", *reach.skipped], consulted)
    return _Targets({path: [attr]}, False, [
        f"{where} is an adapter of the oracle that reaches no function of the tree under review "
        "(only the standard library or installed packages): mutating the adapter itself, which "
        "shows whether the relation watches the adapter, not the library"], consulted)


def _mutants(relation: Relation, targets: _Targets,
             originals: dict[str, bytes]) -> list[tuple[str, mutations.Mutant]]:
    """(tree path, mutant) pairs to run, at most ``mutations.DEFAULT_LIMIT``."""
    found = []
    for path, attrs in targets.files.items():
        try:
            source = originals[path].decode("utf-8")
            made = mutations.module_mutants(source, attrs) if targets.library else mutations.mutants(source, attrs[0])
        except (SyntaxError, ValueError, mutations.TargetNotFound) as exc:
            raise RelconsoleError(f"{relation.id}: cannot mutate {', '.join(attrs)} in {path}: {exc}") from None
        found += [(path, m) for m in made]
    if targets.library:
        found = mutations.choose(found, mutations.DEFAULT_LIMIT, lambda pm: pm[1].operator,
                                 lambda pm: (pm[0], pm[1].function))
    return found


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
    for where, mutant in _mutants(relation, targets, originals):
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
