"""The ecosystem check (``python -m bench.ecosystem``) runs end to end on a small local library.

CI has no network and no fetched upstream repositories, so the test builds its own "upstream":
a tiny library repository (a root commit and three more: one touching only docs, one honest
refactor of the library, one touching only tests), a one-relation oracle over seeds, and one
planted mutant. It checks that the bench finished, printed a row per commit and the totals,
and that the relation caught the mutant; never timings or other figures.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from bench.gitrepo import commit_all, git, init_repo, write_files

PROJECT = Path(__file__).resolve().parents[1]

SQUASH = 'def squash(text):\n    """Collapse runs of whitespace."""\n    return " ".join(text.split())\n'
CATALOG = textwrap.dedent("""\
    owners:
      "tinylib/**": [tiny.squash_idempotent]
      "tests/**": []
      "*.md": []
    relations:
      - id: tiny.squash_idempotent
        kind: idempotence
        subject: tinylib:squash
        input: {seeds: oracle/seeds/texts.jsonl}
        compare: exact
        statement: Squashing a text twice gives what squashing it once gives.
    """)


def upstream(root: Path) -> list[str]:
    """The tiny library's history; returns the shas of the three commits after the root."""
    write_files(root, {"tinylib/__init__.py": "from tinylib.text import squash\n", "tinylib/text.py": SQUASH,
                       "README.md": "# tinylib\n", "tests/test_text.py": "def test_nothing():\n    pass\n"})
    init_repo(root)
    commit_all(root, "tinylib: squash")
    write_files(root, {"README.md": "# tinylib\n\nSquashes whitespace.\n"})
    shas = [commit_all(root, "docs: say what it does")]
    write_files(root, {"tinylib/text.py": SQUASH.replace('" ".join(text.split())', '" ".join(words)').replace(
        "    return", "    words = text.split()\n    return")})
    shas.append(commit_all(root, "refactor: name the words"))
    write_files(root, {"tests/test_text.py": "from tinylib import squash\n\n\ndef test_nothing():\n    pass\n"})
    shas.append(commit_all(root, "test: import the function"))
    return shas


def test_the_ecosystem_bench_replays_a_local_library_and_catches_its_mutant(tmp_path):
    shas = upstream(tmp_path / "upstream")
    oracle = tmp_path / "oracle"
    write_files(oracle, {"catalog.yaml": CATALOG, "seeds/texts.jsonl": '"a  b"\n"  x y   z "\n"a    b"\n'})
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({
        "name": "tinylib", "upstream": str(tmp_path / "upstream" / ".git"), "end": shas[-1], "count": 3,
        "oracle": "oracle",
        "mutants": [{"path": "tinylib/text.py", "old": '    return " ".join(words)',
                     "new": '    return text.replace("  ", " ")', "note": "one pass over double spaces"}]}))
    out = tmp_path / "table.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PYTEST_", "RELCONSOLE_"))}
    env |= {"PYTHONPATH": str(PROJECT), "TMPDIR": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-m", "bench.ecosystem", "--spec", str(spec), "--jobs", "2",
                           "--json", str(out)], cwd=PROJECT, capture_output=True, text=True, timeout=300, env=env,
                          check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = [line for line in proc.stdout.splitlines() if line.startswith("tinylib ")]
    for sha in shas:
        assert any(sha[:10] in line for line in rows), proc.stdout
    assert "totals:" in proc.stdout and "mutants caught 1/1" in proc.stdout, proc.stdout
    table = json.loads(out.read_text())
    prs = [row for row in table["rows"] if row["kind"] == "pr"]
    assert [row["commit"] for row in prs] == shas
    assert all(row["decision"] == "pass" for row in prs), prs  # honest commits: nothing to review
    [mutant] = [row for row in table["rows"] if row["kind"] == "mutant"]
    assert (mutant["decision"], mutant["exit_code"]) == ("reject", 1), mutant
    assert any(r["relation_id"] == "tiny.squash_idempotent" and r["reason"] == "property_fail"
               for r in mutant["relations"]), mutant
    assert git(tmp_path / "upstream", "status", "--porcelain") == ""  # the upstream is only read


def test_the_gate_against_pytest_bench_times_both_on_a_local_library(tmp_path):
    """``python -m bench.gate_vs_pytest`` on the tiny library: it builds the newest code commit as a
    PR, runs the library's own tests and the gate, and prints both and the ratio."""
    shas = upstream(tmp_path / "upstream")
    oracle = tmp_path / "oracle"
    write_files(oracle, {"catalog.yaml": CATALOG, "seeds/texts.jsonl": '"a  b"\n"  x y   z "\n"a    b"\n'})
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"name": "tinylib", "upstream": str(tmp_path / "upstream" / ".git"), "end": shas[-1],
                                "count": 3, "oracle": "oracle", "tests": {"requires": [], "args": []}}))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PYTEST_", "RELCONSOLE_"))}
    env |= {"PYTHONPATH": str(PROJECT), "TMPDIR": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-m", "bench.gate_vs_pytest", "--spec", str(spec), "--repeat", "1"],
                          cwd=PROJECT, capture_output=True, text=True, timeout=300, env=env, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert shas[1][:10] in proc.stdout  # the refactor: the newest commit that changes the library's code
    pytest_line = next(line for line in proc.stdout.splitlines() if "pytest (anchor)" in line)
    gate_line = next(line for line in proc.stdout.splitlines() if line.strip().startswith("gate "))
    assert pytest_line.rstrip().endswith("exit 0") and gate_line.rstrip().endswith("exit 0"), proc.stdout
    assert "gate / pytest" in proc.stdout
