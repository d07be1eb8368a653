"""Does a relation bite? Mutate its subject and see whether the relation notices (issue 3 item 6).

``bite(review, relation_id)`` builds ONE run tree of HEAD with the oracle overlaid (SPEC §2),
runs the relation once unmutated (the baseline), then for each mutant of the subject
(``relconsole.engine.mutations``) writes the mutated module into the tree, runs the relation
once with its base seed in a worker process, and restores the file, always. A mutant is
*caught* when the relation misses, raises or times out, *survived* when it holds. A relation
that catches none "does not bite". When the baseline already misses (or the relation is
blocked, §4), mutation results would mean nothing: the report says so and ``bites`` is None.

Results are cached in ``<git_dir>/relconsole/bite.json`` keyed by the relation identity
(§3), the sha256 of the subject file and of the input, so ``cached_bite`` answers without
running anything.
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Callable

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
    path: str  # repository-relative subject file
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
    was (or there was no mutant), None when the baseline did not hold.
    """

    relation_id: str
    subject: str
    subject_path: str | None
    baseline: str
    baseline_detail: str
    key: str | None = None
    results: list[MutationResult] = field(default_factory=list)

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
                "verdict": self.verdict(),
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

def _prefixes(review: Review) -> list[str]:
    """Import paths relative to the tree root ("" is the root), in import order (§3)."""
    if review.layout.import_paths is None:
        return ["", "src"]
    norms = [PurePosixPath(str(p)).as_posix() for p in review.layout.import_paths]
    return ["" if n == "." else n for n in norms]


def _candidates(review: Review, relation: Relation) -> list[str]:
    module = relation.subject.split(":", 1)[0].replace(".", "/")
    out = []
    for prefix in _prefixes(review):
        for name in (f"{module}.py", f"{module}/__init__.py"):
            out.append(f"{prefix}/{name}" if prefix else name)
    return out


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


def defining_file(tree: Path, roots: list[str], path: str, attr: str) -> tuple[str, str]:
    """(tree-relative path, attribute path) where ``attr`` of the module at ``path`` is defined,
    following re-exports (``pkg/__init__.py``: ``from .impl import func``, ``from .impl import *``,
    ``from pkg.impl import func as name``) to the module that defines it. ``roots``: the tree's
    import roots (absolute imports). Where nothing defines it, the last module reached (the
    mutation step then says what is missing)."""
    seen = set()
    for _ in range(MAX_REEXPORTS):
        seen.add(path)
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


def _head_bytes(review: Review, path: str) -> bytes | None:
    """The file as a run tree holds it: the oracle's for a protected path, else HEAD's."""
    if protected(review.layout.protected, path):
        oracle = review.oracle_dir / path
        return oracle.read_bytes() if oracle.is_file() else None
    return TreeView(review.repo, review.head_sha).read_bytes(path)


def _input_pin(review: Review, relation: Relation) -> str:
    if relation.lease_id:
        status = review.lease(relation.lease_id)
        path = status.lease.path if status and status.lease else None
    else:
        path = relation.seeds_path
    file = review.oracle_dir / path if path else None
    return hashlib.sha256(file.read_bytes()).hexdigest() if file and file.is_file() else ""


def cache_key(review: Review, relation: Relation, subject_bytes: bytes) -> str:
    """sha256 over relation identity, subject file, input and the operator set."""
    parts = [relation.id, review.identities.get(relation.id, ""),
             hashlib.sha256(subject_bytes).hexdigest(), _input_pin(review, relation),
             ",".join(mutations.OPERATORS), str(mutations.DEFAULT_LIMIT)]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


# --- the cache ---------------------------------------------------------------------------

def _cache_path(review: Review) -> Path:
    return Path(review.repo.git_dir).joinpath(*CACHE_FILE)


def _read_cache(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _store(review: Review, report: BiteReport) -> None:
    path = _cache_path(review)
    data = _read_cache(path)
    data.pop(report.key, None)
    data[report.key] = {"relation_id": report.relation_id, "bites": report.bites,
                        "caught": report.caught, "total": report.total, "head": review.head_sha}
    data = dict(list(data.items())[-CACHE_ENTRIES:])
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_suffix(f".{os.getpid()}.tmp")
    temp.write_text(json.dumps(data, indent=1), encoding="utf-8")
    os.replace(temp, path)  # readers never see half a file


def cached_bite(review: Review, relation_id: str) -> bool | None:
    """The cached ``bites`` of a relation for HEAD's subject file, or None when not known.

    Never runs anything and never raises for an unknown relation (None).
    """
    relation = review.catalog.get(relation_id) if review.catalog else None
    if relation is None:
        return None
    for path in _candidates(review, relation):
        data = _head_bytes(review, path)
        if data is not None:
            entry = _read_cache(_cache_path(review)).get(cache_key(review, relation, data))
            return entry.get("bites") if isinstance(entry, dict) else None
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


def _bite_in(review: Review, relation: Relation, tree: Path,
             progress: Callable[[MutationResult], None] | None) -> BiteReport:
    path = subject_file(review, relation, tree)
    if path is None:
        raise RelconsoleError(f"{relation.id}: no source file for subject {relation.subject} "
                              "under the import paths")
    attr = relation.subject.split(":", 1)[1]
    path, attr = defining_file(tree, import_paths(review.layout, tree), path, attr)
    plan = plan_for(review, relation, tree)
    seed = _base_seed(relation)
    first = evaluate_once(plan, seed)
    original = (tree / path).read_bytes()
    report = BiteReport(relation.id, relation.subject, path, "held" if first.held else "missed",
                        first.describe(), cache_key(review, relation, original))
    if not first.held:
        return report
    quick = dataclasses.replace(plan, timeout_seconds=min(
        plan.timeout_seconds, max(MIN_MUTANT_TIMEOUT, 20 * first.seconds)))
    try:
        found = mutations.mutants(original.decode("utf-8"), attr)
    except (SyntaxError, mutations.TargetNotFound) as exc:
        raise RelconsoleError(f"{relation.id}: cannot mutate {relation.subject} in {path}: {exc}") from None
    for mutant in found:
        result = _run_mutant(quick, tree / path, original, mutant, seed, path)
        report.results.append(result)
        if progress:
            progress(result)
    _store(review, report)
    return report


def _run_mutant(plan: RunPlan, file: Path, original: bytes, mutant: mutations.Mutant,
                seed: int, path: str) -> MutationResult:
    """Write the mutant, run once, restore the original bytes whatever happens."""
    try:
        file.write_text(mutant.source, encoding="utf-8")
        record: RunRecord = evaluate_once(plan, seed)
    finally:
        file.write_bytes(original)
    # a vacuous run (empty outputs) is stopped by the gate's empty-output rule, not by this relation
    return MutationResult(mutant.operator, mutant.label, path, mutant.line, mutant.function,
                          "survived" if record.held or record.vacuous else "caught", record.describe(), record.seconds,
                          record.error_type is not None)
