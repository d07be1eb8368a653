"""A miss is the patch's only when the base holds: faults of the oracle and of the machine are
aborts for the catalog keeper, never a reject of an honest patch, and never a pass.

Each case is a small real repository (``main`` with the oracle, branch ``patch`` with an honest
or a broken change) judged by ``relconsole run`` and ``gate`` as a CI job would call them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from bench.gitrepo import git, reviewed_repo, write_files
from conftest import TODAY
from relconsole.engine.decision import decide
from relconsole.engine.errors import EXIT_ABORT, EXIT_BAD_INPUT, EXIT_HOLD, EXIT_PASS, EXIT_REJECT, BadInputError
from relconsole.engine.repo.config import layout_from_pyproject
from relconsole.engine.repo.workspace import write_generated

ROOT = Path(__file__).resolve().parents[1]

SQUASH = 'def squash(text):\n    """Collapse runs of whitespace."""\n    return " ".join(text.split())\n'
SEEDS = '"a  b"\n"  x y   z "\n"plain"\n'


def catalog(subject: str = "textlib:squash", kind: str = "idempotence", extra: str = "",
            owners: dict | None = None, freeze: str = "") -> str:
    """One relation ``text.squash`` over the seeds file, owning ``owners`` (pattern -> YAML list;
    default textlib.py and scmlib/**), with a ``freeze:`` policy when given."""
    owners = owners or {"textlib.py": "[text.squash]", "scmlib/**": "[text.squash]"}
    mapped = "".join(f'  "{pattern}": {relations}\n' for pattern, relations in owners.items())
    policy = f"    freeze: {freeze}\n" if freeze else ""
    return "owners:\n" + mapped + textwrap.dedent(f"""\
        relations:
          # the keeper's note: one relation over hand-written seeds
          - id: text.squash
            kind: {kind}
            subject: {subject}
            input: {{seeds: oracle/seeds/texts.jsonl}}
            compare: exact
            statement: Squashing a text twice gives what squashing it once gives.
        """) + policy + extra


def repo_with(tmp_path: Path, base: dict, patch: dict) -> Path:
    files = {"oracle/catalog.yaml": catalog(), "oracle/seeds/texts.jsonl": SEEDS, "textlib.py": SQUASH}
    return reviewed_repo(tmp_path / "repo", files | base, patch)


def cli(repo: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PYTEST_", "RELCONSOLE_"))}
    env |= {"PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1", "RELCONSOLE_TODAY": TODAY.isoformat()}
    proc = subprocess.run([sys.executable, "-m", "relconsole", *args], cwd=repo, env=env, capture_output=True,
                          text=True, timeout=600, check=False)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def run_json(repo: Path) -> tuple[int, dict]:
    proc = cli(repo, "run", "--base", "main", "--json")
    return proc.returncode, json.loads(proc.stdout)


def gate_json(repo: Path, tmp_path: Path) -> tuple[int, dict]:
    proc = cli(repo, "gate", "--base", "main", "--runs", "2", "--artifacts", str(tmp_path / "artifacts"),
               "--json", "--no-history")
    return proc.returncode, json.loads(proc.stdout)


def relation(payload: dict, rid: str = "text.squash") -> dict:
    return next(r for r in payload["relations"] if r["relation_id"] == rid)


def catalog_line(repo: Path, rid: str = "text.squash") -> int:
    text = git(repo, "show", "main:oracle/catalog.yaml")
    return next(n for n, line in enumerate(text.splitlines(), 1) if f"id: {rid}" in line)


# --- the oracle's faults -------------------------------------------------------------------

def test_a_seed_row_the_base_misses_is_the_catalog_keepers_fault_on_every_front_end(tmp_path):
    """A one-pass squash halves a run of four spaces: not idempotent there, on the base as on the
    patch, which only adds a comment."""
    one_pass = 'def squash(text):\n    return text.replace("  ", " ")\n'
    repo = repo_with(tmp_path, {"textlib.py": one_pass, "oracle/seeds/texts.jsonl": '"a  b"\n"a    b"\n'},
                     {"textlib.py": one_pass + "\n# an honest comment\n"})
    code, payload = run_json(repo)
    gated, decided = gate_json(repo, tmp_path)
    where = f"oracle/catalog.yaml:{catalog_line(repo)}"
    for exit_code, verdict in ((code, relation(payload)), (gated, relation(decided))):
        assert (exit_code, verdict["decision"], verdict["reason"]) == (EXIT_ABORT, "abort", "oracle_fault"), verdict
    assert where in relation(payload)["summary"] and where in relation(decided)["detail"]
    assert decided["decision"] == "abort" and decided["exit_code"] == EXIT_ABORT


def test_a_misspelt_subject_is_never_the_patchs_miss(tmp_path):
    repo = repo_with(tmp_path, {"oracle/catalog.yaml": catalog("textlib:sqaush")},
                     {"textlib.py": SQUASH + "\n# an honest comment\n"})
    code, payload = run_json(repo)
    gated, decided = gate_json(repo, tmp_path)
    assert code in (EXIT_ABORT, EXIT_BAD_INPUT) and gated in (EXIT_ABORT, EXIT_BAD_INPUT), (payload, decided)
    for said in (payload, decided):
        named = [(e["path"], e["line"]) for e in said.get("errors") or []]
        named += [("oracle/catalog.yaml", catalog_line(repo))] if f"oracle/catalog.yaml:{catalog_line(repo)}" in \
            json.dumps(said.get("relations")) else []
        assert ("oracle/catalog.yaml", catalog_line(repo)) in named, said


def test_a_real_miss_is_rejected_and_says_the_base_held_on_the_same_inputs(tmp_path):
    broken = 'def squash(text):\n    return "-" + " ".join(text.split())\n'  # each call adds a dash
    repo = repo_with(tmp_path, {}, {"textlib.py": broken})
    code, payload = run_json(repo)
    assert (code, relation(payload)["decision"], relation(payload)["reason"]) == (EXIT_REJECT, "reject", "property_fail")
    base_run = relation(payload)["base_run"]
    assert base_run["held"] and base_run["seed"] == relation(payload)["first_run"]["seed"]
    gated, decided = gate_json(repo, tmp_path)
    assert (gated, decided["decision"]) == (EXIT_REJECT, "reject")


def test_a_vacuous_relation_holds_on_every_front_end(tmp_path):
    """A roundtrip whose f returns its input proves nothing: hold (exit 4) from run and gate alike."""
    files = {"oracle/catalog.yaml": catalog("textlib:same", "roundtrip", "").replace(
        "    compare: exact\n", "    inverse: textlib:same\n    compare: exact\n"),
        "textlib.py": SQUASH + "\n\ndef same(text):\n    return text\n"}
    repo = repo_with(tmp_path, files, {"textlib.py": files["textlib.py"] + "\n# touched\n"})
    code, payload = run_json(repo)
    gated, decided = gate_json(repo, tmp_path)
    assert (code, gated) == (EXIT_HOLD, EXIT_HOLD), (payload, decided)
    assert relation(payload)["reason"] == relation(decided)["reason"] == "vacuous_output"
    assert not list((tmp_path / "artifacts").glob("*.sheet.json"))  # nothing to replay: it proved nothing


# --- the machine's faults ------------------------------------------------------------------

SCM_INIT = "from ._version import version as __version__\nfrom .text import squash\n"


def scm_repo(tmp_path: Path, pyproject: str = "") -> Path:
    """A package whose __init__ imports the version file setuptools_scm writes (git-ignored)."""
    files = {"scmlib/__init__.py": SCM_INIT, "scmlib/text.py": SQUASH, ".gitignore": "scmlib/_version.py\n",
             "oracle/catalog.yaml": catalog("scmlib:squash"), "oracle/seeds/texts.jsonl": SEEDS,
             "pyproject.toml": "[project]\nname = \"scmlib\"\ndynamic = [\"version\"]\n" + pyproject}
    repo = reviewed_repo(tmp_path / "scm", files, {"scmlib/text.py": SQUASH + "\n# touched\n"})
    (repo / "scmlib" / "_version.py").write_text('version = "1.2.3"\n')  # in the work tree only, as a build leaves it
    return repo


def test_a_module_neither_side_has_is_an_environment_abort_that_names_it_and_the_setting(tmp_path):
    repo = scm_repo(tmp_path)
    code, payload = run_json(repo)
    verdict = relation(payload)
    assert (code, verdict["decision"], verdict["reason"]) == (EXIT_ABORT, "abort", "environment"), verdict
    assert "scmlib._version" in verdict["summary"] and "[tool.relconsole] generated" in verdict["summary"]
    gated, decided = gate_json(repo, tmp_path)
    assert (gated, decided["reason"]) == (EXIT_ABORT, "environment")
    assert not list((tmp_path / "artifacts").glob("*.sheet.json"))  # an ImportError is not replayed ten times


def test_a_generated_module_declared_on_the_base_is_written_into_every_run_tree(tmp_path):
    repo = scm_repo(tmp_path, '\n[tool.relconsole]\ngenerated = { "scmlib/_version.py" = "version = \\"0.0.0\\"\\n" }\n')
    code, payload = run_json(repo)
    assert (code, relation(payload)["decision"]) == (EXIT_PASS, "pass"), payload
    gated, decided = gate_json(repo, tmp_path)
    assert (gated, decided["decision"]) == (EXIT_PASS, "pass")


def test_a_module_the_patch_removes_is_the_patchs_miss(tmp_path):
    """The base imports scmlib.text; the patch deletes it: not an environment fault."""
    repo = scm_repo(tmp_path, '\n[tool.relconsole]\ngenerated = { "scmlib/_version.py" = "version = \\"0.0.0\\"\\n" }\n')
    git(repo, "rm", "-q", "scmlib/text.py")
    git(repo, "commit", "-qm", "remove text")
    code, payload = run_json(repo)
    assert (code, relation(payload)["decision"]) == (EXIT_REJECT, "reject"), payload


def test_a_package_no_side_has_installed_is_an_environment_abort(tmp_path):
    repo = repo_with(tmp_path, {"textlib.py": "import not_installed_anywhere_xyz\n" + SQUASH}, {"textlib.py": (
        "import not_installed_anywhere_xyz\n" + SQUASH + "\n# touched\n")})
    code, payload = run_json(repo)
    assert (code, relation(payload)["reason"]) == (EXIT_ABORT, "environment")
    assert "not_installed_anywhere_xyz" in relation(payload)["summary"]


# --- generated stubs -------------------------------------------------------------------------

@pytest.mark.parametrize("path", ["../x.py", "/abs.py", "a/./b.py", "a//b.py", "a\\b.py", "..", "", "oracle/x.py"])
def test_a_generated_path_outside_the_tree_or_in_the_oracle_is_a_bad_input(path):
    with pytest.raises(BadInputError, match="generated"):
        layout_from_pyproject(f'[tool.relconsole]\ngenerated = {{{json.dumps(path)} = "x = 1\\n"}}\n')


def test_a_committed_file_wins_over_its_stub_and_no_stub_is_written_through_a_link(tmp_path):
    tree, elsewhere = tmp_path / "tree", tmp_path / "elsewhere"
    write_files(tree, {"pkg/_version.py": "committed = True\n"})
    elsewhere.mkdir()
    (tree / "linked").symlink_to(elsewhere, target_is_directory=True)
    stubs = {"pkg/_version.py": "stub = True\n", "linked/_version.py": "x = 1\n", "new/_version.py": "v = 2\n"}
    assert write_generated(tree, stubs) == ["new/_version.py"]
    assert (tree / "pkg/_version.py").read_text() == "committed = True\n"
    assert not list(elsewhere.iterdir())
    assert (tree / "new/_version.py").read_text() == stubs["new/_version.py"]


# --- the decision table ----------------------------------------------------------------------

def _sheet(head: tuple[int, int], base: tuple[int, int], same: bool = True) -> dict:
    return {"test_id": "r", "property_result": "fail" if head[0] == head[1] else "pass",
            "fixture_pin": {"state": "match"}, "lease": {"id": "l", "state": "fresh"},
            "signature": "s1", "base_signature": "s1" if same else ("none" if base[0] == 0 else "s2"),
            "runs": {"head": {"misses": head[0], "runs": head[1]}, "base": {"misses": base[0], "runs": base[1]}},
            "catalog": "oracle/catalog.yaml", "catalog_line": 7, "expires_at": "2026-12-30"}


@pytest.mark.parametrize("same", [True, False])
def test_a_sheet_whose_base_missed_every_run_is_an_oracle_fault_before_row_3(same):
    decision = decide(_sheet((5, 5), (5, 5), same))
    assert (decision.decision, decision.reason, decision.row) == ("abort", "oracle_fault", None)
    assert "oracle/catalog.yaml:7" in decision.detail


def test_a_base_that_held_once_leaves_the_table_as_it_was():
    assert decide(_sheet((5, 5), (4, 5))).row == 3
    assert decide(_sheet((5, 5), (0, 5), same=False)).row == 3
    assert decide(_sheet((2, 5), (2, 5))).row == 8


def test_an_environment_sheet_is_an_environment_abort_not_missing_fields():
    sheet = dict(_sheet((5, 5), (5, 5)), signature=None, environment="no module named x")
    decision = decide(sheet)
    assert (decision.decision, decision.reason) == ("abort", "environment") and "x" in decision.detail


def test_sarif_points_an_oracle_fault_at_the_catalog_line_and_the_summary_names_a_missing_module(tmp_path):
    one_pass = 'def squash(text):\n    return text.replace("  ", " ")\n'
    faulty = repo_with(tmp_path / "fault", {"textlib.py": one_pass, "oracle/seeds/texts.jsonl": '"a    b"\n'},
                       {"textlib.py": one_pass + "\n# an honest comment\n"})
    cli(faulty, "gate", "--base", "main", "--runs", "2", "--artifacts", str(tmp_path / "a1"), "--no-history",
        "--sarif", str(tmp_path / "fault.sarif"))
    results = json.loads((tmp_path / "fault.sarif").read_text())["runs"][0]["results"]
    fault = next(r for r in results if r["ruleId"] == "oracle_fault")
    where = fault["locations"][0]["physicalLocation"]
    assert where["artifactLocation"]["uri"] == "oracle/catalog.yaml"
    assert where["region"]["startLine"] == catalog_line(faulty)
    missing = scm_repo(tmp_path / "scm")
    cli(missing, "gate", "--base", "main", "--runs", "2", "--artifacts", str(tmp_path / "a2"), "--no-history",
        "--summary", str(tmp_path / "summary.md"))
    summary = (tmp_path / "summary.md").read_text().replace("\\", "")  # Markdown escapes . and _
    assert "environment" in summary and "scmlib._version" in summary


def test_a_miss_by_exception_names_the_seed_row_and_its_value(tmp_path):
    """New-user trial: a parse that raised on one seed said only the exception, not which seed."""
    raising = SQUASH.replace('    return " ".join(text.split())', '    if " " not in text:\n'
                             '        raise ValueError("no space")\n    return " ".join(text.split())')
    repo = repo_with(tmp_path, {}, {"textlib.py": raising})
    code, payload = run_json(repo)
    row = SEEDS.splitlines().index('"plain"') + 1
    assert code == EXIT_REJECT and f'seed row {row} "plain"' in relation(payload)["summary"], payload


def test_a_miss_prints_the_two_outputs_a_reviewer_checks(tmp_path):
    """New-user trial: the evidence of a miss is in the log, not only in the JSON; the gate's log
    names the replay sheet it wrote."""
    broken = 'def squash(text):\n    return "-" + " ".join(text.split())\n'
    repo = repo_with(tmp_path, {}, {"textlib.py": broken})
    _, payload = run_json(repo)
    first = relation(payload)["first_run"]
    text = cli(repo, "run", "--base", "main").stdout
    [shown] = [line for line in text.splitlines() if line.strip().startswith("outputs:")]
    assert json.dumps(first["source"]) in shown and json.dumps(first["followup"]) in shown
    gated = cli(repo, "gate", "--base", "main", "--runs", "2", "--artifacts", str(tmp_path / "art"), "--no-history")
    outputs = [line for line in gated.stdout.splitlines() if line.strip().startswith("outputs: source")]
    sheets = [line.split("replay sheet: ", 1)[1] for line in gated.stdout.splitlines() if "replay sheet: " in line]
    assert outputs and sheets and all(Path(s).is_file() for s in sheets), gated.stdout
