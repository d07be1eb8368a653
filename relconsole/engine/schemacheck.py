"""Schema validation of loaded files, with errors that name ``file:line``.

jsonschema does the checking; this module adds a ``date`` type (PyYAML turns an
unquoted ``2026-12-31`` into a ``datetime.date``) and turns the best error into one
line a reviewer can act on ("expected a string, got a date: quote it").
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import jsonschema
from jsonschema import Draft202012Validator
from jsonschema.validators import extend

from relconsole.engine.errors import BadInputError
from relconsole.engine.yamlload import Loaded


def _is_date(_checker, value) -> bool:
    return isinstance(value, dt.date) and not isinstance(value, dt.datetime)


def _is_integer(_checker, value) -> bool:
    # JSON Schema counts 25.0 as an integer; a seed or a rerun count written 25.0 is not.
    return isinstance(value, int) and not isinstance(value, bool)


_TYPES = Draft202012Validator.TYPE_CHECKER.redefine_many({"date": _is_date, "integer": _is_integer})
Validator = extend(Draft202012Validator, type_checker=_TYPES)


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
PATTERN_WORDS = {REF_PATTERN: "`module:attribute` (a module, a colon, then the attribute: pkg.mod:Class.method)"}


def _message(error: jsonschema.ValidationError) -> str:
    where = ".".join(str(p) for p in error.absolute_path) or "top level"
    if error.validator == "pattern" and error.validator_value in PATTERN_WORDS:
        return f"{where}: expected {PATTERN_WORDS[error.validator_value]}, got {error.instance!r}"
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
    error = jsonschema.exceptions.best_match(Validator(schema).iter_errors(loaded.data))
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
    error = jsonschema.exceptions.best_match(Validator(schema).iter_errors(data))
    return None if error is None else _message(error)
