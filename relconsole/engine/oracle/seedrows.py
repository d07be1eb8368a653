"""Drafted seed rows (SPEC §10): input rows a model drafts for a relation, judged one row at a time.

They land as ``oracle/quarantine/<relation-id>.seeds.jsonl``, one JSON value a line.
Everything here is untrusted: a row is refused, with its reasons, when it is not one JSON
value, holds a key twice, does not fit the relation's input schema, or duplicates a seed.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from relconsole.engine.oracle import jsonnumbers
from relconsole.engine.oracle.catalog import Catalog, check_row
from relconsole.engine.oracle.textedit import jsonl_lines

SEEDS_SUFFIX = ".seeds.jsonl"


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
        """``PATH:LINE``: where the row is now (line numbers move after every accept or delete)."""
        return f"{self.path}:{self.line}"

    @property
    def id(self) -> str:
        """A stable id: ``row-`` and 12 hex digits of the sha256 of its relation and its
        canonical JSON (sorted keys; the raw text when it is not JSON). The same row keeps it
        whatever line it moves to, and no other row ever takes it."""
        try:
            canonical = json.dumps(self.value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        except (TypeError, ValueError):
            canonical = self.text
        text = f"{self.relation_id}\0{canonical}"
        try:
            data = text.encode("utf-8", "surrogateescape")  # a file's undecodable bytes, as read
        except UnicodeEncodeError:  # a lone surrogate from a JSON escape (a rejected row)
            data = text.encode("utf-8", "surrogatepass")
        digest = hashlib.sha256(data)
        return "row-" + digest.hexdigest()[:12]

    def named_by(self, token: str) -> bool:
        """Whether ``token`` (a stable id, or ``PATH:LINE`` as it is now) names this row."""
        return token in (self.id, self.key)


class SeedLineError(ValueError):
    """A JSON-lines line that is not one row: not JSON, or an object with a key twice.
    ``str()`` is the reason as a rejected row shows it."""


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict:
    seen: set[str] = set()
    for key, _value in pairs:
        if key in seen:
            raise SeedLineError(f"duplicate key {key!r}: the row is ambiguous (JSON keeps only one value)")
        seen.add(key)
    return dict(pairs)


def parse_seed_line(line: str) -> Any:
    """One JSON-lines line as its JSON value, refusing an object (at any depth) that holds
    a key twice: ``{"percent": 10, "percent": 200}`` would otherwise read as 200 while a
    reviewer may read 10. A string holding a lone surrogate (``"\\ud800"``: JSON allows the
    escape, Unicode has no such character, and no file, terminal or subject can carry it) is
    refused too. Raises SeedLineError naming the key, or why the line is not JSON."""
    try:
        value = jsonnumbers.loads(line, object_pairs_hook=_no_duplicate_keys)
    except json.JSONDecodeError as exc:
        raise SeedLineError(jsonnumbers.json_line_problem(exc)) from None
    if _has_lone_surrogate(value):
        raise SeedLineError("holds a lone surrogate escape (\\ud800-\\udfff): not Unicode text")
    return value


def _has_lone_surrogate(value: Any) -> bool:
    if isinstance(value, str):
        return any("\ud800" <= char <= "\udfff" for char in value)
    if isinstance(value, dict):
        return any(_has_lone_surrogate(k) or _has_lone_surrogate(v) for k, v in value.items())
    if isinstance(value, list):
        return any(map(_has_lone_surrogate, value))
    return False


def relation_of_seed_file(path: str) -> str:
    """``oracle/quarantine/rollout.monotonic.seeds.jsonl`` -> ``rollout.monotonic``."""
    return path.rsplit("/", 1)[-1].removesuffix(SEEDS_SUFFIX)


def json_kind(value: Any) -> str:
    """The JSON type of a parsed value: object, array, string, number, boolean or null."""
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "boolean"
    return "null" if value is None else "number"


def shape_problem(value: Any, seeds: list[Any]) -> str | None:
    """For a relation that declares no input schema, whose seeds may be plain JSON values:
    why ``value`` does not have the shape of one of its ``seeds`` (the JSON type, and for an
    object its set of keys), or None. The seeds file is the only description of its rows."""
    if not seeds:
        return "the relation declares no input schema and has no seed to take a row's shape from"
    kinds = sorted({json_kind(s) for s in seeds})
    kind = json_kind(value)
    if kind not in kinds:
        return (f"a JSON {kind}, where the relation's seeds are each a JSON {' or '.join(kinds)} (it "
                "declares no input schema: a drafted row has the shape of its seeds)")
    if kind == "object":
        keys = {tuple(sorted(s)) for s in seeds if isinstance(s, dict)}
        if tuple(sorted(value)) not in keys:
            shown = "; ".join(", ".join(k) or "(none)" for k in sorted(keys)[:3])
            return f"keys {', '.join(sorted(value)) or '(none)'} are those of no seed (seeds have: {shown})"
    return None


def validate_seed_rows(path: str, text: str, catalog: Catalog,
                       existing: list[Any], shapes: list[Any] | None = None) -> list[SeedRow]:
    """Judge each drafted seed row of one quarantine ``.seeds.jsonl`` file (§10).

    ``existing`` holds the relation's current seed values (for the duplicate rule). A
    relation with an input schema takes rows that fit it; one without takes rows of the
    shape of its seeds (``shape_problem`` against ``shapes``, default ``existing``: the
    relation's seeds file, whose rows may be plain values such as strings).
    Blank lines are skipped; a line that is not one JSON value, or holds an object with a
    key twice (``parse_seed_line``), is a rejected row.
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
            value = parse_seed_line(line)
        except SeedLineError as exc:
            rows.append(SeedRow(path, relation_id, number, line, None, [str(exc)]))
            continue
        reasons = []
        if relation is None:
            reasons.append(f"no relation {relation_id!r} in the catalog")
        elif relation.seeds_path is None:
            reasons.append(f"{relation_id} reads a lease, not seeds")
        elif not specs:
            reasons.extend(check_row(value, None))  # answer-like keys
            shape = shape_problem(value, existing if shapes is None else shapes)
            reasons.extend([shape] if shape else [])
        else:
            reasons.extend(check_row(value, specs))
        canon = json.dumps(value, sort_keys=True)
        if canon in seen:
            reasons.append("duplicate of an existing seed")
        seen.add(canon)
        rows.append(SeedRow(path, relation_id, number, line, value, reasons))
    return rows
