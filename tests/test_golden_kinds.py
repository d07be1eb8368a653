"""golden_literal's two kinds (issue 35): an expected answer edited together with the code it
checks (``golden_literal.moved``) and a new literal assertion on code a relation owns
(``golden_literal.added``). Both warn by default (measured on upstream history,
bench/ecosystem.py: honest fixes do both); a base that sets ``golden_literal = "block"`` blocks both."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.gitrepo import git
from relconsole.engine.gate.flags.flaglevels import flag_kind
from relconsole.engine.gate.review import load_review
from tests.conftest import TODAY
from tests.test_check_split import commit
from tests.test_patch_flags import AGG, based

TEST = ("from agg import summarize\n\n\ndef test_total():\n"
        "    rows = [{'day': 'd', 'temp': '3'}]\n    assert summarize(rows)[0][1] == 3\n")
FIXED = AGG.replace("int(row[\"temp\"])", "int(row[\"temp\"]) + 1")


def _review(root: Path):
    with load_review(root, "main", today=TODAY) as review:
        goldens = [f for f in review.flags if f.name == "golden_literal"]
        return [(flag_kind(f), review.flag_level(f), f) for f in goldens], review.decision()


@pytest.fixture
def tested(tmp_path: Path) -> Path:
    """The days project with a golden test of summarize on main, and a patch branch."""
    root = based(tmp_path / "golden repo", {"tests/test_agg.py": TEST})
    git(root, "checkout", "-q", "-b", "patch")
    return root


def test_an_answer_edited_with_the_code_it_checks_is_moved_and_warns(tested: Path):
    commit(tested, "fix totals", {"src/agg.py": FIXED, "tests/test_agg.py": TEST.replace("== 3", "== 4")})
    found, decision = _review(tested)
    assert [(kind, level) for kind, level, _ in found] == [("golden_literal.moved", "warn")]
    flag = found[0][2]
    line = git(tested, "show", f"HEAD:{flag.path}").splitlines()[flag.line - 1]
    assert "== 4" in line and "3" in flag.detail and "4" in flag.detail
    assert decision.reason != "review_flag:golden_literal"


@pytest.mark.parametrize("setting", ['golden_literal = "block"', '"golden_literal.moved" = "block"'])
def test_a_base_that_blocks_moved_answers_rejects_one(tmp_path: Path, setting: str):
    root = based(tmp_path / "strict moved", {"tests/test_agg.py": TEST,
                                             "pyproject.toml": f"[tool.relconsole]\nflags = {{ {setting} }}\n"})
    git(root, "checkout", "-q", "-b", "patch")
    commit(root, "fix totals", {"src/agg.py": FIXED, "tests/test_agg.py": TEST.replace("== 3", "== 4")})
    found, decision = _review(root)
    assert [(kind, level) for kind, level, _ in found] == [("golden_literal.moved", "block")]
    assert decision.decision == "reject" and decision.reason == "review_flag:golden_literal"


def test_the_answer_moved_in_a_renamed_test_function_still_moved(tested: Path):
    """A hostile patch renames the test as it edits the answer: the question is the same."""
    commit(tested, "fix totals", {"src/agg.py": FIXED,
                                  "tests/test_agg.py": TEST.replace("== 3", "== 4").replace("test_total", "test_sum")})
    assert [kind for kind, _, _ in _review(tested)[0]] == ["golden_literal.moved"]


def test_an_answer_edited_without_a_code_change_is_a_new_assertion(tested: Path):
    commit(tested, "retune", {"tests/test_agg.py": TEST.replace("== 3", "== 4")})
    assert [(kind, level) for kind, level, _ in _review(tested)[0]] == [("golden_literal.added", "warn")]


def test_a_regression_test_beside_a_fix_warns_and_does_not_reject(tested: Path):
    """An honest bug fix with a new test of it: shown, never the reason for a reject."""
    new_test = TEST.replace("test_total", "test_two_days").replace(
        "[{'day': 'd', 'temp': '3'}]", "[{'day': 'd', 'temp': '3'}, {'day': 'e', 'temp': '1'}]").replace(
        "[0][1] == 3", "[1][1] == 1")
    commit(tested, "fix and test", {"src/agg.py": AGG + "\n", "tests/test_agg.py": TEST + "\n\n" + new_test})
    found, decision = _review(tested)
    assert [(kind, level) for kind, level, _ in found] == [("golden_literal.added", "warn")]
    assert decision.reason != "review_flag:golden_literal"


def test_the_base_can_block_new_assertions_too(tmp_path: Path):
    strict = '[tool.relconsole]\nflags = { "golden_literal.added" = "block" }\n'
    root = based(tmp_path / "strict", {"pyproject.toml": strict})
    git(root, "checkout", "-q", "-b", "patch")
    commit(root, "a new golden", {"tests/test_agg.py": TEST})
    found, decision = _review(root)
    assert [(kind, level) for kind, level, _ in found] == [("golden_literal.added", "block")]
    assert decision.decision == "reject"


def test_kind_is_read_from_the_rules_words_not_the_patchs(tested: Path):
    """A test whose asserted expression spells the moved kind's words is still a new assertion."""
    sneaky = TEST.replace("summarize(rows)[0][1] == 3",
                          "summarize(rows)[0][1] == 3  # moves the expected answer of").replace(
        "def test_total", "def test_moves_the_expected_answer_of")
    commit(tested, "sneaky", {"tests/test_agg.py": sneaky + "\n\ndef test_b():\n    assert summarize([]) == [('x', 1)]\n"})
    assert {kind for kind, _, _ in _review(tested)[0]} == {"golden_literal.added"}


# --- a second red team: answers held in names, rows of a table, renamed results ---------------

CONSTANT = ("from agg import summarize\n\nEXPECTED = {}\n\n\ndef test_total():\n"
            "    assert summarize([{{'day': 'd', 'temp': '3'}}])[0][1] == EXPECTED\n")
RENAMED = ("from agg import summarize\n\n\ndef test_total():\n    {0} = summarize([{{'day': 'd', 'temp': '3'}}])\n"
           "    assert {0}[0][1] == {1}\n")
ROWS = ("import pytest\nfrom agg import summarize\n\n\n@pytest.mark.parametrize('temp, want', [('3', {}), ('5', 5)])\n"
        "def test_total(temp, want):\n    assert summarize([{{'day': 'd', 'temp': temp}}])[0][1] == want\n")
ALIASED = ("from src import agg as a\n\n\ndef test_total():\n"
           "    assert a.summarize([{{'day': 'd', 'temp': '3'}}])[0][1] == {}\n")


@pytest.mark.parametrize("before, after", [
    (CONSTANT.format(3), CONSTANT.format(4)),  # the answer in a constant of the module
    (RENAMED.format("r", 3), RENAMED.format("out", 4)),  # the result's variable renamed as the answer moves
    (ROWS.format(3), ROWS.format(4)),  # a parametrize row
    (ALIASED.format(3), ALIASED.format(4)),  # the module imported as a name of its package
], ids=["constant", "renamed-result", "parametrize-row", "submodule-alias"])
def test_an_answer_moved_in_any_spelling_is_moved(tmp_path: Path, before, after):
    root = based(tmp_path / "spelled", {"tests/test_agg.py": before})
    git(root, "checkout", "-q", "-b", "patch")
    commit(root, "fix totals", {"src/agg.py": FIXED, "tests/test_agg.py": after})
    assert [kind for kind, _, _ in _review(root)[0]] == ["golden_literal.moved"]


def test_two_tests_that_name_their_result_alike_ask_different_questions(tested: Path):
    """``result = f(a); assert result == 1`` replaced by ``result = g(b); assert result == 2`` is
    a new assertion, not an answer moved (an honest patch; red team)."""
    new = TEST.replace("assert summarize(rows)[0][1] == 3", "result = len(summarize(rows))\n    assert result == 1")
    old = TEST.replace("assert summarize(rows)[0][1] == 3", "result = summarize(rows)[0][1]\n    assert result == 3")
    root = tested
    commit(root, "old shape on the branch base", {"tests/test_agg.py": old})
    git(root, "branch", "-f", "main", "HEAD")
    commit(root, "another test", {"src/agg.py": FIXED, "tests/test_agg.py": new})
    assert [kind for kind, _, _ in _review(root)[0]] == ["golden_literal.added"]
