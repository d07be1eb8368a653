"""git in the wild (issue 18): repositories set up the way real users' are.

A repository owned by another user (``safe.directory``), a stale ``index.lock`` on the
checked-out oracle branch, a sparse checkout, an fsmonitor hook, checkout hooks and
``core.autocrlf`` / ``eol=crlf``: relconsole says what git said and writes nothing, never
moves a ref without its index, and judges in worktrees of its own whatever the user's
configuration says. Every test runs real git with a global configuration of its own.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from relconsole.cli.main import main
from relconsole.engine.relations.records import RunRecord
from bench.gitrepo import git
from tests.conftest import TODAY

OTHER_UID = 12345  # no such user here: any uid but ours makes git's ownership check refuse


@pytest.fixture(autouse=True)
def _own_git_config(tmp_path_factory, monkeypatch) -> Path:
    """A global git configuration of this test's own (no safe.directory, hooks or autocrlf
    of the machine's), no system one; returned so a test can add to it."""
    home = tmp_path_factory.mktemp("home")
    config = home / ".gitconfig"
    config.write_text("")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for name in ("GIT_DIR", "GIT_INDEX_FILE", "GIT_WORK_TREE", "RELCONSOLE_LEASE_URL"):
        monkeypatch.delenv(name, raising=False)
    return config


def cli(capsys, *args: str) -> tuple[int, str, str]:
    code = main([*args])
    out, err = capsys.readouterr()
    return code, out, err


def files_under(root: Path) -> dict[str, tuple[int, int]]:
    """path -> (size, mtime_ns) of every file under ``root``."""
    found = {}
    for folder, _dirs, names in os.walk(root):
        for name in names:
            st = os.lstat(os.path.join(folder, name))
            found[os.path.relpath(os.path.join(folder, name), root)] = (st.st_size, st.st_mtime_ns)
    return found


# --- safe.directory ---------------------------------------------------------------------------

def _chown_tree(root: Path, uid: int) -> None:
    for folder, dirs, names in os.walk(root):
        os.lchown(folder, uid, uid)
        for name in dirs + names:
            os.lchown(os.path.join(folder, name), uid, uid)


@pytest.fixture
def foreign_repo(demo_repo: Path) -> Path:
    """The sample repository owned by another user, as a shared or mounted checkout is."""
    if os.geteuid() != 0:
        pytest.skip("giving a repository to another user needs root")
    _chown_tree(demo_repo, OTHER_UID)
    probe = subprocess.run(["git", "status"], cwd=demo_repo, capture_output=True, text=True)
    assert probe.returncode != 0 and "dubious ownership" in probe.stderr, \
        "this git does not check ownership for root; the test would prove nothing"
    return demo_repo


@pytest.mark.parametrize("command", [
    ["bind"], ["run"], ["flags"], ["validate"], ["lease", "renew", "weather", "--until", "2026-12-20"],
    ["workspace", "acquire", "--workspace", "w"], ["workspace", "status", "--workspace", "w"],
])
def test_a_repository_git_refuses_for_its_owner_says_what_git_said_and_writes_nothing(foreign_repo, capsys,
                                                                                        command):
    before = files_under(foreign_repo)
    extra = [] if command[0] == "workspace" else ["--today", TODAY.isoformat()]
    code, out, err = cli(capsys, *command, "--repo", str(foreign_repo), *extra)
    assert code == 3, (code, out, err)
    assert "dubious ownership" in err and "git config --global --add safe.directory" in err, err
    assert str(foreign_repo) in err and "no commit yet" not in err
    assert files_under(foreign_repo) == before


def test_once_the_user_trusts_the_directory_the_same_commands_work(foreign_repo, capsys, _own_git_config):
    git(foreign_repo, "config", "--global", "--add", "safe.directory", str(foreign_repo))
    code, out, err = cli(capsys, "bind", "--repo", str(foreign_repo), "--today", TODAY.isoformat())
    assert code in (0, 2) and "dubious" not in err, (code, out, err)
    code, out, err = cli(capsys, "workspace", "acquire", "--workspace", "w", "--repo", str(foreign_repo))
    assert code == 0, (code, out, err)


# --- a stale index.lock on the checked-out oracle branch ----------------------------------------

def _state(repo: Path) -> dict[str, str]:
    """What a user sees: the branch tip, staged and unstaged changes, and git status."""
    return {"main": git(repo, "rev-parse", "main"), "cached": git(repo, "diff", "--cached"),
            "diff": git(repo, "diff"), "status": git(repo, "status", "--porcelain")}


def test_a_stale_index_lock_refuses_the_commit_before_the_branch_moves(demo_repo, capsys):
    git(demo_repo, "checkout", "-q", "main")
    lock = demo_repo / ".git" / "index.lock"
    lock.write_bytes(b"")  # a git process crashed here earlier
    before = _state(demo_repo)
    files = files_under(demo_repo / "oracle")

    code, out, err = cli(capsys, "lease", "renew", "weather", "--until", "2026-12-20", "--repo", str(demo_repo),
                         "--today", TODAY.isoformat())

    assert code == 3, (code, out, err)
    assert "index.lock" in err and "nothing was committed" in err, err
    assert lock.exists(), "the user's lock file is theirs to remove"
    lock.unlink()
    assert _state(demo_repo) == before and files_under(demo_repo / "oracle") == files
    # once the stale lock is gone the same renewal lands, with index and files in step
    code, out, err = cli(capsys, "lease", "renew", "weather", "--until", "2026-12-20", "--repo", str(demo_repo),
                         "--today", TODAY.isoformat())
    assert code == 0, (code, out, err)
    after = _state(demo_repo)
    assert after["main"] != before["main"] and after["cached"] == after["diff"] == after["status"] == ""
    assert not lock.exists()


@pytest.mark.parametrize("failing", [1, 2], ids=["writing the file", "renaming the index in"])
def test_a_failure_after_the_branch_moved_is_undone_so_branch_index_and_files_agree(demo_repo, capsys,
                                                                                     monkeypatch, failing):
    """The ``failing``-th rename after the ref moved fails (a full disk): first the manifest's
    own, then the new index's. Branch, index and files end as they were, and it says so."""
    from relconsole.engine.repo import commits
    git(demo_repo, "checkout", "-q", "main")
    before = _state(demo_repo)
    manifest = demo_repo / "oracle" / "leases" / "weather.yaml"
    manifest_bytes = manifest.read_bytes()
    swap, rename = commits._swap_ref, os.replace
    moved, renames = [], []

    def full_disk_once(src, dst):
        renames.append(dst)
        if len(renames) == failing:
            raise OSError(28, "No space left on device")
        rename(src, dst)

    def swap_then_the_disk_fills(*args, **kwargs):
        swap(*args, **kwargs)
        moved.append(git(demo_repo, "rev-parse", "main"))
        monkeypatch.setattr(commits.os, "replace", full_disk_once)

    monkeypatch.setattr(commits, "_swap_ref", swap_then_the_disk_fills)
    code, out, err = cli(capsys, "lease", "renew", "weather", "--until", "2026-12-20", "--repo", str(demo_repo),
                         "--today", TODAY.isoformat())
    monkeypatch.undo()

    assert moved and moved[0] != before["main"], "the failure must come after the ref moved"
    assert len(renames) >= failing
    assert code == 3 and "No space left" in err and "undone" in err, (code, out, err)
    assert _state(demo_repo) == before
    assert manifest.read_bytes() == manifest_bytes
    assert not (demo_repo / ".git" / "index.lock").exists()
    assert not [p.name for p in (demo_repo / ".git").iterdir() if p.name.startswith("index.")]


# --- relconsole's worktrees are its own: sparse checkout, fsmonitor, hooks --------------------------

def _counting_script(path: Path, log: Path) -> Path:
    """An executable that appends its working directory and arguments to ``log`` and fails
    (an fsmonitor hook that fails makes git scan: still correct, only slower)."""
    path.write_text(f'#!/bin/sh\necho "$PWD $0 $*" >> "{log}"\nexit 1\n')
    path.chmod(0o755)
    return path


def _calls(log: Path, under: Path) -> list[str]:
    lines = log.read_text().splitlines() if log.exists() else []
    return [line for line in lines if line.startswith(str(under))]


@pytest.fixture
def user_configured(demo_repo: Path, tmp_path: Path) -> tuple[Path, Path]:
    """The sample with the user's sparse checkout (no ``src/``), an fsmonitor hook and
    checkout hooks, each counting its calls into one log; returns (repo, log)."""
    log = tmp_path / "calls.log"
    hooks = tmp_path / "user-hooks"
    hooks.mkdir()
    for name in ("post-checkout", "post-index-change", "reference-transaction"):
        _counting_script(hooks / name, log)
    git(demo_repo, "sparse-checkout", "set", "oracle", "docs", "tests")
    assert not (demo_repo / "src").exists(), "the user's checkout is sparse: no src/"
    git(demo_repo, "config", "core.fsmonitor", str(_counting_script(tmp_path / "fsmonitor-hook", log)))
    git(demo_repo, "config", "core.hooksPath", str(hooks))
    git(demo_repo, "status", "--porcelain")
    assert _calls(log, demo_repo), "the user's fsmonitor hook runs for the user's own git status"
    log.unlink()
    return demo_repo, log


def test_replay_worktrees_are_full_checkouts_that_run_none_of_the_users_hooks(user_configured, tmp_path, capsys):
    repo, log = user_configured
    code, out, err = cli(capsys, "replay", "--runs", "1", "--artifacts", str(tmp_path / "sheets"), "--repo", str(repo),
                         "--today", TODAY.isoformat(), "--json")
    assert code == 1, (code, out, err)  # the sample's deterministic miss, as on a plain clone (row 3)
    assert "ModuleNotFoundError" not in out + err
    own = repo / ".git" / "relconsole" / "worktrees"
    trees = sorted(p.parent for p in own.glob("*/*/.git"))
    assert [t.name for t in trees] == ["base", "head"]
    for tree in trees:
        assert (tree / "src" / "aggregator.py").is_file(), "a full checkout, whatever the user's sparse patterns"
        # any git run in there (a subject's, a curious user's) gets relconsole's settings, not the user's
        for key, want in (("core.sparseCheckout", "false"), ("core.fsmonitor", "false")):
            assert git(tree, "config", "--get", key).strip() == want, key
        hooks_path = git(tree, "config", "--get", "core.hooksPath").strip()
        assert hooks_path and not any(Path(hooks_path).iterdir()), "hooks come from an empty directory"
        git(tree, "status", "--porcelain")  # reads the index: the user's fsmonitor hook would run here
    assert _calls(log, own) == [], "no hook of the user's ran inside relconsole's worktrees"
    # nor for relconsole's own reads in the user's work tree (diff-tree of two commits needs no scan):
    # each call of a 20 s hook was 20 s of every replay
    assert _calls(log, repo) == []


def test_confirm_in_a_sparse_checkout_replays_full_checkouts_without_the_users_hooks(user_configured, demo_repo, capsys):
    repo, log = user_configured
    code, out, err = cli(capsys, "confirm", "penguins.mass_permutation", "--runs", "1", "--repo", str(repo),
                         "--today", TODAY.isoformat(), "--json")
    assert code == 0 and "ModuleNotFoundError" not in out + err, (code, out, err)
    assert _calls(log, repo / ".git" / "relconsole") == []


# --- both sides failing to import the subject is the environment, never evidence -------------------

UNIMPORTABLE = {
    "a package this machine lacks": "def summarize(rows):\n"
                                    "    import penguin_fast_sums  # an optional accelerator, not installed here\n"
                                    "    return penguin_fast_sums.summarize(rows)\n",
    "a name neither side has": "def summarize(rows):\n"
                               "    from aggregator import summarize_fast  # on neither side\n"
                               "    return summarize_fast(rows)\n",
}


@pytest.mark.parametrize("why", list(UNIMPORTABLE))
def test_a_candidate_whose_subject_imports_on_neither_side_is_never_confirmed(demo_repo, capsys, why):
    """On both the patch and the base the subject fails to import, the same way: the replays
    agree, but on nothing the patch did. confirm aborts (exit 3) and records no state."""
    git(demo_repo, "checkout", "-q", "main")
    (demo_repo / "src" / "lazyagg.py").write_text(UNIMPORTABLE[why])
    candidate = (demo_repo / "oracle" / "quarantine" / "penguins.mass_permutation.yaml").read_text()
    (demo_repo / "oracle" / "quarantine" / "penguins.lazy_permutation.yaml").write_text(
        candidate.replace("penguins.mass_permutation", "penguins.lazy_permutation")
                 .replace("aggregator:summarize", "lazyagg:summarize"))
    git(demo_repo, "add", "-A")
    git(demo_repo, "commit", "-qm", "lazy subject and its candidate")
    git(demo_repo, "checkout", "-q", "agent/patch")
    git(demo_repo, "merge", "-q", "--no-edit", "main")

    code, out, err = cli(capsys, "confirm", "penguins.lazy_permutation", "--runs", "1", "--repo", str(demo_repo),
                         "--today", TODAY.isoformat())

    assert code == 3, (code, out, err)
    assert "environment" in err and "confirmed" not in out, (out, err)
    states = list((demo_repo / ".git" / "relconsole" / "candidates").glob("*.json"))
    assert not [p for p in states if '"confirmed"' in p.read_text() or '"replayed_once"' in p.read_text()]


# --- line endings: core.autocrlf and eol=crlf -----------------------------------------------------

def _honest_clone(sample: Path, where: Path, setup) -> Path:
    """A clone of the sample with an honest patch (a comment in the aggregator) on branch
    ``honest`` off ``main``; ``setup(repo)`` sets the user's line-ending rules before the
    files are checked out, so the work tree holds CRLF where the rules say so."""
    subprocess.run(["git", "clone", "-q", "--no-checkout", str(sample), str(where)], check=True)
    git(where, "config", "user.name", "coding-agent")
    git(where, "config", "user.email", "agent@example.invalid")
    setup(where)
    git(where, "checkout", "-q", "-b", "honest", "origin/main")
    git(where, "branch", "-q", "main", "origin/main")
    aggregator = where / "src" / "aggregator.py"
    text = aggregator.read_bytes()
    newline = b"\r\n" if b"\r\n" in text else b"\n"
    aggregator.write_bytes(b"# Sums are exact (math.fsum): row order cannot change them." + newline + text)
    git(where, "commit", "-qam", "docs: say why the sums are exact")
    return where


def _autocrlf(repo: Path) -> None:
    git(repo, "config", "core.autocrlf", "true")


def _eol_crlf(repo: Path) -> None:
    (repo / ".git" / "info").mkdir(exist_ok=True)
    (repo / ".git" / "info" / "attributes").write_text("* text=auto eol=crlf\n")


def _run_decisions(repo: Path, capsys) -> tuple[int, dict[str, tuple[str, str]]]:
    import json
    code, out, err = cli(capsys, "run", "--json", "--repo", str(repo), "--today", TODAY.isoformat())
    payload = json.loads(out)
    return code, {r["relation_id"]: (r["outcome"], r["decision"]["decision"] if isinstance(r.get("decision"), dict)
                                     else r.get("decision")) for r in payload["relations"]}


@pytest.mark.parametrize("rules", [_autocrlf, _eol_crlf], ids=["core.autocrlf=true", "* text=auto eol=crlf"])
def test_an_honest_patch_under_crlf_rules_is_decided_as_on_a_plain_clone(demo_repo, tmp_path, capsys, rules):
    plain = _honest_clone(demo_repo, tmp_path / "plain", lambda repo: None)
    crlf = _honest_clone(demo_repo, tmp_path / "crlf", rules)
    assert b"\r\n" in (crlf / "src" / "aggregator.py").read_bytes(), "the rules put CRLF in the work tree"
    assert git(crlf, "status", "--porcelain") == "", "and git sees no change in it"
    plain_code, plain_decisions = _run_decisions(plain, capsys)
    code, decisions = _run_decisions(crlf, capsys)
    assert plain_code == 0 and plain_decisions, "an honest patch passes on a plain clone"
    assert (code, decisions) == (plain_code, plain_decisions)


def _record(error_type: str | None) -> RunRecord:
    return RunRecord(held=error_type is None, seed=1, error_type=error_type,
                     error="" if error_type is None else f"{error_type}: cannot import summarize_fast")


@pytest.mark.parametrize(("head", "base", "fault"), [
    (["ImportError"], ["ModuleNotFoundError"], True),  # the same code fails on both sides
    (["ImportError", "ImportError"], ["ImportError"], True),
    (["ImportError"], [None], False),  # the patch broke the import: evidence (row 3/6)
    ([None], ["ModuleNotFoundError"], False),  # code the patch adds: not on the base
    (["ImportError"], ["ImportError", "ValueError"], False),  # one base run got past the import
    ([None], ["environment"], True),  # a module neither in the tree nor installed, on any side
])
def test_replay_sheets_abort_when_both_sides_fail_to_import(head, base, fault):
    from relconsole.engine.gate.replay.replaysheet import environment_fault
    found = environment_fault([_record(t) for t in head], [_record(t) for t in base])
    assert (found is not None) == fault, found


# --- refs and submodules a patch's author controls (red team, issue 17's bind) ----------------


def _commit_catalog_line(repo: Path, branch: str, line: str, message: str) -> None:
    """Add an owners line after the catalog's README.md entry on ``branch`` (checked out)."""
    git(repo, "checkout", "-q", branch)
    catalog = repo / "oracle" / "catalog.yaml"
    text = catalog.read_text()
    assert '  "README.md": []\n' in text
    catalog.write_text(text.replace('  "README.md": []\n', f'  "README.md": []\n  {line}\n', 1))
    git(repo, "commit", "-qam", message)


@pytest.mark.parametrize("ignore", ["", "\tignore = all\n"])
def test_a_submodule_change_is_touched_whatever_the_patchs_gitmodules_says(demo_repo, capsys, ignore):
    """A .gitmodules with ignore = all, shipped by the patch, hid its gitlink from every diff:
    bind passed a patch whose only owned change was the .gitmodules itself."""
    _commit_catalog_line(demo_repo, "main", '"/.*": []', "exempt root dotfiles")
    git(demo_repo, "checkout", "-q", "-b", "vendoring", "main")
    base = git(demo_repo, "rev-parse", "HEAD").strip()
    git(demo_repo, "update-index", "--add", "--cacheinfo", f"160000,{base},src/vendored")
    (demo_repo / ".gitmodules").write_text(f'[submodule "v"]\n\tpath = src/vendored\n\turl = ./x\n{ignore}')
    git(demo_repo, "add", ".gitmodules")
    git(demo_repo, "commit", "-qm", "vendor")
    code, out, _ = cli(capsys, "bind", "--repo", str(demo_repo), "--base", "main", "--today", TODAY.isoformat())
    assert code == 2 and "src/vendored" in out


def test_a_tag_named_like_the_base_branch_aborts_instead_of_lending_its_oracle(demo_repo, capsys):
    """git prefers refs/tags/main to refs/heads/main and only warns: a pushed tag 'main' on the
    patch's commit made the patch's own widened catalog the base's."""
    args = ("bind", "--repo", str(demo_repo), "--base", "main", "--today", TODAY.isoformat())
    honest, _, _ = cli(capsys, *args)
    _commit_catalog_line(demo_repo, "agent/patch", '"**": []', "own everything")
    git(demo_repo, "tag", "main")
    code, _, err = cli(capsys, *args)
    assert honest != 0 and code == 3 and "ambiguous" in err
    git(demo_repo, "tag", "-d", "main")
    assert cli(capsys, *args)[0] == honest
    assert cli(capsys, "bind", "--repo", str(demo_repo), "--base", "refs/heads/main",
               "--today", TODAY.isoformat())[0] == honest


@pytest.mark.parametrize("refs", [("--base", "main..HEAD"), ("--base", "main...HEAD"),
                                  ("--head", "agent/patch...main")])
def test_a_range_is_no_ref(demo_repo, capsys, refs):
    """A range given as --base or --head answered two lines to one rev-parse and shifted the
    answers: the base became HEAD (nothing touched, exit 0)."""
    code, out, err = cli(capsys, "bind", "--repo", str(demo_repo), *refs, "--today", TODAY.isoformat())
    assert code == 3 and not out and err.count("\n") == 1


def test_a_replace_ref_does_not_swap_the_oracle_relconsole_reads(demo_repo, capsys):
    """Red team: `git replace <main:oracle/catalog.yaml> <another blob>` (refs/replace/* come
    with a mirror fetch) made git hand back the other blob under the catalog's id."""
    from relconsole.engine.repo import gitio
    from relconsole.engine.repo.treeview import TreeView
    blob = git(demo_repo, "rev-parse", "main:oracle/catalog.yaml").strip()
    honest = git(demo_repo, "cat-file", "blob", blob)
    evil = subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=demo_repo, input=honest + "# swapped\n",
                          capture_output=True, text=True, check=True).stdout.strip()
    git(demo_repo, "replace", blob, evil)
    assert git(demo_repo, "cat-file", "blob", blob).endswith("# swapped\n")  # what git alone says now
    view = TreeView(gitio.open_repo(demo_repo), git(demo_repo, "rev-parse", "main").strip())
    assert view.read_text("oracle/catalog.yaml") == honest


def test_an_unknown_ref_hints_a_fetch_only_where_there_is_a_remote(demo_repo, capsys):
    """A new user's typo (--base mian) was told to run `git fetch origin mian` in a repository
    with no remote; a range as --base was told to fetch the range."""
    args = ("bind", "--repo", str(demo_repo), "--today", TODAY.isoformat())
    code, _, err = cli(capsys, *args, "--base", "mian")
    assert code == 3 and "mian" in err and "fetch" not in err
    code, _, err = cli(capsys, *args, "--base", "main..HEAD")
    assert code == 3 and "range" in err and "fetch" not in err
    git(demo_repo, "remote", "add", "upstream", str(demo_repo))
    code, _, err = cli(capsys, *args, "--base", "mian")
    assert code == 3 and "git fetch upstream mian" in err
