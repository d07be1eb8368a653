"""Acknowledging a review flag (SPEC §9 ``review:``): who may, what it clears, when it is void."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relconsole.cli.main import main
from relconsole.console.app import ReviewApp
from relconsole.engine.gate import actions
from relconsole.engine.gate.flags.acks import statement_at, fingerprint, parse_acks, with_ack
from relconsole.engine.errors import (EXIT_BAD_INPUT, EXIT_PASS, EXIT_REJECT, EXIT_USAGE, BadInputError, CommitRefused,
                                      UsageError)
from relconsole.engine.gate.flags.patchflags import Flag
from relconsole.engine.gate.review import load_review
from relconsole.engine.repo.splitcheck import check_split
from bench.gitrepo import git, git_bytes
from tests.conftest import TODAY
from tests.test_console import SIZE, assert_user_work_kept, last_commit, settle, user_work

GOLDEN = "golden_literal"


def review_of(repo: Path):
    return load_review(repo, "main", "agent/patch", TODAY)


def open_reasons(review) -> list[str]:
    """The review_flag reasons still rejecting, one per flag not acknowledged."""
    return [f.name for f in review.flags if review.acknowledgement(f) is None]


def as_reviewer(repo: Path) -> None:
    git(repo, "config", "user.name", "Rita Reviewer")
    git(repo, "config", "user.email", "rita@example.org")


def test_an_acknowledged_flag_stops_rejecting_and_only_that_one(demo_repo: Path):
    as_reviewer(demo_repo)
    review = review_of(demo_repo)
    try:
        before = open_reasons(review)
        golden = [f for f in review.flags if f.name == GOLDEN]
        assert len(golden) >= 2  # the sample's patch restates two answers in its tests
        result = actions.acknowledge(review, review.flag_id(golden[0])[:8], "fixture sum computed by hand")
    finally:
        review.close()
    assert result.kind == "review" and result.paths == ("oracle/acks.json",)
    assert check_split(demo_repo, "main~1..main") == []  # a review: commit stands alone
    again = review_of(demo_repo)
    try:
        after = open_reasons(again)
        assert sorted(before) == sorted(after + [GOLDEN])  # exactly one flag cleared
        assert again.decision().reason.startswith("review_flag:")  # the others still reject
        ack = again.acknowledgement(golden[0])
        assert ack is not None and ack.by == "Rita Reviewer <rita@example.org>"
    finally:
        again.close()


def test_the_patch_s_author_cannot_acknowledge_its_own_flags(demo_repo: Path):
    author = git(demo_repo, "log", "-1", "--format=%an\t%ae", "agent/patch").strip().split("\t")
    git(demo_repo, "config", "user.name", author[0])
    git(demo_repo, "config", "user.email", author[1])
    tip = git(demo_repo, "rev-parse", "main")
    review = review_of(demo_repo)
    try:
        flag = next(f for f in review.flags if f.name == GOLDEN)
        with pytest.raises(CommitRefused, match="own author"):
            actions.acknowledge(review, review.flag_id(flag), "looks fine to me")
    finally:
        review.close()
    assert git(demo_repo, "rev-parse", "main") == tip


def test_an_acknowledgement_written_by_the_author_or_inside_the_patch_counts_for_nothing(demo_repo: Path):
    review = review_of(demo_repo)
    try:
        flag = next(f for f in review.flags if f.name == GOLDEN)
        fid, count = review.flag_id(flag), len(open_reasons(review))
    finally:
        review.close()
    row = {"id": fid, "flag": GOLDEN, "path": flag.path, "by": "coding-agent <agent@example.invalid>",
           "reason": "trust me"}
    git(demo_repo, "checkout", "-q", "main")  # on the base, but by the patch's author
    (demo_repo / "oracle" / "acks.json").write_text(with_ack(None, row, "oracle/acks.json"))
    git(demo_repo, "add", "oracle/acks.json")
    git(demo_repo, "commit", "-q", "-m", "review: self-acknowledged")
    git(demo_repo, "checkout", "-q", "agent/patch")
    review = review_of(demo_repo)
    try:
        assert len(open_reasons(review)) == count
        from relconsole.engine.gate.checklist import merge_checklist
        item = next(i for i in merge_checklist(review) if i.key == "flags_acknowledged")
        assert item.state == "fail" and "void" in item.evidence[0]
    finally:
        review.close()
    # a reviewer's row, committed inside the patch: the review reads acks from the base only
    git(demo_repo, "checkout", "-q", "agent/patch")
    (demo_repo / "oracle" / "acks.json").write_text(with_ack(None, dict(row, by="Rita <rita@example.org>"),
                                                              "oracle/acks.json"))
    git(demo_repo, "add", "oracle/acks.json")
    git(demo_repo, "commit", "-qm", "agent: acks")
    review = review_of(demo_repo)
    try:
        same = [f for f in review.flags if (f.name, f.path, f.line) == (flag.name, flag.path, flag.line)]
        assert same and all(review.acknowledgement(f) is None for f in same)  # nothing cleared
        assert any(f.name == "protected_path_changed" and f.path == "oracle/acks.json" for f in review.flags)
    finally:
        review.close()


def test_an_acknowledgement_is_void_once_the_flagged_line_changes(demo_repo: Path):
    as_reviewer(demo_repo)
    review = review_of(demo_repo)
    try:
        flag = next(f for f in review.flags if f.name == GOLDEN)
        actions.acknowledge(review, review.flag_id(flag), "fixture sum computed by hand")
    finally:
        review.close()
    test_file = demo_repo / flag.path
    lines = test_file.read_text().splitlines(keepends=True)
    git(demo_repo, "checkout", "-q", "agent/patch")
    lines[flag.line - 1] = lines[flag.line - 1].replace("558800.0", "558801.0")
    test_file.write_text("".join(lines))
    git(demo_repo, "commit", "-qam", "agent: new golden")
    review = review_of(demo_repo)
    try:
        new = [f for f in review.flags if f.name == GOLDEN and f.line == flag.line]
        assert new and all(review.acknowledgement(f) is None for f in new)
        assert f"review_flag:{GOLDEN}" in {v.reason for v in review.patch_verdicts()}
    finally:
        review.close()


names = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=12)


@settings(max_examples=80, deadline=None)
@given(names, st.one_of(st.none(), st.text("0123456789abcdef", min_size=40, max_size=40)), names,
       st.integers(1, 9999), names, st.sampled_from(["name", "path", "content"]), names)
def test_a_fingerprint_is_bound_to_the_flag_and_its_content_never_to_a_commit_or_line(
        name, commit, path, line, content, part, other):
    """Issue 35: a rebase or squash (another commit, another line) keeps the id; another flag,
    path or content changes it."""
    flag = Flag(name, commit, path, line, "detail")
    same = fingerprint(flag, content)
    moved = Flag(name, None if commit else "f" * 40, path, line + 1, "other detail")
    assert fingerprint(moved, content) == same
    changed = {"name": (Flag(other, commit, path, line, ""), content),
               "path": (Flag(name, commit, other, line, ""), content),
               "content": (flag, other)}[part]
    if {"name": other != name, "path": other != path, "content": other != content}[part]:
        assert fingerprint(*changed) != same


TESTS = """\
import unittest


class TestTee(unittest.TestCase):
    def test_tee(self):
        result = count(tees)
        self.assertEqual(
            result, len(tees))
        self.assertEqual(
            result, 3)


def helper():
    self.assertEqual(
        result, 3)
"""


def test_the_content_is_the_whole_statement_in_its_definition():
    """One ack of ``self.assertEqual(`` no longer clears every assertion that starts so."""
    lines = TESTS.splitlines()
    first, second = (n for n, text in enumerate(lines, 1) if "self.assertEqual(" in text and n < 12)
    one, two = statement_at(TESTS, first), statement_at(TESTS, second + 1)
    assert one.startswith("TestTee.test_tee\n") and "len(tees)" in one and "3)" in two and one != two
    assert statement_at(TESTS, first) == statement_at(TESTS, first + 1)  # any line of it: the one statement
    elsewhere = next(n for n, text in enumerate(lines, 1) if "self.assertEqual(" in text and n > 12)
    assert statement_at(TESTS, elsewhere) != two  # the same text in another definition
    indented = TESTS.replace("    ", "  ")
    assert statement_at(indented, first) == one  # re-indenting keeps it


@pytest.mark.parametrize("text,line", [
    ("{", 1), ('{"id": "x"}', 1), ('[\n  {"id": "0123456789abcdef", "flag": "f", "path": "p", "by": "b",\n'
                                    '   "reason": "  "}\n]', 3)])
def test_a_malformed_acks_file_is_bad_input_at_its_line(text, line):
    with pytest.raises(BadInputError) as err:
        parse_acks(text, "oracle/acks.json")
    assert err.value.path == "oracle/acks.json" and err.value.line == line
    assert "Traceback" not in err.value.one_line() and "\n" not in err.value.one_line()


def test_the_cli_lists_ids_acknowledges_by_a_prefix_and_refuses_an_unknown_id(demo_repo: Path, capsys):
    as_reviewer(demo_repo)
    args = ["--repo", str(demo_repo), "--head", "agent/patch", "--today", TODAY.isoformat()]
    assert main(["flags", "--json", *args]) == EXIT_REJECT
    flags = json.loads(capsys.readouterr().out)["flags"]
    golden = next(f for f in flags if f["name"] == GOLDEN)
    assert golden["acknowledged"] is None and len(golden["id"]) == 16
    tip = git(demo_repo, "rev-parse", "main")
    assert main(["ack", "ffffff", "--reason", "x", *args]) == EXIT_USAGE
    assert git(demo_repo, "rev-parse", "main") == tip
    assert main(["ack", golden["id"][:7], "--reason", "read it \x1b]0;pwned\x07", *args]) == EXIT_PASS
    capsys.readouterr()
    message = git(demo_repo, "log", "-1", "--format=%B", "main")
    assert "\x1b" not in message and "\x07" not in message and "pwned" in message
    assert main(["flags", "--json", *args]) == EXIT_REJECT  # other flags still stand
    flags = json.loads(capsys.readouterr().out)["flags"]
    assert next(f for f in flags if f["id"] == golden["id"])["acknowledged"]["by"] == "Rita Reviewer <rita@example.org>"
    (demo_repo / "oracle").mkdir(exist_ok=True)
    git(demo_repo, "checkout", "-q", "main")
    (demo_repo / "oracle" / "acks.json").write_text("[{]\n")
    git(demo_repo, "commit", "-qam", "review: broken")
    assert main(["flags", *args]) == EXIT_BAD_INPUT


async def test_w_in_the_console_acknowledges_the_highlighted_path_s_flag(demo_repo: Path):
    as_reviewer(demo_repo)
    before = user_work(demo_repo)
    branch = git(demo_repo, "symbolic-ref", "--short", "HEAD").strip()
    app = ReviewApp(repo=str(demo_repo), head_ref="agent/patch", today=TODAY)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        count = len(open_reasons(app.review))
        await pilot.press("w")
        await settle(pilot)
        assert type(app.screen).__name__ == "FormScreen"
        await pilot.press("enter", *"checked", "enter")
        await settle(pilot)
        assert len(open_reasons(app.review)) == count - 1
    subject, entries = last_commit(demo_repo)
    assert subject.startswith("review: acknowledge") and entries == [("A", "oracle/acks.json")]
    assert_user_work_kept(demo_repo, before, branch)
    rows = parse_acks(git(demo_repo, "show", "main:oracle/acks.json"), "acks")
    assert [r.reason for r in rows] == ["checked"] and git_bytes(demo_repo, "diff", "--cached", "--name-only") \
        .decode().split() == ["notes.txt"]


def test_a_review_commit_holds_the_acks_file_alone(demo_repo: Path):
    git(demo_repo, "checkout", "-q", "-b", "mixed", "main")
    (demo_repo / "oracle" / "acks.json").write_text("[]\n")
    catalog = demo_repo / "oracle" / "catalog.yaml"
    catalog.write_text(catalog.read_text() + "\n# a reviewer's note\n")
    git(demo_repo, "add", "-A")
    git(demo_repo, "commit", "-qm", "review: and catalog")
    offences = check_split(demo_repo, "main..mixed")
    assert {o.path for o in offences} == {"oracle/acks.json", "oracle/catalog.yaml"}
    assert all("review" in o.why and "catalog" in o.why for o in offences)


def test_commits_go_to_the_base_the_review_names(demo_repo: Path, capsys):
    """Issue 16: with ``--base release`` a console commit went to the configured ``main``.
    The oracle branch is the review's base ref unless ``oracle_branch`` says otherwise (§9)."""
    as_reviewer(demo_repo)
    git(demo_repo, "branch", "release", "main")
    main_tip = git(demo_repo, "rev-parse", "main").strip()
    args = ["--repo", str(demo_repo), "--base", "release", "--head", "agent/patch", "--today", TODAY.isoformat()]
    assert main(["flags", "--json", *args]) == EXIT_REJECT
    flag = next(f for f in json.loads(capsys.readouterr().out)["flags"] if f["name"] == GOLDEN)
    assert main(["ack", flag["id"], "--reason", "read it", *args]) == EXIT_PASS
    capsys.readouterr()
    assert git(demo_repo, "rev-parse", "main").strip() == main_tip
    assert git(demo_repo, "log", "-1", "--format=%s", "release").startswith("review:")
    assert main(["flags", "--json", *args]) == EXIT_REJECT  # read back from release: that flag is clear
    again = next(f for f in json.loads(capsys.readouterr().out)["flags"] if f["id"] == flag["id"])
    assert again["acknowledged"] is not None
    # a base that is no local branch: a commit would land where this review does not read
    git(demo_repo, "update-ref", "refs/remotes/origin/main", main_tip)
    other = next(f for f in json.loads((main(["flags", "--json", *args]), capsys.readouterr().out)[1])["flags"]
                 if f["name"] == GOLDEN and f["acknowledged"] is None)
    for base in ("origin/main", main_tip[:10]):
        remote = ["--repo", str(demo_repo), "--base", base, "--head", "agent/patch", "--today", TODAY.isoformat()]
        assert main(["ack", other["id"], "--reason", "read it", *remote]) == EXIT_USAGE
        assert "not a local branch" in capsys.readouterr().err
    assert git(demo_repo, "rev-parse", "main").strip() == main_tip


def test_who_made_an_acknowledgement_is_who_committed_it_not_what_its_row_says(demo_repo: Path, monkeypatch):
    """New-user finding: a row written by the agent's own commit, naming a reviewer in ``by``,
    cleared the flag; and ``ack`` under GIT_AUTHOR_EMAIL of the agent passed the author check."""
    review = review_of(demo_repo)
    try:
        flag = next(f for f in review.flags if f.name == GOLDEN)
        fid = review.flag_id(flag)
    finally:
        review.close()
    agent = git(demo_repo, "log", "-1", "--format=%an\t%ae", "agent/patch").strip().split("\t")
    monkeypatch.setenv("GIT_AUTHOR_NAME", agent[0])
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", agent[1])
    as_reviewer(demo_repo)  # the configuration says Rita; git would author the commit as the agent
    review = review_of(demo_repo)
    try:
        with pytest.raises(CommitRefused, match="own author"):
            actions.acknowledge(review, fid, "looks fine")
    finally:
        review.close()
    git(demo_repo, "checkout", "-q", "main")
    row = {"id": fid, "flag": GOLDEN, "path": flag.path, "by": "Rita Reviewer <rita@example.org>", "reason": "trust me"}
    (demo_repo / "oracle" / "acks.json").write_text(with_ack(None, row, "oracle/acks.json"))
    git(demo_repo, "add", "oracle/acks.json")
    git(demo_repo, "commit", "-q", "-m", "review: by hand")  # authored as the agent (the environment above)
    git(demo_repo, "checkout", "-q", "agent/patch")
    monkeypatch.delenv("GIT_AUTHOR_NAME")
    monkeypatch.delenv("GIT_AUTHOR_EMAIL")
    review = review_of(demo_repo)
    try:
        assert review.matching_ack(flag) is not None and review.acknowledgement(flag) is None
    finally:
        review.close()


def test_a_second_acknowledgement_of_one_flag_never_replaces_the_first(demo_repo: Path):
    as_reviewer(demo_repo)
    review = review_of(demo_repo)
    try:
        flag = next(f for f in review.flags if f.name == GOLDEN)
        actions.acknowledge(review, review.flag_id(flag), "first reviewer's reason")
    finally:
        review.close()
    git(demo_repo, "config", "user.email", "sam@example.org")
    tip = git(demo_repo, "rev-parse", "main")
    review = review_of(demo_repo)
    try:
        with pytest.raises(UsageError, match="already acknowledged by Rita"):
            actions.acknowledge(review, review.flag_id(flag), "again")
    finally:
        review.close()
    assert git(demo_repo, "rev-parse", "main") == tip


def test_an_ack_clears_neither_another_body_under_the_same_header_nor_a_second_copy():
    """Red team, issue 35: an ack of ``if os.getppid() == 1:`` (body: strip NULs) cleared a second
    ``if os.getppid() == 1:`` whose body turned the sandbox into a switch."""
    source = ("import os\n\n\ndef squash(text):\n    if os.getppid() == 1:\n        text = text.replace('\\0', '')\n"
              "    suffix = '.'\n    if os.getppid() == 1:\n        suffix = ''\n    return text + suffix\n")
    lines = source.splitlines()
    first, second = (n for n, text in enumerate(lines, 1) if text.strip() == "if os.getppid() == 1:")
    assert statement_at(source, first) != statement_at(source, second)
    twice = source.replace("        suffix = ''\n", "        text = text.replace('\\0', '')\n")
    assert statement_at(twice, first) != statement_at(twice, second)  # the same text twice: two occurrences
    assert statement_at(twice, first) == statement_at(source, first)  # the first is still the one acknowledged
