"""The owners' workflows in the console, driven with the Pilot on the sample repository:
re-hash of a drifted lease (h), the lease detail's history (enter), a big corpus's
hashing progress while loading, and accept gated by the second replay (§4, §10).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from relconsole.console import loading
from relconsole.console.app import ReviewApp
from relconsole.console.screens.detail import DetailScreen
from relconsole.console.screens.form import FormScreen
from relconsole.engine.oracle.leases import parse_lease
from bench.gitrepo import git, git_bytes
from tests.conftest import TODAY
from tests.test_console import SIZE, assert_user_work_kept, goto, last_commit, prompts, settle, user_work

STOCKS = "oracle/leases/stocks.yaml"
CORPUS = "oracle/data/stocks.csv"


def drift_stocks(repo: Path) -> str:
    """A reviewed commit on main changes the stocks corpus (as its owner); returns its sha256."""
    git(repo, "checkout", "-q", "main")
    with (repo / CORPUS).open("a") as out:
        out.write("ZZZ,Jan 1 2011,1.0\n")
    owner = parse_lease(git(repo, "show", f"main:{STOCKS}"), STOCKS).owners[0]
    git(repo, "config", "user.email", owner)
    git(repo, "config", "user.name", "Stocks Owner")
    git(repo, "commit", "-qam", "data: the stocks corpus gains a row (reviewed)")
    git(repo, "checkout", "-q", "agent/patch")
    return hashlib.sha256(git_bytes(repo, "show", f"main:{CORPUS}")).hexdigest()


def screen_text(app: ReviewApp) -> str:
    """Every Static's plain text on the active screen (what a person reads there)."""
    parts = []
    for widget in app.screen.query("Static"):
        rendered = widget.render()
        parts.append(getattr(rendered, "plain", str(rendered)))
    return "\n".join(parts)


@pytest.mark.parametrize("typed_ok", [False, True])
async def test_rehash_needs_the_new_digest_typed_and_commits_only_the_manifest(demo_repo: Path, typed_ok: bool):
    new = drift_stocks(demo_repo)
    old = parse_lease(git(demo_repo, "show", f"main:{STOCKS}"), STOCKS).sha256
    before_tip = git(demo_repo, "rev-parse", "main").strip()
    before = user_work(demo_repo)
    app = ReviewApp(repo=str(demo_repo), today=TODAY)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await goto(pilot, "leases", f"l:{STOCKS}")
        assert "drifted" in prompts(app, "leases")[f"l:{STOCKS}"]
        await pilot.press("h")
        await settle(pilot)
        assert isinstance(app.screen, FormScreen)
        shown = screen_text(app)
        assert old in shown and new in shown and "bytes" in shown
        typed = new[:8] if typed_ok else old[:8]
        await pilot.press(*typed, "enter")
        await settle(pilot)
        if not typed_ok:  # the wrong digest keeps the dialog open and commits nothing
            assert isinstance(app.screen, FormScreen)
            await pilot.press("escape")
    if not typed_ok:
        assert git(demo_repo, "rev-parse", "main").strip() == before_tip
        return
    subject, entries = last_commit(demo_repo)
    assert subject.startswith("lease:") and entries == [("M", STOCKS)]
    message = git(demo_repo, "log", "-1", "--format=%B", "main")
    assert old in message and new in message
    assert "Confirmed-by: Stocks Owner <" in message
    assert parse_lease(git(demo_repo, "show", f"main:{STOCKS}"), STOCKS).sha256 == new
    assert_user_work_kept(demo_repo, before, "agent/patch")


async def test_rehash_of_a_lease_that_did_not_drift_is_refused_with_the_reason(demo_repo: Path):
    before_tip = git(demo_repo, "rev-parse", "main").strip()
    app = ReviewApp(repo=str(demo_repo), today=TODAY)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await goto(pilot, "leases", f"l:{STOCKS}")
        await pilot.press("h")
        await settle(pilot)
        assert not isinstance(app.screen, FormScreen)
        assert any("nothing to re-pin" in str(n.message) for n in app._notifications)
    assert git(demo_repo, "rev-parse", "main").strip() == before_tip


async def test_lease_detail_shows_who_moved_the_expiry_from_which_date_to_which(demo_repo: Path):
    drift_stocks(demo_repo)
    app = ReviewApp(repo=str(demo_repo), today=TODAY)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await goto(pilot, "leases", f"l:{STOCKS}")
        new = app.review.lease("stocks").actual_sha256
        await pilot.press("h")
        await settle(pilot)
        await pilot.press(*new[:8], "enter")
        await settle(pilot)
        await goto(pilot, "leases", f"l:{STOCKS}")
        old_expiry = app.review.lease("stocks").lease.expires
        await pilot.press("n")
        await settle(pilot)
        until = app.screen.query_one("#field-until").value
        await pilot.press("enter")
        await settle(pilot)
        await goto(pilot, "leases", f"l:{STOCKS}")
        await pilot.press("enter")
        await settle(pilot)
        await pilot.pause(0.2)
        assert isinstance(app.screen, DetailScreen)
        shown = screen_text(app)
    renewal = next(line for line in shown.splitlines() if " renewed " in line)
    assert f"{old_expiry.isoformat()} → {until}" in renewal and "Stocks Owner" in renewal
    assert any(" rehashed " in line for line in shown.splitlines())
    assert any(" created " in line for line in shown.splitlines())


async def test_a_big_corpus_moves_the_progress_bar_while_it_hashes(demo_repo: Path, monkeypatch):
    monkeypatch.setattr(loading, "HASH_PROGRESS_MIN_BYTES", 1)
    seen: list[tuple[str, int, int]] = []
    original = ReviewApp._hash_step

    def record(self, label, done, total):
        seen.append((label, done, total))
        original(self, label, done, total)

    monkeypatch.setattr(ReviewApp, "_hash_step", record)
    app = ReviewApp(repo=str(demo_repo), today=TODAY)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert not app.query_one("#progress").display  # hidden again once loaded
    hashed = {label for label, _done, _total in seen}
    assert CORPUS in hashed
    for label in hashed:
        counts = [(d, t) for name, d, t in seen if name == label]
        assert counts[-1][0] == counts[-1][1]  # each corpus reaches its total
        assert [d for d, _t in counts] == sorted(d for d, _t in counts)


async def test_marking_an_unconfirmed_candidate_for_accept_can_be_declined(demo_repo: Path):
    candidate = "c:oracle/quarantine/penguins.mass_permutation.yaml"
    before_tip = git(demo_repo, "rev-parse", "main").strip()
    app = ReviewApp(repo=str(demo_repo), today=TODAY)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await goto(pilot, "quarantine", candidate)
        await pilot.press("a")
        assert "second replay" in screen_text(app)
        await pilot.press("n")
        assert "pending" not in prompts(app, "quarantine")[candidate]
        await pilot.press("c")
        await settle(pilot)
    assert git(demo_repo, "rev-parse", "main").strip() == before_tip


def test_replays_that_ran_on_another_head_are_said_to_be_about_that_code(demo_repo: Path):
    from relconsole.engine.gate.confirmstate import ConfirmState
    from relconsole.console.itemtext import replay_state_text
    sides = {"head": {"outcome": "missed", "misses": 3, "runs": 3}, "base": {"outcome": "held", "misses": 0, "runs": 3}}
    record = {"head": "a" * 40, "sides": sides, "lease": {"generation": 2}, "worktree": "fresh", "at": "t"}
    state = ConfirmState("c", "p", "0" * 64, state="confirmed", reason="agree", first=record, second=record)
    same = replay_state_text(state, True, "a" * 40).plain
    moved = replay_state_text(state, True, "b" * 40).plain
    assert "catches this patch" in same and "older HEAD" not in same
    assert "older HEAD " + "a" * 12 in moved and "catches this patch" not in moved
