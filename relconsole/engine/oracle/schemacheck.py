"""Schema validation of loaded files, with errors that name ``file:line``.

The schemas are the JSON Schema (Draft 2020-12) files shipped in ``relconsole/schemas/``
(``relconsole schema NAME`` prints one; editors read the same files), loaded once. They
are standard JSON Schema; the validator reads them as an editor does, with two readings
of YAML as PyYAML loads it: a value PyYAML turned into a ``datetime.date`` (an unquoted
``2026-12-31``) is the text of that date where the schema asks for a string with
``format: date``, and is a date (refused, "quote it") anywhere else; and a number
written ``25.0`` is not an integer (a seed or a rerun count written so is a typo). This
module turns the best error into one line a reviewer can act on ("expected a string,
got a date: quote it").
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import jsonschema
from jsonschema import Draft202012Validator
from jsonschema.validators import extend

from relconsole import schemas
from relconsole.engine.errors import BadInputError
from relconsole.engine.oracle.yamlload import Loaded


def shipped(name: str) -> dict:
    """The shipped schema ``name`` (``relconsole.schemas.NAMES``), parsed once per process;
    callers share it and must not mutate it. Raises KeyError for another name."""
    return schemas.load(name)


def shipped_part(name: str, definition: str) -> dict:
    """A schema for one ``$defs`` entry of the shipped schema ``name`` (a catalog relation,
    a freeze row), its references resolved inside that file. Raises KeyError when absent."""
    root = shipped(name)
    if definition not in root.get("$defs", {}):
        raise KeyError(f"{name}#/$defs/{definition}")
    return {"$schema": root["$schema"], "$defs": root["$defs"], "$ref": f"#/$defs/{definition}"}


def _is_date(value) -> bool:
    return isinstance(value, dt.date) and not isinstance(value, dt.datetime)


def _is_integer(_checker, value) -> bool:
    # JSON Schema counts 25.0 as an integer; a seed or a rerun count written 25.0 is not.
    return isinstance(value, int) and not isinstance(value, bool)


_STANDARD_TYPE = Draft202012Validator.VALIDATORS["type"]


def _type(validator, types, instance, schema):
    """The standard ``type`` keyword, except that a YAML date where the schema asks for a
    date string is that string (the text an editor sees)."""
    wanted = types if isinstance(types, list) else [types]
    if _is_date(instance) and schema.get("format") == "date" and "string" in wanted:
        return
    yield from _STANDARD_TYPE(validator, types, instance, schema)


_TYPES = Draft202012Validator.TYPE_CHECKER.redefine("integer", _is_integer)
Validator = extend(Draft202012Validator, validators={"type": _type}, type_checker=_TYPES)
FORMATS = jsonschema.FormatChecker(formats=["date"])  # a real calendar day, checked like a pattern


_VALIDATORS: dict[int, tuple[dict, Any]] = {}


def _validator(schema: dict):
    """One validator per schema object (they are module constants), built on first use."""
    held = _VALIDATORS.get(id(schema))
    if held is None or held[0] is not schema:
        if len(_VALIDATORS) > 64:  # a caller passing ad-hoc schemas: do not keep them all
            _VALIDATORS.clear()
        held = _VALIDATORS[id(schema)] = (schema, Validator(schema, format_checker=FORMATS))
    return held[1]


def describe(value: Any) -> str:
    """A short name for the type of ``value`` as a YAML reader sees it."""
    if isinstance(value, bool):
        return "a boolean (yes/no/true/false)"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, dt.datetime):
        return "a timestamp"
    if isinstance(value, dt.date):
        return "a date"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    if value is None:
        return "nothing (null)"
    return type(value).__name__


REF_PATTERN = r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$"  # a callable named module:attribute
# what a pattern asks for, in words (the regex itself helps nobody who mistyped a name)
DATE_PATTERN = r"^\d{4}-\d{2}-\d{2}$"
PATTERN_WORDS = {REF_PATTERN: "`module:attribute` (a module, a colon, then the attribute: pkg.mod:Class.method)",
                 DATE_PATTERN: "a YYYY-MM-DD date"}


def _message(error: jsonschema.ValidationError) -> str:
    where = ".".join(str(p) for p in error.absolute_path) or "top level"
    if error.validator == "pattern" and error.validator_value in PATTERN_WORDS:
        return f"{where}: expected {PATTERN_WORDS[error.validator_value]}, got {error.instance!r}"
    if error.validator == "format" and error.validator_value == "date":
        return f"{where}: {error.instance!r} is not a YYYY-MM-DD date"
    if error.validator == "type" and error.schema.get("format") == "date":
        return f"{where}: expected a YYYY-MM-DD date, got {describe(error.instance)}"
    if error.validator == "type":
        wanted = error.validator_value
        wanted = " or ".join(wanted) if isinstance(wanted, list) else wanted
        got = describe(error.instance)
        hint = ""
        if "string" in str(wanted) and not isinstance(error.instance, (dict, list)):
            hint = ": quote it"
        return f"{where}: expected {wanted}, got {got}{hint}"
    if error.validator in ("oneOf", "anyOf") and not isinstance(error.instance, (dict, list)):
        wanted = sorted({str(s.get("type", "value")) for s in error.validator_value if isinstance(s, dict)}
                        | ({"one of the listed words"} if any("enum" in s for s in error.validator_value) else set()))
        got = describe(error.instance)
        hint = ": quote it" if "string" in wanted else ""
        return f"{where}: expected {' or '.join(w for w in wanted if w != 'value')}, got {got}{hint}"
    if error.validator == "additionalProperties":
        return f"{where}: {error.message} (unknown fields are not ignored)"
    if error.validator == "required":
        return f"{where}: missing field: {error.message.split(' is a required')[0]}"
    return f"{where}: {error.message}"


def validate(loaded: Loaded, schema: dict, source: str) -> None:
    """Validate ``loaded.data`` against ``schema``.

    Raises BadInputError naming ``source`` and the line of the offending value.
    """
    error = jsonschema.exceptions.best_match(_validator(schema).iter_errors(loaded.data))
    if error is None:
        return
    path = tuple(error.absolute_path)
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        known = set(error.schema.get("properties", {}))
        extra = next((k for k in error.instance if k not in known), None)
        if extra is not None:  # point at the unknown field itself, not its mapping
            path += (extra,)
    line = loaded.line_of(path)
    raise BadInputError(source, _message(error), line)


def first_error(data: Any, schema: dict) -> str | None:
    """The best error message for ``data`` against ``schema``, or None (for row checks)."""
    error = jsonschema.exceptions.best_match(_validator(schema).iter_errors(data))
    return None if error is None else _message(error)
