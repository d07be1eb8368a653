"""The CI gate (SPEC §8, §9): bind, split check, flags and checklist, run, replay and decide,
with one decision and one exit code.

``run_gate(review, store, options)`` judges one shard of a review: it runs the shard's touched
relations, replays the ones that missed on HEAD and the merge base (§7, sheets and a replay
manifest in the artifacts directory, under a workspace lease, §5) and returns the shard's
*part*: a JSON-ready mapping with the decision of ``Review.decision`` over the shard's
relations and the patch as a whole (flags, split, checklist), the exit code of §8, and what a
reviewer reads (relations with the keys that disagreed, flags, gaps, lease warnings).

``collect(directory, fences)`` merges the parts of every shard under ``directory`` with the
replay sheets there, decided again after fencing (§5): a missing part, a part of another
head, or a touched relation no part judged is an ``abort`` (``incomplete_evidence``), never a
pass. An unsharded gate is a collect of its one part, so both write the same ``decision.json``.

How a patch would cheat this, and why it fails: its code runs only in the subject's sandbox,
which cannot reach the artifacts directory; a part or sheet dropped from the artifacts is an
abort; a part from another commit is an abort; a touched relation left out of every part (a
shard matrix that lost a job) is an abort; a forged sheet meets the lease fence.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from relconsole.engine.gate import exercised, missfacts
from relconsole.engine.gate.checklist import merge_checklist
from relconsole.engine.gate.report import miss_outputs
from relconsole.engine.gate.shrunkfacts import shrunk_json
from relconsole.engine.decision import Decision, worst
from relconsole.engine.errors import EXIT_BAD_INPUT, EXIT_GAP, EXIT_PASS, BadInputError, RelconsoleError, UsageError
from relconsole.engine.gate.sheets import DECISION_FILE, MANIFEST_PATTERN, Fences, decide_sheets, write_json
from relconsole.engine.literal import counted

GATE_VERSION = 1
PART_PATTERN = "gate-shard-*-of-*.json"


def part_name(index: int, total: int) -> str:
    """The file gate shard ``index``/``total`` writes its part to."""
    return f"gate-shard-{index}-of-{total}.json"


@dataclass(frozen=True)
class GateOptions:
    """How to gate: ``runs`` replays per side, the ``shard`` (a ``replay.Shard``), the
    ``artifacts`` directory (sheets, manifests, parts, decision.json) and the workspace lease
    (``workspace``, ``holder``, ``ttl_seconds`` seconds; None: replay's defaults)."""

    artifacts: Path
    shard: object = None
    runs: int = 5
    workspace: str | None = None
    holder: str | None = None
    ttl_seconds: float = 300.0
    fresh_worktrees: bool = False


def run_gate(review, store, options: GateOptions, progress=None) -> dict:
    """Judge ``options.shard`` of ``review`` (an engine Review loaded with ``deferred=True``)
    and return its part (see the module docstring); writes the replay sheets and manifest.

    ``progress``, when given, has ``results(total) -> callback`` (called with each relation
    result of the run) and ``replay(step)`` (each ``replay.Progress``), as the CLI's
    reporter does.

    A bad oracle file is decided (abort ``bad_input``, exit 5) without running anything. A
    replay that cannot finish (the workspace lease held by someone else or lost, the lease
    store down) is an ``abort`` naming why; usage errors (an unwritable artifacts directory)
    raise UsageError. Raises GitError as ``load_review`` does.
    """
    from relconsole.engine.gate import importrun
    from relconsole.engine.gate.replay.replay import replay
    from relconsole.engine.gate.replay.replayoptions import ReplayOptions
    from relconsole.engine.gate.review import finish_review
    from relconsole.engine.gate.reviewrun import run_review
    shard = options.shard
    if review.errors:
        finish_review(review)
        return part_payload(review, shard, [])
    importrun.ensure(review)  # ownership follows imports (§3)
    mine = shard.select(review.touched_relations())
    run_review(review, mine, progress=progress.results(len(mine)) if progress is not None else None,
               meanwhile=lambda: finish_review(review))
    if review.errors:  # a bad quarantine file, read while the relations ran
        return part_payload(review, shard, mine)
    extra = []
    try:
        # the run phase just ran HEAD with drawn seeds: its runs count as HEAD runs of the replay
        replay(review, store, ReplayOptions(options.runs, options.workspace, options.holder, options.ttl_seconds,
                                            options.artifacts, shard, options.fresh_worktrees, count_run_phase=True),
               progress.replay if progress is not None else None)
    except UsageError:
        raise
    except RelconsoleError as exc:
        extra.append(Decision("abort", "replay_failed", None, None, exc.one_line()))
    return part_payload(review, shard, mine, extra)


def part_payload(review, shard, mine: list[str], extra: list[Decision] = ()) -> dict:
    """One shard's part: the review's facts as JSON and its decision over ``mine`` (the
    shard's relation ids) and the patch as a whole, made worse by ``extra``."""
    results, replays = review.results, review.replays
    relations = []
    verdicts = review.relation_verdicts(mine) if not review.errors else []
    for rid, verdict in zip(mine, verdicts):
        relations.append(_relation_json(review, rid, verdict, results.get(rid), replays.get(rid)))
    return {
        "relconsole_gate": GATE_VERSION, "shard_index": shard.index, "shard_total": shard.total,
        "base": review.base_ref, "merge_base": review.merge_base, "head": review.head_sha,
        "oracle": review.oracle_sha,
        "oracle_from": review.oracle_from, "today": review.today.isoformat(),
        "touched": review.touched_relations() if not review.errors else [],
        "relations": relations,
        "patch": [_decision_json(d) for d in ([] if review.errors else review.patch_verdicts())],
        "extra": [_decision_json(d) for d in extra],
        "flags": [review.flag_json(f) for f in review.flags],
        "gaps": [b.path for b in review.gaps()],
        **_exercise_json(review, mine),
        "split": [{"commit": o.commit, "path": o.path, "why": o.why} for o in review.split],
        "split_problem": review.split_problem,
        "checklist": [] if review.errors else [i.to_json() for i in merge_checklist(review)],
        "leases": [{"id": s.id, "source": s.source, "state": s.state, "reason": s.reason, "days_left": s.days_left}
                   for s in review.leases if s.state != "ok"],
        "errors": [{"path": e.path, "line": e.line, "message": e.message} for e in review.errors],
    }


def _exercise_json(review, mine: list[str]) -> dict:
    """A part's evidence of what ran (SPEC §3 covered means exercised): ``changed`` (every owned
    ``.py`` file's changed statements as line spans, with the relations bound to it) and
    ``executed`` (the lines the shard's relations ran in those files), merged by ``collect``."""
    if review.errors or not review.results:
        return {"changed": [], "executed": {}, "unexercised_level": review.layout.unexercised}
    bound = {b.path: list(b.relations) for b in review.bindings}
    changed = exercised.review_changed(review)
    ran = exercised.executed_by(review.results[rid] for rid in mine if rid in review.results)
    return {"changed": [{"path": path, "spans": [list(s) for s in spans], "relations": bound.get(path, [])}
                        for path, spans in changed.items()],
            "executed": {path: sorted(ran[path]) for path in changed if path in ran},
            "drawn": {rid: list(tried) for rid, tried in
                      exercised.drawn_by(review.results[rid] for rid in mine if rid in review.results).items()},
            "unexercised_level": review.layout.unexercised}


def merged_unexercised(parts: list[dict]) -> list[dict]:
    """The changed statements no shard's relations ran (``exercised.Unexercised`` as JSON), over
    every part: a file is judged once every relation bound to it was judged by some part."""
    judged = {r.get("relation_id") for p in parts for r in p["relations"]}
    ran: dict[str, set[int]] = {}
    for part in parts:
        for path, lines in (part.get("executed") or {}).items():
            ran.setdefault(path, set()).update(int(n) for n in lines)
    rows = (parts[0].get("changed") or []) if parts else []
    changed = {row["path"]: [tuple(s) for s in row["spans"]] for row in rows
               if all(rid in judged for rid in row.get("relations", []))}
    owners = {row["path"]: row.get("relations", []) for row in rows}
    drawn = {rid: (int(t[0]), int(t[1])) for part in parts for rid, t in (part.get("drawn") or {}).items()
             if isinstance(t, list) and len(t) == 2}
    return [u.to_json() for u in exercised.unexercised(changed, ran, lambda path: owners.get(path, ()), drawn)]


def _decision_json(d: Decision) -> dict:
    return {"decision": d.decision, "reason": d.reason, "row": d.row, "relation_id": d.relation_id,
            "detail": d.detail}


def _decision_of(data: dict) -> Decision:
    return Decision(str(data.get("decision")), str(data.get("reason")), data.get("row"),
                    data.get("relation_id"), str(data.get("detail") or ""))


def _relation_json(review, rid: str, verdict: Decision, result, replayed) -> dict:
    relation = review.catalog.get(rid) if review.catalog else None
    first = result.first if result is not None else None
    return _decision_json(verdict) | {
        "outcome": result.outcome if result is not None else "not_run",
        "summary": result.summary if result is not None else "",
        "differing": list(first.differing) if first is not None else [],
        "outputs": miss_outputs(result),
        "shrunk": shrunk_json(first) if verdict.decision != "pass" else None,
        "replayed": replayed is not None,
        "sheet": str(replayed.path) if replayed is not None and replayed.path else None,
        "owns": [b.path for b in review.bindings if rid in b.relations],
        "catalog": review.layout.catalog, "catalog_line": relation.line if relation is not None else None,
        "statement": relation.statement if relation is not None else "",
        "input": missfacts.miss_input(result),
        "where": missfacts.where(review, rid, result) if verdict.decision != "pass" else []}


def write_part(part: dict, artifacts: Path) -> Path:
    """Write a shard's part into ``artifacts`` atomically; returns its path."""
    return write_json(Path(artifacts) / part_name(part["shard_index"], part["shard_total"]), part)


def collect(directory: Path, fences: Fences | None = None, head: str | None = None,
            oracle_of: Callable[[str], str | None] | None = None) -> dict:
    """Merge every gate part and replay sheet under ``directory`` into decision.json's content.

    The decision is the worst of: every part's relation verdicts, each replayed relation's
    sheet decided again after fencing (§5), the patch verdicts, and an ``abort``
    ``incomplete_evidence`` when a part is missing, from another head, or a touched relation
    was judged by no part, or when the replay evidence is incomplete (``check_manifests``).
    ``head`` is the commit under review (full sha): a part or replay manifest of any other
    commit is an abort too, and so is ``head`` None (nobody said which commit the evidence
    must be about: stale artifacts, or a patch's own committed ``artifacts/``, would pass).
    The exit code is §8's: 5 when a part saw a bad file, 2 for a coverage gap (an unowned path,
    or a changed statement no shard's relations ran, ``merged_unexercised``) when nothing is
    worse. ``oracle_of(base ref name)`` is the commit that ref names now in the checkout
    (None: unknown): evidence judged under any other oracle commit is an abort as well (a
    part made before the oracle changed, or parts of two oracles), and so is ``oracle_of``
    None when the oracle was read from the base. A relation a part calls missed or replayed
    passes only by a sheet found here. Raises BadInputError (exit 5) for a part or sheet that
    is not JSON.
    """
    directory = Path(directory)
    parts = [_read_part(path) for path in sorted(directory.rglob(PART_PATTERN))]
    problems = (_incomplete_parts(directory, parts) + _other_head(directory, parts, head)
                + _other_oracle(parts, oracle_of))
    if not parts:
        return finish({}, [], [], problems)
    first = parts[0]
    relations: dict[str, dict] = {}
    for entry in (r for part in parts for r in part["relations"]):  # two parts judging one relation: the worse
        known = relations.get(entry["relation_id"])
        if known is None or worst([_decision_of(known), _decision_of(entry)]) == _decision_of(entry):
            relations[entry["relation_id"]] = entry
    verdicts = [_decision_of(r) for r in relations.values()]
    report = decide_sheets(directory, fences=fences)
    sheeted = set()
    for sheet, decided in report.per_sheet:
        verdicts.append(decided)
        sheeted.add(decided.relation_id)
        entry = relations.get(decided.relation_id)
        if entry is not None and decided.decision != entry["decision"]:
            entry["fenced"] = _decision_json(decided)
    problems += _unsheeted(relations, sheeted)
    stopped = any(part["errors"] for part in parts)  # a bad oracle file: nothing was run or replayed, by design
    if report.overall.reason == "incomplete_evidence" and not stopped:
        problems.append(report.overall)
    patch = [_decision_of(d) for part in parts for d in part["patch"] + part["extra"]]
    merged = {key: first[key] for key in ("base", "merge_base", "head", "oracle_from", "today", "touched",
                                          "flags", "gaps", "split", "split_problem", "checklist", "leases")}
    merged |= {"shards": len(parts), "relations": sorted(relations.values(), key=lambda r: r["relation_id"]),
               "errors": [e for part in parts for e in part["errors"]],
               "unexercised": merged_unexercised(parts),
               "unexercised_level": first.get("unexercised_level", "gap")}
    return finish(merged, verdicts, patch, problems)


def finish(merged: dict, verdicts: list[Decision], patch: list[Decision], problems: list[Decision]) -> dict:
    """decision.json's content: ``merged`` facts plus the decision (relations first, then the
    patch, then missing evidence: the headline is the first of the worst) and its §8 exit code."""
    errors = merged.get("errors") or []
    if errors:
        decision = Decision("abort", "bad_input", None, None, f"{errors[0]['path']}: {errors[0]['message']}")
        code = EXIT_BAD_INPUT
    else:
        decision = worst(verdicts + patch + problems) if verdicts or patch or problems else \
            Decision("pass", "no_relations_touched")
        code = decision.exit_code
        if code == EXIT_PASS and (merged.get("gaps") or _unexercised_gap(merged)):
            code = EXIT_GAP
    return {"relconsole_gate": GATE_VERSION, **merged, **_decision_json(decision), "exit_code": code,
            "causes": _causes(verdicts + patch + problems)}


def _unexercised_gap(merged: dict) -> bool:
    """True when changed statements no relation ran make a gap (``unexercised_level`` gap)."""
    return bool(merged.get("unexercised")) and merged.get("unexercised_level", "gap") == "gap"


def _causes(decisions: list[Decision]) -> list[dict]:
    """The decisions that are not pass or freeze, each once, in first-seen order: a relation's
    part verdict and its replay sheet's decision often say the same thing (issue 17)."""
    seen, causes = set(), []
    for d in decisions:
        entry = _decision_json(d)
        key = tuple(entry.values())
        if d.decision not in ("pass", "freeze") and key not in seen:
            seen.add(key)
            causes.append(entry)
    return causes


def _read_part(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise BadInputError(str(path), f"not a gate part: {exc}", 1) from None
    if not isinstance(data, dict) or data.get("relconsole_gate") != GATE_VERSION:
        raise BadInputError(str(path), f"not a gate part of version {GATE_VERSION}", 1)
    for key, kind in (("shard_index", int), ("shard_total", int), ("relations", list), ("patch", list),
                      ("extra", list), ("touched", list), ("errors", list), ("head", str), ("oracle", str)):
        if not isinstance(data.get(key), kind) or isinstance(data.get(key), bool):
            raise BadInputError(str(path), f"a gate part's {key} must be a {kind.__name__}", 1)
    if not 1 <= data["shard_index"] <= data["shard_total"]:
        raise BadInputError(str(path), f"a gate part's shard_index {data['shard_index']} is not in "
                                       f"1..{data['shard_total']}", 1)
    if not all(isinstance(r, dict) and isinstance(r.get("relation_id"), str) for r in data["relations"]):
        raise BadInputError(str(path), "a gate part's relations must each name a relation_id", 1)
    return data


def _other_oracle(parts: list[dict], oracle_of: Callable[[str], str | None] | None) -> list[Decision]:
    """An abort when the parts were judged under another oracle commit than the base ref names
    now, or under two (see ``collect``); none for parts that read the oracle from HEAD."""
    oracles = {str(p.get("oracle")) for p in parts}
    if len(oracles) > 1:
        return [Decision("abort", "incomplete_evidence", None, None, "gate parts judged under different oracle "
                         f"commits ({', '.join(sorted(o[:12] for o in oracles))}): run every shard again")]
    if not parts or all(p.get("oracle_from") == "HEAD" for p in parts):
        return []
    base = str(parts[0].get("base"))
    now = oracle_of(base) if oracle_of is not None else None
    (judged,) = oracles
    if now == judged:
        return []
    return [Decision("abort", "incomplete_evidence", None, None,
                     f"the parts were judged under {base} at {judged[:12]}, but {base} is "
                     f"{now[:12] if now else 'not known here'}: the oracle changed since; run the gate again")]


def _unsheeted(relations: dict[str, dict], sheeted: set[str]) -> list[Decision]:
    """An abort for each relation a part says missed, or replayed, that no sheet here decided
    while the part calls it a pass: a part cannot clear a miss by its own word."""
    return [Decision("abort", "incomplete_evidence", None, rid,
                     f"{rid}: a gate part says it {'missed' if entry.get('outcome') == 'missed' else 'was replayed'} "
                     "and passes, but no replay sheet here decided it")
            for rid, entry in sorted(relations.items())
            if rid not in sheeted and (entry.get("replayed") or entry.get("outcome") == "missed")
            and entry.get("decision") == "pass"]


def _other_head(directory: Path, parts: list[dict], head: str | None) -> list[Decision]:
    """An abort when the evidence under ``directory`` is not about ``head`` (see ``collect``)."""
    if head is None:
        return [Decision("abort", "incomplete_evidence", None, None, "the commit under review is not known "
                         "(run collect in the checkout of the patch, or give --head): the evidence cannot be "
                         "matched to it")]
    heads = {str(p.get("head")) for p in parts}
    for manifest in sorted(directory.rglob(MANIFEST_PATTERN)):
        try:
            heads.add(str(json.loads(manifest.read_text(encoding="utf-8")).get("head")))
        except (OSError, ValueError, AttributeError):
            heads.add("?")  # unreadable: decide_sheets reports it
    others = sorted(h for h in heads if h != head)
    if not others:
        return []
    return [Decision("abort", "incomplete_evidence", None, None,
                     f"evidence under {directory} judged {', '.join(h[:12] for h in others)}, not the commit "
                     f"under review {head[:12]}: stale artifacts, or artifacts the patch brought")]


def _incomplete_parts(directory: Path, parts: list[dict]) -> list[Decision]:
    """Why the parts under ``directory`` do not cover the review, as aborts (none: complete)."""
    def incomplete(why: str) -> Decision:
        return Decision("abort", "incomplete_evidence", None, None, why)
    if not parts:
        return [incomplete(f"no gate part ({PART_PATTERN}) under {directory}: did every gate shard run, "
                           "and were its artifacts collected?")]
    keys = {(p["shard_total"], p["head"], p.get("merge_base"), p.get("base")) for p in parts}
    if len(keys) > 1:
        return [incomplete(f"gate parts under {directory} come from different gates: "
                           + "; ".join(f"{counted(n, 'shard')} of {str(h)[:12]}" for n, h, _, _ in sorted(keys, key=str)))]
    total = parts[0]["shard_total"]
    seen = {p["shard_index"] for p in parts}
    problems = []
    missing = [k for k in range(1, total + 1) if k not in seen]
    if missing:
        problems.append(incomplete(f"no gate part for shard(s) {', '.join(f'{k}/{total}' for k in missing)} "
                                   f"under {directory}"))
    judged = {r.get("relation_id") for p in parts for r in p["relations"]}
    unjudged = sorted(set(parts[0]["touched"]) - judged)
    if unjudged and not missing:
        problems.append(incomplete(f"touched relations no gate shard judged: {', '.join(map(str, unjudged))}"))
    return problems


def shard_payload(part: dict) -> dict:
    """What one shard says on its own (its relations and the patch; decision.json is collect's)."""
    return finish(dict(part) | {"unexercised": merged_unexercised([part])}, [_decision_of(r) for r in part["relations"]],
                  [_decision_of(d) for d in part["patch"] + part["extra"]], [])


def failure_payload(error: RelconsoleError, head: str | None = None) -> dict:
    """decision.json's content for a gate that could not finish (a git error, a bad artifact):
    an ``abort`` ``gate_failed`` naming why, with the error's exit code, so the
    SARIF and the summary a CI job shows say so instead of keeping an older file's word."""
    decision = Decision("abort", "gate_failed", None, None, error.one_line())
    payload = finish({"head": head, "relations": [], "errors": []}, [], [decision], [])
    return payload | {"exit_code": error.exit_code}


def history_decisions(payload: dict) -> list[Decision]:
    """What the gate history records of a decision.json: each relation's decision, and the
    overall one when no relation missed or the evidence was incomplete (as ``decide`` does)."""
    relations = [_decision_of(r) for r in payload.get("relations", []) if r.get("decision") != "pass"]
    overall = _decision_of(payload)
    return relations if relations and overall.relation_id is not None else [*relations, overall]


def write_decision_file(payload: dict, directory: Path) -> Path:
    """Write decision.json (the gate's) into ``directory`` atomically; returns its path."""
    return write_json(Path(directory) / DECISION_FILE, payload)
