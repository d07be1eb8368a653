"""Quarantine (SPEC §10): model-drafted candidate relations and drafted seed rows.

Everything here is untrusted. Validation fails closed and says why for each rule;
nothing is executed. A candidate that passes every rule can be accepted, which writes
it into the catalog in catalog form; drafted seed rows are judged one row at a time.
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable

from relconsole.engine.catalog import (KIND_PARAMS, RELATION_SCHEMA, Catalog, _relation,
                                       answer_like, check_row)
from relconsole.engine.errors import BadInputError
from relconsole.engine.schemacheck import first_error
from relconsole.engine.textedit import jsonl_lines
from relconsole.engine.yamlload import Loaded, load_yaml_text

TRANSFORM_TO_KIND = {"permute": "permutation", "replay-ingest": "replay_ingest",
                     "split-merge": "split_merge", "monotonic": "monotonic",
                     "roundtrip": "roundtrip"}
SEEDS_SUFFIX = ".seeds.jsonl"
FREEZE_KEYS = {"freeze", "reruns", "pass_needed", "expires", "signature", "lease_id"}
PROVENANCE = ("drafted_by", "drafted_at", "source")
CANDIDATE_FIELDS = {"id", "transform", "compare", "must_not", "subject", "input", "params",
                    "statement", "quantum", "merge", "inverse", "owner", *PROVENANCE}
_SKIP = re.compile(r"\b(skip|skipif|xfail)\b", re.IGNORECASE)
WIDE_QUANTUM = 1e3  # a tolerance this wide makes the predicate true for any real output

# rule names, in the order a reviewer reads them
RULES = ("parses", "fields", "no_answers", "no_skip", "no_freeze_fields", "references_input",
         "unique_id", "known_transform", "catalog_form")


@dataclass
class Verdict:
    """One validation rule's outcome for a candidate: ``ok`` and a reason when not ok."""

    rule: str
    ok: bool
    reason: str = ""


@dataclass
class Candidate:
    """A candidate relation file and its verdicts; ``row`` is its catalog form when valid."""

    path: str
    text: str
    raw: Any
    verdicts: list[Verdict] = field(default_factory=list)
    row: dict | None = None
    notes: list[str] = field(default_factory=list)  # warnings that do not block accepting

    @property
    def id(self) -> str:
        if isinstance(self.raw, dict) and isinstance(self.raw.get("id"), str):
            return self.raw["id"]
        return self.path.rsplit("/", 1)[-1].removesuffix(".yaml")

    @property
    def valid(self) -> bool:
        return all(v.ok for v in self.verdicts)

    @property
    def reasons(self) -> list[str]:
        return [v.reason for v in self.verdicts if not v.ok]

    def provenance(self) -> dict[str, str]:
        """drafted_by / drafted_at / source as text (empty when absent)."""
        raw = self.raw if isinstance(self.raw, dict) else {}
        return {k: str(raw.get(k, "")) for k in PROVENANCE}


@dataclass
class SeedRow:
    """One drafted input row: its 1-based ``line`` in ``path`` and why it is rejected."""

    path: str
    relation_id: str
    line: int
    text: str
    value: Any
    reasons: list[str]

    @property
    def valid(self) -> bool:
        return not self.reasons

    @property
    def key(self) -> str:
        return f"{self.path}:{self.line}"


def _walk(value: Any, path: tuple = ()):
    """Yield (path, key, value) for every mapping entry and list item, depth first."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield path + (key,), key, item
            yield from _walk(item, path + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield path + (index,), None, item
            yield from _walk(item, path + (index,))


def _dotted(path: tuple) -> str:
    return ".".join(str(p) for p in path)


def validate_candidate(path: str, text: str, catalog: Catalog,
                       input_fields: Callable[[dict], list[str] | None]) -> Candidate:
    """Judge one candidate file (§10). Never raises for bad content: verdicts say why.

    ``input_fields(input_mapping)`` returns the field names of the candidate's input
    (a lease corpus header, a seeds schema) or None when they cannot be known.
    """
    try:
        raw = load_yaml_text(text, path).data
    except BadInputError as exc:
        return Candidate(path, text, None, [Verdict("parses", False, exc.one_line())])
    candidate = Candidate(path, text, raw, [Verdict("parses", True)])
    if not isinstance(raw, dict):
        candidate.verdicts.append(Verdict("fields", False, f"{path}:1: a candidate is a YAML mapping, "
                                                            f"not {type(raw).__name__}"))
        return candidate
    checks = [_fields(raw), _answers(raw), _skips(raw), _freeze_fields(raw),
              _references(raw, input_fields), _unique(raw, catalog), _transform(raw)]
    candidate.verdicts.extend(checks)
    form = _catalog_form(raw)
    candidate.verdicts.append(form[0])
    if candidate.valid:
        candidate.row = form[1]
    return candidate


def _fields(raw: dict) -> Verdict:
    unknown = sorted(str(k) for k in raw if k not in CANDIDATE_FIELDS and k not in FREEZE_KEYS)
    missing = [k for k in ("id", "transform", "compare", "subject", "input", "statement",
                           "must_not", *PROVENANCE) if k not in raw]
    if unknown:
        return Verdict("fields", False, f"unknown fields: {', '.join(unknown)}")
    if missing:
        return Verdict("fields", False, f"missing fields: {', '.join(missing)}")
    return Verdict("fields", True)


def _answers(raw: dict) -> Verdict:
    body = {k: v for k, v in raw.items() if k != "must_not"}
    for path, key, value in _walk(body):
        if key is not None and answer_like(str(key)):
            return Verdict("no_answers", False, f"{_dotted(path)}: carries an expected value")
    kind = TRANSFORM_TO_KIND.get(str(raw.get("transform")))
    allowed = KIND_PARAMS.get(kind, set()) | {"field"}
    params = raw.get("params") if isinstance(raw.get("params"), dict) else {}
    for key, value in params.items():
        numeric = [v for _p, _k, v in _walk({key: value})
                   if isinstance(v, (int, float)) and not isinstance(v, bool)]
        if key not in allowed and key not in FREEZE_KEYS and numeric:
            return Verdict("no_answers", False,
                           f"params.{key}: the number {numeric[0]!r} stands as an answer")
    return Verdict("no_answers", True)


def _skips(raw: dict) -> Verdict:
    for path, key, value in _walk(raw):
        for text in (key, value):
            if isinstance(text, str) and _SKIP.search(text):
                return Verdict("no_skip", False, f"{_dotted(path)}: skip/xfail text is not allowed")
    return Verdict("no_skip", True)


def _freeze_fields(raw: dict) -> Verdict:
    found = [_dotted(path) for path, key, _value in _walk(raw) if key in FREEZE_KEYS]
    if found:
        return Verdict("no_freeze_fields", False,
                       f"freeze fields {', '.join(found)}: freezes belong to the operator's freeze file")
    return Verdict("no_freeze_fields", True)


def _references(raw: dict, input_fields: Callable[[dict], list[str] | None]) -> Verdict:
    inp = raw.get("input")
    names = input_fields(inp) if isinstance(inp, dict) else None
    if not names:
        return Verdict("references_input", False, "cannot tell the input's fields (no schema, no lease)")
    body = " ".join(str(x) for x in _strings({k: raw.get(k) for k in ("params", "statement")}))
    used = [n for n in names if re.search(rf"(?<![\w]){re.escape(n)}(?![\w])", body)]
    if not used:
        return Verdict("references_input", False,
                       f"vacuous: references no field of its input ({', '.join(names)})")
    if raw.get("compare") == "tolerance" and _number(raw.get("quantum")) >= WIDE_QUANTUM:
        return Verdict("references_input", False,
                       f"always true: tolerance {raw['quantum']} admits any output")
    return Verdict("references_input", True, f"uses {', '.join(used)}")


def _number(value: Any) -> float:
    """``value`` as a float (YAML 1.1 reads ``1e6`` as a string), or 0.0 when it is none."""
    if isinstance(value, bool):
        return 0.0
    try:
        return float(value)
    except (TypeError, ValueError):
        return 0.0


def _strings(value: Any):
    if isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)
    elif value is not None:
        yield value


def _unique(raw: dict, catalog: Catalog) -> Verdict:
    rid = raw.get("id")
    if isinstance(rid, str) and catalog.get(rid) is not None:
        return Verdict("unique_id", False, f"id {rid!r} collides with a catalog relation")
    return Verdict("unique_id", True)


def _transform(raw: dict) -> Verdict:
    transform = raw.get("transform")
    if transform == "other":
        return Verdict("known_transform", False, "transform 'other' cannot be accepted without an edit")
    if transform not in TRANSFORM_TO_KIND:
        return Verdict("known_transform", False, f"unknown transform {transform!r}")
    return Verdict("known_transform", True)


def _catalog_form(raw: dict) -> tuple[Verdict, dict | None]:
    """The relation row the candidate becomes on accept, checked like a catalog row."""
    kind = TRANSFORM_TO_KIND.get(str(raw.get("transform")))
    if kind is None:
        return Verdict("catalog_form", False, "no catalog kind for this transform"), None
    row: dict[str, Any] = {"id": raw.get("id"), "kind": kind}
    for key in ("subject", "merge", "inverse", "input", "compare", "quantum", "params", "owner",
                "statement"):
        if key in raw:
            row[key] = raw[key]
    problem = first_error(row, RELATION_SCHEMA)
    if problem:
        return Verdict("catalog_form", False, f"as a catalog row: {problem}"), None
    unknown = set((row.get("params") or {})) - KIND_PARAMS[kind]
    if unknown:
        return Verdict("catalog_form", False,
                       f"params {', '.join(sorted(unknown))} do not apply to {kind}"), None
    try:  # the catalog's own rules (tolerance needs a quantum, roundtrip needs inverse...)
        _relation(copy.deepcopy(row), "candidate", None, Loaded(row), 0)
    except BadInputError as exc:
        return Verdict("catalog_form", False, f"as a catalog row: {exc.message}"), None
    return Verdict("catalog_form", True), row


def relation_of_seed_file(path: str) -> str:
    """``oracle/quarantine/rollout.monotonic.seeds.jsonl`` -> ``rollout.monotonic``."""
    return path.rsplit("/", 1)[-1].removesuffix(SEEDS_SUFFIX)


def validate_seed_rows(path: str, text: str, catalog: Catalog,
                       existing: list[Any]) -> list[SeedRow]:
    """Judge each drafted seed row of one quarantine ``.seeds.jsonl`` file (§10).

    ``existing`` holds the relation's current seed values (for the duplicate rule).
    Blank lines are skipped; a line that is not JSON is a rejected row.
    """
    relation_id = relation_of_seed_file(path)
    relation = catalog.get(relation_id)
    specs = relation.input.get("schema") if relation else None
    seen = {json.dumps(v, sort_keys=True) for v in existing}
    rows = []
    for number, line in enumerate(jsonl_lines(text), 1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            rows.append(SeedRow(path, relation_id, number, line, None, [f"not JSON: {exc.msg}"]))
            continue
        reasons = []
        if relation is None:
            reasons.append(f"no relation {relation_id!r} in the catalog")
        elif relation.seeds_path is None:
            reasons.append(f"{relation_id} reads a lease, not seeds")
        elif not specs:
            reasons.append(f"{relation_id} declares no input schema to check rows against")
        else:
            reasons.extend(check_row(value, specs))
        canon = json.dumps(value, sort_keys=True)
        if canon in seen:
            reasons.append("duplicate of an existing seed")
        seen.add(canon)
        rows.append(SeedRow(path, relation_id, number, line, value, reasons))
    return rows
