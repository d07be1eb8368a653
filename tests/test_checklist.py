"""The merge checklist: each item pass / fail / unknown from evidence, on real repositories."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from relconsole.engine.gate import actions
from relconsole.engine.gate.checklist import merge_checklist
from relconsole.engine.gate.review import load_review
from relconsole.engine.gate.reviewrun import run_review
from bench.gitrepo import git
from tests.conftest import TODAY
from tests.test_check_split import commit
from tests.test_patch_flags import AGG, CORPUS, based, freeze_row, lease

DIGEST = hashlib.sha256(CORPUS.encode()).hexdigest()


def states(review) -> dict[str, str]:
    return {item.key: item.state for item in merge_checklist(review)}


def evidence(review, key: str) -> str:
    return "\n".join(next(i for i in merge_checklist(review) if i.key == key).evidence)


def make_repo(tmp_path: Path, base: dict[str, str], patch: dict[str, str], name: str = "r") -> Path:
    root = based(tmp_path / name, base)
    git(root, "checkout", "-q", "-b", "patch")
    commit(root, "patch", patch)
    return root


TOUCH = {"src/agg.py": AGG + "\n# touched\n"}


def test_the_demo_review_before_and_after_its_relations_run(demo_repo: Path):
    with load_review(demo_repo, today=TODAY) as review:
        before = states(review)
        assert before["no_golden_literal"] == "fail"  # the agent pinned the penguin totals
        assert before["leases_fresh"] == before["leases_allow"] == "pass"
        assert before["freezes_preexisting"] == "pass"
        assert before["freeze_reruns_counted"] == "unknown"  # nothing has run yet
        run_review(review)
        frozen = next(r for r in review.freezes if r.state == "live" and r.relation_id in review.touched_relations())
        assert states(review)["freeze_reruns_counted"] == "pass"
        result = review.results[frozen.relation_id]
        assert result.first.held or len(result.reruns) == frozen.reruns
        assert f"{len(result.reruns)} of {frozen.reruns}" in evidence(review, "freeze_reruns_counted") \
            or result.first.held


def test_a_drifted_lease_and_a_lease_that_does_not_allow_the_relation_fail(tmp_path: Path):
    drifted = make_repo(tmp_path, {"oracle/leases/days.yaml": lease("a" * 64)}, TOUCH, "drifted")
    narrow = make_repo(tmp_path, {"oracle/leases/days.yaml": lease(DIGEST).replace(", days.replay]", "]")},
                       TOUCH, "narrow")
    fine = make_repo(tmp_path, {}, TOUCH, "fine")
    for root, fresh, allow in ((drifted, "fail", "pass"), (narrow, "pass", "fail"), (fine, "pass", "pass")):
        with load_review(root, "main", today=TODAY) as review:
            got = states(review)
            assert (got["leases_fresh"], got["leases_allow"]) == (fresh, allow), root.name
            if fresh == "fail":
                assert "drifted" in evidence(review, "leases_fresh")
            if allow == "fail":
                assert "days.replay" in evidence(review, "leases_allow")


def test_a_freeze_row_the_patch_brings_fails_and_one_from_the_base_passes(tmp_path: Path):
    rows = json.dumps(freeze_row("runner pool is being replaced"), indent=2) + "\n"
    from_patch = make_repo(tmp_path, {}, TOUCH | {"oracle/freezes.json": rows}, "from-patch")
    from_base = make_repo(tmp_path, {"oracle/freezes.json": rows}, TOUCH, "from-base")
    with load_review(from_patch, "main", today=TODAY, oracle_from="HEAD") as review:
        assert states(review)["freezes_preexisting"] == "fail"
        assert "the patch brought it" in evidence(review, "freezes_preexisting")
    with load_review(from_base, "main", today=TODAY) as review:
        assert states(review)["freezes_preexisting"] == "pass"
        assert "runner pool is being replaced" in evidence(review, "freezes_preexisting")


CANDIDATE = """id: days.order_free_split
transform: split-merge
compare: canon
must_not: assert a literal total for one day
subject: agg:summarize
input: {lease: days}
params: {splits: 2}
statement: Summing the temp of each day in two halves and merging equals summing them whole.
drafted_by: drafting-bot <bot@example.invalid>
drafted_at: "2026-11-20T10:00:00Z"
source: ticket DAYS-1
"""


@pytest.mark.parametrize("accepter, state", [(("drafting-bot", "bot@example.invalid"), "fail"),
                                             (("Rita Reviewer", "rita@example.invalid"), "pass")])
def test_an_accepted_draft_must_be_accepted_by_someone_else_than_its_drafter(tmp_path: Path, accepter, state):
    root = based(tmp_path / "drafts")
    commit(root, "quarantine: a drafted candidate", {"oracle/quarantine/days.order_free_split.yaml": CANDIDATE})
    git(root, "config", "user.name", accepter[0])
    git(root, "config", "user.email", accepter[1])
    with load_review(root, "main", today=TODAY) as review:
        actions.accept(review, ["days.order_free_split"], unconfirmed_ok=["days.order_free_split"])
    git(root, "config", "user.name", "t")
    git(root, "config", "user.email", "t@example.invalid")
    git(root, "checkout", "-q", "-f", "main")
    commit(root, "catalog: days.order_free_split owns src/", {"oracle/catalog.yaml": (
        root / "oracle/catalog.yaml").read_text().replace("[days.split_merge, days.replay]",
                                                          "[days.split_merge, days.replay, days.order_free_split]")})
    git(root, "checkout", "-q", "-b", "patch")
    commit(root, "patch", TOUCH)
    with load_review(root, "main", today=TODAY) as review:
        assert "days.order_free_split" in review.touched_relations()
        assert states(review)["drafted_rows_decided"] == state
        assert accepter[1] in evidence(review, "drafted_rows_decided")


def test_without_a_catalog_every_relation_item_is_unknown(tmp_path: Path):
    root = make_repo(tmp_path, {"oracle/catalog.yaml": "relations: [\n"}, TOUCH)
    with load_review(root, "main", today=TODAY) as review:
        got = states(review)
        # the flag items read the patch, not the catalog: they can still be judged
        assert {got[k] for k in got if k not in ("no_golden_literal", "flags_acknowledged")} == {"unknown"}


async def test_m_in_the_console_shows_the_flags_and_the_checklist(demo_repo: Path):
    from relconsole.console.app import ReviewApp
    from tests.test_console import settle

    with load_review(demo_repo, today=TODAY) as review:
        expected_flags = [(f.name, f.where()) for f in review.flags if review.standing(f)]  # warnings aside
        expected_states = [(i.title, i.state) for i in merge_checklist(review)]
    app = ReviewApp(repo=str(demo_repo), today=TODAY, autorun=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        status = str(app.query_one("#status").content)
        assert f"review_flag:{expected_flags[0][0]}" in status and f"{len(expected_flags)} review flags" in status
        await pilot.press("m")
        for _ in range(100):
            if type(app.screen).__name__ == "DetailScreen":
                break
            await pilot.pause(0.05)
        body = str(app.screen.query_one("#detail-body Static").content)
        for name, where in expected_flags:
            assert any(name in line and where in line for line in body.splitlines()), (name, where)
        for title, state in expected_states:
            assert any(title in line and state.upper() in line.upper() for line in body.splitlines()), title
        await pilot.press("escape")
        assert type(app.screen).__name__ != "DetailScreen"


@pytest.mark.parametrize("accepter, state", [(("Tess Drafter", "tess@example.invalid"), "fail"),
                                             (("Rita Reviewer", "rita@example.invalid"), "pass")])
def test_a_seed_row_is_drafted_by_whoever_wrote_its_line(demo_repo: Path, accepter, state):
    """The quarantine file was committed by the maintainers; the row itself by Tess."""
    git(demo_repo, "checkout", "-q", "main")
    git(demo_repo, "config", "user.name", "Tess Drafter")
    git(demo_repo, "config", "user.email", "tess@example.invalid")
    quarantine = demo_repo / "oracle/quarantine/rollout.monotonic.seeds.jsonl"
    quarantine.write_text(quarantine.read_text() + '{"percent": 33, "salt": "sq", "population": 50}\n')
    git(demo_repo, "commit", "-q", "-am", "quarantine: a drafted seed row")
    line = len(quarantine.read_text().splitlines())
    git(demo_repo, "config", "user.name", accepter[0])
    git(demo_repo, "config", "user.email", accepter[1])
    with load_review(demo_repo, "main", today=TODAY) as review:
        actions.accept(review, [], [f"oracle/quarantine/rollout.monotonic.seeds.jsonl:{line}"])
    git(demo_repo, "checkout", "-q", "-f", "agent/patch")
    git(demo_repo, "merge", "-q", "main", "-m", "merge main")
    commit(demo_repo, "touch rollout", {"src/rollout.py": (demo_repo / "src/rollout.py").read_text() + "\n"})
    with load_review(demo_repo, "main", today=TODAY) as review:
        assert "rollout.monotonic" in review.touched_relations()
        assert states(review)["drafted_rows_decided"] == state
        assert "tess@example.invalid" in evidence(review, "drafted_rows_decided")


def test_a_freeze_file_that_does_not_load_leaves_the_freeze_items_unknown(tmp_path: Path):
    root = make_repo(tmp_path, {"oracle/freezes.json": '{"not": "a list"}\n'}, TOUCH)
    with load_review(root, "main", today=TODAY) as review:
        got = states(review)
        assert got["freezes_preexisting"] == got["freeze_reruns_counted"] == "unknown"
        assert "freezes.json" in evidence(review, "freezes_preexisting")


def test_a_frozen_relation_whose_run_judged_nothing_leaves_the_rerun_item_unknown(demo_repo: Path):
    """A subject that returns empty outputs (vacuous: hold) never starts the freeze protocol:
    no rerun was due, so the rerun item cannot fail, and the PR's decision stays the hold."""
    git(demo_repo, "checkout", "-q", "-b", "vacuous", "main")
    source = demo_repo / "src" / "aggregator.py"
    source.write_text(source.read_text().replace(
        "    return {species: summarize_species(group) for species, group in by_species(rows).items()}",
        "    return {species: {} for species in by_species(rows)}"))
    git(demo_repo, "commit", "-qam", "perf: skip the sums")
    with load_review(demo_repo, today=TODAY) as review:
        run_review(review)
        frozen = [r.relation_id for r in review.freezes if r.state == "live"]
        assert frozen and all(review.results[rid].outcome == "vacuous" for rid in frozen)
        assert states(review)["freeze_reruns_counted"] == "unknown"
        assert "not judged" in evidence(review, "freeze_reruns_counted")
        assert not any(d.reason.startswith("checklist:") for d in review.patch_verdicts())
