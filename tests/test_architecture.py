"""The engine stays free of UI (import-linter contract in pyproject.toml)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_engine_imports_no_ui():
    lint = shutil.which("lint-imports") or str(Path(sys.executable).with_name("lint-imports"))
    if not Path(lint).exists():
        pytest.fail("import-linter is not installed: pip install -e '.[test]'")
    proc = subprocess.run([lint], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "KEPT" in proc.stdout


def test_ci_runs_the_readme_test_command_and_the_readme_is_readable():
    """CI must run the README's own test command; a README mangled by a bad edit (one
    character per line) would still pass every other test."""
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    command = ci[ci.index("# The README test command, verbatim:") + 1]
    readme = (ROOT / "README.md").read_text().splitlines()
    assert readme.count(command) == 1
    assert len(readme) < 2000 and sum(len(line) for line in readme) / len(readme) > 20


def test_the_command_line_loads_only_what_its_command_needs():
    """Building the parser (``relconsole --help``, every command's start) imports no engine
    module that reads a repository, nor GitPython, jsonschema, PyYAML or Textual: each
    command imports what it needs (issue 17: --help took 0.8 s)."""
    probe = ("import sys, relconsole.cli.main\n"
             "heavy = ['relconsole.engine.gate.replay', 'relconsole.engine.gate.confirm', 'relconsole.engine.gate.actions',\n"
             "         'relconsole.engine.gate.wslease', 'relconsole.engine.repo.commits', 'relconsole.engine.repo.worktrees', 'sqlite3',\n"
             "         'relconsole.engine.gate.review', 'relconsole.engine.relations.runner', 'git', 'jsonschema', 'textual', 'yaml']\n"
             "print([m for m in heavy if m in sys.modules])\n")
    proc = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "[]", proc.stdout
    # and each command still finds what it imports late
    for command in ("replay", "confirm", "lease", "workspace", "decide", "check-split"):
        helped = subprocess.run([sys.executable, "-m", "relconsole", command, "--help"], cwd=ROOT,
                                capture_output=True, text=True)
        assert helped.returncode == 0 and "usage:" in helped.stdout, (command, helped.stderr[-500:])
