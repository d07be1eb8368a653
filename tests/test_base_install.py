"""The base install (no extras) is the command line and the pre-commit hook: textual and rich are
the extra ``console`` (issue 17: the hook's environment pulled 54 MB of UI for a git check).

Every command here runs in a subprocess where textual and rich cannot be imported: a
``sitecustomize`` on PYTHONPATH puts a blocker first on ``sys.meta_path`` (in every Python
process the command starts) that refuses them and logs each attempt, so a command that
imported the UI and caught the error would still be seen.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import TODAY

ROOT = Path(__file__).resolve().parents[1]
BLOCKED = ("textual", "rich")
CONSOLE_HINT = "pip install 'relconsole[console]'"

BLOCKER = '''
import os, sys

class _NoUI:
    """Refuse textual and rich (tests/test_base_install.py)."""
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in {BLOCKED!r}:
            with open(os.environ["RELCONSOLE_TEST_UI_LOG"], "a") as log:
                log.write(name + "\\n")
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None

sys.meta_path.insert(0, _NoUI())
'''.format(BLOCKED=set(BLOCKED))


@pytest.fixture
def no_ui(tmp_path):
    """A function running ``python -m relconsole ARGS`` with textual and rich unimportable;
    returns (process, the modules it tried to import from them)."""
    site = tmp_path / "no-ui"
    site.mkdir()
    (site / "sitecustomize.py").write_text(BLOCKER)
    log = tmp_path / "ui-imports.log"

    def relconsole(*args: str, cwd: Path) -> tuple[subprocess.CompletedProcess, list[str]]:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)]),
               "RELCONSOLE_TEST_UI_LOG": str(log)}
        log.write_text("")
        proc = subprocess.run([sys.executable, "-m", "relconsole", *args], cwd=cwd, capture_output=True,
                              text=True, env=env, timeout=600)
        return proc, log.read_text().split()
    return relconsole


def test_the_blocker_blocks(no_ui, tmp_path):
    """The probe itself: ``review`` needs textual, so it must be refused and logged."""
    proc, tried = no_ui("review", "--repo", str(tmp_path), cwd=tmp_path)
    assert tried and all(name.partition(".")[0] in BLOCKED for name in tried)
    assert proc.returncode == 64


def test_command_line_commands_import_no_ui(no_ui, demo_repo, tmp_path):
    """check-split, bind, flags, run, replay and decide on the sample: their usual exit codes,
    no traceback, and not one attempt to import textual or rich."""
    today = ["--today", TODAY.isoformat()]
    sheets = tmp_path / "sheets"
    commands = [
        (["check-split", "main..agent/patch", "--repo", str(demo_repo)], None),
        (["check-split", "--staged", "--repo", str(demo_repo)], 0),
        (["bind", "--repo", str(demo_repo), "--base", "main", "--head", "agent/patch", *today, "--json"], None),
        (["flags", "--repo", str(demo_repo), "--base", "main", *today, "--json"], None),
        (["run", "--repo", str(demo_repo), *today, "--json"], None),
        (["replay", "--repo", str(demo_repo), *today, "--runs", "1", "--artifacts", str(sheets)], None),
        (["decide", "--sheet", str(sheets), "--no-history", "--json"], None),
    ]
    for args, expected in commands:
        proc, tried = no_ui(*args, cwd=demo_repo)
        assert tried == [], (args[0], tried)
        assert "Traceback" not in proc.stderr, (args[0], proc.stderr[-2000:])
        assert proc.returncode in ({expected} if expected is not None else {0, 1, 2, 4}), (args, proc.stderr[-2000:])
        if "--json" in args:
            assert isinstance(json.loads(proc.stdout), dict)
    assert list(sheets.glob("*.sheet.json"))  # replay wrote what decide read


@pytest.mark.parametrize("command", [["review"], ["demo"], ["screenshots", "--out", "shots"]])
def test_console_commands_say_what_to_install(no_ui, demo_repo, tmp_path, command):
    """One line naming the extra, exit 64 (§8 usage), nothing written: no demo directory,
    no screenshots folder."""
    if command == ["review"]:
        command = ["review", "--repo", str(demo_repo)]
    if command == ["demo"]:
        command = ["demo", "--into", str(tmp_path / "opened")]
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    proc, _tried = no_ui(*command, cwd=cwd)
    assert proc.returncode == 64, proc.stderr
    assert proc.stderr.count("\n") == 1 and CONSOLE_HINT in proc.stderr, proc.stderr
    assert proc.stdout == "" and not (tmp_path / "opened").exists() and list(cwd.iterdir()) == []


def test_the_pre_commit_hook_runs_the_light_entry():
    """The hook pre-commit installs without extras runs check-split on what pre-commit gives it
    (the commit being made, a ref range, or the branch: tests/test_split_hook.py)."""
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    (short,) = [h for h in hooks if h["id"] == "relconsole-split"]
    assert short["entry"].split() == ["relconsole", "check-split", "--hook"]
    assert short["language"] == "python" and short["pass_filenames"] is False and short["always_run"] is True
    assert "additional_dependencies" not in short
    assert all(h["entry"] == short["entry"] for h in hooks)  # the former id runs the same
