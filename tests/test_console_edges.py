"""The console on hostile or broken input: literal rendering, bad files, odd checkouts."""

from __future__ import annotations

from pathlib import Path

from relconsole.console.app import ReviewApp
from bench.gitrepo import git
from tests.conftest import TODAY
from tests.test_console import SIZE, goto, prompts, settle

MARKUP = "[bold]loud[/bold] [link=https://example.invalid]click[/link] [@click=app.quit]x[/]"
ESCAPE = "\x1b[31mred\x1b[0m \x1b]0;title\x07"


def commit_on(repo: Path, branch: str, files: dict[str, str], message: str) -> None:
    current = git(repo, "symbolic-ref", "--short", "HEAD").strip()
    git(repo, "checkout", "-q", branch)
    for path, text in files.items():
        target = repo / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        git(repo, "add", "--", path)
    git(repo, "commit", "-q", "-m", message)
    git(repo, "checkout", "-q", current)


async def test_markup_and_escapes_are_shown_literally(demo_repo: Path):
    candidate = (
        "id: penguins.hostile\ntransform: permute\ncompare: canon\n"
        f"must_not: \"{MARKUP}\"\nsubject: aggregator:summarize\ninput: {{lease: penguins}}\n"
        f"statement: \"Shuffling keeps body_mass_g sums {MARKUP} \\e[31mred\"\n"
        "drafted_by: model\ndrafted_at: '2026-11-28'\nsource: ticket\n")
    commit_on(demo_repo, "main", {"oracle/quarantine/penguins.hostile.yaml": candidate}, "hostile candidate")
    odd_path = f"src/[bold]loud[/bold] [link=file:x]click[/link] {ESCAPE}.py"
    commit_on(demo_repo, "agent/patch", {odd_path: "x = 1\n"}, "odd path")
    app = ReviewApp(repo=str(demo_repo), today=TODAY)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        touched = " ".join(prompts(app, "touched").values())
        assert "[bold]loud[/bold]" in touched and "[link=file:x]click[/link]" in touched
        assert "\\x1b[31mred" in touched and "\x1b" not in touched
        shown = prompts(app, "quarantine")["c:oracle/quarantine/penguins.hostile.yaml"]
        assert "penguins.hostile" in shown
        await goto(pilot, "quarantine", "c:oracle/quarantine/penguins.hostile.yaml")
        await pilot.press("enter")
        await pilot.pause()
        body = app.screen.query_one("#detail-body Static").content
        assert "[@click=app.quit]x[/]" in str(body) and "\x1b" not in str(body)
        await pilot.press("escape")
        assert app.is_running  # a live [@click=app.quit] would have quit


async def test_bad_catalog_shows_in_the_pane_not_a_traceback(demo_repo: Path):
    catalog = git(demo_repo, "show", "main:oracle/catalog.yaml")
    broken = catalog.replace("relations:\n", "relations:\nrelations:\n", 1)
    commit_on(demo_repo, "main", {"oracle/catalog.yaml": broken}, "duplicate key")
    line = broken.splitlines().index("relations:") + 2
    app = ReviewApp(repo=str(demo_repo), today=TODAY)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        errors = [t for oid, t in prompts(app, "relations").items() if oid.startswith("e:")]
        assert any(f"oracle/catalog.yaml:{line}" in t and "duplicate key" in t for t in errors), errors
        assert "BAD INPUT" in str(app.query_one("#status").content)
        assert app.running == set() and app.review.results == {}
        # without an owner map nothing may be called a gap, and quarantine still lists its items
        assert {b.state for b in app.review.bindings} <= {"unknown", "protected"}
        assert len(app.review.candidates) == 4 and not any(c.valid for c in app.review.candidates)
        await pilot.press("q")
    assert app.return_code == 5


async def test_unrelated_histories_abort_with_a_message(demo_repo: Path):
    git(demo_repo, "checkout", "-q", "--orphan", "elsewhere")
    git(demo_repo, "commit", "-q", "-m", "unrelated root")
    app = ReviewApp(repo=str(demo_repo), base_ref="main", today=TODAY)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.review is None and "merge base" in app.load_error
        assert "merge base" in str(app.query_one("#status").content)


async def test_detached_head_reviews_and_commits_to_main(demo_repo: Path):
    head = git(demo_repo, "rev-parse", "agent/patch").strip()
    git(demo_repo, "checkout", "-q", "--detach", head)
    app = ReviewApp(repo=str(demo_repo), today=TODAY)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.review.results["penguins.order_invariant"].outcome == "missed"
        path = "oracle/quarantine/weather.frozen_ingest.yaml"
        await goto(pilot, "quarantine", f"c:{path}")
        await pilot.press("d", "y")
        await settle(pilot)
    assert git(demo_repo, "log", "-1", "--format=%s", "main").startswith("quarantine:")
    assert git(demo_repo, "rev-parse", "HEAD").strip() == head


async def test_catalog_edit_on_the_patch_changes_nothing_but_is_flagged(demo_repo: Path):
    app = ReviewApp(repo=str(demo_repo), today=TODAY)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        review = app.review
        # the agent's branch loosens the relation to a tolerance; the review still misses
        assert review.results["penguins.order_invariant"].outcome == "missed"
        assert review.catalog.get("penguins.order_invariant").compare == "exact"
        assert "penguins.order_invariant" in review.changed_identity
        flagged = {f.path for f in review.flags if f.name == "protected_path_changed"}
        assert "oracle/catalog.yaml" in flagged
        assert "review flag" in str(app.query_one("#status").content)
