"""The console's replay (`b`, SPEC §7, §8, §11): sheets, the row that fired, workspace leases."""

from __future__ import annotations

import json
from pathlib import Path

from relconsole.console.app import ReviewApp
from relconsole.engine.gate.wslease.wslease import open_store
from bench.gitrepo import git
from tests.conftest import TODAY
from tests.test_console import goto, prompts, settle

SIZE = (160, 48)


async def test_b_replays_the_missed_relation_and_shows_its_sheet(demo_repo: Path):
    store = open_store(None, Path(demo_repo, ".git"))
    other = store.acquire("ci-nightly", "nightly@ci-runner-7", 900)
    store.close()
    app = ReviewApp(repo=str(demo_repo), today=TODAY)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        leases = prompts(app, "leases")
        shown = leases.get("w:ci-nightly", "")
        assert "nightly@ci-runner-7" in shown and f"gen {other.generation}" in shown and "s left" in shown
        missed = [rid for rid in app.review.touched_relations()
                  if app.review.results[rid].outcome != "held"]
        assert missed, "the sample's patch must miss a relation"
        await pilot.press("b")
        await settle(pilot, timeout=120)
        review = app.review
        for rid in missed:
            replayed = review.replays[rid]
            sheet = json.loads(replayed.path.read_text())
            assert sheet["test_id"] == rid and sheet["lease"]["state"] == "fresh"
            text = prompts(app, "relations")[f"r:{rid}"]
            head_misses, head_runs = replayed.misses("head")
            base_misses, base_runs = replayed.misses("base")
            assert f"row {replayed.decision.row}" in text
            assert f"HEAD {head_misses}/{head_runs} base {base_misses}/{base_runs}" in text
        status = str(app.query_one("#status").content)
        overall = review.decision()
        assert overall.decision.upper() in status
        if overall.row:
            assert f"row {overall.row}" in status
        await goto(pilot, "relations", f"r:{missed[0]}")
        detail = str(app.query_one("#detail").content)
        assert "replay:" in detail and str(review.replays[missed[0]].path) in detail
        if review.replays[missed[0]].decision.decision != "freeze":
            before = git(demo_repo, "rev-parse", "main")
            await pilot.press("f")  # the table, not the operator, decides what may be frozen
            await settle(pilot)
            assert git(demo_repo, "rev-parse", "main") == before
            assert not app.screen_stack[1:], "no freeze form opens for a non-freeze decision"


async def test_s_shows_gate_health_counted_from_the_decision_history(demo_repo: Path):
    from relconsole.engine.gate import gatehealth
    from relconsole.engine.decision import Decision

    freezes = [Decision("freeze", "intermittent_on_base", 8, f"r{n}") for n in range(3)]
    assert gatehealth.append(Path(demo_repo, ".git"), freezes + [Decision("reject", "property_fail", 3, "x")])
    app = ReviewApp(repo=str(demo_repo), today=TODAY, autorun=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("s")
        for _ in range(100):
            if type(app.screen).__name__ == "DetailScreen":
                break
            await pilot.pause(0.05)
        body = str(app.screen.query_one("#detail-body Static").content)
        counts = {line.split()[1]: int(line.split()[2]) for line in body.splitlines() if line.startswith("row ")}
        assert counts["8"] == 3 and counts["3"] == 1 and counts["1"] == 0
