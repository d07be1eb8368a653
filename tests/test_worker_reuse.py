"""A worker process reused across trees and phases (issue 37: one gate booted 12 of them).

A pool's workers, once ``prestart`` ran (the ``run`` and ``gate`` commands), are reset and kept
for the next pool instead of closed: the reset forgets the tree (its fork servers, decoded
inputs and the oracle's modules), so a run on the next tree is judged on that tree alone.
"""

from __future__ import annotations

import sys
import types

import pytest

from relconsole.engine.relations import pool as pool_module
from relconsole.engine.relations.pool import Worker, WorkerPool
from tests.conftest import seeds_plan

SAME = "def f(x):\n    return x\n"
GROWS = "def f(x):\n    return x + ['again']\n"  # f(f(x)) != f(x): an idempotence miss


def _plan(tree, source):
    return seeds_plan(tree, "subject", source, "f", '["a"]\n')


def test_a_reset_worker_judges_the_next_tree_on_its_own_files(tmp_path):
    held, grows = _plan(tmp_path / "a", SAME), _plan(tmp_path / "b", GROWS)
    worker = Worker(tmp_path)
    try:
        assert worker.ask(held, 1).held
        refused = worker.ask(grows, 1)  # a worker serves one tree until it is reset
        assert not refused.held and "serves" in refused.error, refused
        assert worker.reset()
        missed = worker.ask(grows, 1)
        assert not missed.held and missed.error_type is None and missed.differing, missed
    finally:
        worker.close()


@pytest.fixture
def shelf(monkeypatch):
    """``prestart`` as the run and gate commands have it, without booting anything ahead."""
    monkeypatch.setattr(pool_module, "_SHELF", [2])
    monkeypatch.setattr(pool_module, "_STARTED", [])
    yield pool_module._STARTED
    pool_module.close_started()


def test_a_closed_pool_s_workers_wait_for_the_next_pool_only_once_prestart_ran(tmp_path, shelf, monkeypatch):
    first = WorkerPool(1, tmp_path)
    assert first.evaluate(_plan(tmp_path / "a", SAME), 1).held
    first.close()
    (kept,) = shelf
    assert kept.proc is not None and kept.proc.poll() is None
    second = WorkerPool(1, tmp_path)
    assert second.all == [kept] and not shelf
    record = second.evaluate(_plan(tmp_path / "b", GROWS), 1)
    assert not record.held and record.differing, record
    monkeypatch.setattr(pool_module, "_SHELF", [])  # no prestart: a library caller keeps no idle process
    second.close()
    assert kept.proc is None and not shelf


def test_a_cancelled_pool_s_workers_are_closed_not_kept(tmp_path, shelf):
    from relconsole.engine.relations.pool import Cancel
    cancel = Cancel()
    pool = WorkerPool(1, tmp_path, cancel)
    assert pool.evaluate(_plan(tmp_path / "a", SAME), 1).held
    cancel.cancel()
    pool.close()
    assert not shelf and pool.all[0].proc is None


def test_forgetting_a_tree_drops_its_modules_and_its_finder_and_keeps_the_rest(tmp_path, monkeypatch):
    from relconsole.engine.relations import worker
    tree = tmp_path / "tree"
    (tree / "oracle").mkdir(parents=True)
    server = worker.Server()
    server.enter({"root": str(tree)})
    inside = types.ModuleType("oracle_adapters")
    inside.__file__ = str(tree / "oracle" / "adapters.py")
    spaced = types.ModuleType("oracle_space")
    spaced.__path__ = [str(tree / "oracle")]
    named = types.ModuleType("oracle_named.part")  # a module of the finder's roots, wherever its file
    server.finder.names.add("oracle_named")
    for name, module in (("oracle_adapters", inside), ("oracle_space", spaced), ("oracle_named.part", named)):
        monkeypatch.setitem(sys.modules, name, module)
    fresh = worker.forget_tree(server)
    assert not {"oracle_adapters", "oracle_space", "oracle_named.part"} & set(sys.modules)
    assert server.finder not in sys.meta_path and fresh.root is None and fresh is not server
    assert "json" in sys.modules and worker.__name__ in sys.modules
