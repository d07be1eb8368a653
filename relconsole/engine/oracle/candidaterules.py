"""The content rules of a candidate (SPEC §10): what its loaded mapping may say.

Known fields; no expected value or numeric answer; no skip or xfail text; no freeze
fields; an input schema that fits its rows; a predicate that references its input and can
fail; a transform of §10 and a valid catalog form. Each rule is a function of the
mapping (and of its ``InputShape``) giving one ``Verdict``; ``candidatecheck`` runs them.
"""

from __future__ import annotations

import copy
import datetime as dt
import re
import sys
from typing import Any

from relconsole.engine.errors import BadInputError
from relconsole.engine.oracle.candidates import CANDIDATE_FIELDS, REQUIRED, TRANSFORM_TO_KIND, InputShape, Verdict
from relconsole.engine.oracle.catalog import KIND_PARAMS, RELATION_SCHEMA, _relation, param_problem
from relconsole.engine.oracle.schemacheck import first_error
from relconsole.engine.oracle.skeleton import answer_key, freeze_key, skip_text
from relconsole.engine.oracle.yamlload import Loaded
from relconsole.engine.docsref import see

WIDE_QUANTUM = 1e3  # a tolerance (or canon grid) this wide makes the predicate true for any real output
_NUMERIC_PARAMS = frozenset({"shuffles", "seed", "splits", "step", "max", "scale"})
_TEXT_SLOTS = {("params", "field"), ("input", "lease"), ("input", "seeds")}
_NUMERIC_TEXT = re.compile(r"\s*[-+]?(?:\d[\d_]*(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?\s*")


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


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _number(value: Any) -> float:
    """``value`` as a float (YAML 1.1 reads ``1e6`` as a string), or 0.0 when it is none."""
    if isinstance(value, bool):
        return 0.0
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError):
        return 0.0


def rule_fields(raw: dict) -> Verdict:
    """Known top-level fields, the required ones present, provenance and must_not as text.

    Keys another rule owns (answer-like, freeze, skip) and numbers (``no_answers``) are
    left to that rule, so each smuggling attempt is reported once, by its own rule.
    """
    unknown = sorted(str(k) for k in raw if k not in CANDIDATE_FIELDS
                     and not (answer_key(k) or freeze_key(k) or skip_text(str(k))))
    if unknown:
        return Verdict("fields", False, f"unknown fields: {', '.join(unknown)}")
    missing = [k for k in REQUIRED if k not in raw]
    if missing:
        return Verdict("fields", False, f"missing fields: {', '.join(missing)}")
    for key in ("drafted_by", "source", "drafted_at", "must_not"):
        value = raw[key]
        if _is_number(value) or _text(value):
            continue
        if key == "drafted_at" and isinstance(value, dt.date):
            continue
        if key == "must_not" and isinstance(value, list) and value and all(_text(v) for v in value):
            continue
        return Verdict("fields", False, f"{key}: {value!r} is not text")
    return Verdict("fields", True)


def _text(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _number_allowed(path: tuple, numeric_params: frozenset) -> bool:
    """True where a candidate may hold a number: quantum, a numeric param of its kind, a
    split fraction, and an input schema's bounds and choices."""
    if path == ("quantum",):
        return True
    if len(path) == 2 and path[0] == "params" and path[1] in numeric_params:
        return True
    if len(path) == 3 and path[:2] == ("params", "splits") and isinstance(path[2], int):
        return "splits" in numeric_params
    schema_bound = len(path) == 4 and path[3] in ("min", "max")
    schema_choice = len(path) == 5 and path[3] == "choices"
    return path[:2] == ("input", "schema") and (schema_bound or schema_choice)


def rule_no_answers(raw: dict) -> Verdict:
    """No expected value anywhere in the body (``must_not`` excepted, it names what not to
    assert): no answer-like key at any depth, in any spelling, inside mappings or lists;
    no number outside the places that take one (a list of totals under ``shuffles``, a
    number under an unknown param, a number as ``source``); in ``params`` and ``input`` a
    numeric string (YAML 1.1 reads ``5588e2`` as text) or a numeric key counts too.
    Numbers under a freeze or skip key are left to the rule that owns that key."""
    body = {k: v for k, v in raw.items() if k != "must_not"}
    for path, key, _value in _walk(body):
        if key is not None and answer_key(key):
            return Verdict("no_answers", False, f"{_dotted(path)}: carries an expected value")
    kind = TRANSFORM_TO_KIND.get(str(raw.get("transform")))
    numeric = _NUMERIC_PARAMS & KIND_PARAMS[kind] if kind else _NUMERIC_PARAMS
    for path, key, value in _walk(body):
        if any(isinstance(k, str) and (freeze_key(k) or skip_text(k)) for k in path):
            continue  # a freeze count or a skip flag: no_freeze_fields / no_skip report it
        inside = path[0] in ("params", "input") and path not in _TEXT_SLOTS
        if inside and (_is_number(key) or isinstance(key, str) and _NUMERIC_TEXT.fullmatch(key)):
            return Verdict("no_answers", False, f"{_dotted(path)}: the number {key!r} as a key stands as an answer")
        as_number = _is_number(value) or (inside and isinstance(value, str) and _NUMERIC_TEXT.fullmatch(value))
        if as_number and not _number_allowed(path, numeric):
            return Verdict("no_answers", False, f"{_dotted(path)}: the number {value!r} stands as an answer")
    return Verdict("no_answers", True)


def rule_no_skip(raw: dict) -> Verdict:
    """No skip or xfail mark in any key or text value, at any depth (``must_not`` too)."""
    for path, key, value in _walk(raw):
        for text in (key, value):
            if isinstance(text, str) and skip_text(text):
                return Verdict("no_skip", False, f"{_dotted(path)}: skip/xfail text is not allowed")
    return Verdict("no_skip", True)


def rule_no_freeze_fields(raw: dict) -> Verdict:
    """No freeze-file key (§6) at any depth, in any spelling; an input schema's field names
    are the data's columns and are exempt."""
    found = [_dotted(path) for path, key, _value in _walk(raw)
             if key is not None and path[:2] + path[3:] != ("input", "schema") and freeze_key(key)]
    if found:
        return Verdict("no_freeze_fields", False,
                       f"freeze fields {', '.join(found)}: freezes belong to the operator's freeze file")
    return Verdict("no_freeze_fields", True)


def rule_input_schema(shape: InputShape) -> Verdict:
    """The candidate's own input schema fits the rows (or the header) it reads (§10: a
    drafted schema is checked, never trusted)."""
    if shape.problem:
        return Verdict("input_schema", False, shape.problem)
    return Verdict("input_schema", True)


def rule_references_input(raw: dict, shape: InputShape) -> Verdict:
    """The statement or ``params.field`` names at least one input field as a whole word
    (``body_mass_g`` inside ``body_mass_grams`` does not count). Seeds of plain values have
    no fields: the kind compares the subject on each whole value, which holds."""
    names = shape.fields
    if shape.plain:
        return Verdict("references_input", True, "plain-value seeds: compared on each whole value")
    if not names:
        return Verdict("references_input", False, "cannot tell the input's fields (no schema, no lease)")
    params = raw.get("params") if isinstance(raw.get("params"), dict) else {}
    body = " ".join(v for v in (raw.get("statement"), params.get("field")) if isinstance(v, str))
    used = [n for n in names if re.search(rf"(?<!\w){re.escape(n)}(?!\w)", body)]
    if not used:
        return Verdict("references_input", False,
                       f"vacuous: references no field of its input ({', '.join(names)})")
    return Verdict("references_input", True, f"uses {', '.join(used)}")


def _stdlib(ref: Any) -> bool:
    """True for a ``module:attr`` reference into the standard library or builtins."""
    if not isinstance(ref, str):
        return False
    module = ref.partition(":")[0].split(".")[0].strip()
    return module in sys.stdlib_module_names


def rule_not_always_true(raw: dict, shape: InputShape) -> Verdict:
    """The comparison can fail: not a predicate that holds whatever the patch does.

    Always true: a ``tolerance`` or ``canon`` quantum of ``WIDE_QUANTUM`` or more (``.inf``
    included: every difference is within it, or every number rounds to one grid point); a
    subject from the standard library (nothing of the code under review runs); no
    follow-up run (``shuffles`` below 1, ``splits`` 0 or no fraction inside (0, 1)); a
    ``monotonic`` that raises nothing (no ``field``, a field the input does not have, a
    ``step`` of 0 or less, a ``max`` at or below the schema's minimum). A ``nan``, zero or
    negative quantum is not always true but invalid: ``catalog_form`` rejects it.
    """
    def fail(why: str) -> Verdict:
        return Verdict("not_always_true", False, f"always true: {why}")

    compare = raw.get("compare")
    if compare in ("canon", "tolerance") and "quantum" in raw and _number(raw["quantum"]) >= WIDE_QUANTUM:
        what = "admits any output" if compare == "tolerance" else "rounds any real output to the same values"
        return fail(f"{compare} with quantum {raw['quantum']} {what}")
    if _stdlib(raw.get("subject")):
        return fail(f"subject {raw['subject']} is standard-library code: nothing under review runs")
    kind = TRANSFORM_TO_KIND.get(str(raw.get("transform")))
    params = raw.get("params") if isinstance(raw.get("params"), dict) else {}
    if kind == "permutation":
        shuffles = params.get("shuffles", 6)
        if _is_number(shuffles) and shuffles < 1:
            return fail(f"shuffles {shuffles}: no shuffled run, nothing is compared")
    elif kind == "split_merge":
        splits = params.get("splits", 3)
        if _is_number(splits) and splits < 1:
            return fail(f"splits {splits}: no split, nothing is compared")
        if isinstance(splits, list) and not any(_is_number(s) and 0 < s < 1 for s in splits):
            return fail(f"splits {splits!r}: no split point inside the input")
    elif kind == "monotonic":
        why = _never_rises(raw, params, shape)
        if why:
            return fail(why)
    return Verdict("not_always_true", True)


def _never_rises(raw: dict, params: dict, shape: InputShape) -> str | None:
    """Why a ``monotonic`` candidate raises nothing (no ``field``, a field the input does not
    have, a ``step`` of 0 or less, or under 1 on an integer field, a ``max`` at or below the
    schema's minimum), or None when its input can rise."""
    names = shape.fields
    name, step = params.get("field"), params.get("step", 1)
    if not _text(name):
        return "no field to raise: the input never changes"
    if shape.plain:
        return f"plain-value seeds have no field {name!r} to raise: the input never changes"
    if names and name not in names:
        return f"raises {name!r}, which the input does not have: the input never changes"
    if _is_number(step) and step <= 0:
        return f"step {step} does not raise {name}" + (": the input never changes" if step == 0 else "")
    schema = raw["input"].get("schema") if isinstance(raw.get("input"), dict) else None
    spec = schema.get(name) if isinstance(schema, dict) else None
    low = spec.get("min") if isinstance(spec, dict) else None
    declared = spec.get("type") if isinstance(spec, dict) else spec
    if declared == "int" and _is_number(step) and step < 1:
        return f"step {step} on the integer field {name} rounds back to the same value: the input never changes"
    if _is_number(params.get("max")) and _is_number(low) and params["max"] <= low:
        return f"max {params['max']} is at or below {name}'s minimum {low}: nothing can rise"
    return None


def rule_known_transform(raw: dict) -> Verdict:
    """One of §10's transforms, each becoming its catalog kind; the reason lists them (a
    drafter, or a person, who writes a catalog kind such as ``idempotence`` learns the words)."""
    transform = raw.get("transform")
    allowed = ", ".join(f"{t} (kind {k})" for t, k in TRANSFORM_TO_KIND.items())
    if transform == "other":
        return Verdict("known_transform", False, f"transform 'other' cannot be accepted without an edit to one of: "
                                                 f"{allowed}")
    if not isinstance(transform, str) or transform not in TRANSFORM_TO_KIND:
        return Verdict("known_transform", False, f"unknown transform {transform!r}: a candidate's transform is one "
                                                 f"of {allowed} ({see('quarantine', 'candidates')}); other catalog kinds are written by hand "
                                                 f"({see('catalog', 'kinds')})")
    return Verdict("known_transform", True)


def rule_catalog_form(raw: dict) -> tuple[Verdict, dict | None]:
    """The relation row the candidate becomes on accept, checked like a catalog row."""
    kind = TRANSFORM_TO_KIND.get(str(raw.get("transform")))
    if kind is None:
        return Verdict("catalog_form", False, "not checked: no catalog kind for this transform",
                       checked=False), None
    row: dict[str, Any] = {"id": raw.get("id"), "kind": kind}
    for key in ("subject", "merge", "inverse", "input", "compare", "quantum", "params", "owner",
                "statement"):
        if key in raw:
            row[key] = raw[key]
    problem = first_error(row, RELATION_SCHEMA)
    if problem:
        return Verdict("catalog_form", False, f"as a catalog row: {problem}"), None
    params = row.get("params") or {}
    unknown = set(params) - KIND_PARAMS[kind]
    if unknown:
        return Verdict("catalog_form", False,
                       f"params {', '.join(sorted(map(str, unknown)))} do not apply to {kind}"), None
    for name, value in params.items():
        wanted = param_problem(name, value)
        if wanted:
            return Verdict("catalog_form", False, f"params.{name}: {value!r} is not {wanted}"), None
    try:  # the catalog's own rules (tolerance needs a quantum, roundtrip needs inverse...)
        _relation(copy.deepcopy(row), "candidate", None, Loaded(row), 0)
    except BadInputError as exc:
        return Verdict("catalog_form", False, f"as a catalog row: {exc.message}"), None
    return Verdict("catalog_form", True), row
