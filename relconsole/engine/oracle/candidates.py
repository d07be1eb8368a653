"""Quarantine (SPEC §10): what a model-drafted candidate relation is, and what judging it says.

Everything here is untrusted. Validation fails closed and says why for each rule;
nothing is executed. A candidate that passes every rule can be accepted, which writes
it into the catalog in catalog form.

A candidate is judged by the rules in ``RULES``, in the order a reviewer reads them:
first the file (its size, its syntax, one document, no aliases: ``candidatefile``), then
its content (``candidaterules``, ``candidateids``). ``candidatecheck.validate_candidate``
runs them; ``Candidate.verdicts`` always holds one verdict per rule in that order; a rule
that could not run because an earlier one failed (nothing to read after a syntax error) is
"not checked" (``checked`` false), which counts as failed: validation fails closed.
Keys are compared the way a reviewer reads them (``skeleton``). Drafted seed rows are
judged one row at a time (``seedrows``).

This module holds the words of the format (fields, transforms, rule names), ``Verdict``,
``Candidate`` and what a candidate's input holds (``InputShape``, ``input_shape``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from relconsole.engine.oracle.catalog import check_row
from relconsole.engine.oracle.schemacheck import shipped

TRANSFORM_TO_KIND = {"permute": "permutation", "replay-ingest": "replay_ingest",
                     "split-merge": "split_merge", "monotonic": "monotonic",
                     "roundtrip": "roundtrip"}
PROVENANCE = ("drafted_by", "drafted_at", "source")
# A candidate file's fields, as relconsole/schemas/candidate.schema.json (the editors' schema) names them.
CANDIDATE_SCHEMA = shipped("candidate")
CANDIDATE_FIELDS = set(CANDIDATE_SCHEMA["properties"])
REQUIRED = tuple(CANDIDATE_SCHEMA["required"])
# rule names, in the order a reviewer reads them
RULES = ("size_limit", "parses", "single_document", "no_aliases",
         "fields", "no_answers", "no_skip", "no_freeze_fields",
         "input_schema", "references_input", "not_always_true", "safe_id", "unique_id",
         "known_transform", "catalog_form")


@dataclass
class Verdict:
    """One validation rule's outcome for a candidate (§10).

    ``rule`` is a name from ``RULES``; ``ok`` is True when the rule holds; ``reason``
    says why not (when ok it may say what was found, e.g. "uses body_mass_g").
    ``checked`` is False when the rule could not run because an earlier rule failed
    (nothing to read after a syntax error); such a verdict is never ok (fail closed)
    and its reason names the rule that stopped it.
    """

    rule: str
    ok: bool
    reason: str = ""
    checked: bool = True


@dataclass
class Candidate:
    """A candidate relation file and its verdicts; ``row`` is its catalog form when valid.

    ``verdicts`` holds one Verdict per rule of ``RULES``, in that order.
    """

    path: str
    text: str
    raw: Any
    verdicts: list[Verdict] = field(default_factory=list)
    row: dict | None = None
    notes: list[str] = field(default_factory=list)  # warnings that do not block accepting

    @property
    def id(self) -> str:
        """The id the file declares, else its file name without ``.yaml``."""
        if isinstance(self.raw, dict) and isinstance(self.raw.get("id"), str):
            return self.raw["id"]
        return self.path.rsplit("/", 1)[-1].removesuffix(".yaml")

    @property
    def valid(self) -> bool:
        """True when every rule was checked and holds."""
        return bool(self.verdicts) and all(v.ok for v in self.verdicts)

    @property
    def reasons(self) -> list[str]:
        """Why the candidate is rejected: the failed rules' reasons ("not checked" left out)."""
        return [v.reason for v in self.verdicts if not v.ok and v.checked]

    def verdict(self, rule: str) -> Verdict | None:
        """The verdict of ``rule`` (a name from ``RULES``), or None when it has none."""
        return next((v for v in self.verdicts if v.rule == rule), None)

    def provenance(self) -> dict[str, str]:
        """drafted_by / drafted_at / source as text (empty when absent)."""
        raw = self.raw if isinstance(self.raw, dict) else {}
        return {k: str(raw.get(k, "")) for k in PROVENANCE}


@dataclass(frozen=True)
class InputShape:
    """What a candidate's input holds, as the review reads it from the oracle (§3, §10).

    ``fields``: the names a predicate may reference (the input schema's keys, a corpus
    header, the union of the keys of object seeds), None when they cannot be known;
    ``plain``: seeds of plain values (strings, numbers, lists): no fields, the subject is
    compared on each whole value; ``problem``: why the candidate's own ``input.schema``
    cannot be trusted (it contradicts the rows or the header it reads, or the seeds file is
    missing), None when it can.
    """

    fields: list[str] | None = None
    plain: bool = False
    problem: str | None = None


def input_shape(inp: dict, rows: list[Any] | None, header: list[str] | None,
                catalog_schema: dict | None = None) -> InputShape:
    """The InputShape of a candidate's ``input`` mapping, from what the oracle holds: the
    seeds file's ``rows`` (parsed JSON values, None when the file is not in the oracle),
    a lease corpus's ``header`` (None when unknown) and ``catalog_schema`` (a catalog
    relation's schema for the same seeds file). A schema the candidate declares itself is
    checked against every row (``check_row``: keys, types, bounds; keys declared
    ``optional`` may be missing) or against the header, never trusted (§10)."""
    schema = inp.get("schema") if isinstance(inp.get("schema"), dict) and inp.get("schema") else None
    if inp.get("lease"):
        if header is None or schema is None:
            return InputShape(list(schema) if schema else header)
        absent = [k for k in schema if k not in header]  # optional or not: every corpus row has the header's keys
        problem = (f"input.schema names {', '.join(map(repr, absent))}, which the corpus header does not have "
                   f"({', '.join(header)})") if absent else None
        return InputShape(list(schema), problem=problem)
    seeds = inp.get("seeds")
    if not isinstance(seeds, str):
        return InputShape(list(schema) if schema else None)
    if rows is None:
        return InputShape(None, problem=f"the seeds file {seeds} is not in the oracle")
    if not rows:
        return InputShape(None, problem=f"the seeds file {seeds} has no rows")
    if schema is not None:
        for number, row in enumerate(rows, 1):
            reasons = check_row(row, schema)
            if reasons:
                return InputShape(list(schema), problem=f"input.schema does not fit {seeds} row {number}: {reasons[0]}")
        ghosts = [k for k in schema if not any(isinstance(row, dict) and k in row for row in rows)]
        if ghosts:  # an optional field no row has: raising or comparing it changes nothing
            return InputShape(list(schema), problem=f"input.schema declares {', '.join(map(repr, ghosts))}, which no "
                                                    f"row of {seeds} has")
        return InputShape(list(schema))
    if catalog_schema:
        return InputShape(list(catalog_schema))
    keys = list(dict.fromkeys(k for row in rows if isinstance(row, dict) for k in row if isinstance(k, str)))
    if keys:
        return InputShape(keys)
    return InputShape(None, plain=bool(rows))
