"""The base is set once (issue 36): ``[tool.relconsole] base_ref`` of the reviewed commit's
pyproject.toml, checked against the merge base so that a patch cannot choose its own base;
else origin/HEAD; else main. ``init`` writes the setting on a branch that is not main."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from relconsole.cli.main import main
from relconsole.engine.errors import EXIT_ABORT, EXIT_PASS, GitError, UsageError
from relconsole.engine.oracle.bootstrap import base_setting_change
from relconsole.engine.repo import gitio
from relconsole.engine.repo.baseref import resolve_base
from bench.gitrepo import commit_all, committed_repo, git, write_files
from tests.conftest import TODAY


def cli(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def adopted(tmp_path: Path, capsys, branch: str) -> Path:
    """A library on ``branch`` (not main), adopted with ``relconsole init``."""
    repo = committed_repo(tmp_path / "lib", {"pkg/core.py": "def f(x):\n    return x\n",
                                            "pyproject.toml": '[project]\nname = "lib"  # kept\n'},
                          identity=("Rita Reviewer", "rita@example.org"), message="a library")
    git(repo, "branch", "-m", branch)
    code, out, err = cli(capsys, "init", "--repo", str(repo), "--today", TODAY.isoformat())
    assert code == EXIT_PASS, err
    return repo


def setting(repo: Path, rev: str = "HEAD") -> dict:
    return tomllib.loads(git(repo, "show", f"{rev}:pyproject.toml"))


@pytest.mark.parametrize("branch", ["master", "trunk"])
def test_a_repository_on_another_branch_needs_no_base_after_init(tmp_path: Path, capsys, branch):
    repo = adopted(tmp_path, capsys, branch)
    written = setting(repo)
    assert written["tool"]["relconsole"]["base_ref"] == branch
    assert written["project"]["name"] == "lib", "every other line of pyproject.toml is kept"
    git(repo, "checkout", "-q", "-b", "feature")
    write_files(repo, {"pkg/core.py": "def f(x):\n    return x + 0\n"})
    commit_all(repo, "a patch")
    for command in ("validate", "bind"):
        code, out, err = cli(capsys, command, "--repo", str(repo), "--today", TODAY.isoformat())
        assert code != EXIT_ABORT and "--base" not in err, (command, err)
    code, out, _ = cli(capsys, "bind", "--repo", str(repo), "--today", TODAY.isoformat(), "--json")
    import json
    assert json.loads(out)["base"] == branch


def test_init_on_main_writes_no_setting(tmp_path: Path, capsys):
    repo = adopted(tmp_path, capsys, "main")
    assert "base_ref" not in setting(repo).get("tool", {}).get("relconsole", {})


def test_a_repository_with_neither_setting_nor_main_names_the_branch_it_has(tmp_path: Path, capsys):
    repo = committed_repo(tmp_path / "lib", {"pkg/core.py": "x = 1\n"}, identity=None, message="a library")
    git(repo, "branch", "-m", "master")
    code, _, err = cli(capsys, "validate", "--repo", str(repo), "--today", TODAY.isoformat())
    [line] = err.splitlines()
    assert code == EXIT_ABORT and "--base master" in line and "base_ref" in line, line


def test_a_branch_naming_itself_is_refused_where_a_default_branch_exists(tmp_path: Path, capsys):
    """The patch's own branch (or one it pushed) naming itself as the base: a clone has
    origin/HEAD, whose branch never named it, so the setting is refused (red team, issue 36)."""
    origin = adopted(tmp_path, capsys, "master")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(origin), str(clone))
    git(clone, "config", "user.name", "Agent"), git(clone, "config", "user.email", "agent@example.org")
    git(clone, "checkout", "-q", "-b", "agent/fix")
    text = (clone / "pyproject.toml").read_text().replace('base_ref = "master"', 'base_ref = "agent/fix"')
    write_files(clone, {"pyproject.toml": text, "pkg/core.py": "def f(x):\n    return -x\n"})
    commit_all(clone, "a patch that names its own branch")
    code, _, err = cli(capsys, "validate", "--repo", str(clone), "--today", TODAY.isoformat())
    assert code == EXIT_ABORT and "default branch" in err, err
    git(clone, "checkout", "-q", "master")
    assert cli(capsys, "validate", "--repo", str(clone), "--today", TODAY.isoformat())[0] != EXIT_ABORT


@pytest.mark.parametrize("variable", ["CI", "JENKINS_URL", "TF_BUILD"])
def test_under_ci_the_base_must_be_named(tmp_path: Path, capsys, monkeypatch, variable):
    """A patch can push branches (main included) to the remote a CI clone fetches: there the
    base comes from the platform (--base), never from the refs (red team, issue 36)."""
    repo = adopted(tmp_path, capsys, "master")
    monkeypatch.setenv(variable, "true")
    code, _, err = cli(capsys, "validate", "--repo", str(repo), "--today", TODAY.isoformat())
    assert code == EXIT_ABORT and "--base" in err, err
    code, _, err = cli(capsys, "validate", "--repo", str(repo), "--base", "master", "--today", TODAY.isoformat())
    assert code != EXIT_ABORT, err
    monkeypatch.setenv(variable, "false")
    assert cli(capsys, "validate", "--repo", str(repo), "--today", TODAY.isoformat())[0] != EXIT_ABORT


def test_a_clone_of_the_agents_work_directory_is_not_reviewed_against_itself(tmp_path: Path):
    """The agent's checkout was its own branch, so the clone's origin/HEAD names the patch:
    a default that already holds the reviewed commit is skipped (red team, issue 36)."""
    work = committed_repo(tmp_path / "work", {"a.py": "x = 1\n"}, identity=None, message="one")
    git(work, "checkout", "-q", "-b", "agent/fix")
    write_files(work, {"a.py": "x = 2\n"})
    commit_all(work, "the patch")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(work), str(clone))  # checks out agent/fix; origin/HEAD -> agent/fix
    name, sha = resolve_base(gitio.open_repo(clone), None)
    assert name == "origin/main" and sha != git(clone, "rev-parse", "HEAD").strip()


def test_a_setting_naming_a_pushed_branch_that_holds_the_patch_is_refused(tmp_path: Path, capsys):
    """A branch pushed at the patch's own commit (remote-tracking here, no default branch to
    check against), named by the setting: nothing would be reviewed, so it is refused. A local
    branch with no commit of its own yet (a fresh topic branch) still reviews against master."""
    repo = adopted(tmp_path, capsys, "master")
    git(repo, "checkout", "-q", "-b", "topic")
    assert cli(capsys, "validate", "--repo", str(repo), "--today", TODAY.isoformat())[0] != EXIT_ABORT
    git(repo, "checkout", "-q", "-b", "agent/fix")
    text = (repo / "pyproject.toml").read_text().replace('base_ref = "master"', 'base_ref = "pushed"')
    write_files(repo, {"pyproject.toml": text, "pkg/core.py": "def f(x):\n    return -x\n"})
    commit_all(repo, "the patch")
    git(repo, "update-ref", "refs/remotes/origin/pushed", "HEAD")
    git(repo, "branch", "-q", "-D", "master", "topic")  # no default branch left to check the setting against
    code, _, err = cli(capsys, "validate", "--repo", str(repo), "--today", TODAY.isoformat())
    assert code == EXIT_ABORT and "already holds the reviewed commit" in err, err


def test_a_team_that_renames_its_branch_fixes_the_setting_in_a_patch(tmp_path: Path, capsys):
    """master renamed to main: the old setting names no branch (said once), and the patch that
    writes base_ref = "main" is honoured, since main is the default branch."""
    repo = adopted(tmp_path, capsys, "master")
    git(repo, "branch", "-m", "master", "main")
    code, _, err = cli(capsys, "validate", "--repo", str(repo), "--today", TODAY.isoformat())
    assert code == EXIT_ABORT and "names no branch" in err
    git(repo, "checkout", "-q", "-b", "rename")
    write_files(repo, {"pyproject.toml": (repo / "pyproject.toml").read_text().replace('"master"', '"main"')})
    commit_all(repo, "base_ref follows the rename")
    code, _, err = cli(capsys, "validate", "--repo", str(repo), "--today", TODAY.isoformat())
    assert code != EXIT_ABORT, err


def test_a_patch_that_moves_its_base_is_refused(tmp_path: Path, capsys):
    """A patch pointing base_ref at a branch with a weaker oracle (one that names itself) is
    refused: the merge base still names the old base. Naming a commit expression is no branch."""
    repo = adopted(tmp_path, capsys, "master")
    git(repo, "checkout", "-q", "-b", "weak")
    text = (repo / "pyproject.toml").read_text().replace('base_ref = "master"', 'base_ref = "weak"')
    write_files(repo, {"pyproject.toml": text})
    commit_all(repo, "the weak branch names itself")
    git(repo, "checkout", "-q", "-b", "patch", "master")
    write_files(repo, {"pyproject.toml": text, "pkg/core.py": "def f(x):\n    return -x\n"})
    commit_all(repo, "a patch that moves its gate")
    code, _, err = cli(capsys, "validate", "--repo", str(repo), "--today", TODAY.isoformat())
    assert code == EXIT_ABORT and "pyproject.toml" in err and "--base" in err, err
    for sneaky in ("HEAD~1", "HEAD", git(repo, "rev-parse", "master").strip(), "master\\u0000x"):
        write_files(repo, {"pyproject.toml": text.replace('"weak"', f'"{sneaky}"')})
        commit_all(repo, f"base {sneaky}")
        code, _, err = cli(capsys, "bind", "--repo", str(repo), "--today", TODAY.isoformat())
        assert code == EXIT_ABORT and "names no branch" in err, (sneaky, err)
    code, _, err = cli(capsys, "validate", "--repo", str(repo), "--base", "master", "--today", TODAY.isoformat())
    assert code != EXIT_ABORT, "naming the base keeps working"


def test_the_remote_default_branch_is_the_base_of_a_clone(tmp_path: Path):
    origin = committed_repo(tmp_path / "origin", {"a.py": "x = 1\n"}, identity=None, message="one")
    git(origin, "branch", "-m", "develop")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(origin), str(clone))
    git(clone, "checkout", "-q", "-b", "topic")
    git(clone, "config", "user.name", "T"), git(clone, "config", "user.email", "t@example.org")
    write_files(clone, {"a.py": "x = 2\n"})
    commit_all(clone, "a topic")
    repo = gitio.open_repo(clone)
    name, sha = resolve_base(repo, None)
    assert name == "develop" and sha == git(clone, "rev-parse", "origin/develop").strip()
    git(clone, "branch", "-q", "-D", "develop")
    assert resolve_base(repo, None)[0] == "origin/develop"


@pytest.mark.parametrize("text", [None, "", "[project]\nname = 'x'", "[tool.relconsole]\ncatalog = 'o/c.yaml'\n",
                                  "[tool.relconsole] # settings\n[tool.relconsole.flags]\nclock = 'warn'\n",
                                  "[tool.relconsole.flags]\nclock = 'warn'\n"])
def test_the_written_setting_parses_and_keeps_every_other_setting(text, tmp_path: Path):
    change = base_setting_change(text, "master")
    edited = tomllib.loads(change.content.decode())
    before = tomllib.loads(text or "")
    assert edited["tool"]["relconsole"].pop("base_ref") == "master"
    assert edited.get("tool", {}).get("relconsole") == before.get("tool", {}).get("relconsole", {}) or \
        not before.get("tool", {}).get("relconsole")
    assert edited.get("project") == before.get("project")
    assert base_setting_change(change.content.decode(), "master") is None, "written once"


def test_another_setting_is_not_overwritten():
    with pytest.raises(UsageError, match="base_ref"):
        base_setting_change("[tool.relconsole]\nbase_ref = 'develop'\n", "master")


def test_a_local_main_goes_before_a_remote_head_naming_the_patch(tmp_path: Path):
    """A clone of a work directory whose checkout was the patch's branch: origin/HEAD names the
    patch, and the local main is the base (the sample is such a clone)."""
    work = committed_repo(tmp_path / "work", {"a.py": "x = 1\n"}, identity=None, message="one")
    git(work, "checkout", "-q", "-b", "agent/patch")
    write_files(work, {"a.py": "x = 2\n"})
    commit_all(work, "the patch")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(work), str(clone))
    git(clone, "branch", "-q", "main", "origin/main")
    name, sha = resolve_base(gitio.open_repo(clone), None)
    assert name == "main" and sha == git(work, "rev-parse", "main").strip()
