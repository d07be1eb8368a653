"""Issue 36, newcomer mistakes that were answered silently or wrongly: each now gets one line
that says what to do (the file, and the line where there is one) and the exit code the
mistake calls for.

A small library (``src/tiny``, its function re-exported by the package) with one relation over
plain-string seeds and a patch on branch ``patch``; every test but one runs no relation.
"""

from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path

import pytest
from types import SimpleNamespace

from relconsole.cli.confirm import lines as confirm_lines
from relconsole.cli.main import main
from relconsole.engine.errors import EXIT_BAD_INPUT, EXIT_HOLD, EXIT_PASS, EXIT_REJECT, EXIT_USAGE, did_you_mean
from relconsole.engine.gate.confirm import ConfirmOutcome
from relconsole.engine.gate.confirmstate import CONFIRMED, ConfirmState
from relconsole.engine.oracle.reexports import defined_function
from bench.gitrepo import commit_all, committed_repo, git, reviewed_repo, write_files
from tests.conftest import TODAY

PROJECT = Path(__file__).resolve().parents[1]
CATALOG = """\
owners:
  "src/tiny/**": [tiny.norm_idempotent]
  "tiny/core.py": [tiny.norm_idempotent]
  ".github/**": []
  "oracle/**": []
relations:
  - id: tiny.norm_idempotent
    kind: idempotence
    subject: tiny:norm
    input: {seeds: oracle/seeds/norm.jsonl}
    compare: exact
    statement: Normalising a word twice gives what normalising it once gives.
"""
CORE = "def norm(word):\n    return word.strip().lower()\n"
BASE = {"src/tiny/__init__.py": "from .core import norm\n", "src/tiny/core.py": CORE,
        "oracle/catalog.yaml": CATALOG, "oracle/seeds/norm.jsonl": '" Hello "\n"WORLD"\n"sun"\n'}
DEAD = '  "tiny/core.py": [tiny.norm_idempotent]'  # src/ left out: the newcomer's typo


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    return reviewed_repo(tmp_path / "tiny", BASE, {"src/tiny/core.py": CORE + "# patched\n"})


def cli(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def review_args(repo: Path) -> list[str]:
    return ["--repo", str(repo), "--base", "main", "--today", TODAY.isoformat()]


def line_of(text: str, needle: str) -> int:
    return next(n for n, line in enumerate(text.splitlines(), 1) if needle in line)


# --- a. an owner pattern that matches no file ------------------------------------------------

def test_validate_warns_of_an_owner_pattern_that_matches_no_file_naming_its_line(tiny, capsys):
    code, out, _ = cli(capsys, "validate", "--static", "--json", *review_args(tiny))
    warnings = json.loads(out)["warnings"]
    assert code == EXIT_PASS  # a warning: a pattern may be written before its files
    dead = [w for w in warnings if "matches no file" in w]
    assert len(dead) == 1, warnings  # not the live src/tiny/** nor the exemption .github/**
    assert dead[0].startswith(f"oracle/catalog.yaml:{line_of(CATALOG, DEAD)}: ") and "'tiny/core.py'" in dead[0]
    code, out, _ = cli(capsys, "validate", "--static", *review_args(tiny))
    assert code == EXIT_PASS and sum("warning: " in line and "tiny/core.py" in line for line in out.splitlines()) == 1


# --- b. uncommitted oracle edits -------------------------------------------------------------

def _edit_the_oracle(repo: Path) -> str:
    path = "oracle/seeds/norm.jsonl"
    with (repo / path).open("a") as seeds:
        seeds.write('"moon"\n')
    return path


def test_bind_says_twice_alike_that_an_uncommitted_oracle_edit_is_not_read(tiny, capsys):
    path = _edit_the_oracle(tiny)
    said = []
    for _ in range(2):  # the full load, then the kept facts
        code, _, err = cli(capsys, "bind", *review_args(tiny))
        assert code == EXIT_PASS
        said.append([line for line in err.splitlines() if "not committed" in line])
    assert said[0] == said[1] and len(said[0]) == 1
    assert said[0][0].startswith(f"relconsole: warning: {path}: not committed, so not read: bind reads ")


def test_run_and_validate_give_the_same_warning_and_a_clean_tree_gets_none(tiny, capsys, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(PROJECT), *filter(None, [os.environ.get("PYTHONPATH")])]))
    code, _, err = cli(capsys, "run", *review_args(tiny))
    assert code == EXIT_PASS and "not committed" not in err
    path = _edit_the_oracle(tiny)
    code, _, err = cli(capsys, "run", *review_args(tiny))
    run_said = [line for line in err.splitlines() if "not committed" in line]
    assert code == EXIT_PASS and len(run_said) == 1 and path in run_said[0] and "commit it, then run" in run_said[0]
    code, out, _ = cli(capsys, "validate", "--static", "--json", *review_args(tiny))
    validate_said = [w for w in json.loads(out)["warnings"] if "not committed" in w]
    assert validate_said == [run_said[0].removeprefix("relconsole: warning: ").replace(" run", " validate")]


def test_gate_prints_the_uncommitted_warning_before_its_work(tiny, capsys, tmp_path):
    """gate loads the review as run does and warns through the same function, before any
    relation runs (here a base catalog that does not load stops gate right after it)."""
    git(tiny, "checkout", "-q", "main")
    write_files(tiny, {"oracle/catalog.yaml": "owners: [\n"})
    commit_all(tiny, "catalog: broken")
    git(tiny, "checkout", "-q", "patch")
    _edit_the_oracle(tiny)
    code, _, err = cli(capsys, "gate", *review_args(tiny), "--artifacts", str(tmp_path / "art"), "--no-history",
                       "--lease-url", f"sqlite://{tmp_path / 'leases.sqlite3'}")
    assert code == EXIT_BAD_INPUT
    assert any(line.startswith("relconsole: warning: oracle/seeds/norm.jsonl: not committed") and "then gate" in line
               for line in err.splitlines()), err


# --- c, d. a file for --repo; review outside a repository -------------------------------------

@pytest.mark.parametrize("command", ["bind", "validate", "lease"])
def test_a_file_given_as_the_repository_is_a_usage_error_naming_it(tiny, capsys, command):
    file = tiny / "src" / "tiny" / "core.py"
    words = [command, "status"] if command == "lease" else [command]
    code, out, err = cli(capsys, *words, "--repo", str(file), "--base", "main")
    assert code == EXIT_USAGE and out == ""
    assert err.count("\n") == 1 and str(file) in err and "not a repository" in err


def test_review_outside_a_repository_fails_before_the_console_starts(tmp_path, capsys, monkeypatch):
    import relconsole.cli.demo as demo

    def never_started(**_kwargs):
        raise AssertionError("the console was started")
    monkeypatch.setattr(demo, "_console_module", lambda _name: SimpleNamespace(ReviewApp=never_started))
    monkeypatch.setattr(demo, "_need_terminal", lambda _command: None)  # a user at a terminal
    code, out, err = cli(capsys, "review", "--repo", str(tmp_path))
    assert code == EXIT_USAGE and out == "" and err.count("\n") == 1
    assert str(tmp_path) in err and "not a git repository" in err and "--repo" in err


# --- e. a misspelt id --------------------------------------------------------------------------

def test_a_close_id_is_suggested_and_a_far_one_is_not():
    known = ["tiny.norm_idempotent", "orders.qty_permutation"]
    assert "'tiny.norm_idempotent'" in did_you_mean("tiny.norm_idempotnet", known)
    assert did_you_mean("something.else.entirely", known) == ""
    assert did_you_mean("x", []) == ""


@pytest.mark.parametrize("words,wanted", [
    (["run", "--relation", "tiny.norm_idempotnet"], "tiny.norm_idempotent"),
    (["freeze", "tiny.norm_idempotnet", "--reason", "r"], "tiny.norm_idempotent"),
    (["bite", "tiny.norm_idempotnet"], "tiny.norm_idempotent"),
    (["lease", "renew", "norm-seeds", "--until", "2026-12-01"], None),
])
def test_a_misspelt_relation_or_lease_id_gets_a_suggestion(tiny, capsys, words, wanted):
    code, _, err = cli(capsys, *words, *review_args(tiny))
    assert code == EXIT_USAGE and err.count("\n") == 1
    assert (f"did you mean '{wanted}'?" in err) if wanted else "did you mean" not in err


def test_a_misspelt_candidate_or_lease_id_gets_a_suggestion(demo_repo, capsys):
    args = ["--repo", str(demo_repo), "--today", TODAY.isoformat()]
    for command in ("confirm", "accept", "delete"):
        code, _, err = cli(capsys, command, "penguins.mass_permutaton", *args)
        assert code == EXIT_USAGE and "did you mean 'penguins.mass_permutation'?" in err, (command, err)
    code, _, err = cli(capsys, "lease", "history", "penguin", *args)
    assert code == EXIT_USAGE and "did you mean 'penguins'?" in err


# --- f. a JSON seeds line that is not one JSON value ---------------------------------------

@pytest.mark.parametrize("bad", ["moon", "\"a\" \"b\"", "{\"w\": 1} {\"w\": 2}"])
def test_a_bad_seeds_line_says_json_lines_and_quoting_with_file_and_line(tmp_path, capsys, bad):
    repo = reviewed_repo(tmp_path / "r", BASE | {"oracle/seeds/norm.jsonl": f'"sun"\n{bad}\n'})
    code, _, err = cli(capsys, "validate", "--static", *review_args(repo))
    assert code == EXIT_BAD_INPUT
    said = [line for line in err.splitlines() if "oracle/seeds/norm.jsonl:2" in line]
    assert said and "one JSON value a line (JSON Lines): quote strings" in said[0], err
    assert "Extra data" in said[0] or "Expecting value" in said[0]  # json's own words stay, after the location


# --- g. propose --seeds for plain-value seeds --------------------------------------------------

def _drafter(tmp_path: Path, printed: str) -> str:
    script = tmp_path / "drafter.py"
    script.write_text(f"import sys\nsys.stdin.read()\nsys.stdout.write({printed!r})\n")
    return f"{sys.executable} {script}"


def test_propose_seeds_takes_plain_values_where_the_seeds_are_plain_values(tiny, capsys, tmp_path):
    code, out, _ = cli(capsys, "propose", "--seeds", "tiny.norm_idempotent", "--print-prompt", *review_args(tiny))
    assert code == EXIT_PASS and "one JSON string a line" in out
    drafter = _drafter(tmp_path, '"  Moon "\n{"word": "x"}\n"\\tTAB"\n')
    code, out, _ = cli(capsys, "propose", "--seeds", "tiny.norm_idempotent", "--drafter", drafter, "--json",
                       *review_args(tiny))
    rows = json.loads(out)["rows"]
    assert code == EXIT_REJECT  # the object is refused, the two strings are committed
    assert [r["valid"] for r in rows] == [True, False, True]
    assert "JSON object" in rows[1]["reasons"][0] and "JSON string" in rows[1]["reasons"][0]
    drafted = git(tiny, "show", "main:oracle/quarantine/tiny.norm_idempotent.seeds.jsonl").splitlines()
    assert [json.loads(line) for line in drafted] == ["  Moon ", "\tTAB"]
    code, out, _ = cli(capsys, "validate", "--static", "--json", *review_args(tiny))
    assert code == EXIT_PASS and [r["valid"] for r in json.loads(out)["seed_rows"]] == [True, True]


# --- h. confirm on a candidate that misses on the base ---------------------------------------

def _side(runs: int, misses: int, why: str = "disagree on total") -> dict:
    return {"outcome": "held" if not misses else "missed", "runs": runs, "misses": misses,
            "per_seed": [{"seed": n, "held": n >= misses, "describe": "held" if n >= misses else why}
                         for n in range(runs)]}


def _confirmed(base_misses: int, why: str = "disagree on total") -> ConfirmOutcome:
    record = {"sides": {"head": _side(3, 0), "base": _side(3, base_misses, why)},
              "lease": {"generation": 1}, "worktree": "fresh"}
    state = ConfirmState("c.id", "oracle/quarantine/c.yaml", "0" * 64, CONFIRMED, "the replays agree",
                         first=record, second=record)
    return ConfirmOutcome(state, ["first", "second"])


def test_confirm_does_not_say_confirmed_for_a_candidate_that_misses_on_the_base():
    clean = _confirmed(0)
    assert clean.exit_code == EXIT_PASS and confirm_lines(clean)[0].startswith("c.id: confirmed")
    missing = _confirmed(2)
    first = confirm_lines(missing)[0]
    assert missing.exit_code == EXIT_REJECT and missing.to_json()["base_miss"]
    assert "confirmed" not in first.replace("not confirmed", "") and "misses on the base" in first
    assert "fix the candidate" in first
    added = _confirmed(3, "AttributeError: module 'tiny' has no attribute 'norm2'")
    assert added.exit_code == EXIT_HOLD and "merged" in confirm_lines(added)[0]


# --- i. init --subject through a package's re-export -----------------------------------------

def test_init_accepts_a_function_the_package_re_exports(tmp_path, capsys):
    files = {"src/kit/__init__.py": "from .core import tidy as clean\nfrom kit.codec import *\n",
             "src/kit/core.py": "def tidy(rows):\n    return sorted(rows)\n",
             "src/kit/codec.py": "from ._impl import dumps, loads\n",
             "src/kit/_impl.py": "def dumps(rows):\n    return rows\n\n\ndef loads(text):\n    return text\n",
             "data/words.csv": "word\nsun\nmoon\n"}
    repo = committed_repo(tmp_path / "kit", files)
    code, out, err = cli(capsys, "init", "--repo", str(repo), "--corpus", "data/words.csv", "--subject", "kit:clean",
                         "--subject", "kit:dumps", "--today", TODAY.isoformat(), "--json")
    assert code == EXIT_PASS, err
    drafted = sorted(p for p in json.loads(out)["paths"] if p.startswith("oracle/quarantine/"))
    assert drafted == ["oracle/quarantine/kit.clean_order.yaml", "oracle/quarantine/kit.dumps_roundtrip.yaml"]
    roundtrip = git(repo, "show", "HEAD:oracle/quarantine/kit.dumps_roundtrip.yaml")
    assert "inverse: kit:loads" in roundtrip and "subject: kit:dumps" in roundtrip


def test_the_re_export_walk_ends_on_cycles_classes_and_outside_modules():
    texts = {"p/__init__.py": "from .a import f, C\nfrom os.path import join\nfrom . import g\n",
             "p/a.py": "from .b import f\nclass C:\n    pass\n", "p/b.py": "from .a import f\n"}
    found = lambda name: defined_function(set(texts), texts.get, "p", name)  # noqa: E731
    assert found("f") is None  # a.py and b.py import it from each other
    assert found("C") is None and found("join") is None and found("g") is None
    texts["p/b.py"] = textwrap.dedent("""\
        async def f(rows):
            return rows
        """)
    path, _tree, node = found("f")
    assert path == "p/b.py" and node.name == "f"


@pytest.mark.parametrize("decision", ["pass", "reject", "hold", "abort", "freeze"])
@pytest.mark.parametrize("code", [0, 1, 2, 3, 4, 5])
def test_a_pass_beside_a_coverage_gap_says_why_the_exit_code_is_2(decision, code):
    """``decision: pass (held)`` beside exit 2 read as a contradiction (new-user trial): the
    line names the gap exactly when the exit code is a gap's over a passing decision."""
    from relconsole.cli.reviewio import decision_line
    from relconsole.engine.errors import EXIT_GAP
    line = decision_line(decision, "held", code)
    assert line.startswith(f"decision: {decision}")
    assert ("coverage gap" in line) == (code == EXIT_GAP and decision == "pass")
