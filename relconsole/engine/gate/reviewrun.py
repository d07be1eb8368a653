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
from relconsole.engine.repo.config import Layout
from relconsole.engine.decision import Decision
from relconsole.engine.errors import RelconsoleError, UsageError
from relconsole.engine.oracle.freezes import FreezeRow
from relconsole.engine.oracle.hashcache import sha256_stream
from relconsole.engine.repo.owners import protected
from relconsole.engine.gate.flagrules import probed_by_name
from relconsole.engine.gate.wholepatchflags import imported_probes
from relconsole.engine.relations.pool import Cancel
from relconsole.engine.relations.records import RelationResult, RunPlan
from relconsole.engine.relations.runner import run_all
from relconsole.engine.repo.workspace import build_run_tree, scratch_dir
from relconsole.engine.gate.oracleload import oracle_digest
from relconsole.engine.gate.review import Review


def import_paths(layout: Layout, root: Path) -> list[str]:
    """Absolute import paths for subjects: configured, or the root plus ``src/`` (§3)."""
    if layout.import_paths is not None:
        return [str((root / p).resolve()) for p in layout.import_paths]
    paths = [str(root)]
    if (root / "src").is_dir():
        paths.append(str(root / "src"))
    return paths


def _fixture_pin(review: Review, relative: str, path: Path, digest=None) -> str:
    """sha256 of a relation's input at ``path`` in a run tree. A protected input is the
    oracle export's copy (same size and mtime: copytree keeps them) and is looked up by
    blob oid (through ``digest``, an ``oracle_digest`` shared by the caller's plans, or
    a new one); anything else is streamed."""
    exported = review.oracle_dir / relative
    try:
        copied, original = os.stat(path), os.stat(exported)
        same = (copied.st_size, copied.st_mtime_ns) == (original.st_size, original.st_mtime_ns)
    except (OSError, ValueError):
        same = False
    if same and protected(review.layout.protected, relative):
        return (digest or oracle_digest(review))(path, relative)
    return sha256_stream(path)


def _blocked(relation: Relation, why: str, freeze: FreezeRow | None) -> RelationResult:
    reason = "lease_not_usable" if relation.lease_id else "bad_seeds"
    return RelationResult(relation.id, "blocked",
                          Decision("reject", reason, None, relation.id, why),
                          f"blocked: {why}", freeze=freeze)


def sandboxed() -> bool:
    """Whether subjects will see their tree through bubblewrap's read-only mount here, so a
    run tree may hard-link the per-commit store's files (``treestore``) instead of copying."""
    from relconsole.engine.relations.subject.server import bwrap_path
    return bwrap_path() is not None


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
    (nothing stored). ``meanwhile`` runs on the calling thread while the workers judge (the
    tree and the plans are ready, git is no longer used); what it raises cancels the run
    and is raised once the workers stopped.
    """
    if review.catalog is None:
        raise RelconsoleError("the catalog did not load; fix it before running relations")
    ids = relation_ids if relation_ids is not None else review.touched_relations()
    scratch = scratch_dir("tmp")
    tree = scratch / checkout_name(review)  # the subject's working folder reads as a plain checkout
    try:
        linked = sandboxed()
        build_run_tree(review.repo, review.head_sha, review.oracle_dir, review.layout.protected, tree, link=linked)
        plans, results = [], {}
        digest = oracle_digest(review)  # one listing of the oracle's directories for every plan
        for rid in ids:
            relation = review.catalog.get(rid)
            if relation is None:
                raise UsageError(f"no relation {rid!r} in the catalog")
            freeze = review.freeze_for(rid)
            why = review.blocked_reason(relation)
            if why:
                results[rid] = _blocked(relation, why, freeze)
                if progress:
                    progress(results[rid])
                continue
            plan = plan_for(review, relation, tree, digest, linked)
            if replay_seed is not None:
                plan = dataclasses.replace(plan, replay_seed=replay_seed, replay_hashseed=replay_hashseed)
            plans.append((plan, freeze))
        digest.flush()
        history = _durations(review)
        for result in _run_meanwhile(plans, progress, workers, history, cancel, meanwhile):
            results[result.relation_id] = result
        if cancel is not None and cancel.is_set():
            raise RunCancelled("the run was cancelled")
        _save_durations(review, history, results.values())
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    review.results.update(results)
    _flag_imported(review, results.values())
    return [results[rid] for rid in ids]


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
        review.flags.extend(imported_probes(review.root, review.merge_base, review.head_sha, paths))
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


def plan_for(review: Review, relation: Relation, tree: Path, digest=None, linked: bool = False) -> RunPlan:
    """The RunPlan of ``relation`` on a materialised ``tree`` (its input read from that tree).

    ``digest``: an ``oracle_digest(review)`` to share between many plans (it lists the
    oracle commit's directories once); by default each plan makes its own. ``linked``: the
    tree hard-links the per-commit store's files, so a subject must see it read-only: the
    run requires bubblewrap (a worker that finds none aborts) instead of falling back to a
    plain process that could write into the store through the links."""
    if relation.lease_id:
        lease = review.lease(relation.lease_id).lease
        kind, relative = "lease", lease.path
    else:
        kind, relative = "seeds", relation.seeds_path
    path = tree / relative
    clock = {"real": None, "frozen": review.layout.frozen_clock}.get(relation.clock, relation.clock)
    return RunPlan(relation, tree, import_paths(review.layout, tree), kind, path,
                   _fixture_pin(review, relative, path, digest), review.layout.relation_timeout_seconds, clock,
                   review.layout.protected, sandbox="bwrap" if review.layout.require_sandbox or linked else "auto",
                   clock_day=relation.clock == "frozen", clock_today=review.today.isoformat(),
                   checkout=checkout_name(review), readonly=reviewer_folders(review),
                   env={name: os.environ[name] for name in review.layout.pass_env if name in os.environ})


def reviewer_folders(review: Review) -> tuple[str, ...]:
    """The reviewer's own folders a subject must not write (SPEC §7): the git directory (its
    parse caches and the oracle export's store), the common one of a linked worktree, and the
    checkout. bwrap never shows them; a plain-process subject gets them read-only."""
    repo = review.repo
    folders = [repo.git_dir, getattr(repo, "common_dir", None), repo.working_tree_dir]
    return tuple(dict.fromkeys(str(f) for f in folders if f))


def checkout_name(review: Review) -> str:
    """The folder name the subject sees its tree under: the repository's own (SPEC §7: nothing
    in its working folder says it is being judged)."""
    name = Path(review.repo.working_tree_dir or review.repo.git_dir).resolve().name
    return name if name and not name.startswith(".") else "project"
