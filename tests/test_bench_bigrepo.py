"""bench/bigrepo.py: the generated repository loads as a review whose counts follow the arguments."""

from __future__ import annotations

import datetime as dt
import subprocess
from collections import Counter

import pytest

from bench.bigrepo import counts_of, generate
from relconsole.engine.repo.owners import GAP, PROTECTED
from relconsole.engine.gate.review import load_review
from relconsole.engine.gate.reviewrun import run_review

TODAY = dt.date(2026, 3, 1)
ARGS = dict(paths=200, relations=50, leases=20, candidates=10)


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    root = generate(tmp_path_factory.mktemp("big") / "repo", today=TODAY, **ARGS)
    review = load_review(root, today=TODAY)
    yield root, review
    review.close()


def test_the_review_has_what_was_asked_for(big):
    root, review = big
    assert not review.errors, [e.one_line() for e in review.errors]
    assert len(review.bindings) == ARGS["paths"]
    assert len(review.relations) == ARGS["relations"]
    assert len(review.leases) == ARGS["leases"]
    assert len(review.candidates) == ARGS["candidates"]
    counts = counts_of(root)
    assert sum(c.valid for c in review.candidates) == counts.valid_candidates
    assert 0 < counts.valid_candidates < ARGS["candidates"]  # mixed valid and rejected
    assert len(review.touched_relations()) == counts.touched_relations
    assert 0 < counts.touched_relations < ARGS["relations"]  # a subset is owned by touched paths


def test_lease_states_are_mixed_as_recorded(big):
    root, review = big
    states = Counter(s.state for s in review.leases)
    assert dict(states) == counts_of(root).lease_states
    assert {"ok", "expiring", "expired", "drifted"} <= set(states)


def test_touched_paths_include_gaps_protected_and_renames(big):
    root, review = big
    states = Counter(b.state for b in review.bindings)
    assert states[GAP] == counts_of(root).unowned
    assert states[PROTECTED] == counts_of(root).protected
    letters = Counter(b.touched.status for b in review.bindings)
    assert {"A", "M", "D", "R"} <= set(letters)
    status = subprocess.run(["git", "status", "--porcelain"], cwd=root, capture_output=True, text=True, check=True)
    assert status.stdout == ""  # the agent branch is checked out clean


def test_relations_really_run_some_hold_some_miss(big):
    _root, review = big
    results = run_review(review, workers=2)
    outcomes = Counter(r.outcome for r in results)
    assert outcomes["held"] > 0
    assert outcomes["missed"] + outcomes["blocked"] > 0


def test_same_arguments_give_the_same_commits(tmp_path):
    small = dict(paths=20, relations=10, leases=2, candidates=3)
    first = generate(tmp_path / "a", today=TODAY, **small)
    second = generate(tmp_path / "b", today=TODAY, **small)

    def head(root):
        return subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True,
                              check=True).stdout

    assert head(first) == head(second)


def test_a_non_empty_target_is_refused(tmp_path):
    (tmp_path / "x").write_text("keep me")
    with pytest.raises(ValueError):
        generate(tmp_path, paths=20, relations=10, leases=1, candidates=1, today=TODAY)
    assert (tmp_path / "x").read_text() == "keep me"
