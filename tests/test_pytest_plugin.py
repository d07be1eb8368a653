"""The pytest plugin (``pytest --relconsole``), run in a subprocess in the sample repository.

Every run here is a real ``python -m pytest`` in the materialised sample repository
(``agent/patch`` checked out), with the results file and a junit xml written into
``tmp_path``. The sample repository's own tests run too: the plugin adds relation
items, it does not replace the suite.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from bench.gitrepo import git
from tests.conftest import TODAY

ROOT = Path(__file__).resolve().parents[1]
FREEZES = "oracle/freezes.json"

# A hand-written relation test that fails on the attempts listed in FLAKY_FAIL_ON,
# counting its attempts (setup included) in the file FLAKY_COUNTER.
FLAKY_TEST = '''\
import os
from pathlib import Path

import pytest

COUNTER = Path(os.environ["FLAKY_COUNTER"])
FAIL_ON = {int(n) for n in os.environ.get("FLAKY_FAIL_ON", "").split(",") if n}


@pytest.fixture
def attempt():
    n = int(COUNTER.read_text()) + 1 if COUNTER.exists() else 1
    COUNTER.write_text(str(n))
    return n


@pytest.mark.relation("weather.replay_ingest")
def test_replay_twice_equals_once(attempt):
    assert attempt not in FAIL_ON, f"attempt {attempt} flaked"
'''
FLAKY_ID = "tests/test_replay_relation.py::test_replay_twice_equals_once"


@dataclass
class Run:
    code: int
    out: str
    results: dict | None
    junit: ET.Element | None

    def case(self, classname: str, name: str) -> ET.Element:
        found = [c for c in self.junit.iter("testcase")
                 if c.get("classname") == classname and c.get("name") == name]
        assert len(found) == 1, (classname, name, self.out)
        return found[0]

    def relation(self, relation_id: str) -> dict:
        found = [r for r in self.results["relations"] if r["relation_id"] == relation_id]
        assert len(found) == 1, self.results["relations"]
        return found[0]


def _plugin_args() -> list[str]:
    """Load the plugin by its pytest11 entry point when installed, else by module name."""
    if entry_points(group="pytest11", name="relconsole"):
        return []
    return ["-p", "relconsole.pytest_plugin"]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GIT_", "PYTEST_", "RELCONSOLE_"))}
    env.update(PYTHONPATH=str(ROOT), PYTHONDONTWRITEBYTECODE="1", RELCONSOLE_TODAY=TODAY.isoformat())
    env.update(extra)
    return env


def run_pytest(cwd: Path, tmp_path: Path, *args: str, json_file: bool = True, **env: str) -> Run:
    """``python -m pytest --relconsole ARGS`` in ``cwd``; results and junit into ``tmp_path``."""
    results, junit = tmp_path / "results.json", tmp_path / "junit.xml"
    results.unlink(missing_ok=True)
    junit.unlink(missing_ok=True)
    cmd = [sys.executable, "-m", "pytest", *_plugin_args(), "--relconsole", "-p", "no:cacheprovider",
           "-W", "ignore::DeprecationWarning", "-rA", f"--junitxml={junit}", *args]
    if json_file:
        cmd.append(f"--relconsole-json={results}")
    proc = subprocess.run(cmd, cwd=cwd, env=_env(**env), capture_output=True, text=True, timeout=300, check=False)
    out = proc.stdout + proc.stderr
    run = Run(proc.returncode, out,
              json.loads(results.read_text()) if results.exists() else None,
              ET.parse(junit).getroot() if junit.exists() else None)
    if run.junit is not None:  # §6: a relation is never skipped; nothing here is
        assert sum(int(s.get("skipped")) for s in run.junit.iter("testsuite")) == 0, out
        assert run.junit.find(".//skipped") is None, out
    return run


def cli_run(repo: Path, *args: str) -> dict:
    proc = subprocess.run([sys.executable, "-m", "relconsole", "run", "--json", *args], cwd=repo,
                          env=_env(), capture_output=True, text=True, timeout=300, check=False)
    return json.loads(proc.stdout)


def properties(case: ET.Element) -> dict[str, str]:
    return {p.get("name"): p.get("value") for p in case.iter("property")}


def set_freeze_on_main(repo: Path, relation_id: str, **fields) -> dict:
    """Edit ``relation_id``'s freeze row on main (a ``freeze:`` commit) and come back."""
    git(repo, "checkout", "-q", "main")
    try:
        path = repo / FREEZES
        rows = json.loads(path.read_text())
        row = next(r for r in rows if r["relation_id"] == relation_id)
        row.update(fields)
        path.write_text(json.dumps(rows, indent=2) + "\n")
        git(repo, "commit", "-q", "-m", f"freeze: {relation_id} for the plugin tests", "--", FREEZES)
    finally:
        git(repo, "checkout", "-q", "agent/patch")
    return row


def freeze_on_main(repo: Path, relation_id: str) -> dict:
    rows = json.loads(git(repo, "show", f"main:{FREEZES}"))
    return next(r for r in rows if r["relation_id"] == relation_id)


def add_flaky_test(repo: Path) -> Path:
    path = repo / "tests" / "test_replay_relation.py"
    path.write_text(FLAKY_TEST)
    return path


# --- catalog relations ------------------------------------------------------------------

def test_order_invariance_miss_fails_under_its_relation_id_with_counted_reruns(demo_repo, tmp_path):
    freeze = freeze_on_main(demo_repo, "penguins.order_invariant")
    run = run_pytest(demo_repo, tmp_path)
    assert run.code == 1, run.out
    result = run.relation("penguins.order_invariant")
    assert (result["outcome"], result["decision"]) == ("missed", "reject")
    assert result["freeze"]["state"] == "live"
    assert len(result["reruns"]) == freeze["reruns"]  # every rerun recorded (§6)
    passes = sum(r["held"] for r in result["reruns"])
    assert result["summary"] == f"frozen {passes}/{freeze['reruns']}, needed {freeze['pass_needed']}: FAIL"
    case = run.case("relconsole", "penguins.order_invariant")
    failure = case.find("failure")
    assert failure is not None and "\n" not in failure.get("message")
    assert failure.get("message").startswith("penguins.order_invariant: REJECT (")
    assert "disagree on" in failure.get("message")
    props = properties(case)
    assert props["relation_id"] == "penguins.order_invariant"
    assert props["reruns"] == str(freeze["reruns"]) and props["freeze_state"] == "live"
    assert "FAILED relconsole::penguins.order_invariant" in run.out
    held = run.case("relconsole", "penguins.split_merge")
    assert held.find("failure") is None and properties(held)["decision"] == "pass"
    # the repository's own suite ran beside the relations
    own = [c for c in run.junit.iter("testcase") if c.get("classname", "").startswith("tests.")]
    assert {c.get("classname") for c in own} == {"tests.test_rollout", "tests.test_totals"}
    assert all(c.find("failure") is None and c.find("error") is None for c in own)


def test_same_verdicts_as_relconsole_run_json(demo_repo, tmp_path):
    for plugin_args, cli_args in (((), ()), (("--relconsole-all",), ("--all",))):
        run = run_pytest(demo_repo, tmp_path, *plugin_args)
        cli = cli_run(demo_repo, *cli_args)
        verdicts = {(r["relation_id"], r["decision"], r["reason"]) for r in run.results["relations"]}
        assert verdicts == {(r["relation_id"], r["decision"], r["reason"]) for r in cli["relations"]}
        assert [r["relation_id"] for r in run.results["relations"]] == \
            [r["relation_id"] for r in cli["relations"]]
        for key in ("decision", "reason", "row", "relation_id", "gaps"):
            assert run.results[key] == cli[key], key
        assert set(cli) <= set(run.results)  # the same document, plus the plugin's keys
        assert run.results["scope"] == ("all" if plugin_args else "touched")
        ids = {c.get("name") for c in run.junit.iter("testcase") if c.get("classname") == "relconsole"}
        assert ids == {r["relation_id"] for r in cli["relations"]}
        for relation in cli["relations"]:  # pass/freeze pass, everything else fails
            case = run.case("relconsole", relation["relation_id"])
            assert (case.find("failure") is None) == (relation["decision"] in ("pass", "freeze"))
    blocked = run.relation("codec.roundtrip")  # the expired stocks lease fails closed
    assert blocked["outcome"] == "blocked"
    assert run.case("relconsole", "codec.roundtrip").find("failure") is not None


def test_expired_freeze_is_ignored_and_says_when(demo_repo, tmp_path):
    expired = TODAY - dt.timedelta(days=1)
    set_freeze_on_main(demo_repo, "penguins.order_invariant", expires=expired.isoformat())
    run = run_pytest(demo_repo, tmp_path)
    result = run.relation("penguins.order_invariant")
    assert result["reruns"] == []
    assert result["freeze"]["state"] == "expired"
    assert (result["outcome"], result["decision"]) == ("missed", "reject")
    assert f"freeze expired on {expired.isoformat()}" in result["summary"]
    message = run.case("relconsole", "penguins.order_invariant").find("failure").get("message")
    assert f"freeze expired on {expired.isoformat()}" in message


def test_default_results_file_is_under_the_git_dir(demo_repo, tmp_path):
    run = run_pytest(demo_repo, tmp_path, json_file=False)
    default = demo_repo / ".git" / "relconsole" / "pytest-results.json"
    assert default.is_file(), run.out
    assert json.loads(default.read_text())["decision"] == "reject"
    assert git(demo_repo, "status", "--porcelain", "--untracked-files=all") == ""
    assert f"relconsole: results in {default}" in run.out


def test_deselected_relations_are_not_run(demo_repo, tmp_path):
    git(demo_repo, "reset", "-q", "--hard", "HEAD~3")  # only the code commit: no review flag decides
    run = run_pytest(demo_repo, tmp_path, "-k", "split_merge")
    assert [r["relation_id"] for r in run.results["relations"]] == ["penguins.split_merge"]
    # a touched relation that did not run leaves the PR's decision pending, never a pass:
    # every item passed, yet the session fails on the hold, unless it only reports
    assert (run.results["decision"], run.results["reason"]) == ("hold", "not_run")
    assert run.code == 1 and "decision hold (not_run): the session fails" in run.out, run.out
    reported = run_pytest(demo_repo, tmp_path, "-k", "split_merge", "--relconsole-report-only")
    assert reported.code == 0 and reported.results["decision"] == "hold", reported.out


def test_a_flag_only_reject_fails_the_session_though_every_item_passes(demo_repo, tmp_path):
    """A golden-literal test on an otherwise honest branch: no relation is touched, every
    test passes, and the review rejects on the flag; the session must not exit 0 (§8)."""
    git(demo_repo, "checkout", "-q", "-b", "honest", "main")
    golden = git(demo_repo, "show", "agent/patch:tests/test_totals.py")
    (demo_repo / "tests" / "test_totals.py").write_text(golden)
    git(demo_repo, "add", "tests/test_totals.py")
    git(demo_repo, "commit", "-q", "-m", "test: pin the penguin totals")
    run = run_pytest(demo_repo, tmp_path)
    assert run.results["decision"] == "reject" and run.results["reason"].startswith("review_flag:")
    assert all(c.find("failure") is None for c in run.junit.iter("testcase")), run.out
    assert run.code == 1 and "the session fails" in run.out
    assert cli_run(demo_repo)["decision"] == run.results["decision"]  # the same decision as run
    assert run_pytest(demo_repo, tmp_path, "--relconsole-report-only").code == 0


def test_without_the_flag_the_plugin_loads_no_engine(tmp_path):
    """Installed, the plugin loads in every pytest run: without --relconsole it must not
    import the engine (jsonschema, GitPython, the runner: about a second)."""
    (tmp_path / "test_probe.py").write_text(
        "import sys\n\ndef test_probe():\n"
        "    assert not [m for m in sys.modules if m.startswith(('relconsole.engine', 'git', 'jsonschema'))]\n"
        "    assert 'relconsole.pytest_plugin' in sys.modules\n")
    proc = subprocess.run([sys.executable, "-m", "pytest", *_plugin_args(),
                           "-q", "-p", "no:cacheprovider", str(tmp_path / "test_probe.py")],
                          cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


# --- hand-written relation tests ----------------------------------------------------------

RERUNS, PASS_NEEDED = 3, 2


@pytest.mark.parametrize("fail_on", [(), (1,), (1, 3), (1, 3, 4), (1, 2, 3, 4)])
def test_hand_written_relation_under_a_live_freeze(demo_repo, tmp_path, fail_on):
    expires = TODAY + dt.timedelta(days=5)
    set_freeze_on_main(demo_repo, "weather.replay_ingest", expires=expires.isoformat(),
                       reruns=RERUNS, pass_needed=PASS_NEEDED)
    add_flaky_test(demo_repo)
    counter = tmp_path / "counter"
    # the catalog's items are deselected (its decision holds): the session's code is the items'
    run = run_pytest(demo_repo, tmp_path, "tests/test_replay_relation.py", "-k", "not relconsole",
                     "--relconsole-report-only",
                     FLAKY_COUNTER=str(counter), FLAKY_FAIL_ON=",".join(map(str, fail_on)))
    # expected from the counter logic: attempt 1 is the first run, 2..RERUNS+1 the reruns
    first_held = 1 not in fail_on
    reruns = [] if first_held else [a not in fail_on for a in range(2, RERUNS + 2)]
    passes = sum(reruns)
    should_pass = first_held or passes >= PASS_NEEDED
    assert int(counter.read_text()) == 1 + len(reruns)
    [entry] = run.results["tests"]
    assert (entry["test_id"], entry["relation_id"]) == (FLAKY_ID, "weather.replay_ingest")
    assert [r["held"] for r in entry["reruns"]] == reruns
    assert entry["first_run"]["held"] is first_held
    assert entry["freeze"]["state"] == "live"
    if first_held:
        assert (entry["decision"], entry["summary"]) == ("pass", "held")
    else:
        word = "PASS" if should_pass else "FAIL"
        assert entry["summary"] == f"frozen {passes}/{RERUNS}, needed {PASS_NEEDED}: {word}"
        assert entry["decision"] == ("freeze" if should_pass else "reject")
    case = run.case("tests.test_replay_relation", "test_replay_twice_equals_once")
    assert (case.find("failure") is None) == should_pass, run.out
    assert properties(case)["relation_id"] == "weather.replay_ingest"
    assert properties(case)["decision"] == entry["decision"]
    if not should_pass:
        assert case.find("failure").get("message").startswith("weather.replay_ingest: REJECT")
        assert run.results["decision"] == "reject"  # the hand-written verdict counts
    assert run.code == (0 if should_pass else 1), run.out


def test_hand_written_relation_with_an_expired_freeze_is_mandatory(demo_repo, tmp_path):
    freeze = freeze_on_main(demo_repo, "weather.replay_ingest")  # the demo's row expired
    assert dt.date.fromisoformat(freeze["expires"]) < TODAY
    add_flaky_test(demo_repo)
    counter = tmp_path / "counter"
    run = run_pytest(demo_repo, tmp_path, "tests/test_replay_relation.py",
                     FLAKY_COUNTER=str(counter), FLAKY_FAIL_ON="1")
    assert counter.read_text() == "1"  # no reruns
    [entry] = run.results["tests"]
    assert entry["reruns"] == [] and entry["freeze"]["state"] == "expired"
    assert entry["decision"] == "reject"
    message = run.case("tests.test_replay_relation", "test_replay_twice_equals_once") \
        .find("failure").get("message")
    assert f"freeze expired on {freeze['expires']}" in message
    assert "attempt 1 flaked" in message


def test_a_relation_test_that_skips_fails(demo_repo, tmp_path):
    (demo_repo / "tests" / "test_skipping_relation.py").write_text(
        "import pytest\n\n@pytest.mark.relation('rollout.monotonic')\n"
        "def test_skips():\n    pytest.skip('not today')\n")
    run = run_pytest(demo_repo, tmp_path, "tests/test_skipping_relation.py")
    [entry] = run.results["tests"]
    assert entry["decision"] == "reject"
    assert "never skipped" in entry["summary"]
    assert run.case("tests.test_skipping_relation", "test_skips").find("failure") is not None


# --- errors ---------------------------------------------------------------------------------

def test_unknown_relation_id_in_a_marker_is_a_collection_error(demo_repo, tmp_path):
    (demo_repo / "tests" / "test_unknown_relation.py").write_text(
        "import pytest\n\n@pytest.mark.relation('orders.no_such')\ndef test_it():\n    pass\n")
    run = run_pytest(demo_repo, tmp_path)
    assert run.code == 2, run.out  # pytest: interrupted by a collection error
    assert "ERROR collecting tests/test_unknown_relation.py" in run.out
    assert ("tests/test_unknown_relation.py::test_it: @pytest.mark.relation('orders.no_such') "
            "names no relation") in run.out


def test_bad_oracle_file_is_a_one_line_usage_error(demo_repo, tmp_path):
    git(demo_repo, "checkout", "-q", "main")
    rows = json.loads((demo_repo / FREEZES).read_text())
    rows[0]["skip"] = True
    (demo_repo / FREEZES).write_text(json.dumps(rows, indent=2) + "\n")
    git(demo_repo, "commit", "-q", "-am", "freeze: a skip row")
    git(demo_repo, "checkout", "-q", "agent/patch")
    run = run_pytest(demo_repo, tmp_path)
    assert run.code == 4, run.out  # pytest's usage error
    assert "ERROR: relconsole: bad input file: oracle/freezes.json:" in run.out
    assert "never a skip" in run.out
    assert "Traceback" not in run.out
    assert run.results is None


def test_outside_a_git_repository_is_a_clear_error(tmp_path):
    project = tmp_path / "plain"
    project.mkdir()
    (project / "test_a.py").write_text("def test_a():\n    pass\n")
    run = run_pytest(project, tmp_path)
    assert run.code == 4, run.out
    assert "not a git repository" in run.out and "Traceback" not in run.out


def test_relconsole_options_need_the_flag(demo_repo, tmp_path):
    proc = subprocess.run([sys.executable, "-m", "pytest", *_plugin_args(), "-p", "no:cacheprovider",
                           "--relconsole-all"], cwd=demo_repo, env=_env(), capture_output=True,
                          text=True, timeout=300, check=False)
    assert proc.returncode == 4
    assert "--relconsole-all needs --relconsole" in proc.stdout + proc.stderr


def test_bad_today_is_a_usage_error(demo_repo, tmp_path):
    run = run_pytest(demo_repo, tmp_path, "--relconsole-today", "2026-02-30")
    assert run.code == 4 and "is not a YYYY-MM-DD date" in run.out


def test_relconsole_raises_no_warning_under_w_error(demo_repo, tmp_path):
    """An honest patch's suite run with -W error must not fail on relconsole's own warnings
    (the blob reader left its stdout pipe open: ResourceWarning: unclosed file)."""
    git(demo_repo, "checkout", "-q", "-b", "honest", "main")
    (demo_repo / "tests" / "test_more.py").write_text("def test_more():\n    assert 1 + 1 == 2\n")
    git(demo_repo, "add", "tests/test_more.py")
    git(demo_repo, "commit", "-q", "-m", "test: one more")
    run = run_pytest(demo_repo, tmp_path, "-W", "error", "-W", "ignore::pytest.PytestDeprecationWarning",
                     "-W", "ignore::DeprecationWarning", "--relconsole-report-only")
    assert run.code == 0 and "Warning" not in run.out, run.out


def test_the_patch_cannot_waive_the_gate_through_addopts(demo_repo, tmp_path):
    """A patch that adds ``addopts = "--relconsole-report-only"`` to its pyproject.toml would turn
    the gate off for itself: only the command line may waive it."""
    git(demo_repo, "checkout", "-q", "-b", "honest", "main")
    (demo_repo / "tests" / "test_totals.py").write_text(git(demo_repo, "show", "agent/patch:tests/test_totals.py"))
    pyproject = demo_repo / "pyproject.toml"
    text = pyproject.read_text()
    pyproject.write_text(text.replace("[tool.pytest.ini_options]\n",
                                      '[tool.pytest.ini_options]\naddopts = "--relconsole-report-only"\n'))
    assert pyproject.read_text() != text
    git(demo_repo, "add", "-A")
    git(demo_repo, "commit", "-q", "-m", "test: pin the totals, and quiet the gate")
    run = run_pytest(demo_repo, tmp_path)
    assert run.results["decision"] == "reject" and run.code == 1, run.out
    assert "ignored" in run.out


@pytest.mark.parametrize("addopts", ["--relconsole-base HEAD", "--co", "--relconsole-today 2031-01-01"])
def test_the_patch_cannot_set_the_gates_options_through_addopts(demo_repo, tmp_path, addopts):
    """Red team: addopts in the patch's pytest.ini read the oracle from the patch itself
    (decision pass) or collected only (exit 0, no decision)."""
    (demo_repo / "pytest.ini").write_text(f"[pytest]\npythonpath = src\naddopts = {addopts}\n")
    git(demo_repo, "add", "pytest.ini")
    git(demo_repo, "commit", "-q", "-m", "test: configure pytest")
    run = run_pytest(demo_repo, tmp_path)
    assert run.code == 4 and "came from the configuration" in run.out, run.out


INTERMITTENT = "bands.repeat_scans"


def test_under_xdist_relations_run_once_and_the_results_file_is_complete(demo_repo, tmp_path):
    """``pytest -n 2``: each worker collects the relation items; the controller runs every
    relation once and writes the whole file, the same verdicts and decision as one process."""
    pytest.importorskip("xdist")
    add_flaky_test(demo_repo)
    single = run_pytest(demo_repo, tmp_path / "single", FLAKY_COUNTER=str(tmp_path / "single.count"))
    spread = run_pytest(demo_repo, tmp_path / "spread", "-n", "2", FLAKY_COUNTER=str(tmp_path / "spread.count"))
    assert spread.results is not None, spread.out
    # the sample's bands.repeat_scans misses on about one drawn seed in 360,000, by design
    # (the tour's intermittent miss): two runs may differ there, and only there
    steady = lambda r: r["relation_id"] != INTERMITTENT  # noqa: E731
    verdicts = lambda run: {(r["relation_id"], r["decision"], r["reason"])  # noqa: E731
                            for r in run.results["relations"] if steady(r)}
    assert verdicts(spread) == verdicts(single) and verdicts(single)
    for run in (single, spread):
        assert {(r["decision"], r["reason"]) for r in run.results["relations"] if not steady(r)} <= {
            ("pass", "held"), ("reject", "property_fail")}
    assert spread.results["not_run"] == [] and spread.results["tests"], spread.out
    assert {t["test_id"] for t in spread.results["tests"]} == {t["test_id"] for t in single.results["tests"]}
    for key in ("decision", "reason", "row", "gaps"):
        assert spread.results[key] == single.results[key], key
    assert spread.code == single.code != 0
    cases = [c.get("name") for c in spread.junit.iter("testcase") if c.get("classname") == "relconsole"]
    assert sorted(cases) == sorted(r["relation_id"] for r in single.results["relations"])  # once each
    for relation in spread.results["relations"]:
        case = spread.case("relconsole", relation["relation_id"])
        assert (case.find("failure") is None) == (relation["decision"] in ("pass", "freeze"))
