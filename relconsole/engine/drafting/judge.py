"""Judging drafts (SPEC §10): each drafted candidate is stamped with true provenance
(relconsole's, not the model's claim) and validated with ``validate_candidate`` exactly as the
review validates a quarantine file; drafted seed rows with ``validate_seed_rows``. Only what
passed is committed, as one ``quarantine:`` commit onto the oracle branch (§9), never over a
file the branch already holds.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from relconsole.engine.drafting.prompt import Ticket, existing_seed_values, seed_file_values, seeds_relation
from relconsole.engine.drafting.parse import UnreadRow
from relconsole.engine.drafting.quarantine import (check_tip_directory, commit_drafts, quarantine_names,
                                                   subject_ids, oracle_tip, quarantine_path,
                                                   seeds_quarantine_path, tip_seeds_text)
from relconsole.engine.errors import BadInputError
from relconsole.engine.gate.quarantineload import input_shape
from relconsole.engine.gate.review import Review
from relconsole.engine.oracle.candidatecheck import validate_candidate
from relconsole.engine.oracle.candidateids import id_key, id_problem
from relconsole.engine.oracle.candidates import PROVENANCE
from relconsole.engine.oracle.seedrows import SeedRow, validate_seed_rows
from relconsole.engine.oracle.textedit import append_jsonl_rows, jsonl_lines
from relconsole.engine.oracle.yamlload import dump_yaml
from relconsole.engine.repo.treeview import TreeView

if TYPE_CHECKING:  # `relconsole run` builds every command's parser: commits load when a draft is committed
    from relconsole.engine.repo.commits import CommitResult

_FIELD_ORDER = ("id", "transform", "compare", "subject", "merge", "inverse", "input", "params",
                "quantum", "statement", "must_not", "owner", *PROVENANCE)


@dataclass
class Drafted:
    """One drafted candidate: where it would go, why it is rejected, what was noted.

    ``path`` is repository-relative; ``text`` the YAML that was validated and is written;
    ``written`` turns True once the file exists.
    """

    index: int
    id: str
    path: str | None
    text: str = ""
    reasons: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    written: bool = False

    @property
    def valid(self) -> bool:
        return not self.reasons

    def to_json(self) -> dict:
        return {"index": self.index, "id": self.id, "path": self.path, "valid": self.valid,
                "written": self.written, "reasons": self.reasons, "notes": self.notes}


def utc_stamp(now: dt.datetime | None = None) -> str:
    """``now`` (default: the current time) as a UTC ISO 8601 instant ending in ``Z``."""
    now = now or dt.datetime.now(dt.timezone.utc)
    return now.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def provenance(drafter: str, ticket: Ticket | None, review: Review, now: dt.datetime | None = None) -> dict:
    """drafted_by / drafted_at / source as relconsole knows them: the command it ran, when,
    and what the prompt was built from (the ticket, the diff's commits)."""
    source = f"relconsole propose: diff {review.merge_base[:12]}..{review.head_sha[:12]}"
    if ticket is not None:
        source += f", ticket {ticket.name}"
    return {"drafted_by": drafter, "drafted_at": utc_stamp(now), "source": source}


def _ordered(raw: dict) -> dict:
    head = {k: raw[k] for k in _FIELD_ORDER if k in raw}
    return head | {k: v for k, v in raw.items() if k not in head}


def _candidate_modeline(review: Review) -> Callable[[str], str]:
    """path -> the ``# yaml-language-server`` line of a candidate file at that path, when the
    oracle branch holds the candidate schema's copy (``init`` and ``demo`` write the copies),
    else "" (a line naming a schema that is not there would mislead the editor)."""
    import posixpath

    from relconsole import schemas
    from relconsole.engine.oracle.bootstrap import SCHEMAS_DIR, modeline
    oracle_dir = posixpath.dirname(review.layout.catalog)
    copy = posixpath.join(oracle_dir, SCHEMAS_DIR, schemas.file_name("candidate"))
    if TreeView(review.repo, review.base_tip).blob_id(copy) is None:
        return lambda _path: ""
    return lambda path: modeline(path, "candidate", oracle_dir)


def judge_candidates(review: Review, items: list[Any], stamp: dict) -> list[Drafted]:
    """Validate each drafted candidate as a quarantine file (§10); nothing is written.

    ``stamp`` holds the provenance relconsole records (``provenance()``); it replaces
    what the drafter wrote for those fields, and a note says when it differed. Besides
    ``validate_candidate``'s rules, an id must be filename-safe (``candidateids.id_problem``), new to the
    quarantine (base ref and working tree) and unique within the draft, where ids that differ
    only by case, spacing or look-alike letters (``candidateids.id_key``) are the same id, as
    for the catalog. BadInputError (exit 5) when the quarantine directory is a symlink.
    """
    catalog = review.catalog
    if catalog is None:
        raise BadInputError(review.layout.catalog, "the catalog did not load: candidates cannot be judged")
    out: list[Drafted] = []
    judged: list[tuple[Drafted, Any]] = []  # (drafted item, its Candidate) for the import check
    seen: dict[str, tuple[str, int]] = {}  # id_key -> (id, item) drafted earlier in this output
    queued = quarantine_names(review)
    modeline_of = _candidate_modeline(review)
    for index, raw in enumerate(items, 1):
        if not isinstance(raw, dict):
            out.append(Drafted(index, f"#{index}", None,
                               reasons=[f"a candidate is a mapping, not {type(raw).__name__}"]))
            continue
        rid = raw.get("id")
        problem = id_problem(rid)
        if problem:  # checked before the id names a path
            label = rid if isinstance(rid, str) else f"#{index}"
            out.append(Drafted(index, label, None, reasons=[f"safe_id: {problem}"]))
            continue
        notes = [f"{key}: the drafter's {raw[key]!r} replaced by relconsole's record"
                 for key in PROVENANCE if key in raw and str(raw[key]) != stamp[key]]
        body = _ordered({k: v for k, v in raw.items() if k not in PROVENANCE} | stamp)
        path = quarantine_path(review, rid)
        text = modeline_of(path) + dump_yaml(body)
        candidate = validate_candidate(path, text, catalog, lambda inp: input_shape(review, inp))
        reasons = [f"{v.rule}: {v.reason}" for v in candidate.verdicts if not v.ok and v.checked]
        key = id_key(rid)
        collision = _id_collision(rid, index, seen.get(key), queued.get(key))
        if collision:
            reasons.append(collision)
        seen.setdefault(key, (rid, index))
        out.append(Drafted(index, rid, path, text, reasons, notes + list(candidate.notes)))
        judged.append((out[-1], candidate))
    _reject_unresolved(review, judged)
    return out


def _id_collision(rid: str, index: int, earlier: tuple[str, int] | None, queued: str | None) -> str | None:
    """The ``unique_id`` reason of drafted item ``index`` with id ``rid``, or None: ``earlier``
    is (id, item) drafted before it in this output with the same ``id_key``, ``queued`` the id
    already in quarantine with that key (an earlier item of the output is named first)."""
    alike = "(it differs only by case, spacing or look-alike letters)"
    if earlier is not None:
        other, first = earlier
        if other == rid:
            return f"unique_id: drafted twice in this output (item {index})"
        return f"unique_id: id {rid!r} collides with {other!r}, item {first} of this output {alike}"
    if queued is not None:
        if queued == rid:
            return f"unique_id: a candidate {rid!r} is already in quarantine"
        return f"unique_id: id {rid!r} collides with quarantine candidate {queued!r} {alike}"
    return None


def _reject_unresolved(review: Review, judged: list[tuple[Drafted, Any]]) -> None:
    """A drafted subject (or inverse, transform, canon) that does not resolve on the base is
    rejected before it is committed: importing it happens in a subject process (§10)."""
    from relconsole.engine.gate.subjectcheck import CANDIDATE_RULE, reject_unresolved_candidates
    alive = [(item, candidate) for item, candidate in judged if item.valid]
    if not alive:
        return
    reject_unresolved_candidates(review, [candidate for _item, candidate in alive])
    for item, candidate in alive:
        verdict = candidate.verdict(CANDIDATE_RULE)
        if verdict is not None and not verdict.ok:
            item.reasons.append(f"{CANDIDATE_RULE}: {verdict.reason}")


def commit_candidates(review: Review, drafted: list[Drafted], drafter: str) -> CommitResult | None:
    """Commit each valid candidate as a new file in quarantine: one ``quarantine:`` commit
    onto the oracle branch (§9, §10; a temporary index, the user's work untouched), or None
    when nothing is valid. A path the branch already holds (anything at that name) is never
    replaced: that candidate gets a reason instead. Sets ``written`` on what was committed.

    Raises CommitRefused (exit 64: no local oracle branch, the branch moved meanwhile, or a
    drafted path has uncommitted work where the branch is checked out) and BadInputError
    (exit 5: the branch holds the quarantine directory as a file or symlink).
    """
    pending = [item for item in drafted if item.valid and item.path is not None]
    if not pending:
        return None
    branch, view = oracle_tip(review)
    check_tip_directory(view, review.layout.quarantine_dir, branch)
    for item in pending:
        if view.exists(item.path) or view.list_files(item.path):
            item.reasons.append(f"unique_id: {item.path} already exists on {branch}")
    pending = [item for item in pending if item.valid]
    if not pending:
        return None
    changes = [(item.path, item.text) for item in pending]
    result = commit_drafts(review, branch, f"draft {subject_ids([i.id for i in pending])}", changes, drafter)
    for item in pending:
        item.written = True
    return result


# --- seed rows ---------------------------------------------------------------------------

@dataclass
class DraftedRow:
    """One drafted seed row: its place in the draft, its JSON line, and why it is rejected.

    Once committed, ``line`` is its 1-based line in the quarantine file and ``id`` its stable
    ``row-…`` id (what ``relconsole accept`` and ``delete`` take; the line moves, the id not).
    """

    index: int
    text: str
    reasons: list[str] = field(default_factory=list)
    line: int | None = None
    id: str | None = None

    @property
    def valid(self) -> bool:
        return not self.reasons

    def to_json(self) -> dict:
        return {"index": self.index, "row": self.text, "valid": self.valid,
                "line": self.line, "id": self.id, "reasons": self.reasons}


def _plain_json(value: Any) -> str:
    """``value`` as one JSON line; YAML dates become ISO text. TypeError for other values."""
    def default(item: Any) -> str:
        if isinstance(item, (dt.date, dt.datetime)):
            return item.isoformat()
        raise TypeError(f"{type(item).__name__} is not JSON")
    return json.dumps(value, ensure_ascii=False, default=default)


def judge_seed_rows(review: Review, relation_id: str, items: list[Any]) -> list[DraftedRow]:
    """Validate drafted rows for ``relation_id`` with ``validate_seed_rows`` (§10): exactly
    the schema's keys, types and bounds, no answer-like key, no duplicate of an existing
    seed, of a row already in its quarantine file, or of another drafted row."""
    relation = seeds_relation(review, relation_id)
    rows: list[DraftedRow] = []
    for index, value in enumerate(items, 1):
        if isinstance(value, UnreadRow):
            rows.append(DraftedRow(index, value.text, [value.reason]))
            continue
        try:
            rows.append(DraftedRow(index, _plain_json(value)))
        except (TypeError, ValueError) as exc:
            rows.append(DraftedRow(index, repr(value)[:200], [f"not a JSON value: {exc}"]))
    judged = [r for r in rows if r.valid]
    verdicts = validate_seed_rows(seeds_quarantine_path(review, relation_id),
                                  "".join(r.text + "\n" for r in judged), review.catalog,
                                  existing_seed_values(review, relation), seed_file_values(review, relation))
    for row, verdict in zip(judged, verdicts):
        row.reasons.extend(verdict.reasons)
    return rows


def commit_seed_rows(review: Review, relation_id: str, rows: list[DraftedRow],
                     drafter: str) -> tuple[str, CommitResult] | None:
    """Append the valid rows to ``<quarantine dir>/<relation id>.seeds.jsonl`` as the oracle
    branch holds it now (every existing byte kept) in one ``quarantine:`` commit (§9, §10);
    returns (that path, the commit), or None when no row is valid. Sets each committed
    row's ``line`` and stable ``id``.

    Raises what ``commit_candidates`` raises, and BadInputError (exit 5) naming the file
    when the branch's copy is a symlink or not JSON lines (``tip_seeds_text``).
    """
    valid = [r for r in rows if r.valid]
    if not valid:
        return None
    branch, view = oracle_tip(review)
    check_tip_directory(view, review.layout.quarantine_dir, branch)
    relative = seeds_quarantine_path(review, relation_id)
    before = tip_seeds_text(review, relation_id, view, branch) or ""
    after = append_jsonl_rows(before, [json.loads(r.text) for r in valid])
    count = len(valid)
    result = commit_drafts(review, branch, f"draft {count} seed row{'s' * (count != 1)} for {relation_id}",
                            [(relative, after)], drafter)
    first = len(jsonl_lines(after)) - count + 1
    for offset, row in enumerate(valid):
        row.line = first + offset
        row.id = SeedRow(relative, relation_id, row.line, row.text, json.loads(row.text), []).id
    return relative, result
