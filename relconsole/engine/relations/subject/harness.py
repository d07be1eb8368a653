"""A subject process: imports the code under review, makes one call, writes the output as data.

Standard library only, and nothing in it names the tool that starts it: this file, with its
parts merged in before it and their imports of each other dropped (``script.py``), is compiled
to a scratch folder (``main.pyc``, its code named ``<string>`` as ``python -c`` names it) and
run as a plain script (``python -s -S -P main.pyc``), so the code under review finds no judge
in ``sys.modules``, on ``sys.path`` or in its environment.

The script is a fork server (SPEC §7 "The judge and the subject"). It reads one init frame
(tree root, import roots, site folders, the input file), reads the input once, then answers
call frames one at a time: for each it forks a child that builds its input from the recipe,
imports the subject *after* the fork, makes one call and writes one result; the server waits
for it (with the call's timeout), kills every process the call left behind and sends the
result's bytes back unread. A child never sees another child's state: each gets a fresh copy
of the server, a private HOME and TMPDIR, and is gone before the next starts.

Frames, both ways: one JSON header line, then ``size`` raw bytes when the header says so. The
wire format of a value is ``wire.py``'s.

This file holds the server's loop and one call's fork; its parts, each a module of the same
standard-library-only kind, hold the rest: ``wire`` (the wire format), ``inputs`` (the call's
input), ``calls`` (one call's work), ``kept`` (an output kept for the next call, pickled when
the wire does not carry it), ``adapters`` (the oracle's adapters, before or after the tree's
import roots), ``history`` (state kept from call to call), ``child`` (the forked child),
``namespaces`` and ``pagecache`` (what each call has to itself), ``reaping`` (what a call
leaves behind) and ``disguise`` (a plain interpreter's look). ``script.py`` merges them, this
file last, into the one script.
"""

import gc
import json
import os
import random
import select
import shutil
import signal
import sys
import tempfile
import time

from relconsole.engine.relations.subject.calls import _PRELOADED
from relconsole.engine.relations.subject.child import Forked, _plain_main, child
from relconsole.engine.relations.subject.disguise import C_ONLY, _disguise, _setenv_c, _site_builtins
from relconsole.engine.relations.subject.inputs import _csv_rows, read_corpus, read_seeds
from relconsole.engine.relations.subject.kept import is_input, keep_output, kept_type
from relconsole.engine.relations.subject.namespaces import (PR_SET_CHILD_SUBREAPER, PR_SET_DUMPABLE,
                                                           PR_SET_PDEATHSIG, _prctl, map_ids, own_namespaces)
from relconsole.engine.relations.subject.pagecache import close_page_cache, page_cache_filter
from relconsole.engine.relations.subject.reaping import (SHARED, kill_descendants, mount_points, remove_sysv_ipc,
                                                        wipe_scratch, wipe_shared)
from relconsole.engine.relations.subject.wire import MAX_BYTES

_SANDBOXED = [False]  # whether this server runs in a pid namespace of its own (kill(-1) is safe)
COMMON_MODULES = ("collections", "concurrent.futures", "contextlib", "copy", "dataclasses", "fractions",
                  "functools", "hashlib", "heapq", "itertools", "math", "operator", "re", "statistics",
                  "string", "textwrap", "typing")


def uptime():
    """Seconds since boot from /proc/uptime: a clock no LD_PRELOAD'ed time library stands still
    (the subject's frozen clock freezes monotonic time too, and the server's deadlines need one)."""
    try:
        with open("/proc/uptime", "rb") as handle:
            return float(handle.read().split()[0])
    except (OSError, ValueError, IndexError):
        return time.monotonic()


def _read_frame(stream):
    line = stream.readline()
    if not line:
        return None
    return json.loads(line)


def _send(out, header, payload=b""):
    header = dict(header, size=len(payload))
    out.write(json.dumps(header).encode("utf-8") + b"\n")
    if payload:
        out.write(payload)
    out.flush()


def _stderr_tail(path):
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - 4096))
            lines = handle.read().decode("utf-8", "replace").strip().splitlines()
    except OSError:
        return ""
    return lines[-1][:500] if lines else ""


def _pin(value):
    """Hold one reference to ``value`` that no Python object holds. A child ends in
    ``os._exit`` and never needs the server's corpus freed; freeing it when the call's input
    is a copy (a decref of every row and cell, so a copy of every page the child shares with
    the server) cost a large call 0.1-0.3 s."""
    try:
        import ctypes
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(value))
    except (ImportError, AttributeError, OSError):
        pass


def serve_call(call, init, base, timeout, kept=None):
    """Fork one child for ``call``, wait for its result; returns (header, payload bytes).
    ``kept``: the value an op ``["kept", token]`` stands for, in a one-item list."""
    private = tempfile.mkdtemp(prefix="home-", dir=init["scratch"])
    err_path = os.path.join(private, ".stderr")
    read_fd, write_fd = os.pipe()
    ask_r, ask_w = os.pipe()
    answer_r, answer_w = os.pipe()
    started = uptime()
    pid = os.fork()
    if pid == 0:
        try:
            for fd in (read_fd, ask_r, answer_w):
                os.close(fd)
            _enter_call(call, init, base, private, err_path, write_fd, ask_w, answer_r)
        except BaseException:
            os._exit(71)
        raise Forked([call, init, base, write_fd, kept])
    os.close(write_fd)
    for fd in (ask_w, answer_r):
        os.close(fd)
    try:
        map_ids(pid, ask_r, answer_w)
    except OSError:
        pass  # the child died first: its result says so
    for fd in (ask_r, answer_w):
        os.close(fd)
    status, chunks, wait_status = _read_result(pid, read_fd, started + timeout, init)
    kill_descendants(init.get("sandboxed"))
    header = _call_header(status, wait_status, started, err_path)
    shutil.rmtree(private, ignore_errors=True)
    return header, b"".join(chunks) if status == "ok" else b""


def _enter_call(call, init, base, private, err_path, write_fd, ask_w, answer_r):
    """In the forked child: its own process group and namespaces, the page cache closed, the
    standard streams on /dev/null and its stderr file, every other descriptor but ``write_fd``
    closed, a HOME (and TMPDIR) of its own, the call's seed, plain streams, and the clock and
    modules as ``base`` left them. Raises whatever fails; the caller exits 71 then."""
    os.setpgid(0, 0)
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    null = os.open(os.devnull, os.O_RDWR)
    err = os.open(err_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # before /tmp is its own
    keep = [init["root"], *init["import_paths"], *init.get("site_dirs", []), *sys.path, sys.prefix,
            sys.base_prefix, sys.exec_prefix, os.path.dirname(os.path.realpath(sys.executable))]
    made = own_namespaces(ask_w, answer_r, keep, init.get("readonly") or ())
    close_page_cache(init.get("page_cache_filter"))
    os.close(ask_w)
    os.close(answer_r)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.dup2(err, 2)
    os.closerange(3, write_fd)
    os.closerange(write_fd + 1, 1 << 16)
    work = os.path.join("/tmp" if made == "all" else private, os.path.basename(private), "work")
    os.makedirs(os.path.join(work, "tmp"))
    os.environ["HOME"] = work
    if made == "all":  # /tmp is the call's own: no TMPDIR, as in most shells
        os.environ.pop("TMPDIR", None)
    else:  # a folder of its own, but never HOME itself (HOME == TMPDIR says "a harness")
        os.environ["TMPDIR"] = os.path.join(work, "tmp")
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # the server's handler is no subject's
    tempfile.tempdir = None
    tempfile._name_sequence = None  # made by the server's mkdtemp; a fresh interpreter has none
    random.seed(call.get("seed", 0))
    _plain_main()
    for name in ("stdin", "stdout", "stderr"):
        stream = open(getattr(sys, f"__{name}__").fileno(), "w" if name != "stdin" else "r",
                      closefd=False, encoding="utf-8",  # errors as a plain interpreter's
                      errors="backslashreplace" if name == "stderr" else "strict")
        stream.buffer.raw.name = f"<{name}>"  # as the interpreter names its own: a number says "reopened"
        setattr(sys, name, stream)
        setattr(sys, f"__{name}__", stream)  # sys.stdout == sys.__stdout__, as in any plain interpreter
    _pin(base)


def _read_result(pid, read_fd, deadline, init):
    """Read the child's result from ``read_fd`` until EOF, the ``deadline`` (uptime seconds) or
    the byte cap; reap the child. Returns (status: ok, timeout or over_cap; the chunks read;
    its wait status). A child past its time or cap is killed with its process group."""
    chunks, size, status = [], 0, "ok"
    wait_status = None
    while True:
        left = deadline - uptime()
        if left <= 0:
            status = "timeout"
            break
        if not select.select([read_fd], [], [], min(left, 0.05))[0]:
            if wait_status is None:
                done, code = os.waitpid(pid, os.WNOHANG)
                if done:  # the call is over; what it left running may still hold the pipe open
                    wait_status = code
                    kill_descendants(init.get("sandboxed"))
            continue
        chunk = os.read(read_fd, 1 << 20)
        if not chunk:
            break
        size += len(chunk)
        if size > init.get("max_bytes", MAX_BYTES):
            status = "over_cap"
            break
        chunks.append(chunk)
    os.close(read_fd)
    if status != "ok" and wait_status is None:
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass
    if wait_status is None:
        _, wait_status = os.waitpid(pid, 0)
    return status, chunks, wait_status


def _call_header(status, wait_status, started, err_path):
    """The call's result header: its status (``died`` for an ok read of a child that exited
    non-zero or by a signal), seconds since ``started``, exit code or signal, and the tail of
    its stderr when it did not end ok."""
    header = {"status": status, "seconds": max(0.0, uptime() - started)}
    if os.WIFSIGNALED(wait_status):
        header["signal"] = os.WTERMSIG(wait_status)
    else:
        header["exit"] = os.WEXITSTATUS(wait_status)
    if status == "ok" and (header.get("exit") != 0 or "signal" in header):
        header["status"] = "died"
    if header["status"] != "ok":
        header["stderr"] = _stderr_tail(err_path)
    return header


def _given_corpus(control):
    """The corpus rows the judge sends after the init frame (``{"op": "input", "size": n}``
    and n bytes of marshal data: the rows it decoded, so that a server loads them in a fifth
    of the time a CSV parse takes), or None when the judge says to read the file
    (``{"op": "input", "read": true}``). Raises ValueError for data that is not a list."""
    import marshal
    frame = _read_frame(control)
    if not isinstance(frame, dict) or frame.get("op") != "input":
        raise ValueError("the judge sent no input frame")
    if frame.get("read"):
        return None
    data = control.read(int(frame["size"]))
    rows = marshal.loads(data)
    if type(rows) is not list:
        raise ValueError("the judge's rows are not a list")
    return rows


def _add_site_dirs(dirs, skip):
    import site
    known = set()
    for entry in dirs:
        if not os.path.isdir(entry):
            continue
        sys.path.append(entry)
        known.add(entry)
        for name in sorted(os.listdir(entry)):
            if name.endswith(".pth") and name not in skip:
                site.addpackage(entry, name, known)


def _on_parent_death(signum, frame):
    kill_descendants(_SANDBOXED[0])
    os._exit(1)


def main():
    kept = {n: os.environ[n] for n in C_ONLY if n in os.environ}
    for name in [n for n in os.environ if n in ("PYTHONHASHSEED", "LD_PRELOAD") or n.startswith("FAKETIME")]:
        os.environ.pop(name, None)  # read at start; a subject must not see them
    for name, value in kept.items():
        _setenv_c(name, value)
    _disguise(os.path.basename(sys.executable))
    for script in {sys.argv[0], os.path.abspath(sys.argv[0])}:  # the interpreter asked whether main.pyc is a
        sys.path_importer_cache.pop(script, None)  # zip or a folder; a python -c program has no script to ask of
    control = sys.stdin.buffer  # fd 0 and 1 are one socket: /proc/<pid>/fd cannot reopen a socket
    out = os.fdopen(os.dup(1), "wb")
    _prctl(PR_SET_DUMPABLE, 0)  # nothing without CAP_SYS_PTRACE reads this process's memory or fds
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    signal.signal(signal.SIGTERM, _on_parent_death)
    _prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    _site_builtins()
    init = _read_frame(control)
    if init is None or (init.get("parent") and os.getppid() != init["parent"]):
        return 1
    _SANDBOXED[0] = bool(init.get("sandboxed"))
    # what each call's wipe of the sandbox's /tmp and /dev/shm leaves: the scratch and the binds
    init["kept_shared"] = (init["scratch"], *mount_points(SHARED)) if init.get("sandboxed") else ()
    init["page_cache_filter"] = page_cache_filter(os.uname().machine)
    init["stdlib_count"] = len(sys.path)
    _add_site_dirs(init.get("site_dirs", []), set(init.get("skip_pth", [])))
    os.chdir(init["root"])
    try:
        if init.get("input_kind") == "lease":
            base = _given_corpus(control) if init.get("input_frame") else None
            base = read_corpus(init["input"]) if base is None else base
        elif init.get("input_kind") == "seeds":
            base = read_seeds(init["input"])
        else:
            base = None
        init["flat_rows"] = init.get("input_kind") == "lease" and _csv_rows(init["input"], base)
        _send(out, {"status": "ready", "records": len(base) if isinstance(base, list) else 0,
                    "python": sys.version.split()[0], "clock": time.time()})
    except Exception as exc:
        _send(out, {"status": "input_error", "error": f"{type(exc).__name__}: {exc}"[:500]})
        return 1
    for name in COMMON_MODULES:  # what an ordinary test run has loaded anyway: not paid per call
        try:
            __import__(name)
        except ImportError:
            pass
    _PRELOADED.update((key, getattr(module, "__file__", None)) for key, module in list(sys.modules.items()))
    gc.freeze()  # the corpus stays shared with the children: the collector must not touch it
    kept = None  # [token, value]: the decoded output of the last call made with "keep"
    while True:
        frame = _read_frame(control)
        if frame is None:
            return 0
        if frame.get("op") == "close":
            return 0
        call = frame["call"]
        if init.get("input_kind") == "seeds" and "seed_row" in call:
            item = base[call["seed_row"]]
        else:
            item = base
        wanted = [op[1] for op in call.get("ops", []) if op[:1] == ["kept"]]
        if wanted and (kept is None or wanted != [kept[0]]):
            _send(out, {"status": "lost", "id": frame.get("id")})
            continue
        header, payload = serve_call(call, init, item, float(frame.get("timeout", 120)),
                                     [kept[1]] if wanted else None)
        kept = None
        if call.get("keep") and header["status"] == "ok":
            kept, payload = keep_output(call["keep"], payload)
            header["kept"] = kept is not None
            if kept is not None:  # what the judge checks of an output it does not see
                header["kept_type"] = kept_type(kept[1])
                header["kept_is_input"] = is_input(kept[1], item, call.get("ops", []))
        header["id"] = frame.get("id")
        _send(out, header, payload)
        # what the call left is removed while the judge reads its answer, before the next call
        wipe_scratch(init["scratch"])
        if init.get("sandboxed"):
            wipe_shared(init["kept_shared"])
            remove_sysv_ipc()


def _entry():
    """``main``'s exit code, or the job of a forked child (after every server frame is gone)."""
    try:
        return main(), None
    except Forked as forked:
        return 0, forked.job


if __name__ == "__main__":
    _code, _job = _entry()
    if _job is not None:
        child(_job)
    sys.exit(_code)
