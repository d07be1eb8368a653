"""The forked child of one call: leave the server's frames, import the subject, write one result (SPEC §7).

A part of the subject's fork server (``harness.py``; standard library only, merged into its
script by ``script.py``). ``serve_call`` raises ``Forked`` in the new process; the script's
top level then runs ``child``, which never returns.
"""

import gc
import json
import os
import sys

from relconsole.engine.relations.subject.calls import _apply, _import_roots, _imported, _OracleOnly, _raised, _record_opens, resolve
from relconsole.engine.relations.subject.history import _decoy_input, _first_of_two, _unless_history
from relconsole.engine.relations.subject.inputs import build_input
from relconsole.engine.relations.subject.wire import Unencodable, _wire


def _plain_main():
    """The ``__main__`` and argv of ``python -c``: its globals as that interpreter makes them
    (``__loader__`` the built-in importer, ``__builtins__``, ``__annotations__`` where this
    version adds it to a script), so the harness's own globals are not where a subject looks
    for its script, and a bare module is not a tell either."""
    import builtins
    import importlib.machinery
    import types
    script = sys.modules["__main__"]
    plain = types.ModuleType("__main__")
    plain.__loader__ = importlib.machinery.BuiltinImporter
    if "__annotations__" in vars(script):
        plain.__annotations__ = {}
    plain.__builtins__ = builtins
    sys.modules["__main__"] = plain
    sys.argv = ["-c"]


class Forked(BaseException):
    """Raised in a forked child to leave every server frame before the subject is imported:
    the subject's stack then starts at the script's top level, and no frame above it holds
    the corpus in its file order, the call's recipe or the server's state. ``job`` is
    ``[call, init, base, result_fd, kept]``; ``child`` empties it."""

    def __init__(self, job):
        super().__init__()
        self.job = job


CALL_DEPTH = 200  # the most frames a call is made below the script's own; production's stacks are deeper


def drawn_depth():
    """How many frames deeper than the script's top level this call runs (0..``CALL_DEPTH``,
    drawn per call from os.urandom): a fixed depth is a tell that needs no probe. The room
    left before a RecursionError (a self-recursion caught, a nested list's ``repr``) says how
    deep the caller's stack is; at one depth for every call, a subject exact only "when the
    stack is shallow" is judged on its exact branch alone (red team, issue 19)."""
    return int.from_bytes(os.urandom(2), "big") % (CALL_DEPTH + 1)


def at_depth(frames, work):
    """``work()``, called ``frames`` frames below this one; returns what it returns and
    raises what it raises."""
    if frames <= 0:
        return work()
    return at_depth(frames - 1, work)


CALL_FIELDS = ("subject", "mode", "times", "inverse", "canon", "refs", "repeat")
INIT_FIELDS = ("import_paths", "stdlib_count", "root")


def child(job):
    """Run one call and write its result to the job's fd; never returns."""
    code = 0
    try:
        call, init, base, result_fd, kept = job
        job.clear()
        adapters = {}
        finder = _OracleOnly(call.get("oracle_roots", init.get("oracle_roots", [])), init["root"])
        sys.meta_path.insert(0, finder)
        for ref in call.get("adapters", []):
            adapters[ref] = resolve(ref)  # before any tree module is importable
        sys.meta_path.remove(finder)
        for name in list(sys.modules):  # the subject re-imports a copy; it cannot patch ours
            if name.split(".", 1)[0] in finder.names:
                del sys.modules[name]
        root = init["root"]
        try:
            value = build_input(base, call.get("ops", []), adapters, kept)
        except BaseException as exc:
            value, failed = None, exc
        else:
            failed = None
        # the corpus's own rows in some order: a CSV corpus's rows are dicts of text cells
        rows_as_read = bool(init.get("flat_rows")) and all(op[:1] in (["order"], ["slice"], ["fresh"], ["scale"])
                                                           for op in call.get("ops", []))
        decoy = _decoy_input(call, adapters) if failed is None else None
        del base, kept  # only the call's own input stays in reach of the subject
        call = {k: call[k] for k in CALL_FIELDS if k in call}
        init = {k: init[k] for k in INIT_FIELDS}
        gc.collect()
        opened = set()
        _record_opens(opened)
        earlier = None
        try:
            if failed is not None:
                raise failed
            _import_roots(init)
            frames = drawn_depth()
            earlier = at_depth(frames, lambda: _first_of_two(call, init, value, adapters, rows_as_read, decoy))
            out = at_depth(frames, lambda: _apply(call, init, earlier.judged_input(value) if earlier is not None
                                                  else value, adapters))
        except BaseException as exc:
            body = {"raised": _raised(exc, root)}
            if isinstance(exc, SystemExit):
                body["raised"]["type"] = "SystemExit"
            if earlier is not None:
                body = _unless_history(body, earlier, ("raised", type(exc).__name__))
        else:
            try:
                body = {"ok": _wire(out, 0)}
                if earlier is not None:
                    body = _unless_history(body, earlier, ("ok", body["ok"]))
                    if "ok" in body and earlier.first_answer() is not None:
                        body["first"] = earlier.first_answer()
            except Unencodable as exc:
                body = {"unencodable": exc.args[0]}
            except (OverflowError, RecursionError, ValueError) as exc:
                body = {"unencodable": f"(output: {type(exc).__name__}: {exc})"}
        body["imported"] = _imported(root, opened)
        try:
            data = json.dumps(body, ensure_ascii=False, separators=(",", ":"), check_circular=False).encode("utf-8")
        except (ValueError, RecursionError, OverflowError, UnicodeError) as exc:  # a 5,000-digit int, a lone surrogate
            data = json.dumps({"unencodable": f"(output: {type(exc).__name__}: {str(exc)[:200]})",
                               "imported": body["imported"]}).encode("utf-8")
        view = memoryview(data)
        while view:
            view = view[os.write(result_fd, view[: 1 << 20]):]
    except BaseException:
        code = 70
    os._exit(code)
