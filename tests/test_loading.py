"""Loading the oracle of a real repository: malformed files, the base-ref oracle, git edges.

Every broken file is committed onto ``main`` of a materialised demo repository (the base
ref the oracle is read from, SPEC §2) and observed through ``relconsole.cli.main`` as a
reviewer or CI would: exit code 5 and one message naming ``file:line`` (§8). The line
expected is found in the broken text itself (the line we edited), never copied from a
run. The rest checks the oracle-from-base rule end to end (§2), the coverage gap (§3),
the counted freeze in ``run`` (§6, §7) and the git situations CI produces (detached
HEAD, shallow clone, unrelated histories).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import relconsole.cli.main as cli
from relconsole.engine.demo import materialise
from relconsole.engine.errors import EXIT_ABORT, EXIT_BAD_INPUT, EXIT_GAP, EXIT_PASS, EXIT_REJECT, BadInputError
from relconsole.engine.oracle.leases import parse_lease
from relconsole.engine.gate.review import load_review

PROJECT = Path(__file__).resolve().parents[1]
TODAY = dt.date(2031, 5, 17)  # far from the real date: only the injected today can be right
CATALOG = "oracle/catalog.yaml"
FREEZES = "oracle/freezes.json"
PINS = "oracle/pins.json"
STOCKS_LEASE = "oracle/leases/stocks.yaml"


# --- helpers ---------------------------------------------------------------------------

def git(root: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    """Run git in ``root`` hermetically (no GIT_* from outside, no user config)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1")
    return subprocess.run(["git", "-c", "user.name=Test Keeper", "-c", "user.email=keeper@example.com",
                           "-c", "commit.gpgsign=false", *args],
                          cwd=root, env=env, check=check, capture_output=True, text=True)


def show(root: Path, ref: str, path: str) -> str:
    return git(root, "show", f"{ref}:{path}").stdout


def commit_on(root: Path, branch: str, changes: dict[str, str | None], message: str) -> None:
    """Commit ``changes`` (path -> text, None deletes) onto ``branch``, then return to HEAD."""
    previous = git(root, "rev-parse", "--abbrev-ref", "HEAD").stdout.strip()
    previous = previous if previous != "HEAD" else git(root, "rev-parse", "HEAD").stdout.strip()
    git(root, "checkout", "-q", branch)
    for path, text in changes.items():
        target = root / path
        if text is None:
            target.unlink()
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(text.encode("utf-8"))
    git(root, "add", "-A")
    git(root, "commit", "-q", "--no-verify", "-m", message)
    git(root, "checkout", "-q", previous)


def break_on_main(root: Path, path: str, edit) -> str:
    """Commit ``edit(text)`` of ``path`` onto main; returns the broken text."""
    text = edit(show(root, "main", path))
    commit_on(root, "main", {path: text}, f"break {path}")
    return text


def line_of(text: str, needle: str, occurrence: int = 1) -> int:
    """1-based line of the ``occurrence``-th line containing ``needle``."""
    hits = [n for n, line in enumerate(text.split("\n"), 1) if needle in line]
    assert len(hits) >= occurrence, f"{needle!r} not in the edited text"
    return hits[occurrence - 1]


def lines_with(text: str, needle: str) -> list[int]:
    return [n for n, line in enumerate(text.split("\n"), 1) if needle in line]


def replace_once(text: str, old: str, new: str) -> str:
    assert text.count(old) >= 1, f"{old!r} not found"
    return text.replace(old, new, 1)


def run_cli(capsys, *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = cli.main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def base_args(root: Path) -> list[str]:
    return ["--repo", str(root), "--today", TODAY.isoformat()]


@pytest.fixture(autouse=True)
def _workers_find_relconsole(monkeypatch):
    """Relation workers are child processes: they must import this checkout."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(PROJECT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    monkeypatch.delenv("RELCONSOLE_TODAY", raising=False)


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> Path:
    return materialise(tmp_path_factory.mktemp("pristine") / "demo", TODAY)


@pytest.fixture
def demo(pristine, tmp_path) -> Path:
    """A private copy of the demo repository (agent/patch checked out)."""
    root = tmp_path / "demo"
    shutil.copytree(pristine, root, symlinks=True)
    return root


# --- malformed oracle files: exit 5, file and line -------------------------------------

def _bomb(levels: int = 9, width: int = 10) -> str:
    lines = ["a0: &a0 [" + ", ".join(["x"] * width) + "]"]
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]")
    return "\n".join(lines) + "\n"


# Each case: file, edit(text) -> broken text, expected_line(broken text) -> line, words the
# message must carry (the offending key or rule).
CASES = {
    "yaml_syntax": (
        CATALOG,
        lambda t: replace_once(t, "    owner: platform-team", "    owner: platform: team"),
        lambda t: line_of(t, "owner: platform: team"),
        ["YAML"]),
    "line_separator_in_a_quoted_statement": (
        CATALOG,
        lambda t: replace_once(replace_once(t, "statement: Shuffling the penguin rows",
                                            'statement: "Shuffling\u2028\x85the penguin rows'),
                               "exactly unchanged.", 'exactly unchanged."').replace(
            "    kind: roundtrip\n", "    kind: roundtrip\n    tolerance_hint: 3\n", 1),
        lambda t: line_of(t, "tolerance_hint: 3"),
        ["tolerance_hint"]),
    "missing_subject": (
        CATALOG,
        lambda t: replace_once(t, "    subject: rollout:admitted\n", ""),
        lambda t: line_of(t, "- id: rollout.monotonic"),
        ["subject"]),
    "wrong_type": (
        CATALOG,
        lambda t: replace_once(t, "params: {shuffles: 6, seed: 7}", "params: [6, 7]"),
        lambda t: line_of(t, "params: [6, 7]"),
        ["params"]),
    "unquoted_date_statement": (
        CATALOG,
        lambda t: re.sub(r"statement: Decoding .*", "statement: 2026-01-01", t, count=1),
        lambda t: line_of(t, "statement: 2026-01-01"),
        ["statement", "date"]),
    "unquoted_date_lease_owner": (
        STOCKS_LEASE,
        lambda t: re.sub(r"(?m)^owner: .*$", "owner: 2026-01-01", t, count=1),
        lambda t: line_of(t, "owner: 2026-01-01"),
        ["owner"]),
    "impossible_unquoted_date": (
        STOCKS_LEASE,
        lambda t: re.sub(r"(?m)^expires: .*$", "expires: 2031-02-30", t, count=1),
        lambda t: line_of(t, "expires: 2031-02-30"),
        ["2031-02-30"]),
    "digest_all_digits": (
        STOCKS_LEASE,
        lambda t: re.sub(r"(?m)^sha256: .*$", "sha256: " + "1234567890" * 6 + "1234", t, count=1),
        lambda t: line_of(t, "sha256: "),
        ["sha256"]),
    "digest_octal_digits": (
        STOCKS_LEASE,
        lambda t: re.sub(r"(?m)^sha256: .*$", "sha256: 0" + "1234567" * 9, t, count=1),
        lambda t: line_of(t, "sha256: "),
        ["sha256"]),
    "duplicate_key": (
        CATALOG,
        lambda t: replace_once(t, "    kind: roundtrip\n", "    kind: roundtrip\n    compare: tolerance\n"),
        lambda t: next(n for n in lines_with(t, "compare:") if n > line_of(t, "compare: tolerance")),
        ["compare"]),
    "several_documents": (
        CATALOG,
        lambda t: t + "---\nrelations: []\n",
        lambda t: line_of(t, "---"),
        ["document"]),
    "unknown_relation_field": (
        CATALOG,
        lambda t: replace_once(t, "    kind: roundtrip\n", "    kind: roundtrip\n    tolerance_hint: 3\n"),
        lambda t: line_of(t, "tolerance_hint: 3"),
        ["tolerance_hint"]),
    "owners_undefined_relation": (
        CATALOG,
        lambda t: replace_once(t, '"README.md": []', '"README.md": [nope.relation]'),
        lambda t: line_of(t, "nope.relation"),
        ["nope.relation"]),
    "freeze_skip": (
        FREEZES,
        lambda t: replace_once(t, '"reruns": 3,', '"reruns": 3,\n    "skip": true,'),
        None,  # a line within the row that holds "skip"
        ["skip"]),
    "freeze_pass_needed_over_reruns": (
        FREEZES,
        lambda t: replace_once(t, '"pass_needed": 3,', '"pass_needed": 4,'),
        None,
        ["pass_needed"]),
    "pins_bad_json": (
        PINS,
        lambda t: replace_once(t, '"oracle/data/stocks.csv": "sha256:', '"oracle/data/stocks.csv": sha256:'),
        lambda t: line_of(t, '"oracle/data/stocks.csv": sha256:'),
        ["JSON"]),
    "pins_bad_value": (
        PINS,
        lambda t: replace_once(t, '"oracle/data/penguins.csv": "sha256:', '"oracle/data/penguins.csv": "md5:'),
        lambda t: line_of(t, '"oracle/data/penguins.csv"'),
        ["oracle/data/penguins.csv"]),
    **{f"shuffles_{name}": (  # red team: a non-count crashed run (int(inf)) or was taken as a count
        CATALOG,
        lambda t, value=value: replace_once(t, "params: {shuffles: 6, seed: 7}", f"params: {{shuffles: {value}, seed: 7}}"),
        lambda t, value=value: line_of(t, f"shuffles: {value}"),
        ["shuffles"]) for name, value in (("inf", ".inf"), ("nan", ".nan"), ("huge_float", "1e400"),
                                          ("octal_text", "0o7"), ("bool", "true"), ("text", "'6'"))},
}


def _row_span(text: str, needle: str) -> range:
    """Lines of the JSON row (``{`` .. ``}``) that contains ``needle``."""
    lines = text.split("\n")
    at = line_of(text, needle)
    start = max(n for n in range(1, at + 1) if lines[n - 1].strip().startswith("{"))
    end = min(n for n in range(at, len(lines) + 1) if lines[n - 1].strip().startswith("}"))
    return range(start, end + 1)


@pytest.mark.parametrize("case", sorted(CASES))
def test_malformed_file_is_exit_5_naming_file_and_line(case, demo, capsys):
    path, edit, expected_line, words = CASES[case]
    broken = break_on_main(demo, path, edit)
    if expected_line is not None:
        allowed = {expected_line(broken)}
    else:
        needle = {"freeze_skip": '"skip"', "freeze_pass_needed_over_reruns": '"pass_needed": 4'}[case]
        allowed = set(_row_span(broken, needle))

    code, out, err = run_cli(capsys, "validate", *base_args(demo), "--json")
    assert code == EXIT_BAD_INPUT
    errors = json.loads(out)["errors"]
    assert len(errors) == 1, errors
    assert errors[0]["path"] == path
    assert errors[0]["line"] in allowed
    for word in words:
        assert word.lower() in errors[0]["message"].lower()

    code, out, err = run_cli(capsys, "validate", *base_args(demo))
    assert code == EXIT_BAD_INPUT
    error_lines = [ln for ln in err.split("\n") if ln.strip()]  # bad files go to stderr, one line each
    assert len(error_lines) == 1, out + err
    assert re.search(rf"{re.escape(path)}:({'|'.join(map(str, sorted(allowed)))})\b", error_lines[0])


def test_duplicate_key_message_names_both_lines(demo, capsys):
    broken = break_on_main(demo, CATALOG, CASES["duplicate_key"][1])
    first = line_of(broken, "compare: tolerance")
    second = next(n for n in lines_with(broken, "compare:") if n > first)
    code, out, _ = run_cli(capsys, "validate", *base_args(demo), "--json")
    assert code == EXIT_BAD_INPUT
    [error] = json.loads(out)["errors"]
    assert error["line"] == second
    assert re.search(rf"\b{first}\b", error["message"])


def test_alias_bomb_is_refused_quickly(demo, capsys):
    commit_on(demo, "main", {STOCKS_LEASE: _bomb()}, "bomb")
    started = time.monotonic()
    code, out, _ = run_cli(capsys, "validate", *base_args(demo), "--json")
    assert time.monotonic() - started < 30
    assert code == EXIT_BAD_INPUT
    [error] = json.loads(out)["errors"]
    assert error["path"] == STOCKS_LEASE
    assert 1 <= error["line"] <= len(_bomb().splitlines())


@pytest.mark.parametrize("command", ["bind", "run"])
def test_other_commands_also_exit_5_on_a_bad_catalog(command, demo, capsys):
    broken = break_on_main(demo, CATALOG, CASES["unknown_relation_field"][1])
    code, out, err = run_cli(capsys, command, *base_args(demo))
    assert code == EXIT_BAD_INPUT
    assert f"{CATALOG}:{line_of(broken, 'tolerance_hint')}" in out + err


def test_bad_input_message_is_on_stderr(demo, capsys):
    break_on_main(demo, CATALOG, CASES["unknown_relation_field"][1])
    code, out, err = run_cli(capsys, "validate", *base_args(demo))
    assert code == EXIT_BAD_INPUT
    assert len(err.strip().splitlines()) == 1 and CATALOG in err


def test_bad_file_on_the_patch_branch_is_not_a_bad_input(demo, capsys):
    """The oracle is main's: a broken catalog committed by the patch cannot fail validation."""
    commit_on(demo, "agent/patch", {CATALOG: "relations: [\n"}, "oops")
    code, out, _ = run_cli(capsys, "validate", *base_args(demo), "--json")
    assert code == EXIT_PASS
    assert json.loads(out)["errors"] == []
    review = load_review(demo, today=TODAY)
    try:
        assert {f.name for f in review.flags} >= {"protected_path_changed"}
    finally:
        review.close()


# --- YAML readings of a digest ------------------------------------------------------------

LEASE_TEMPLATE = """id: stocks
path: oracle/data/stocks.csv
sha256: {digest}
expires: 2031-12-31
owner: alice@example.com
allowed_relations: [codec.roundtrip]
"""


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(alphabet="0123456789abcdef", min_size=64, max_size=64)
       | st.builds(lambda head, tail: head + tail,
                   st.sampled_from(["12e3", "1e10", "0", "00", "1_2", "0x"]),
                   st.text(alphabet="0123456789", min_size=56, max_size=62)).map(lambda s: s[:64]))
def test_unquoted_digest_is_exact_text_or_bad_input(digest):
    """A digest YAML might read as a number never becomes one silently: either the manifest
    keeps the exact 64 characters or loading fails naming the sha256 line."""
    text = LEASE_TEMPLATE.format(digest=digest)
    try:
        lease = parse_lease(text, "oracle/leases/stocks.yaml")
    except BadInputError as exc:
        assert exc.line == 3 and exc.path == "oracle/leases/stocks.yaml"
        assert "sha256" in exc.message
        return
    assert lease.sha256 == digest
    assert isinstance(lease.sha256, str)


# --- the pristine demo -------------------------------------------------------------------

def test_validate_passes_on_the_pristine_demo(demo, capsys):
    code, out, _ = run_cli(capsys, "validate", *base_args(demo), "--json")
    assert code == EXIT_PASS
    assert json.loads(out)["errors"] == []


def test_bind_reports_the_unowned_export_module_as_a_gap(demo, capsys):
    code, out, _ = run_cli(capsys, "bind", *base_args(demo), "--json")
    assert code == EXIT_GAP
    payload = json.loads(out)
    added = set(git(demo, "diff", "--name-only", "--diff-filter=A", "main...agent/patch").stdout.split())
    assert "src/export.py" in added
    assert payload["gaps"] == ["src/export.py"]


def test_bind_passes_once_main_owns_the_export_module(demo, capsys):
    catalog = show(demo, "main", CATALOG)
    owned = replace_once(catalog, '  "README.md": []\n', '  "README.md": []\n  "src/export.py": []\n')
    commit_on(demo, "main", {CATALOG: owned}, "catalog: exempt src/export.py")
    code, out, _ = run_cli(capsys, "bind", *base_args(demo), "--json")
    assert code == EXIT_PASS
    payload = json.loads(out)
    assert payload["gaps"] == []
    [export] = [p for p in payload["paths"] if p["path"] == "src/export.py"]
    assert export["state"] == "exempt"


def _freeze_row(root: Path, relation_id: str) -> dict:
    return next(r for r in json.loads(show(root, "main", FREEZES)) if r["relation_id"] == relation_id)


def test_run_rejects_the_parallel_sum_under_its_counted_freeze(demo, capsys):
    code, out, _ = run_cli(capsys, "run", *base_args(demo), "--json")
    assert code == EXIT_REJECT
    payload = json.loads(out)
    assert payload["decision"] == "reject"
    results = {r["relation_id"]: r for r in payload["relations"]}
    order = results["penguins.order_invariant"]
    assert order["outcome"] == "missed"
    assert order["decision"] == "reject"
    assert order["first_run"]["held"] is False
    assert order["first_run"]["differing"], "a miss names the disagreeing keys"
    row = _freeze_row(demo, "penguins.order_invariant")
    assert len(order["reruns"]) == row["reruns"]  # every rerun is recorded
    assert sum(r["held"] for r in order["reruns"]) < row["pass_needed"]
    seeds = [r["seed"] for r in order["reruns"]]
    assert len(set(seeds)) == len(seeds) and order["first_run"]["seed"] not in seeds


def _verdicts(payload: dict) -> dict:
    """What run decided per relation, without timings or identities."""
    def judged(record: dict) -> dict:  # without what each run draws anew: seed, order, which keys missed
        kept = {k: v for k, v in record.items() if k in ("held", "error_type", "blocked", "vacuous")}
        kept["inputs"] = {k: v for k, v in (record.get("inputs") or {}).items() if k != "followup"}
        return kept

    out = {}
    for r in payload["relations"]:
        first = judged(r["first_run"] or {})
        reruns = [judged(x) for x in r["reruns"]]
        out[r["relation_id"]] = (r["outcome"], r["decision"], r["reason"], r["summary"],
                                 json.dumps(first, sort_keys=True), json.dumps(reruns, sort_keys=True))
    return out


def test_patch_catalog_changes_do_not_change_run(demo, capsys):
    """The demo's last agent commit loosens compare; a further commit here drops the relation
    and exempts all of src/. Neither changes what run does: the oracle is main's."""
    # one recorded seed for both runs: the sample's bands.repeat_scans misses on some seeds only
    code_before, out, _ = run_cli(capsys, "run", *base_args(demo), "--head", "agent/patch~1", "--json",
                                  "--replay-seed", "0")
    before = json.loads(out)
    assert show(demo, "agent/patch~1", CATALOG) == show(demo, "main", CATALOG)
    assert show(demo, "agent/patch", CATALOG) != show(demo, "main", CATALOG)

    loosened = yaml.safe_load(show(demo, "agent/patch", CATALOG))
    loosened["owners"] = {"src/**": [], **{k: v for k, v in loosened["owners"].items() if not k.startswith("src/")}}
    loosened["relations"] = [r for r in loosened["relations"] if r["id"] != "penguins.order_invariant"]
    commit_on(demo, "agent/patch", {CATALOG: yaml.safe_dump(loosened, sort_keys=False)}, "oracle: relax")

    code_after, out, _ = run_cli(capsys, "run", *base_args(demo), "--json", "--replay-seed", "0")
    after = json.loads(out)
    assert code_after == code_before == EXIT_REJECT
    assert _verdicts(after) == _verdicts(before)
    assert (after["decision"], after["reason"]) == (before["decision"], before["reason"])

    review = load_review(demo, today=TODAY)
    try:
        flagged = {f.path for f in review.flags if f.name == "protected_path_changed"}
        assert CATALOG in flagged
        assert review.catalog.get("penguins.order_invariant").compare == "exact"
    finally:
        review.close()
    code, out, _ = run_cli(capsys, "bind", *base_args(demo), "--json")
    assert code == EXIT_GAP
    states = {p["path"]: p["state"] for p in json.loads(out)["paths"]}
    assert states[CATALOG] == "protected"
    assert states["src/export.py"] == "gap"


def test_oracle_from_head_is_what_would_loosen_the_gate(demo, capsys):
    """Control for the test above: read from HEAD, the agent's tolerance does change run."""
    code, out, _ = run_cli(capsys, "run", *base_args(demo), "--oracle-from", "HEAD", "--json")
    results = {r["relation_id"]: r for r in json.loads(out)["relations"]}
    assert results["penguins.order_invariant"]["outcome"] == "held"
    code_base, out, _ = run_cli(capsys, "run", *base_args(demo), "--json")
    base_results = {r["relation_id"]: r for r in json.loads(out)["relations"]}
    assert base_results["penguins.order_invariant"]["outcome"] == "missed"


# --- git situations CI produces -------------------------------------------------------------

def test_detached_head_reviews_like_the_branch(demo, capsys):
    code_branch, out, _ = run_cli(capsys, "bind", *base_args(demo), "--json")
    on_branch = json.loads(out)
    git(demo, "checkout", "-q", "--detach", "agent/patch")
    assert git(demo, "symbolic-ref", "-q", "HEAD", check=False).returncode != 0
    code_detached, out, _ = run_cli(capsys, "bind", *base_args(demo), "--json")
    detached = json.loads(out)
    assert code_detached == code_branch == EXIT_GAP
    assert detached["paths"] == on_branch["paths"]
    assert detached["head"] == on_branch["head"]
    code, out, _ = run_cli(capsys, "validate", *base_args(demo), "--json")
    assert code == EXIT_PASS


def test_unrelated_history_aborts_naming_the_missing_merge_base(demo, capsys):
    git(demo, "checkout", "-q", "--orphan", "elsewhere")
    git(demo, "rm", "-rq", "--cached", ".")
    (demo / "lonely.txt").write_text("unrelated\n")
    git(demo, "add", "lonely.txt")
    git(demo, "commit", "-q", "-m", "unrelated root")
    git(demo, "checkout", "-q", "-f", "agent/patch")
    code, out, err = run_cli(capsys, "bind", *base_args(demo), "--base", "elsewhere")
    assert code == EXIT_ABORT
    assert "merge base" in err
    assert len(err.strip().splitlines()) == 1


def test_shallow_clone_aborts_and_says_to_fetch(demo, tmp_path, capsys):
    clone = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "1", "--no-single-branch", demo.as_uri(), str(clone))
    assert (clone / ".git" / "shallow").exists()
    code, out, err = run_cli(capsys, "bind", "--repo", str(clone), "--today", TODAY.isoformat(),
                             "--base", "origin/main", "--head", "origin/agent/patch")
    assert code == EXIT_ABORT
    assert "fetch" in err
    assert len(err.strip().splitlines()) == 1


def test_unknown_base_ref_aborts_and_names_it(demo, capsys):
    """The fetch hint only where a remote exists: test_git_in_the_wild checks both cases."""
    code, out, err = run_cli(capsys, "bind", *base_args(demo), "--base", "no-such-branch")
    assert code == EXIT_ABORT
    assert "no-such-branch" in err and err.count("\n") == 1


def test_symlink_out_of_the_repository_does_not_crash_the_review(demo, capsys):
    """A corpus committed as a symlink to an absolute path is never read; the review goes on."""
    lease = show(demo, "main", STOCKS_LEASE)
    git(demo, "checkout", "-q", "main")
    os.symlink("/etc/hostname", demo / "oracle" / "data" / "outside.csv")
    (demo / STOCKS_LEASE).write_text(re.sub(r"(?m)^path: .*$", "path: oracle/data/outside.csv", lease))
    git(demo, "add", "-A")
    git(demo, "commit", "-q", "-m", "point the stocks lease outside")
    git(demo, "checkout", "-q", "agent/patch")
    code, out, _ = run_cli(capsys, "validate", *base_args(demo), "--json")
    assert code in (EXIT_PASS, EXIT_BAD_INPUT)
    states = {lease["id"]: lease["state"] for lease in json.loads(out)["leases"]}
    assert states["stocks"] in ("invalid", "missing")


def test_protected_change_is_flagged_even_when_an_owner_pattern_covers_it(demo):
    """§9: a patch that changes any protected path is flagged, whatever owns the path."""
    catalog = show(demo, "main", CATALOG)
    covered = replace_once(catalog, "owners:\n", 'owners:\n  "**": []\n')
    commit_on(demo, "main", {CATALOG: covered}, "catalog: exempt everything else")
    review = load_review(demo, today=TODAY)
    try:
        assert review.errors == []
        states = {b.path: b.state for b in review.bindings}
        assert states[CATALOG] == "exempt"
        assert CATALOG in {f.path for f in review.flags if f.name == "protected_path_changed"}
    finally:
        review.close()


def test_patch_symlink_out_of_the_tree_does_not_crash_run(demo, capsys):
    """The code under test is exported from HEAD: a committed link to /etc is left out, not followed."""
    git(demo, "checkout", "-q", "agent/patch")
    os.symlink("/etc/passwd", demo / "src" / "passwd.py")
    git(demo, "add", "-A")
    git(demo, "commit", "-q", "-m", "a link out of the tree")
    code, out, err = run_cli(capsys, "run", *base_args(demo), "--json")
    payload = json.loads(out)
    assert code == EXIT_REJECT  # the parallel sum still misses; nothing crashed
    assert "src/passwd.py" in payload["gaps"]


@pytest.mark.parametrize("clock", ["2026-13-45T99:99:00", "2020-05-05T10:00garbage"])
def test_an_impossible_relation_clock_is_a_bad_catalog(clock):
    from relconsole.engine.oracle.catalog import load_catalog

    text = ("relations:\n  - id: r\n    kind: bound\n    subject: m:f\n    input: {seeds: s.jsonl}\n"
            f"    compare: exact\n    statement: s\n    clock: '{clock}'\n")
    with pytest.raises(BadInputError) as caught:
        load_catalog(text, "oracle/catalog.yaml")
    assert caught.value.line == text.splitlines().index(f"    clock: '{clock}'") + 1


def test_an_impossible_frozen_clock_in_pyproject_is_bad_input():
    from relconsole.engine.repo.config import layout_from_pyproject

    with pytest.raises(BadInputError) as caught:
        layout_from_pyproject('[tool.relconsole]\nfrozen_clock = "yesterday"\n')
    assert "frozen_clock" in caught.value.message


def test_a_load_that_fails_midway_leaves_no_oracle_copy_behind(demo_repo, tmp_path, monkeypatch):
    """The oracle copy can hold gigabytes of corpora: an interrupted load removes it."""
    import tempfile

    import relconsole.engine.gate.review as review_module
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))

    def interrupted(_review):
        raise KeyboardInterrupt

    monkeypatch.setattr(review_module, "_bind", interrupted)
    with pytest.raises(KeyboardInterrupt):
        review_module.load_review(demo_repo, "main")
    assert list(scratch.iterdir()) == []


@pytest.mark.parametrize("target", ["/etc/passwd", "../../../../outside.csv"])
def test_a_committed_corpus_symlink_that_leaves_the_tree_is_invalid_not_missing(demo_repo, target):
    """§4: "no symlink out of it". The export drops such a link, which must not read as absent."""
    git(demo_repo, "checkout", "-q", "main")
    (demo_repo / "oracle" / "data" / "out.csv").symlink_to(target)
    (demo_repo / "oracle" / "leases" / "out.yaml").write_text(
        "id: out\npath: oracle/data/out.csv\nsha256: \"" + "0" * 64 + "\"\nexpires: 2099-01-01\n"
        "owner: someone@example.com\nallowed_relations: []\n")
    git(demo_repo, "add", "-A")
    git(demo_repo, "commit", "-qm", "a lease on a link that leaves the tree")
    with load_review(demo_repo, "main") as review:
        status = review.lease("out")
    assert status.state == "invalid" and "symlink" in status.reason and "outside" in status.reason


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_killed_or_hung_up_process_removes_its_scratch_directories(signum):
    """A closed terminal mid-load must not leave a gigabyte oracle copy in the temp dir."""
    code = ("import time\n"
            "from relconsole.cli.main import _exit_cleanly_on_signals\n"
            "from relconsole.engine.repo.workspace import scratch_dir\n"
            "_exit_cleanly_on_signals()\n"
            "d = scratch_dir('relconsole-oracle-')\n"
            "(d / 'corpus.csv').write_text('a,b\\n')\n"
            "print(d, flush=True)\n"
            "time.sleep(60)\n")
    proc, scratch = _child_with_scratch(code)
    assert (scratch / "corpus.csv").exists()
    proc.send_signal(signum)
    assert proc.wait(timeout=30) == 128 + signum
    assert not scratch.exists()


def test_a_shutdown_stuck_on_a_dead_terminal_is_cut_short():
    """After SIGHUP the normal shutdown may wait forever (Textual restoring a terminal that is
    gone, through a writer thread that died with it); the grace timer still removes the
    scratch directories and ends the process."""
    code = ("import threading, time\n"
            "import relconsole.cli.main as cli\n"
            "from relconsole.engine.repo.workspace import scratch_dir\n"
            "cli.SHUTDOWN_GRACE_SECONDS = 1.0\n"
            "cli._exit_cleanly_on_signals()\n"
            "threading.Thread(target=threading.Event().wait).start()  # never ends: shutdown waits on it\n"
            "d = scratch_dir('relconsole-oracle-')\n"
            "(d / 'corpus.csv').write_text('a,b\\n')\n"
            "print(d, flush=True)\n"
            "time.sleep(60)\n")
    proc, scratch = _child_with_scratch(code)
    proc.send_signal(signal.SIGHUP)
    try:
        code = proc.wait(timeout=30)
    finally:
        proc.kill()
    assert code == 128 + signal.SIGHUP
    assert not scratch.exists()


def test_every_exit_hook_the_grace_timer_runs_exists():
    """The timer skips a hook that fails, so a renamed one would be skipped without a word:
    each named hook is a function of its module."""
    import importlib
    import relconsole.cli.main as cli
    for name, hook in cli.EXIT_HOOKS:
        assert callable(getattr(importlib.import_module(name), hook)), (name, hook)


def _child_with_scratch(code: str) -> tuple[subprocess.Popen, Path]:
    """Run ``code`` (which prints its scratch directory) in a child on this checkout; returns
    the child and that directory. The child starts with SIGHUP and SIGTERM at their defaults,
    as under a terminal, even when the suite itself runs under ``nohup`` (which ignores SIGHUP
    and so, rightly, keeps relconsole from taking it over)."""
    import sys
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    prelude = "import signal\nfor _n in (signal.SIGHUP, signal.SIGTERM):\n    signal.signal(_n, signal.SIG_DFL)\n"
    proc = subprocess.Popen([sys.executable, "-c", prelude + code], stdout=subprocess.PIPE, text=True, env=env)
    return proc, Path(proc.stdout.readline().strip())


@pytest.mark.parametrize("encoded,good", [("str", True), ("[str, bytes]", True), ("''", False), ("3", False),
                                          ("[]", False), ("[str, 4]", False)])
def test_a_roundtrip_s_encoded_type_is_words_or_bad_input_at_its_line(encoded, good):
    from relconsole.engine.oracle.catalog import load_catalog

    text = ("relations:\n  - id: r\n    kind: roundtrip\n    subject: m:f\n    inverse: m:g\n"
            f"    input: {{seeds: s.jsonl}}\n    compare: exact\n    statement: s\n    params: {{encoded: {encoded}}}\n")
    if good:
        assert load_catalog(text, "oracle/catalog.yaml")
        return
    with pytest.raises(BadInputError) as caught:
        load_catalog(text, "oracle/catalog.yaml")
    assert caught.value.line == len(text.splitlines()) and "encoded" in caught.value.message


@pytest.mark.parametrize("scale,inp,good", [("2", "{lease: corpus}", True), ("16", "{lease: corpus}", True),
                                            ("1", "{lease: corpus}", False), ("true", "{lease: corpus}", False),
                                            ("2.5", "{lease: corpus}", False), ("1001", "{lease: corpus}", False),
                                            ("'4'", "{lease: corpus}", False), ("4", "{seeds: s.jsonl}", False)])
def test_a_scale_is_a_whole_number_of_copies_of_a_leased_corpus_or_bad_input_at_its_line(scale, inp, good):
    from relconsole.engine.oracle.catalog import load_catalog

    text = ("relations:\n  - id: r\n    kind: permutation\n    subject: m:f\n"
            f"    input: {inp}\n    compare: exact\n    statement: s\n    params: {{shuffles: 2, scale: {scale}}}\n")
    if good:
        assert load_catalog(text, "oracle/catalog.yaml").get("r").params["scale"] == int(scale)
        return
    with pytest.raises(BadInputError) as caught:
        load_catalog(text, "oracle/catalog.yaml")
    assert caught.value.line == len(text.splitlines()) and "scale" in caught.value.message


@pytest.mark.parametrize("role,ref", [("subject", "semver.Version.parse"), ("subject", "semver:"),
                                      ("inverse", "codec loads")])
def test_a_callable_named_without_its_colon_gets_a_hint_not_a_regex(role, ref):
    """Issue 16: ``semver.Version.parse`` for ``semver:Version.parse`` said only that it does
    not match a regular expression; the message names the form, the value and the line."""
    from relconsole.engine.oracle.catalog import load_catalog

    text = ("relations:\n  - id: r\n    kind: roundtrip\n    subject: m:f\n    inverse: m:g\n"
            "    input: {seeds: s.jsonl}\n    compare: exact\n    statement: s\n").replace(
        f"    {role}: m:{'f' if role == 'subject' else 'g'}\n", f"    {role}: '{ref}'\n")
    with pytest.raises(BadInputError) as caught:
        load_catalog(text, "oracle/catalog.yaml")
    message = caught.value.one_line()
    assert caught.value.line == text.splitlines().index(f"    {role}: '{ref}'") + 1
    assert "module:attribute" in message and repr(ref) in message and "^[" not in message
