"""The console driven with the Pilot on the real sample repository.

Each test presses real keys and then checks what the repository shows (git log,
index, work tree) and what the panes show.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from pathlib import Path

import pytest
import yaml

from relconsole.console.app import ReviewApp
from relconsole.console.widgets.pane import Pane
from relconsole.engine.oracle.leases import parse_lease
from bench.gitrepo import git, git_bytes
from tests.conftest import TODAY

SIZE = (160, 48)


async def settle(pilot, timeout: float = 60.0) -> None:
    """Wait until the console has loaded, run and committed everything it started."""
    app = pilot.app
    deadline = time.monotonic() + timeout
    await pilot.pause()
    while app.busy or (app.review is None and app.load_error is None):
        assert time.monotonic() < deadline, f"console still busy: {app.busy_reasons}"
        await pilot.pause(0.05)
    await pilot.pause()


async def until(pilot, predicate, what: str, timeout: float = 30.0) -> None:
    """Pause until ``predicate()`` holds: what the console does after a key (a live filter,
    a redraw) may take more than one pause on a loaded machine. Fails naming ``what``."""
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"never happened: {what}"
        await pilot.pause(0.05)


def prompts(app: ReviewApp, kind: str) -> dict[str, str]:
    """Option id -> plain text of every item in a pane."""
    pane = app.query_one(f"#{kind}", Pane)
    return {o.id: o.prompt.plain for o in pane.options}


async def goto(pilot, kind: str, option_id: str) -> None:
    """Focus a pane and move the cursor with j/k until ``option_id`` is highlighted."""
    await pilot.press(str(("touched", "relations", "leases", "quarantine").index(kind) + 1))
    pane = pilot.app.query_one(f"#{kind}", Pane)
    await pilot.press("g")
    for _ in range(pane.option_count + 1):
        if pane.highlighted_id == option_id:
            return
        await pilot.press("j")
    raise AssertionError(f"{option_id} not reachable in {kind}: {[o.id for o in pane.options]}")


def user_work(repo: Path) -> tuple[bytes, bytes]:
    """Leave a staged new file and an unstaged edit; return (cached diff, unstaged diff)."""
    (repo / "notes.txt").write_text("reviewer's own staged note\n")
    git(repo, "add", "notes.txt")
    readme = repo / "README.md"
    readme.write_text(readme.read_text() + "\nan unstaged edit the console must not touch\n")
    return git_bytes(repo, "diff", "--cached"), git_bytes(repo, "diff")


def assert_user_work_kept(repo: Path, before: tuple[bytes, bytes], branch: str) -> None:
    assert git_bytes(repo, "diff", "--cached") == before[0]
    assert git_bytes(repo, "diff") == before[1]
    assert git(repo, "symbolic-ref", "--short", "HEAD").strip() == branch


def last_commit(repo: Path, ref: str = "main") -> tuple[str, list[tuple[str, str]]]:
    """(subject, [(status, path)]) of the tip of ``ref``."""
    out = git(repo, "log", "-1", "--format=%s", "--name-status", ref).strip().splitlines()
    entries = [tuple(line.split("\t", 1)) for line in out[1:] if line.strip()]
    return out[0], entries


def commits_on(repo: Path, ref: str = "main") -> int:
    return int(git(repo, "rev-list", "--count", ref))


@pytest.mark.parametrize("branch, route", [("agent/patch", "override"), ("main", "confirm")])
async def test_accept_valid_candidate_commits_catalog_row_only(demo_repo: Path, branch: str, route: str):
    """Accept needs a confirming second replay (o), or a second confirmation the message records."""
    git(demo_repo, "checkout", "-q", branch)
    before = user_work(demo_repo)
    catalog_before = git(demo_repo, "show", "main:oracle/catalog.yaml")
    candidate_path = "oracle/quarantine/penguins.mass_permutation.yaml"
    candidate = yaml.safe_load(git(demo_repo, "show", f"main:{candidate_path}"))
    app = ReviewApp(repo=str(demo_repo), today=TODAY)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await goto(pilot, "quarantine", f"c:{candidate_path}")
        assert "not replayed" in prompts(app, "quarantine")[f"c:{candidate_path}"]
        if route == "confirm":
            await pilot.press("o")
            await settle(pilot)
            assert "confirmed" in prompts(app, "quarantine")[f"c:{candidate_path}"]
            await goto(pilot, "quarantine", f"c:{candidate_path}")
            await pilot.press("a")
        else:
            await pilot.press("a")
            assert "accept pending" not in prompts(app, "quarantine")[f"c:{candidate_path}"]
            await pilot.press("y")
        assert "accept pending" in prompts(app, "quarantine")[f"c:{candidate_path}"]
        await pilot.press("c", "y")
        await settle(pilot)
    subject, entries = last_commit(demo_repo)
    assert subject.startswith("catalog:")
    message = git(demo_repo, "log", "-1", "--format=%B", "main")
    assert ("OVERRIDDEN" in message) == (route == "override")
    assert ("second replay: confirmed" in message) == (route == "confirm")
    assert sorted(entries) == [("D", candidate_path), ("M", "oracle/catalog.yaml")]
    diff = git(demo_repo, "diff", "main~1", "main", "--", "oracle/catalog.yaml").splitlines()
    removed = [ln for ln in diff if ln.startswith("-") and not ln.startswith("---")]
    added = [ln[1:] for ln in diff if ln.startswith("+") and not ln.startswith("+++")]
    assert removed == []
    after = yaml.safe_load(git(demo_repo, "show", "main:oracle/catalog.yaml"))
    old = yaml.safe_load(catalog_before)
    assert after["owners"] == old["owners"]
    assert after["relations"][:-1] == old["relations"]
    new_row = after["relations"][-1]
    assert new_row["id"] == candidate["id"] and new_row["kind"] == "permutation"
    assert new_row["subject"] == candidate["subject"] and new_row["input"] == candidate["input"]
    assert any(candidate["id"] in line for line in added)
    assert_user_work_kept(demo_repo, before, branch)
    if branch == "main":
        # the changed paths follow the branch in the index and work tree, nothing else moves
        status = git(demo_repo, "status", "--porcelain").splitlines()
        assert sorted(status) == sorted(["A  notes.txt", " M README.md"])
        assert (demo_repo / "oracle/catalog.yaml").read_bytes() == git_bytes(demo_repo, "show", "main:oracle/catalog.yaml")
        assert not (demo_repo / candidate_path).exists()


@pytest.mark.parametrize("branch", ["agent/patch", "main"])
async def test_delete_candidate_makes_one_quarantine_commit(demo_repo: Path, branch: str):
    git(demo_repo, "checkout", "-q", branch)
    before = user_work(demo_repo)
    path = "oracle/quarantine/penguins.expected_total.yaml"
    count = commits_on(demo_repo)
    app = ReviewApp(repo=str(demo_repo), today=TODAY)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await goto(pilot, "quarantine", f"c:{path}")
        await pilot.press("d")
        await pilot.press("n")  # the confirmation is real: no commit on "no"
        await settle(pilot)
        assert commits_on(demo_repo) == count
        await pilot.press("d", "y")
        await settle(pilot)
        assert f"c:{path}" not in prompts(app, "quarantine")
    subject, entries = last_commit(demo_repo)
    assert subject.startswith("quarantine:")
    assert entries == [("D", path)]
    assert commits_on(demo_repo) == count + 1
    assert_user_work_kept(demo_repo, before, branch)


@pytest.mark.parametrize("branch", ["agent/patch", "main"])
async def test_freeze_commit_stands_alone(demo_repo: Path, branch: str):
    git(demo_repo, "checkout", "-q", branch)
    before = user_work(demo_repo)
    reason = "bill sums drift on the new runner pool; tracked in DATA-7"
    app = ReviewApp(repo=str(demo_repo), head_ref="agent/patch", today=TODAY)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        result = app.review.results["penguins.order_invariant"]
        assert result.outcome == "missed"
        await goto(pilot, "relations", "r:penguins.order_invariant")
        await pilot.press("f")  # no replay says freeze: the console asks for an explicit override
        await settle(pilot)
        assert type(app.screen).__name__ == "ConfirmScreen"
        await pilot.press("y")
        await settle(pilot)
        await pilot.press(*reason.replace(" ", "\0").split("\0")[0])  # type the first word
        for word in reason.split(" ")[1:]:
            await pilot.press("space", *word)
        await pilot.press("enter", "enter")
        await settle(pilot)
    subject, entries = last_commit(demo_repo)
    assert subject.startswith("freeze:")
    assert entries == [("M", "oracle/freezes.json")]
    assert "Override:" in git(demo_repo, "log", "-1", "--format=%B", "main")
    rows = json.loads(git(demo_repo, "show", "main:oracle/freezes.json"))
    row = next(r for r in rows if r["relation_id"] == "penguins.order_invariant")
    assert row["reason"] == reason
    assert row["signature"] == result.signature and row["lease_id"] == "penguins"
    catalog = yaml.safe_load(git(demo_repo, "show", "main:oracle/catalog.yaml"))
    policy = next(r for r in catalog["relations"] if r["id"] == "penguins.order_invariant")["freeze"]
    assert TODAY < dt.date.fromisoformat(row["expires"]) <= TODAY + dt.timedelta(days=policy["max_days"])
    assert row["pass_needed"] <= row["reruns"] and row["reruns"] >= policy["min_reruns"]
    assert_user_work_kept(demo_repo, before, branch)


async def test_seed_rows_accept_two_delete_three(demo_repo: Path):
    quarantine = "oracle/quarantine/rollout.monotonic.seeds.jsonl"
    drafted = git(demo_repo, "show", f"main:{quarantine}").splitlines()
    seeds_before = git(demo_repo, "show", "main:oracle/seeds/rollout.jsonl")
    before = user_work(demo_repo)
    app = ReviewApp(repo=str(demo_repo), today=TODAY)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        rows = {r.line: r for r in app.review.seed_rows}
        valid = sorted(n for n, r in rows.items() if r.valid)
        bad = sorted(n for n, r in rows.items() if not r.valid)
        assert len(valid) == 2 and len(bad) == 3
        shown = prompts(app, "quarantine")
        for number in bad:  # each bad row says why, naming what is wrong with it
            text = shown[f"s:{quarantine}:{number}"]
            assert "✗" in text
        reasons = " ".join("; ".join(rows[n].reasons) for n in bad)
        assert "expected" in reasons and "region" in reasons and "maximum" in reasons
        for number in valid:
            await goto(pilot, "quarantine", f"s:{quarantine}:{number}")
            await pilot.press("space")
        await pilot.press("a", "c", "y")
        await settle(pilot)
        subject, entries = last_commit(demo_repo)
        assert subject.startswith("catalog:")
        assert sorted(entries) == sorted([("M", "oracle/seeds/rollout.jsonl"), ("M", quarantine)])
        seeds_after = git(demo_repo, "show", "main:oracle/seeds/rollout.jsonl")
        assert seeds_after.startswith(seeds_before)
        appended = [json.loads(x) for x in seeds_after[len(seeds_before):].splitlines() if x.strip()]
        assert appended == [json.loads(drafted[n - 1]) for n in valid]
        for row in app.review.seed_rows:
            await goto(pilot, "quarantine", f"s:{row.key}")
            await pilot.press("space")
        await pilot.press("d", "y")
        await settle(pilot)
        assert app.review.seed_rows == []
    subject, entries = last_commit(demo_repo)
    assert subject.startswith("quarantine:")
    assert entries == [("D", quarantine)]
    assert git(demo_repo, "show", "main:oracle/seeds/rollout.jsonl") == seeds_after
    assert_user_work_kept(demo_repo, before, "agent/patch")


async def test_lease_renewal_rules(demo_repo: Path):
    weather = "oracle/leases/weather.yaml"
    stocks = "oracle/leases/stocks.yaml"
    old_weather = git(demo_repo, "show", f"main:{weather}")
    count = commits_on(demo_repo)
    app = ReviewApp(repo=str(demo_repo), today=TODAY)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        # not the owner: refused at once with the reason, no dialog, no commit
        await goto(pilot, "leases", f"l:{stocks}")
        await pilot.press("n")
        await pilot.pause()
        assert app.screen is app.screen_stack[0]
        assert any("only an owner may renew" in n.message for n in app._notifications)
        # beyond the maximum: refused
        await goto(pilot, "leases", f"l:{weather}")
        await pilot.press("n")
        too_far = TODAY + dt.timedelta(days=app.review.layout.renew_max_days + 1)
        await pilot.press("ctrl+a", "ctrl+k", *too_far.isoformat(), "enter")
        await pilot.pause()
        assert "maximum" in str(app.screen.query_one("#dialog-error").content)
        await pilot.press("escape")
        await settle(pilot)
        assert commits_on(demo_repo) == count
        # the owner, within the maximum: one lease commit with only that manifest
        await pilot.press("n", "enter")
        await settle(pilot)
    subject, entries = last_commit(demo_repo)
    assert subject.startswith("lease:")
    assert entries == [("M", weather)]
    old, new = parse_lease(old_weather, weather), parse_lease(git(demo_repo, "show", f"main:{weather}"), weather)
    assert new.sha256 == old.sha256
    assert new.expires == TODAY + dt.timedelta(days=30)
    changed = [ln for ln in git(demo_repo, "diff", "main~1", "main").splitlines()
               if ln[:1] in "+-" and not ln.startswith(("+++", "---"))]
    assert len(changed) == 2 and all("expires" in ln for ln in changed)


async def test_overview_shows_the_review(demo_repo: Path):
    app = ReviewApp(repo=str(demo_repo), today=TODAY)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        review = app.review
        relations = prompts(app, "relations")
        missed = relations["r:penguins.order_invariant"]
        freeze = review.freeze_for("penguins.order_invariant")
        assert "MISSED" in missed and f"/{freeze.reruns}" in missed
        touched = prompts(app, "touched")
        gap_ids = [oid for oid, text in touched.items() if "src/export.py" in text]
        assert gap_ids and "UNOWNED" in touched[gap_ids[0]]
        leases = prompts(app, "leases")
        for status in review.leases:
            text = leases[f"l:{status.source}"]
            assert status.state in text and status.lease.expires.isoformat() in text
        assert {s.state for s in review.leases} >= {"ok", "expiring", "expired"}
        quarantine = prompts(app, "quarantine")
        for candidate in review.candidates:
            text = quarantine[f"c:{candidate.path}"]
            assert ("valid" in text) if candidate.valid else ("rejected" in text)
        assert sum(c.valid for c in review.candidates) == 1 and len(review.candidates) == 4
        status = str(app.query_one("#status").content)
        assert review.decision().decision.upper() in status and "unowned" in status
        # selecting the touched path narrows the relations to its owners
        aggregator = next(oid for oid, text in touched.items() if "src/aggregator.py" in text)
        await goto(pilot, "touched", aggregator)
        await pilot.press("enter")
        narrowed = set(prompts(app, "relations"))
        owners = {f"r:{rid}" for b in review.bindings if b.path == "src/aggregator.py" for rid in b.relations}
        assert narrowed == owners
        # opening the missed relation shows both canonical outputs, disagreeing keys marked
        await goto(pilot, "relations", "r:penguins.order_invariant")
        await pilot.press("enter")
        await pilot.pause()
        left = str(app.screen.query_one("#detail-left Static").content)
        right = str(app.screen.query_one("#detail-right Static").content)
        differing = review.results["penguins.order_invariant"].first.differing
        assert differing
        for key in differing:
            leaf = key.rsplit(".", 1)[-1]
            assert f"≠   {leaf}" in left and f"≠   {leaf}" in right
        await pilot.press("escape")
        await pilot.press("question_mark")
        await pilot.pause()
        assert "HelpScreen" == type(app.screen).__name__
