"""Counts in words (issue 18: "1 decisions"): a count of one takes the singular, any other
count the plural, and no message hedges with "(s)"."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from relconsole.engine.gate.bite.bitereport import BiteVerdict
from relconsole.engine.errors import UsageError
from relconsole.engine.gate.gatehealth import GateStats, stats
from relconsole.engine.literal import counted
from relconsole.engine.oracle.textedit import remove_jsonl_lines

ROOT = Path(__file__).resolve().parents[1]
ONE_PLURAL = re.compile(r"(?<![\d.])1 (days|decisions|lines|mutations|commits|offences|runs|entries)\b")


@given(st.integers(min_value=0, max_value=10**6))
def test_counted_is_singular_exactly_for_one(n):
    text = counted(n, "entry", "entries")
    assert text.startswith(f"{n} ") and text.endswith("entry" if n == 1 else "entries")


def test_gate_health_counts_one_day_one_decision_and_one_skipped_line(tmp_path):
    shown = GateStats(days=1, since="s", until="u", total=1, skipped=1,
                      by_row={k: 0 for k in [*map(str, range(1, 9)), "none"]}, by_decision={}).lines()
    text = "\n".join(shown)
    assert "1 day," in text and "1 decision" in text and "1 unreadable history line" in text
    assert not ONE_PLURAL.search(text), text
    history = tmp_path / "relconsole"
    history.mkdir()
    (history / "decisions.jsonl").write_text("")
    assert not ONE_PLURAL.search(" ".join(stats(tmp_path, days=1).notes))


def test_a_bite_over_one_mutant_says_mutation():
    for verdict in (BiteVerdict.of(1, 0, 1), BiteVerdict.of(0, 0, 1), BiteVerdict.of(1, 1, 1)):
        assert "of 1 mutation" in verdict.words() and not ONE_PLURAL.search(verdict.words())


def test_a_file_of_one_line_says_line():
    with pytest.raises(UsageError) as refused:
        remove_jsonl_lines("{}\n", {2})
    assert "a file of 1 line" in str(refused.value) and not ONE_PLURAL.search(str(refused.value))


def test_no_message_hedges_a_count_with_s_in_parentheses():
    hedged = [f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
              for path in sorted((ROOT / "relconsole").rglob("*.py"))
              for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
              if re.search(r"\}[^\"'{}]*\w\(s\)", line)]
    assert hedged == []
