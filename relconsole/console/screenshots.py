"""Regenerate ``screenshots/*.svg`` from the sample repository (``relconsole screenshots``).

The console is driven headless with the Pilot, exactly as the tests drive it, on a
freshly materialised sample repository with a fixed "today", so the pictures show
real computation and change only when the console does.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from relconsole.console.app import ReviewApp
from relconsole.console.widgets.pane import Pane
from relconsole.engine.demo import TOUR_REPLAY_SEEDS, TOUR_RUN_SEED, materialise

SIZE = (160, 48)
TODAY = dt.date(2026, 11, 30)
SHOTS = ("overview", "touched-diff", "missed-relation", "candidate-detail", "lease-renewal", "replay", "gate-health",
         "merge-checklist", "candidate-confirmed", "filtered", "narrow-tabs", "missed-relation-narrow", "lease-rehash",
         "lease-history")
NARROW = (80, 24)
# the demo's recorded seeds: the same screens every time (the sample's intermittent miss shown)
TOUR = {"run_seed": TOUR_RUN_SEED, "replay_seeds": list(TOUR_REPLAY_SEEDS)}
STOCKS_CORPUS = "oracle/data/stocks.csv"


async def _settle(pilot, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    await pilot.pause()
    while pilot.app.busy or (pilot.app.review is None and pilot.app.load_error is None):
        if time.monotonic() > deadline:
            raise TimeoutError("the console did not settle")
        await pilot.pause(0.05)
    await pilot.pause(0.3)


async def _goto(pilot, pane_key: str, kind: str, option_id: str) -> None:
    await pilot.press(pane_key, "g")
    pane = pilot.app.query_one(f"#{kind}", Pane)
    for _ in range(pane.option_count + 1):
        if pane.highlighted_id == option_id:
            return
        await pilot.press("j")


async def _shoot(repo: Path, out: Path) -> list[Path]:
    written = []
    app = ReviewApp(repo=str(repo), today=TODAY, preferences=False, **TOUR)

    def save(name: str) -> None:
        path = out / f"{name}.svg"
        app.save_screenshot(filename=path.name, path=str(out))
        written.append(path)

    async with app.run_test(size=SIZE) as pilot:
        await _settle(pilot)
        await _goto(pilot, "2", "relations", "r:penguins.order_invariant")
        await pilot.pause(0.2)
        save("overview")
        paths = [b.path for b in app.review.bindings]
        await _goto(pilot, "1", "touched", f"t:{paths.index('src/aggregator.py')}")
        await pilot.press("v")
        await _settle(pilot)
        save("touched-diff")
        await pilot.press("escape")
        await _goto(pilot, "2", "relations", "r:penguins.order_invariant")
        await pilot.press("enter")
        await pilot.pause(0.3)
        save("missed-relation")
        await pilot.press("escape")
        await _goto(pilot, "4", "quarantine", "c:oracle/quarantine/penguins.expected_total.yaml")
        await pilot.press("enter")
        await pilot.pause(0.3)
        save("candidate-detail")
        await pilot.press("escape")
        await _goto(pilot, "3", "leases", "l:oracle/leases/weather.yaml")
        await pilot.press("n")
        await pilot.pause(0.3)
        save("lease-renewal")
        await pilot.press("escape")
        await pilot.press("b")
        await _settle(pilot)
        await _goto(pilot, "2", "relations", "r:penguins.order_invariant")
        await pilot.press("enter")
        await pilot.pause(0.3)
        save("replay")
        await pilot.press("escape")
        await pilot.press("s")
        await pilot.pause(0.5)
        save("gate-health")
        await pilot.press("escape")
        await pilot.press("m")
        await pilot.pause(0.8)
        save("merge-checklist")
        await pilot.press("escape")
        await _goto(pilot, "4", "quarantine", "c:oracle/quarantine/penguins.mass_permutation.yaml")
        await pilot.press("o")
        await _settle(pilot)
        await _goto(pilot, "4", "quarantine", "c:oracle/quarantine/penguins.mass_permutation.yaml")
        await pilot.press("enter")
        await pilot.pause(0.3)
        save("candidate-confirmed")
        await pilot.press("escape", "1", "x", "2", "x", "slash", *"penguins", "enter")
        await pilot.pause(0.3)
        save("filtered")
    return written + await _shoot_narrow(repo, out) + await _shoot_rehash(repo, out)


async def _shoot_narrow(repo: Path, out: Path) -> list[Path]:
    """80x24: the four panes two by two (listing.layout_class); the quarantine pane is focused.
    Then the missed relation's view: its smallest input and that input's two outputs."""
    app = ReviewApp(repo=str(repo), today=TODAY, preferences=False, **TOUR)
    async with app.run_test(size=NARROW) as pilot:
        await _settle(pilot)
        await pilot.press("4", "j")
        await pilot.pause(0.3)
        app.save_screenshot(filename="narrow-tabs.svg", path=str(out))
        await _goto(pilot, "2", "relations", "r:penguins.order_invariant")
        await pilot.press("enter")
        await pilot.pause(0.3)
        app.save_screenshot(filename="missed-relation-narrow.svg", path=str(out))
    return [out / "narrow-tabs.svg", out / "missed-relation-narrow.svg"]


async def _shoot_rehash(repo: Path, out: Path) -> list[Path]:
    """The stocks corpus changes in a reviewed commit; its owner re-hashes, renews, reads history."""
    _drift_stocks(repo)
    app = ReviewApp(repo=str(repo), today=TODAY, preferences=False, **TOUR)
    async with app.run_test(size=SIZE) as pilot:
        await _settle(pilot)
        await _goto(pilot, "3", "leases", "l:oracle/leases/stocks.yaml")
        new = app.review.lease("stocks").actual_sha256
        await pilot.press("h")
        await _settle(pilot)
        app.save_screenshot(filename="lease-rehash.svg", path=str(out))
        await pilot.press(*new[:8], "enter")
        await _settle(pilot)
        await _goto(pilot, "3", "leases", "l:oracle/leases/stocks.yaml")
        await pilot.press("n")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await _settle(pilot)
        await _goto(pilot, "3", "leases", "l:oracle/leases/stocks.yaml")
        await pilot.press("enter")
        await _settle(pilot)
        app.save_screenshot(filename="lease-history.svg", path=str(out))
    return [out / "lease-rehash.svg", out / "lease-history.svg"]


def _drift_stocks(repo: Path) -> None:
    """A reviewed commit on main by the lease's owner adds a row to the stocks corpus."""
    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)

    git("checkout", "-q", "main")
    with (repo / STOCKS_CORPUS).open("a", encoding="utf-8") as corpus:
        corpus.write("MSFT,Jan 1 2011,27.91\n")
    git("config", "user.name", "Alice")
    git("config", "user.email", "alice@example.com")
    git("commit", "-qam", "data: stocks corpus gains January 2011 (reviewed in DATA-151)")
    git("checkout", "-q", "agent/patch")


def regenerate(out: Path) -> list[Path]:
    """Write the screenshots into ``out`` (created if needed); returns their paths."""
    out = Path(out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="relconsole-shots-"))
    try:
        repo = materialise(scratch / "sample", TODAY)
        return asyncio.run(_shoot(repo, out))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
