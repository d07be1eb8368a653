"""The console's garbage-collection policy (console/collector.py): no automatic full
collection while a console runs, full collections only when the reviewer pauses, and the
process's own thresholds back afterwards."""

from __future__ import annotations

import gc
import weakref

from hypothesis import given, strategies as st

from relconsole.console import collector as collector_module
from relconsole.console.app import ReviewApp
from relconsole.console.collector import IDLE_SECONDS, NEVER, Collector
from tests.conftest import TODAY
from tests.test_console import SIZE, settle


class Node:
    def __init__(self):
        self.me = self  # a reference cycle: only the cyclic collector frees it


@given(st.integers(1, 10_000), st.integers(1, 100), st.integers(1, 100))
def test_start_turns_off_only_automatic_full_collections_and_stop_restores(young, middle, full):
    before = gc.get_threshold()
    try:
        gc.set_threshold(young, middle, full)
        policy = Collector()
        policy.start()
        assert gc.get_threshold() == (young, middle, NEVER)
        policy.stop()
        assert gc.get_threshold() == (young, middle, full)
        policy.stop()  # twice: still the process's own
        assert gc.get_threshold() == (young, middle, full)
    finally:
        gc.set_threshold(*before)


def test_a_sweep_waits_for_a_pause_in_input_and_for_idle(monkeypatch):
    now = [1000.0]
    monkeypatch.setattr(collector_module.time, "monotonic", lambda: now[0])
    policy = Collector()
    gc.disable()
    try:
        garbage = Node()
        alive = weakref.ref(garbage)
        del garbage
        policy.input_seen()
        now[0] += IDLE_SECONDS / 2
        assert not policy.sweep_if_idle(busy=False) and alive() is not None, "the reviewer is typing"
        now[0] += IDLE_SECONDS
        assert not policy.sweep_if_idle(busy=True) and alive() is not None, "relations are running"
        assert policy.sweep_if_idle(busy=False) and alive() is None, "a pause: the cycle is freed"
    finally:
        gc.enable()


async def test_a_console_freezes_the_loaded_review_and_gives_the_thresholds_back(demo_repo):
    before, frozen = gc.get_threshold(), gc.get_freeze_count()
    app = ReviewApp(repo=str(demo_repo), today=TODAY, autorun=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert gc.get_threshold()[2] == NEVER
        assert gc.get_freeze_count() > frozen, "the review left the collector's full scans"
    assert gc.get_threshold() == before
