"""One decision whatever the front end and whatever ran before (issue 34).

A matrix of small real repositories (an honest patch, a real miss, an oracle fault, a vacuous
relation, a failed counted freeze, a review flag (an answer that moved), a coverage gap, a changed line no relation
runs, ownership through an import)
goes through every front end: ``run``, ``gate``, ``flags --run``, ``pytest --relconsole`` and
the console (the Pilot). Each front end gets a fresh clone with no record under its git
directory (the import record, caches), and the console runs once more in a clone where ``run``
already left its records: every one must give the decision and exit code the gate gives.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.gitrepo import git, reviewed_repo
from conftest import TODAY
from test_base_decides import SQUASH, catalog as one_catalog
from test_gate import console_decision

ROOT = Path(__file__).resolve().parents[1]
EXIT_OF = {"pass": 0, "freeze": 0, "reject": 1, "abort": 3, "hold": 4}

ONE_PASS = 'def squash(text):\n    return text.replace("  ", " ")\n'  # not idempotent on four spaces
DASHED = 'def squash(text):\n    return "-" + " ".join(text.split())\n'  # each call adds a dash
SEEDS = '"a  b"\n"a    b"\n"plain"\n'
GOLDEN = "from textlib import squash\n\n\ndef test_squash():\n    assert squash('a  b') == 'a b'\n"


def catalog(kind: str = "idempotence", subject: str = "textlib:squash") -> str:
    return one_catalog(subject, kind, owners={"textlib.py": "[text.squash]", "helpers/**": "[]", "tests/**": "[]"},
                       freeze="{allowed: true, max_days: 14, min_reruns: 3}")


FREEZE = json.dumps([{"relation_id": "text.squash", "expires": "2026-12-10", "reruns": 3, "pass_needed": 1,
                      "reason": "flaky on CI, tracked in TEXT-4"}])
BASE = {"oracle/catalog.yaml": catalog(), "oracle/seeds/texts.jsonl": SEEDS, "textlib.py": SQUASH,
        "oracle/freezes.json": "[]\n", "oracle/pins.json": "{}\n", "tests/__init__.py": ""}
UNUSED = "\n\ndef seconds(minutes):\n    return minutes * 60\n"
IMPORTING = "from helpers.words import join_words\n\n\ndef squash(text):\n    return join_words(text.split())\n"

# case -> (base files over BASE, patch files, the decision the gate must give)
CASES = {
    "honest": ({}, {"textlib.py": SQUASH + "\n# an honest comment\n"}, "pass"),
    "real-miss": ({}, {"textlib.py": DASHED}, "reject"),
    "oracle-fault": ({"textlib.py": ONE_PASS}, {"textlib.py": ONE_PASS + "\n# an honest comment\n"}, "abort"),
    "vacuous": ({"oracle/catalog.yaml": catalog("roundtrip", "textlib:same").replace(
        "    compare: exact\n", "    inverse: textlib:same\n    compare: exact\n"),
        "textlib.py": SQUASH + "\n\ndef same(text):\n    return text\n"},
        {"textlib.py": SQUASH + "\n\ndef same(text):\n    return text\n\n# touched\n"}, "hold"),
    "failed-freeze": ({"oracle/freezes.json": FREEZE}, {"textlib.py": DASHED}, "reject"),
    # an expected answer edited together with the code it checks, on a base that blocks it
    "flag": ({"tests/test_golden.py": GOLDEN, "pyproject.toml": '[tool.relconsole]\nflags = { golden_literal = "block" }\n'},
             {"tests/test_golden.py": GOLDEN.replace("== 'a b'", "== 'a  b'"), "textlib.py": SQUASH + "\n# touched\n"},
             "reject"),
    "gap": ({}, {"tools/helper.py": "def helper():\n    return 1\n"}, "pass"),
    # a changed line no relation runs: covered only by an import (issue 35), a gap
    "unexercised": ({"textlib.py": SQUASH + UNUSED}, {"textlib.py": SQUASH + UNUSED.replace("* 60", "* 1")}, "pass"),
    "via-import": ({"textlib.py": IMPORTING, "helpers/__init__.py": "",
                    "helpers/words.py": "def join_words(words):\n    return ' '.join(words)\n"},
                   {"helpers/words.py": "def join_words(words):\n    return '-' + ' '.join(words)\n"}, "reject"),
}


def _env() -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PYTEST_", "RELCONSOLE_"))}
    return env | {"PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1", "RELCONSOLE_TODAY": TODAY.isoformat()}


def call(repo: Path, *argv: str) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, *argv], cwd=repo, env=_env(), capture_output=True, text=True,
                          timeout=600, check=False)
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    return proc


def fresh_clone(repo: Path, dest: Path) -> Path:
    """A clone of ``repo`` as a CI job or a new reviewer has it: branch ``patch`` checked out, a
    local ``main``, and nothing of relconsole's under its git directory."""
    git(repo.parent, "clone", "-q", "--no-single-branch", "--branch", "patch", repo.as_uri(), str(dest))
    git(dest, "branch", "-q", "main", "origin/main")
    for key, value in (("user.name", "reviewer"), ("user.email", "reviewer@example.invalid")):
        git(dest, "config", key, value)
    assert not (dest / ".git" / "relconsole").exists()
    return dest


def from_run(clone: Path) -> tuple[str, int]:
    proc = call(clone, "-m", "relconsole", "run", "--base", "main", "--json")
    return json.loads(proc.stdout)["decision"], proc.returncode


def from_gate(clone: Path) -> tuple[str, int]:
    proc = call(clone, "-m", "relconsole", "gate", "--base", "main", "--runs", "2", "--artifacts",
                str(clone.parent / f"{clone.name}-artifacts"), "--json", "--no-history")
    return json.loads(proc.stdout)["decision"], proc.returncode


def from_flags(clone: Path) -> tuple[str, int]:
    proc = call(clone, "-m", "relconsole", "flags", "--run", "--base", "main", "--json")
    return json.loads(proc.stdout)["decision"]["decision"], proc.returncode


def from_plugin(clone: Path) -> tuple[str, int]:
    results = clone.parent / f"{clone.name}-plugin.json"
    proc = call(clone, "-m", "pytest", "--relconsole", "--relconsole-base", "main", "-p", "no:cacheprovider",
                f"--relconsole-json={results}", "-q", "tests")
    assert results.exists(), proc.stdout[-2000:] + proc.stderr[-2000:]
    return json.loads(results.read_text())["decision"], proc.returncode


async def from_console(clone: Path) -> tuple[str, int]:
    decision, _reason, status, code = await console_decision(clone)
    assert decision.upper() in status
    return decision, code


@pytest.mark.parametrize("case", sorted(CASES))
async def test_every_front_end_gives_the_gates_decision_on_fresh_and_warm_clones(tmp_path, case):
    base, patch, expected = CASES[case]
    repo = reviewed_repo(tmp_path / "origin", BASE | base, patch)
    said = {"gate": from_gate(fresh_clone(repo, tmp_path / "gate"))}
    assert said["gate"][0] == expected, said
    said["run"] = from_run(fresh_clone(repo, tmp_path / "run"))
    said["flags --run"] = from_flags(fresh_clone(repo, tmp_path / "flags"))
    said["console"] = await from_console(fresh_clone(repo, tmp_path / "console"))
    said["console, warm"] = await from_console(tmp_path / "run")  # run left its records there
    plugin_decision, plugin_code = from_plugin(fresh_clone(repo, tmp_path / "plugin"))
    gate_code = said["gate"][1]
    assert all(said_here == said["gate"] for said_here in said.values()), said
    assert plugin_decision == expected and (plugin_code != 0) == (gate_code != 0), (plugin_decision, plugin_code)
    assert gate_code == (EXIT_OF[expected] or (2 if case in ("gap", "unexercised") else 0))
