"""Counted flake freezes (SPEC §6): rows an operator commits, never a skip mark.

The freeze file is a JSON list of rows. A row is ``live`` until its expiry day has
passed, then ``expired`` (ignored: the relation is mandatory again). Rows that break
the relation's freeze policy are ``invalid`` and ignored too, with the reason shown.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass

from relconsole.engine.oracle.catalog import Catalog
from relconsole.engine.decision import Decision
from relconsole.engine.errors import BadInputError
from relconsole.engine.oracle.jsonnumbers import loads
from relconsole.engine.oracle.schemacheck import first_error, shipped_part
from relconsole.engine.oracle.yamlload import load_yaml_text
from relconsole.engine.literal import counted

LIVE, EXPIRED, INVALID = "live", "expired", "invalid"

ROW_SCHEMA = shipped_part("freeze", "row")  # one row of relconsole/schemas/freeze.schema.json


@dataclass
class FreezeRow:
    """One freeze row with its state on the review's day and the reason for it."""

    raw: dict
    line: int | None
    state: str
    why: str

    @property
    def relation_id(self) -> str:
        return self.raw["relation_id"]

    @property
    def expires(self) -> dt.date:
        return dt.date.fromisoformat(self.raw["expires"])

    @property
    def reruns(self) -> int:
        return self.raw["reruns"]

    @property
    def pass_needed(self) -> int:
        return self.raw["pass_needed"]


def parse_rows(text: str | None, source: str) -> list[tuple[dict, int | None]]:
    """The rows of a freeze file with the line each starts on. Absent or blank: no rows.

    Raises BadInputError (file, line of the offending key where known; rows counted
    from 1) for malformed JSON, a non-list top level, a row with a ``skip`` key, an
    empty reason, ``pass_needed > reruns``, a wrong type or an impossible date.
    """
    return json_rows(text, source, _row_problem, "the freeze file")


def json_rows(text: str | None, source: str, row_problem, what: str) -> list[tuple[dict, int | None]]:
    """The rows of a JSON list file (the freeze file, the acks file) with the line each
    starts on; absent or blank: none. ``row_problem(row)`` gives (why it is invalid, the key
    to blame) or (None, None). Raises BadInputError (file, line) for malformed JSON, a top
    level that is not a list, or a row ``row_problem`` refuses."""
    if text is None or not text.strip():
        return []
    try:
        rows = loads(text)
    except json.JSONDecodeError as exc:
        raise BadInputError(source, f"invalid JSON: {exc.msg}", exc.lineno) from None
    if not isinstance(rows, list):
        raise BadInputError(source, f"{what} is a JSON list of rows", 1)
    line_of = row_line_finder(text, source)
    out = []
    for index, row in enumerate(rows):
        problem, key = row_problem(row)
        if problem:
            raise BadInputError(source, f"row {index + 1}: {problem}", line_of(index, key))
        out.append((row, line_of(index, None)))
    return out


def _row_problem(row) -> tuple[str | None, str | None]:
    """(why the row is invalid, the key to blame) or (None, None)."""
    if isinstance(row, dict) and "skip" in row:
        return "a freeze is counted reruns, never a skip", "skip"
    if isinstance(row, dict) and isinstance(row.get("reason"), str) and not row["reason"].strip():
        return "a freeze needs a reason", "reason"
    problem = first_error(row, ROW_SCHEMA)
    if problem:
        key = problem.split(":", 1)[0]
        return problem, key if isinstance(row, dict) and key in row else None
    if row["pass_needed"] > row["reruns"]:
        return f"pass_needed {row['pass_needed']} > reruns {row['reruns']}", "pass_needed"
    try:
        dt.date.fromisoformat(row["expires"])
    except ValueError:
        return f"expires {row['expires']!r} is not a date", "expires"
    return None, None


def row_line_finder(text: str, source: str):
    """A function (row index, key or None) -> 1-based line in the freeze file ``text``,
    from the YAML view of the JSON text, else a bracket scan; None when unknown."""
    try:
        loaded = load_yaml_text(text, source)
    except BadInputError:
        loaded = None
    starts = _row_lines(text)

    def line_of(index: int, key: str | None) -> int | None:
        if loaded is not None:
            return loaded.line_of((index, key) if key else (index,))
        return starts[index] if index < len(starts) else None
    return line_of


def _row_lines(text: str) -> list[int]:
    """1-based lines where each top-level row object starts (a small bracket scanner)."""
    lines, depth, line, in_string, escaped = [], 0, 1, False, False
    for char in text:
        if char == "\n":
            line += 1
        if in_string:  # the character after a backslash is escaped, whatever it is
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
            continue
        if char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth == 2 and char == "{":
                lines.append(line)
        elif char in "]}":
            depth -= 1
    return lines


def assess(rows: list[tuple[dict, int | None]], catalog: Catalog, today: dt.date) -> list[FreezeRow]:
    """Each row's state on ``today`` under the catalog's freeze policies (§6)."""
    out = []
    for raw, line in rows:
        relation = catalog.get(raw["relation_id"])
        expires = dt.date.fromisoformat(raw["expires"])
        if relation is None:
            out.append(FreezeRow(raw, line, INVALID, f"no relation {raw['relation_id']!r} in the catalog"))
        elif not relation.freeze.allowed:
            out.append(FreezeRow(raw, line, INVALID, f"{relation.id} does not allow freezing"))
        elif raw["reruns"] < relation.freeze.min_reruns:  # a hand-written row holds to the policy too
            out.append(FreezeRow(raw, line, INVALID, f"reruns {raw['reruns']} below the policy's min_reruns "
                                                     f"{relation.freeze.min_reruns}"))
        elif expires < today:
            out.append(FreezeRow(raw, line, EXPIRED, f"freeze expired on {expires.isoformat()}: mandatory again"))
        elif (expires - today).days > relation.freeze.max_days:
            out.append(FreezeRow(raw, line, INVALID,
                                 f"expires {expires.isoformat()}, beyond max_days {relation.freeze.max_days}"))
        else:
            out.append(FreezeRow(raw, line, LIVE, f"frozen until {expires.isoformat()}"))
    return out


def for_relation(rows: list[FreezeRow], relation_id: str) -> FreezeRow | None:
    """The row that governs ``relation_id``: a live one if any, else the latest other."""
    mine = [r for r in rows if r.relation_id == relation_id]
    live = [r for r in mine if r.state == LIVE]
    pool = live or mine
    return max(pool, key=lambda r: r.raw["expires"]) if pool else None


def check_new_row(row: dict, catalog: Catalog, today: dt.date) -> str | None:
    """Why a freeze row the console is about to commit breaks §6, or None when it is fine."""
    problem = _row_problem(row)[0]
    if problem:
        return problem
    relation = catalog.get(row["relation_id"])
    if relation is None:
        return f"no relation {row['relation_id']!r} in the catalog"
    if not relation.freeze.allowed:
        return f"{relation.id} does not allow freezing"
    if row["pass_needed"] > row["reruns"]:
        return f"pass_needed {row['pass_needed']} > reruns {row['reruns']}"
    if row["reruns"] < relation.freeze.min_reruns:
        return f"reruns {row['reruns']} below the policy's min_reruns {relation.freeze.min_reruns}"
    expires = dt.date.fromisoformat(row["expires"])
    if expires <= today:
        return f"expiry {expires.isoformat()} is not after today"
    if (expires - today).days > relation.freeze.max_days:
        return f"expiry {expires.isoformat()} beyond the policy's {counted(relation.freeze.max_days, 'day')}"
    return None


def counted_verdict(relation_id: str, first_held: bool, first_miss: str, reruns_held: list[bool],
                    freeze: FreezeRow | None) -> tuple[str, Decision, str]:
    """(outcome, decision, summary) of the §6 counted freeze protocol, given the runs made.

    The same words as ``runner.run_relation`` gives a catalog relation, for a relation
    evaluated elsewhere (a hand-written ``@pytest.mark.relation`` test): a pass is a pass;
    a miss without a LIVE freeze is ``reject``/``property_fail`` (row 3), the freeze's
    ``why`` saying when an expired one expired; under a live freeze ``reruns_held`` are
    the reruns and at least ``pass_needed`` must hold ("frozen 4/5, needed 4: PASS" ->
    ``freeze``/``frozen_pass``, row 8). ``outcome`` is ``held`` or ``missed``.
    """
    if first_held:
        return "held", Decision("pass", "held", None, relation_id), "held"
    if freeze is None or freeze.state != LIVE:
        detail = f"; {freeze.why}" if freeze is not None else ""
        return ("missed", Decision("reject", "property_fail", 3, relation_id,
                                   "missed with no live freeze" + detail),
                f"missed: {first_miss}{detail}")
    passes = sum(1 for held in reruns_held if held)
    word = "PASS" if passes >= freeze.pass_needed else "FAIL"
    summary = f"frozen {passes}/{len(reruns_held)}, needed {freeze.pass_needed}: {word}"
    if word == "PASS":
        return "held", Decision("freeze", "frozen_pass", 8, relation_id, summary), summary
    reason = "property_fail" if passes == 0 else "freeze_fail"
    return ("missed", Decision("reject", reason, 3 if passes == 0 else None, relation_id, summary),
            summary)
