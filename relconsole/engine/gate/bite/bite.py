"""Does a relation bite? Mutate its subject and see whether the relation notices (issue 3 item 6).

``bite(review, relation_id)`` builds ONE run tree of HEAD with the oracle overlaid (SPEC §2),
runs the relation once unmutated (the baseline), then for each mutant of the subject
(``relconsole.engine.relations.mutations``) writes the mutated module into the tree, runs the relation
once with its base seed in a worker process, and restores the file, always. A mutant is
*caught* when the relation misses, raises or times out, *survived* when it holds. Each run
judges the relation's own input, then (when that holds) the inputs drawn from the shared seed
(issue 37, ``relations.drawing``): a mutant only a drawn input caught says so, with that input
shrunk (within ``BITE_SHRINK_SECONDS``; a catch by the own input is not shrunk, bite only
says which input). The
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

This module runs the mutants; ``bitereport`` holds what a bite found, ``bitetargets`` what
it mutates (``adapterreach`` for an adapter's library, ``bitefiles`` the files it reads),
and ``bitecache`` the cache.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import stat
from pathlib import Path
from typing import Callable

from relconsole.engine.relations import mutations, targeting
from relconsole.engine.oracle.catalog import Relation
from relconsole.engine.errors import RelconsoleError
from relconsole.engine.gate.review import Review
from relconsole.engine.gate.runplans import plan_for
from relconsole.engine.gate.shrunkfacts import shrunk_json
from relconsole.engine.gate.bite.bitereport import DRAWN, OWN, BiteReport, MutationResult
from relconsole.engine.gate.bite.bitefiles import through_link
from relconsole.engine.gate.bite.bitecache import key_files, store_report, cache_key
from relconsole.engine.gate.bite.bitetargets import Targets, _names, _relation, _targets
from relconsole.engine.relations.records import RunPlan, RunRecord
from relconsole.engine.relations.runner import draw_seed
from relconsole.engine.relations.pool import evaluate_once
from relconsole.engine.repo.workspace import build_run_tree, scratch_dir
from relconsole.engine.literal import counted

MIN_MUTANT_TIMEOUT = 10.0  # seconds; a mutant that loops forever is caught, not waited on
SPARE_SHARE = 0.5  # other public methods get at most this many mutants per first-tier mutant
BITE_DRAWS = 25  # drawn inputs a mutant is judged on, at most
BITE_SHRINK_SECONDS = 5.0  # at most this long shrinking each drawn kill ([tool.relconsole] shrink_seconds if less)


def _base_seed(relation: Relation) -> int:
    """One drawn seed for the original run and every mutant, so they see the same inputs."""
    return draw_seed()


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
        build_run_tree(review.repo, review.head_sha, review.oracle_dir, review.layout.protected, tree,
                       generated=review.layout.generated)
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


def _mutants(relation: Relation, targets: Targets, originals: dict[str, bytes]) -> tuple[_Pairs, _Pairs]:
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


def _spent(first: list, spare: list, targets: Targets) -> str:
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
    plan = dataclasses.replace(plan, generate=_mutant_generate(plan))
    seed = _base_seed(relation)
    first = evaluate_once(plan, seed)
    keyed = key_files(review, targets.consulted | set(targets.files))
    report = BiteReport(relation.id, relation.subject, path, "held" if first.held else "missed",
                        _baseline_detail(first), cache_key(review, relation, keyed, list(targets.files)),
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
    store_report(review, report, list(keyed), list(targets.files))
    return report


def _mutant_generate(plan: RunPlan) -> dict | None:
    """The plan's drawing settings for bite's runs (the unmutated one and each mutant's): the
    first ``BITE_DRAWS`` draws at most (each mutant that survives judges all of them: 100 rows
    drawn for each of 30 mutants made one bite of a seeds relation take minutes), no drawing past
    them for unreached lines (a mutant's lines are not the patch's), a drawn miss shrunk for at
    most ``BITE_SHRINK_SECONDS``, a miss on the own input not shrunk (bite names that input, it
    does not show it)."""
    if not plan.generate:
        return plan.generate
    seconds = min(float(plan.generate.get("shrink_seconds") or BITE_SHRINK_SECONDS), BITE_SHRINK_SECONDS)
    count = min(int(plan.generate.get("count") or 0), BITE_DRAWS)
    return dict(plan.generate, count=count, seconds=0, shrink_seconds=seconds, shrink=False)


def _baseline_detail(record: RunRecord) -> str:
    """The unmutated run in one line; a miss on a drawn input says which."""
    on = (record.drawn or {}).get("missed_on") or {}
    return record.describe() + (f" (on a drawn input: {on.get('label') or 'drawn'})" if on else "")


def _run_mutant(plan: RunPlan, tree: Path, path: str, original: bytes, mutant: mutations.Mutant,
                seed: int) -> MutationResult:
    """Write the mutant, run once, restore the original bytes whatever happens."""
    try:
        _write(tree, path, mutant.source.encode("utf-8"))
        record: RunRecord = evaluate_once(plan, seed)
    finally:
        _write(tree, path, original)
    # a vacuous run (empty outputs) is stopped by the gate's empty-output rule, not by this relation
    caught = not (record.held or record.vacuous)
    result = MutationResult(mutant.operator, mutant.label, path, mutant.line, mutant.function,
                            "caught" if caught else "survived", record.describe(), record.seconds,
                            record.error_type is not None, own_input="corpus" if plan.input_kind == "lease" else "seeds")
    return _with_kill(result, record, caught)


def _with_kill(result: MutationResult, record: RunRecord, caught: bool) -> MutationResult:
    """``result`` with what killed it read from ``record``: its ``drawn`` part's ``missed_on``
    is set exactly when the own input held and a drawn input missed (``drawnrun.with_drawn``)."""
    drawn = record.drawn if isinstance(record.drawn, dict) else {}
    missed_on = drawn.get("missed_on") if isinstance(drawn.get("missed_on"), dict) else {}
    result.drawn_tried = int(drawn.get("tried") or 0)
    result.drawn_stopped = str(drawn.get("stopped") or "")
    if not caught:
        return result
    if not missed_on:
        result.killed_by = OWN
        return result
    result.killed_by, result.drawn_recipe = DRAWN, dict(missed_on)
    result.drawn_on = str(missed_on.get("label") or "")
    result.shrunk = shrunk_json(record) or {}
    return result


def _write(tree: Path, path: str, data: bytes) -> None:
    """Put ``data`` at tree path ``path`` without ever following a symlink: a link on the way
    (one a subject running as a plain process put there since) raises RelconsoleError; the
    bytes go to a new file renamed over the old one. The module's cached bytecode is removed:
    a mutant of the same size written within the same second would otherwise run the cache."""
    why = through_link(tree, path)
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
