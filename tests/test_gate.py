"""``relconsole gate``: one CI command, one decision, the same one every front end reports.

The patches are the judge file's (tests/test_hostile_subjects.py) and the sample's own, each a
real branch judged by real processes: ``gate``, ``run``, ``flags --run``, ``pytest --relconsole``
and the console (the Pilot) must agree on the decision and the §8 exit code.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench.gitrepo import git
from conftest import TODAY
from relconsole.engine.demo import materialise
from test_hostile_subjects import (HONEST, MERGE_PATCHER, NAIVE, OFF_BY_ONE, patched, prelude)

ROOT = Path(__file__).resolve().parents[1]
EXIT_OF = {"pass": 0, "freeze": 0, "reject": 1, "abort": 3, "hold": 4}
GOLDEN_TEST = '''from src.aggregator import summarize


def test_total():
    assert summarize([{"species": "Adelie", "body_mass_g": 3750.0}])["Adelie"]["count"] == 1
'''


@pytest.fixture(scope="module")
def sample(tmp_path_factory) -> Path:
    return materialise(tmp_path_factory.mktemp("gate") / "sample", TODAY)


def _env() -> dict:
    import os
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PYTEST_", "RELCONSOLE_"))}
    return env | {"PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1", "RELCONSOLE_TODAY": TODAY.isoformat()}


def cli(repo: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "relconsole", *args], cwd=repo, env=_env(),
                          capture_output=True, text=True, timeout=timeout, check=False)


def gate(repo: Path, artifacts: Path, *args: str) -> tuple[int, dict]:
    proc = cli(repo, "gate", "--base", "main", "--runs", "2", "--artifacts", str(artifacts), "--json",
               "--no-history", *args)
    assert "Traceback" not in proc.stderr, proc.stderr
    try:
        return proc.returncode, json.loads(proc.stdout)
    except ValueError:
        raise AssertionError(f"gate printed no JSON (exit {proc.returncode}): {proc.stdout[-800:]} {proc.stderr[-2000:]}")


def json_of(proc: subprocess.CompletedProcess) -> dict:
    assert "Traceback" not in proc.stderr, proc.stderr
    return json.loads(proc.stdout)


def plugin(repo: Path, tmp: Path) -> tuple[int, dict]:
    results = tmp / "plugin.json"
    proc = subprocess.run([sys.executable, "-m", "pytest", "--relconsole", "-p", "no:cacheprovider",
                           f"--relconsole-json={results}", "-q"], cwd=repo, env=_env(), capture_output=True,
                          text=True, timeout=600, check=False)
    assert results.exists(), proc.stdout[-2000:] + proc.stderr[-2000:]
    return proc.returncode, json.loads(results.read_text())


async def console_decision(repo: Path) -> tuple[str, str, str, int]:
    """(decision, reason, status line text, exit code) once the console ran the touched relations."""
    from relconsole.console.app import ReviewApp
    app = ReviewApp(repo=str(repo), base_ref="main", today=TODAY)
    async with app.run_test(size=(160, 48)) as pilot:
        deadline = time.monotonic() + 300
        await pilot.pause()
        while app.busy or app.review is None or app.review.results.keys() < set(app.review.touched_relations()):
            assert app.load_error is None, app.load_error
            assert time.monotonic() < deadline, f"console still busy: {app.busy_reasons}"
            await pilot.pause(0.1)
        await pilot.pause()
        decision = app.review.decision()
        status = str(app.query_one("#status").render())
        return decision.decision, decision.reason, status, app.review.exit_code()


def _commit(repo: Path, files: dict[str, str], message: str) -> None:
    for path, text in files.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)


def _mixed(repo: Path) -> None:
    """An honest code change and a catalog comment in one commit: §9 forbids the mix."""
    catalog = (repo / "oracle" / "catalog.yaml").read_text()
    _commit(repo, {"oracle/catalog.yaml": catalog + "# a note\n",
                   "src/aggregator.py": HONEST["renamed-locals"]["src/aggregator.py"]}, "agent: tidy")


PATCHES = {
    "honest": ({"src/aggregator.py": HONEST["renamed-locals"]["src/aggregator.py"]}, None),
    "naive-sum": ({"src/aggregator.py": NAIVE}, None),
    "merge-patcher": ({"src/aggregator.py": prelude(MERGE_PATCHER, OFF_BY_ONE)}, None),
    "golden-test-only": ({"tests/test_golden.py": GOLDEN_TEST}, None),
    "unowned-file-only": ({"tools/helper.py": "def helper():\n    return 1\n"}, None),
    "mixed-commit": ({}, _mixed),
}
EXPECTED = {"honest": "pass", "naive-sum": "reject", "merge-patcher": "reject", "golden-test-only": "reject",
            "unowned-file-only": "pass", "mixed-commit": "reject"}


@pytest.mark.parametrize("case", sorted(PATCHES))
async def test_every_front_end_reports_the_same_decision(sample, tmp_path, case):
    files, extra = PATCHES[case]
    repo = patched(sample, tmp_path, files)
    if extra is not None:
        extra(repo)
    code, gated = gate(repo, tmp_path / "artifacts")
    run = cli(repo, "run", "--base", "main", "--json")
    flagged = cli(repo, "flags", "--run", "--base", "main", "--json")
    plugin_code, plugged = plugin(repo, tmp_path)
    decision, reason, status, _ = await console_decision(repo)

    assert gated["decision"] == EXPECTED[case], gated
    words = {"gate": gated["decision"], "run": json_of(run)["decision"],
             "flags": json_of(flagged)["decision"]["decision"], "plugin": plugged["decision"], "console": decision}
    assert set(words.values()) == {gated["decision"]}, words
    # the unreplayed front ends agree on the reason too (the gate's may be its replay sheet's row)
    reasons = {json_of(run)["reason"], json_of(flagged)["decision"]["reason"], plugged["reason"], reason}
    assert len(reasons) == 1, reasons
    assert decision.upper() in status
    gap = bool(gated["gaps"])
    expected_code = EXIT_OF[gated["decision"]] or (2 if gap else 0)
    assert code == run.returncode == flagged.returncode == json_of(flagged)["exit_code"] == expected_code
    assert (plugin_code != 0) == (expected_code != 0), (plugin_code, plugged)
    written = json.loads((tmp_path / "artifacts" / "decision.json").read_text())
    assert {k: written[k] for k in ("decision", "reason", "exit_code")} == \
        {k: gated[k] for k in ("decision", "reason", "exit_code")}


def test_shards_collect_to_the_unsharded_decision_and_a_lost_shard_aborts(sample, tmp_path):
    repo = patched(sample, tmp_path, {"src/aggregator.py": NAIVE})
    whole_code, whole = gate(repo, tmp_path / "whole")
    shared = tmp_path / "shards"
    for k in (1, 2):  # each CI job uploads its own folder; collect reads them all
        gate(repo, shared / f"job{k}", "--shard", f"{k}/2")
    judged = [r["relation_id"] for k in (1, 2)
              for r in json.loads((shared / f"job{k}" / f"gate-shard-{k}-of-2.json").read_text())["relations"]]
    assert sorted(judged) == sorted(whole["touched"]) and len(judged) == len(set(judged))
    collected = cli(repo, "gate", "--collect", str(shared), "--json", "--no-history")
    merged = json_of(collected)
    assert (collected.returncode, merged["decision"], merged["reason"]) == \
        (whole_code, whole["decision"], whole["reason"])
    assert {r["relation_id"]: r["decision"] for r in merged["relations"]} == \
        {r["relation_id"]: r["decision"] for r in whole["relations"]}
    assert (shared / "decision.json").is_file()
    _the_miss_is_on_the_changed_lines_it_ran(repo, whole)

    shutil.rmtree(shared / "job2")  # a matrix job that never uploaded
    lost = cli(repo, "gate", "--collect", str(shared), "--json", "--no-history")
    assert (lost.returncode, json_of(lost)["reason"]) == (3, "incomplete_evidence")
    assert "2/2" in json_of(lost)["detail"]


def _the_miss_is_on_the_changed_lines_it_ran(repo: Path, decision: dict) -> None:
    """The relations a naive patch makes miss are located, in decision.json and SARIF, on lines
    of the patch's hunks of a file their subject ran (``missfacts.where``), with their statement."""
    import re
    from relconsole.engine.gate.cireport import sarif
    hunks = git(repo, "diff", "-U0", "main", "HEAD", "--", "src/aggregator.py")
    changed = {n for start, count in re.findall(r"^@@ -\S+ \+(\d+)(?:,(\d+))? @@", hunks, flags=re.M)
               for n in range(int(start), int(start) + int(count or 1))}
    missed = [r for r in decision["relations"] if r["decision"] == "reject"]
    assert missed, decision["relations"]
    results = {r["properties"]["relationId"]: r for r in sarif(decision)["runs"][0]["results"]
               if r.get("properties", {}).get("relationId")}
    for entry in missed:
        assert entry["where"] and entry["where"][0]["by"] == "ran" and entry["statement"], entry
        where = results[entry["relation_id"]]["locations"][0]["physicalLocation"]
        assert where["artifactLocation"]["uri"] == "src/aggregator.py" and where["region"]["startLine"] in changed
        assert entry["statement"] in results[entry["relation_id"]]["message"]["text"]


def test_a_part_of_another_head_is_not_collected_with_this_one(sample, tmp_path):
    repo = patched(sample, tmp_path, {"src/aggregator.py": HONEST["renamed-locals"]["src/aggregator.py"]})
    shared = tmp_path / "shards"
    gate(repo, shared / "job1", "--shard", "1/2")
    _commit(repo, {"src/aggregator.py": NAIVE}, "agent: one more thing")
    gate(repo, shared / "job2", "--shard", "2/2")
    mixed = cli(repo, "gate", "--collect", str(shared), "--json", "--no-history")
    assert (mixed.returncode, json_of(mixed)["reason"]) == (3, "incomplete_evidence")


def _rejected_part(sample: Path, tmp_path: Path) -> tuple[Path, Path, Path, dict]:
    """(repo, artifacts, part file, part) of an unsharded gate over the naive patch (a reject)."""
    repo = patched(sample, tmp_path, {"src/aggregator.py": NAIVE})
    art = tmp_path / "art"
    code, _ = gate(repo, art)
    assert code == 1
    part_file = art / "gate-shard-1-of-1.json"
    return repo, art, part_file, json.loads(part_file.read_text())


def test_a_forged_passing_part_cannot_hide_a_relation(sample, tmp_path):
    """A part edited to drop its failing relation: collect sees the touched relation unjudged."""
    repo, art, part_file, part = _rejected_part(sample, tmp_path)
    part["relations"] = [r for r in part["relations"] if r["decision"] == "pass"]
    part_file.write_text(json.dumps(part))
    for sheet in art.glob("*.sheet.json"):
        sheet.unlink()
    forged = cli(repo, "gate", "--collect", str(art), "--json", "--no-history")
    assert forged.returncode != 0 and json_of(forged)["decision"] == "abort", forged.stdout


def test_collect_usage_errors(tmp_path):
    missing = cli(tmp_path, "gate", "--collect", str(tmp_path / "nowhere"))
    assert missing.returncode == 64 and "not a directory" in missing.stderr
    (tmp_path / "empty").mkdir()
    empty = cli(tmp_path, "gate", "--collect", str(tmp_path / "empty"), "--json", "--no-history")
    assert (empty.returncode, json_of(empty)["reason"]) == (3, "incomplete_evidence")
    both = cli(tmp_path, "gate", "--collect", str(tmp_path / "empty"), "--shard", "1/2")
    assert both.returncode == 64


def test_collect_refuses_evidence_about_another_commit_than_the_checkout(sample, tmp_path):
    """Parts and sheets of an honest commit, collected in the checkout of a wrong one (stale
    artifacts, or an ``artifacts/`` the patch committed): an abort, never the honest pass."""
    repo = patched(sample, tmp_path, {"src/aggregator.py": HONEST["renamed-locals"]["src/aggregator.py"]})
    honest = git(repo, "rev-parse", "HEAD").strip()
    shared = tmp_path / "shards"
    for k in (1, 2):
        gate(repo, shared, "--shard", f"{k}/2")
    same = cli(repo, "gate", "--collect", str(shared), "--json", "--no-history")
    assert (same.returncode, json_of(same)["decision"]) == (0, "pass"), same.stdout
    _commit(repo, {"src/aggregator.py": NAIVE}, "agent: one more thing")
    stale = cli(repo, "gate", "--collect", str(shared), "--json", "--no-history")
    assert (stale.returncode, json_of(stale)["reason"]) == (3, "incomplete_evidence")
    assert honest[:12] in json_of(stale)["detail"]
    named = cli(repo, "gate", "--collect", str(shared), "--head", honest, "--json", "--no-history")
    assert named.returncode == 0  # the evidence is about the commit named
    decoy = tmp_path / "decoy"  # an exported GIT_DIR whose HEAD is the honest commit
    git(tmp_path, "clone", "-q", str(repo), str(decoy))
    git(decoy, "checkout", "-q", honest)
    misled = subprocess.run([sys.executable, "-m", "relconsole", "gate", "--collect", str(shared), "--json",
                             "--no-history"], cwd=repo, env=_env() | {"GIT_DIR": str(decoy / ".git")},
                            capture_output=True, text=True, timeout=600, check=False)
    assert (misled.returncode, json_of(misled)["reason"]) == (3, "incomplete_evidence")


def test_a_failed_collect_rewrites_the_sarif_and_summary_it_was_asked_for(tmp_path):
    """A patch that commits summary.md saying PASS and a part that does not parse: the gate
    exits 5 and the summary and SARIF at those paths now say why, not what the patch wrote."""
    art = tmp_path / "art"
    art.mkdir()
    (art / "gate-shard-1-of-2.json").write_text('{"relconsole_gate": 1, "shard_index": "x"}')
    summary, sarif = tmp_path / "summary.md", tmp_path / "out.sarif"
    summary.write_text("## relconsole gate: PASS (exit 0)\n")
    sarif.write_text('{"version": "2.1.0", "runs": [{"results": []}]}')
    git(tmp_path, "init", "-q", str(tmp_path / "repo"))
    proc = cli(tmp_path, "gate", "--collect", str(art), "--repo", str(tmp_path / "repo"), "--summary",
               str(summary), "--sarif", str(sarif), "--no-history")
    assert proc.returncode == 5 and "Traceback" not in proc.stderr, proc.stderr
    assert "PASS" not in summary.read_text() and "ABORT" in summary.read_text()
    run = json.loads(sarif.read_text())["runs"][0]
    assert run["results"] == []  # the machine's failure is no alert in the code: a notification of the run
    [invocation] = run["invocations"]
    assert invocation["executionSuccessful"] is False
    assert [n["descriptor"]["id"] for n in invocation["toolExecutionNotifications"]] == ["gate_failed"]


def test_format_github_prints_annotations_and_gives_the_same_decision(tmp_path):
    """``--format github``: workflow-command annotations, the exit code of ``--json`` (a collect
    with no part: an abort, judged without running a relation)."""
    (tmp_path / "empty").mkdir()
    as_json = cli(tmp_path, "gate", "--collect", str(tmp_path / "empty"), "--json", "--no-history")
    github = cli(tmp_path, "gate", "--collect", str(tmp_path / "empty"), "--format", "github", "--no-history")
    assert github.returncode == as_json.returncode == json_of(as_json)["exit_code"] == 3, github.stderr
    annotations = [line for line in github.stdout.splitlines() if line.startswith("::")]
    assert annotations and all(line.startswith("::error title=relconsole incomplete_evidence") for line in annotations)
    assert "rules.md#incomplete_evidence" in annotations[0]
    both = cli(tmp_path, "gate", "--collect", str(tmp_path / "empty"), "--format", "github", "--json")
    assert both.returncode == 64
    helped = cli(tmp_path, "gate", "--help")
    assert "github" in helped.stdout and "--format" in helped.stdout


def _on_main(repo: Path, edit, message: str) -> None:
    """Commit ``edit(catalog text) -> text`` to main's catalog from a linked worktree."""
    other = repo.parent / f"main-{len(list(repo.parent.iterdir()))}"
    git(repo, "worktree", "add", "-q", str(other), "main")
    catalog = other / "oracle" / "catalog.yaml"
    catalog.write_text(edit(catalog.read_text()))
    git(other, "commit", "-qam", message)
    git(repo, "worktree", "remove", "--force", str(other))


def test_parts_judged_under_an_older_oracle_are_not_collected(sample, tmp_path):
    """The red team's pass: shards judged while main's catalog had dropped the relation a naive
    patch breaks, then main restored it; collect must not decide by the loosened oracle."""
    repo = patched(sample, tmp_path, {"src/aggregator.py": NAIVE})
    owned = '"src/aggregator.py": [penguins.order_invariant, penguins.split_merge]'
    assert owned in (repo / "oracle" / "catalog.yaml").read_text()
    _on_main(repo, lambda text: text.replace(owned, '"src/aggregator.py": [penguins.split_merge]'), "catalog: A")
    shared = tmp_path / "shards"
    for k in (1, 2):
        gate(repo, shared, "--shard", f"{k}/2")
    loosened = cli(repo, "gate", "--collect", str(shared), "--json", "--no-history")
    assert json_of(loosened)["decision"] == "pass", loosened.stdout  # the loosened oracle's honest answer
    _on_main(repo, lambda text: text.replace('"src/aggregator.py": [penguins.split_merge]', owned), "catalog: B")
    stale = cli(repo, "gate", "--collect", str(shared), "--json", "--no-history")
    assert (stale.returncode, json_of(stale)["reason"]) == (3, "incomplete_evidence"), stale.stdout
    assert subprocess.run([sys.executable, "-m", "relconsole", "run", "--base", "main"], cwd=repo, env=_env(),
                          capture_output=True, timeout=600).returncode == 1  # the oracle now: reject


def test_a_part_cannot_clear_a_miss_by_its_own_word(sample, tmp_path):
    """A forged part saying pass for a relation it says missed, its sheet and manifests gone or
    emptied, and the same relation claimed twice: collect aborts or keeps the worse."""
    repo, art, part_file, part = _rejected_part(sample, tmp_path)
    missed = [r for r in part["relations"] if r["outcome"] == "missed"]
    assert missed, part["relations"]
    for entry in missed:
        entry |= {"decision": "pass", "reason": "held", "row": None}
    part["patch"], part["extra"], part["gaps"] = [], [], []
    part_file.write_text(json.dumps(part))
    for sheet in art.glob("*.sheet.json"):
        sheet.unlink()
    for manifest in art.glob("replay-shard-*.json"):
        manifest.write_text(json.dumps(json.loads(manifest.read_text()) | {"sheets": []}))
    forged = cli(repo, "gate", "--collect", str(art), "--json", "--no-history")
    assert (forged.returncode, json_of(forged)["decision"]) == (3, "abort"), forged.stdout
    assert any(c.get("relation_id") == missed[0]["relation_id"] for c in json_of(forged)["causes"])


def test_the_worse_of_two_parts_judging_one_relation_stands_and_a_shard_index_must_fit(sample, tmp_path):
    repo = patched(sample, tmp_path, {"src/aggregator.py": NAIVE})
    art = tmp_path / "art"
    gate(repo, art)
    part = json.loads((art / "gate-shard-1-of-1.json").read_text())
    rejected = next(r for r in part["relations"] if r["decision"] == "reject")
    twin = dict(part, shard_index=1, shard_total=1, relations=[rejected | {"decision": "pass", "reason": "held"}])
    (art / "sub").mkdir()
    (art / "sub" / "gate-shard-1-of-1.json").write_text(json.dumps(twin))  # sorted after: it would win
    both = cli(repo, "gate", "--collect", str(art), "--json", "--no-history")
    assert json_of(both)["decision"] in ("reject", "abort") and both.returncode in (1, 3), both.stdout
    (art / "sub" / "gate-shard-1-of-1.json").write_text(json.dumps(dict(part, shard_index=3)))
    outside = cli(repo, "gate", "--collect", str(art), "--json", "--no-history")
    assert outside.returncode == 5 and "shard_index" in outside.stderr, outside.stderr


# --- issue 17, the new-user trial: what gate says agrees with itself, the README and the SPEC ---

WHERE = r"(?:tests|oracle)/[\w/.]+:\d+"


@pytest.fixture(scope="module")
def sample_gate(sample, tmp_path_factory) -> dict:
    """The sample's own patch (agent/patch) gated once in text mode with --summary: its stdout,
    decision.json and the Markdown summary, and ``flags --json`` beside it."""
    tmp = tmp_path_factory.mktemp("sample-gate")
    repo = tmp / "repo"
    subprocess.run(["git", "clone", "-q", "-b", "agent/patch", str(sample), str(repo)], check=True)
    git(repo, "branch", "-q", "main", "origin/main")
    art, summary = tmp / "artifacts", tmp / "summary.md"
    proc = cli(repo, "gate", "--base", "main", "--runs", "2", "--artifacts", str(art), "--summary", str(summary),
               "--no-history")
    assert "Traceback" not in proc.stderr, proc.stderr
    return {"repo": repo, "code": proc.returncode, "stdout": proc.stdout, "summary": summary.read_text(),
            "decision": json.loads((art / "decision.json").read_text()),
            "flags": json_of(cli(repo, "flags", "--base", "main", "--json"))}


def test_a_protected_path_flag_says_what_the_gate_does_with_it(sample_gate):
    """§9: the change has no effect on the review (the oracle is the base's), but a reviewer
    must see it: the gate rejects until it is acknowledged, and the flag and the docs say so."""
    flags = [f for f in sample_gate["flags"]["flags"] if f["name"] == "protected_path_changed"]
    assert flags
    causes = {c["reason"] for c in sample_gate["decision"]["causes"] if c["decision"] == "reject"}
    assert "review_flag:protected_path_changed" in causes
    flags_doc = (ROOT / "docs" / "commits.md").read_text()
    row = next(line for line in flags_doc.splitlines() if line.startswith("| `protected_path_changed`"))
    for text in [f["detail"] for f in flags] + [row]:
        assert "no effect" not in text and "relconsole ack" in text, text


def test_decision_json_lists_each_cause_once_in_a_stable_order(sample_gate):
    causes = [json.dumps(c, sort_keys=True) for c in sample_gate["decision"]["causes"]]
    assert len(causes) == len(set(causes)), causes
    assert sample_gate["decision"]["reason"] in {c["reason"] for c in sample_gate["decision"]["causes"]}


def test_finish_drops_repeated_causes_and_keeps_the_first_order():
    from relconsole.engine.decision import Decision
    from relconsole.engine.gate.pipeline import finish
    miss = Decision("reject", "property_fail", 3, "a.rel", "missed on every HEAD run")
    flag16 = Decision("reject", "review_flag:golden_literal", None, None, "t.py:16: x")
    flag20 = Decision("reject", "review_flag:golden_literal", None, None, "t.py:20: y")
    payload = finish({"gaps": []}, [miss, Decision("pass", "held", None, "b.rel"), miss], [flag16, flag20, flag16], [])
    assert [(c["reason"], c["detail"]) for c in payload["causes"]] == \
        [(d.reason, d.detail) for d in (miss, flag16, flag20)]


def _locations(text: str) -> set[str]:
    import re
    return set(re.findall(WHERE, text))


def test_every_front_end_names_the_same_golden_literal_lines(sample_gate):
    """flags, the gate's stdout, decision.json's causes and the summary name every golden line."""
    golden = {f"{f['path']}:{f['line']}" for f in sample_gate["flags"]["flags"] if f["name"] == "golden_literal"}
    assert len(golden) >= 2, sample_gate["flags"]["flags"]  # the sample's patch adds two
    stdout = [line for line in sample_gate["stdout"].splitlines() if "no_golden_literal" in line]
    causes = [c["detail"] for c in sample_gate["decision"]["causes"] if c["reason"] == "checklist:no_golden_literal"]
    summary = [line for line in sample_gate["summary"].splitlines() if line.startswith("| no\\_golden\\_literal")]
    for front_end, lines in (("stdout", stdout), ("causes", causes), ("summary", summary)):
        assert lines and _locations(" ".join(lines).replace("\\", "")) == golden, (front_end, lines)


def test_an_early_abort_still_writes_decision_json(sample_gate, tmp_path):
    """An unknown base ref stops the gate before it judged anything: --artifacts still gets a
    decision.json saying abort and why (never an older file's word), as the SARIF does."""
    art = tmp_path / "artifacts"
    art.mkdir()
    (art / "decision.json").write_text(json.dumps({"decision": "pass", "exit_code": 0}))
    proc = cli(sample_gate["repo"], "gate", "--base", "no-such-base", "--artifacts", str(art), "--no-history")
    assert proc.returncode == 3 and "Traceback" not in proc.stderr, proc.stderr
    written = json.loads((art / "decision.json").read_text())
    assert (written["decision"], written["exit_code"]) == ("abort", 3)
    assert "no-such-base" in written["detail"] and written["reason"]
    (art / "gate-shard-1-of-2.json").write_text("{not json")  # collect stops at a bad part: exit 5
    collected = cli(sample_gate["repo"], "gate", "--collect", str(art), "--no-history")
    written = json.loads((art / "decision.json").read_text())
    assert collected.returncode == written["exit_code"] == 5 and written["decision"] == "abort", collected.stderr



def test_the_docs_order_the_causes_as_the_gate_does():
    """docs/decision-table.md: the exit code of several causes is the worst's, in the order the line states
    (a reject outranks a coverage gap); checked against ``gate.finish``."""
    import re
    from relconsole.engine.decision import Decision
    from relconsole.engine.gate.pipeline import finish
    table = (ROOT / "docs" / "decision-table.md").read_text()
    [order] = [line for line in table.splitlines() if "outranks" in line and " > " in line]
    codes = [int(c) for c in re.findall(r"\((\d)\)", order)]
    assert len(codes) >= 5 and codes.index(1) < codes.index(2), order  # a reject outranks a gap
    cause = {0: None, 1: "reject", 2: "gap", 3: "abort", 4: "hold"}

    def code_of(present: set[int]) -> int:
        verdicts = [Decision(cause[c], "r") for c in present if cause[c] not in (None, "gap")]
        return finish({"gaps": ["x.py"] if 2 in present else []}, verdicts, [], [])["exit_code"]
    for i, better in enumerate(codes):
        for worse in codes[:i]:
            assert code_of({better, worse}) == worse, (worse, better)


def test_the_gate_counts_its_run_phase_s_head_runs_among_the_replay_s(sample_gate):
    """The sample's miss is shrunk (issue 37): the replay judges its smallest input on both sides,
    which no run-phase run judged exactly, so each side runs all of its own and none is counted
    from the run phase (the counting itself: tests/test_replay.py)."""
    entry = next(r for r in sample_gate["decision"]["relations"] if r["relation_id"] == "penguins.order_invariant")
    sheet = json.loads(Path(entry["sheet"]).read_text())
    assert sheet["runs"]["head"]["runs"] == 2 == sheet["runs"]["base"]["runs"]
    assert "from_run" not in sheet["runs"]["head"] and "from_run" not in sheet["runs"]["base"]
    assert sheet["evidence"]["shrunk"]["input"] and sheet["runs"]["head"]["misses"] == 2
    assert sheet["property_result"] == "fail" and sheet["base_signature"] == "none"
