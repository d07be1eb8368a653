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


class ServerFault(Exception):
    """The fork server died, hung or said something that is not a frame (the judge's fault
    or the subject's attack on it; either way no call result)."""


@dataclass
class CallResult:
    """One call's result as the server reported it.

    ``status``: ``ok`` (``body`` is the child's result mapping: ``ok`` value on the wire,
    ``raised`` exception data, ``unencodable`` type name or the ``fault`` of the harness or an
    adapter, plus ``imported`` tree files),
    ``timeout``, ``died`` (exit status or signal in ``detail``), ``over_cap`` (the result
    exceeded wire.MAX_BYTES) or ``garbage`` (bytes that are not a result). ``seconds``
    is the call's wall time, fork to reap. ``kept``: the server holds the output of this
    ``keep`` call for the next one (``{"type": wire type word, "is_input": bool}``), and
    ``body`` is only ``{"imported": [...]}``; only the server's header sets it, never the
    child's bytes.
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
    """``{"same": True, "imported": [...]}`` when ``payload`` is the child's result mapping
    with ``expected`` as its ``ok`` value to the byte (the child writes ``ok`` first, then
    ``imported``, with the judge's own JSON settings), else None."""
    head = b'{"ok":' + expected + b',"imported":'
    if len(payload) < len(head) or payload[:len(head)] != head:
        return None
    try:
        imported = json.loads(payload[len(head):-1])
    except ValueError:
        return None
    if payload[-1:] != b"}" or not isinstance(imported, list):
        return None
    return {"same": True, "imported": imported}


def _kept(payload: bytes | bytearray, seconds: float) -> CallResult:
    """The result of a call made with ``keep``, whose output the server kept for the next
    call (``payload``: the JSON list of the files it imported)."""
    try:
        imported = json.loads(payload)
    except ValueError:
        raise ServerFault("the subject's server sent a kept result that is not one") from None
    if not isinstance(imported, list):
        raise ServerFault("the subject's server sent a kept result that is not one")
    return CallResult("ok", {"imported": imported}, seconds=seconds, kept={})


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
