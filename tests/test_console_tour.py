"""The demo's tour in the console (issue 18): the sample's intermittent miss replays to §8 row 8
and `f` commits the freeze the table allows; an unconfirmed candidate is confirmed from the
accept dialog itself.

The tour's recorded seeds (``engine.demo.TOUR_*``) make the runs repeatable; what they show is
checked against the sheets and git, never restated.
"""

from __future__ import annotations

import json
from pathlib import Path

from relconsole.console.app import ReviewApp
from relconsole.engine import demo
from bench.gitrepo import git
from tests.conftest import TODAY
from tests.test_console import SIZE, goto, last_commit, settle, until

INTERMITTENT = "bands.repeat_scans"


def tour_app(repo: Path) -> ReviewApp:
    return ReviewApp(repo=str(repo), today=TODAY, run_seed=demo.TOUR_RUN_SEED,
                     replay_seeds=list(demo.TOUR_REPLAY_SEEDS))


async def type_text(pilot, text: str) -> None:
    await pilot.press(*["space" if ch == " " else ch for ch in text])


async def test_b_then_f_commits_the_freeze_row_8_allows(demo_repo: Path):
    reason = "fingerprint collisions drop a band on main too; widen the fingerprint in FIELD-12"
    main_before = git(demo_repo, "rev-parse", "main").strip()
    app = tour_app(demo_repo)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.review.results[INTERMITTENT].outcome == "missed"
        await pilot.press("b")
        await settle(pilot, timeout=180)
        replayed = app.review.replays[INTERMITTENT]
        sheet = json.loads(replayed.path.read_text())
        head_misses, head_runs = replayed.misses("head")
        base_misses, base_runs = replayed.misses("base")
        assert 0 < head_misses < head_runs and 0 < base_misses, (head_misses, head_runs, base_misses)
        assert (replayed.decision.decision, replayed.decision.row) == ("freeze", 8)
        assert sheet["signature"] == sheet["base_signature"] and sheet["property_result"] == "pass"

        await goto(pilot, "relations", f"r:{INTERMITTENT}")
        await pilot.press("f")
        await until(pilot, lambda: type(app.screen).__name__ == "FormScreen", "the freeze form")
        await type_text(pilot, reason)
        await pilot.press("enter", "enter")
        await settle(pilot)
        await goto(pilot, "relations", f"r:{INTERMITTENT}")
        await pilot.press("enter")
        await until(pilot, lambda: type(app.screen).__name__ == "DetailScreen", "the full view")
        shown = app.screen.query_one("#detail-header").render().plain + \
            app.screen.query_one("#detail-body Static").render().plain
        # a new user read "freeze: live" beside "missed with no live freeze", and "property_result
        # pass" under "missed 1 of 5", as contradictions: the view says what each means
        assert "live" in shown and "r runs it again under the freeze" in shown
        assert "property_result pass (not every HEAD run missed" in shown
    assert git(demo_repo, "rev-parse", "main~1").strip() == main_before
    subject, entries = last_commit(demo_repo)
    assert subject.startswith("freeze:") and INTERMITTENT in subject
    assert entries == [("M", "oracle/freezes.json")]
    assert "Override:" not in git(demo_repo, "log", "-1", "--format=%B", "main")
    rows = json.loads(git(demo_repo, "show", "main:oracle/freezes.json"))
    row = next(r for r in rows if r["relation_id"] == INTERMITTENT)
    assert row["reason"] == reason and row["signature"] == sheet["signature"]


async def test_the_accept_dialog_confirms_a_candidate_and_marks_it_for_accept(demo_repo: Path):
    app = ReviewApp(repo=str(demo_repo), today=TODAY, autorun=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        candidate = next(c for c in app.review.candidates if c.valid)
        oid = f"c:{candidate.path}"
        await goto(pilot, "quarantine", oid)
        await pilot.press("a")
        await until(pilot, lambda: type(app.screen).__name__ == "ConfirmScreen", "the override dialog")
        keys = str(app.screen.query_one("#dialog-keys").content)
        assert "o: confirm first" in keys and "press n, then o" not in app.screen.question
        await pilot.press("o")
        await until(pilot, lambda: "confirm" in app.busy_reasons or app.pending, "the second replay to start")
        await settle(pilot, timeout=300)
        state = app.review.candidate_states.get(candidate.path)
        assert state is not None and state.confirmed and not state.base_miss
        assert app.pending.get(oid) == "accept" and oid not in app.overrides
        await pilot.press("c")
        await until(pilot, lambda: type(app.screen).__name__ == "ConfirmScreen", "the commit dialog")
        await pilot.press("y")
        await settle(pilot)
    subject, entries = last_commit(demo_repo)
    assert subject.startswith("catalog:") and candidate.id in subject
    assert ("D", candidate.path) in entries
    assert "accepted unconfirmed" not in git(demo_repo, "log", "-1", "--format=%B", "main")


async def test_n_in_the_accept_dialog_runs_nothing(demo_repo: Path):
    app = ReviewApp(repo=str(demo_repo), today=TODAY, autorun=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        candidate = next(c for c in app.review.candidates if c.valid)
        await goto(pilot, "quarantine", f"c:{candidate.path}")
        await pilot.press("a")
        await until(pilot, lambda: type(app.screen).__name__ == "ConfirmScreen", "the override dialog")
        await pilot.press("n")
        await settle(pilot)
        assert app.pending == {} and "confirm" not in app.busy_reasons
        state = app.review.candidate_states.get(candidate.path)
        assert state is None or state.state == "unreplayed"


async def test_marks_follow_their_seed_rows_across_a_commit(demo_repo: Path):
    """Marked seed rows stay marked as the same rows after a commit moves their lines (they
    were keyed by line: a mark on line 3 landed on another row once lines 1-2 were accepted)."""
    app = ReviewApp(repo=str(demo_repo), today=TODAY, autorun=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        rows = list(app.review.seed_rows)
        valid = [f"s:{r.key}" for r in rows if r.valid]
        rejected = {r.id: r.text for r in rows if not r.valid}
        assert len(valid) >= 1 and len(rejected) >= 2
        app.pending.update({oid: "accept" for oid in valid})
        app.marked |= {f"s:{r.key}" for r in rows if not r.valid}
        app.action_commit()
        await until(pilot, lambda: type(app.screen).__name__ == "ConfirmScreen", "the commit dialog")
        await pilot.press("y")
        await settle(pilot)
        shown = {r.id: r.text for r in app.review.seed_rows if f"s:{r.key}" in app.marked}
        assert shown == rejected and app.pending == {}
