"""Every state reads on a monochrome terminal (issue 7 item 6, SPEC §11).

The real console runs on the sample repository (``App.run_test``) and each pane's lines
are rendered as the terminal gets them, keeping only their characters: no colour, no
bold. For each state the issue names (missed, frozen, expired, drifted, rejected,
unowned) the items in that state come from the engine's Review, and their plain text must
carry a word or symbol that a contrasting item (an ok lease, a held relation, a valid
candidate, an owned path) lacks. The demo has no drifted lease: the test commits a
changed weather corpus on ``main`` to make one.
"""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path

import pytest

from relconsole.console.app import ReviewApp
from relconsole.console.widgets.pane import Pane
from relconsole.engine.oracle.freezes import LIVE
from relconsole.engine.demo import materialise
from relconsole.engine.oracle.leases import DRIFTED, EXPIRED, OK
from bench.gitrepo import git
from tests.conftest import TODAY

PANES = ("touched", "relations", "leases", "quarantine")
SIZE = (160, 48)  # the size the console is documented at: four panes side by side
DRIFTING_LEASE = "oracle/leases/weather.yaml"
# What may mark each state on screen: its word, or a symbol the contrasting state lacks.
MARKERS = {
    "missed": {"missed", "✗"},
    "frozen": {"frozen", "freeze", "live", "❄"},
    "expired": {"expired", "✗"},
    "drifted": {"drifted", "✗"},
    "rejected": {"rejected", "✗"},
    "unowned": {"unowned", "✗"},
}


async def settle(pilot, timeout: float = 60.0) -> None:
    """Wait until the console has loaded and finished what it started, including its
    deferred status refresh (quitting while that timer is pending crashed the console
    with NoMatches '#status' when this test was written)."""
    app = pilot.app
    deadline = time.monotonic() + timeout
    await pilot.pause()
    while app.busy or (app.review is None and app.load_error is None) or getattr(app, "_catch_up_pending", False):
        assert time.monotonic() < deadline, f"console still busy: {app.busy_reasons}"
        await pilot.pause(0.05)
    await pilot.pause()


def rendered_items(app: ReviewApp, kind: str) -> dict[str, str]:
    """Option id -> the characters its lines show in the pane (styles dropped).

    Each option takes the rows the pane gives it (``Pane.item_rows``: its lines, or more
    when the pane wraps them); the pane must show every row (no scrolling) for this to hold.
    """
    pane = app.query_one(f"#{kind}", Pane)
    spans = [pane.item_rows(n) for n in range(pane.option_count)]
    assert pane.scroll_y == 0 and spans[-1].stop <= pane.size.height, f"{kind}: not every item is visible"
    return {option.id: "\n".join(pane.render_line(y).text.rstrip() for y in rows)
            for option, rows in zip(pane.options, spans)}


def tokens(text: str) -> set[str]:
    """Lower-cased words and symbols of ``text`` (split at space and · : , ( ))."""
    return {t.lower() for t in re.findall(r"[^\s·:,()]+", text)}


def marker(state: str, shown: str, contrast: str) -> set[str]:
    """The markers of ``state`` in ``shown`` that ``contrast`` does not show."""
    return (tokens(shown) - tokens(contrast)) & MARKERS[state]


def drift_a_lease(repo: Path) -> str:
    """Commit a changed corpus on main (the oracle branch) for DRIFTING_LEASE; its source."""
    branch = git(repo, "symbolic-ref", "--short", "HEAD").strip()
    git(repo, "checkout", "-q", "main")
    corpus = repo / next(line.split(":", 1)[1].strip() for line in
                         (repo / DRIFTING_LEASE).read_text().splitlines() if line.startswith("path:"))
    corpus.write_bytes(corpus.read_bytes() + corpus.read_bytes().splitlines(keepends=True)[-1])
    git(repo, "commit", "-q", "-am", "data: a repeated last row (drifts the lease)")
    git(repo, "checkout", "-q", branch)
    return DRIFTING_LEASE


async def drive(repo: Path) -> dict:
    """The review and every pane's rendered items, before and after ``r`` runs the
    touched relations (a frozen relation shows its freeze until it has run)."""
    app = ReviewApp(repo=str(repo), today=TODAY, autorun=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.load_error is None, app.load_error
        before = {kind: rendered_items(app, kind) for kind in PANES}
        await pilot.press("2", "r")
        await settle(pilot)
        after = {kind: rendered_items(app, kind) for kind in PANES}
        review = app.review
    return {"review": review, "before": before, "after": after}


@pytest.fixture(scope="module")
def screens(tmp_path_factory) -> dict:
    """One console run over the demo repository with a drifted lease, shared by the tests
    of this module (they only read it)."""
    repo = materialise(tmp_path_factory.mktemp("monochrome") / "sample", TODAY)
    drifted_source = drift_a_lease(repo)
    shown = asyncio.run(drive(repo))
    assert any(s.source == drifted_source and s.state == DRIFTED for s in shown["review"].leases)
    return shown


def pairs(items: dict[str, str], state: list[str], contrast: list[str]) -> list[tuple[str, str, str, str]]:
    """Every (state item, contrast item) pair as (id, text, id, text); both lists non-empty."""
    assert state and contrast, f"the demo lacks an item to compare: {state} vs {contrast}"
    return [(a, items[a], b, items[b]) for a in state for b in contrast]


def assert_marked(state: str, items: dict[str, str], ids: list[str], contrast: list[str]) -> None:
    for a, shown, b, other in pairs(items, ids, contrast):
        assert marker(state, shown, other), (
            f"{state}: {a} shows {shown!r}, {b} shows {other!r}: no word or symbol of {sorted(MARKERS[state])} "
            "tells them apart without colour")


def test_missed_relation(screens):
    review = screens["review"]
    missed = [f"r:{rid}" for rid, r in review.results.items() if r.outcome == "missed"]
    held = [f"r:{rid}" for rid, r in review.results.items() if r.outcome == "held"]
    assert_marked("missed", screens["after"]["relations"], missed, held)


def test_frozen_relation(screens):
    """A live freeze row against no freeze and against an expired one (§6)."""
    review = screens["review"]
    frozen = [f"r:{r.id}" for r in review.relations if getattr(review.freeze_for(r.id), "state", None) == LIVE]
    other = [f"r:{r.id}" for r in review.relations if getattr(review.freeze_for(r.id), "state", None) != LIVE]
    assert any(review.freeze_for(oid[2:]) is not None for oid in other), "an expired freeze to contrast"
    assert_marked("frozen", screens["before"]["relations"], frozen, other)
    assert_marked("frozen", screens["after"]["relations"], frozen, other)  # a run does not hide it


def test_expired_and_drifted_leases(screens):
    """Each against an ok lease, and expired against drifted: the two failures differ in words."""
    review = screens["review"]
    by_state = {state: [f"l:{s.source}" for s in review.leases if s.state == state] for state in (OK, EXPIRED, DRIFTED)}
    items = screens["before"]["leases"]
    assert_marked("expired", items, by_state[EXPIRED], by_state[OK])
    assert_marked("drifted", items, by_state[DRIFTED], by_state[OK])
    for a, shown, b, other in pairs(items, by_state[EXPIRED], by_state[DRIFTED]):
        assert "expired" in tokens(shown) - tokens(other) and "drifted" in tokens(other) - tokens(shown), (a, b)


def test_rejected_candidates_and_seed_rows(screens):
    review = screens["review"]
    items = screens["before"]["quarantine"]
    rejected = [f"c:{c.path}" for c in review.candidates if not c.valid]
    valid = [f"c:{c.path}" for c in review.candidates if c.valid]
    assert_marked("rejected", items, rejected, valid)
    rows_rejected = [f"s:{r.key}" for r in review.seed_rows if not r.valid]
    rows_valid = [f"s:{r.key}" for r in review.seed_rows if r.valid]
    assert_marked("rejected", items, rows_rejected, rows_valid)


def test_unowned_paths(screens):
    review = screens["review"]
    gaps = {b.path for b in review.gaps()}
    unowned = [f"t:{i}" for i, b in enumerate(review.bindings) if b.path in gaps]
    owned = [f"t:{i}" for i, b in enumerate(review.bindings) if b.state == "owned"]
    assert_marked("unowned", screens["before"]["touched"], unowned, owned)


def test_states_survive_the_run(screens):
    """Running relations re-renders every pane: the lease, quarantine and path states stay marked."""
    review = screens["review"]
    for kind, state, ids, contrast in (
            ("leases", "expired", [f"l:{s.source}" for s in review.leases if s.state == EXPIRED],
             [f"l:{s.source}" for s in review.leases if s.state == OK]),
            ("quarantine", "rejected", [f"c:{c.path}" for c in review.candidates if not c.valid],
             [f"c:{c.path}" for c in review.candidates if c.valid]),
            ("touched", "unowned", [f"t:{i}" for i, b in enumerate(review.bindings) if b.state == "gap"],
             [f"t:{i}" for i, b in enumerate(review.bindings) if b.state == "owned"])):
        assert_marked(state, screens["after"][kind], ids, contrast)
