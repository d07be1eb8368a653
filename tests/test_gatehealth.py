"""Gate health: the decision history under the git dir and what ``stats`` says about it."""

from __future__ import annotations

import datetime as dt
import json
import threading
from pathlib import Path

from relconsole.engine.gate import gatehealth
from relconsole.engine.decision import Decision
from bench.gitrepo import git
from tests.test_decide import _store_at_generation_7, relconsole_cli, varied, write_sheet  # noqa: F401 (autouse: the store the sheets name)

NOW = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.UTC)


def freeze(rid="rel.a") -> Decision:
    return Decision("freeze", "intermittent_on_base", 8, rid)


def record(git_dir: Path, decisions: list[Decision], days_ago: float) -> None:
    assert gatehealth.append(git_dir, decisions, NOW - dt.timedelta(days=days_ago))


def test_append_writes_one_json_line_per_decision(tmp_path):
    assert gatehealth.append(tmp_path, [freeze(), Decision("abort", "lease_not_fresh", 2, "rel.b")], NOW)
    lines = gatehealth.history_path(tmp_path).read_text().splitlines()
    assert [json.loads(line) for line in lines] == [
        {"at": "2026-11-30T12:00:00+00:00", "relation_id": "rel.a", "row": 8, "decision": "freeze",
         "reason": "intermittent_on_base"},
        {"at": "2026-11-30T12:00:00+00:00", "relation_id": "rel.b", "row": 2, "decision": "abort",
         "reason": "lease_not_fresh"}]


def test_a_write_failure_returns_false(tmp_path):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the git dir should be")
    assert gatehealth.append(blocker, [freeze()], NOW) is False


def test_concurrent_appends_do_not_interleave(tmp_path):
    def writer(n):
        for _ in range(50):
            gatehealth.append(tmp_path, [freeze(f"rel.{n}." + "x" * 300)], NOW)
    threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    records, skipped, _ = gatehealth.read_history(tmp_path)
    assert len(records) == 400 and skipped == 0


def test_stats_counts_rows_and_decisions_in_the_window(tmp_path):
    record(tmp_path, [freeze(), Decision("reject", "property_fail", 3, "rel.b")], 1)
    record(tmp_path, [Decision("pass", "no_missed_relations")], 2)
    record(tmp_path, [Decision("abort", "missing_fields", 1, "rel.c")], 10)  # outside 7 days
    result = gatehealth.stats(tmp_path, 7, NOW)
    assert result.total == 3 and result.by_row["8"] == 1 and result.by_row["3"] == 1
    assert result.by_row["none"] == 1 and result.by_row["1"] == 0
    assert result.by_decision == {"pass": 1, "freeze": 1, "hold": 0, "reject": 1, "abort": 0}
    assert result.first == "2026-11-28T12:00:00+00:00" and result.last == "2026-11-29T12:00:00+00:00"
    assert gatehealth.stats(tmp_path, 30, NOW).by_row["1"] == 1
    assert json.loads(json.dumps(result.to_json()))["rows"]["8"]["decision"] == "freeze"


def test_bad_history_lines_are_skipped_and_counted(tmp_path):
    record(tmp_path, [freeze()], 1)
    with gatehealth.history_path(tmp_path).open("a") as out:
        out.write('not json\n{"at": "yesterday", "decision": "freeze"}\n[1]\n'
                  '{"at": "2026-11-29T00:00:00+00:00", "decision": "maybe", "row": 8}\n'
                  '{"at": "2026-11-29T00:00:00+00:00", "decision": "freeze", "row": "8"}\n\n')
    result = gatehealth.stats(tmp_path, 7, NOW)
    assert result.total == 1 and result.skipped == 5


def test_only_freeze_over_three_days_warns(tmp_path):
    for day in (0.5, 1.5, 2.5):
        record(tmp_path, [freeze(), freeze("rel.b")], day)
    warnings = gatehealth.stats(tmp_path, 7, NOW).warnings
    assert len(warnings) == 1 and "only freeze" in warnings[0]


def test_only_freeze_on_one_day_is_not_yet_a_pattern(tmp_path):
    record(tmp_path, [freeze(), freeze("rel.b")], 0.1)
    assert gatehealth.stats(tmp_path, 7, NOW).warnings == []


def test_many_decisions_and_never_an_abort_warns(tmp_path):
    for n in range(25):
        record(tmp_path, [Decision("reject", "miss_not_on_base", 6, f"rel.{n}")], n / 10)
    warnings = gatehealth.stats(tmp_path, 7, NOW).warnings
    assert len(warnings) == 1 and "never an abort" in warnings[0]


def test_a_mixed_history_does_not_warn(tmp_path):
    mix = [freeze(), Decision("reject", "property_fail", 3, "r"), Decision("abort", "lease_not_fresh", 2, "r"),
           Decision("hold", "second_replay_required", 5, "r"), Decision("pass", "no_missed_relations")]
    for n in range(30):
        record(tmp_path, [mix[n % len(mix)]], n / 5)
    result = gatehealth.stats(tmp_path, 7, NOW)
    assert result.total == 30 and result.warnings == [] and result.notes == []


def test_no_history_is_a_note_not_a_warning(tmp_path):
    result = gatehealth.stats(tmp_path, 7, NOW)
    assert result.total == 0 and result.warnings == [] and "no decision history" in result.notes[0]
    assert gatehealth.stats(None, 7, NOW).notes == result.notes


def test_decide_twice_then_stats_counts_the_rows(tmp_path):
    repo = tmp_path / "repo"
    git(tmp_path, "init", "-q", str(repo))
    sheets = tmp_path / "sheets"
    write_sheet(sheets, varied())
    write_sheet(sheets, varied(test_id="rel.fail", property_result="fail"))
    for _ in range(2):
        assert relconsole_cli("decide", "--sheet", str(sheets), cwd=repo).returncode == 1
    assert relconsole_cli("decide", "--sheet", str(sheets), "--no-history", cwd=repo).returncode == 1
    proc = relconsole_cli("stats", "--json", cwd=repo)
    assert proc.returncode == 0, proc.stderr
    payload = json.loads(proc.stdout)
    assert payload["total"] == 4 and payload["by_row"]["8"] == 2 and payload["by_row"]["3"] == 2
    assert (repo / ".git" / "relconsole" / "decisions.jsonl").is_file()
    text = relconsole_cli("stats", "--repo", str(repo), "--days", "1", cwd=tmp_path)
    assert text.returncode == 0
    assert any(line.startswith("row 3") and "property_fail" in line and " 2 " in line
               for line in text.stdout.splitlines())


def test_stats_outside_a_repository_says_so(tmp_path):
    proc = relconsole_cli("stats", cwd=tmp_path)
    assert proc.returncode == 0 and "no decision history" in proc.stdout
    assert relconsole_cli("stats", "--repo", str(tmp_path), cwd=tmp_path).returncode == 64
    assert relconsole_cli("stats", "--days", "0", cwd=tmp_path).returncode == 64
