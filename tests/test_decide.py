"""The §8 decision table over replay sheets: ``decide``, ``relconsole decide`` and fencing (§5)."""

from __future__ import annotations

import copy
import datetime as dt
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relconsole.engine.decision import ORDER, ROWS, decide, worst
from relconsole.engine.errors import BadInputError
from relconsole.engine.gate.sheets import Fences, decide_sheets, fence, load_sheets, manifest_name, write_decision

ROOT = Path(__file__).resolve().parents[1]
SIG = "sha256:" + "ab" * 32
OTHER_SIG = "sha256:" + "cd" * 32
STORE_FILE = Path(tempfile.gettempdir()) / f"relconsole-test-decide-{os.getpid()}" / "leases.sqlite3"
STORE = f"sqlite://{STORE_FILE}"  # a real store where workspace pr-42 is at generation 7


@pytest.fixture(autouse=True, scope="module")
def _store_at_generation_7():
    """The store the sheets name, with workspace pr-42's counter at 7 (a store that counted
    acquisitions before generations became clock-based; the next one jumps past the clock)."""
    import sqlite3

    from relconsole.engine.gate.wslease.wslease import open_store
    STORE_FILE.parent.mkdir(parents=True, exist_ok=True)
    STORE_FILE.unlink(missing_ok=True)
    open_store(STORE, ".").close()  # creates the tables
    with sqlite3.connect(STORE_FILE) as db:
        db.execute("INSERT INTO generations VALUES ('pr-42', 7)")
    store = open_store(STORE, ".")
    assert store.generation("pr-42") == 7
    store.close()
    yield

# A sheet for which row 8 (freeze) fires: an intermittent miss that base shows too.
FREEZE_SHEET = {
    "test_id": "penguins.order_invariant", "property_result": "pass",
    "fixture_pin": {"state": "match", "path": "oracle/data/penguins.csv",
                    "expected": "sha256:" + "11" * 32, "actual": "sha256:" + "11" * 32},
    "lease": {"id": "9f3c", "holder": "ci@worker-1", "state": "fresh", "workspace": "pr-42",
              "generation": 7, "store": STORE},
    "signature": SIG, "base_signature": SIG, "predicate_state": "active",
    "expires_at": "2026-12-14", "freeze_allowed": True,
    "runs": {"head": {"commit": "a" * 40, "runs": 5, "misses": 2},
             "base": {"commit": "b" * 40, "runs": 5, "misses": 1}},
    "evidence": {}, "shard": "1/2", "created_at": "2026-11-30T08:00:00+00:00", "relconsole_sheet": 1,
}


def varied(**changes) -> dict:
    """FREEZE_SHEET with top-level keys replaced (``None`` values stay None) or, for the
    ``DELETE`` marker, removed; ``lease``/``fixture_pin`` dict changes are merged."""
    sheet = copy.deepcopy(FREEZE_SHEET)
    for key, value in changes.items():
        if value is DELETE:
            sheet.pop(key, None)
        elif key in ("lease", "fixture_pin") and isinstance(value, dict):
            sheet[key] = {**sheet[key], **value}
        else:
            sheet[key] = value
    return sheet


DELETE = object()

ROW_SHEETS = [
    (1, varied(test_id=DELETE), "test_id"),
    (2, varied(lease={"state": "stale"}), "stale"),
    (3, varied(property_result="fail"), ""),
    (4, varied(fixture_pin={"state": "mismatch"}), ""),
    (5, varied(predicate_state="quarantine"), ""),
    (6, varied(base_signature="none"), "none"),
    (7, varied(expires_at=None), ""),
    (8, varied(), ""),
]


@pytest.mark.parametrize(("row", "sheet", "detail"), ROW_SHEETS, ids=[f"row{r}" for r, *_ in ROW_SHEETS])
def test_each_row_fires_on_its_sheet(row, sheet, detail):
    decision = decide(sheet)
    assert (decision.row, decision.decision, decision.reason) == (row, *ROWS[row][:2])
    assert detail in decision.detail


def test_freeze_carries_lease_signature_expiry_and_test_id():
    decision = decide(varied())
    assert decision.fields == {"lease_id": "9f3c", "signature": SIG, "expires_at": "2026-12-14",
                               "test_id": "penguins.order_invariant"}
    assert decision.relation_id == "penguins.order_invariant" and decision.exit_code == 0


@pytest.mark.parametrize("flag", [False, "false", 0])
def test_freeze_not_allowed_turns_row_8_into_reject(flag):
    decision = decide(varied(freeze_allowed=flag))
    assert (decision.row, decision.decision, decision.reason) == (8, "reject", "freeze_not_allowed")
    assert decision.fields == {} and decision.exit_code == 1


@pytest.mark.parametrize("flag", [True, None, DELETE])
def test_missing_freeze_allowed_means_allowed(flag):
    assert decide(varied(freeze_allowed=flag)).decision == "freeze"


def test_the_policy_argument_forbids_too():
    assert decide(varied(), freeze_allowed=False).reason == "freeze_not_allowed"


@pytest.mark.parametrize(("change", "named"), [
    ({"lease": "9f3c"}, "lease (not a mapping)"),
    ({"fixture_pin": "match"}, "fixture_pin (not a mapping)"),
    ({"fixture_pin": {"path": "x"}}, "fixture_pin.state"),
    ({"property_result": "flaky"}, "property_result"),
    ({"signature": ""}, "signature"),
    ({"base_signature": None}, "base_signature"),
    ({"base_signature": DELETE}, "base_signature"),
    ({"test_id": "   "}, "test_id"),
    ({"signature": 12}, "signature (not a string)"),
])
def test_missing_or_malformed_required_field_is_row_1(change, named):
    sheet = copy.deepcopy(FREEZE_SHEET)
    for key, value in change.items():
        if value is DELETE:
            del sheet[key]
        else:
            sheet[key] = value
    decision = decide(sheet)
    assert (decision.row, decision.decision, decision.reason) == (1, "abort", "missing_fields")
    assert named in decision.detail


def test_row_1_lists_every_missing_field():
    decision = decide({"test_id": "x", "lease": {}})
    assert decision.detail == "property_result, fixture_pin, signature, base_signature"


def test_a_sheet_that_is_not_a_mapping_lacks_every_field():
    assert decide([]).row == 1


# --- hypothesis: exactly one row fires, and it is the first whose condition holds ---------------

ABSENT = "<absent>"


def _blank(value) -> bool:
    return value is None or (isinstance(value, str) and value.strip() == "")


def _required_missing(s: dict) -> bool:
    """§8 row 1 restated: a required field absent, None or blank, or malformed."""
    for key in ("test_id", "property_result", "fixture_pin", "lease", "signature", "base_signature"):
        if _blank(s.get(key)):
            return True
    return (not isinstance(s["lease"], dict) or not isinstance(s["fixture_pin"], dict)
            or s["fixture_pin"].get("state") not in ("match", "mismatch")
            or s["property_result"] not in ("fail", "pass")
            or not all(isinstance(s[k], str) for k in ("test_id", "signature", "base_signature")))


def _no_expiry(s: dict) -> bool:
    try:
        dt.date.fromisoformat(s["expires_at"][:10])
    except (KeyError, TypeError, ValueError):
        return True
    return False


# Each row of §8 as (row, decision, reason, condition), in table order.
TABLE = [
    (1, "abort", "missing_fields", _required_missing),
    (2, "abort", "lease_not_fresh", lambda s: _blank(s["lease"].get("id")) or s["lease"].get("state") != "fresh"),
    (3, "reject", "property_fail", lambda s: s["property_result"] == "fail"),
    (4, "reject", "fixture_drift", lambda s: s["fixture_pin"]["state"] == "mismatch"),
    (5, "hold", "second_replay_required", lambda s: s.get("predicate_state") == "quarantine"),
    (6, "reject", "miss_not_on_base", lambda s: s["signature"] != s["base_signature"]),
    (7, "abort", "freeze_missing_expiry", _no_expiry),
    (8, "reject", "freeze_not_allowed", lambda s: s.get("freeze_allowed", True) not in (True, None)),
    (8, "freeze", "intermittent_on_base", lambda s: True),
]


def maybe(valid, invalid=()):
    """A field value: mostly one of ``valid``; one time in 16 absent, None, blank or ``invalid``."""
    bad = st.sampled_from([ABSENT, None, "", *invalid])
    return st.integers(0, 15).flatmap(lambda n: bad if n == 0 else st.sampled_from(valid))


def present(d: dict) -> dict:
    return {k: v for k, v in d.items() if v is not ABSENT}


leases = st.fixed_dictionaries({
    "id": st.sampled_from(["9f3c"] * 12 + [ABSENT, None, "", " "]),
    "state": st.sampled_from(["fresh"] * 12 + [ABSENT, None, "", "stale", "missing"])}).map(present)
sheets = st.fixed_dictionaries({
    "test_id": maybe(["a.rel", "b.rel"], [7]),
    "property_result": maybe(["pass", "pass", "fail"], ["flaky"]),
    "fixture_pin": maybe([{"state": "match"}] * 3 + [{"state": "mismatch"}], ["match", {}, {"state": None}]),
    "lease": st.integers(0, 15).flatmap(lambda n: st.sampled_from([ABSENT, None, "", "x", ["id"]]) if n == 0
                                        else leases),
    "signature": maybe([SIG, SIG, OTHER_SIG]),
    "base_signature": maybe([SIG, SIG, OTHER_SIG, "none"]),
    "predicate_state": st.sampled_from([ABSENT, None, "active", "active", "quarantine"]),
    "expires_at": st.sampled_from([ABSENT, None, "", "2026-12-14", "2026-12-14", "2026-12-14T00:00:00Z",
                                   "soon", 20261214]),
    "freeze_allowed": st.sampled_from([ABSENT, None, True, True, False, "false", ""]),
}).map(present)


@settings(max_examples=600, deadline=None)
@given(sheets)
def test_exactly_the_first_holding_row_fires(sheet):
    decision = decide(copy.deepcopy(sheet))
    first = next(entry for entry in TABLE if entry[3](sheet))
    assert (decision.row, decision.decision, decision.reason) == first[:3]
    assert (decision.decision == "freeze") == bool(decision.fields)


@settings(max_examples=200, deadline=None)
@given(st.lists(sheets, max_size=6))
def test_overall_is_the_worst_by_order(batch):
    decisions = [decide(s) for s in batch]
    overall = worst(decisions)
    if not decisions:
        assert overall.decision == "pass"
    else:
        assert overall.decision == max((d.decision for d in decisions), key=ORDER.index)
        assert ORDER.index(overall.decision) >= max(ORDER.index(d.decision) for d in decisions)


# --- sheets on disk --------------------------------------------------------------------------------

def write_manifest(directory: Path, index: int = 1, total: int = 1, head: str = "a" * 40) -> Path:
    """What replay writes beside its sheets: its shard and every sheet it wrote (here: all in ``directory``)."""
    directory.mkdir(parents=True, exist_ok=True)
    names = sorted(json.loads(p.read_text()).get("test_id") for p in directory.glob("*.sheet.json")
                   if isinstance(json.loads(p.read_text()), dict))
    path = directory / manifest_name(index, total)
    path.write_text(json.dumps({"shard_index": index, "shard_total": total, "head": head,
                                "sheets": [n for n in names if isinstance(n, str)]}))
    return path


def write_sheet(directory: Path, sheet: dict, name: str | None = None) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name or sheet.get('test_id', 'anon')}.sheet.json"
    path.write_text(json.dumps(sheet))
    write_manifest(directory)
    return path


def test_decision_json_is_written_atomically_and_carries_freeze_fields(tmp_path):
    write_sheet(tmp_path, varied())
    write_sheet(tmp_path, varied(test_id="penguins.split_merge", base_signature="none"))
    report = decide_sheets(tmp_path)
    written = write_decision(report, tmp_path)
    data = json.loads(written.read_text())
    assert written.name == "decision.json" and not list(tmp_path.glob(".*.tmp"))
    assert (data["decision"], data["reason"], data["row"], data["exit_code"]) == ("reject", "miss_not_on_base", 6, 1)
    by_id = {r["test_id"]: r for r in data["relations"]}
    assert by_id["penguins.order_invariant"]["fields"] == {
        "lease_id": "9f3c", "signature": SIG, "expires_at": "2026-12-14", "test_id": "penguins.order_invariant"}
    assert by_id["penguins.order_invariant"]["sheet"].endswith("penguins.order_invariant.sheet.json")
    assert by_id["penguins.split_merge"]["row"] == 6
    assert load_sheets(tmp_path)  # decision.json itself is not taken for a sheet
    assert len(decide_sheets(tmp_path).per_sheet) == 2


def test_no_sheets_with_a_manifest_is_a_pass(tmp_path):
    write_manifest(tmp_path)
    report = decide_sheets(tmp_path)
    assert (report.overall.decision, report.overall.reason, report.exit_code) == ("pass", "no_missed_relations", 0)
    assert report.to_json()["relations"] == []


def test_no_sheets_and_no_manifest_is_an_abort_not_a_pass(tmp_path):
    """Artifacts that never arrived must not read as "nothing missed"."""
    report = decide_sheets(tmp_path)
    assert (report.overall.decision, report.overall.reason, report.exit_code) == ("abort", "incomplete_evidence", 3)
    assert "manifest" in report.overall.detail


def test_a_missing_shard_or_sheet_is_an_abort(tmp_path):
    write_sheet(tmp_path / "s1", varied())
    (tmp_path / "s1" / manifest_name(1, 1)).unlink()
    write_manifest(tmp_path / "s1", 1, 3)
    write_manifest(tmp_path / "s3", 3, 3)
    report = decide_sheets(tmp_path)
    assert report.overall.reason == "incomplete_evidence" and "2/3" in report.overall.detail
    write_manifest(tmp_path / "s2", 2, 3)
    assert decide_sheets(tmp_path).overall.decision == "freeze"
    (tmp_path / "s1" / "penguins.order_invariant.sheet.json").unlink()
    report = decide_sheets(tmp_path)
    assert report.overall.reason == "incomplete_evidence" and "penguins.order_invariant" in report.overall.detail


@pytest.mark.parametrize(("text", "line"), [('{\n"test_id": "x",\n oops}', 3), ("[1, 2]", 1)])
def test_a_bad_sheet_is_exit_5_naming_file_and_line(tmp_path, text, line):
    (tmp_path / "sub").mkdir()
    bad = tmp_path / "sub" / "x.sheet.json"
    bad.write_text(text)
    with pytest.raises(BadInputError) as caught:
        load_sheets(tmp_path)
    assert caught.value.exit_code == 5 and caught.value.path == str(bad) and caught.value.line == line


def test_two_shard_folders_decide_like_one_folder(tmp_path):
    sheets = [varied(test_id=f"rel.{n}", **change) for n, change in enumerate(
        [{}, {"predicate_state": "quarantine"}, {"property_result": "fail"}, {"expires_at": "2027-01-01"}])]
    for n, sheet in enumerate(sheets):
        write_sheet(tmp_path / "sharded" / f"replay-{n % 2 + 1}-of-2" / "sheets", sheet)
        write_sheet(tmp_path / "flat", sheet)
    sharded, flat = decide_sheets(tmp_path / "sharded"), decide_sheets(tmp_path / "flat")
    assert sharded.overall.decision == flat.overall.decision == "reject"
    summary = lambda r: sorted((d.relation_id, d.row, d.decision) for _, d in r.per_sheet)  # noqa: E731
    assert summary(sharded) == summary(flat) and len(sharded.per_sheet) == 4


def test_a_relation_replayed_by_two_shards_keeps_the_worst(tmp_path):
    write_sheet(tmp_path / "s1", varied())
    write_sheet(tmp_path / "s2", varied(base_signature="none"))
    report = decide_sheets(tmp_path)
    [(path, decision)] = report.per_sheet
    assert decision.decision == "reject" and "s2" in path
    assert "2 sheets for this relation" in decision.detail and "freeze" in decision.detail


# --- fencing (§5) ----------------------------------------------------------------------------------

def test_fence_keeps_a_current_generation():
    fenced = fence(varied(), lambda ws: 7)
    assert fenced["lease"]["state"] == "fresh" and "current" in fenced["lease"]["fence"]
    assert decide(fenced).decision == "freeze"


def test_fence_makes_a_superseded_generation_stale_without_touching_the_input():
    sheet = varied()
    fenced = fence(sheet, lambda ws: 8 if ws == "pr-42" else 7)
    assert sheet["lease"]["state"] == "fresh" and "fence" not in sheet["lease"]
    assert fenced["lease"]["state"] == "stale" and "superseded by 8" in fenced["lease"]["fence"]
    decision = decide(fenced)
    assert (decision.row, decision.reason) == (2, "lease_not_fresh") and "superseded" in decision.detail


def test_fence_fails_closed_when_the_store_is_unreachable():
    def unreachable(_ws):
        raise ConnectionError("redis down")
    fenced = fence(varied(), unreachable)
    assert fenced["lease"]["state"] == "stale" and "unreachable" in fenced["lease"]["fence"]


def test_fence_without_a_recorded_generation_is_stale_and_none_means_no_check():
    sheet = varied()
    del sheet["lease"]["generation"]
    assert fence(sheet, lambda ws: 7)["lease"]["state"] == "stale"
    assert fence(sheet, None) == sheet


def test_decide_sheets_fences_only_the_named_store(tmp_path):
    write_sheet(tmp_path, varied())
    write_sheet(tmp_path, varied(test_id="other.rel", lease={"store": "redis://elsewhere:6379/0"}))
    report = decide_sheets(tmp_path, lambda ws: 99, fence_store=STORE)
    rows = {d.relation_id: d.row for _, d in report.per_sheet}
    assert rows == {"penguins.order_invariant": 2, "other.rel": 8}


def test_fences_ask_the_store_each_sheet_names(tmp_path):
    fences = Fences()
    try:
        assert fences.for_lease({"store": STORE})("pr-42") == 7
        write_sheet(tmp_path, varied())
        assert decide_sheets(tmp_path, fences=fences).overall.decision == "freeze"
        write_sheet(tmp_path, varied(lease={"generation": 6}))
        assert decide_sheets(tmp_path, fences=fences).overall.reason == "lease_not_fresh"
    finally:
        fences.close()


@pytest.mark.parametrize("store", [None, "", "sqlite:///no/such/dir/leases.sqlite3", "redis://127.0.0.1:1/0"])
def test_evidence_that_cannot_be_checked_is_stale(tmp_path, store):
    write_sheet(tmp_path, varied(lease={"store": store}))
    fences = Fences()
    try:
        report = decide_sheets(tmp_path, fences=fences)
    finally:
        fences.close()
    assert (report.overall.decision, report.overall.row) == ("abort", 2)
    assert not Path("/no/such/dir").exists()  # decide never creates a store


def test_fences_use_the_configured_url_for_a_store_recorded_without_its_password(tmp_path):
    recorded = "redis://127.0.0.1:1/0?password=***"
    fences = Fences(env="redis://127.0.0.1:1/0?password=s3cret")
    assert fences._recorded(recorded) == "redis://127.0.0.1:1/0?password=s3cret"
    assert Fences(override=STORE).for_lease({"store": recorded})("pr-42") == 7


def test_cli_decide_fences_against_the_repositorys_lease_store(tmp_path):
    wslease = pytest.importorskip("relconsole.engine.gate.wslease.wslease")
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    store = wslease.open_store(None, repo / ".git")
    try:
        lease = store.acquire("pr-42", "ci@worker-1", 600)
        sheet = varied(lease={"id": lease.id, "generation": lease.generation, "store": store.url})
        write_sheet(tmp_path / "sheets", sheet)
        assert relconsole_cli("decide", "--sheet", str(tmp_path / "sheets"), cwd=repo).returncode == 0
        store.release("pr-42", "ci@worker-1")
        store.acquire("pr-42", "ci@worker-2", 600)  # a new holder: the generation moves on
    finally:
        store.close()
    proc = relconsole_cli("decide", "--sheet", str(tmp_path / "sheets"), "--json", cwd=repo)
    payload = json.loads(proc.stdout)
    assert proc.returncode == 3 and payload["row"] == 2 and "superseded" in payload["relations"][0]["detail"]


def test_cli_decide_does_not_create_a_lease_store(tmp_path):
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    write_sheet(tmp_path / "sheets", varied())
    assert relconsole_cli("decide", "--sheet", str(tmp_path / "sheets"), cwd=repo).returncode == 0
    assert not list((repo / ".git" / "relconsole").glob("*.sqlite3"))


# --- the CLI, in a subprocess -------------------------------------------------------------------

def relconsole_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """``relconsole ARGS`` in a subprocess, with no lease store configured by the environment."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    env.pop("RELCONSOLE_LEASE_URL", None)
    return subprocess.run([sys.executable, "-m", "relconsole", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(("change", "code", "word"), [
    ({}, 0, "freeze"),
    ({"property_result": "fail"}, 1, "reject"),
    ({"lease": {"state": "stale"}}, 3, "abort"),
    ({"predicate_state": "quarantine"}, 4, "hold"),
])
def test_cli_decide_exit_codes(tmp_path, change, code, word):
    sheet = write_sheet(tmp_path / "sheets", varied(**change))
    proc = relconsole_cli("decide", "--sheet", str(sheet), cwd=tmp_path)
    assert proc.returncode == code, proc.stderr
    lines = proc.stdout.strip().splitlines()
    first, last = lines[0], lines[-1]
    assert str(sheet) in first  # the sheet is named
    assert first.startswith("row ") and word in first and "penguins.order_invariant" in first
    assert last.startswith(f"decision: {word}")
    assert json.loads((tmp_path / "sheets" / "decision.json").read_text())["exit_code"] == code


def test_cli_decide_bad_sheet_is_exit_5_and_usage_is_64(tmp_path):
    (tmp_path / "x.sheet.json").write_text("{\n  nope\n}")
    proc = relconsole_cli("decide", "--sheet", str(tmp_path), cwd=tmp_path)
    assert proc.returncode == 5 and "x.sheet.json:2" in proc.stderr
    assert relconsole_cli("decide", cwd=tmp_path).returncode == 64


def test_cli_decide_json_and_out_directory(tmp_path):
    write_sheet(tmp_path / "a" / "shard1", varied())
    write_sheet(tmp_path / "a" / "shard2", varied(test_id="rel.two", expires_at=None))
    proc = relconsole_cli("decide", "--sheet", str(tmp_path / "a"), "--json", "--out", str(tmp_path / "out"),
                          cwd=tmp_path)
    payload = json.loads(proc.stdout)
    assert proc.returncode == 3 and payload["reason"] == "freeze_missing_expiry"
    assert payload["decision_file"] == str(tmp_path / "out" / "decision.json")
    assert payload["history_recorded"] is None  # not in a repository: no history, no error
    assert json.loads((tmp_path / "out" / "decision.json").read_text())["row"] == 7


def test_cli_decide_on_an_empty_directory_aborts_and_says_why(tmp_path):
    proc = relconsole_cli("decide", "--sheet", str(tmp_path), cwd=tmp_path)
    assert proc.returncode == 3 and "incomplete_evidence" in proc.stdout and "manifest" in proc.stdout


def test_a_sheet_no_manifest_lists_is_an_abort(tmp_path):
    write_sheet(tmp_path, varied())
    (tmp_path / "stray.sheet.json").write_text(json.dumps(varied(test_id="stray.rel")))
    report = decide_sheets(tmp_path)
    assert report.overall.reason == "incomplete_evidence" and "stray.rel" in report.overall.detail


def test_a_malformed_manifest_is_a_bad_file(tmp_path):
    (tmp_path / manifest_name(1, 2)).write_text(json.dumps({"shard_index": 3, "shard_total": 2, "sheets": []}))
    with pytest.raises(BadInputError):
        decide_sheets(tmp_path)


@pytest.mark.parametrize("variable", ["GIT_DIR", "GIT_COMMON_DIR"])
def test_the_store_and_history_folder_is_the_repository_s_whatever_git_dir_is_exported(tmp_path, monkeypatch, variable):
    """decide, stats and gate keep fences and gate history in the repository's git directory;
    an exported GIT_DIR (a decoy with its own lease store) must not move them."""
    import subprocess

    from relconsole.cli.decide import git_dir_of
    repos = {}
    for name in ("reviewed", "decoy"):
        repos[name] = tmp_path / name
        subprocess.run(["git", "init", "-q", str(repos[name])], check=True, env={"PATH": os.environ["PATH"]})
    monkeypatch.setenv(variable, str(repos["decoy"] / ".git"))
    assert git_dir_of(str(repos["reviewed"])) == (repos["reviewed"] / ".git").resolve()
