"""The engine stays free of UI, its layers point down and nothing imports in a circle (the
import-linter contracts in pyproject.toml)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _lint_imports(cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    lint = shutil.which("lint-imports") or str(Path(sys.executable).with_name("lint-imports"))
    if not Path(lint).exists():
        pytest.fail("import-linter is not installed: pip install -e '.[test]'")
    return subprocess.run([lint, "--no-cache"], cwd=cwd, capture_output=True, text=True, env=env)


def test_every_import_contract_is_kept():
    proc = _lint_imports(ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "BROKEN" not in proc.stdout and proc.stdout.count("KEPT") >= 3


@pytest.mark.parametrize(("module", "upward", "contract"), [
    ("relconsole/engine/repo/gitio.py", "relconsole.engine.gate.review", "Arrows only point down"),
    ("relconsole/engine/oracle/catalog.py", "relconsole.engine.relations.runner", "Arrows only point down"),
    ("relconsole/engine/errors.py", "relconsole.engine.repo.gitio", "Arrows only point down"),
    ("relconsole/engine/gate/importmap.py", "relconsole.engine.gate.importrun", "No circle anywhere"),
])
def test_an_import_against_the_layers_breaks_a_contract(tmp_path, module, upward, contract):
    """The contracts bite: in a copy of the package, one lower module importing a higher one
    (or closing a circle) makes lint-imports fail and name the contract."""
    shutil.copytree(ROOT / "relconsole", tmp_path / "relconsole",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    with (tmp_path / module).open("a") as out:
        out.write(f"\nimport {upward}  # noqa: E402,F401\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    probe = subprocess.run([sys.executable, "-c", "import relconsole; print(relconsole.__file__)"], cwd=tmp_path,
                           env=env, capture_output=True, text=True, check=True)
    assert probe.stdout.startswith(str(tmp_path)), probe.stdout  # the copy is what gets linted
    proc = _lint_imports(tmp_path, env)
    assert proc.returncode != 0, proc.stdout
    broken = proc.stdout.split("Broken contracts", 1)[-1]
    assert contract in broken and upward.rsplit(".", 1)[-1] in broken, proc.stdout


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
             "heavy = ['relconsole.engine.gate.replay.replay', 'relconsole.engine.gate.confirm', 'relconsole.engine.gate.actions',\n"
             "         'relconsole.engine.gate.wslease.wslease', 'relconsole.engine.repo.commits', 'relconsole.engine.repo.worktrees', 'sqlite3',\n"
             "         'relconsole.engine.gate.review', 'relconsole.engine.relations.runner', 'git', 'jsonschema', 'textual', 'yaml']\n"
             "print([m for m in heavy if m in sys.modules])\n")
    proc = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "[]", proc.stdout
    # and each command still finds what it imports late
    for command in ("replay", "confirm", "lease", "workspace", "decide", "check-split"):
        helped = subprocess.run([sys.executable, "-m", "relconsole", command, "--help"], cwd=ROOT,
                                capture_output=True, text=True)
        assert helped.returncode == 0 and "usage:" in helped.stdout, (command, helped.stderr[-500:])


def test_every_source_file_the_docs_name_exists():
    """The README's and docs' map of the code (``gate/sheets.py``, ``relconsole/cli/main.py``,
    ...) names files that are there: a module moved or split must take its mentions along."""
    import re
    readme = "\n".join(p.read_text() for p in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))])
    named = set(re.findall(r"`([\w./-]+/[\w.-]+\.py)`", readme))
    assert len(named) >= 15
    bases = (ROOT, ROOT / "relconsole", ROOT / "relconsole" / "engine", ROOT / "relconsole" / "console")
    missing = sorted(n for n in named if not any((base / n).is_file() for base in bases))
    assert not missing, missing
