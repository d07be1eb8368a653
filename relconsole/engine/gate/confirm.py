"""Second replay of a quarantine candidate (SPEC §10, §7, §5, §8 row 5).

A valid candidate's catalog-form row is run as a relation, the way replay runs a catalog
relation (§7): on HEAD and on the merge base, each side in a clean git worktree with the
oracle's protected files overlaid (§2), its input read from the pinned fixtures, under a
workspace lease (§5). It is replayed twice:

* the **first** replay, in the pooled worktrees (checked out and cleaned), is recorded
  with ``predicate_state: quarantine``, which §8 row 5 holds as ``second_replay_required``;
* the **second**, on a new workspace lease (the lease is released and acquired again: a
  new lease id and a higher generation) in freshly created worktrees.

Both replays use the same seeds, so a deterministic candidate gives the same run by run:
the two replays **agree** when, on each side, every seed held or missed alike with the
same miss signature (§7; so the side's outcome, held / missed / mixed, and its signature
agree too). Agreement marks the candidate ``confirmed``; disagreement discards it with
one ``quarantine:`` commit removing the candidate file, whose message says which side and
seed disagreed and the outcomes and signatures of both replays. Confirmation never
merges a candidate: a reviewer still accepts or deletes it (§10).

State lives outside the candidate file, keyed by the sha256 of the file's bytes (as the
oracle commit holds them), in ``<git common dir>/relconsole/candidates/<sha256>.json``
(written atomically), with the sheet of each replay beside it. Editing the candidate
changes the hash, so an edited candidate is ``unreplayed`` again. States: ``unreplayed``,
``replayed_once``, ``confirmed``, ``discarded`` (final for those bytes).

A first replay is reused by ``confirm`` only when it ran on the review's HEAD, merge base
and oracle commit: a second replay on other code could disagree honestly, so on other
commits the first replay is run again before the second.

Inputs (§4): a candidate is not in the catalog yet, so its lease cannot list it in
``allowed_relations``. Confirmation judges the lease's state (ok or expiring: present,
unexpired, hash matching) and the fixture pin only, and reports in ``notes`` that the lease
will need the id before the accepted relation can run. A seeds input must pass the seeds
rules of §3.

The recorded states live in ``confirmstate``, running one replay under its lease in ``confirmrun``.
"""

from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from relconsole.engine.oracle.candidates import Candidate
from relconsole.engine.oracle.catalog import Relation, _relation
from relconsole.engine.repo.commitkinds import FileChange
from relconsole.engine.repo.commits import CommitResult, commit_changes
from relconsole.engine.decision import Decision
from relconsole.engine.errors import UsageError, did_you_mean
from relconsole.engine.repo.gitio import resolve
from relconsole.engine.repo.treeview import TreeView
from relconsole.engine.literal import one_line
from relconsole.engine.oracle.leases import USABLE
from relconsole.engine.relations.pool import Cancel
from relconsole.engine.gate.review import Review
from relconsole.engine.gate.seeds import seed_file_problem
from relconsole.engine.gate.confirmrun import ConfirmOptions, ConfirmProgress, ConfirmRefused, Run
from relconsole.engine.gate.confirmstate import (CONFIRMED, DISCARDED, REPLAYED_ONCE, SIDES, ConfirmState, write_state,
                                                 candidate_state)
from relconsole.engine.gate.sheets import write_json
from relconsole.engine.gate.wslease.wslease import open_store
from relconsole.engine.gate.wslease.wsleasestore import LeaseStore
from relconsole.engine.oracle.yamlload import Loaded
from relconsole.engine.docsref import decision_row


@dataclass
class ConfirmOutcome:
    """The result of ``confirm_candidate``: the state after it, the replays this call ran
    (``"first"``, ``"second"``), the discarding commit if one was made, and notes that do
    not block (a lease that will need the id in ``allowed_relations`` on accept)."""

    state: ConfirmState
    ran: list[str] = field(default_factory=list)
    commit: CommitResult | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def decision(self) -> Decision:
        """confirmed: pass, unless a replay missed on the base: then hold
        ``subject_not_on_base`` when the subject is code the patch adds (accept it once the
        patch has merged), else reject ``misses_on_base`` (as a relation it would fail code
        that is not broken); discarded: reject ``replays_disagree``; else hold, §8 row 5."""
        rid = self.state.candidate_id
        if self.state.state == CONFIRMED and self.state.base_miss:
            if self.state.subject_not_on_base:
                return Decision("hold", "subject_not_on_base", None, rid, self.state.base_miss)
            return Decision("reject", "misses_on_base", None, rid, self.state.base_miss)
        if self.state.state == CONFIRMED:
            return Decision("pass", "confirmed", None, rid, self.state.reason)
        if self.state.state == DISCARDED:
            return Decision("reject", "replays_disagree", None, rid, self.state.reason)
        return Decision("hold", "second_replay_required", 5, rid, self.state.reason)

    @property
    def exit_code(self) -> int:
        """§8 exit code: 0 confirmed, 1 discarded or missing on the base, 4 only the first
        replay recorded or a subject the base does not have yet."""
        return self.decision.exit_code

    def to_json(self) -> dict:
        decision = self.decision
        return {"candidate_id": self.state.candidate_id, "path": self.state.path,
                "content_sha256": self.state.content_sha256, "state": self.state.state,
                "reason": self.state.reason, "base_miss": self.state.base_miss,
                "decision": decision.decision, "decision_reason": decision.reason,
                "row": decision.row, "exit_code": self.exit_code, "ran": self.ran,
                "first": self.state.first, "second": self.state.second,
                "commit": self.commit.sha if self.commit else self.state.commit,
                "message": self.commit.message if self.commit else None,
                "state_file": str(self.state.file) if self.state.file else None, "notes": self.notes}


def confirm_candidate(review: Review, candidate_id: str, store: LeaseStore | None = None,
                      progress: Callable[[ConfirmProgress], None] | None = None,
                      cancel: Cancel | None = None, options: ConfirmOptions | None = None) -> ConfirmOutcome:
    """Replay candidate ``candidate_id`` (its id or path) a second time and confirm or discard it (§10).

    Runs the first replay unless one for these bytes on these commits is recorded, then the
    second on a new workspace lease in fresh worktrees (unless ``options.first_only``).
    ``store`` defaults to ``open_store(options.lease_url)`` (closed afterwards);
    ``progress`` gets a ``ConfirmProgress`` per step; ``cancel`` stops the runs in flight.
    An already confirmed candidate returns at once; a discarded one still on the branch
    gets its ``quarantine:`` commit (no new replay).

    Raises UsageError (unknown id, 64), ConfirmRefused (rejected candidate, unusable input,
    file changed; 64), LeaseHeld / LeaseLost / StoreUnavailable (abort, 3), EnvironmentFault
    (abort, 3: a replay whose runs judged the machine, as both sides failing to import; §7),
    ReplayCancelled, GitError; CommitRefused when the discarding commit is refused (the
    state says discarded, so the next call makes the commit).
    """
    options = options or ConfirmOptions()
    if options.runs < 1:
        raise UsageError("--runs must be at least 1")
    candidate = _find(review, candidate_id)
    if not candidate.valid or candidate.row is None:
        raise ConfirmRefused(f"{candidate.id} is rejected, so it cannot be confirmed: {'; '.join(candidate.reasons)}")
    state = candidate_state(review, candidate)
    notes = list(candidate.notes)
    if state.state == CONFIRMED:
        return ConfirmOutcome(state, [], None, notes)
    if state.state == DISCARDED:
        return ConfirmOutcome(state, [], _discard_commit(review, candidate, state), notes)
    relation = candidate_relation(candidate)
    _check_input(review, relation)
    own_store = store is None
    store = store or open_store(options.lease_url, review.repo.common_dir)
    run = Run(review, relation, state.content_sha256, store, options, progress, cancel or Cancel())
    try:
        ran = []
        if state.first is None or not _same_commits(review, state.first):
            run.runs = options.runs
            run.share = (0.0, 0.5) if not options.first_only else (0.0, 1.0)
            state.first = run.replay("first", fresh=False)
            state.second, state.state = None, REPLAYED_ONCE
            state.reason = f"first replay recorded; a second replay on a new workspace lease is required ({decision_row(5)})"
            write_state(state)
            ran.append("first")
        if options.first_only:
            return ConfirmOutcome(state, ran, None, notes)
        run.share = (0.5, 1.0) if ran else (0.0, 1.0)
        run.runs = state.first["runs"]
        run.seeds = sorted(r["seed"] for r in state.first["sides"]["head"]["per_seed"])  # the first's seeds
        second = run.replay("second", fresh=True, after=state.first["lease"])
    finally:
        if own_store:
            store.close()
    return _settle(review, candidate, state, second, ran, notes)


def _settle(review: Review, candidate: Candidate, state: ConfirmState, second: dict, ran: list[str],
            notes: list[str]) -> ConfirmOutcome:
    """Record the second replay and settle the candidate (§10): agreeing with the first, it is
    confirmed; disagreeing, discarded by one ``quarantine:`` commit (``_discard_commit``)."""
    state.second = second
    ran.append("second")
    disagreement = _disagreement(state.first, second)
    if disagreement is None:
        state.state = CONFIRMED
        state.reason = (f"the second replay (lease generation {second['lease']['generation']}, fresh worktrees) "
                        f"agrees with the first on {', '.join(SIDES)}")
        _rewrite_sheet(second, "confirmed")
        write_state(state)
        return ConfirmOutcome(state, ran, None, notes)
    state.state, state.reason = DISCARDED, disagreement
    _rewrite_sheet(second, "discarded")
    write_state(state)  # first: a refused commit is retried by the next call, never replayed again
    return ConfirmOutcome(state, ran, _discard_commit(review, candidate, state), notes)


def _find(review: Review, candidate_id: str) -> Candidate:
    for candidate in review.candidates:
        if candidate_id in (candidate.id, candidate.path):
            return candidate
    known = [c.id for c in review.candidates]
    raise UsageError(f"no candidate {candidate_id!r} in quarantine{did_you_mean(candidate_id, known)}")


def candidate_relation(candidate: Candidate) -> Relation:
    """The candidate's catalog-form row as a Relation, built by the catalog's own rules.

    Raises ConfirmRefused when the candidate has no catalog form (it is rejected).
    """
    if candidate.row is None:
        raise ConfirmRefused(f"{candidate.id} has no catalog form: {'; '.join(candidate.reasons)}")
    row = copy.deepcopy(candidate.row)
    return _relation(row, candidate.path, 1, Loaded(row), 0)


def _check_input(review: Review, relation: Relation) -> None:
    """§4 and §3 for a relation the catalog does not hold yet: the lease's state and hash
    (not its ``allowed_relations``), or the seeds file's rows. Raises ConfirmRefused."""
    if relation.lease_id:
        status = review.lease(relation.lease_id)
        if status is None or status.lease is None:
            raise ConfirmRefused(f"{relation.id} reads lease {relation.lease_id!r}, which does not exist")
        if status.state not in USABLE:
            raise ConfirmRefused(f"{relation.id} reads lease {relation.lease_id}, which is {status.state}: "
                                 f"{status.reason}")
        return
    path = relation.seeds_path
    source = review.oracle_dir / path
    try:
        text = source.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        raise ConfirmRefused(f"{relation.id} reads seeds file {path}, which is not in the oracle") from None
    problem = seed_file_problem(text, path, relation)
    if problem is not None:
        raise ConfirmRefused(f"{relation.id} reads bad seeds: {problem.one_line()}")


def _same_commits(review: Review, record: dict) -> bool:
    """True when a recorded replay ran on this review's HEAD, merge base and oracle commit."""
    return (record.get("head"), record.get("merge_base"), record.get("oracle")) == \
        (review.head_sha, review.merge_base, review.oracle_sha)


def _disagreement(first: dict, second: dict) -> str | None:
    """Why the second replay disagrees with the first: for each side that differs, the
    outcomes and signatures of both replays and the first seed that differs. None when
    every run on every side agrees."""
    lines = []
    for name in SIDES:
        one, two = first["sides"][name], second["sides"][name]
        if _runs(one) == _runs(two):
            continue
        label = "HEAD" if name == "head" else "the merge base"
        lines += [f"on {label} ({one['commit'][:12]}) the second replay disagrees with the first:",
                  f"  first replay:  {_summary(one)}  (lease generation {first['lease']['generation']}, "
                  f"{first['worktree']} worktree, {first['at']})",
                  f"  second replay: {_summary(two)}  (lease generation {second['lease']['generation']}, "
                  f"{second['worktree']} worktree, {second['at']})"]
        by_seed = {r["seed"]: r for r in two["per_seed"]}
        for run in one["per_seed"]:
            other = by_seed.get(run["seed"])
            if other is None or (run["held"], run["signature"]) != (other["held"], other["signature"]):
                lines.append(f"  seed {run['seed']}: first {run['describe']}; second "
                             f"{other['describe'] if other else 'did not run'}")
                break
    return "\n".join(lines) or None


def _runs(side: dict) -> list[tuple]:
    return [(r["seed"], r["held"], r["signature"]) for r in side["per_seed"]]


def _summary(side: dict) -> str:
    return (f"{side['outcome']} ({side['misses']}/{side['runs']} runs missed), "
            f"signature {side['signature']}")


def _rewrite_sheet(record: dict, predicate_state: str) -> None:
    """Mark the second replay's sheet with the verdict (it was written as ``quarantine``)."""
    path = Path(record["sheet"])
    try:
        sheet = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return  # the record in the state file is what counts
    sheet["predicate_state"] = predicate_state
    write_json(path, sheet)


def _discard_commit(review: Review, candidate: Candidate, state: ConfirmState) -> CommitResult | None:
    """One ``quarantine:`` commit removing the candidate file, its body the reason (§9, §10).

    None when the oracle branch no longer has the file (someone removed it meanwhile).
    Raises ConfirmRefused when the file on the branch tip is not the replayed bytes (an
    edit voids the replays: it is a new candidate), CommitRefused when §9 refuses.
    """
    branch = review.commit_branch()
    tip = resolve(review.repo, branch)
    data = TreeView(review.repo, tip).read_bytes(candidate.path)
    if data is None:
        return None
    if hashlib.sha256(data).hexdigest() != state.content_sha256:
        raise ConfirmRefused(f"{candidate.path} changed on {branch} since it was replayed; the edit voids "
                             "the replays (reload: it is unreplayed)")
    body = (f"Discarded by a second replay: {one_line(candidate.path)}\n"
            f"sha256 of the candidate: {state.content_sha256}\n\n{one_line(state.reason)}\n")
    result = commit_changes(review.repo, branch, "quarantine", f"discard {one_line(candidate.id)}: the second replay "
                            "disagrees with the first", [FileChange(candidate.path, None)], body,
                            layout=review.layout)
    state.commit = result.sha
    write_state(state)
    return result
