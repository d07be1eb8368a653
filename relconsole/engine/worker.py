"""Worker process that evaluates relations on one materialised tree.

Run as ``python -m relconsole.engine.worker``. It reads one JSON request per line on
stdin: ``{"root", "import_paths", "relation", "input": {"kind": "lease"|"seeds",
"path"}, "seed", "clock"}``, and answers each with one JSON line:
``{"held", "source", "followup", "differing", "note", "inputs"}`` or ``{"error": {"type",
"message", "where"}, "inputs"}`` (``inputs``: the small summary of
``relations.describe_inputs``, absent when the input could not be read). A worker serves one tree for its whole life and keeps each
corpus it has read (a 336k-row corpus is read once, not once per relation).

Subject code runs here, never in the console's process, so a crash or a hang costs
this process only; the parent (``runner.WorkerPool``) kills and replaces it.
"""

from __future__ import annotations

import csv
import datetime as dt
import gc
import gzip
import importlib.abc
import importlib.machinery
import io
import json
import marshal
import os
import random
import sys
import time
import traceback

_REAL_DATETIME, _REAL_DATE = dt.datetime, dt.date
_REAL = {name: getattr(time, name) for name in ("time", "time_ns", "gmtime", "localtime", "ctime",
                                                 "strftime", "asctime")}
_FROZEN: list[float | None] = [None]  # the epoch seconds the clock is frozen at, or None


def read_corpus(path: str) -> list:
    """Rows of a CSV (header row; values as strings) or JSON-lines corpus, gzip or not.

    The file is decoded as a stream; rows are dicts as ``csv.DictReader`` gives them.
    """
    opener = gzip.open if path.endswith(".gz") else open
    stem = path[:-3] if path.endswith(".gz") else path
    with opener(path, "rt", encoding="utf-8", newline="") as handle:
        if stem.endswith((".jsonl", ".ndjson")):
            return [json.loads(line) for line in handle if line.strip()]
        reader = csv.reader(handle)
        header = next(reader, [])
        width = len(header)
        # zip is several times faster than DictReader; ragged rows keep DictReader's rules
        return [dict(zip(header, row)) if len(row) == width else _ragged(header, row)
                for row in reader if row]


def _ragged(header: list[str], row: list[str]) -> dict:
    """A short row padded with None, a long one with its extra cells under None (as DictReader)."""
    out = dict(zip(header, row + [None] * (len(header) - len(row))))
    if len(row) > len(header):
        out[None] = row[len(header):]
    return out


def read_seeds(path: str) -> list:
    """One JSON value per non-blank line of a seeds file."""
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


class _FrozenDatetime(_REAL_DATETIME):
    @classmethod
    def now(cls, tz=None):
        if _FROZEN[0] is None:
            return _REAL_DATETIME.now(tz) if tz else _REAL_DATETIME.now()
        moment = _REAL_DATETIME.fromtimestamp(_FROZEN[0], tz or dt.timezone.utc)
        value = moment if tz else moment.replace(tzinfo=None)
        return cls.combine(value.date(), value.timetz() if tz else value.time())

    @classmethod
    def utcnow(cls):
        return cls.now(dt.timezone.utc).replace(tzinfo=None)

    @classmethod
    def today(cls):
        return cls.now()


class _FrozenDate(_REAL_DATE):
    @classmethod
    def today(cls):
        if _FROZEN[0] is None:
            return _REAL_DATE.today()
        return cls.fromordinal(_REAL_DATETIME.fromtimestamp(_FROZEN[0], dt.timezone.utc).toordinal())


def _now() -> float:
    return _REAL["time"]() if _FROZEN[0] is None else _FROZEN[0]


def install_clock() -> None:
    """Route the wall clock through ``_FROZEN`` (real time while it is None).

    Installed before any subject is imported, so ``from datetime import datetime`` in a
    subject gets the switchable class; monotonic clocks keep running (timeouts need
    them). Naive "local" times are UTC: the worker runs with TZ=UTC.
    """
    dt.datetime, dt.date = _FrozenDatetime, _FrozenDate
    time.time = _now
    time.time_ns = lambda: int(_now() * 1_000_000_000)
    for name in ("gmtime", "localtime", "ctime"):
        real = _REAL[name]
        setattr(time, name, lambda secs=None, real=real: real(_now() if secs is None else secs))
    localtime, strftime, asctime = time.localtime, _REAL["strftime"], _REAL["asctime"]
    time.strftime = lambda fmt, t=None: strftime(fmt, localtime() if t is None else t)
    time.asctime = lambda t=None: asctime(localtime() if t is None else t)


def set_clock(instant: str | None) -> None:
    """Freeze the clock at ``instant`` (ISO 8601; naive means UTC), or let it run (None)."""
    if instant is None:
        _FROZEN[0] = None
        return
    moment = _REAL_DATETIME.fromisoformat(instant)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.timezone.utc)
    _FROZEN[0] = moment.timestamp()


REPLY_LIMIT = 1 << 20  # bytes of one canonical output sent back in full


def trimmed(value, differing: list[str]):
    """``value`` when its JSON is small; else only the entries at the disagreeing keys.

    A roundtrip over a 336k-row corpus would otherwise send the whole corpus back twice.
    """
    text = json.dumps(value, default=repr)
    if len(text) <= REPLY_LIMIT:
        return value
    kept = {"(trimmed)": f"{len(text)} bytes; showing the disagreeing keys only"}
    for dotted in differing[:50]:
        node = value
        for part in dotted.split("."):
            if isinstance(node, dict) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                node = "(not found)"
                break
        kept[dotted] = node
    return kept


def _deep_copy(rows: list) -> list:
    """A full copy of corpus rows (JSON values): marshal round trip, many times faster than deepcopy."""
    return marshal.loads(marshal.dumps(rows))


class TreeFirst(importlib.abc.MetaPathFinder):
    """Finds the top-level modules a relation names in the tree's import paths first.

    Putting the tree first on ``sys.path`` is not enough: a regular package of the same
    name anywhere else on the path (an ``oracle/__init__.py`` of another project on
    PYTHONPATH) wins over the tree's ``oracle/`` directory without ``__init__.py`` (a
    namespace package). Only the names the relations' callables start with are looked up
    here, so the tree's other directories cannot shadow the standard library.
    """

    def __init__(self, paths: list[str]):
        self.paths = paths
        self.names: set[str] = set()

    def find_spec(self, name, path=None, target=None):
        if path is not None or name not in self.names:
            return None
        return importlib.machinery.PathFinder.find_spec(name, self.paths)


class Server:
    """Answers requests for one tree; keeps the corpora it has read."""

    def __init__(self):
        self.root: str | None = None
        self.corpora: dict[str, list] = {}
        self.finder: TreeFirst | None = None

    def enter(self, request: dict) -> None:
        if self.root is None:
            self.root = request["root"]
            os.chdir(self.root)
            for entry in reversed(request["import_paths"]):
                sys.path.insert(0, entry)
            self.finder = TreeFirst(list(request["import_paths"]))
            sys.meta_path.insert(0, self.finder)
        elif request["root"] != self.root:
            raise RuntimeError(f"this worker serves {self.root}, not {request['root']}")
        relation = request.get("relation") or {}
        self.finder.names |= {str(relation[role]).split(":", 1)[0].split(".", 1)[0]
                              for role in ("subject", "merge", "inverse", "transform") if relation.get(role)}

    def inputs(self, source: dict) -> list:
        if source["kind"] != "lease":
            return read_seeds(source["path"])
        if source["path"] not in self.corpora:
            rows = read_corpus(source["path"])
            self.corpora[source["path"]] = (rows, _deep_copy(rows))
            gc.freeze()  # millions of long-lived row objects: keep the collector from rescanning them
        return [self.corpora[source["path"]][0]]

    def check_untouched(self, source: dict) -> str | None:
        """Why the shared corpus rows changed during the run (restoring them), or None.

        Relations share the rows between source and follow-up runs and across
        relations, so a subject that edits a row in place would corrupt the evidence.
        """
        if source["kind"] != "lease":
            return None
        rows, pristine = self.corpora[source["path"]]
        if rows == pristine:  # element by element, nested values too, in C
            return None
        self.corpora[source["path"]] = (_deep_copy(pristine), pristine)
        return "the subject changed its input rows in place; a relation needs a subject that leaves its input alone"

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
        """One reply line's mapping for one request (see the module docstring); ``inputs``
        (``relations.describe_inputs``) is there whenever the input could be read."""
        from relconsole.engine.relations import describe_inputs, evaluate

        summary = None
        try:
            self.enter(request)
            set_clock(request.get("clock"))
            seed = request.get("seed", 0)
            random.seed(seed)
            inputs = self.inputs(request["input"])
            summary = describe_inputs(request["relation"], inputs, seed, request["input"]["kind"] == "lease")
            outcome = evaluate(request["relation"], inputs, seed)
            reply = {"held": outcome.held, "source": trimmed(outcome.source, outcome.differing),
                     "followup": trimmed(outcome.followup, outcome.differing),
                     "differing": outcome.differing, "note": outcome.note}
        except Exception as exc:  # the subject's failure is the result, not a worker crash
            frames = traceback.extract_tb(exc.__traceback__)
            where = f"{os.path.basename(frames[-1].filename)}:{frames[-1].lineno}" if frames else ""
            reply = {"error": {"type": type(exc).__name__, "message": str(exc)[:2000], "where": where,
                               "files": self.tree_files(frames)}}
        mutated = self.check_untouched(request["input"]) if request["input"]["path"] in self.corpora else None
        if mutated:
            reply = {"error": {"type": "InputMutated", "message": mutated, "where": ""}}
        if summary is not None:
            reply["inputs"] = summary
        return reply


def main() -> int:
    install_clock()
    replies = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # whatever a subject prints, even to fd 1, cannot corrupt the replies
    sys.stdout = io.TextIOWrapper(os.fdopen(1, "wb", closefd=False), encoding="utf-8", line_buffering=True)
    server = Server()
    for line in sys.stdin:
        if not line.strip():
            continue
        reply = server.answer(json.loads(line))
        replies.write(json.dumps(reply, default=repr) + "\n")
        replies.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
