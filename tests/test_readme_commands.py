"""The README's two commands are what CI runs, and the test command keeps the machine shared.

``.ci/run`` must call the README test command verbatim (CI proves the README true), the
parallel part must leave out the ``serial`` group that the second part runs alone, and the
``shared`` group (``../shared/data``) stays out of both.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]


def _fenced_commands(text: str) -> list[str]:
    return [block.strip() for block in re.findall(r"```sh\n(.*?)```", text, re.S)]


def _test_command() -> str:
    commands = [c for c in _fenced_commands((PROJECT / "README.md").read_text()) if "pytest" in c]
    assert commands, "the README has no test command"
    return commands[0]


def test_ci_runs_the_readme_test_command_verbatim():
    ci = (PROJECT / ".ci" / "run").read_text().splitlines()
    assert _test_command() in ci


def test_the_parallel_part_leaves_the_serial_group_to_a_run_of_its_own():
    runs = [shlex.split(part) for part in _test_command().split("&&") if "pytest" in part]
    parallel = [r for r in runs if "-n" in r]
    alone = [r for r in runs if "-n" not in r]
    assert parallel and alone, runs
    assert "not serial" in _selection(parallel[0]) and "not shared" in _selection(parallel[0])
    assert _selection(alone[0]) == "serial"


def _selection(argv: list[str]) -> str:
    """The marker expression pytest applies: the last ``-m`` after ``pytest`` (``python -m
    pytest`` names the module with the first)."""
    after = argv[argv.index("pytest") + 1:]
    return [after[i + 1] for i, arg in enumerate(after) if arg == "-m"][-1]


def test_the_serial_marker_is_declared_and_used():
    pyproject = (PROJECT / "pyproject.toml").read_text()
    assert re.search(r'^\s*"serial:', pyproject, re.M)
    marked = [p for p in (PROJECT / "tests").glob("test_*.py") if "@pytest.mark.serial" in p.read_text()]
    assert marked, "a serial group nobody uses would hide a test that should share the machine"
