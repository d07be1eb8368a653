"""The catalog of relations and the touched-path owner map (SPEC §3).

A catalog is YAML (JSON loads too) with two keys, ``owners`` and ``relations``.
Loading validates every field's type, rejects unknown fields, checks that every
relation id named in ``owners`` is defined, and keeps the line of every relation so
later errors can point at it.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any

import pathspec

from relconsole.engine.repo.config import check_instant
from relconsole.engine.errors import BadInputError
from relconsole.engine.oracle.schemacheck import first_error, shipped, shipped_part, validate
from relconsole.engine.oracle.yamlload import Loaded, load_yaml_text

ANSWER_KEYS = ("expected", "result", "output", "answer")

# The schemas are the shipped relconsole/schemas/catalog.schema.json (editors read the same file).
CATALOG_SCHEMA = shipped("catalog")
RELATION_SCHEMA = shipped_part("catalog", "relation")
INPUT_SCHEMA = shipped_part("catalog", "input")
_RELATION_FIELDS = CATALOG_SCHEMA["$defs"]["relation"]["properties"]
KINDS = tuple(_RELATION_FIELDS["kind"]["enum"])  # permutation, idempotence, ... bound (§3 table)
COMPARES = tuple(_RELATION_FIELDS["compare"]["enum"])  # exact, canon, tolerance

# Params each kind understands; anything else is a bad input file (§3: not silently ignored).
KIND_PARAMS: dict[str, set[str]] = {
    "permutation": {"shuffles", "seed", "order_free", "scale"},
    "idempotence": {"scale"},
    "replay_ingest": {"scale"},
    "split_merge": {"splits", "seed", "order_free", "scale"},
    "monotonic": {"field", "step", "max", "scale"},
    "roundtrip": {"encoded", "scale"},
    "invariance": {"seed", "scale"},
    "bound": {"equals", "raises", "edge"},
}
MAX_SCALE = 1000  # params.scale: how many copies of a corpus the scaled source input may hold


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _finite(value: Any) -> bool:
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and value not in (float("inf"), float("-inf")) and value == value)


def param_problem(name: str, value: Any) -> str | None:
    """Why ``params.<name>`` has the wrong type for the relation kinds (§3), or None: the same
    rule for a catalog row and a drafted candidate (a ``shuffles: .inf`` crashed a run)."""
    if name in ("shuffles", "seed"):
        return None if _whole(value) else "a whole number"
    if name == "order_free":
        return None if isinstance(value, bool) else "true or false"
    if name == "splits":
        if _whole(value) or isinstance(value, list) and value and all(_finite(v) for v in value):
            return None
        return "a whole number of splits or a list of fractions"
    if name == "field":
        return None if isinstance(value, str) and value.strip() else "the name of an input field"
    if name in ("step", "max"):
        return None if _finite(value) else "a finite number"
    return None
KIND_FIELDS: dict[str, set[str]] = {"split_merge": {"merge"}, "roundtrip": {"inverse"},
                                    "invariance": {"transform"}}
KIND_REQUIRED: dict[str, set[str]] = {"roundtrip": {"inverse"}, "invariance": {"transform"}}


@dataclass(frozen=True)
class FreezePolicy:
    """Whether a relation may be frozen (§6), for at most ``max_days`` days."""

    allowed: bool = False
    max_days: int = 14
    min_reruns: int = 3


@dataclass
class Relation:
    """One catalog relation (§3); ``raw`` is the mapping as written, ``line`` its 1-based line."""

    id: str
    kind: str
    subject: str
    input: dict
    compare: str
    statement: str
    quantum: float | None = None
    params: dict = field(default_factory=dict)
    owner: str | None = None
    freeze: FreezePolicy = field(default_factory=FreezePolicy)
    merge: str | None = None
    inverse: str | None = None
    transform: str | None = None
    clock: str = "frozen"
    raw: dict = field(default_factory=dict)
    line: int | None = None

    @property
    def lease_id(self) -> str | None:
        """The dataset lease this relation reads, or None for a seeds input."""
        return self.input.get("lease")

    @property
    def seeds_path(self) -> str | None:
        """The seeds file this relation reads, or None for a lease input."""
        return self.input.get("seeds")

    def callables(self) -> dict[str, str]:
        """Role -> ``module:attr`` for subject, merge, inverse and transform as set."""
        roles = {"subject": self.subject, "merge": self.merge, "inverse": self.inverse,
                 "transform": self.transform, "canon": self.raw.get("canon")}
        return {k: v for k, v in roles.items() if v}

    def identity(self, callable_sources: dict[str, bytes] | None = None) -> str:
        """sha256 over the id and the semantic definition (§3), as ``sha256:<hex>``.

        ``callable_sources`` maps role -> source bytes of callables kept in the
        protected tree; renaming a test, reordering or reformatting the catalog,
        changing ``statement`` or ``owner`` leaves the identity unchanged.
        """
        semantic = {k: self.raw.get(k) for k in
                    ("id", "kind", "subject", "input", "compare", "quantum", "params",
                     "merge", "inverse", "transform")}
        semantic.update({k: self.raw[k] for k in ("canon", "empty_ok", "nan_ok") if k in self.raw})
        digest = hashlib.sha256(json.dumps(semantic, sort_keys=True, default=str).encode())
        for role in sorted(callable_sources or {}):
            digest.update(role.encode() + b"\0" + hashlib.sha256(callable_sources[role]).digest())
        return "sha256:" + digest.hexdigest()


@dataclass
class Catalog:
    """Relations by id plus the owner map as ordered (pattern, relation ids) pairs."""

    source: str
    relations: dict[str, Relation]
    owners: list[tuple[str, list[str]]]
    loaded: Loaded | None = None

    def get(self, relation_id: str) -> Relation | None:
        """The relation with that id, or None."""
        return self.relations.get(relation_id)

    @functools.cached_property
    def seeds_schemas(self) -> dict[str, dict]:
        """seeds path -> the input schema of the first relation (catalog order) that reads that
        seeds file and declares one; built once (validating 300 candidates looked through
        5,000 relations for each)."""
        found: dict[str, dict] = {}
        for relation in self.relations.values():
            if relation.seeds_path and relation.input.get("schema"):
                found.setdefault(relation.seeds_path, relation.input["schema"])
        return found

    def unowned(self) -> list[Relation]:
        """Relations no owner pattern names, in catalog order: no touched path binds them, so
        they run only with ``run --all``."""
        named = {rid for _, ids in self.owners for rid in ids}
        return [r for r in self.relations.values() if r.id not in named]


def _pattern_problem(pattern: str) -> str | None:
    """Why git would refuse ``pattern`` (a trailing unescaped backslash), or None.

    Only patterns with a backslash or a bracket are compiled here, since nothing else can
    fail: a 10,000-pattern owner map is not compiled twice on every load.
    """
    if "\\" not in pattern and "[" not in pattern:
        return None
    try:
        pathspec.GitIgnoreSpec.from_lines([pattern])
    except ValueError as exc:
        return f"not a valid gitignore pattern ({exc})"
    return None


def load_catalog(text: str, source: str) -> Catalog:
    """Parse and validate catalog text.

    Raises BadInputError (exit 5) naming ``source`` and the line for malformed YAML,
    unknown or mistyped fields, duplicate relation ids, params a kind does not take,
    and owner entries naming undefined relations.
    """
    loaded = load_yaml_text(text, source)
    if loaded.data is None:
        raise BadInputError(source, "empty catalog: expected keys 'owners' and 'relations'", 1)
    validate(loaded, CATALOG_SCHEMA, source)
    relations: dict[str, Relation] = {}
    for index, raw in enumerate(loaded.data["relations"]):
        line = loaded.line_of(("relations", index))
        relation = _relation(raw, source, line, loaded, index)
        if relation.id in relations:
            first = relations[relation.id].line
            raise BadInputError(source, f"duplicate relation id {relation.id!r} (first on line {first})", line)
        relations[relation.id] = relation
    owners = list((loaded.data.get("owners") or {}).items())
    for pattern, ids in owners:
        problem = _pattern_problem(pattern)
        if problem:
            raise BadInputError(source, f"owners[{pattern!r}]: {problem}", loaded.line_of(("owners", pattern)))
        for rid in ids:
            if rid not in relations:
                raise BadInputError(
                    source, f"owners[{pattern!r}] names {rid!r}, which the catalog does not define",
                    loaded.line_of(("owners", pattern)))
    return Catalog(source, relations, owners, loaded)


def _relation(raw: dict, source: str, line: int | None, loaded: Loaded, index: int) -> Relation:
    kind = raw["kind"]
    for name in ("merge", "inverse", "transform"):
        if name in raw and name not in KIND_FIELDS.get(kind, set()):
            raise BadInputError(source, f"relation {raw['id']!r}: field {name!r} does not apply to kind {kind}",
                                loaded.line_of(("relations", index, name)))
    for name in KIND_REQUIRED.get(kind, set()):
        if name not in raw:
            raise BadInputError(source, f"relation {raw['id']!r}: kind {kind} needs field {name!r}", line)
    params = raw.get("params") or {}
    unknown = set(params) - KIND_PARAMS[kind]
    if unknown:
        raise BadInputError(
            source, f"relation {raw['id']!r}: unknown params for {kind}: {', '.join(sorted(unknown))}",
            loaded.line_of(("relations", index, "params")))
    for name, value in params.items():
        problem = param_problem(name, value)
        if problem:
            raise BadInputError(source, f"relation {raw['id']!r}: params.{name}: {value!r} is not {problem}",
                                loaded.line_of(("relations", index, "params", name)))
    scale = params.get("scale")
    if scale is not None and (type(scale) is not int or not 2 <= scale <= MAX_SCALE or "lease" not in raw["input"]):
        raise BadInputError(source, f"relation {raw['id']!r}: params.scale is how many copies of a leased corpus "
                                    f"its second source input holds: a whole number from 2 to {MAX_SCALE}",
                            loaded.line_of(("relations", index, "params")))
    encoded = params.get("encoded")
    if encoded is not None and not (isinstance(encoded, str) and encoded or isinstance(encoded, list) and encoded
                                    and all(isinstance(w, str) and w for w in encoded)):
        raise BadInputError(source, f"relation {raw['id']!r}: params.encoded names what f encodes to "
                                    "(str, bytes, a list of them)", loaded.line_of(("relations", index, "params")))
    if raw["compare"] == "tolerance" and "quantum" not in raw:
        raise BadInputError(source, f"relation {raw['id']!r}: compare tolerance needs a quantum", line)
    quantum = _quantum(raw, source, loaded.line_of(("relations", index, "quantum")))
    if raw.get("clock", "frozen") not in ("frozen", "real"):
        check_instant(raw["clock"], source, f"relation {raw['id']!r}: clock",
                      loaded.line_of(("relations", index, "clock")))
    _check_patterns(raw, source, loaded, index)
    freeze = FreezePolicy(**(raw.get("freeze") or {})) if raw.get("freeze") else FreezePolicy()
    return Relation(
        id=raw["id"], kind=kind, subject=raw["subject"], input=dict(raw["input"]),
        compare=raw["compare"], statement=raw["statement"], quantum=quantum,
        params=dict(params), owner=raw.get("owner"), freeze=freeze, merge=raw.get("merge"),
        inverse=raw.get("inverse"), transform=raw.get("transform"),
        clock=raw.get("clock", "frozen"), raw=raw, line=line)


def _check_patterns(raw: dict, source: str, loaded: Loaded, index: int) -> None:
    """Raise BadInputError (naming the field's line) for a schema ``pattern`` that is not a
    regular expression, or is set on a field that is not ``str``."""
    for name, spec in ((raw.get("input") or {}).get("schema") or {}).items():
        if not isinstance(spec, dict) or "pattern" not in spec:
            continue
        where = loaded.line_of(("relations", index, "input", "schema", name))
        if spec.get("type") != "str":
            raise BadInputError(source, f"relation {raw['id']!r}: schema field {name!r}: a pattern applies to "
                                        "a str field only", where)
        try:
            re.compile(spec["pattern"])
        except re.error as exc:
            raise BadInputError(source, f"relation {raw['id']!r}: schema field {name!r}: pattern is not a "
                                        f"regular expression ({exc})", where) from None


def _quantum(raw: dict, source: str, line: int | None) -> float | None:
    """``quantum`` as a positive float; YAML 1.1 reads ``1e-9`` (no dot) as a string."""
    value = raw.get("quantum")
    if value is None:
        return None
    try:
        number = float(value)
    except ValueError:
        raise BadInputError(source, f"relation {raw['id']!r}: quantum {value!r} is not a number", line) from None
    if not number > 0 or number != number or number == float("inf"):
        raise BadInputError(source, f"relation {raw['id']!r}: quantum must be a positive number", line)
    raw["quantum"] = number
    return number


# --- input schemas (§3) ---------------------------------------------------------------

_JSON_TYPES = {"str": "string", "int": "integer", "float": "number", "bool": "boolean",
               "date": "string"}
_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def optional_fields(field_specs: dict[str, Any] | None) -> set[str]:
    """Fields a row may leave out: those declared ``{type: ..., optional: true}`` (§3)."""
    return {name for name, spec in (field_specs or {}).items()
            if isinstance(spec, dict) and spec.get("optional") is True}


def row_schema(field_specs: dict[str, Any]) -> dict:
    """JSON schema of one input row from an input ``schema`` (field -> type or spec).

    Only the declared keys, each of its type and within ``min``/``max``/``choices``; every
    key is required except those declared ``optional: true`` (heterogeneous seed rows).
    """
    properties = {}
    for name, spec in field_specs.items():
        spec = {"type": spec} if isinstance(spec, str) else dict(spec)
        prop: dict[str, Any] = {"type": _JSON_TYPES[spec["type"]]}
        if spec["type"] == "date":
            prop["pattern"] = _ISO_DATE.pattern
        if "min" in spec:
            prop["minimum"] = spec["min"]
        if "max" in spec:
            prop["maximum"] = spec["max"]
        if "choices" in spec:
            prop["enum"] = spec["choices"]
        if "pattern" in spec:  # the whole text matches (a JSON Schema pattern alone only searches)
            prop["pattern"] = rf"\A(?:{spec['pattern']})\Z"
        properties[name] = prop
    required = sorted(set(properties) - optional_fields(field_specs))
    return {"type": "object", "properties": properties, "required": required,
            "additionalProperties": False}


def answer_like(key: str) -> bool:
    """True for a key that looks like a stored answer (``expected``, ``result_total``...)."""
    lowered = key.lower()
    return any(lowered == k or lowered.startswith(k + "_") or lowered.endswith("_" + k)
               for k in ANSWER_KEYS)


def _answer_keys(value: Any, prefix: str = "") -> list[str]:
    """Dotted paths of answer-like keys anywhere in a row (nested mappings and lists)."""
    found = []
    if isinstance(value, dict):
        for key, item in value.items():
            path = f"{prefix}{key}"
            if answer_like(str(key).strip()):
                found.append(path)
            found.extend(_answer_keys(item, path + "."))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found.extend(_answer_keys(item, f"{prefix}{index}."))
    return found


def check_row(row: Any, field_specs: dict[str, Any] | None) -> list[str]:
    """Why one seed or drafted input row is not acceptable (§3, §10); [] when it is.

    Answer-like keys are reported first and on their own, then schema violations.
    """
    reasons = [f"answer-like key {path!r}: inputs never carry outputs" for path in _answer_keys(row)]
    if field_specs:
        if isinstance(row, dict):
            extra = sorted(set(row) - set(field_specs))
            for key in extra:
                if not answer_like(str(key)):
                    reasons.append(f"key {key!r} is not in the input schema")
            missing = sorted(set(field_specs) - set(row) - optional_fields(field_specs))
            for key in missing:
                reasons.append(f"missing key {key!r} of the input schema")
            trimmed = {k: v for k, v in row.items() if k in field_specs}
            if not missing:
                problem = first_error(trimmed, row_schema(field_specs))
                if problem:
                    reasons.append(problem)
        else:
            reasons.append("expected a JSON object with the input schema's keys")
    return reasons
