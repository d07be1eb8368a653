"""An output the server keeps for the next call, a roundtrip's f(x) the judge never sees (SPEC §7).

A part of the subject's fork server (``harness.py``; standard library only, merged into its
script by ``script.py``): the judge sees only the kept value's type and whether it is the input.
An output the wire does not carry (an instance of the library's own class) is kept as the
child of its call pickled it (``Pickled``): the server holds the bytes and never unpickles
them (no code of the tree ever runs in the process every later call is forked from), and the
child of the next call unpickles them once the tree is importable (``unpickled``). For such an
output the child also sends the relation's observable, canon(inverse(out)), as it was in its
own process (``observer``, ``observed``): the judge holds the inverse's answer in a fresh
process to it, so an object whose pickle hands over other state than it shows gains nothing.
"""

import base64
import json

from relconsole.engine.relations.subject.calls import resolve
from relconsole.engine.relations.subject.wire import (DECODE_ERRORS, Record, Unencodable, _base_value, _wire, decode,
                                                      loads, type_name)


class Pickled:
    """A kept output the wire does not carry, as the child of its call pickled it: ``data``
    (bytes no process but the next call's child unpickles), ``type`` (module.Qualname, always
    dotted, so never one of the wire's own words such as ``str``) and ``is_input`` (whether
    its storage is the call's input itself, as that child read it)."""

    __slots__ = ("data", "type", "is_input")

    def __init__(self, data, type_, is_input):
        self.data, self.type, self.is_input = data, type_, is_input


def keep_output(token, payload):
    """``([token, value], payload for the judge)`` for a result that holds an output: the
    output decoded here (or a ``Pickled`` one, never unpickled here) and kept for the next
    call, the judge sent ``{"imported": [...], "executed": [...]}`` and, for a pickled output, ``observed``;
    ``(None, payload)`` unchanged for anything else (a raise, garbage: the judge reads it as
    from any call)."""
    try:
        body = loads(payload)
    except DECODE_ERRORS:
        return None, payload
    if not isinstance(body, dict) or not ({"ok", "pickled"} & set(body)):
        return None, payload
    imported = body.get("imported")
    sent = {"imported": [p for p in imported if isinstance(p, str)] if isinstance(imported, list) else [],
            "executed": body.get("executed") if isinstance(body.get("executed"), list) else []}
    if "ok" in body:
        return [token, body["ok"]], json.dumps(sent).encode("utf-8")
    value = _pickled(body)
    if value is None:
        return None, payload
    observed = body.get("observed")
    well_formed = isinstance(observed, list) and len(observed) == 2 and all(isinstance(v, str) for v in observed)
    sent["observed"] = observed if well_formed else [OBSERVED_UNENCODABLE, "nothing the judge can read"]
    return [token, value], json.dumps(sent).encode("utf-8")


def _pickled(body):
    """The ``Pickled`` a child's ``pickled`` result holds, or None for one that is not one."""
    try:
        data = base64.b64decode(body["pickled"].encode("ascii"), validate=True)
    except (AttributeError, ValueError, UnicodeError):
        return None
    if not isinstance(body.get("type"), str) or "." not in body["type"]:
        return None
    return Pickled(data, body["type"][:200], body.get("is_input") is True)


def kept_type(value):
    """The wire's word for a kept output's type: ``str``, ``bytes``, ``list``, ``dict``,
    ``int``..., a record's own type name, a pickled output's module.Qualname."""
    if isinstance(value, (Record, Pickled)):
        return value.type
    return type(value).__name__


def same_value(value, other):
    """``value == other`` with one type, for decoded data (False where == cannot tell)."""
    try:
        return type(value) is type(other) and value == other
    except (RecursionError, TypeError, ValueError):
        return False


def is_input(value, item, ops):
    """Whether a kept output is the call's input itself (``item`` for a call with no ops,
    the value a ``value`` op sent): an f that returns its input makes every roundtrip hold.
    A ``Pickled`` output says so itself (``stored_as_input``, read by its call's child)."""
    if isinstance(value, Pickled):
        return value.is_input
    if ops:
        if ops[-1][:1] != ["value"]:
            return False
        try:
            item = decode(ops[-1][1].encode("utf-8"))
        except ValueError:
            return False
    return same_value(value, item)


def stored_as_input(out, value):
    """Whether ``out``, an output the wire does not carry, is ``value`` in disguise: a
    subclass of a built-in type whose storage is ``value``, read through the built-in type's
    own methods, never the subject's (a str subclass the wire refuses for its overrides)."""
    try:
        stored = _base_value(out)
        return stored is not None and same_value(stored, value)
    except BaseException:  # a hostile __class__ or __eq__
        return False


def pickled_body(out, value, why):
    """The result mapping of a kept output ``out`` (of a call on ``value``) that the wire
    does not carry (``why``: the wire's words): ``{"pickled": base64 of its pickle, "type":
    module.Qualname, "is_input": bool}``, or ``{"unencodable": type, "unpicklable": words}``
    when pickle cannot carry it either."""
    import pickle
    try:
        name = type_name(out)
    except BaseException:  # a class whose name raises
        name = "?.(a type whose name cannot be read)"
    try:
        data = pickle.dumps(out, protocol=pickle.HIGHEST_PROTOCOL)
    except BaseException as exc:  # the subject's own __reduce__ may raise anything
        return {"unencodable": name, "unpicklable": f"{why}; pickle: {type(exc).__name__}: {str(exc)[:200]}"}
    return {"pickled": base64.b64encode(data).decode("ascii"), "type": name[:200],
            "is_input": stored_as_input(out, value)}


def unpickled(value):
    """``value``, or the object a ``Pickled`` holds (in the child of the call that reads it,
    once the tree's import roots are on ``sys.path``: its classes are the tree's)."""
    if not isinstance(value, Pickled):
        return value
    import pickle
    return pickle.loads(value.data)


def observer(call, adapters, root):
    """The relation's observable of a kept output (``call["observe"]``: [inverse ref, canon
    ref or None]) as a function of the output: canon(inverse(out)), the inverse resolved as
    the inverse's own call resolves it (in the tree ``root``); None for a call that names none."""
    observe = call.get("observe")
    if not observe:
        return None
    canon = adapters[observe[1]] if observe[1] else None

    def observed_value(out):
        back = resolve(observe[0], call.get("oracle_roots", ()), root)(out)
        return canon(back) if canon is not None else back
    return observed_value


OBSERVED = "observed"  # the observable's outcome tags, apart from a call's own "ok" and "raised"
OBSERVED_RAISED = "observed raised"
OBSERVED_UNENCODABLE = "observed unencodable"


def observed(observe, out):
    """``(tag, what)`` of ``observe(out)`` (``observer``'s function): (``OBSERVED``, its
    wire value), (``OBSERVED_RAISED``, the exception's type name) or
    (``OBSERVED_UNENCODABLE``, words for the value the wire does not carry)."""
    try:
        back = observe(out)
    except BaseException as exc:
        return OBSERVED_RAISED, type(exc).__name__
    try:
        return OBSERVED, _wire(back, 0)
    except Unencodable as exc:
        return OBSERVED_UNENCODABLE, f"{str(exc.args[0])[:200]}, which the wire does not carry"
    except (OverflowError, RecursionError, ValueError) as exc:
        return OBSERVED_UNENCODABLE, f"a value the wire does not carry ({type(exc).__name__}: {str(exc)[:200]})"


def observed_text(tag, what):
    """``[tag, text]`` for the judge: an ``OBSERVED`` wire value as its JSON text (the server
    passes it on unread), the rest as they are."""
    if tag != OBSERVED:
        return [tag, what]
    try:
        return [tag, json.dumps(what, ensure_ascii=False, separators=(",", ":"))]
    except (ValueError, RecursionError, OverflowError) as exc:
        return [OBSERVED_UNENCODABLE, f"{type(exc).__name__}: {str(exc)[:200]}"]
