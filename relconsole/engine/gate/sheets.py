"""Replay sheets on disk and the §8 decision over them (``relconsole decide``).

``load_sheets`` reads one ``*.sheet.json`` file or every one under a directory (a CI job
downloads each shard's artifacts into its own subfolder). ``fence`` applies the §5 fencing
token: a sheet whose lease generation is no longer the store's is stale evidence.
``decide_sheets`` decides each sheet and the PR (worst of them); ``write_decision`` writes
``decision.json`` atomically.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from relconsole.engine.atomicfile import write_atomic
from relconsole.engine.gate.wslease import wslease, wsleasestore
from relconsole.engine.decision import ORDER, Decision, decide, worst
from relconsole.engine.errors import BadInputError, RelconsoleError
from relconsole.engine.oracle.jsonnumbers import count_problem, line_of_key, loads

SHEET_SUFFIX = ".sheet.json"
DECISION_FILE = "decision.json"

GenerationOf = Callable[[str], int]


def load_sheets(path: str | os.PathLike) -> list[tuple[str, dict]]:
    """``[(path, sheet)]`` from a sheet file, or from every ``*.sheet.json`` under a directory
    (recursively, sorted by path; an empty directory gives []).

    Raises BadInputError (exit 5) naming the file and, for invalid JSON, the line, when a
    file is not JSON (an integer too long to read included) or not a JSON object, when a
    run count (``runs.head|base.runs|misses``) is there but is not a whole number of at least
    0 (``-Infinity``, ``NaN``), or when ``path`` does not exist.
    """
    root = Path(path)
    if root.is_dir():
        files = sorted(p for p in root.rglob("*" + SHEET_SUFFIX) if p.is_file())
    elif root.is_file():
        files = [root]
    else:
        raise BadInputError(root, "no such sheet file or directory")
    return [(str(f), _read_sheet(f)) for f in files]


def _read_sheet(path: Path) -> dict:
    try:
        text = path.read_text(encoding="utf-8")
        data = loads(text)
    except json.JSONDecodeError as exc:
        raise BadInputError(path, f"not valid JSON: {exc.msg}", exc.lineno) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInputError(path, f"cannot read: {exc}") from None
    if not isinstance(data, dict):
        raise BadInputError(path, f"a replay sheet is a JSON object, not {type(data).__name__}", 1)
    _check_run_counts(path, text, data)
    return data


def _check_run_counts(path: Path, text: str, sheet: dict) -> None:
    """A count the sheet holds (head and base runs and misses) is a whole number >= 0 (issue 18:
    ``-Infinity`` runs were read silently). Absent counts are the decision table's business."""
    runs = sheet.get("runs")
    if not isinstance(runs, Mapping):
        return
    for side in ("head", "base"):
        counts = runs.get(side)
        for key in ("runs", "misses"):
            if isinstance(counts, Mapping) and key in counts:
                problem = count_problem(counts[key])
                if problem:
                    raise BadInputError(path, f"runs.{side}.{key}: {problem}",
                                        line_of_key(text, "runs", side, key) or 1)


def fence(sheet: dict, generation_of: GenerationOf | None) -> dict:
    """A copy of ``sheet`` with its lease fenced (§5): ``lease.state`` becomes ``stale`` when
    ``generation_of(lease.workspace)`` differs from ``lease.generation``, raises (store
    unreachable), or cannot be asked (no workspace or generation recorded). The outcome is
    recorded as text in ``lease["fence"]``. Only a ``fresh`` mapping lease is checked;
    ``generation_of=None`` means no check (the copy is returned unchanged).
    """
    out = copy.deepcopy(sheet)
    lease = out.get("lease")
    if generation_of is None or not isinstance(lease, Mapping) or lease.get("state") != "fresh":
        return out
    verdict = _fence_verdict(lease, generation_of)
    lease["fence"] = verdict
    if not verdict.startswith("current"):
        lease["state"] = "stale"
    return out


def _fence_verdict(lease: Mapping, generation_of: GenerationOf) -> str:
    workspace, recorded = lease.get("workspace"), lease.get("generation")
    if not workspace or not isinstance(recorded, int) or isinstance(recorded, bool):
        return "stale: the sheet records no workspace or generation to check"
    try:
        current = generation_of(workspace)
    except Exception as exc:  # noqa: BLE001 - any store failure fails closed
        return f"stale: lease store unreachable ({type(exc).__name__}: {exc})"
    if current != recorded:
        return f"stale: generation {recorded} superseded by {current}"
    return f"current: generation {recorded}"


@dataclass
class DecisionReport:
    """The decisions over a set of sheets: ``per_sheet`` ``[(path, Decision)]`` in path order
    (one per relation after duplicates are merged) and ``overall`` (the worst, §8)."""

    per_sheet: list[tuple[str, Decision]] = field(default_factory=list)
    overall: Decision = field(default_factory=lambda: Decision("pass", "no_missed_relations"))

    @property
    def exit_code(self) -> int:
        """§8 exit code of the overall decision."""
        return self.overall.exit_code

    def to_json(self) -> dict:
        """The ``decision.json`` content: overall decision/reason/row/exit_code and relations."""
        o = self.overall
        return {"relconsole_decision": 1,
                "decision": o.decision, "reason": o.reason, "row": o.row,
                "exit_code": self.exit_code, "relation_id": o.relation_id,
                "relations": [_relation_json(path, d) for path, d in self.per_sheet]}


def _relation_json(path: str, d: Decision) -> dict:
    return {"sheet": path, "test_id": d.relation_id, "decision": d.decision, "reason": d.reason,
            "row": d.row, "detail": d.detail, "fields": dict(d.fields)}


class Fences:
    """The lease stores sheets name, each opened once, to ask its current generation (§5).

    ``override`` (``--lease-url``) serves every sheet. Otherwise a sheet is checked in the
    store its ``lease.store`` names: ``$RELCONSOLE_LEASE_URL`` when that is the same store
    (its password is not in the sheet), else the recorded URL itself. A SQLite store must
    already exist (decide never creates one: SQLite stores are local to the machine that
    replayed). A sheet naming no store, or a store that cannot be opened or asked, fences
    stale: evidence that cannot be checked fails closed.
    """

    def __init__(self, override: str | None = None, env: str | None = None):
        self.override, self.env = override, env
        self.opened: dict[str, object] = {}

    def for_lease(self, lease: Mapping) -> GenerationOf:
        """``generation_of(workspace)`` against this lease's store (it raises when it cannot answer)."""
        url = self.override or self._recorded(lease.get("store"))
        if url is None and "***" in str(lease.get("store")):
            return _unanswerable(f"the sheet's store {lease.get('store')} has its password redacted: pass "
                                 "--lease-url or set RELCONSOLE_LEASE_URL to that store")
        if url is None:
            return _unanswerable("the sheet names no lease store, so its generation cannot be checked")
        if url not in self.opened:
            self.opened[url] = self._open(url)
        store = self.opened[url]
        return store.generation if not isinstance(store, Exception) else _unanswerable(str(store))

    def _recorded(self, recorded) -> str | None:
        if not isinstance(recorded, str) or not recorded:
            return None
        if self.env and wsleasestore.redact(self.env) == recorded:
            return self.env
        if "***" in recorded:
            return None if not self.env else recorded
        return recorded

    @staticmethod
    def _open(url: str):
        if "***" in url:
            return RelconsoleError(f"the store {url} has its password redacted: pass --lease-url or set "
                                   "RELCONSOLE_LEASE_URL to that store")
        path = wslease.sqlite_path(url)
        if path is not None and not path.is_file():
            return RelconsoleError(f"no lease store {path} on this machine (a SQLite store is local: "
                                   "decide where replay ran, or share a Redis store)")
        try:
            return wslease.open_store(url, ".")
        except RelconsoleError as exc:
            return exc

    def close(self) -> None:
        for store in self.opened.values():
            if not isinstance(store, Exception):
                store.close()


def decide_fenced(sheet: dict, fences: Fences) -> Decision:
    """§8 for one sheet after fencing it (§5) in the lease store it names."""
    lease = sheet.get("lease")
    return decide(fence(sheet, fences.for_lease(lease) if isinstance(lease, Mapping) else None))


def _unanswerable(why: str) -> GenerationOf:
    def generation_of(_workspace: str) -> int:
        raise RelconsoleError(why)
    return generation_of


def decide_sheets(path: str | os.PathLike, generation_of: GenerationOf | None = None,
                  fence_store: str | None = None, fences: Fences | None = None) -> DecisionReport:
    """Decide every sheet under ``path`` (§8) after fencing it (§5).

    ``fences`` checks each sheet in the store it names; without it, ``generation_of`` (one
    store) fences the sheets whose ``lease.store`` is ``fence_store`` (every sheet when
    None). Two sheets of one test_id (two shards replayed one relation) keep the worse
    decision, and its detail says so. A directory is checked against the replay
    manifests in it (``check_manifests``): no sheet and no manifest, or a shard or sheet
    missing, is an abort. Raises BadInputError (exit 5) for an unreadable sheet.
    """
    decided = []
    for sheet_path, sheet in load_sheets(path):
        if fences is not None:
            decided.append((sheet_path, decide_fenced(sheet, fences)))
        else:
            check = generation_of if _fenced(sheet, fence_store) else None
            decided.append((sheet_path, decide(fence(sheet, check))))
    per_sheet = _merge_duplicates(decided)
    problem = check_manifests(Path(path), {d.relation_id for _, d in per_sheet}) if Path(path).is_dir() else None
    if problem is not None:
        return DecisionReport(per_sheet, problem)
    overall = worst([d for _, d in per_sheet]) if per_sheet else Decision("pass", "no_missed_relations")
    return DecisionReport(per_sheet, overall)


MANIFEST_PATTERN = "replay-shard-*.json"


def manifest_name(index: int, total: int) -> str:
    """The file a replay of shard ``index``/``total`` writes beside its sheets."""
    return f"replay-shard-{index}-of-{total}.json"


def check_manifests(directory: Path, decided: set[str | None]) -> Decision | None:
    """An abort when the replay evidence under ``directory`` is incomplete, else None.

    Every replay writes a manifest naming its shard and the relations it wrote sheets
    for, so ``decide`` can tell "nothing missed" from "the artifacts never arrived": no
    manifest at all, a shard of 1..N without one, manifests of different commits, or a
    listed sheet that is absent all abort (reason ``incomplete_evidence``).
    """
    manifests = [(file, _read_manifest(file)) for file in sorted(directory.rglob(MANIFEST_PATTERN))]
    if not manifests:
        return _incomplete(f"no replay manifest ({MANIFEST_PATTERN}) under {directory}: "
                           "did replay run, and were its artifacts collected?")
    totals = {data.get("shard_total") for _, data in manifests}
    heads = {data.get("head") for _, data in manifests}
    if len(totals) != 1 or len(heads) != 1:
        return _incomplete(f"manifests under {directory} come from different replays "
                           f"(shard totals {sorted(map(str, totals))}, heads {sorted(map(str, heads))})")
    total = totals.pop()
    seen = {data.get("shard_index") for _, data in manifests}
    missing = [k for k in range(1, int(total or 1) + 1) if k not in seen]
    if missing:
        return _incomplete(f"no manifest for shard(s) {', '.join(f'{k}/{total}' for k in missing)} "
                           f"under {directory}: their sheets are missing")
    listed = {rid for _, data in manifests for rid in data["sheets"]}
    absent = sorted(listed - decided)
    if absent:
        return _incomplete(f"the manifests list sheets that are absent: {', '.join(absent)}")
    stray = sorted(str(rid) for rid in decided - listed)
    if stray:
        return _incomplete(f"sheets no replay manifest lists (left from another replay?): {', '.join(stray)}")
    return None


def _read_manifest(path: Path) -> dict:
    """A replay manifest; BadInputError (exit 5) when its fields are not what replay writes."""
    data = _read_sheet(path)
    index, total, sheets = data.get("shard_index"), data.get("shard_total"), data.get("sheets")
    if not (isinstance(index, int) and isinstance(total, int) and 1 <= index <= total):
        raise BadInputError(path, "a replay manifest needs shard_index and shard_total with 1 <= index <= total", 1)
    if not isinstance(sheets, list) or not all(isinstance(x, str) for x in sheets):
        raise BadInputError(path, "a replay manifest's sheets is a list of relation ids", 1)
    return data


def _incomplete(why: str) -> Decision:
    return Decision("abort", "incomplete_evidence", None, None, why)


def _fenced(sheet: dict, fence_store: str | None) -> bool:
    if fence_store is None:
        return True
    lease = sheet.get("lease")
    return isinstance(lease, Mapping) and lease.get("store") == fence_store


def _merge_duplicates(decided: list[tuple[str, Decision]]) -> list[tuple[str, Decision]]:
    """One entry per test_id (sheets without one stay separate): the worst, noting the others."""
    groups: dict[str, list[tuple[str, Decision]]] = {}
    for index, (path, d) in enumerate(decided):
        groups.setdefault(d.relation_id or f"\0{index}", []).append((path, d))
    merged = []
    for entries in groups.values():
        path, kept = max(entries, key=lambda e: ORDER.index(e[1].decision))
        if len(entries) > 1:
            others = "; ".join(f"{p}: {d.decision} ({d.reason})" for p, d in entries if p != path)
            note = f"{len(entries)} sheets for this relation, the worst kept; also {others}"
            kept = Decision(kept.decision, kept.reason, kept.row, kept.relation_id,
                            f"{kept.detail}; {note}" if kept.detail else note, kept.fields)
        merged.append((path, kept))
    return sorted(merged, key=lambda e: e[0])


def write_json(path: str | os.PathLike, data: dict) -> Path:
    """Write ``data`` as indented JSON at ``path`` atomically: a temporary file in the same
    directory (created if needed), then ``os.replace`` (``atomicfile.write_atomic``). Returns the path."""
    return write_atomic(path, json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")


def write_decision(report: DecisionReport, directory: str | os.PathLike) -> Path:
    """Write ``decision.json`` in ``directory`` atomically (``write_json``). Returns its path."""
    return write_json(Path(directory) / DECISION_FILE, report.to_json())
