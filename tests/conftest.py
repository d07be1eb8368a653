"""Shared fixtures: a materialised sample repository (git helpers: bench/gitrepo.py)."""

from __future__ import annotations

import datetime as dt
import os
import textwrap
from pathlib import Path

import pytest
from hypothesis import settings

from bench.gitrepo import write_files
from relconsole.engine.demo import materialise
from relconsole.engine.oracle.catalog import load_catalog
from relconsole.engine.relations.runner import RunPlan
from relconsole.engine.repo.baseref import CI_VARIABLES

# Under CI every command needs --base (a patch can push branches there): the suite runs the
# same on a laptop and on a CI runner, so the runner's own CI variables are dropped for every
# test and every process a test starts (tests set one where they mean it).
for _name in CI_VARIABLES:
    os.environ.pop(_name, None)

# No property test may fail for being slow: the machine's load is not the product's behaviour.
settings.register_profile("relconsole", deadline=None)
settings.load_profile("relconsole")

TODAY = dt.date(2026, 11, 30)


def seeds_plan(tree: Path, module: str, source: str, subject: str, seeds: str, kind: str = "idempotence",
               extra: str = "", timeout: float = 60.0, clock: str | None = None) -> RunPlan:
    """A run plan for relation ``iso.SUBJECT`` (``kind`` over ``module:subject``, the seeds file
    ``seeds`` as its input, compared exactly; ``extra`` catalog lines appended) in a scratch
    tree at ``tree`` holding ``module.py`` (``source``) and ``oracle/seeds/x.jsonl``."""
    write_files(tree, {f"{module}.py": source, "oracle/seeds/x.jsonl": seeds})
    catalog = load_catalog(textwrap.dedent(f"""\
        relations:
          - id: iso.{subject}
            kind: {kind}
            subject: {module}:{subject}
            input: {{seeds: oracle/seeds/x.jsonl}}
            compare: exact
            statement: isolation
        """) + extra, "oracle/catalog.yaml")
    return RunPlan(catalog.get(f"iso.{subject}"), tree, [str(tree)], "seeds",
                   tree / "oracle" / "seeds" / "x.jsonl", "pin", timeout, clock)


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
    for name in CI_VARIABLES:  # see below: a fixture's test may have set one
        monkeypatch.delenv(name, raising=False)
