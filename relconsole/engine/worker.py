"""Worker process that evaluates one relation on one materialised tree.

Run as ``python -m relconsole.engine.worker`` with a JSON request on stdin:
``{"root", "import_paths", "relation", "input": {"kind": "lease"|"seeds", "path"},
"seed", "clock"}``. Writes one JSON line on stdout: ``{"held", "source", "followup",
"differing", "note"}`` or ``{"error": {"type", "message"}}``. Subject code runs here,
never in the console's process, so a crash or a hang cannot take the console down.
"""

from __future__ import annotations

import csv
import datetime as dt
import gzip
import io
import json
import os
import random
import sys
import time
import traceback


def read_corpus(path: str) -> list:
    """Rows of a CSV (header row; values as strings) or JSON-lines corpus, gzip or not."""
    opener = gzip.open if path.endswith(".gz") else open
    stem = path[:-3] if path.endswith(".gz") else path
    with opener(path, "rt", encoding="utf-8", newline="") as handle:
        if stem.endswith((".jsonl", ".ndjson")):
            return [json.loads(line) for line in handle if line.strip()]
        return list(csv.DictReader(handle))


def read_seeds(path: str) -> list:
    """One JSON value per non-blank line of a seeds file."""
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def freeze_clock(instant: str) -> None:
    """Make ``time.time``, ``datetime.now`` and friends return ``instant`` (ISO 8601).

    Installed before the subject is imported, so ``from datetime import datetime`` in
    the subject gets the frozen class; monotonic clocks keep running (timeouts need
    them). Naive "local" times are UTC: the worker runs with TZ=UTC.
    """
    moment = dt.datetime.fromisoformat(instant)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.timezone.utc)
    epoch = moment.timestamp()
    real = dt.datetime

    class FrozenDatetime(real):
        @classmethod
        def now(cls, tz=None):
            value = moment.astimezone(tz) if tz else moment.astimezone(dt.timezone.utc).replace(tzinfo=None)
            return cls.combine(value.date(), value.timetz() if tz else value.time())

        @classmethod
        def utcnow(cls):
            return cls.now(dt.timezone.utc).replace(tzinfo=None)

        @classmethod
        def today(cls):
            return cls.now()

    class FrozenDate(dt.date):
        @classmethod
        def today(cls):
            return cls.fromordinal(moment.astimezone(dt.timezone.utc).date().toordinal())

    dt.datetime, dt.date = FrozenDatetime, FrozenDate
    gmtime, localtime, ctime = time.gmtime, time.localtime, time.ctime
    time.time = lambda: epoch
    time.time_ns = lambda: int(epoch * 1_000_000_000)
    time.gmtime = lambda secs=None: gmtime(epoch if secs is None else secs)
    time.localtime = lambda secs=None: localtime(epoch if secs is None else secs)
    time.ctime = lambda secs=None: ctime(epoch if secs is None else secs)


def main() -> int:
    request = json.load(sys.stdin)
    if request.get("clock"):
        freeze_clock(request["clock"])
    os.chdir(request["root"])
    for entry in reversed(request["import_paths"]):
        sys.path.insert(0, entry)
    random.seed(request.get("seed", 0))
    from relconsole.engine.relations import evaluate

    source = request["input"]
    inputs = [read_corpus(source["path"])] if source["kind"] == "lease" else read_seeds(source["path"])
    real_stdout = sys.stdout
    sys.stdout = io.StringIO()  # a chatty subject must not corrupt the reply
    try:
        outcome = evaluate(request["relation"], inputs, request.get("seed", 0))
        reply = {"held": outcome.held, "source": outcome.source, "followup": outcome.followup,
                 "differing": outcome.differing, "note": outcome.note}
    except Exception as exc:  # the subject's failure is the result, not a worker crash
        frames = traceback.extract_tb(exc.__traceback__)
        where = f"{os.path.basename(frames[-1].filename)}:{frames[-1].lineno}" if frames else ""
        reply = {"error": {"type": type(exc).__name__, "message": str(exc)[:2000], "where": where}}
    sys.stdout = real_stdout
    sys.stdout.write(json.dumps(reply, default=repr) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
