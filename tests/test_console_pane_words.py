"""Words in the panes that a trial on python-hyper/hyperlink found cut or contradicting the
CLI (issue 36): a candidate whose agreeing replays missed on the base is "not confirmed:
misses on the base" in the Quarantine pane, its strip and its view, as ``relconsole confirm``
says it, whole at 80x24 and 160x48; the Leases pane's note on workspace leases is whole too.

The candidate's recorded state is written as ``confirm`` writes it (both replays agreeing,
base runs missing), on the sample repository, so no replay runs here.
"""

from __future__ import annotations

import pytest

from relconsole.cli.confirm import lines as cli_lines
from relconsole.console.app import ReviewApp
from relconsole.console.screens.detail import DetailScreen
from relconsole.console.widgets.pane import Pane
from relconsole.engine.gate.confirm import ConfirmOutcome
from relconsole.engine.gate.confirmstate import (CONFIRMED, NOT_CONFIRMED_ON_BASE, ConfirmState, content_sha256,
                                                 state_dir, write_state)
from relconsole.engine.gate.review import load_review
from tests.conftest import TODAY
from tests.test_console import goto, settle, until
from tests.test_console_fit import rows_of, screen_rows

CANDIDATE = "oracle/quarantine/penguins.mass_permutation.yaml"  # the sample's valid candidate
RUNS = 3


def _record(review, base_misses: int) -> dict:
    """A replay record as ``confirmrun`` writes it: HEAD missed every run, the base ``base_misses``."""
    def side(misses: int) -> dict:
        return {"outcome": "missed" if misses else "held", "runs": RUNS, "misses": misses, "signature": "sha256:ab",
                "per_seed": [{"seed": n, "held": n >= misses, "describe": "disagree on Adelie.count"}
                             for n in range(RUNS)]}
    return {"runs": RUNS, "lease": {"generation": 7, "workspace": "w"}, "sides": {"head": side(RUNS), "base": side(base_misses)},
            "head": review.head_sha, "merge_base": review.merge_base, "oracle": review.oracle_sha,
            "worktree": "pooled", "at": "2026-12-07T10:00:00+00:00"}


def misses_on_base(repo) -> ConfirmState:
    """Record ``CANDIDATE`` as its two agreeing replays left it: confirmed, missing on the base."""
    review = load_review(repo, today=TODAY)
    try:
        candidate = next(c for c in review.candidates if c.path == CANDIDATE)
        digest = content_sha256(review, candidate)
        state = ConfirmState(candidate.id, candidate.path, digest, CONFIRMED, "the two replays agree on head, base",
                             _record(review, 2), _record(review, 2), None, state_dir(review) / f"{digest}.json")
        write_state(state)
        return state
    finally:
        review.close()


@pytest.mark.parametrize("size", [(160, 48), (80, 24)])
async def test_a_candidate_missing_on_the_base_is_not_confirmed_in_every_place_and_whole(demo_repo, size):
    state = misses_on_base(demo_repo)
    said = cli_lines(ConfirmOutcome(state, [], None, []))[0]
    assert "not confirmed" in said and "misses on the base" in said  # what the CLI says
    app = ReviewApp(repo=str(demo_repo), today=TODAY, autorun=False)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await goto(pilot, "quarantine", f"c:{CANDIDATE}")
        await pilot.pause()
        pane = app.query_one("#quarantine", Pane)
        shown = "\n".join(rows_of(app, pane))
        assert f"✗ {NOT_CONFIRMED_ON_BASE}" in shown and "● confirmed" not in shown, shown
        if app.query_one("#detail").display:
            strip = str(app.query_one("#detail").render())
            assert NOT_CONFIRMED_ON_BASE in strip and state.base_miss.split(":")[0] in strip
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, DetailScreen), "the candidate's view")
        await pilot.pause()
        text = "\n".join(screen_rows(app))
        assert f"second replay: {NOT_CONFIRMED_ON_BASE}" in text and "second replay: confirmed" not in text


@pytest.mark.parametrize("size", [(160, 48), (80, 24)])
async def test_the_leases_note_on_workspace_leases_is_whole(demo_repo, size):
    app = ReviewApp(repo=str(demo_repo), today=TODAY, autorun=False)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        assert not app.review.workspace_leases
        await pilot.press("3", "G")
        await pilot.pause()
        shown = rows_of(app, app.query_one("#leases", Pane))
        assert any("no workspace lease held" in row for row in shown), shown
        assert any("b replays under one" in row for row in shown), shown
        assert not any("…" in row for row in shown if "workspace" in row or "replays" in row), shown
