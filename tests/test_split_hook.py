"""The pre-commit hook checks what it is given (``relconsole check-split --hook``).

pre-commit runs a ``pass_filenames: false`` hook alike in every mode; what differs is the
environment: ``--from-ref/--to-ref`` (pre-commit.ci, pre-commit/action, pre-push) export
``PRE_COMMIT_FROM_REF``/``PRE_COMMIT_TO_REF`` (older: ``PRE_COMMIT_ORIGIN``/``PRE_COMMIT_SOURCE``),
``git commit`` sets ``GIT_INDEX_FILE``, ``--all-files`` sets nothing. Before this, the hook
checked the (empty) index in every mode, so ``--all-files`` and a ref range passed a branch that
mixes protected paths with code. Real git repositories in tmp_path; the last tests run real
pre-commit with the manifest's own entry.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from bench.gitrepo import commit_all, git, init_repo, write_files
from relconsole.cli import splithook
from relconsole.cli.main import main
from relconsole.engine.errors import EXIT_ABORT, EXIT_PASS, EXIT_REJECT, EXIT_USAGE

ROOT = Path(__file__).resolve().parents[1]
HOOK_VARIABLES = ("PRE_COMMIT_FROM_REF", "PRE_COMMIT_TO_REF", "PRE_COMMIT_ORIGIN", "PRE_COMMIT_SOURCE",
                  "GIT_INDEX_FILE")


@pytest.fixture
def clean_env(monkeypatch):
    """No hook variable of the test runner's own (a test run from a git hook) leaks in."""
    for name in HOOK_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


@pytest.fixture
def branch(tmp_path: Path) -> dict[str, str]:
    """A repository whose branch ``feat`` holds a clean commit, a commit mixing the catalog with
    code, and another clean commit, on top of ``main``; returns the shas by name, and ``repo``."""
    repo = init_repo(tmp_path / "r")
    write_files(repo, {"src/app.py": "v1\n", "oracle/catalog.yaml": "relations: []\n"})
    shas = {"base": commit_all(repo, "base"), "repo": str(repo)}
    git(repo, "checkout", "-q", "-b", "feat")
    write_files(repo, {"src/app.py": "v2\n"})
    shas["clean"] = commit_all(repo, "code")
    write_files(repo, {"src/app.py": "v3\n", "oracle/catalog.yaml": "relations: [x]\n"})
    shas["mixed"] = commit_all(repo, "code and catalog at once")
    write_files(repo, {"src/app.py": "v4\n"})
    shas["tip"] = commit_all(repo, "more code")
    return shas


def hook(capsys, repo: str, *extra: str) -> tuple[int, dict]:
    code = main(["check-split", "--hook", "--repo", repo, "--json", *extra])
    return code, json.loads(capsys.readouterr().out)


# --- what the environment says --------------------------------------------------------------

@pytest.mark.parametrize("env, expected", [
    ({"PRE_COMMIT_FROM_REF": "a", "PRE_COMMIT_TO_REF": "b"}, (splithook.RANGE, "a..b")),
    ({"PRE_COMMIT_ORIGIN": "a", "PRE_COMMIT_SOURCE": "b"}, (splithook.RANGE, "a..b")),
    ({"PRE_COMMIT_FROM_REF": "a", "PRE_COMMIT_TO_REF": "b", "GIT_INDEX_FILE": ".git/index"},
     (splithook.RANGE, "a..b")),
    ({"GIT_INDEX_FILE": ".git/index"}, (splithook.STAGED, None)),
    ({"PRE_COMMIT": "1"}, (splithook.BRANCH, None)),
], ids=["from-to", "legacy-origin-source", "refs-before-index", "git-commit", "all-files"])
def test_the_environment_names_what_the_hook_checks(env, expected):
    assert splithook.hook_target(env) == expected


def test_one_end_of_a_range_is_refused():
    with pytest.raises(ValueError, match="PRE_COMMIT_TO_REF"):
        splithook.hook_target({"PRE_COMMIT_FROM_REF": "a"})


# --- the command on real histories ----------------------------------------------------------

def test_a_ref_range_checks_each_of_its_commits(branch, capsys, clean_env):
    clean_env.setenv("PRE_COMMIT_FROM_REF", branch["base"])
    clean_env.setenv("PRE_COMMIT_TO_REF", branch["tip"])
    code, out = hook(capsys, branch["repo"])
    assert code == EXIT_REJECT
    assert {o["commit"] for o in out["offences"]} == {branch["mixed"]} and out["commits_checked"] == 3
    clean_env.setenv("PRE_COMMIT_FROM_REF", branch["mixed"])  # the commits after it are clean
    code, out = hook(capsys, branch["repo"])
    assert (code, out["offences"], out["commits_checked"]) == (EXIT_PASS, [], 1)


def test_all_files_checks_the_branch_since_its_merge_base(branch, capsys, clean_env):
    code, out = hook(capsys, branch["repo"])
    assert code == EXIT_REJECT and {o["commit"] for o in out["offences"]} == {branch["mixed"]}
    assert out["range"] == f"{branch['base']}..HEAD" and out["staged"] is True
    git(Path(branch["repo"]), "checkout", "-q", "main")  # on the base itself: nothing of the branch
    code, out = hook(capsys, branch["repo"])
    assert (code, out["commits_checked"]) == (EXIT_PASS, 1)


def test_all_files_also_checks_what_is_staged(branch, capsys, clean_env):
    repo = Path(branch["repo"])
    git(repo, "checkout", "-q", "main")
    write_files(repo, {"src/app.py": "staged\n", "oracle/catalog.yaml": "relations: [y]\n"})
    git(repo, "add", "-A")
    code, out = hook(capsys, branch["repo"])
    assert code == EXIT_REJECT and {o["commit"] for o in out["offences"]} == {"staged"}


def test_inside_git_commit_only_the_commit_being_made_is_checked(branch, capsys, clean_env):
    """A branch's old offence is CI's to report; a commit that keeps the rules is let through."""
    repo = Path(branch["repo"])
    write_files(repo, {"src/app.py": "v5\n"})
    git(repo, "add", "-A")
    clean_env.setenv("GIT_INDEX_FILE", str(repo / ".git" / "index"))
    code, out = hook(capsys, branch["repo"])
    assert (code, out["range"], out["staged"]) == (EXIT_PASS, None, True)


def test_the_base_is_named_or_the_hook_aborts_with_the_range_to_give(branch, capsys, clean_env):
    assert hook(capsys, branch["repo"], "--base", branch["clean"])[1]["commits_checked"] == 3  # 2 + staged
    code = main(["check-split", "--hook", "--repo", branch["repo"], "--base", "nope"])
    assert code == EXIT_ABORT and "nope" in capsys.readouterr().err
    orphan = Path(branch["repo"])
    git(orphan, "checkout", "-q", "--orphan", "lonely")
    commit_all(orphan, "unrelated history")
    code = main(["check-split", "--hook", "--repo", branch["repo"]])
    err = capsys.readouterr().err
    assert code == EXIT_ABORT and "--from-ref" in err, err


def test_hook_base_and_range_do_not_mix(branch, capsys, clean_env):
    assert main(["check-split", "--hook", "--staged", "--repo", branch["repo"]]) == EXIT_USAGE
    assert main(["check-split", "--staged", "--base", "main", "--repo", branch["repo"]]) == EXIT_USAGE


# --- the manifest, and real pre-commit running it --------------------------------------------

def manifest() -> list[dict]:
    return yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))


def test_the_manifest_runs_the_hook_mode_and_names_the_pre_commit_it_needs():
    from packaging.version import Version
    for hook_def in manifest():
        assert hook_def["entry"].split() == ["relconsole", "check-split", "--hook"]
        assert hook_def["pass_filenames"] is False and hook_def["always_run"] is True
        # "pre-commit" and "pre-push" as stage names: pre-commit 3.2.0 renamed them from commit/push
        assert "pre-commit" in hook_def["stages"] and "commit" not in hook_def["stages"]
        assert Version(hook_def["minimum_pre_commit_version"]) >= Version("3.2.0")


def pre_commit(repo: Path, *args: str, extra_env: dict | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in HOOK_VARIABLES}
    env.update(PRE_COMMIT_HOME=str(repo.parent / "pre-commit-home"), PYTHONPATH=str(ROOT), **(extra_env or {}))
    return subprocess.run([sys.executable, "-m", "pre_commit", *args], cwd=repo, env=env, capture_output=True,
                          text=True, timeout=300)


@pytest.fixture
def hooked(branch) -> dict:
    """``branch`` with a .pre-commit-config.yaml on ``main`` that runs the manifest's hook with
    this checkout's relconsole (a local ``system`` hook: the same entry and options, no install)."""
    pytest.importorskip("pre_commit", reason="pip install -e '.[test]' installs pre-commit")
    repo = Path(branch["repo"])
    (definition,) = [h for h in manifest() if h["id"] == "relconsole-split"]
    local = {**definition, "language": "system",
             "entry": definition["entry"].replace("relconsole", f"{sys.executable} -m relconsole", 1)}
    local.pop("minimum_pre_commit_version")
    config = {"minimum_pre_commit_version": definition["minimum_pre_commit_version"],
              "repos": [{"repo": "local", "hooks": [local]}]}
    git(repo, "checkout", "-q", "main")
    write_files(repo, {".pre-commit-config.yaml": yaml.safe_dump(config)})
    commit_all(repo, "pre-commit configuration")
    git(repo, "checkout", "-q", "feat")
    git(repo, "rebase", "-q", "main")
    branch["tip"] = git(repo, "rev-parse", "HEAD").strip()
    branch["main"] = git(repo, "rev-parse", "main").strip()
    branch["mixed"] = git(repo, "rev-parse", "HEAD~1").strip()
    return branch


def test_real_pre_commit_from_ref_to_ref_catches_the_mixed_commit(hooked):
    repo = Path(hooked["repo"])
    proc = pre_commit(repo, "run", "--from-ref", hooked["main"], "--to-ref", hooked["tip"])
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert hooked["mixed"][:12] in proc.stdout and "Failed" in proc.stdout
    proc = pre_commit(repo, "run", "--from-ref", hooked["mixed"], "--to-ref", hooked["tip"])
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_real_pre_commit_all_files_catches_the_mixed_commit(hooked):
    proc = pre_commit(Path(hooked["repo"]), "run", "--all-files")
    assert proc.returncode == 1 and hooked["mixed"][:12] in proc.stdout, proc.stdout + proc.stderr


def test_real_git_commit_refuses_a_mixed_commit_and_takes_a_clean_one(hooked):
    repo = Path(hooked["repo"])
    assert pre_commit(repo, "install").returncode == 0
    write_files(repo, {"src/app.py": "v9\n", "oracle/catalog.yaml": "relations: [z]\n"})
    git(repo, "add", "-A")
    env = {k: v for k, v in os.environ.items() if k not in HOOK_VARIABLES}
    env.update(PRE_COMMIT_HOME=str(repo.parent / "pre-commit-home"), PYTHONPATH=str(ROOT))
    refused = subprocess.run(["git", "commit", "-q", "-m", "mixed"], cwd=repo, env=env, capture_output=True,
                             text=True, timeout=300)
    assert refused.returncode != 0 and "staged src/app.py: mixes" in refused.stderr, refused.stderr
    assert "commits in" not in refused.stderr  # the commit being made only, not the branch
    git(repo, "reset", "-q", "--", "oracle/catalog.yaml")
    taken = subprocess.run(["git", "commit", "-q", "-m", "code only"], cwd=repo, env=env, capture_output=True,
                           text=True, timeout=300)
    assert taken.returncode == 0, taken.stdout + taken.stderr  # the branch's older mixed commit is CI's


def test_the_staged_commit_is_judged_under_the_base_layout(tmp_path: Path, clean_env, capsys):
    """An earlier commit of the branch that points ``protected`` elsewhere in pyproject.toml
    (a path no pattern guards) does not unguard the oracle for the next commit (red team)."""
    repo = init_repo(tmp_path / "r")
    write_files(repo, {"src/app.py": "v1\n", "oracle/catalog.yaml": "relations: []\n",
                       "pyproject.toml": "[tool.relconsole]\n"})
    commit_all(repo, "base")
    git(repo, "checkout", "-q", "-b", "feat")
    write_files(repo, {"pyproject.toml": '[tool.relconsole]\nprotected = ["nothing/**"]\ncatalog = "nothing/c.yaml"\n'})
    commit_all(repo, "build: config")
    write_files(repo, {"src/app.py": "v2\n", "oracle/catalog.yaml": "relations: [x]\n"})
    git(repo, "add", "-A")
    clean_env.setenv("GIT_INDEX_FILE", str(repo / ".git" / "index"))
    code, payload = hook(capsys, str(repo))
    assert code == EXIT_REJECT, payload


@pytest.mark.parametrize("word", ["--am", "--ame", "--amen", "--amend"])
def test_every_spelling_git_takes_for_amend_is_an_amend(word):
    from relconsole.engine.repo.splitcheck import _means_amend
    assert _means_amend(word)


@pytest.mark.parametrize("word", ["--a", "--all", "--amends", "--author", "-m", "commit", "--no-amend"])
def test_other_words_are_no_amend(word):
    from relconsole.engine.repo.splitcheck import _means_amend
    assert not _means_amend(word)
