"""Evaluate relations in worker processes with the counted freeze protocol (SPEC §6, §7 run).

One relation is run once; a hold is a pass. A miss with no live freeze is a reject.
A miss under a live freeze is rerun ``reruns`` times with new seeds and passes only
with ``pass_needed`` passes; every rerun is recorded. Subjects run in child processes
(``relconsole.engine.relations.worker``) with a timeout, never in the caller's process.
"""

from __future__ import annotations

import dataclasses
import os
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Callable

from relconsole.engine.oracle.catalog import Relation
from relconsole.engine.decision import NOT_JUDGED, Decision
from relconsole.engine.oracle.freezes import LIVE, FreezeRow, counted_verdict
from relconsole.engine.repo.owners import protected
from relconsole.engine.relations.pool import Cancel, WorkerPool, evaluate_once
from relconsole.engine.relations.records import RelationResult, RunPlan, RunRecord
from relconsole.engine.relations.signatures import failure_class, signature


def draw_seed() -> int:
    """A run seed from os.urandom (SPEC §7): every order, split point and the subject's own
    ``random`` seed of one run derive from it, so the subject cannot predict its inputs."""
    return int.from_bytes(os.urandom(6), "big")


def run_seed(plan: RunPlan) -> int:
    """The plan's recorded seed to replay, else a new draw."""
    return plan.replay_seed if plan.replay_seed is not None else draw_seed()


def run_relation(plan: RunPlan, freeze: FreezeRow | None, pool: WorkerPool | None = None) -> RelationResult:
    """The counted freeze protocol of §6 for one relation (reruns in parallel on ``pool``)."""
    relation = plan.relation
    evaluate = pool.evaluate if pool is not None else evaluate_once
    live = freeze is not None and freeze.state == LIVE
    # a miss with a live freeze reruns on new servers: one boots while the first run runs
    first = evaluate(dataclasses.replace(plan, spare=True) if live and pool is not None else plan, run_seed(plan))
    if first.blocked or first.vacuous or first.error_type in NOT_JUDGED:
        return _not_judged(plan, first, freeze)
    if first.held and drawing_cut_short(first):
        return RelationResult(relation.id, "held", Decision("hold", "drawn_incomplete", None, relation.id,
                                                            drawing_cut_short(first)),
                              f"held, but {drawing_cut_short(first)}", first, [], freeze)
    sig = None if first.held else signature(relation.id, relation.kind, plan.fixture_pin,
                                            failure_class(*first.failure_parts()))
    reruns: list[RunRecord] = []
    if not first.held and live:
        # each rerun a run of its own: new seeds and a new fork server (a new hash seed), every
        # call a new process as always, so no module state carries from the first run (§6, §7)
        seeds = [draw_seed() for _ in range(freeze.reruns)]
        # reruns draw inputs of their own (new seeds) but shrink nothing: the first run's miss is shown
        again = dataclasses.replace(plan, fresh_server=True, generate=plan.generate and dict(plan.generate, shrink=False))
        # a worker whose next request is likely another rerun boots its server meanwhile
        ahead = len(seeds) - (len(pool.all) if pool is not None else len(seeds))
        plans = [dataclasses.replace(again, spare=n < ahead) for n in range(len(seeds))]
        with ThreadPoolExecutor(max_workers=max(1, os.cpu_count() or 1)) as threads:
            reruns = list(threads.map(evaluate, plans, seeds))
    outcome, decision, summary = counted_verdict(relation.id, first.held, first.describe(),
                                                 [r.held for r in reruns], freeze)
    fault = oracle_fault(first, plan.protected)
    unfaulted = None
    if fault and outcome == "missed":
        unfaulted, decision = decision, Decision("abort", "oracle_fault", None, relation.id, fault)
    return RelationResult(relation.id, outcome, decision, summary, first, reruns, freeze, sig, unfaulted=unfaulted)


def drawing_cut_short(record: RunRecord) -> str:
    """Why ``record``'s drawn inputs were not all judged ("" when they were, or none were
    asked): the relation's time ran out, or a drawn input could not be judged (the oracle's
    or the machine's fault), among the first N or past them. A subject that slows down on drawn inputs must not pass by it:
    the relation holds, not passes (SPEC §3 generated inputs)."""
    drawn = record.drawn or {}
    stopped, asked, tried = drawn.get("stopped"), int(drawn.get("asked") or 0), int(drawn.get("tried") or 0)
    if not stopped:  # past N too: the input drawn then to reach a changed line was not judged either
        return ""
    return (f"{tried} of {asked} drawn inputs judged ({stopped}); a subject that slows down or stops on "
            "drawn inputs is what to review, before lowering the relation's generate or raising "
            "[tool.relconsole] relation_timeout_seconds")


def _not_judged(plan: RunPlan, first: RunRecord, freeze: FreezeRow | None) -> RelationResult:
    """A first run that judged nothing: outputs of a type with no canon: adapter (blocked,
    reject), both outputs empty (vacuous, hold), an environment fault (abort, §7) or an
    adapter of the oracle's that did not resolve (abort, ``oracle_fault``: the detail names
    the adapter, the exception and where)."""
    rid = plan.relation.id
    if first.blocked:
        return RelationResult(rid, "blocked", Decision("reject", "not_comparable", None, rid, first.blocked),
                              f"blocked: {first.blocked}", first, [], freeze)
    if first.vacuous:
        return RelationResult(rid, "vacuous", Decision("hold", "vacuous_output", None, rid, first.note),
                              f"vacuous: {first.note}", first, [], freeze)
    return RelationResult(rid, "missed", Decision("abort", first.error_type, None, rid, first.error),
                          f"abort: {first.error}", first, [], freeze)


def oracle_fault(record: RunRecord, protected_patterns: tuple[str, ...]) -> str | None:
    """Why a miss is the oracle's fault, not the patch's: the innermost frame of the
    exception is in a protected file (an adapter, merge or transform that raised) and no frame
    of the tree's own code called into it. A subject that calls an oracle module itself and
    lets it raise (red team, issue 34: to turn its reject into an oracle fault) keeps its miss."""
    if not record.error_files or not protected_patterns:
        return None
    innermost = record.error_files[-1]
    if all(protected(protected_patterns, path) for path in record.error_files):
        return (f"{record.error_type} raised in the oracle's own {innermost}: fix the oracle "
                "on the base branch; the patch is not judged by a broken relation")
    return None


# Relative cost of one evaluation in subject calls, for scheduling before any history exists.
KIND_COST = {"permutation": None, "idempotence": 2, "replay_ingest": 3, "split_merge": None,
             "monotonic": 3, "roundtrip": 10, "invariance": 3, "bound": 1}


def expected_cost(relation: Relation, history: dict[str, float]) -> float:
    """Seconds the relation took last time, else a weight by kind (calls of the subject).

    Only the order matters: the longest relations start first (longest-processing-time
    scheduling), so one slow relation does not run alone at the end.
    """
    if relation.id in history:
        return history[relation.id]
    if relation.kind == "permutation":
        return 1 + int(relation.params.get("shuffles", 6))
    if relation.kind == "split_merge":
        splits = relation.params.get("splits", 3)
        return 1 + (len(splits) if isinstance(splits, list) else int(splits))
    return KIND_COST.get(relation.kind) or 2


def run_all(plans: list[tuple[RunPlan, FreezeRow | None]],
            progress: Callable[[RelationResult], None] | None = None,
            workers: int | None = None, history: dict[str, float] | None = None,
            cancel: Cancel | None = None) -> list[RelationResult]:
    """Run every plan on ``workers`` worker processes (default: one per core).

    Plans share a tree; each worker reads a corpus once and serves every relation that
    reads it. The costliest relations start first (``expected_cost`` over ``history``,
    seconds by relation id). ``progress`` is called as each relation finishes; results
    keep plan order.
    """
    if not plans:
        return []
    size = workers or max(1, os.cpu_count() or 1)
    pool = WorkerPool(min(size, len(plans)) if size > 1 else 1, plans[0][0].root, cancel)
    by_future = {}
    try:
        with ThreadPoolExecutor(max_workers=size) as threads:
            order = sorted(range(len(plans)), key=lambda i: -expected_cost(plans[i][0].relation, history or {}))
            for index in order:
                plan, freeze = plans[index]
                by_future[threads.submit(run_relation, plan, freeze, pool)] = index
            done: dict[int, RelationResult] = {}
            for future in as_completed(by_future):
                result = future.result()
                done[by_future[future]] = result
                if progress:
                    progress(result)
    finally:
        pool.close()
    return [done[i] for i in sorted(done)]
