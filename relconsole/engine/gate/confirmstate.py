"""What confirmation recorded for a quarantine candidate's bytes (SPEC §10, §8 row 5): the
states (unreplayed, replayed once, confirmed, discarded), kept outside the candidate file in
``<git common dir>/relconsole/candidates/<sha256>.json`` keyed by the sha256 of the file's
bytes, read back fail-closed (a damaged or foreign state file reads as unreplayed).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from relconsole.engine.oracle.candidates import Candidate
from relconsole.engine.defaults import CONFIRM_SIDES
from relconsole.engine.errors import UsageError
from relconsole.engine.repo.treeview import TreeView
from relconsole.engine.gate.review import Review
from relconsole.engine.gate.sheets import write_json


STATES = ("unreplayed", "replayed_once", "confirmed", "discarded")


UNREPLAYED, REPLAYED_ONCE, CONFIRMED, DISCARDED = STATES


STATE_VERSION = 1


NOT_CONFIRMED_ON_BASE = "not confirmed: misses on the base"  # a confirmed state with base misses (``said``)


SIDES = CONFIRM_SIDES


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
    def said(self) -> str:
        """The state in a reviewer's words, as ``relconsole confirm`` says it: ``not confirmed:
        misses on the base`` for a confirmed state whose replays missed on the base (the file
        keeps ``confirmed`` with the base-miss record, which ``accept`` reads), else the
        state's name with spaces (``replayed once``)."""
        if self.confirmed and self.base_miss:
            return NOT_CONFIRMED_ON_BASE
        return self.state.replace("_", " ")

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
                "updated_at": utc_now()}


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


def write_state(state: ConfirmState) -> None:
    """Write ``state`` to its file as JSON (atomically)."""
    write_json(state.file, state.to_json())


def utc_now() -> str:
    """The current UTC time as ISO 8601 to the second (the state file's timestamps)."""
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
