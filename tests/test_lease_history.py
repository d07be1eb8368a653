"""A lease's history from git (SPEC §4 renewal, §9 lease commits), on real repositories.

Every expected value is read back from the commits themselves: who and when from
``git show -s``, expiry and digest by parsing the manifest at the commit and at its
parent. Commit messages are written to lie on purpose (a renewal called "docs: typo"):
the history must not believe them.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import subprocess
import textwrap
from pathlib import Path

import pytest

from relconsole.cli.main import main
from relconsole.engine.gate import actions
from relconsole.engine.errors import EXIT_PASS, EXIT_USAGE, GitError, UsageError
from relconsole.engine.gate.leasehistory import (CREATED, EDITED, REHASHED, REMOVED, RENEWED, lease_history,
                                            renewal_history)
from relconsole.engine.oracle.leases import parse_lease
from relconsole.engine.oracle.rehash import rehash_preview
from relconsole.engine.gate.review import load_review
from bench.gitrepo import git, init_repo
from tests.conftest import TODAY

PROJECT = Path(__file__).resolve().parents[1]
MANIFEST = "oracle/leases/orders.yaml"
CORPUS = "oracle/data/orders.csv"
ME = ("t", "t@example.invalid")  # init_repo's identity: the owner, so console renewals pass
BOB = ("Bob Builder", "bob@example.com")
CAROL = ("Carol", "carol@example.org")


def manifest(digest: str, expires: dt.date, owner: str = ME[1], notes: str = "synthetic orders") -> str:
    return textwrap.dedent(f"""\
        # Orders corpus. Renew in a reviewed commit.
        id: orders
        path: {CORPUS}
        sha256: "{digest}"   # pinned
        expires: {expires.isoformat()}
        owner: {owner}
        allowed_relations: [orders.order_invariant]
        notes: {notes}
        """)


def write(repo: Path, path: str, text: str | bytes) -> None:
    target = repo / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(text.encode() if isinstance(text, str) else text)


def commit_as(repo: Path, who: tuple[str, str], when: str, message: str) -> str:
    """Commit everything staged and unstaged as ``who`` at ``when`` (ISO 8601); the new sha."""
    env = {**os.environ, "GIT_AUTHOR_NAME": who[0], "GIT_AUTHOR_EMAIL": who[1], "GIT_AUTHOR_DATE": when,
           "GIT_COMMITTER_NAME": who[0], "GIT_COMMITTER_EMAIL": who[1], "GIT_COMMITTER_DATE": when}
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True, env=env)
    subprocess.run(["git", "commit", "-q", "-m", message], cwd=repo, check=True, env=env)
    return git(repo, "rev-parse", "HEAD").strip()


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def meta(repo: Path, sha: str) -> tuple[str, str, dt.datetime]:
    """(author name, author email, committer date) as git records them."""
    name, email, date = git(repo, "show", "-s", "--format=%an%x00%ae%x00%cI", sha).strip().split("\0")
    return name, email, dt.datetime.fromisoformat(date)


def lease_at(repo: Path, rev: str, path: str):
    """The manifest parsed at ``rev:path``, or None when absent."""
    proc = subprocess.run(["git", "show", f"{rev}:{path}"], cwd=repo, capture_output=True, text=True)
    return parse_lease(proc.stdout, path) if proc.returncode == 0 else None


def assert_event_matches_commit(repo: Path, event, path: str, old_path: str | None = None) -> None:
    """Who, when, and before/after values of ``event`` are those of its commit and parent."""
    name, email, when = meta(repo, event.sha)
    assert (event.author_name, event.author_email, event.committed) == (name, email, when)
    assert event.committed.utcoffset() is not None  # timezone-aware
    after = lease_at(repo, event.sha, path)
    parent = git(repo, "rev-parse", f"{event.sha}^").strip()
    assert event.parent == parent
    before = lease_at(repo, parent, old_path or path)
    assert event.expires_after == after.expires and event.sha256_after == after.sha256
    assert event.expires_before == before.expires and event.sha256_before == before.sha256


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = init_repo(tmp_path / "repo")
    write(root, CORPUS, "id,total\n1,10\n2,20\n")
    write(root, "README.md", "orders\n")
    return root


def test_create_renew_renew_manual_edit_rehash(repo: Path):
    """Console renewals, a hand renewal with a misleading message, a hand edit, a re-hash."""
    corpus = (repo / CORPUS).read_bytes()
    write(repo, MANIFEST, manifest(sha256(corpus), TODAY + dt.timedelta(days=3)))
    created = commit_as(repo, CAROL, "2026-11-20T09:00:00+05:30", "lease: add orders")

    with load_review(repo, "main", today=TODAY) as review:  # console renewal, the owner's identity
        first = actions.renew_lease(review, "orders", TODAY + dt.timedelta(days=10)).sha
    with load_review(repo, "main", today=TODAY) as review:
        second = actions.renew_lease(review, "orders", TODAY + dt.timedelta(days=20)).sha

    write(repo, "README.md", "orders, unrelated\n")  # not a lease change: not an event
    commit_as(repo, BOB, "2026-11-30T10:00:00-08:00", "readme")
    text = (repo / MANIFEST).read_text()
    later = TODAY + dt.timedelta(days=60)
    write(repo, MANIFEST, text.replace(f"expires: {(TODAY + dt.timedelta(days=20)).isoformat()}",
                                       f"expires: {later.isoformat()}"))
    manual = commit_as(repo, BOB, "2026-12-01T08:15:00-08:00", "docs: fix a typo")  # a lie

    write(repo, CORPUS, corpus + b"3,30\n")
    commit_as(repo, CAROL, "2026-12-02T11:00:00+01:00", "data: one more order")
    with load_review(repo, "main", today=TODAY) as review:
        preview = rehash_preview(review, "orders")
        rehashed = actions.rehash_lease(review, "orders", preview.new_sha256).sha

    events = renewal_history(repo, "main", MANIFEST)
    assert [e.sha for e in events] == [rehashed, manual, second, first, created]  # newest first
    assert [e.kind for e in events] == [REHASHED, RENEWED, RENEWED, RENEWED, CREATED]
    for event in events[:-1]:
        assert_event_matches_commit(repo, event, MANIFEST)
    assert events[1].who == f"{BOB[0]} <{BOB[1]}>"  # the hand renewal, shown with who made it
    assert events[1].expires_before < events[1].expires_after == later
    # each renewal starts where the one before it ended
    assert all(newer.expires_before == older.expires_after for newer, older in zip(events, events[1:]))
    assert events[0].sha256_after == sha256((repo / CORPUS).read_bytes()) != events[0].sha256_before
    assert events[0].expires_before == events[0].expires_after and events[0].changed == ("sha256",)
    assert events[-1].expires_before is None and events[-1].sha256_after == sha256(corpus)
    assert (events[-1].author_name, events[-1].committed) == meta(repo, created)[0::2]


def test_kinds_come_from_the_manifests_not_the_messages(repo: Path):
    """A "renew" message that shortens the expiry is an edit; a notes-only change is an edit."""
    digest = sha256((repo / CORPUS).read_bytes())
    start = TODAY + dt.timedelta(days=30)
    write(repo, MANIFEST, manifest(digest, start))
    commit_as(repo, ME, "2026-11-01T00:00:00+00:00", "lease: add")
    write(repo, MANIFEST, manifest(digest, start - dt.timedelta(days=5)))
    earlier = commit_as(repo, BOB, "2026-11-02T00:00:00+00:00", "lease: renew orders until 2099-01-01")
    write(repo, MANIFEST, manifest(digest, start - dt.timedelta(days=5), notes="now with refunds"))
    notes = commit_as(repo, BOB, "2026-11-03T00:00:00+00:00", "lease: renew orders")
    write(repo, MANIFEST, "\n" + manifest(digest, start - dt.timedelta(days=5), notes="now with refunds"))
    layout = commit_as(repo, BOB, "2026-11-04T00:00:00+00:00", "lease: re-hash orders")

    by_sha = {e.sha: e for e in renewal_history(repo, "main", MANIFEST)}
    assert by_sha[earlier].kind == EDITED and "earlier" in by_sha[earlier].note
    assert by_sha[earlier].expires_after < by_sha[earlier].expires_before
    assert by_sha[notes].kind == EDITED and by_sha[notes].changed == ("notes",)
    assert by_sha[layout].kind == EDITED and by_sha[layout].changed == ()
    assert by_sha[layout].sha256_before == by_sha[layout].sha256_after == digest


def test_renames_are_followed(repo: Path):
    digest = sha256((repo / CORPUS).read_bytes())
    old_path, new_path = "oracle/leases/orders-old.yaml", MANIFEST
    write(repo, old_path, manifest(digest, TODAY))
    created = commit_as(repo, ME, "2026-10-01T00:00:00+02:00", "lease: add")
    write(repo, old_path, manifest(digest, TODAY + dt.timedelta(days=9)))
    renewed_before = commit_as(repo, BOB, "2026-10-02T00:00:00+02:00", "renew")
    git(repo, "mv", old_path, new_path)
    moved = commit_as(repo, CAROL, "2026-10-03T00:00:00+02:00", "move")
    write(repo, new_path, manifest(digest, TODAY + dt.timedelta(days=19)))
    renewed_after = commit_as(repo, BOB, "2026-10-04T00:00:00+02:00", "renew again")

    events = renewal_history(repo, "main", new_path)
    assert [e.sha for e in events] == [renewed_after, moved, renewed_before, created]
    assert [e.kind for e in events] == [RENEWED, EDITED, RENEWED, CREATED]
    assert events[1].old_path == old_path and events[1].path == new_path and old_path in events[1].note
    assert [e.path for e in events[2:]] == [old_path, old_path]
    assert_event_matches_commit(repo, events[0], new_path)
    assert_event_matches_commit(repo, events[1], new_path, old_path)
    assert_event_matches_commit(repo, events[2], old_path)


def test_a_malformed_manifest_in_the_middle_is_an_edit_with_a_note(repo: Path):
    digest = sha256((repo / CORPUS).read_bytes())
    write(repo, MANIFEST, manifest(digest, TODAY))
    commit_as(repo, ME, "2026-09-01T00:00:00+00:00", "add")
    write(repo, MANIFEST, manifest(digest, TODAY).replace("sha256:", "sha256: [unclosed"))
    broken = commit_as(repo, BOB, "2026-09-02T00:00:00+00:00", "lease: renew orders")
    fixed_until = TODAY + dt.timedelta(days=12)
    write(repo, MANIFEST, manifest(digest, fixed_until))
    fixed = commit_as(repo, CAROL, "2026-09-03T00:00:00+00:00", "fix")
    write(repo, MANIFEST, manifest(digest, fixed_until + dt.timedelta(days=1)))
    renewed = commit_as(repo, CAROL, "2026-09-04T00:00:00+00:00", "renew")

    by_sha = {e.sha: e for e in renewal_history(repo, "main", MANIFEST)}
    assert by_sha[broken].kind == EDITED and "did not parse" in by_sha[broken].note
    assert MANIFEST in by_sha[broken].note  # the parse error names the file
    assert by_sha[broken].expires_before == TODAY and by_sha[broken].expires_after is None
    assert by_sha[fixed].kind == EDITED and by_sha[fixed].expires_before is None
    assert by_sha[fixed].expires_after == fixed_until
    assert by_sha[renewed].kind == RENEWED  # history goes on normally after the repair
    assert_event_matches_commit(repo, by_sha[renewed], MANIFEST)


def test_removal_and_a_merge_are_events_of_the_branch(repo: Path):
    """First-parent history: a merge that brought a renewal is one event (who merged it,
    compared with the branch before); a removal says so."""
    digest = sha256((repo / CORPUS).read_bytes())
    write(repo, MANIFEST, manifest(digest, TODAY))
    commit_as(repo, ME, "2026-08-01T00:00:00+00:00", "add")
    git(repo, "checkout", "-q", "-b", "side")
    write(repo, MANIFEST, manifest(digest, TODAY + dt.timedelta(days=4)))
    side = commit_as(repo, BOB, "2026-08-02T00:00:00+00:00", "renew on a branch")
    git(repo, "checkout", "-q", "main")
    write(repo, "README.md", "moved on\n")
    commit_as(repo, ME, "2026-08-03T00:00:00+00:00", "readme")
    env = {**os.environ, "GIT_AUTHOR_NAME": CAROL[0], "GIT_AUTHOR_EMAIL": CAROL[1],
           "GIT_COMMITTER_NAME": CAROL[0], "GIT_COMMITTER_EMAIL": CAROL[1],
           "GIT_AUTHOR_DATE": "2026-08-04T00:00:00+00:00", "GIT_COMMITTER_DATE": "2026-08-04T00:00:00+00:00"}
    subprocess.run(["git", "merge", "-q", "--no-ff", "-m", "merge side", "side"], cwd=repo, check=True, env=env)
    merge = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "rm", "-q", MANIFEST)
    removed = commit_as(repo, BOB, "2026-08-05T00:00:00+00:00", "drop the lease")

    events = renewal_history(repo, "main", MANIFEST)
    assert [e.sha for e in events][:2] == [removed, merge] and side not in [e.sha for e in events]
    assert events[0].kind == REMOVED and events[0].expires_after is None
    assert events[0].expires_before == TODAY + dt.timedelta(days=4)
    assert events[1].kind == RENEWED and events[1].merge and side[:12] in events[1].note
    assert_event_matches_commit(repo, events[1], MANIFEST)


def test_one_git_log_and_one_blob_reader_however_long_the_history(repo: Path, monkeypatch):
    digest = sha256((repo / CORPUS).read_bytes())
    for day in range(1, 16):
        write(repo, MANIFEST, manifest(digest, TODAY + dt.timedelta(days=day)))
        commit_as(repo, ME, f"2026-07-{day:02d}T00:00:00+00:00", f"renew {day}")
    calls: list[list[str]] = []
    real_popen = subprocess.Popen

    def popen(args, *a, **k):  # every child process, subprocess.run's included, starts here
        calls.append(list(args))
        return real_popen(args, *a, **k)

    monkeypatch.setattr(subprocess, "Popen", popen)
    events = renewal_history(repo, "main", MANIFEST)
    monkeypatch.undo()
    assert len(events) == 15 and [e.kind for e in events] == [RENEWED] * 14 + [CREATED]
    assert sorted(map(_subcommand, calls)) == ["cat-file", "log"]


def _subcommand(argv: list[str]) -> str:
    """git's subcommand in ``argv``: the first word that is not an option or a ``-c`` setting."""
    words = iter(argv[1:])
    for word in words:
        if word == "-c":
            next(words, None)
        elif not word.startswith("-"):
            return word
    return ""


def test_this_repository_and_the_sample_repository_real_history(demo_repo: Path):
    """Every event agrees with git log and the manifests at each commit, on real histories."""
    for root, path in [(PROJECT, "sample_repo/oracle/leases/penguins.yaml"),
                       (demo_repo, "oracle/leases/weather.yaml"), (demo_repo, "oracle/leases/stocks.yaml")]:
        expected = git(root, "log", "--follow", "--first-parent", "--format=%H", "HEAD", "--", path).split()
        events = renewal_history(root, "HEAD", path)
        assert [e.sha for e in events] == expected and events[-1].kind == CREATED
        for event in events:
            name, email, when = meta(root, event.sha)
            assert (event.author_name, event.author_email, event.committed) == (name, email, when)
            after = lease_at(root, event.sha, event.path)
            assert (event.expires_after, event.sha256_after) == (after.expires, after.sha256)


def test_lease_history_of_a_review_and_its_cli_twin(demo_repo: Path, capsys):
    with load_review(demo_repo, today=TODAY) as review:
        renewed = actions.renew_lease(review, "weather", TODAY + dt.timedelta(days=9)).sha
    with load_review(demo_repo, today=TODAY) as review:
        events = lease_history(review, "weather")
        assert events[0].sha == renewed and events[0].kind == RENEWED
        assert events[0].expires_after == lease_at(demo_repo, "main", "oracle/leases/weather.yaml").expires
        with pytest.raises(UsageError):
            lease_history(review, "no-such-lease")

    code = main(["lease", "history", "weather", "--json", "--repo", str(demo_repo), "--today", TODAY.isoformat()])
    payload = json.loads(capsys.readouterr().out)
    assert code == EXIT_PASS
    assert [e["sha"] for e in payload["events"]] == [e.sha for e in events]
    assert payload["events"][0]["expires_after"] == events[0].expires_after.isoformat()
    code = main(["lease", "history", "weather", "--repo", str(demo_repo), "--today", TODAY.isoformat()])
    out = capsys.readouterr().out.splitlines()
    assert code == EXIT_PASS and len(out) == len(events)
    assert renewed[:12] in out[0] and events[0].expires_before.isoformat() in out[0]
    code = main(["lease", "history", "nope", "--repo", str(demo_repo), "--today", TODAY.isoformat()])
    assert code == EXIT_USAGE and "nope" in capsys.readouterr().err


def test_an_unknown_ref_is_a_git_error_and_an_unknown_path_has_no_history(repo: Path):
    commit_as(repo, ME, "2026-01-01T00:00:00+00:00", "init")
    assert renewal_history(repo, "main", "oracle/leases/never.yaml") == []
    with pytest.raises(GitError):
        renewal_history(repo, "no-such-branch", MANIFEST)
