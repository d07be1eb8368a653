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
"""

from __future__ import annotations

import copy
import datetime as dt
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from relconsole.engine.oracle.candidates import Candidate
from relconsole.engine.oracle.catalog import Relation, _relation
from relconsole.engine.repo.commits import CommitResult, FileChange, commit_changes
from relconsole.engine.decision import Decision
from relconsole.engine.defaults import CONFIRM_RUNS, CONFIRM_SIDES
from relconsole.engine.errors import CommitRefused, RelconsoleError, UsageError
from relconsole.engine.repo.gitio import TreeView, resolve
from relconsole.engine.literal import one_line
from relconsole.engine.oracle.leases import USABLE
from relconsole.engine.gate.replay import (Cancel, EnvironmentFault, Progress, ReplayOptions, Shard, sheet_common,
                                      confirm_fresh, environment_fault,
                                      dead_holder_hint, miss_evidence, Heartbeat, miss_signature, pin_fields,
                                      release_workspace, run_sides, ReplaySide, side_counts, default_workspace)
from relconsole.engine.gate.review import Review, seed_file_problem, plan_for
from relconsole.engine.relations.records import RunPlan, RunRecord
from relconsole.engine.gate.sheets import write_json
from relconsole.engine.relations.signatures import failure_class, signature
from relconsole.engine.repo.workspace import overlay_oracle
from relconsole.engine.repo.worktrees import WorktreePool
from relconsole.engine.gate.wslease import LeaseHeld, LeaseStore, WorkspaceLease, default_holder, open_store, redact
from relconsole.engine.oracle.yamlload import Loaded

STATES = ("unreplayed", "replayed_once", "confirmed", "discarded")
UNREPLAYED, REPLAYED_ONCE, CONFIRMED, DISCARDED = STATES
STATE_VERSION = 1
DEFAULT_RUNS = CONFIRM_RUNS  # runs per side in each of the two replays
SIDES = CONFIRM_SIDES


class ConfirmRefused(CommitRefused):
    """The candidate cannot be confirmed as asked (exit 64): it is rejected by validation,
    its input is not usable (§4 lease state, §3 seeds, a fixture pin mismatch), or its file
    changed on the oracle branch since it was replayed."""


@dataclass
class ConfirmProgress:
    """One step of a confirmation, for a progress bar: what, and how far (0..1) when known."""

    step: str
    fraction: float | None = None


@dataclass
class ConfirmOptions:
    """How to confirm: runs per side in each replay, the workspace lease, the lease store.

    ``workspace`` defaults to the replay workspace of this repository plus ``:confirm`` (so
    a confirmation and a replay of the relations do not refuse each other); ``holder`` to
    ``user@host:pid``; ``ttl_seconds`` is the lease TTL (renewed every third of it);
    ``first_only`` records the first replay and stops (the caller holds, §8 row 5).
    """

    runs: int = DEFAULT_RUNS
    workspace: str | None = None
    holder: str | None = None
    ttl_seconds: float = 300.0
    lease_url: str | None = None
    first_only: bool = False
    workers: int | None = None


@dataclass
class ConfirmState:
    """What is recorded for one candidate's bytes (``content_sha256``, hex).

    ``state`` is one of ``STATES``; ``first``/``second`` are replay records (dicts: the
    commits, per-side outcome, runs, misses, signature and per-seed results, the lease id,
    workspace and generation, the worktree kind, the time and the sheet path) or None;
    ``reason`` says why the state is what it is; ``commit`` is the discarding
    ``quarantine:`` commit once made; ``file`` is where the state lives.
    """

    candidate_id: str
    path: str
    content_sha256: str
    state: str = UNREPLAYED
    reason: str = ""
    first: dict | None = None
    second: dict | None = None
    commit: str | None = None
    file: Path | None = None

    @property
    def confirmed(self) -> bool:
        return self.state == CONFIRMED

    def elsewhere(self, review: Review) -> str | None:
        """Why this state's replays do not speak for ``review`` (they ran on another merge
        base or oracle commit: a confirm under another --base or --oracle-from), else None.
        The state is keyed by the candidate's bytes alone, so an accept must check it."""
        for which, record in (("first", self.first), ("second", self.second)):
            if record and (record.get("merge_base"), record.get("oracle")) != (review.merge_base, review.oracle_sha):
                return (f"its {which} replay ran on merge base {str(record.get('merge_base'))[:12]} with oracle "
                        f"{str(record.get('oracle'))[:12]}, not this review's {review.merge_base[:12]} and "
                        f"{review.oracle_sha[:12]}")
        return None

    @property
    def base_miss(self) -> str | None:
        """When a recorded replay missed on the base (the merge base: code before the
        patch) in any run: how often and what the first miss said, else None. Such a
        candidate may be confirmed (the replays agree), yet as a catalog relation it would
        hold or reject reviews on the base's own code, or, for code the patch adds (the
        subject is not on the base), every review until the patch has merged."""
        sides = [record["sides"]["base"] for record in (self.first, self.second)
                 if record and "base" in record.get("sides", {})]
        missed = sum(side["misses"] for side in sides)
        if not missed:
            return None
        runs = sum(side["runs"] for side in sides)
        first = next((seed["describe"] for side in sides for seed in side.get("per_seed", ())
                      if not seed.get("held") and seed.get("describe")), "missed")
        return f"{missed} of {runs} base runs missed: {first}"

    @property
    def subject_not_on_base(self) -> bool:
        """Whether the base misses are the subject's absence (code the patch adds)."""
        why = self.base_miss or ""
        return any(word in why for word in ("AttributeError", "ModuleNotFoundError", "ImportError"))

    def to_json(self) -> dict:
        """The state file's content (``file`` is where it is, not part of it)."""
        return {"relconsole_candidate_state": STATE_VERSION, "candidate_id": self.candidate_id,
                "path": self.path, "content_sha256": self.content_sha256, "state": self.state,
                "reason": self.reason, "first": self.first, "second": self.second, "commit": self.commit,
                "updated_at": _now()}


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
        """confirmed: pass; discarded: reject ``replays_disagree``; else hold, §8 row 5."""
        rid = self.state.candidate_id
        if self.state.state == CONFIRMED:
            return Decision("pass", "confirmed", None, rid, self.state.reason)
        if self.state.state == DISCARDED:
            return Decision("reject", "replays_disagree", None, rid, self.state.reason)
        return Decision("hold", "second_replay_required", 5, rid, self.state.reason)

    @property
    def exit_code(self) -> int:
        """§8 exit code: 0 confirmed, 1 discarded, 4 only the first replay recorded."""
        return self.decision.exit_code

    def to_json(self) -> dict:
        decision = self.decision
        return {"candidate_id": self.state.candidate_id, "path": self.state.path,
                "content_sha256": self.state.content_sha256, "state": self.state.state,
                "reason": self.state.reason, "decision": decision.decision, "decision_reason": decision.reason,
                "row": decision.row, "exit_code": self.exit_code, "ran": self.ran,
                "first": self.state.first, "second": self.state.second,
                "commit": self.commit.sha if self.commit else self.state.commit,
                "message": self.commit.message if self.commit else None,
                "state_file": str(self.state.file) if self.state.file else None, "notes": self.notes}


# --- state on disk ------------------------------------------------------------------------

def state_dir(review: Review) -> Path:
    """``<git common dir>/relconsole/candidates``: where candidate states and sheets live."""
    return Path(review.repo.common_dir).resolve() / "relconsole" / "candidates"


def content_sha256(review: Review, candidate: Candidate) -> str:
    """sha256 (hex) of the candidate file's exact bytes in the oracle commit of ``review``.

    The bytes come from git's object database (not decoded text), so any edit, even one
    invalid UTF-8 byte, changes the hash. Raises UsageError when the file is not there.
    """
    data = TreeView(review.repo, review.oracle_sha).read_bytes(candidate.path)
    if data is None:
        raise UsageError(f"{candidate.path} is not in the oracle commit {review.oracle_sha[:12]}")
    return hashlib.sha256(data).hexdigest()


def candidate_state(review: Review, candidate: Candidate) -> ConfirmState:
    """The recorded state of ``candidate``'s current bytes (cheap: one blob read, one small file).

    A candidate never replayed, or whose bytes changed since, is ``unreplayed``. A state
    file that cannot be read or is not ours reads as ``unreplayed`` with the reason (fails
    closed: never confirmed by a damaged file).
    """
    digest = content_sha256(review, candidate)
    return _read_state(review, candidate, digest)


def load_candidate_states(review: Review) -> dict[str, ConfirmState]:
    """``candidate_state`` of every valid candidate of ``review``, by candidate path; also
    stored in ``review.candidate_states`` for the front ends (rejected ones cannot replay)."""
    review.candidate_states = {c.path: candidate_state(review, c) for c in review.candidates if c.valid}
    return review.candidate_states


def _read_state(review: Review, candidate: Candidate, digest: str) -> ConfirmState:
    file = state_dir(review) / f"{digest}.json"
    fresh = ConfirmState(candidate.id, candidate.path, digest, file=file)
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return fresh
    except (OSError, ValueError) as exc:
        fresh.reason = f"state file {file} unreadable ({exc}); treated as unreplayed"
        return fresh
    if (not isinstance(data, dict) or data.get("content_sha256") != digest or data.get("state") not in STATES
            or data.get("relconsole_candidate_state") != STATE_VERSION):
        fresh.reason = f"state file {file} is not a candidate state for these bytes; treated as unreplayed"
        return fresh
    first, second = _record_or_none(data.get("first")), _record_or_none(data.get("second"))
    if data["state"] in (CONFIRMED, DISCARDED) and (first is None or second is None):
        fresh.reason = f"state file {file} says {data['state']} without both replays; treated as unreplayed"
        return fresh
    if first is None:
        return fresh
    return ConfirmState(candidate.id, candidate.path, digest, data["state"], str(data.get("reason") or ""),
                        first, second,
                        data.get("commit") if isinstance(data.get("commit"), str) else None, file)


def _record_or_none(value) -> dict | None:
    """A replay record as written by this module, or None (absent or damaged)."""
    try:
        ok = (isinstance(value["runs"], int) and isinstance(value["lease"]["generation"], int)
              and all(isinstance(value["sides"][name]["per_seed"], list) for name in SIDES)
              and all(isinstance(value[key], str) for key in ("head", "merge_base", "oracle", "worktree", "at")))
    except (KeyError, TypeError):
        return None
    return value if ok else None


def _write_state(state: ConfirmState) -> None:
    write_json(state.file, state.to_json())


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


# --- confirming ---------------------------------------------------------------------------

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
    run = _Run(review, relation, state.content_sha256, store, options, progress, cancel or Cancel())
    try:
        ran = []
        if state.first is None or not _same_commits(review, state.first):
            run.runs = options.runs
            run.share = (0.0, 0.5) if not options.first_only else (0.0, 1.0)
            state.first = run.replay("first", fresh=False)
            state.second, state.state = None, REPLAYED_ONCE
            state.reason = "first replay recorded; a second replay on a new workspace lease is required (§8 row 5)"
            _write_state(state)
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
    state.second = second
    ran.append("second")
    disagreement = _disagreement(state.first, second)
    if disagreement is None:
        state.state = CONFIRMED
        state.reason = (f"the second replay (lease generation {second['lease']['generation']}, fresh worktrees) "
                        f"agrees with the first on {', '.join(SIDES)}")
        _rewrite_sheet(second, "confirmed")
        _write_state(state)
        return ConfirmOutcome(state, ran, None, notes)
    state.state, state.reason = DISCARDED, disagreement
    _rewrite_sheet(second, "discarded")
    _write_state(state)  # first: a refused commit is retried by the next call, never replayed again
    return ConfirmOutcome(state, ran, _discard_commit(review, candidate, state), notes)


def _find(review: Review, candidate_id: str) -> Candidate:
    for candidate in review.candidates:
        if candidate_id in (candidate.id, candidate.path):
            return candidate
    raise UsageError(f"no candidate {candidate_id!r} in quarantine")


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


class _Run:
    """One candidate's replays: lease, worktrees, runs, sheet and record for each."""

    def __init__(self, review: Review, relation: Relation, digest: str, store: LeaseStore,
                 options: ConfirmOptions, progress, cancel: Cancel):
        self.review, self.relation, self.digest = review, relation, digest
        self.store, self.options = store, options
        self.progress, self.cancel = progress, cancel
        self.workspace = options.workspace or default_workspace(review, Shard()) + ":confirm"
        self.holder = options.holder or default_holder()
        self.share = (0.0, 1.0)  # the part of the whole this replay's runs fill
        self.runs = options.runs
        self.seeds: list[int] | None = None  # None: drawn (the first replay); else the first's, again

    def step(self, text: str, done: float | None = None) -> None:
        if self.progress is not None:
            low, high = self.share
            self.progress(ConfirmProgress(text, None if done is None else low + (high - low) * done))

    def replay(self, which: str, fresh: bool, after: dict | None = None) -> dict:
        """One replay (``which``: first|second) under a newly acquired workspace lease; its record.

        ``after`` is the first replay's lease: the second must run under another one.
        """
        review, relation = self.review, self.relation
        self.step(f"{which} replay of {relation.id}: acquiring workspace lease {self.workspace}", 0.0)
        try:
            lease = self.store.acquire(self.workspace, self.holder, self.options.ttl_seconds)
        except LeaseHeld as exc:
            exc.args = (str(exc) + dead_holder_hint(exc.lease),)
            raise
        heartbeat = Heartbeat(self.store, lease, self.options.ttl_seconds)
        heartbeat.start()
        pool = WorktreePool(review.repo, self.workspace, fresh)
        try:
            if after is not None and after.get("id") == lease.id:
                raise RelconsoleError(f"the second replay got the first replay's lease {lease.id}; "
                                      "a second replay needs a new workspace lease")
            sides = []
            for name, commit in (("head", review.head_sha), ("base", review.merge_base)):
                kind = "freshly created" if fresh else "clean pooled"
                self.step(f"{which} replay: {kind} worktree of {name} at {commit[:12]}", 0.0)
                tree = pool.checkout(name, commit)
                overlay_oracle(review.repo, commit, review.oracle_dir, review.layout.protected, tree)
                sides.append(ReplaySide(name, commit, tree))
            plans = {relation.id: {s.name: plan_for(review, relation, s.tree) for s in sides}}
            pin = pin_fields(review, plans[relation.id]["head"], plans[relation.id]["base"], relation)
            if pin["state"] != "match":
                raise ConfirmRefused(f"{relation.id}: fixture pin mismatch for {pin['path']} (expected "
                                     f"{pin['expected']}, HEAD {pin['actual']}, base {pin['actual_base']}); "
                                     "a candidate is confirmed against the pinned fixtures only")
            options = ReplayOptions(runs=self.runs, seeds=self.seeds, workspace=self.workspace, holder=self.holder,
                                    ttl_seconds=self.options.ttl_seconds, workers=self.options.workers,
                                    cancel=self.cancel)

            def ran(p: Progress) -> None:
                self.step(f"{which} replay: {p.label} ({p.done}/{p.total})", p.done / p.total)

            records = run_sides(plans, sides, options, heartbeat, ran)[relation.id]
            fault = environment_fault(records["head"], records["base"])
            if fault:  # §7: the machine, not the candidate; recording it would let two replays "agree"
                raise EnvironmentFault(f"{relation.id}: abort (environment) in the {which} replay: {fault}; "
                                       "nothing recorded")
            heartbeat.stop()
            final = confirm_fresh(self.store, lease, heartbeat)
        finally:
            heartbeat.stop()
            pool.release()
            release_workspace(self.store, self.workspace, self.holder)
        return self._record(which, fresh, plans[relation.id], records, final, pin, options)

    def _record(self, which: str, fresh: bool, plans: dict[str, RunPlan], records: dict[str, list[RunRecord]],
                lease: WorkspaceLease, pin: dict, options: ReplayOptions) -> dict:
        review, relation = self.review, self.relation
        pin_digest = plans["head"].fixture_pin
        sides = {name: _side(commit, sorted(records[name], key=lambda r: r.seed), relation, pin_digest)
                 for name, commit in (("head", review.head_sha), ("base", review.merge_base))}
        lease_json = {"id": lease.id, "holder": lease.holder, "workspace": lease.workspace,
                      "generation": lease.generation, "store": redact(self.store.url)}
        sheet = sheet_common(review, relation, options)
        head, base = records["head"], records["base"]
        head_misses, base_misses = [r for r in head if not r.held], [r for r in base if not r.held]
        sheet.update({
            "predicate_state": "quarantine", "replay": which,
            "property_result": "fail" if head and not any(r.held for r in head) else "pass",
            "fixture_pin": pin, "signature": sides["head"]["signature"],
            "base_signature": sides["base"]["signature"],
            "runs": {"head": side_counts(review.head_sha, head), "base": side_counts(review.merge_base, base)},
            "evidence": {"head": miss_evidence(head_misses), "base": miss_evidence(base_misses)},
            "lease": dict(lease_json, state="fresh"),
        })
        self.step(f"{which} replay: recording", 1.0)
        return {"replay": which, "head": review.head_sha, "merge_base": review.merge_base,
                "oracle": review.oracle_sha, "runs": options.runs,
                "worktree": "fresh" if fresh else "pooled", "lease": lease_json, "at": _now(),
                "sides": sides, "sheet": str(self._sheet_path(which, sheet))}

    def _sheet_path(self, which: str, sheet: dict) -> Path:
        """Write the replay's §7 sheet beside the state file; returns its path."""
        return write_json(state_dir(self.review) / f"{self.digest}.{which}.sheet.json", sheet)


def _side(commit: str, records: list[RunRecord], relation: Relation, pin: str) -> dict:
    """One side of one replay: its outcome (held|missed|mixed), counts, signature, and each run."""
    misses = [r for r in records if not r.held]
    outcome = "held" if not misses else "missed" if len(misses) == len(records) else "mixed"
    per_seed = [{"seed": r.seed, "held": r.held,
                 "signature": None if r.held else signature(relation.id, relation.kind, pin,
                                                            failure_class(r.error_type, r.differing, r.error)),
                 "describe": r.describe()[:300]} for r in records]
    return {"commit": commit, "outcome": outcome, "runs": len(records), "misses": len(misses),
            "signature": miss_signature(relation, pin, misses) if misses else "none",
            "per_seed": per_seed}


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
    body = (f"Discarded by a second replay (SPEC §10): {one_line(candidate.path)}\n"
            f"sha256 of the candidate: {state.content_sha256}\n\n{one_line(state.reason)}\n")
    result = commit_changes(review.repo, branch, "quarantine", f"discard {one_line(candidate.id)}: the second replay "
                            "disagrees with the first", [FileChange(candidate.path, None)], body,
                            layout=review.layout)
    state.commit = result.sha
    _write_state(state)
    return result
