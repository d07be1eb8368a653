"""Console commits (SPEC §9) against real repositories: exact paths, user work left alone."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import git
import pytest
from hypothesis import given, settings, strategies as st

from bench.gitrepo import committed_repo, write_files
from relconsole.engine.repo import commits
from relconsole.engine.repo.commitkinds import FileChange, check_kind
from relconsole.engine.repo.commits import commit_changes
from relconsole.engine.repo.config import Layout
from relconsole.engine.errors import CommitRefused, UsageError

CATALOG = b"""# The oracle catalog: reviewed by hand.
owners:
  "src/**": [orders.order_invariant]   # everything in src
relations:
  - id: orders.order_invariant   # keep first
    kind: permutation
    subject: app:aggregate
    input: {seeds: oracle/seeds/orders.jsonl}
    compare: canon

# end of relations
"""
NOTES = "docs/r\u00e9sum\u00e9 notes.md"


@pytest.fixture(autouse=True)
def _isolated_git(tmp_path_factory, monkeypatch):
    """No global or system git config (identity, autocrlf, signing) leaks into the tests."""
    empty = tmp_path_factory.mktemp("gitconfig") / "config"
    empty.write_text("")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(empty))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for name in ("GIT_DIR", "GIT_INDEX_FILE", "GIT_WORK_TREE", "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL",
                 "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "EMAIL"):
        monkeypatch.delenv(name, raising=False)


def run(cwd: Path, *args: str, check: bool = True) -> str:
    proc = subprocess.run(["git", "-c", "core.quotepath=false", *args], cwd=cwd, capture_output=True,
                          check=False)
    if check and proc.returncode != 0:
        raise AssertionError(f"git {' '.join(args)}: {proc.stderr.decode()}")
    return proc.stdout.decode("utf-8")


def write(root: Path, path: str, data: bytes) -> None:
    full = root / path
    full.parent.mkdir(parents=True, exist_ok=True)
    full.write_bytes(data)


@pytest.fixture
def repo_path(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    files = {
        "oracle/catalog.yaml": CATALOG,
        "oracle/quarantine/x.yaml": b"id: orders.x\ntransform: permute\ncompare: canon\n",
        "oracle/quarantine/orders.order_invariant.seeds.jsonl": b'{"sku": "a"}\n{"sku": "b"}\n{"sku": "c"}\n',
        "oracle/seeds/orders.jsonl": b'{"sku": "z"}\n',
        "oracle/freezes.json": b"[]\n",
        "oracle/leases/orders_v3.yaml": b"id: orders_v3\nexpires: 2026-12-31\n",
        "oracle/leases/other.yaml": b"id: other\nexpires: 2026-12-31\n",
        NOTES: "Notes \u2014 first draft\n".encode(),
        "src/app.py": b"def aggregate(rows):\n    return rows\n",
    }
    write_files(root, files | {"oracle/seeds/tool.jsonl": b"1\n"})
    os.chmod(root / "oracle/seeds/tool.jsonl", 0o755)
    return committed_repo(root, {}, identity=("Tess Ter", "tess@example.com"), message="initial")


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file outside .git, with its bytes."""
    return {str(p.relative_to(root)): p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file() and ".git" not in p.relative_to(root).parts}


def user_state(root: Path) -> dict[str, str]:
    return {"cached": run(root, "diff", "--cached"), "diff": run(root, "diff"),
            "status": run(root, "status", "--porcelain"), "head": run(root, "symbolic-ref", "-q", "HEAD", check=False)}


def accept_changes() -> list[FileChange]:
    new_catalog = CATALOG.replace(b"\n# end of relations",
                                  b"  - id: orders.x\n    kind: permutation\n\n# end of relations")
    return [FileChange("oracle/catalog.yaml", new_catalog), FileChange("oracle/quarantine/x.yaml", None)]


def name_status(root: Path, rev: str = "main") -> list[str]:
    return run(root, "log", "-1", "--name-status", "--format=", rev).splitlines()


def test_commit_onto_main_while_another_branch_is_checked_out(repo_path: Path):
    root = repo_path
    run(root, "checkout", "-q", "-b", "feature")
    write(root, "src/app.py", b"def aggregate(rows):\n    return sorted(rows)\n")
    run(root, "commit", "-q", "-am", "feature work")
    write(root, NOTES, "Notes \u2014 staged edit\n".encode())
    run(root, "add", NOTES)
    write(root, "src/app.py", b"# unstaged\n")
    write(root, "scratch.txt", b"untracked\n")
    old_main = run(root, "rev-parse", "main").strip()
    before, files_before = user_state(root), snapshot(root)
    index_before = (root / ".git/index").read_bytes()

    result = commit_changes(git.Repo(root), "main", "catalog", "accept orders.x", accept_changes())

    assert result.sha == run(root, "rev-parse", "main").strip()
    assert result.message == "catalog: accept orders.x"
    assert result.paths == ("oracle/catalog.yaml", "oracle/quarantine/x.yaml")
    assert name_status(root) == ["M\toracle/catalog.yaml", "D\toracle/quarantine/x.yaml"]
    assert run(root, "rev-parse", "main^").strip() == old_main
    assert run(root, "log", "-1", "--format=%s%n%an <%ae>%n%cn <%ce>", "main").splitlines() == [
        "catalog: accept orders.x", "Tess Ter <tess@example.com>", "Tess Ter <tess@example.com>"]
    assert subprocess.run(["git", "show", "main:oracle/catalog.yaml"], cwd=root, capture_output=True,
                          check=True).stdout == accept_changes()[0].content
    assert user_state(root) == before
    assert before["head"].strip() == "refs/heads/feature"
    assert snapshot(root) == files_before
    assert (root / ".git/index").read_bytes() == index_before


def test_commit_onto_checked_out_main_updates_only_its_paths(repo_path: Path):
    root = repo_path
    write(root, NOTES, "Notes \u2014 staged edit\n".encode())
    run(root, "add", NOTES)
    write(root, NOTES, "Notes \u2014 staged edit\nand an unstaged line\n".encode())
    write(root, "src/app.py", b"# unstaged\n")
    write(root, "scratch.txt", b"untracked\n")
    before, files_before = user_state(root), snapshot(root)
    entries_before = run(root, "ls-files", "-s")
    shrunk = b'{"sku": "a"}\n{"sku": "c"}\n'
    seeds = b'{"sku": "z"}\n{"sku": "b"}\n'
    new_seeds = "oracle/seeds/n\u00e9w seeds.jsonl"
    changes = [FileChange("oracle/seeds/orders.jsonl", seeds),
               FileChange("oracle/quarantine/orders.order_invariant.seeds.jsonl", shrunk),
               FileChange(new_seeds, b'{"sku": "new"}\n'),
               *accept_changes()]

    result = commit_changes(git.Repo(root), "main", "catalog", "accept seed rows", changes)

    assert sorted(name_status(root)) == sorted([
        "M\toracle/seeds/orders.jsonl", "M\toracle/quarantine/orders.order_invariant.seeds.jsonl",
        f"A\t{new_seeds}", "M\toracle/catalog.yaml", "D\toracle/quarantine/x.yaml"])
    assert run(root, "rev-parse", "HEAD").strip() == result.sha
    assert user_state(root) == before  # only the user's own changes, exactly as they were
    after = snapshot(root)
    for change in changes:
        if change.content is None:
            assert change.path not in after
        else:
            assert after[change.path] == change.content
    changed = {c.path for c in changes}
    assert {p: b for p, b in after.items() if p not in changed} == {
        p: b for p, b in files_before.items() if p not in changed}
    assert not (root / "oracle/quarantine/x.yaml").exists()
    untouched = [line for line in entries_before.splitlines() if line.split("\t")[1] not in changed]
    assert [line for line in run(root, "ls-files", "-s").splitlines()
            if line.split("\t")[1] not in changed] == untouched
    # the index entries of the changed paths are stat-clean, so plumbing agrees with status
    assert sorted(run(root, "diff-files", "--name-only").splitlines()) == sorted([NOTES, "src/app.py"])


def test_delete_removes_emptied_directory_in_checked_out_worktree(repo_path: Path):
    root = repo_path
    run(root, "rm", "-q", "oracle/quarantine/orders.order_invariant.seeds.jsonl")
    run(root, "commit", "-q", "-m", "one candidate left")
    commit_changes(git.Repo(root), "main", "quarantine", "delete orders.x",
                   [FileChange("oracle/quarantine/x.yaml", None)])
    assert not (root / "oracle/quarantine").exists()
    assert run(root, "status", "--porcelain") == ""


@pytest.mark.parametrize("how", ["unstaged", "staged", "untracked"])
def test_refuses_when_a_changed_path_has_uncommitted_work(repo_path: Path, how: str):
    root = repo_path
    if how == "untracked":
        target, change = "oracle/seeds/new.jsonl", FileChange("oracle/seeds/new.jsonl", b"1\n")
        write(root, target, b"mine\n")
    else:
        target, change = "oracle/catalog.yaml", accept_changes()[0]
        write(root, target, CATALOG + b"# my edit\n")
        if how == "staged":
            run(root, "add", target)
    old_main = run(root, "rev-parse", "main").strip()
    before, files_before = user_state(root), snapshot(root)

    with pytest.raises(CommitRefused, match=target):
        commit_changes(git.Repo(root), "main", "catalog", "accept", [change])

    assert run(root, "rev-parse", "main").strip() == old_main
    assert user_state(root) == before
    assert snapshot(root) == files_before


def test_dirty_path_not_changed_by_the_commit_is_fine(repo_path: Path):
    root = repo_path
    write(root, "oracle/leases/other.yaml", b"id: other\nexpires: 2027-01-01\n")
    result = commit_changes(git.Repo(root), "main", "lease", "renew orders_v3",
                            [FileChange("oracle/leases/orders_v3.yaml", b"id: orders_v3\nexpires: 2027-01-31\n")])
    assert name_status(root) == ["M\toracle/leases/orders_v3.yaml"]
    assert result.message == "lease: renew orders_v3"
    assert run(root, "status", "--porcelain") == " M oracle/leases/other.yaml\n"


def test_a_same_second_unstaged_edit_stays_visible_after_the_commit(repo_path: Path):
    """An edit of another file, made in the same second as the index was written and of the
    same size, is racily clean: git must read the file to see it. The commit's new index must
    not hide it (a copy of the index stamped "now" made git trust the stale entry: status
    clean, `git commit -a` blind to the user's change)."""
    root = repo_path
    other = root / "oracle" / "leases" / "other.yaml"
    old = run(root, "show", "HEAD:oracle/leases/other.yaml").encode()
    edited = old.replace(b"2026", b"2027")
    assert len(edited) == len(old) and edited != old
    second = int(other.stat().st_mtime) - 100  # a past second: the commit writes its index after it
    os.utime(other, (second, second))
    run(root, "update-index", "--refresh")  # the entry now carries that second
    other.write_bytes(edited)  # the same inode and size, in the same second:
    os.utime(other, (second, second))
    os.utime(root / ".git" / "index", (second, second))  # as if the index was written then too
    commit_changes(git.Repo(root), "main", "lease", "renew orders_v3",
                   [FileChange("oracle/leases/orders_v3.yaml", b"id: orders_v3\nexpires: 2027-01-31\n")])
    assert other.read_bytes() == edited
    assert run(root, "status", "--porcelain") == " M oracle/leases/other.yaml\n"
    assert run(root, "diff", "--name-only") == "oracle/leases/other.yaml\n"


def test_freeze_commit_with_catalog_path_is_refused(repo_path: Path):
    root = repo_path
    old_main = run(root, "rev-parse", "main").strip()
    with pytest.raises(CommitRefused, match="oracle/catalog.yaml"):
        commit_changes(git.Repo(root), "main", "freeze", "freeze orders", [
            FileChange("oracle/freezes.json", b'[{"relation_id": "a"}]\n'), accept_changes()[0]])
    assert run(root, "rev-parse", "main").strip() == old_main


def test_lease_commit_with_two_manifests_is_refused(repo_path: Path):
    root = repo_path
    with pytest.raises(CommitRefused, match="exactly one lease manifest"):
        commit_changes(git.Repo(root), "main", "lease", "renew both", [
            FileChange("oracle/leases/orders_v3.yaml", b"id: orders_v3\nexpires: 2027-01-31\n"),
            FileChange("oracle/leases/other.yaml", b"id: other\nexpires: 2027-01-31\n")])


def test_freeze_commit_lands(repo_path: Path):
    root = repo_path
    commit_changes(git.Repo(root), "main", "freeze", "freeze orders.order_invariant",
                   [FileChange("oracle/freezes.json", b'[{"relation_id": "a"}]\n')], body="reason: flaky CI")
    assert name_status(root) == ["M\toracle/freezes.json"]
    assert run(root, "log", "-1", "--format=%B", "main") == (
        "freeze: freeze orders.order_invariant\n\nreason: flaky CI\n\n")


def _old(repo_path: Path):
    return lambda path: (repo_path / path).read_bytes() if (repo_path / path).exists() else None


@pytest.mark.parametrize(("kind", "changes", "message"), [
    ("quarantine", [FileChange("oracle/quarantine/orders.order_invariant.seeds.jsonl",
                               b'{"sku": "a"}\n{"sku": "b"}\n{"sku": "c"}\n{"sku": "d"}\n'),
                    FileChange("oracle/quarantine/x.yaml", None)], "either adds drafts or removes them"),
    ("quarantine", [FileChange("oracle/quarantine/orders.order_invariant.seeds.jsonl",
                               b'{"sku": "A"}\n{"sku": "b"}\n{"sku": "c"}\n{"sku": "d"}\n')], "removed or shrunk"),
    ("quarantine", [FileChange("oracle/quarantine/orders.order_invariant.seeds.jsonl",
                               b'{"sku": "a"}\n{"sku": "B"}\n')], "removed or shrunk"),
    ("quarantine", [FileChange("oracle/catalog.yaml", None)], "oracle/catalog.yaml"),
    ("quarantine", [FileChange("oracle/quarantine/gone.yaml", None)], "not on the branch"),
    ("catalog", [FileChange("oracle/quarantine/x.yaml", None)], "quarantine: commit"),
    ("catalog", [FileChange("src/app.py", b"")], "src/app.py"),
    ("catalog", [FileChange("oracle/quarantine/x.yaml", b"id: orders.y\n")], "removed or shrunk"),
    ("lease", [FileChange("oracle/leases/orders_v3.csv", b"")], "orders_v3.csv"),
    ("freeze", [], "nothing to commit"),
])
def test_kind_rules(repo_path: Path, kind, changes, message):
    with pytest.raises(CommitRefused, match=message):
        check_kind(kind, changes, Layout(), _old(repo_path))


def test_kind_rules_allow_shrink_and_follow_the_layout(repo_path: Path):
    shrink = FileChange("oracle/quarantine/orders.order_invariant.seeds.jsonl", b'{"sku": "b"}\n')
    check_kind("quarantine", [shrink, FileChange("oracle/quarantine/x.yaml", None)], Layout(), _old(repo_path))
    check_kind("catalog", [FileChange("oracle/seeds/orders.jsonl", b"1\n"), shrink], Layout(), _old(repo_path))
    moved = Layout(freezes="fixtures/freezes.json")
    check_kind("freeze", [FileChange("fixtures/freezes.json", b"[]\n")], moved, _old(repo_path))
    with pytest.raises(CommitRefused):
        check_kind("freeze", [FileChange("oracle/freezes.json", b"[]\n")], moved, _old(repo_path))
    with pytest.raises(UsageError):
        check_kind("golden", [shrink], Layout(), _old(repo_path))


@settings(max_examples=200)
@given(old=st.lists(st.sampled_from([b'{"sku": "a"}\n', b'{"sku": "b"}\n', b'[1]\n', b'"c"\n']), max_size=5),
       new=st.lists(st.sampled_from([b'{"sku": "a"}\n', b'{"sku": "b"}\n', b'[1]\n', b'"c"\n']), max_size=6))
def test_a_quarantine_commit_either_drafts_or_decides(old, new):
    """The quarantine: kind takes a file that keeps every old byte and appends lines
    (propose), or one with whole lines dropped (delete), and nothing else (§9)."""
    path = "oracle/quarantine/orders.order_invariant.seeds.jsonl"
    before, after = b"".join(old), b"".join(new)
    appended = len(new) > len(old) and new[:len(old)] == old
    kept = iter(old)
    dropped = len(new) < len(old) and all(any(line == o for o in kept) for line in new)
    allowed = appended or dropped
    try:
        check_kind("quarantine", [FileChange(path, after)], Layout(), lambda _p: before if old else None)
    except CommitRefused:
        assert not allowed
    else:
        assert allowed


def test_unchanged_content_is_nothing_to_commit(repo_path: Path):
    root = repo_path
    with pytest.raises(CommitRefused, match="nothing to commit"):
        commit_changes(git.Repo(root), "main", "catalog", "noop", [FileChange("oracle/catalog.yaml", CATALOG)])


def test_branch_moved_meanwhile_is_refused_cleanly(repo_path: Path, monkeypatch):
    root = repo_path
    real_build = commits._build_commit

    def build_then_someone_commits(*args, **kwargs):
        sha = real_build(*args, **kwargs)
        # main's index is locked by the console meanwhile, so a racing `git commit` there
        # fails; another tool (a push from elsewhere, a script) moves the ref itself
        assert subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", "blocked"], cwd=root).returncode != 0
        racing = run(root, "commit-tree", "HEAD^{tree}", "-p", "HEAD", "-m", "someone else").strip()
        run(root, "update-ref", "refs/heads/main", racing)
        return sha

    monkeypatch.setattr(commits, "_build_commit", build_then_someone_commits)
    with pytest.raises(CommitRefused, match="moved"):
        commit_changes(git.Repo(root), "main", "catalog", "accept", accept_changes())
    assert run(root, "log", "-1", "--format=%s", "main").strip() == "someone else"
    assert (root / "oracle/catalog.yaml").read_bytes() == CATALOG
    assert (root / "oracle/quarantine/x.yaml").exists()
    assert run(root, "status", "--porcelain") == ""


def test_detached_head_only_moves_the_branch(repo_path: Path):
    root = repo_path
    run(root, "checkout", "-q", "--detach", "main")
    old = run(root, "rev-parse", "HEAD").strip()
    files_before = snapshot(root)

    commit_changes(git.Repo(root), "main", "catalog", "accept orders.x", accept_changes())

    assert run(root, "symbolic-ref", "-q", "HEAD", check=False) == ""
    assert run(root, "rev-parse", "HEAD").strip() == old
    assert run(root, "rev-parse", "main^").strip() == old
    assert snapshot(root) == files_before
    assert run(root, "status", "--porcelain") == ""


def test_executable_mode_is_kept(repo_path: Path):
    root = repo_path
    commit_changes(git.Repo(root), "main", "catalog", "more tool seeds",
                   [FileChange("oracle/seeds/tool.jsonl", b"1\n2\n")])
    assert run(root, "ls-tree", "main", "oracle/seeds/tool.jsonl").split()[0] == "100755"
    assert os.stat(root / "oracle/seeds/tool.jsonl").st_mode & 0o111
    assert run(root, "status", "--porcelain") == ""


def test_checkout_filters_apply_to_the_written_file(repo_path: Path):
    root = repo_path
    run(root, "config", "core.autocrlf", "true")
    (root / "oracle/catalog.yaml").unlink()
    run(root, "checkout", "--", "oracle/catalog.yaml")
    assert b"\r\n" in (root / "oracle/catalog.yaml").read_bytes()
    new_catalog = accept_changes()[0].content

    commit_changes(git.Repo(root), "main", "catalog", "accept orders.x", accept_changes())

    assert (root / "oracle/catalog.yaml").read_bytes() == new_catalog.replace(b"\n", b"\r\n")
    assert subprocess.run(["git", "show", "main:oracle/catalog.yaml"], cwd=root, capture_output=True,
                          check=True).stdout == new_catalog
    assert run(root, "status", "--porcelain") == ""


def test_linked_worktree_with_the_branch_is_updated(repo_path: Path, tmp_path: Path):
    root = repo_path
    run(root, "checkout", "-q", "-b", "feature")
    linked = tmp_path / "linked main"
    run(root, "worktree", "add", "-q", str(linked), "main")

    commit_changes(git.Repo(root), "main", "catalog", "accept orders.x", accept_changes())

    assert (linked / "oracle/catalog.yaml").read_bytes() == accept_changes()[0].content
    assert run(linked, "status", "--porcelain") == ""
    assert (root / "oracle/catalog.yaml").read_bytes() == CATALOG
    assert run(root, "status", "--porcelain") == ""


def test_no_identity_is_refused_unless_an_author_is_given(repo_path: Path):
    root = repo_path
    run(root, "config", "--unset", "user.name")
    run(root, "config", "--unset", "user.email")
    with pytest.raises(CommitRefused, match="user.email"):
        commit_changes(git.Repo(root), "main", "catalog", "accept", accept_changes())
    commit_changes(git.Repo(root), "main", "catalog", "accept", accept_changes(),
                   author=git.Actor("Ann Owner", "ann@example.com"))
    assert run(root, "log", "-1", "--format=%an <%ae>|%cn <%ce>", "main").strip() == (
        "Ann Owner <ann@example.com>|Ann Owner <ann@example.com>")


def test_bad_subject_and_missing_branch(repo_path: Path):
    repo = git.Repo(repo_path)
    with pytest.raises(UsageError):
        commit_changes(repo, "main", "catalog", "two\nlines", accept_changes())
    with pytest.raises(CommitRefused, match="does not exist"):
        commit_changes(repo, "oracle", "catalog", "accept", accept_changes())
    with pytest.raises(CommitRefused, match="repository-relative"):
        commit_changes(repo, "main", "catalog", "accept", [FileChange("oracle/../x", b"")])


def test_git_environment_does_not_redirect_the_commit(repo_path: Path, tmp_path: Path, monkeypatch):
    root = repo_path
    elsewhere = tmp_path / "elsewhere"
    run(tmp_path, "init", "-q", str(elsewhere))
    repo = git.Repo(root)
    monkeypatch.setenv("GIT_DIR", str(elsewhere / ".git"))
    monkeypatch.setenv("GIT_INDEX_FILE", str(elsewhere / ".git" / "index"))
    monkeypatch.setenv("GIT_WORK_TREE", str(elsewhere))
    commit_changes(repo, "main", "catalog", "accept orders.x", accept_changes())
    for name in ("GIT_DIR", "GIT_INDEX_FILE", "GIT_WORK_TREE"):
        monkeypatch.delenv(name)
    assert name_status(root) == ["M\toracle/catalog.yaml", "D\toracle/quarantine/x.yaml"]
    assert run(root, "status", "--porcelain") == ""
    assert not (elsewhere / ".git" / "index").exists()


def _git_trailers(message: str) -> str:
    return subprocess.run(["git", "interpret-trailers", "--parse"], input=message, capture_output=True,
                          text=True, check=True).stdout



from relconsole.engine.gate.actions import before_trailers  # noqa: E402

_words = st.text(alphabet="abc xyz.,", min_size=1, max_size=30).filter(lambda t: t.strip() and ":" not in t)


@given(st.lists(_words, max_size=3), st.lists(st.tuples(st.sampled_from(["Confirmed-by", "Signed-off-by", "Old"]),
                                                         _words), max_size=3), _words)
def test_a_note_keeps_every_trailer_git_reads_and_is_in_the_message(paragraphs, trailers, note):
    body = "\n\n".join(p.strip() for p in paragraphs)
    if trailers:
        body += ("\n\n" if body else "") + "\n".join(f"{k}: {v.strip()}" for k, v in trailers)
    body += "\n" if body else ""
    message = "lease: subject line\n\n" + body
    noted = "lease: subject line\n\n" + before_trailers(body, note.strip() + "\n")
    assert _git_trailers(noted) == _git_trailers(message)
    assert note.strip() in noted and all(p.strip() in noted for p in paragraphs)
