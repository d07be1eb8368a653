"""Subjects run in worker processes: crashes, hangs, a frozen clock and seeded randomness.

A subject that segfaults or hangs is a miss with its reason; the console keeps taking
keys meanwhile. Clock- and seed-shaped flakes are removed in the worker (issue 3 item 4).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import textwrap
import time
from pathlib import Path

import pytest

from relconsole.console.app import ReviewApp
from relconsole.console.widgets.pane import Pane
from relconsole.engine.oracle.catalog import load_catalog
from relconsole.engine.repo.config import Layout
from relconsole.engine.relations.pool import evaluate_once
from relconsole.engine.relations.records import RunPlan
from bench.gitrepo import reviewed_repo
from tests.conftest import TODAY, seeds_plan
from tests.test_console import settle

SUBJECTS = """
import ctypes, random, time
from datetime import date, datetime, timezone

def segfault(x):
    return ctypes.string_at(0)

def stamp(x):
    return [time.time(), datetime.now().isoformat(), datetime.now(timezone.utc).isoformat(),
            date.today().isoformat()]

def dice(x):
    return [random.random() for _ in range(3)]

def hangs(x):
    time.sleep(120)
    return x
"""


def plan(tmp_path: Path, subject: str, kind: str = "idempotence", clock: str | None = None,
         extra: str = "", timeout: float = 60.0) -> RunPlan:
    return seeds_plan(tmp_path / "tree", "subjects", SUBJECTS, subject, '["a"]\n', kind, extra, timeout, clock)


def test_a_segfault_is_a_miss_naming_the_signal(tmp_path):
    record = evaluate_once(plan(tmp_path, "segfault"), seed=0)
    assert not record.held and record.error_type == "subject died"
    assert "SIGSEGV" in record.error


def test_the_clock_is_frozen_at_the_configured_instant(tmp_path):
    instant = Layout().frozen_clock
    moment = dt.datetime.fromisoformat(instant)
    utc = moment.astimezone(dt.timezone.utc)
    expected = [moment.timestamp(), utc.replace(tzinfo=None).isoformat(), utc.isoformat(),
                utc.date().isoformat()]
    extra = f"    params: {{equals: {expected!r}}}\n".replace("'", '"')
    record = evaluate_once(plan(tmp_path, "stamp", "bound", instant, extra), seed=0)
    assert record.held, record.describe()


def test_a_frozen_clock_removes_a_clock_shaped_flake(tmp_path):
    frozen = evaluate_once(plan(tmp_path, "stamp", clock=Layout().frozen_clock), seed=0)
    real = evaluate_once(plan(tmp_path, "stamp", clock=None), seed=0)
    assert frozen.held
    assert not real.held and real.differing  # time moved between f(x) and f(f(x))


def test_randomness_is_seeded_per_run(tmp_path):
    first = evaluate_once(plan(tmp_path, "dice", "bound", extra="    params: {equals: 0}\n"), seed=7)
    again = evaluate_once(plan(tmp_path, "dice", "bound", extra="    params: {equals: 0}\n"), seed=7)
    other = evaluate_once(plan(tmp_path, "dice", "bound", extra="    params: {equals: 0}\n"), seed=8)
    assert first.followup == again.followup != other.followup


def _hanging_repo(tmp_path: Path, timeout: float) -> Path:
    catalog = textwrap.dedent("""\
        owners:
          "src/**": [iso.hangs]
        relations:
          - id: iso.hangs
            kind: idempotence
            subject: subjects:hangs
            input: {seeds: oracle/seeds/x.jsonl}
            compare: exact
            statement: a subject that never answers
        """)
    return reviewed_repo(tmp_path / "hang", {
        "src/subjects.py": SUBJECTS, "oracle/seeds/x.jsonl": '["a"]\n', "oracle/catalog.yaml": catalog,
        "pyproject.toml": f"[tool.relconsole]\nrelation_timeout_seconds = {timeout}\n",
    }, {"src/subjects.py": SUBJECTS + "\n# touched\n"})


async def test_the_console_answers_keys_while_a_subject_hangs(tmp_path):
    timeout = 3.0
    repo = _hanging_repo(tmp_path, timeout)
    app = ReviewApp(repo=str(repo), today=TODAY)
    async with app.run_test(size=(160, 48)) as pilot:
        started = time.monotonic()
        while not app.running:
            assert time.monotonic() - started < 30, "the run never started"
            await pilot.pause(0.05)
        assert isinstance(app.focused, Pane) and app.focused.kind == "touched"
        await pilot.press("3")  # the screen follows the key while the worker is stuck
        assert app.running and app.focused.kind == "leases"
        await pilot.press("2")
        assert app.running and app.focused.kind == "relations"
        await settle(pilot)
        result = app.review.results["iso.hangs"]
    # the subject never returns: only its timeout can have ended the run
    assert result.outcome == "missed" and result.first.error_type == "timeout"


EDITING_SUBJECTS = {
    # a flat edit of a CSV cell; the follow-up sums x (1 + 2 + 3) once the rows are restored
    "flat": ("c.csv", "x\n1\n2\n3\n",
             "def edits(rows):\n    for r in rows:\n        r['x'] = str(int(r['x']) + 1)\n    return len(rows)\n\n"
             "def reads(rows):\n    return sum(int(r['x']) for r in rows)\n", 6),
    # a nested edit of a JSON-lines value; the follow-up counts the tags (one) once restored
    "nested": ("c.jsonl", '{"tags": ["a"]}\n{"tags": []}\n',
               "def edits(rows):\n    for r in rows:\n        r['tags'].append('x')\n    return len(rows)\n\n"
               "def reads(rows):\n    return sum(len(r['tags']) for r in rows)\n", 1),
}


@pytest.mark.parametrize("case", sorted(EDITING_SUBJECTS))
def test_an_in_place_edit_of_the_input_reaches_no_other_call(tmp_path, case):
    """Each call edits its own copy of the rows (a forked child): neither the follow-up calls
    nor the next relation on the same worker and corpus see the edit."""
    from relconsole.engine.relations.pool import Worker

    name, rows, source, expected = EDITING_SUBJECTS[case]
    tree = tmp_path / "tree"
    (tree / "oracle").mkdir(parents=True)
    (tree / "subject.py").write_text(source)
    corpus = tree / "oracle" / name
    corpus.write_text(rows)
    catalog = load_catalog(textwrap.dedent(f"""\
        relations:
          - {{id: edits, kind: permutation, subject: subject:edits, input: {{lease: c}}, compare: exact,
             statement: s}}
          - {{id: reads, kind: bound, subject: subject:reads, input: {{lease: c}}, compare: exact,
             statement: s, params: {{equals: {expected}}}}}
        """), "c.yaml")
    worker = Worker(tree)
    try:
        edited = worker.ask(RunPlan(catalog.get("edits"), tree, [str(tree)], "lease", corpus, "p"), 0)
        after = worker.ask(RunPlan(catalog.get("reads"), tree, [str(tree)], "lease", corpus, "p"), 0)
    finally:
        worker.close()  # the same worker, the same cached corpus for both relations
    assert edited.held, edited.describe()
    assert after.held, after.describe()


def test_a_relation_can_name_its_own_instant(tmp_path):
    instant = "2031-05-06T07:08:09+00:00"
    moment = dt.datetime.fromisoformat(instant)
    expected = [moment.timestamp(), moment.replace(tzinfo=None).isoformat(), moment.isoformat(),
                moment.date().isoformat()]
    extra = f"    clock: '{instant}'\n    params: {{equals: {expected!r}}}\n".replace("'2", '"2').replace("0'", '0"')
    catalog = load_catalog(textwrap.dedent("""\
        relations:
          - id: iso.stamp
            kind: bound
            subject: subjects:stamp
            input: {seeds: oracle/seeds/x.jsonl}
            compare: exact
            statement: isolation
        """) + extra.replace("'", '"'), "oracle/catalog.yaml")
    relation = catalog.get("iso.stamp")
    assert relation.clock == instant
    base = plan(tmp_path, "stamp")
    record = evaluate_once(RunPlan(relation, base.root, base.import_paths, "seeds", base.input_path, "pin",
                                   60.0, relation.clock), seed=0)
    assert record.held, record.describe()



def test_strftime_and_asctime_read_the_frozen_clock(tmp_path):
    subjects = tmp_path / "tree" / "subjects.py"
    record_plan = plan(tmp_path, "stamp", clock=Layout().frozen_clock)
    subjects.write_text(SUBJECTS + "\ndef text_clock(x):\n    return [time.strftime('%Y-%m-%d %H:%M:%S'), time.asctime()]\n")
    frozen = dt.datetime.fromisoformat(Layout().frozen_clock).astimezone(dt.timezone.utc)
    expected = [frozen.strftime("%Y-%m-%d %H:%M:%S"), time.asctime(frozen.timetuple())]
    relation = load_catalog(textwrap.dedent(f"""\
        relations:
          - id: iso.text
            kind: bound
            subject: subjects:text_clock
            input: {{seeds: oracle/seeds/x.jsonl}}
            compare: exact
            statement: text clock
            params: {{equals: {json.dumps(expected)}}}
        """), "c.yaml").get("iso.text")
    record = evaluate_once(RunPlan(relation, record_plan.root, record_plan.import_paths, "seeds",
                                   record_plan.input_path, "pin", 60.0, Layout().frozen_clock), seed=0)
    assert record.held, record.describe()


def test_bound_raises_accepts_a_subclass(tmp_path):
    tree = tmp_path / "tree"
    (tree / "oracle" / "seeds").mkdir(parents=True)
    (tree / "oracle" / "seeds" / "x.jsonl").write_text('"not json"\n')
    catalog = load_catalog(textwrap.dedent("""\
        relations:
          - {id: sub, kind: bound, subject: json:loads, input: {seeds: oracle/seeds/x.jsonl}, compare: exact,
             statement: s, params: {raises: ValueError}}
          - {id: other, kind: bound, subject: json:loads, input: {seeds: oracle/seeds/x.jsonl}, compare: exact,
             statement: s, params: {raises: KeyError}}
        """), "c.yaml")
    seeds = tree / "oracle" / "seeds" / "x.jsonl"
    held = evaluate_once(RunPlan(catalog.get("sub"), tree, [str(tree)], "seeds", seeds, "p"), 0)
    missed = evaluate_once(RunPlan(catalog.get("other"), tree, [str(tree)], "seeds", seeds, "p"), 0)
    assert held.held and not missed.held


SPLIT_CATALOG = textwrap.dedent("""\
    owners:
      "src/**": [rows.split]
    relations:
      - id: rows.split
        kind: split_merge
        subject: agg:total
        merge: oracle.adapters:merge
        input: {seeds: oracle/seeds/rows.jsonl}
        compare: exact
        statement: parts merged equal the whole
    """)


@pytest.mark.parametrize("shadow", [False, True], ids=["plain", "regular-oracle-package-on-PYTHONPATH"])
def test_an_adapter_that_raises_is_the_oracle_s_fault_not_a_reject(tmp_path, monkeypatch, shadow):
    """With ``shadow``, another project's regular ``oracle`` package (with ``__init__.py``)
    is on PYTHONPATH: the tree's ``oracle/`` (a namespace directory) must still be the one used."""
    if shadow:
        other = tmp_path / "other"
        (other / "oracle").mkdir(parents=True)
        (other / "oracle" / "__init__.py").write_text("")
        (other / "oracle" / "adapters.py").write_text("def unrelated():\n    return 1\n")
        monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(other), os.environ.get("PYTHONPATH")])))
    catalog = SPLIT_CATALOG
    repo = reviewed_repo(tmp_path / "repo", {
        "src/agg.py": "def total(rows):\n    return [sum(rows)]\n",
        "oracle/adapters.py": "def merge(a, b):\n    raise RuntimeError('merge exploded')\n",
        "oracle/seeds/rows.jsonl": "[1, 2, 3]\n", "oracle/catalog.yaml": catalog,
    }, {"src/agg.py": "def total(rows):\n    return [sum(rows), 0][:1]\n"})
    from relconsole.engine.gate.review import load_review
    from relconsole.engine.gate.reviewrun import run_review

    review = load_review(repo, "main", "HEAD", TODAY)
    try:
        [result] = run_review(review)
    finally:
        review.close()
    assert result.outcome == "missed" and result.verdict.decision == "abort"
    assert result.verdict.reason == "oracle_fault" and "oracle/adapters.py" in result.verdict.detail


def test_parts_of_a_shape_the_merge_adapter_cannot_take_are_the_patch_s_miss(tmp_path):
    """The merge adapter reads the subject's outputs: a patch that returns a number where the
    adapter reads a mapping is rejected, never passed off as a broken oracle (abort)."""
    catalog = SPLIT_CATALOG
    repo = reviewed_repo(tmp_path / "repo", {
        "src/agg.py": "def total(rows):\n    return {'sum': sum(rows)}\n",
        "oracle/adapters.py": "def merge(a, b):\n    return {'sum': a['sum'] + b['sum']}\n",
        "oracle/seeds/rows.jsonl": "[1, 2, 3, 4]\n", "oracle/catalog.yaml": catalog,
    }, {"src/agg.py": "def total(rows):\n    return float(sum(rows))\n"})
    from relconsole.engine.gate.review import load_review
    from relconsole.engine.gate.reviewrun import run_review

    with load_review(repo, "main", "HEAD", TODAY) as review:
        [result] = run_review(review)
    assert result.outcome == "missed" and result.verdict.decision == "reject", result.verdict
    assert "merge adapter cannot merge" in result.summary and "TypeError" in result.summary


def test_a_recorded_hash_seed_replays_a_hash_ordered_output(tmp_path):
    """The hash seed is drawn per server and recorded; replaying it with the run seed gives
    the same set iteration order, so a hash-order-shaped miss can be replayed exactly."""
    tree = tmp_path / "tree"
    (tree / "oracle" / "seeds").mkdir(parents=True)
    (tree / "order.py").write_text("def names(x):\n    return list({f'name-{i}' for i in range(40)})\n")
    (tree / "oracle" / "seeds" / "x.jsonl").write_text('"a"\n')
    relation = load_catalog(textwrap.dedent("""\
        relations:
          - {id: hash.order, kind: idempotence, subject: order:names, input: {seeds: oracle/seeds/x.jsonl},
             compare: exact, statement: s, clock: real}
        """), "c.yaml").get("hash.order")
    seeds = tree / "oracle" / "seeds" / "x.jsonl"
    first = evaluate_once(RunPlan(relation, tree, [str(tree)], "seeds", seeds, "p"), 5)
    hashseed = first.run["hashseed"]
    again = evaluate_once(RunPlan(relation, tree, [str(tree)], "seeds", seeds, "p", replay_seed=5,
                                  replay_hashseed=hashseed), 5)
    assert again.run["hashseed"] == hashseed
    assert again.source == first.source and isinstance(first.source, list) and len(first.source) == 40


def test_a_tree_linked_to_the_store_is_never_judged_outside_the_sandbox(demo_repo, tmp_path, monkeypatch):
    """The run tree hard-links the per-commit store's files when this process finds
    bubblewrap; a judge's worker that then finds none must not fall back to a plain process
    (a subject there could write into the store through the links): the run aborts."""
    from relconsole.engine.gate.review import load_review
    from relconsole.engine.gate.reviewrun import run_review
    from relconsole.engine.relations.subject import server as server_module
    real = server_module.bwrap_path()
    if real is None:
        pytest.skip("no working bubblewrap here: run trees are copied, not linked")
    shim = tmp_path / "bin" / "bwrap"
    shim.parent.mkdir()
    shim.write_text(f'#!/bin/sh\ngrep -q relconsole.engine.relations.worker /proc/$PPID/cmdline && exit 1\nexec {real} "$@"\n')
    shim.chmod(0o755)
    monkeypatch.setenv("PATH", f"{shim.parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(server_module, "_BWRAP_CHECKED", None)
    from relconsole.engine.relations import pool as pool_module
    pool_module.close_started()  # a worker kept from an earlier command in this process probed bwrap already
    monkeypatch.setattr(pool_module, "_SHELF", [])
    review = load_review(demo_repo, "main", "HEAD", TODAY)
    try:
        results = run_review(review, ["penguins.split_merge"])
    finally:
        review.close()
    first = results[0].first
    assert results[0].verdict.decision == "abort" and "bubblewrap is required" in first.error, first
