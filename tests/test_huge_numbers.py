"""Issue 18 "Huge integers": a number Python will not read, or a count that is not one, is bad
input (SPEC §8: exit 5, the message names file and line), never a traceback and exit 1.

Real files: the sample repository's ``oracle/freezes.json`` and ``oracle/seeds/rollout.jsonl``
committed with a 5,000-digit integer (``validate``, ``bind``, ``run`` and the console), and
replay sheets on disk for ``decide`` (a 5,000-digit integer; ``-Infinity``, ``NaN``,
``Infinity``, ``1e400`` and ``2.5`` as a run count).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relconsole.cli.main import main
from relconsole.console.app import ReviewApp
from relconsole.console.widgets.pane import Pane
from relconsole.engine.errors import EXIT_BAD_INPUT
from relconsole.engine.oracle.jsonnumbers import count_problem, loads
from bench.gitrepo import git
from tests.conftest import TODAY
from tests.test_console import SIZE, settle
from tests.test_decide import FREEZE_SHEET

HUGE = "9" * 5000


def line_of(text: str, needle: str) -> int:
    return text[:text.index(needle)].count("\n") + 1


def plant(repo: Path, path: str, old: str, new: str) -> int:
    """Replace ``old`` by ``new`` once in ``path`` on main (the oracle branch); the line of
    ``new``'s last line in the file."""
    branch = git(repo, "symbolic-ref", "--short", "HEAD").strip()
    git(repo, "checkout", "-q", "main")
    file = repo / path
    text = file.read_text()
    assert old in text
    file.write_text(text.replace(old, new, 1))
    git(repo, "commit", "-qam", "oracle: a hostile number")
    git(repo, "checkout", "-q", branch)
    return line_of(text.replace(old, new, 1), new.splitlines()[-1])


FILES = [("oracle/freezes.json", '"reruns": 5', f'"reruns": {HUGE}'),
         ("oracle/seeds/rollout.jsonl", '"population": 500', f'"population": {HUGE}'),
         ("oracle/pins.json", "{\n", f'{{\n  "oracle/data/x.csv": {HUGE},\n'),
         ("oracle/freezes.json", '"reruns": 5', '"reruns": -Infinity')]


@pytest.mark.parametrize(("path", "old", "new"), FILES,
                         ids=["freezes-huge", "seeds-huge", "pins-huge", "freezes-infinity"])
def test_validate_bind_and_run_exit_5_naming_the_file_and_line(demo_repo: Path, capsys, path, old, new):
    line = plant(demo_repo, path, old, new)
    for command in ("validate", "bind", "run"):
        code = main([command, "--repo", str(demo_repo), "--today", TODAY.isoformat()])
        _out, err = capsys.readouterr()
        assert code == EXIT_BAD_INPUT, (command, err[-500:])
        assert f"{path}:{line}:" in err and "Traceback" not in err, (command, err[-500:])
        assert HUGE not in err  # the message names the number, it does not print 5,000 digits


async def test_the_console_shows_the_file_and_line_in_the_pane(demo_repo: Path):
    line = plant(demo_repo, "oracle/freezes.json", '"reruns": 5', f'"reruns": {HUGE}')
    app = ReviewApp(repo=str(demo_repo), today=TODAY)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        shown = {kind: " ".join(o.prompt.plain for o in app.query_one(f"#{kind}", Pane).options)
                 for kind in ("touched", "relations", "leases", "quarantine")}
        assert app.exit_code() == EXIT_BAD_INPUT, (app.load_error, shown)
        assert any(f"oracle/freezes.json:{line}" in text for text in shown.values()), shown


def write_sheet(tmp_path: Path, text: str) -> Path:
    sheet = tmp_path / "hostile.sheet.json"
    sheet.write_text(text)
    return sheet


def decide(capsys, sheet: Path) -> tuple[int, str]:
    code = main(["decide", "--sheet", str(sheet), "--no-history", "--out", str(sheet.parent / "out")])
    return code, capsys.readouterr().err


def test_decide_refuses_a_sheet_with_a_huge_integer(tmp_path: Path, capsys):
    text = json.dumps(FREEZE_SHEET, indent=2).replace('"misses": 2', f'"misses": {HUGE}', 1)
    code, err = decide(capsys, write_sheet(tmp_path, text))
    assert code == EXIT_BAD_INPUT
    assert f"hostile.sheet.json:{line_of(text, HUGE)}:" in err and "5000 digits" in err


@pytest.mark.parametrize("count", ["-Infinity", "NaN", "Infinity", "1e400", "2.5", "-1", "true", '"5"'])
@pytest.mark.parametrize(("side", "key"), [("head", "runs"), ("head", "misses"), ("base", "runs")])
def test_decide_refuses_a_run_count_that_is_not_a_whole_number(tmp_path: Path, capsys, count, side, key):
    sheet = json.loads(json.dumps(FREEZE_SHEET))
    sheet["runs"][side][key] = "@COUNT@"
    planted = json.dumps(sheet, indent=2)
    code, err = decide(capsys, write_sheet(tmp_path, planted.replace('"@COUNT@"', count)))
    assert code == EXIT_BAD_INPUT, err
    assert f"hostile.sheet.json:{line_of(planted, '@COUNT@')}:" in err
    assert f"runs.{side}.{key}" in err


# --- the reader itself --------------------------------------------------------------------

JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
                    max_leaves=20)


@settings(max_examples=200, deadline=None)
@given(JSON, st.sampled_from([None, 2]))
def test_loads_reads_what_json_reads(value, indent):
    text = json.dumps(value, indent=indent)
    assert loads(text) == json.loads(text)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(-10**6, 10**6), min_size=1, max_size=12), st.data(),
       st.integers(sys.get_int_max_str_digits() + 1, sys.get_int_max_str_digits() + 2000), st.booleans())
def test_a_too_long_integer_is_a_decode_error_at_its_line(numbers, data, digits, negative):
    where = data.draw(st.integers(0, len(numbers) - 1))
    huge = ("-" if negative else "") + "7" * digits
    lines = [json.dumps({"n": n, "s": "9" * 50}) for n in numbers]  # digits inside strings are no number
    lines[where] = lines[where].replace(f'"n": {numbers[where]}', f'"n": {huge}')
    with pytest.raises(json.JSONDecodeError) as caught:
        loads("[\n" + ",\n".join(lines) + "\n]")
    assert caught.value.lineno == where + 2 and f"{digits} digits" in caught.value.msg


@given(st.integers(min_value=0))
def test_whole_numbers_are_counts(n):
    assert count_problem(n) is None


@given(st.one_of(st.integers(max_value=-1), st.floats(), st.booleans(), st.text(), st.none()))
def test_anything_else_is_not_a_count(value):
    assert count_problem(value)
