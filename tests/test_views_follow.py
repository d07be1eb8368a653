"""An open relation view follows its relation (issue 36: after ``b`` it kept saying "not
replayed" until it was closed and opened again): the replay worker's end posts
``RelationsChanged``, and the open view rebuilds and posts ``DetailScreen.Updated``. The test
waits for those messages (the Pilot's message hook), never for a duration.
"""

from __future__ import annotations

import asyncio

from relconsole.console.app import ReviewApp
from relconsole.console.messages import RelationsChanged
from relconsole.console.screens.detail import DetailScreen
from tests.conftest import TODAY
from tests.test_console import goto, settle, until
from tests.test_console_fit import screen_rows
from tests.test_diff_marks import MISSED, squash_repo

REPLAY_TIMEOUT = 180  # seconds: guards against a hang, not measures
VIEW_TIMEOUT = 30  # the view's rebuild follows the replay's message on the UI thread


async def test_b_in_a_relation_view_shows_the_replay_when_it_ends(tmp_path):
    repo = squash_repo(tmp_path)
    seen: dict[type, asyncio.Event] = {RelationsChanged: asyncio.Event(), DetailScreen.Updated: asyncio.Event()}
    replays: list[RelationsChanged] = []

    def hook(message) -> None:
        if isinstance(message, RelationsChanged) and message.what == "replay":
            replays.append(message)
            seen[RelationsChanged].set()
        elif isinstance(message, DetailScreen.Updated) and replays:
            seen[DetailScreen.Updated].set()

    app = ReviewApp(repo=str(repo), base_ref="main", today=TODAY)
    async with app.run_test(size=(160, 48), message_hook=hook) as pilot:
        await settle(pilot, timeout=300)
        await goto(pilot, "relations", f"r:{MISSED}")
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, DetailScreen), "the relation's view")
        view = app.screen
        assert any("not replayed" in row for row in screen_rows(app))
        await pilot.press("b")
        await asyncio.wait_for(seen[RelationsChanged].wait(), REPLAY_TIMEOUT)
        assert MISSED in replays[0].relation_ids
        await asyncio.wait_for(seen[DetailScreen.Updated].wait(), VIEW_TIMEOUT)
        await pilot.pause()
        assert app.screen is view  # the same view, rebuilt in place
        replayed = app.review.replays[MISSED]
        rows = screen_rows(app)
        assert not any("not replayed" in row for row in rows)
        head, head_runs = replayed.misses("head")
        assert any(f"missed {head} of {head_runs}" in row for row in rows), rows
        assert any(row.strip().startswith("replay:") and replayed.decision.decision.upper() in row for row in rows)
