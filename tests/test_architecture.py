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
