"""An output the server keeps for the next call, a roundtrip's f(x) the judge never sees (SPEC §7).

A part of the subject's fork server (``harness.py``; standard library only, merged into its
script by ``script.py``): the judge sees only the kept value's type and whether it is the input.
"""

import json

from relconsole.engine.relations.subject.wire import DECODE_ERRORS, Record, decode, loads


def keep_output(token, payload):
    """``([token, value], payload for the judge)`` for a result that holds an output: the
    output decoded here and kept for the next call, the judge sent only the files it
    imported; ``(None, payload)`` unchanged for anything else (a raise, garbage: the judge
    reads it as from any call)."""
    try:
        body = loads(payload)
    except DECODE_ERRORS:
        return None, payload
    if not isinstance(body, dict) or "ok" not in body:
        return None, payload
    imported = body.get("imported")
    imported = [p for p in imported if isinstance(p, str)] if isinstance(imported, list) else []
    return [token, body["ok"]], json.dumps(imported).encode("utf-8")


def kept_type(value):
    """The wire's word for a kept output's type: ``str``, ``bytes``, ``list``, ``dict``,
    ``int``..., a record's own type name."""
    return value.type if isinstance(value, Record) else type(value).__name__


def same_value(value, other):
    """``value == other`` with one type, for decoded data (False where == cannot tell)."""
    try:
        return type(value) is type(other) and value == other
    except (RecursionError, TypeError, ValueError):
        return False


def is_input(value, item, ops):
    """Whether a kept output is the call's input itself (``item`` for a call with no ops,
    the value a ``value`` op sent): an f that returns its input makes every roundtrip hold."""
    if ops:
        if ops[-1][:1] != ["value"]:
            return False
        try:
            item = decode(ops[-1][1].encode("utf-8"))
        except ValueError:
            return False
    return same_value(value, item)
