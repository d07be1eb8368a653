"""One call's result as the judge reads it from the fork server's frame (SPEC §7).

``CallResult`` is what ``ForkServer.call`` returns; ``_parse`` reads a child's result bytes
(anything but a result mapping in the wire format is ``garbage``), ``_kept`` a call whose
output the server kept, ``_written_alike`` an output the judge expected to the byte.
``ServerFault`` is what the judge raises when the server gave no result at all.
"""

from __future__ import annotations

import json
import signal
from dataclasses import dataclass, field

from relconsole.engine.relations.subject import wire
from relconsole.engine.relations.subject.kept import OBSERVED, OBSERVED_UNENCODABLE


class ServerFault(Exception):
    """The fork server died, hung or said something that is not a frame (the judge's fault
    or the subject's attack on it; either way no call result)."""


@dataclass
class CallResult:
    """One call's result as the server reported it.

    ``status``: ``ok`` (``body`` is the child's result mapping: ``ok`` value on the wire,
    ``raised`` exception data, ``unencodable`` type name or the ``fault`` of the harness or an
    adapter, plus ``imported`` tree files and ``executed``, ``[[tree file, [lines]], ...]``),
    ``timeout``, ``died`` (exit status or signal in ``detail``), ``over_cap`` (the result
    exceeded wire.MAX_BYTES) or ``garbage`` (bytes that are not a result). ``seconds``
    is the call's wall time, fork to reap. ``kept``: the server holds the output of this
    ``keep`` call for the next one (``{"type": wire type word, "is_input": bool, "observed":
    (tag, value) or None}``, see ``_kept``), and ``body`` is only ``{"imported": [...]}``;
    only the server's frame sets it, never the child's bytes alone.
    """

    status: str
    body: dict = field(default_factory=dict)
    detail: str = ""
    seconds: float = 0.0
    kept: dict | None = None

def _signal_name(number) -> str:
    try:
        return signal.Signals(int(number)).name
    except (ValueError, TypeError):
        return f"signal {number}"


def _written_alike(payload: bytes | bytearray, expected: bytes) -> dict | None:
    """``{"same": True, "imported": [...], "executed": [...]}`` when ``payload`` is the child's
    result mapping with ``expected`` as its ``ok`` value to the byte and nothing after it but
    ``imported`` and ``executed`` (the child writes ``ok`` first, with the judge's own JSON
    settings), else None."""
    head = b'{"ok":' + expected + b','
    if len(payload) < len(head) or payload[:len(head)] != head:
        return None
    try:
        rest = json.loads(b"{" + bytes(payload[len(head):]))
    except ValueError:
        return None
    if not isinstance(rest, dict) or set(rest) - {"imported", "executed"} or not isinstance(rest.get("imported"), list):
        return None
    return {"same": True, **rest}


def _kept(payload: bytes | bytearray, seconds: float) -> CallResult:
    """The result of a call made with ``keep``, whose output the server kept for the next
    call (``payload``: ``{"imported": [files], "executed": [[file, lines]], "observed": [tag, what]}``, ``observed`` only
    for an output kept pickled, see ``kept.py``); ``kept`` holds ``observed`` decoded
    (``(tag, value)``: an ``observed`` wire value decoded, else the child's words)."""
    try:
        sent = json.loads(payload)
    except ValueError:
        raise ServerFault("the subject's server sent a kept result that is not one") from None
    if not isinstance(sent, dict) or not isinstance(sent.get("imported"), list):
        raise ServerFault("the subject's server sent a kept result that is not one")
    return CallResult("ok", {"imported": sent["imported"], "executed": sent.get("executed") or []}, seconds=seconds,
                      kept={"observed": _observed(sent.get("observed"))})


def _observed(sent) -> tuple | None:
    """``(tag, value)`` of a pickled output's observable as its child sent it (``kept.observed``'s
    tags; an ``observed`` value is JSON text in the wire format), None when none was sent;
    ``("observed unencodable", words)`` for one that is not in the wire format."""
    if sent is None:
        return None
    if not isinstance(sent, list) or len(sent) != 2 or not all(isinstance(v, str) for v in sent):
        return (OBSERVED_UNENCODABLE, "(the observable sent is not one)")
    tag, what = sent
    if tag != OBSERVED:
        return (tag[:40], what[:300])
    try:
        return (tag, wire.decode(what.encode("utf-8")))
    except ValueError:
        return (OBSERVED_UNENCODABLE, "(the observable sent is not in the wire format)")


def _parse(payload: bytes | bytearray, seconds: float) -> CallResult:
    """A child's result bytes as a CallResult; anything but a result mapping is ``garbage``."""
    try:
        body = wire.loads(payload)
    except json.JSONDecodeError:
        return CallResult("garbage", detail="the subject's result is not JSON", seconds=seconds)
    except wire.DECODE_ERRORS as exc:
        return CallResult("garbage", detail=f"the subject's output is not in the wire format: "
                                            f"{type(exc).__name__}", seconds=seconds)
    if not isinstance(body, dict) or not ({"ok", "raised", "unencodable", "history", "fault"} & set(body)):
        return CallResult("garbage", detail="the subject's result is not a result mapping", seconds=seconds)
    return CallResult("ok", body, seconds=seconds)
