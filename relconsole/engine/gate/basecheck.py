"""A miss is the patch's only when the base holds (SPEC §8): a relation a run blames on the
patch runs again on the merge base, with the same inputs, before its verdict stands.

``needs_base(result)`` says which results blame the patch: a reject for a miss (no live
freeze, or a counted freeze that failed) or for an output of a type no adapter compares.
``check_on_base`` runs each such relation once on the merge base's tree (the base oracle
overlaid, as every run tree has it) with the first run's seed and hash seed, and settles it:

- held there: the reject stands, and its detail says the base held on the same inputs;
- an environment fault there (a module neither in the tree nor installed), or the same module
  missing from both sides' trees (a module the build generates): ``abort`` ``environment``;
- an adapter of the oracle fault there, or an output of a type no adapter compares on the
  base too, or both outputs empty there (the relation proved nothing before the patch):
  ``abort`` ``oracle_fault``, naming the catalog line;
- missed there too: ``BASE_RERUNS`` more base runs with new seeds (``rerun_seed``); missed on every one is
  ``abort`` ``oracle_fault`` (the relation does not hold before the patch); held on some is
  ``hold`` ``intermittent_on_base`` (an intermittent miss the base shows as well, which a
  replay classifies: the decision table proposes a freeze for it, or rejects a miss whose
  signature the base never shows).

How a patch would beat it, and why it cannot: the base side is the merge base's committed
files and the base oracle, materialised afresh; nothing of the patch's tree is in it, and
each call is a fresh process in its own sandbox. The most a patch can win by making the base
miss (were it able to) is an abort or a hold, never a pass.
"""

from __future__ import annotations

import dataclasses
import shutil

from relconsole.engine.decision import NOT_JUDGED, Decision
from relconsole.engine.relations.records import RelationResult, RunPlan, RunRecord
from relconsole.engine.relations.runner import run_all
from relconsole.engine.repo.workspace import build_run_tree, scratch_dir
from relconsole.engine.gate.runplans import checkout_name, plan_for, sandboxed

BASE_RERUNS = 2  # base runs with new seeds after a base miss on the same inputs: every run or some?
BLAMING = frozenset({"property_fail", "freeze_fail", "not_comparable"})  # reasons a reject blames the subject


def needs_base(result: RelationResult) -> bool:
    """Whether ``result`` blames the patch for what its subject did (see the module docstring),
    or is an oracle fault the base settles: an adapter of the oracle raised, maybe on the
    patch's output alone (``RelationResult.unfaulted``)."""
    if result.first is None:
        return False
    return result.verdict.decision == "reject" and result.verdict.reason in BLAMING or result.unfaulted is not None


def check_on_base(review, results: list[RelationResult], workers: int | None = None,
                  cancel=None) -> list[RelationResult]:
    """``results`` (each one ``needs_base``) settled by runs on the merge base, in the same order.

    Builds the merge base's run tree once (the base oracle overlaid), runs every relation
    there with its first run's seed and PYTHONHASHSEED, then reruns the ones that missed
    with new seeds. Raises what building the tree raises (GitError, RelconsoleError) and
    ``run_all``'s errors; ``cancel`` stops the runs as ``run_review``'s does.
    """
    if not results:
        return []
    scratch = scratch_dir("tmp")
    tree = scratch / checkout_name(review)
    try:
        linked = sandboxed()
        build_run_tree(review.repo, review.merge_base, review.oracle_dir, review.layout.protected, tree, link=linked,
                       generated=review.layout.generated)
        plans = {r.relation_id: plan_for(review, review.catalog.get(r.relation_id), tree, linked=linked)
                 for r in results}
        same = run_all([(_same_inputs(plans[r.relation_id], r.first), None) for r in results],
                       workers=workers, cancel=cancel)
        missed = [b.relation_id for b in same if _base_missed(b.first)]
        first = {r.relation_id: r.first for r in results}
        again: dict[str, list[RunRecord]] = {rid: [] for rid in missed}
        if missed and not (cancel is not None and cancel.is_set()):
            # new seeds, the same drawn or shrunk input when the miss was on one (red team, issue 37)
            reruns = [(dataclasses.replace(plans[rid], replay_seed=rerun_seed(first[rid].seed, k),
                                           given=first[rid].recorded_input()), None)
                      for rid in missed for k in range(1, BASE_RERUNS + 1)]
            for rerun in run_all(reruns, workers=workers, cancel=cancel):
                again[rerun.relation_id].append(rerun.first)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return [settle(review, result, base.first, again.get(result.relation_id, []))
            for result, base in zip(results, same)]


def rerun_seed(seed: int, k: int) -> int:
    """The ``k``-th base rerun's seed after a miss on ``seed``: new inputs (shuffles, splits,
    the subject's own ``random``), derived from the run's seed so that a recorded run replays
    its base check too. As unpredictable to a subject as ``seed`` itself (os.urandom)."""
    return (seed + k) % (1 << 48)


def _same_inputs(plan: RunPlan, first: RunRecord) -> RunPlan:
    """``plan`` replaying ``first``'s run: its seed, its hash seed when it recorded one, and
    the drawn or shrunk input it missed on when it did (``RunRecord.recorded_input``): the
    base is judged on the very input that shows the miss."""
    hashseed = (first.run or {}).get("hashseed")
    return dataclasses.replace(plan, replay_seed=first.seed, given=first.recorded_input(),
                               replay_hashseed=hashseed if isinstance(hashseed, int) else None)


def _base_missed(record: RunRecord | None) -> bool:
    """A plain miss on the base (not an environment or oracle fault, a block or a vacuous run)."""
    return record is not None and not record.held and not record.blocked and \
        record.error_type not in NOT_JUDGED


def settle(review, result: RelationResult, base: RunRecord | None, reruns: list[RunRecord]) -> RelationResult:
    """``result`` with the verdict the merge base's runs give it (see the module docstring);
    ``base`` the run on the same inputs, ``reruns`` the base runs with new seeds after a miss."""
    rid = result.relation_id
    if base is None:
        return result
    where = f"on the merge base {review.merge_base[:10]}"
    if base.held and not base.vacuous:
        if result.unfaulted is not None:  # the adapter raised on the patch's output only: the patch's miss
            raised = f"the oracle's adapter raised on the patch's output ({result.first.describe()[:300]})"
            held = dataclasses.replace(result.unfaulted, detail=f"{raised}; held {where} on the same inputs "
                                                                 f"(seed {base.seed})")
            return dataclasses.replace(result, verdict=held, base=base, summary=f"missed: {raised}")
        held = dataclasses.replace(result.verdict, detail=f"{result.verdict.detail}; held {where} on the same "
                                   f"inputs (seed {base.seed})".lstrip("; "))
        return dataclasses.replace(result, verdict=held, base=base)
    if result.unfaulted is not None and result.verdict.reason == "oracle_fault":
        return dataclasses.replace(result, base=base)  # it raised or missed on the base too: the oracle's fault
    if base.error_type == "environment":
        verdict = Decision("abort", "environment", None, rid, f"{where}: {base.error}")
    elif base.missing_module and base.missing_module == result.first.missing_module:
        verdict = Decision("abort", "environment", None, rid, (
            f"module {base.missing_module!r} is missing on HEAD and on the merge base {review.merge_base[:10]} "
            f"alike: an environment fault, not the patch's ({base.error[:300]})"))
    elif not _base_missed(base):
        verdict = Decision("abort", "oracle_fault", None, rid, _fault_words(review, rid, base))
    elif all(_base_missed(r) for r in reruns):
        verdict = Decision("abort", "oracle_fault", None, rid, _fault_words(review, rid, base, 1 + len(reruns)))
    else:
        held = sum(1 for r in reruns if r.held)
        verdict = Decision("hold", "intermittent_on_base", None, rid,
                           f"missed {where} too on the same inputs (seed {base.seed}: {base.describe()[:300]}), and "
                           f"held there on {held} of {len(reruns)} other seeds: an intermittent miss the base shows "
                           "as well, not the patch's on this evidence; a replay classifies it")
    return dataclasses.replace(result, verdict=verdict, summary=f"{verdict.decision}: {verdict.detail}", base=base)


def _fault_words(review, rid: str, base: RunRecord, runs: int = 1) -> str:
    """The oracle fault's detail: what the merge base did, and the catalog line the keeper fixes."""
    relation = review.catalog.get(rid) if review.catalog is not None else None
    line = f"{review.layout.catalog}:{relation.line}" if relation is not None and relation.line else review.layout.catalog
    did = f"misses too, on all {runs} runs (first: {base.describe()[:400]})" if runs > 1 else \
        f"does not hold either ({base.describe()[:400]})"
    return (f"the merge base {review.merge_base[:10]} {did}: the relation does not hold before the patch, so this "
            f"is not the patch's miss; the catalog keeper fixes the relation, its seeds or its adapters ({line})")
