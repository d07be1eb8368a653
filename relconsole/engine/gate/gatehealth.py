"""Gate health: the history of §8 decisions and what it says about the gate.

Every ``relconsole decide`` appends one JSON line per relation to
``<git dir>/relconsole/decisions.jsonl``: ``{"at", "relation_id", "row", "decision",
"reason"}`` (``at`` is UTC ISO 8601). ``stats`` counts the last days per table row and per
decision and warns when the pattern means the gate cannot work: only ``freeze`` ever fires
(rows 1-7 never do: the gate is broken or everything is flaky), or many decisions and never
an ``abort`` (leases may never be checked).
"""

from __future__ import annotations

import datetime as dt
import json
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from relconsole.engine.decision import ORDER, ROWS, Decision
from relconsole.engine.literal import counted

HISTORY = ("relconsole", "decisions.jsonl")
ONLY_FREEZE_MIN_DAYS = 2  # distinct days with decisions before "only freeze fires" is a pattern
NEVER_ABORT_MIN = 20  # decisions before "never an abort" is a pattern


def history_path(git_dir: str | os.PathLike) -> Path:
    """``<git dir>/relconsole/decisions.jsonl``."""
    return Path(git_dir).joinpath(*HISTORY)


def _utc(now: dt.datetime | None) -> dt.datetime:
    now = now or dt.datetime.now(dt.UTC)
    return now if now.tzinfo else now.replace(tzinfo=dt.UTC)


def append(git_dir: str | os.PathLike, decisions: list[Decision], now: dt.datetime | None = None) -> bool:
    """Append one line per decision to the history; True when every line was written.

    Each line is one ``os.write`` on an ``O_APPEND`` descriptor, so concurrent deciders do
    not interleave within a line. Any failure (read-only git dir, full disk) returns False:
    recording history must never fail a decide.
    """
    at = _utc(now).astimezone(dt.UTC).isoformat(timespec="seconds")
    lines = [json.dumps({"at": at, "relation_id": d.relation_id, "row": d.row,
                         "decision": d.decision, "reason": d.reason}) + "\n" for d in decisions]
    try:
        path = history_path(git_dir)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            for line in lines:
                data = line.encode("utf-8")
                if os.write(fd, data) != len(data):
                    return False
        finally:
            os.close(fd)
    except OSError:
        return False
    return True


@dataclass
class GateStats:
    """Counts over the window ``[since, until]``: ``by_row`` (keys "1".."8" and "none"),
    ``by_decision`` (every §8 decision word), ``total``, ``first``/``last`` ISO times of the
    counted decisions (None when none), ``skipped`` bad history lines, ``warnings`` (the gate
    looks broken) and ``notes`` (informational, e.g. no history)."""

    days: int
    since: str
    until: str
    by_row: dict[str, int] = field(default_factory=dict)
    by_decision: dict[str, int] = field(default_factory=dict)
    total: int = 0
    first: str | None = None
    last: str | None = None
    skipped: int = 0
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        """A JSON-ready dict of every field, plus each row's (decision, reason) meaning."""
        rows = {str(n): {"decision": d, "reason": r, "evidence": e} for n, (d, r, e) in ROWS.items()}
        return {"days": self.days, "since": self.since, "until": self.until, "total": self.total,
                "by_row": self.by_row, "by_decision": self.by_decision, "first": self.first,
                "last": self.last, "skipped": self.skipped, "warnings": self.warnings,
                "notes": self.notes, "rows": rows}

    def lines(self) -> list[str]:
        """The stats as plain text lines: the window, each §8 row's count and meaning, then
        the decision words, skipped lines, warnings and notes (``relconsole stats``, console)."""
        span = f" ({self.first} .. {self.last})" if self.first else ""
        lines = [f"gate health: last {counted(self.days, 'day')}, {counted(self.total, 'decision')}{span}"]
        for n, (decision, reason, evidence) in ROWS.items():
            evidence += "; or reject freeze_not_allowed by policy" if n == 8 else ""
            lines.append(f"row {n}  {self.by_row[str(n)]:>5}  {decision:<6}  {reason:<22}  {evidence}")
        lines.append(f"row -  {self.by_row['none']:>5}  (no table row: nothing missed)")
        lines.append("  ".join(f"{word} {count}" for word, count in self.by_decision.items()))
        if self.skipped:
            lines.append(f"skipped {counted(self.skipped, 'unreadable history line')}")
        return lines + [f"warning: {w}" for w in self.warnings] + [f"note: {n}" for n in self.notes]


def _parse(line: str) -> tuple[dt.datetime, dict] | None:
    """A history line as (UTC time, record), or None when it is not one."""
    try:
        record = json.loads(line)
        at = dt.datetime.fromisoformat(record["at"])
    except (ValueError, KeyError, TypeError):
        return None
    if not isinstance(record, dict) or record.get("decision") not in ORDER:
        return None
    row = record.get("row")
    if row is not None and (type(row) is not int or row not in ROWS):
        return None
    return (at if at.tzinfo else at.replace(tzinfo=dt.UTC)), record


def read_history(git_dir: str | os.PathLike | None) -> tuple[list[tuple[dt.datetime, dict]], int, bool]:
    """``(records, skipped, exists)``: every good line of the history in file order, the
    count of bad ones (never fatal) and whether the history file exists (None: no repo)."""
    if git_dir is None:
        return [], 0, False
    try:
        text = history_path(git_dir).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return [], 0, False
    records, skipped = [], 0
    for line in text.splitlines():
        if not line.strip():
            continue
        parsed = _parse(line)
        if parsed is None:
            skipped += 1
        else:
            records.append(parsed)
    return records, skipped, True


def stats(git_dir: str | os.PathLike | None, days: int = 7, now: dt.datetime | None = None) -> GateStats:
    """Gate health over the last ``days`` days up to ``now`` (UTC; default: the clock).

    Counts per §8 row and per decision, warnings when the gate looks broken (module doc),
    and a note (not a warning) when there is no history. ``git_dir`` None: no history.
    """
    until = _utc(now)
    since = until - dt.timedelta(days=days)
    records, skipped, exists = read_history(git_dir)
    window = [(at, r) for at, r in records if since <= at <= until]
    result = GateStats(days, since.isoformat(timespec="seconds"), until.isoformat(timespec="seconds"),
                       skipped=skipped)
    rows = Counter("none" if r.get("row") is None else str(r["row"]) for _, r in window)
    result.by_row = {key: rows.get(key, 0) for key in [*map(str, ROWS), "none"]}
    words = Counter(r["decision"] for _, r in window)
    result.by_decision = {word: words.get(word, 0) for word in ORDER}
    result.total = len(window)
    if window:
        times = sorted(at for at, _ in window)
        result.first, result.last = (t.isoformat(timespec="seconds") for t in (times[0], times[-1]))
    result.warnings = _warnings(window, result)
    if not exists:
        result.notes.append("no decision history yet: nothing has been decided in this repository")
    elif not window:
        result.notes.append(f"no decisions in the last {counted(days, 'day')}")
    return result


def _warnings(window: list[tuple[dt.datetime, dict]], result: GateStats) -> list[str]:
    out = []
    day_count = len({at.date() for at, _ in window})
    if day_count >= ONLY_FREEZE_MIN_DAYS and result.by_decision["freeze"] == result.total:
        out.append(f"only freeze fired ({counted(result.total, 'decision')} over {counted(day_count, 'day')}): rows 1-7 "
                   "never fire, so the gate is broken or every relation is flaky")
    if result.total >= NEVER_ABORT_MIN and result.by_decision["abort"] == 0:
        out.append(f"{counted(result.total, 'decision')} and never an abort: workspace leases may never be "
                   "checked (row 2) and sheets may never lack a field (row 1)")
    return out
