"""The judge: a worker process that evaluates relations on one materialised tree (SPEC §7).

Run as ``python -P -m relconsole.engine.relations.worker`` from a scratch folder. It reads one JSON
request per line on stdin (or ``{"op": "reset"}``: forget the tree, ``forget_tree``, answered
``{"reset": true}``): ``{"root", "import_paths", "relation", "input": {"kind":
"lease"|"seeds", "path"}, "seed", "clock", "protected", "sandbox", "timeout"}``, and answers
each with one JSON line: ``{"held", "source", "followup", "differing", "note", "vacuous",
...}`` or ``{"error": {"type", "message", "where", "files"}, ...}`` or ``{"blocked": why,
...}``, every reply also carrying ``run``: ``{"sandbox", "hashseed", "clock", "order",
"imported"}`` and, when the input could be read, ``inputs`` (``describe.describe_inputs``).

No code from the reviewed tree runs here. Subject calls go to a fork server
(``engine.relations.subject``) as data and come back as data; only the base oracle's data adapters
(``merge``) are imported here, from the tree's protected files and nothing else of it (a merge
whose module or call imports a module of the tree is refused: ``oracleimport.load_merge``). A
worker keeps each corpus it has read and one fork server per input file.
"""

from __future__ import annotations

import io
import json
import os
import random
import sys
import traceback

from relconsole.engine.relations.oracleimport import (AdapterRefused, OracleFinder, TreeImportRefused, load_merge,
                                                     module_entry, oracle_roots, top_entry)
from relconsole.engine.relations.replies import outcome_reply
from relconsole.engine.relations.servercalls import ServerCalls, other_seed
from relconsole.engine.relations.subject.inputs import read_corpus, read_seeds
from relconsole.engine.relations.subject.wire import encode
from relconsole.engine.literal import counted
from relconsole.engine.docsref import see

_prctl_done = False


def _die_with_parent() -> None:
    """SIGKILL this worker when the process that started it dies (Linux ``PR_SET_PDEATHSIG``),
    and make it undumpable (``PR_SET_DUMPABLE`` 0): a subject without CAP_SYS_PTRACE cannot
    read its memory or open its descriptors through /proc."""
    try:
        import ctypes
        import signal
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)
        libc.prctl(4, 0, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def subject_seed(run_seed: int) -> int:
    """The seed of the subject's own ``random`` module in every call of a run: derived from
    the run seed (so a recorded run replays), never equal to the judge's draws from it."""
    return random.Random(f"subject {run_seed}").getrandbits(32)



class Server:
    """Answers requests for one tree; keeps the corpora it has read and a fork server per input."""

    def __init__(self):
        self.root: str | None = None
        self.corpora: dict[str, list] = {}
        self.wire_corpora: dict[str, bytes | None] = {}  # each corpus's rows as marshal bytes, for the servers
        self.servers: dict[tuple, object] = {}
        self.spares: dict[tuple, object] = {}  # a booted server for the next rerun of that input
        self.finder: OracleFinder | None = None

    def enter(self, request: dict) -> None:
        if self.root is None:
            self.root = request["root"]
            self.finder = OracleFinder(self.root)
            sys.meta_path.insert(0, self.finder)
        elif request["root"] != self.root:
            raise RuntimeError(f"this worker serves {self.root}, not {request['root']}")

    def inputs(self, source: dict) -> list:
        if source["path"] not in self.corpora:
            rows = read_corpus(source["path"]) if source["kind"] == "lease" else read_seeds(source["path"])
            self.corpora[source["path"]] = rows
        rows = self.corpora[source["path"]]
        return [rows] if source["kind"] == "lease" else rows

    @staticmethod
    def _server_key(request: dict) -> tuple:
        source = request["input"]
        return (source["kind"], source["path"], request.get("clock"), bool(request.get("clock_day")),
                request.get("clock_today"), request.get("sandbox", "auto"),
                request.get("hashseed"), request.get("checkout"),
                tuple(sorted((request.get("env") or {}).items())), tuple(request["import_paths"]))

    def _new_server(self, request: dict, hashseed: int | None = None, beside=None):
        """A fork server for the request's input; ``beside``: a first server whose clock instant
        this one stands at (a run's second server)."""
        from relconsole.engine.relations.subject.server import ForkServer
        source = request["input"]
        checkout = f"/src/{request['checkout']}" if request.get("checkout") else None
        clock = {"clock": beside.instant} if beside is not None else {
            "clock": request.get("clock"), "clock_day": bool(request.get("clock_day")),
            "clock_today": request.get("clock_today")}
        server = ForkServer(self.root, request["import_paths"], source["kind"], source["path"], **clock,
                            sandbox=request.get("sandbox", "auto"), hashseed=hashseed,
                            checkout=checkout, extra_env=request.get("env") or {}, input_given=True,
                            readonly=request.get("readonly") or [])
        if source["path"] in self.wire_corpora:
            server.give_input(self.wire_corpora[source["path"]])
        return server

    def feed(self, source: dict, servers) -> None:
        """Send each server that waits for it the corpus as this judge read it (its rows in
        marshal bytes: a server loads them in a fifth of a CSV parse, so a run's second
        server and a rerun's own cost little more than their interpreters); a corpus marshal
        cannot write is read by each server from the file."""
        if source["kind"] != "lease":
            return
        path = source["path"]
        if path not in self.wire_corpora:
            import marshal
            try:
                self.wire_corpora[path] = marshal.dumps(self.corpora[path])
            except ValueError:
                self.wire_corpora[path] = None
        for server in servers:
            if server is not None:
                server.give_input(self.wire_corpora[path])

    def fork_server(self, request: dict):
        """The fork server for the request's input: the worker's own, kept across requests,
        or with ``fresh_server`` (a rerun, a run of its own) a new one with its own hash seed:
        the spare booted for it if there is one, closed by the caller after the request."""
        key = self._server_key(request)
        if request.get("fresh_server"):
            server = self.spares.pop(key, None)
            return server if server is not None and server.proc.poll() is None else self._new_server(request)
        server = self.servers.get(key)
        if server is None or server.proc.poll() is not None:
            server = self.servers[key] = self._new_server(request, request.get("hashseed"))
        return server

    def _second_key(self, request: dict, first) -> tuple:
        return (*self._server_key(request), "second", first.hashseed)

    def second_server(self, request: dict, first):
        """The run's second fork server for the request's input: another PYTHONHASHSEED (derived
        from ``first``'s, so a replayed seed replays both), the same clock instant. Kept beside
        the first (a fresh one beside a fresh first, closed with it)."""
        key = self._second_key(request, first)
        server = self.servers.get(key)
        if server is None or server.proc.poll() is not None:
            from relconsole.engine.relations.subject.environment import other_hashseed
            server = self.servers[key] = self._new_server(request, other_hashseed(first.hashseed), beside=first)
        return server

    def boot_spare(self, request: dict, server) -> None:
        """With ``spare`` (reruns of this input follow): once ``server`` has started, boot a
        new server for the next ``fresh_server`` request, and the second server beside it
        (``second_server`` finds it), while this request's calls run."""
        key = self._server_key(request)
        if request.get("spare") and key not in self.spares:
            server.ready()
            spare = self.spares[key] = self._new_server(request)
            if not request.get("imports_only"):
                from relconsole.engine.relations.subject.environment import other_hashseed
                self.servers[self._second_key(request, spare)] = self._new_server(
                    request, other_hashseed(spare.hashseed), beside=spare)

    def merge_adapter(self, relation: dict, import_paths: list[str]):
        """The relation's merge adapter (``oracleimport.load_merge``), or None."""
        ref = relation.get("merge")
        return load_merge(str(ref), self.finder, import_paths) if ref else None

    def classify(self, error: dict, request: dict) -> dict:
        """The error as the record keeps it. A module neither in the tree nor installed is an
        environment fault (abort, §7), not the patch's miss. A module of the tree's own packages
        that this tree lacks stays a miss (the patch may have removed it), said with a hint: a
        module the build generates is declared in ``[tool.relconsole] generated``; when the
        merge base lacks it too, the base check makes it an environment fault."""
        error = dict(error, files=list(error.get("files") or []))
        module = error.get("module")
        if error.get("type") == "ModuleNotFoundError" and isinstance(module, str) and module:
            roots = [str(root) for root in request.get("import_paths") or [self.root]]
            top = module.split(".", 1)[0]
            if not any(top_entry(root, top) for root in roots):
                error.update(type="environment", message=(
                    f"the subject imports {module!r}, which is neither in the tree nor installed here: "
                    f"install the package that provides it (pip install {top}, or its distribution's name); "
                    "an environment fault, not the patch's"))
            elif not any(module_entry(root, module) for root in roots):
                error.update(message=f"{error.get('message', '')}: {module!r} is not in this commit's tree; if the "
                                     "build generates it (a version file), give its text in [tool.relconsole] "
                                     f"generated ({see('layout', 'generated-modules')})")
        return error

    def tree_files(self, frames) -> list[str]:
        """Tree-relative paths of the traceback's frames inside the tree, innermost last."""
        root = os.path.realpath(self.root or ".")
        out = []
        for frame in frames:
            path = os.path.realpath(frame.filename)
            if path.startswith(root + os.sep):
                out.append(os.path.relpath(path, root).replace(os.sep, "/"))
        return out

    def answer(self, request: dict) -> dict:
        """One reply line's mapping for one request (see the module docstring)."""
        import time

        import functools

        from relconsole.engine.relations.describe import describe_inputs, scale_of
        from relconsole.engine.relations.drawnrun import DrawnRun, with_drawn
        from relconsole.engine.relations.kinds import evaluate
        from relconsole.engine.relations.outcome import SubjectFailed
        from relconsole.engine.relations.subject.inputs import pack_order

        def wire(value) -> str:
            return encode(value).decode("utf-8")

        seed = int(request.get("seed", 0))
        # a second call only says "state" when the clock stands: under a real one, time moved
        log = {"order": [], "imported": set(), "subject_seed": subject_seed(seed), "repeat": bool(request.get("clock"))}
        run = {"sandbox": None, "hashseed": None, "clock": None}
        summary = None
        relation = request["relation"]
        fresh: list = []  # a rerun's own server, closed with its request
        try:
            server, second, inputs = self.fed_servers(request, fresh)
            corpus = request["input"]["kind"] == "lease"
            summary = describe_inputs(relation, inputs, seed, corpus)
            file_inputs = inputs
            scale = scale_of(relation) if corpus else 0
            labels = None
            if scale:  # the corpus, then the corpus repeated: a path for large inputs is judged too
                inputs = [inputs[0], inputs[0] * scale]
                labels = ["", f"corpus repeated {counted(scale, 'time')}, {counted(len(inputs[1]), 'row')}"]
            run.update(sandbox=server.sandbox, hashseed=server.hashseed, clock=server.clock,
                       frozen_at=server.frozen_at)
            if second is not None:
                run["hashseed_second"] = second.hashseed
            merge = self.merge_adapter(relation, request["import_paths"])
            order_rng = random.Random(f"order {seed}")
            deadline = time.monotonic() + float(request.get("timeout") or 120)

            wanted = _lines_wanted(request.get("record_lines", True))

            def calls_for(index: int) -> ServerCalls:
                return ServerCalls(server, relation, order_rng, deadline, log, None if corpus else index,
                                   prefix=[["scale", scale]] if corpus and index == 1 else None,
                                   oracle_roots=request["oracle_roots"], second=second,
                                   decoy=None if corpus else other_seed(inputs, index, seed), input_index=index,
                                   library=request.get("library") or [],
                                   record_lines=wanted)

            if request.get("imports_only"):  # one source call, for the files it imports (§3)
                try:
                    calls_for(0).raw({"ops": [], "mode": "store" if relation["kind"] == "replay_ingest" else "call"},
                                     "source")
                except SubjectFailed:
                    pass  # what it imported before it failed is kept all the same
                reply = {"held": True, "source": None, "followup": None, "differing": [], "note": "imports only"}
            else:
                def calls_with(ops: list, index: int) -> ServerCalls:
                    return ServerCalls(server, relation, order_rng, deadline, log, None if corpus else 0,
                                       prefix=ops, oracle_roots=request["oracle_roots"], second=second,
                                       input_index=index, library=request.get("library") or [],
                                       record_lines=wanted)

                drawn = DrawnRun(request, file_inputs, corpus, seed, calls_with,
                                 functools.partial(evaluate, merge=merge, wire=wire), wire, pack_order, log, deadline)
                if request.get("given"):
                    reply = drawn.given(request["given"])
                else:
                    outcome = evaluate(relation, inputs, seed, calls_for, merge=merge, wire=wire, labels=labels)
                    own_calls = len(log["order"])  # the run's order: its own input's calls; drawn ones counted
                    reply = with_drawn(outcome_reply(outcome), drawn.after(outcome, request.get("generate")))
                    run["drawn_calls"] = len(log["order"]) - own_calls
                    del log["order"][own_calls:]
        except Exception as exc:  # the subject's, the oracle's, the server's or the judge's own step's
            reply = self.failure_reply(exc, request)
        for server in fresh:
            server.close()
        run.update(order=log["order"], imported=sorted(log["imported"]),
                   executed={path: sorted(lines) for path, lines in sorted(log.get("executed", {}).items())})
        if log.get("elsewhere") is not None:
            run["second_server_call"] = log["elsewhere"]
        reply["run"] = run
        if summary is not None:
            reply["inputs"] = summary
        return reply

    def fed_servers(self, request: dict, fresh: list) -> tuple:
        """``(server, second, inputs)`` for ``request``: its fork server, the second one under
        another hash seed (None for ``imports_only``), both fed the input, and the input values
        (``inputs``); a rerun's own servers (``fresh_server``) are added to ``fresh``, for the
        caller to close. Raises AdapterRefused and ServerFault."""
        self.enter(request)
        request["oracle_roots"] = oracle_roots(request["relation"], self.root,
                                               list(request.get("protected") or ["oracle/**"]))
        server = self.fork_server(request)  # it reads the input while this process reads its own copy
        second = None if request.get("imports_only") else self.second_server(request, server)
        if request.get("fresh_server"):
            fresh.append(server)
            if second is not None:
                fresh.append(self.servers.pop(self._second_key(request, server)))
        inputs = self.inputs(request["input"])
        self.feed(request["input"], (server, second))
        self.boot_spare(request, server)
        return server, second, inputs

    def failure_reply(self, exc: Exception, request: dict) -> dict:
        """The reply mapping for a request that raised ``exc``: ``blocked`` (a type that needs
        a canon: adapter, an adapter outside the oracle's protected files) or ``error`` (the
        subject's failure, classified; the server's fault, ``environment``; the judge's own
        step on the oracle's data, a merge adapter that raised)."""
        from relconsole.engine.relations.canon import NotComparable
        from relconsole.engine.relations.outcome import SubjectFailed
        from relconsole.engine.relations.subject.results import ServerFault

        if isinstance(exc, SubjectFailed):
            return {"blocked": exc.blocked} if exc.blocked else {"error": self.classify(exc.error, request)}
        if isinstance(exc, (AdapterRefused, NotComparable)):
            text = f"declare how to compare {exc.args[0]} (a canon: adapter in the catalog maps it to data)" \
                if isinstance(exc, NotComparable) else str(exc)
            return {"blocked": text}
        if isinstance(exc, ServerFault):
            return {"error": {"type": "environment", "message": str(exc), "where": "", "files": []}}
        if isinstance(exc, TreeImportRefused):
            return {"error": {"type": "oracle_fault", "message": str(exc), "where": "", "files": []}}
        frames = traceback.extract_tb(exc.__traceback__)
        if isinstance(exc, ImportError) and not self.tree_files(frames):  # relconsole's own install lacks it
            return {"error": {"type": "environment", "where": "", "files": [], "message": (
                f"relconsole's judge could not import {getattr(exc, 'name', None) or exc}: reinstall relconsole "
                "with its dependencies; an environment fault, not the patch's")}}
        where = f"{os.path.basename(frames[-1].filename)}:{frames[-1].lineno}" if frames else ""
        return {"error": {"type": type(exc).__name__, "message": str(exc)[:2000], "where": where,
                          "files": self.tree_files(frames)}}

    def close(self) -> None:
        for server in [*self.servers.values(), *self.spares.values()]:
            server.close()


def _lines_wanted(sent) -> "bool | list":
    """``RunPlan.record_lines`` as the judge sent it: False, a list of ``[tree path, [line, ...],
    [call-only entry, ...]]`` rows (only those lines; an entry is a line or ``[line, code
    name]``), or True (every line) for anything else."""
    if sent is False:
        return False
    if isinstance(sent, list) and all(isinstance(row, list) and len(row) in (2, 3) and isinstance(row[0], str)
                                      and all(isinstance(part, list) for part in row[1:]) for row in sent):
        return [[row[0], [n for n in row[1] if isinstance(n, int)],
                 *([e for e in part if isinstance(e, int) or isinstance(e, list) and len(e) == 2
                    and isinstance(e[0], int) and isinstance(e[1], str)] for part in row[2:])] for row in sent]
    return True

def forget_tree(server: Server) -> Server:
    """A new ``Server`` for the next tree a pool gives this worker: ``server``'s fork servers
    and spares closed, its decoded inputs dropped, its oracle finder off ``sys.meta_path`` and
    every module imported from its tree (the oracle's adapters) dropped from ``sys.modules``,
    so no state of one tree's oracle (an import-time draw, a cache) reaches a run on the next.
    The judge's own modules stay loaded: they are what a worker's start costs."""
    server.close()
    if server.finder is not None and server.finder in sys.meta_path:
        sys.meta_path.remove(server.finder)
    if server.root is not None:
        import importlib
        roots = (os.path.realpath(server.root) + os.sep, os.path.abspath(server.root) + os.sep)
        names = server.finder.names if server.finder is not None else set()
        for name, module in list(sys.modules.items()):
            places = [getattr(module, "__file__", None), *(getattr(module, "__path__", None) or [])]
            if name.partition(".")[0] in names or any(
                    isinstance(p, str) and (os.path.abspath(p).startswith(roots) or os.path.realpath(p).startswith(roots))
                    for p in places):
                del sys.modules[name]
        for key in [k for k in sys.path_importer_cache if isinstance(k, str)
                    and (os.path.realpath(k) + os.sep).startswith(roots)]:
            del sys.path_importer_cache[key]
        importlib.invalidate_caches()
    return Server()


def _warm_up() -> None:
    """What every request needs, loaded before the first one arrives (a worker is started
    while the review is still loading): the judge's modules and the sandbox probe."""
    import relconsole.engine.relations.canon  # noqa: F401
    import relconsole.engine.repo.owners  # noqa: F401
    import relconsole.engine.relations.describe  # noqa: F401
    import relconsole.engine.relations.kinds  # noqa: F401
    from relconsole.engine.relations.subject.script import harness_pyc
    from relconsole.engine.relations.subject.server import bwrap_path
    bwrap_path()
    harness_pyc()


def main() -> int:
    _die_with_parent()
    replies = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = io.TextIOWrapper(os.fdopen(1, "wb", closefd=False), encoding="utf-8", line_buffering=True)
    _warm_up()
    sys.dont_write_bytecode = True  # from here on imports come from trees: never a __pycache__ in one
    server = Server()
    try:
        for line in sys.stdin:
            if not line.strip():
                continue
            request = json.loads(line)
            if request.get("op") == "reset":  # a pool for another tree takes this worker
                server = forget_tree(server)
                reply = {"reset": True}
            else:
                reply = server.answer(request)
            replies.write(json.dumps(reply, default=repr) + "\n")
            replies.flush()
    finally:
        server.close()
    return 0


if __name__ == "__main__":
    _code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # nothing is left to save (servers closed, replies flushed); the interpreter's teardown of
    # every module took a worker 30-60 ms, all of it on the judge's way to its report
    os._exit(_code)


def evaluate_values(relation: dict, inputs: list, seed: int, root, import_paths: list[str],
                    protected: tuple[str, ...] = ("oracle/**",), sandbox: str = "auto", timeout: float = 120.0,
                    clock: str | None = None):
    """``relations.evaluate`` of ``relation`` on ``inputs`` given as values (not read from a
    file), in this process as the judge, with the subject in a fork server on ``root``.

    ``inputs`` as ``evaluate`` takes them (``[rows]`` or one value per seed), sent to each
    call on the wire. Returns ``(Outcome, run)`` with ``run`` the sandbox, hash seed, call
    order and imported files. Raises SubjectFailed, AdapterRefused, ServerFault and what
    the judge's own steps raise.
    """
    import time

    from relconsole.engine.relations.kinds import evaluate
    from relconsole.engine.relations.subject.server import ForkServer

    root = str(root)
    roots = oracle_roots(relation, root, list(protected))
    server = ForkServer(root, import_paths, None, None, clock=clock, sandbox=sandbox)
    log = {"order": [], "imported": set(), "subject_seed": subject_seed(seed), "repeat": bool(clock)}
    finder = OracleFinder(root)
    sys.meta_path.insert(0, finder)
    try:
        merge = load_merge(str(relation["merge"]), finder, import_paths) if relation.get("merge") else None
        order_rng = random.Random(f"order {seed}")
        deadline = time.monotonic() + timeout

        def calls_for(index: int) -> ServerCalls:
            return ServerCalls(server, relation, order_rng, deadline, log, oracle_roots=roots,
                               prefix=[["value", encode(inputs[index]).decode("utf-8")]],
                               decoy=other_seed(inputs, index, seed), input_index=index)

        outcome = evaluate(relation, inputs, seed, calls_for, merge=merge,
                           wire=lambda value: encode(value).decode("utf-8"))
        return outcome, {"sandbox": server.sandbox, "hashseed": server.hashseed, "order": log["order"],
                         "imported": sorted(log["imported"])}
    finally:
        sys.meta_path.remove(finder)
        server.close()

