"""console benchmark (SPEC §11, issue 7 item 1): first frame, load and key latency at scale.

Generates (or reuses, under the temp dir, keyed by the arguments and today) a repository
with ``bench.bigrepo`` (default 20,000 touched paths, 5,000 relations, 1,000 leases,
300 candidates), then drives the real ``ReviewApp`` headless with ``App.run_test(size=
(160, 48))``:

* **first frame**: from constructing the app to the first frame the compositor produces
  (``App._display`` is called with it; the frame is also rendered to terminal output, the
  work a real terminal's driver would do, which the headless driver skips);
* **panes filled**: to the first refresh after the review is loaded (``app.review`` set,
  loading done), relations not started (``autorun=False``);
* **key latency**: for each key (j, k, G, g, tab, 1-4, enter opening a relation's view and
  escape closing it, ``/``; a key no active binding takes is skipped and said so; f24,
  bound to nothing, shows what the harness and an unhandled key cost), ``--presses``
  times: the key event is sent as the Pilot sends it, and the time runs until the app has
  handled it and the screen has refreshed after it (``call_after_refresh``), and then
  until the last frame the key caused (see ``timed_key``). The Pilot's own
  ``press`` is not timed: it sleeps at least 40 ms per key waiting for the CPU to idle.
  Measured idle, and again while the touched relations run (``r``; presses made after
  the run ends are not counted in that column).

Anchors measured in the same run (median of ``--repeat``): ``git diff --stat
MERGE_BASE..HEAD`` on the generated repository, and ``pytest --collect-only -q`` of a
one-test file; every figure is also printed as a ratio of the first.

Targets (issue 7): first frame < 2 s; every key's max latency < 100 ms, idle and while
relations run.

Usage: python -m bench.console [--paths 20000] [--relations 5000] [--leases 1000]
                               [--candidates 300] [--presses 9] [--repeat 3] [--fresh]
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import unicodedata
from pathlib import Path

from textual import events
from textual._compositor import CompositorUpdate
from textual.keys import REPLACED_KEYS, _character_to_key, _get_unicode_name_from_key

from bench.bigrepo import counts_of, generate
from bench.timing import median_seconds, verdict
from relconsole.console.app import ReviewApp

SIZE = (160, 48)
KEYS = ("f24", "j", "k", "G", "g", "tab", "1", "2", "3", "4", "enter", "escape", "slash")  # f24: unbound
FIRST_FRAME_TARGET = 2.0
KEY_TARGET = 0.100
FOLLOW_UP_SETTLES = 3
LOAD_TIMEOUT = 300.0


class TimedApp(ReviewApp):
    """ReviewApp that timestamps each frame (``perf_counter``) and renders it to terminal
    output as a real driver would."""

    CSS_PATH = Path(sys.modules[ReviewApp.__module__].__file__).parent / ReviewApp.CSS_PATH

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.frames: list[float] = []

    def _display(self, screen, renderable) -> None:
        if renderable is not None:
            if isinstance(renderable, CompositorUpdate):
                renderable.render_segments(self.console)
            self.frames.append(time.perf_counter())
        super()._display(screen, renderable)


def cached_repo(args, today: dt.date) -> Path:
    """The generated repository for these arguments and ``today`` (built once, then reused)."""
    name = f"relconsole-bench-bigrepo-{args.paths}-{args.relations}-{args.leases}-{args.candidates}-{today}"
    root = Path(tempfile.gettempdir()) / name
    if args.fresh or not (root / ".git" / "bigrepo.json").is_file():
        shutil.rmtree(root, ignore_errors=True)
        started = time.perf_counter()
        generate(root, args.paths, args.relations, args.leases, args.candidates, today)
        print(f"generated {root} in {time.perf_counter() - started:.1f} s")
    return root


def process_median(command: list[str], cwd: Path, repeat: int) -> float:
    """The median wall seconds of ``repeat`` runs of ``command`` in ``cwd`` (it must exit 0)."""
    return median_seconds(lambda: subprocess.run(command, cwd=cwd, capture_output=True, check=True), repeat)


async def refreshed(app: ReviewApp) -> None:
    """Return once the screen has refreshed after everything queued so far."""
    done = asyncio.Event()
    app.call_after_refresh(done.set)
    await done.wait()


async def settle(pilot) -> None:
    """Every message queued for the app and the screen's widgets handled (twice: a key the
    app forwards to the focused widget is queued while the first round runs), then a refresh."""
    await pilot._wait_for_screen()
    await pilot._wait_for_screen()
    await refreshed(pilot.app)


def key_event(key: str) -> events.Key:
    """The event the Pilot sends for ``key`` (as ``App._press_keys`` makes it), without its idle waits."""
    if len(key) == 1 and not key.isalnum():
        key = _character_to_key(key)
    try:
        char = unicodedata.lookup(_get_unicode_name_from_key(REPLACED_KEYS.get(key, key)))
    except KeyError:
        char = key if len(key) == 1 else None
    return events.Key(key, char)


async def timed_key(pilot, key: str) -> float:
    """Seconds from sending ``key`` until it is handled and the screen has refreshed, and
    then until the last frame it caused: work queued for after a refresh (the key bar, a
    pushed screen mounting its widgets) shows in later frames. Settles are repeated until
    one shows no new frame (at most ``FOLLOW_UP_SETTLES``; while relations run, their
    results add frames of their own, which can only make a key look slower)."""
    app = pilot.app
    event = key_event(key)
    event.set_sender(app)
    started = time.perf_counter()
    app._driver.send_message(event)
    await settle(pilot)
    done = time.perf_counter()
    for _ in range(FOLLOW_UP_SETTLES):
        count = len(app.frames)
        await settle(pilot)
        if len(app.frames) == count:
            break
        done = max(done, app.frames[-1])
    return done - started


def takes(app: ReviewApp, key: str) -> bool:
    """True when an active binding (focused widget, screen or app) handles ``key``."""
    if key in ("tab", "enter", "escape", "f24"):
        return True
    return key in app.active_bindings


async def key_round(pilot, presses: int, still: callable = lambda: True) -> dict[str, list[float]]:
    """Latencies of each key ``presses`` times (while ``still()`` holds, when given)."""
    app = pilot.app
    out: dict[str, list[float]] = {}
    for _ in range(presses):
        for name in KEYS:
            if not still() and name != "escape":  # a view opened is closed
                return out
            if name == "enter":  # open the highlighted relation's view ...
                await timed_key(pilot, "2")
                out.setdefault(name, []).append(await timed_key(pilot, "enter"))
                continue
            if name == "escape":  # ... and close it
                out.setdefault(name, []).append(await timed_key(pilot, "escape"))
                continue
            if name in ("1", "2", "3", "4"):
                pane = "2" if name == "1" else "1"  # from another pane: the press moves the focus
            elif name in ("tab", "f24"):
                pane = None
            else:
                pane = "1"  # j, k, G, g, / act on the touched paths pane
            if pane:
                await timed_key(pilot, pane)
            if not takes(app, name):
                out.setdefault(name, [])
                continue
            out.setdefault(name, []).append(await timed_key(pilot, name))
            if name == "slash":
                await timed_key(pilot, "escape")
    return out


async def drive(root: Path, today: dt.date, presses: int, run_wait: float) -> dict:
    """One console session; returns the measured figures."""
    started = time.perf_counter()
    app = TimedApp(str(root), today=today, autorun=False)
    figures: dict = {}
    async with app.run_test(size=SIZE) as pilot:
        while not app.frames:
            await asyncio.sleep(0.001)
            if time.perf_counter() - started > LOAD_TIMEOUT:
                raise SystemExit(f"no frame after {LOAD_TIMEOUT} s")
        figures["first_frame"] = app.frames[0] - started
        while (app.review is None and app.load_error is None) or "load" in app.busy_reasons:
            await asyncio.sleep(0.005)
            if time.perf_counter() - started > LOAD_TIMEOUT:
                raise SystemExit(f"the review did not load in {LOAD_TIMEOUT} s")
        if app.load_error:
            raise SystemExit(f"the review did not load: {app.load_error}")
        await refreshed(app)
        figures["filled"] = time.perf_counter() - started
        figures["loaded_rows"] = (len(app.review.bindings), len(app.review.relations), len(app.review.leases),
                                  len(app.review.candidates), len(app.review.touched_relations()))
        figures["idle"] = await key_round(pilot, presses)
        await timed_key(pilot, "r")
        run_started = time.perf_counter()
        figures["running"] = await key_round(pilot, presses, lambda: bool(app.running))
        while app.running and time.perf_counter() - run_started < run_wait:
            await asyncio.sleep(0.1)
        figures["run_seconds"] = time.perf_counter() - run_started if not app.running else None
        figures["results"] = len(app.review.results)
        app.replay_cancel.cancel()
        await pilot.press("q")
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--paths", type=int, default=20000)
    parser.add_argument("--relations", type=int, default=5000)
    parser.add_argument("--leases", type=int, default=1000)
    parser.add_argument("--candidates", type=int, default=300)
    parser.add_argument("--presses", type=int, default=9)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--run-wait", type=float, default=600.0,
                        help="seconds to wait for the run to finish after the presses")
    parser.add_argument("--fresh", action="store_true", help="generate the repository again")
    args = parser.parse_args()
    today = dt.date.today()
    root = cached_repo(args, today)
    counts = counts_of(root)
    merge_base = subprocess.run(["git", "merge-base", "main", "HEAD"], cwd=root, capture_output=True, text=True,
                                check=True).stdout.strip()
    scratch = Path(tempfile.mkdtemp(prefix="relconsole-bench-console-"))
    try:
        (scratch / "test_tiny.py").write_text("def test_tiny():\n    assert 1 + 1 == 2\n")
        diff = process_median(["git", "diff", "--stat", f"{merge_base}..HEAD"], root, args.repeat)
        collect = process_median([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                                  "test_tiny.py"], scratch, args.repeat)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    os.environ.pop("RELCONSOLE_TODAY", None)
    figures = asyncio.run(drive(root, today, args.presses, args.run_wait))

    print(f"console at scale: {counts.touched} touched paths, {counts.relations} relations, {counts.leases} leases, "
          f"{counts.candidates} candidates ({counts.touched_relations} relations owned by touched paths); "
          f"{SIZE[0]}x{SIZE[1]}")
    rows = figures["loaded_rows"]
    print(f"  loaded: {rows[0]} touched rows, {rows[1]} relations, {rows[2]} leases, {rows[3]} candidates, "
          f"{rows[4]} touched relations")
    print(f"  {'':58} {'seconds':>9} {'x diff':>8} {'x collect':>10}")

    def line(label: str, seconds: float) -> None:
        print(f"  {label:58} {seconds:9.3f} {seconds / diff:8.2f} {seconds / collect:10.2f}")

    line("git diff --stat MERGE_BASE..HEAD (anchor)", diff)
    line("pytest --collect-only -q, one test (anchor)", collect)
    line("start -> first frame", figures["first_frame"])
    line("start -> panes filled (review loaded, refreshed)", figures["filled"])
    run = figures["run_seconds"]
    print(f"  r: {figures['results']} results; the run took "
          + (f"{run:.1f} s" if run is not None else f"more than {args.run_wait:.0f} s (still running)"))
    print(f"  key latency, ms (send -> handled -> screen refreshed), {args.presses} presses each:")
    print(f"  {'key':14} {'idle median':>12} {'idle max':>9} {'running median':>15} {'running max':>12} {'n':>5}")
    worst = 0.0
    for name in KEYS:
        idle, running = figures["idle"].get(name, []), figures["running"].get(name, [])
        if not idle and not running:
            print(f"  {name:14} {'(no binding takes this key: skipped)':>55}")
            continue

        def cell(values: list[float], fn) -> str:
            return f"{fn(values) * 1000:.1f}" if values else "-"

        if name != "f24":
            worst = max([worst, *idle, *running])
        print(f"  {name:14} {cell(idle, statistics.median):>12} {cell(idle, max):>9} "
              f"{cell(running, statistics.median):>15} {cell(running, max):>12} {len(idle)}/{len(running):<3}")
    results = [(f"first frame {figures['first_frame']:.3f} s < {FIRST_FRAME_TARGET} s",
                figures["first_frame"] < FIRST_FRAME_TARGET),
               (f"every key's max latency {worst * 1000:.1f} ms < {KEY_TARGET * 1000:.0f} ms", worst < KEY_TARGET)]
    for text, ok in results:
        print(f"  target: {text}: {verdict(ok)}")
    return 0 if all(ok for _t, ok in results) else 1


if __name__ == "__main__":
    sys.exit(main())
