"""Second replay of a quarantine candidate (SPEC §10, §7, §5, §8 row 5) on real repositories.

The demo repository's one valid candidate is deterministic: two replays must agree and it
is confirmed. A crafted repository holds a candidate whose subject reads an environment
variable the workers inherit: with it unset the subject is a sum (the permutation holds),
with it set it answers with the first row (the permutation misses, the same way for the
same seed), so flipping it between the first and the second replay is a candidate that
honestly disagrees with itself, and it must be discarded.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import textwrap
import uuid
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import relconsole.cli.main as cli
from relconsole.engine.gate.confirm import _disagreement, confirm_candidate
from relconsole.engine.gate.confirmrun import ConfirmOptions, ConfirmRefused
from relconsole.engine.gate.confirmstate import (CONFIRMED, DISCARDED, REPLAYED_ONCE, UNREPLAYED, ConfirmState,
                                                 candidate_state, state_dir)
from relconsole.engine.decision import decide
from relconsole.engine.errors import (EXIT_ABORT, EXIT_HOLD, EXIT_PASS, EXIT_REJECT, EXIT_USAGE, CommitRefused,
                                      UsageError)
from relconsole.engine.gate.review import load_review
from relconsole.engine.gate.wslease.wslease import open_store
from relconsole.engine.gate.wslease.wsleasestore import LeaseHeld
from bench.gitrepo import git, reviewed_repo
from tests.conftest import TODAY
from tests import redis_server

PROJECT = Path(__file__).resolve().parents[1]
FLIP = "ORDERS_FLIP"  # handed to the subject by the repository's pass_env
DEMO_CANDIDATE = "penguins.mass_permutation"
redis_url = redis_server.redis_url  # the session's Redis server, as a fixture of this module
CANDIDATE_PATH = "oracle/quarantine/orders.qty_permutation.yaml"

SUBJECT = f"""\
import os


def total(rows):
    if os.environ.get({FLIP!r}) == "on":
        return [row["sku"] for row in rows]  # the order itself: any shuffle that moves a row misses
    return sum(int(row["qty"]) for row in rows)
"""
CORPUS = "sku,qty\n" + "".join(f"s{n},{n * 7 % 11 + 1}\n" for n in range(12))
CANDIDATE = """\
id: orders.qty_permutation
transform: permute
compare: exact
must_not: assert a literal qty total in a test
subject: orders:total
input: {lease: orders}
params: {shuffles: 3, seed: 5}
statement: Shuffling the order rows leaves the qty total unchanged.
drafted_by: llm -m test-model
drafted_at: "2026-11-28T10:00:00Z"
source: "ticket T-1"
"""


@pytest.fixture(autouse=True)
def _workers_find_relconsole(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(PROJECT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    monkeypatch.delenv("RELCONSOLE_LEASE_URL", raising=False)
    monkeypatch.delenv(FLIP, raising=False)


@pytest.fixture(params=["sqlite", "redis"])
def store_url(request, tmp_path) -> str:
    """The workspace lease store, embedded or shared (§5: the same semantics on both)."""
    if request.param == "sqlite":
        return f"sqlite://{tmp_path / 'leases.sqlite3'}"
    return request.getfixturevalue("redis_url")


def orders_repo(tmp_path: Path) -> Path:
    """A reviewed repository: ``orders.py`` on main and patched on ``patch``, a lease on the
    orders corpus (pinned), a catalog, and one valid candidate in quarantine."""
    digest = hashlib.sha256(CORPUS.encode()).hexdigest()
    catalog = textwrap.dedent("""\
        owners:
          "orders.py": [orders.count]
          "notes.txt": []
        relations:
          - id: orders.count
            kind: idempotence
            subject: orders:total
            input: {lease: orders}
            compare: exact
            statement: Totalling twice is totalling once.
        """)
    lease = (f"id: orders\npath: oracle/data/orders.csv\nsha256: \"{digest}\"\nexpires: 2027-06-30\n"
             "owner: t@example.invalid\nallowed_relations: [orders.count]\n")
    base = {"orders.py": SUBJECT, "oracle/catalog.yaml": catalog, "oracle/leases/orders.yaml": lease,
            "oracle/data/orders.csv": CORPUS, "oracle/pins.json": json.dumps({"oracle/data/orders.csv": f"sha256:{digest}"}),
            CANDIDATE_PATH: CANDIDATE, "pyproject.toml": f'[tool.relconsole]\npass_env = ["{FLIP}"]\n'}
    return reviewed_repo(tmp_path / "orders", base, {"orders.py": SUBJECT + "\n# patched\n"})


def review_of(repo: Path):
    return load_review(repo, "main", "HEAD", TODAY)


def candidate(review, cid: str):
    return next(c for c in review.candidates if c.id == cid)


def oracle_log(repo: Path) -> list[str]:
    return git(repo, "log", "--format=%H", "main").split()


def user_work(repo: Path) -> tuple[str, str, str]:
    """Everything a user has in flight: status, unstaged diff, staged diff."""
    return (git(repo, "status", "--porcelain", "--untracked-files=all"), git(repo, "diff"),
            git(repo, "diff", "--cached"))


# --- a deterministic candidate is confirmed ---------------------------------------------------

def test_a_deterministic_candidate_is_confirmed_and_its_state_is_keyed_by_its_bytes(demo_repo):
    with review_of(demo_repo) as review:
        before = candidate_state(review, candidate(review, DEMO_CANDIDATE))
        assert before.state == UNREPLAYED and before.first is None
        outcome = confirm_candidate(review, DEMO_CANDIDATE)
        blob = git(demo_repo, "show", f"main:oracle/quarantine/{DEMO_CANDIDATE}.yaml").encode()
    state = outcome.state
    assert (state.state, outcome.exit_code, outcome.ran) == (CONFIRMED, EXIT_PASS, ["first", "second"])
    assert state.content_sha256 == hashlib.sha256(blob).hexdigest()
    assert state.file == state_dir(review) / f"{state.content_sha256}.json"
    on_disk = json.loads(state.file.read_text())
    assert on_disk["state"] == CONFIRMED and on_disk["content_sha256"] == state.content_sha256
    first, second = state.first, state.second
    # the second replay ran on a new workspace lease, in freshly created worktrees, on the same code
    assert first["lease"]["id"] != second["lease"]["id"]
    assert second["lease"]["generation"] > first["lease"]["generation"]
    assert (first["worktree"], second["worktree"]) == ("pooled", "fresh")
    assert [first[k] for k in ("head", "merge_base", "oracle")] == [second[k] for k in ("head", "merge_base", "oracle")]
    for side in ("head", "base"):
        assert first["sides"][side]["outcome"] == second["sides"][side]["outcome"]
        assert first["sides"][side]["signature"] == second["sides"][side]["signature"]
    first_sheet = json.loads(Path(first["sheet"]).read_text())
    assert first_sheet["predicate_state"] == "quarantine" and first_sheet["test_id"] == DEMO_CANDIDATE
    assert first_sheet["lease"]["generation"] == first["lease"]["generation"]
    assert json.loads(Path(second["sheet"]).read_text())["predicate_state"] == "confirmed"
    assert any("allowed_relations" in note for note in outcome.notes)  # accepting will need a lease: commit
    # a new review (a new console, the CLI) reads the same state, and confirming again runs nothing
    with review_of(demo_repo) as again:
        assert candidate_state(again, candidate(again, DEMO_CANDIDATE)).state == CONFIRMED
        assert confirm_candidate(again, DEMO_CANDIDATE).ran == []


def test_editing_one_byte_of_a_confirmed_candidate_voids_the_confirmation(demo_repo):
    with review_of(demo_repo) as review:
        confirmed = confirm_candidate(review, DEMO_CANDIDATE).state
    path = demo_repo / f"oracle/quarantine/{DEMO_CANDIDATE}.yaml"
    git(demo_repo, "checkout", "-q", "main")
    path.write_bytes(path.read_bytes().replace(b"seed: 11", b"seed: 12"))
    git(demo_repo, "commit", "-q", "-am", "catalog keeper edits the candidate's seed")
    git(demo_repo, "checkout", "-q", "agent/patch")
    with review_of(demo_repo) as review:
        edited = candidate_state(review, candidate(review, DEMO_CANDIDATE))
    assert edited.state == UNREPLAYED and edited.content_sha256 != confirmed.content_sha256
    assert confirmed.file.is_file()  # the old bytes' record stays; it just no longer applies


# --- a non-deterministic candidate is discarded ------------------------------------------------

def test_a_candidate_whose_second_replay_disagrees_is_discarded_in_one_quarantine_commit(tmp_path, monkeypatch):
    repo = orders_repo(tmp_path)
    (repo / "orders.py").write_text(SUBJECT + "\n# unstaged work\n")
    (repo / "notes.txt").write_text("staged work\n")
    git(repo, "add", "notes.txt")
    work, log = user_work(repo), oracle_log(repo)
    with review_of(repo) as review:
        held = confirm_candidate(review, "orders.qty_permutation", options=ConfirmOptions(first_only=True))
        assert (held.state.state, held.exit_code, held.ran) == (REPLAYED_ONCE, EXIT_HOLD, ["first"])
        sheet = json.loads(Path(held.state.first["sheet"]).read_text())
        decision = decide(sheet)
        assert (decision.decision, decision.reason, decision.row) == ("hold", "second_replay_required", 5)
        assert oracle_log(repo) == log
        monkeypatch.setenv(FLIP, "on")  # from here the subject answers with the first row
        outcome = confirm_candidate(review, "orders.qty_permutation")
    assert outcome.ran == ["second"]  # the recorded first replay is not run again
    assert (outcome.state.state, outcome.exit_code) == (DISCARDED, EXIT_REJECT)
    first, second = outcome.state.first["sides"]["head"], outcome.state.second["sides"]["head"]
    assert (first["outcome"], second["outcome"]) == ("held", "missed")
    assert outcome.state.second["sides"]["base"]["outcome"] == "missed"  # the subject is the same on base
    new = oracle_log(repo)
    assert new[1:] == log and len(new) == len(log) + 1  # exactly one commit, on the oracle branch
    assert git(repo, "show", "--format=", "--name-status", new[0]).split() == ["D", CANDIDATE_PATH]
    message = git(repo, "log", "-1", "--format=%B", new[0])
    assert message.startswith("quarantine: discard orders.qty_permutation")
    for needed in ("on HEAD", "on the merge base", "first replay", "second replay", first["signature"],
                   second["signature"], outcome.state.content_sha256):
        assert needed in message
    assert user_work(repo) == work  # staged and unstaged work untouched
    with review_of(repo) as later:
        assert all(c.id != "orders.qty_permutation" for c in later.candidates)


def test_a_refused_discard_commit_is_made_by_the_next_call_without_replaying(tmp_path, monkeypatch):
    repo = orders_repo(tmp_path)
    git(repo, "checkout", "-q", "main")  # the oracle branch checked out, the candidate edited in it
    (repo / CANDIDATE_PATH).write_text(CANDIDATE + "# a keeper's unsaved note\n")
    log = oracle_log(repo)
    with review_of(repo) as review:
        confirm_candidate(review, "orders.qty_permutation", options=ConfirmOptions(first_only=True))
        monkeypatch.setenv(FLIP, "on")
        with pytest.raises(CommitRefused, match="uncommitted changes"):
            confirm_candidate(review, "orders.qty_permutation")
        assert oracle_log(repo) == log
        state = candidate_state(review, candidate(review, "orders.qty_permutation"))
        assert state.state == DISCARDED and state.commit is None  # decided: never replayed again
        monkeypatch.delenv(FLIP)  # a replay now would agree, so only the record can discard it
        (repo / CANDIDATE_PATH).write_text(CANDIDATE)
        again = confirm_candidate(review, "orders.qty_permutation")
    assert again.ran == [] and again.exit_code == EXIT_REJECT and again.commit is not None
    assert oracle_log(repo)[1:] == log and not (repo / CANDIDATE_PATH).exists()
    assert json.loads(state.file.read_text())["commit"] == again.commit.sha


def test_the_cli_holds_after_the_first_replay_and_rejects_on_disagreement(tmp_path, monkeypatch, capsys):
    repo = orders_repo(tmp_path)
    args = ["confirm", "orders.qty_permutation", "--repo", str(repo), "--base", "main", "--today", TODAY.isoformat()]
    assert cli.main(args + ["--first-only"]) == EXIT_HOLD
    capsys.readouterr()
    monkeypatch.setenv(FLIP, "on")
    assert cli.main(args + ["--json"]) == EXIT_REJECT
    payload = json.loads(capsys.readouterr().out)
    assert payload["state"] == DISCARDED and payload["ran"] == ["second"]
    assert payload["commit"] == oracle_log(repo)[0]
    assert git(repo, "log", "-1", "--format=%s", "main").startswith("quarantine:")


def test_a_candidate_that_agrees_with_itself_in_the_crafted_repo_is_confirmed_by_the_cli(tmp_path, capsys):
    repo = orders_repo(tmp_path)
    log = oracle_log(repo)
    code = cli.main(["confirm", "orders.qty_permutation", "--repo", str(repo), "--base", "main",
                     "--today", TODAY.isoformat()])
    out = capsys.readouterr().out
    assert code == EXIT_PASS and "orders.qty_permutation: confirmed" in out
    assert oracle_log(repo) == log  # confirmation never commits, never merges


def test_cancelling_the_second_replay_keeps_the_first_and_releases_the_lease(tmp_path):
    from relconsole.engine.relations.pool import Cancel
    from relconsole.engine.gate.replay.replayrun import ReplayCancelled
    repo = orders_repo(tmp_path)
    cancel, steps = Cancel(), []

    def progress(step):
        steps.append(step)
        if step.step.startswith("second replay"):
            cancel.cancel()  # as the console does when the reviewer quits

    with review_of(repo) as review, open_store(None, review.repo.common_dir) as store:
        with pytest.raises(ReplayCancelled):
            confirm_candidate(review, "orders.qty_permutation", store, progress, cancel,
                              ConfirmOptions(workspace="ws-cancel"))
        state = candidate_state(review, candidate(review, "orders.qty_permutation"))
        assert state.state == REPLAYED_ONCE and state.second is None
        assert store.status("ws-cancel").state == "missing"
        assert not list(state_dir(review).glob("*.second.sheet.json"))
    fractions = [s.fraction for s in steps if s.fraction is not None]
    assert fractions == sorted(fractions) and 0 < max(fractions) <= 0.5  # the first half, in order
    assert git(repo, "show", f"main:{CANDIDATE_PATH}") == CANDIDATE


# --- refusals ----------------------------------------------------------------------------------

def test_a_second_holder_on_the_workspace_lease_is_refused(tmp_path, store_url):
    repo = orders_repo(tmp_path)
    workspace = f"confirm-{uuid.uuid4().hex[:12]}"
    with open_store(store_url, ".") as store, review_of(repo) as review:
        store.acquire(workspace, "nightly-job@ci", 60)
        try:
            with pytest.raises(LeaseHeld, match="nightly-job@ci") as refused:
                confirm_candidate(review, "orders.qty_permutation", store,
                                  options=ConfirmOptions(workspace=workspace, holder="reviewer"))
            assert refused.value.exit_code == EXIT_ABORT
            state = candidate_state(review, candidate(review, "orders.qty_permutation"))
            assert state.state == UNREPLAYED and not state.file.exists()
            assert store.get(workspace).holder == "nightly-job@ci"
        finally:
            store.release(workspace, "nightly-job@ci")
    code = cli.main(["confirm", "orders.qty_permutation", "--repo", str(repo), "--base", "main",
                     "--today", TODAY.isoformat(), "--lease-url", store_url, "--workspace", workspace,
                     "--holder", "reviewer", "--first-only"])
    assert code == EXIT_HOLD  # once the other holder released it, the same call runs


def test_the_cli_aborts_when_another_holder_has_the_workspace(tmp_path, capsys):
    repo = orders_repo(tmp_path)
    url = f"sqlite://{tmp_path / 'leases.sqlite3'}"
    with open_store(url, ".") as store:
        store.acquire("busy", "other@ci", 60)
    code = cli.main(["confirm", "orders.qty_permutation", "--repo", str(repo), "--base", "main",
                     "--lease-url", url, "--workspace", "busy", "--json", "--today", TODAY.isoformat()])
    assert code == EXIT_ABORT
    assert json.loads(capsys.readouterr().out)["error"]["holder"] == "other@ci"


def test_a_rejected_or_unknown_candidate_cannot_be_confirmed(demo_repo, capsys):
    with review_of(demo_repo) as review:
        rejected = candidate(review, "penguins.expected_total")
        assert not rejected.valid
        with pytest.raises(ConfirmRefused, match="expected_total") as refused:
            confirm_candidate(review, rejected.id)
        assert refused.value.exit_code == EXIT_USAGE
        assert rejected.reasons[0] in str(refused.value)
        with pytest.raises(UsageError):
            confirm_candidate(review, "no.such.candidate")
        assert candidate_state(review, rejected).state == UNREPLAYED
    base = ["--repo", str(demo_repo), "--today", TODAY.isoformat()]
    assert cli.main(["confirm", "penguins.expected_total", *base]) == EXIT_USAGE
    assert cli.main(["confirm", "no.such.candidate", *base]) == EXIT_USAGE
    assert "no candidate" in capsys.readouterr().err


def test_a_candidate_reading_an_expired_lease_is_refused_before_any_run(demo_repo):
    with review_of(demo_repo) as review:
        valid = candidate(review, DEMO_CANDIDATE)
        review.lease("penguins").state = "expired"  # as §4 judges it on a later day
        with pytest.raises(ConfirmRefused, match="expired"):
            confirm_candidate(review, valid.id)
        assert not (state_dir(review)).exists() or not list(state_dir(review).iterdir())


def test_a_damaged_state_file_reads_as_unreplayed(demo_repo):
    with review_of(demo_repo) as review:
        valid = candidate(review, DEMO_CANDIDATE)
        file = candidate_state(review, valid).file
        file.parent.mkdir(parents=True, exist_ok=True)
        for damage in ("{not json", json.dumps({"relconsole_candidate_state": 1, "state": CONFIRMED,
                                                "content_sha256": file.stem, "first": None, "second": None})):
            file.write_text(damage)
            state = candidate_state(review, valid)
            assert state.state == UNREPLAYED and str(file) in state.reason


# --- agreement as a relation -------------------------------------------------------------------

_run = st.fixed_dictionaries({"held": st.booleans(), "signature": st.sampled_from([None, "sha256:a", "sha256:b"])})


@st.composite
def records(draw):
    """A replay record with 1..4 runs per side on seeds 0..n-1."""
    n = draw(st.integers(1, 4))
    sides = {}
    for name in ("head", "base"):
        runs = [dict(draw(_run), seed=s, describe="x") for s in range(n)]
        sides[name] = {"commit": "c" * 40, "outcome": "?", "runs": n, "misses": 0, "signature": "none",
                       "per_seed": runs}
    return {"sides": sides, "lease": {"generation": 1}, "worktree": "pooled", "at": "t"}


@given(records(), st.sampled_from(["head", "base"]), st.data())
def test_replays_agree_exactly_when_every_run_on_every_side_agrees(record, side, data):
    assert _disagreement(record, copy.deepcopy(record)) is None
    other = copy.deepcopy(record)
    runs = other["sides"][side]["per_seed"]
    index = data.draw(st.integers(0, len(runs) - 1))
    runs[index]["held"] = not runs[index]["held"]
    reason = _disagreement(record, other)
    assert reason is not None and ("HEAD" if side == "head" else "merge base") in reason
    assert f"seed {runs[index]['seed']}" in reason


def _side(runs: int, misses: int, why: str = "disagree on total") -> dict:
    return {"outcome": "held" if not misses else "missed" if misses == runs else "mixed", "runs": runs,
            "misses": misses, "per_seed": [{"seed": n, "held": n >= misses, "describe": "held" if n >= misses else why}
                                           for n in range(runs)]}


@given(st.integers(1, 6), st.integers(0, 6), st.integers(0, 6), st.integers(0, 6))
def test_a_confirmed_candidate_is_sound_only_when_the_base_never_missed(runs, head1, base1, base2):
    """Red team: 'holds on no side' let a candidate that missed 2 of 3 runs on the base be
    accepted. Any base miss in either replay marks it; head misses alone (a catch of the
    patch) never do."""
    head1, base1, base2 = min(head1, runs), min(base1, runs), min(base2, runs)
    state = ConfirmState("c", "oracle/quarantine/c.yaml", "0" * 64, CONFIRMED,
                         first={"sides": {"head": _side(runs, head1), "base": _side(runs, base1)}},
                         second={"sides": {"head": _side(runs, head1), "base": _side(runs, base2)}})
    assert (state.base_miss is None) == (base1 + base2 == 0)
    if state.base_miss:
        assert f"{base1 + base2} of {2 * runs} base runs missed" in state.base_miss
    assert not state.subject_not_on_base


def test_a_subject_the_patch_adds_is_told_to_wait_for_the_merge():
    from relconsole.engine.gate.acceptnote import base_miss_advice
    missing = "AttributeError: module 'aggregator' has no attribute 'partial'"
    state = ConfirmState("c", "p", "0" * 64, CONFIRMED,
                         first={"sides": {"head": _side(3, 3), "base": _side(3, 3, missing)}})
    assert state.subject_not_on_base and "merged" in base_miss_advice(state)


def test_a_confirmation_made_under_another_base_does_not_accept_here(demo_repo):
    """Red team: the state is keyed by the candidate's bytes; a confirm under --base agent/patch
    (where the base held) was reused by a plain accept whose base misses."""
    with review_of(demo_repo) as review:
        valid = candidate(review, DEMO_CANDIDATE)
        state = candidate_state(review, valid)
        record = {"head": review.head_sha, "merge_base": review.merge_base, "oracle": review.oracle_sha,
                  "sides": {"head": {"runs": 3, "misses": 0}, "base": {"runs": 3, "misses": 0}}}
        here = ConfirmState(state.candidate_id, state.path, state.content_sha256, CONFIRMED,
                            first=dict(record), second=dict(record))
        assert here.elsewhere(review) is None
        moved = ConfirmState(state.candidate_id, state.path, state.content_sha256, CONFIRMED,
                             first=dict(record, merge_base=review.head_sha), second=dict(record))
        why = moved.elsewhere(review)
        assert why and review.head_sha[:12] in why and review.merge_base[:12] in why


def test_the_cli_refuses_to_accept_on_a_confirmation_from_another_base(demo_repo, capsys):
    base = ["--repo", str(demo_repo), "--today", TODAY.isoformat()]
    # the replays agree (the state is confirmed), but under that base the patch is the base and
    # its bug misses there too: confirm does not call that confirmed (issue 36)
    assert cli.main(["confirm", DEMO_CANDIDATE, "--base", "agent/patch", *base]) == EXIT_REJECT
    assert "not confirmed: it misses on the base" in capsys.readouterr().out
    tip = git(demo_repo, "rev-parse", "main").strip()
    assert cli.main(["accept", DEMO_CANDIDATE, *base]) == EXIT_USAGE
    assert "confirmed for another review" in capsys.readouterr().err
    assert git(demo_repo, "rev-parse", "main").strip() == tip
