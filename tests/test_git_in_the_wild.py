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

from relconsole.cli import main
from tests.conftest import TODAY, git

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
