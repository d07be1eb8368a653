"""The subject's wall clock: libfaketime found and checked on this machine, the instant it stands at (SPEC §7).

A relation with ``clock:`` runs with the subject's clock frozen at one instant, drawn within
``CLOCK_SPAN_DAYS`` of the clock given when the relation asks for a day (``clock_day``), so
that nothing the subject computes from "now" differs from run to run.
"""

from __future__ import annotations

import glob
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

FAKETIME_GLOBS = ("/usr/lib/*/faketime/libfaketime.so.1", "/usr/lib/faketime/libfaketime.so.1",
                  "/usr/local/lib/faketime/libfaketime.so.1")



def _faketime_candidates() -> list[str]:
    """libfaketime builds on this machine: the ``libfaketime`` package's (a dependency on
    Linux), then the system's (Debian ``faketime``)."""
    found = []
    spec = importlib.util.find_spec("libfaketime")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        found += sorted(glob.glob(os.path.join(folder, "vendor", "libfaketime", "src", "libfaketime.so.1")))
    for pattern in FAKETIME_GLOBS:
        found += sorted(glob.glob(pattern))
    return found


_PROBE = ("import datetime, threading, time\n"
          "time.sleep(0.01); threading.Event().wait(0.01)\n"
          "print(datetime.datetime.now().isoformat())\n")
_FAKETIME: list = []  # [(library, extra environment) or None], once per process


def faketime_setup() -> tuple[str, dict[str, str]] | None:
    """(library, extra variables) of a libfaketime that freezes the wall clock here and
    still lets ``time.sleep`` and timed waits return, or None. Builds differ (one needs
    ``FAKETIME_DONT_FAKE_MONOTONIC``, another breaks with it), so each is tried once in a
    throwaway interpreter; the answer is cached for the process and in the user's cache
    folder, keyed by the library's path, size and modification time."""
    if _FAKETIME:
        return _FAKETIME[0]
    cache_file = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "relconsole" / "faketime.json"
    try:
        cached = json.loads(cache_file.read_text())
    except (OSError, ValueError):
        cached = {}
    answer = None
    for library in _faketime_candidates():
        stat = os.stat(library)
        key = f"{library}:{stat.st_size}:{stat.st_mtime_ns}"
        if key in cached:
            if cached[key] is not None:
                answer = (library, dict(cached[key]))
                break
            continue
        cached[key] = None
        for extra in ({"FAKETIME_DONT_FAKE_MONOTONIC": "1"}, {}):  # the quick failure first
            env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "TZ": "UTC", "LD_PRELOAD": library,
                   "FAKETIME": "2001-02-03 04:05:06", **FAKETIME_FIXED, **extra}
            try:
                proc = subprocess.run([sys.executable, "-S", "-c", _PROBE], env=env, capture_output=True,
                                      text=True, timeout=3)
            except (OSError, subprocess.TimeoutExpired):
                continue
            if proc.returncode == 0 and proc.stdout.strip() == "2001-02-03T04:05:06":
                cached[key] = extra
                break
        if cached[key] is not None:
            answer = (library, dict(cached[key]))
            break
    try:
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        scratch = cache_file.with_suffix(f".{os.getpid()}.tmp")
        scratch.write_text(json.dumps(cached))
        os.replace(scratch, cache_file)
    except OSError:
        pass
    _FAKETIME.append(answer)
    return answer



# libfaketime reads FAKETIME again every 10 s by default: once the harness has taken it out of
# the environment (a subject must not see it) the clock would thaw, so it reads it once. And it
# re-reads FAKETIME_FORCE_MONOTONIC_FIX at every timed wait: on glibc >= 2.30 its default
# turns every timed wait of a thread into an immediate timeout (threaded code ran 10x slower);
# the harness keeps that one variable in the C environment only.
FAKETIME_FIXED = {"FAKETIME_CACHE_DURATION": "2000000000", "FAKETIME_FORCE_MONOTONIC_FIX": "0"}


CLOCK_SPAN_DAYS = 30


def clock_span(clock: str, today: str | None = None) -> tuple:
    """(first, last) naive UTC datetimes a drawn clock stands between: the ``CLOCK_SPAN_DAYS``
    days from the later of ``clock``'s day and ``today`` (ISO date, the review's). Raises
    ValueError for text that is not ISO."""
    import datetime as dt
    moment = dt.datetime.fromisoformat(clock)
    if moment.tzinfo is not None:
        moment = moment.astimezone(dt.timezone.utc).replace(tzinfo=None)
    first = moment.replace(hour=0, minute=0, second=0, microsecond=0)
    if today:
        first = max(first, dt.datetime.combine(dt.date.fromisoformat(today), dt.time()))
    return first, first + dt.timedelta(days=CLOCK_SPAN_DAYS)


def drawn_instant(clock: str, today: str | None = None) -> str:
    """An instant drawn from os.urandom (UTC, to the microsecond) in ``clock_span(clock, today)``.

    A clock standing at midnight of New Year's Day says "a harness" to anything that prints a
    time or a date (``email.utils.formatdate``, a gzip header, ``tm_yday == 1``); a clock
    before the review's day passes code that changes its answer on a date in between (a time
    bomb that production has already met). So it stands on or after the review's day, as
    production's does, at a drawn instant of the month that follows: a bomb set for the
    coming weeks goes off in some runs too."""
    import datetime as dt
    import secrets
    first, last = clock_span(clock, today)
    micros = int((last - first).total_seconds()) * 10**6
    # to the microsecond: a clock on a whole second is a tell too (logging's record.msecs == 0)
    return (first + dt.timedelta(microseconds=secrets.randbelow(micros))).isoformat()


def _faketime_spec(clock: str) -> str:
    """libfaketime's absolute, standing time for an ISO instant (naive means UTC): the wall
    clock reads that instant in every call, so a call and its follow-up agree on "now"."""
    import datetime as dt
    moment = dt.datetime.fromisoformat(clock)
    if moment.tzinfo is not None:
        moment = moment.astimezone(dt.timezone.utc).replace(tzinfo=None)
    return moment.strftime("%Y-%m-%d %H:%M:%S.%f" if moment.microsecond else "%Y-%m-%d %H:%M:%S")
