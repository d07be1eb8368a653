"""Running a review's relations (SPEC §7): the run tree of HEAD with the oracle overlaid,
one ``RunPlan`` per relation (its input pinned by sha256), worker processes, and the
durations kept to schedule the slow ones first. A relation whose lease or seeds fail
closed is reported blocked without running.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import threading
from pathlib import Path
from typing import Callable


from relconsole.engine.oracle.catalog import Relation
from relconsole.engine.decision import Decision
from relconsole.engine.errors import RelconsoleError, UsageError, did_you_mean
from relconsole.engine.oracle.freezes import FreezeRow
from relconsole.engine.repo.owners import protected
from relconsole.engine.gate.flags.flagrules import probed_by_name
from relconsole.engine.gate.flags.wholepatchflags import imported_probes
from relconsole.engine.relations.pool import Cancel
from relconsole.engine.relations.records import RelationResult
from relconsole.engine.relations.runner import run_all
from relconsole.engine.repo.workspace import build_run_tree, scratch_dir
from relconsole.engine.gate.oracleload import oracle_digest
from relconsole.engine.gate import exercisedrecord
from relconsole.engine.gate.review import Review
from relconsole.engine.gate.basecheck import check_on_base, needs_base
from relconsole.engine.gate.runplans import checkout_name, plan_for, sandboxed
from relconsole.engine.gate.subjectcheck import unresolved_to_run


def _blocked(relation: Relation, why: str, freeze: FreezeRow | None) -> RelationResult:
    reason = "lease_not_usable" if relation.lease_id else "bad_seeds"
    return RelationResult(relation.id, "blocked",
                          Decision("reject", reason, None, relation.id, why),
                          f"blocked: {why}", freeze=freeze)


class RunCancelled(RelconsoleError):
    """``run_review`` was cancelled (the console quit): its runs were killed, nothing stored."""


def run_review(review: Review, relation_ids: list[str] | None = None,
               progress: Callable[[RelationResult], None] | None = None,
               workers: int | None = None, replay_seed: int | None = None,
               replay_hashseed: int | None = None, cancel: Cancel | None = None,
               meanwhile: Callable[[], None] | None = None) -> list[RelationResult]:
    """Evaluate relations (default: the touched ones) on HEAD's tree with the oracle overlaid.

    ``workers`` worker processes run them (default: one per core); ``replay_seed``: the
    recorded run seed every first run replays (None: each draws its own, §7), with
    ``replay_hashseed`` its recorded PYTHONHASHSEED (None: a new one). Results are stored
    in ``review.results`` and returned in the order asked. Blocked
    relations (a lease or seeds file that fails closed) are reported without running.
    ``cancel`` (another thread's ``Cancel``) kills the runs in flight and starts no more.
    Raises RelconsoleError when the catalog did not load, RunCancelled when cancelled
    (nothing stored). A relation whose subject or adapters do not resolve on the base
    (``subjectcheck.unresolved_to_run``) adds its BadInputError to ``review.errors`` and
    nothing runs ([] is returned): the review stops with exit 5, as ``validate`` does.
    ``meanwhile`` runs on the calling thread while the workers judge (the tree and the plans
    are ready, git is no longer used); what it raises cancels the run and is raised once the
    workers stopped.
    """
    if review.catalog is None:
        raise RelconsoleError("the catalog did not load; fix it before running relations")
    ids = relation_ids if relation_ids is not None else review.touched_relations()
    unresolved = unresolved_to_run(review, [rid for rid in ids if review.catalog.get(rid) is not None])
    if unresolved:  # the catalog names what the base does not have: the keeper's bad input, exit 5
        review.errors.extend(unresolved)
        return []
    scratch = scratch_dir("tmp")
    tree = scratch / checkout_name(review)  # the subject's working folder reads as a plain checkout
    try:
        linked = sandboxed()
        build_run_tree(review.repo, review.head_sha, review.oracle_dir, review.layout.protected, tree, link=linked,
                       generated=review.layout.generated)
        plans, results = [], {}
        digest = oracle_digest(review)  # one listing of the oracle's directories for every plan
        for rid in ids:
            relation = review.catalog.get(rid)
            if relation is None:
                raise UsageError(f"no relation {rid!r} in the catalog{did_you_mean(rid, review.catalog.relations)}")
            freeze = review.freeze_for(rid)
            why = review.blocked_reason(relation)
            if why:
                results[rid] = _blocked(relation, why, freeze)
                if progress:
                    progress(results[rid])
                continue
            plan = plan_for(review, relation, tree, digest, linked, lines=True)
            if replay_seed is not None:
                plan = dataclasses.replace(plan, replay_seed=replay_seed, replay_hashseed=replay_hashseed)
            plans.append((plan, freeze))
        digest.flush()
        history = _durations(review)
        blamed: list[RelationResult] = []  # reported once the merge base has settled them
        for result in _run_meanwhile(plans, _unless_blaming(progress, blamed), workers, history, cancel, meanwhile):
            results[result.relation_id] = result
        if cancel is not None and cancel.is_set():
            raise RunCancelled("the run was cancelled")
        _save_durations(review, history, results.values())
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    for result in check_on_base(review, [results[r.relation_id] for r in blamed], workers, cancel):
        results[result.relation_id] = result
        if progress:
            progress(result)
    if cancel is not None and cancel.is_set():
        raise RunCancelled("the run was cancelled")
    review.results.update(results)
    _flag_imported(review, results.values())
    exercisedrecord.save(review, results.values())  # what bind lists as unexercised (§3)
    return [results[rid] for rid in ids]


def _unless_blaming(progress: Callable[[RelationResult], None] | None, blamed: list[RelationResult]):
    """A progress callback that passes results on, except those that blame the patch
    (``basecheck.needs_base``): those are kept in ``blamed`` until the merge base settles them."""
    lock = threading.Lock()

    def report(result: RelationResult) -> None:
        if needs_base(result):
            with lock:
                blamed.append(result)
        elif progress:
            progress(result)
    return report


def _run_meanwhile(plans, progress, workers, history, cancel: Cancel | None,
                   meanwhile: Callable[[], None] | None) -> list[RelationResult]:
    """``run_all`` on a helper thread while ``meanwhile`` runs here (without one: ``run_all``)."""
    if meanwhile is None:
        return run_all(plans, progress, workers, history, cancel)
    cancel = cancel or Cancel()
    box: dict = {}

    def judge() -> None:
        try:
            box["results"] = run_all(plans, progress, workers, history, cancel)
        except BaseException as exc:  # raised below, on the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=judge, name="relconsole-run", daemon=True)
    thread.start()
    try:
        meanwhile()
    except BaseException:
        cancel.cancel()
        raise
    finally:
        thread.join()
    if "error" in box:
        raise box["error"]
    return box["results"]


def _flag_imported(review: Review, results) -> None:
    """§9 as extended by issue 15: a touched file a run on HEAD imported is code, whatever its
    name: probes in a test-named module it imported are flagged like the subject's own."""
    imported = {path for r in results for record in (r.first, *r.reruns) if record is not None
                for path in (record.run or {}).get("imported") or []}
    touched = {b.path for b in review.bindings}
    judged = {(f.name, f.path) for f in review.flags}
    paths = sorted(p for p in imported & touched if not probed_by_name(p)
                   and ("environment_probe", p) not in judged and not protected(review.layout.protected, p))
    if paths and review.merge_base != review.head_sha:
        review.flags.extend(f for f in imported_probes(review.root, review.merge_base, review.head_sha, paths)
                            if review.flag_level(f) != "off")
        if review.acks and review.flags:  # their ids too, while this is still a worker
            review.flag_id(review.flags[-1])


def _durations_file(review: Review) -> Path:
    return Path(review.repo.git_dir) / "relconsole" / "durations.json"


def _durations(review: Review) -> dict[str, float]:
    """Seconds each relation's first run took last time (for scheduling only)."""
    try:
        data = json.loads(_durations_file(review).read_text())
    except (OSError, ValueError):
        return {}
    return {k: float(v) for k, v in data.items() if isinstance(v, (int, float))} if isinstance(data, dict) else {}


def _save_durations(review: Review, history: dict[str, float], results) -> None:
    """Remember this run's durations; a failure to write only loses a scheduling hint."""
    merged = dict(history)
    merged.update({r.relation_id: round(r.first.seconds, 3) for r in results if r.first is not None})
    path = _durations_file(review)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        scratch = path.with_suffix(".tmp")
        scratch.write_text(json.dumps(merged, sort_keys=True))
        os.replace(scratch, path)
    except OSError:
        pass


