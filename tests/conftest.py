"""Shared fixtures: a materialised sample repository and git helpers."""

from __future__ import annotations

import datetime as dt
import subprocess
from pathlib import Path

import pytest
from hypothesis import settings

from relconsole.engine.demo import materialise

# No property test may fail for being slow: the machine's load is not the product's behaviour.
settings.register_profile("relconsole", deadline=None)
settings.load_profile("relconsole")

TODAY = dt.date(2026, 11, 30)


def git(repo: Path, *args: str, check: bool = True) -> str:
    """Run git in ``repo`` and return stdout (text, stripped of nothing)."""
    proc = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=False)
    if check and proc.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {proc.stderr}")
    return proc.stdout


def init_repo(root: Path) -> Path:
    """An empty repository at ``root`` on branch ``main`` with a test identity."""
    git(root.parent, "init", "-q", "-b", "main", str(root))
    git(root, "config", "user.name", "t")
    git(root, "config", "user.email", "t@example.invalid")
    return root


def git_bytes(repo: Path, *args: str) -> bytes:
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, check=True).stdout


def reviewed_repo(repo: Path, base: dict[str, str], patch: dict[str, str] | None = None) -> Path:
    """A git repository at ``repo``: ``base`` files committed on ``main``, then branch
    ``patch`` checked out with ``patch`` files committed on it (when given)."""
    for path, text in base.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    git(repo.parent, "init", "-q", "-b", "main", str(repo))
    git(repo, "config", "user.name", "t")
    git(repo, "config", "user.email", "t@example.invalid")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    git(repo, "checkout", "-q", "-b", "patch")
    if patch:
        for path, text in patch.items():
            (repo / path).parent.mkdir(parents=True, exist_ok=True)
            (repo / path).write_text(text)
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", "patch")
    return repo


@pytest.fixture
def demo_repo(tmp_path: Path) -> Path:
    """The sample repository with ``agent/patch`` checked out, dates relative to TODAY."""
    return materialise(tmp_path / "sample", TODAY)


SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def pytest_report_header(config) -> str:
    """Say why the real-corpus group is or is not part of this run."""
    where = "found" if SHARED_DATA.is_dir() else "missing"
    return (f"relconsole shared corpora: {SHARED_DATA} ({where}); tests marked 'shared' are "
            "not collected by default (run: python -m pytest -m shared)")


@pytest.fixture(autouse=True)
def _console_preferences(tmp_path_factory, monkeypatch):
    """The console's saved theme and keymap live in a scratch directory per test, never the
    user's (the keymap is found through platformdirs, which reads XDG_CONFIG_HOME)."""
    monkeypatch.setenv("RELCONSOLE_CONFIG_DIR", str(tmp_path_factory.mktemp("config")))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("xdg")))
    monkeypatch.delenv("RELCONSOLE_KEYMAP", raising=False)
