"""Patch review flags (SPEC §9) over a crafted history: each flag fires on exactly its commit."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from relconsole.cli.main import main
from relconsole.engine.gate.flags import pyscan, pysource
from relconsole.engine.gate.review import load_review
from bench.gitrepo import git, git_bytes, init_repo
from tests.conftest import TODAY
from tests.test_check_split import commit

CORPUS = "day,temp\n2024-01-01,3\n2024-01-02,5\n"
AGG = '''def summarize(rows):
    """Per-day totals as a list of (day, total) pairs."""
    totals = {}
    for row in rows:
        totals[row["day"]] = totals.get(row["day"], 0) + int(row["temp"])
    return list(totals.items())
'''
STORE = '''class Store:
    def __init__(self):
        self.rows = {}

    def reset(self):
        self.rows.clear()

    def ingest(self, rows):
        self.rows.update({r["day"]: r for r in rows})

    def projection(self):
        return dict(self.rows)


def make_store():
    return Store()
'''
STORE_TEST = '''from store import make_store

ROWS = [{"day": "d1", "temp": "3"}]


def test_replay_is_harmless():
    once, twice = make_store(), make_store()
    once.ingest(ROWS)
    twice.ingest(ROWS)
    twice.ingest(ROWS)
    assert once.projection() == twice.projection()
'''
CATALOG = '''owners:
  "src/**": [days.split_merge, days.replay]
  "tests/**": []
  "README.md": []
relations:
  - id: days.split_merge
    kind: split_merge
    subject: agg:summarize
    input: {lease: days}
    compare: canon
    statement: Summing the halves and merging equals summing the whole.
    owner: t
    freeze: {allowed: true, max_days: 14, min_reruns: 3}
  - id: days.replay
    kind: replay_ingest
    subject: store:make_store
    input: {lease: days}
    compare: exact
    statement: Ingesting twice equals ingesting once.
    owner: t
'''


def lease(sha: str) -> str:
    return (f"id: days\npath: oracle/data/days.csv\nsha256: \"{sha}\"\nexpires: 2027-01-31\n"
            "owner: t@example.invalid\nallowed_relations: [days.split_merge, days.replay]\n")


def freeze_row(reason: str) -> list[dict]:
    return [{"relation_id": "days.split_merge", "expires": "2026-12-07", "reruns": 3, "pass_needed": 3,
             "reason": reason}]


def based(root: Path, extra: dict[str, str] | None = None) -> Path:
    """A repository whose ``main`` holds the days project, its oracle and ``extra`` files."""
    init_repo(root)
    digest = hashlib.sha256(CORPUS.encode()).hexdigest()
    commit(root, "base", {"src/agg.py": AGG, "src/store.py": STORE, "tests/test_store.py": STORE_TEST,
                        "oracle/catalog.yaml": CATALOG, "oracle/leases/days.yaml": lease(digest),
                        "oracle/data/days.csv": CORPUS, "oracle/freezes.json": "[]\n",
                        "README.md": "days\n"} | (extra or {}))
    return root


@pytest.fixture
def history(tmp_path: Path):
    """(repo, {commit sha: the flag names that must fire on it}) on branch ``patch``."""
    root = based(tmp_path / "flags repo")
    git(root, "checkout", "-q", "-b", "patch")
    expected: dict[str, set[str]] = {}

    def step(message: str, files: dict, flags: set[str]) -> None:
        expected[commit(root, message, files)] = flags

    step("clean: an internal sort that is not the output", {"src/agg.py": AGG.replace(
        "    for row in rows:", "    for row in sorted(rows, key=lambda r: r['day']):")}, set())
    step("golden literal", {"tests/test_agg.py": (
        "from agg import summarize\n\n\ndef test_total():\n    rows = [{'day': 'd', 'temp': '3'}]\n"
        "    assert summarize(rows) == summarize(list(rows))\n    assert summarize(rows)[0][1] == 3\n")},
        {"golden_literal"})
    step("clean: predicates and comparisons of two results", {"tests/test_more.py": (
        "from agg import summarize\n\n\ndef test_shapes():\n    rows = []\n"
        "    assert summarize(rows) is not None\n    assert isinstance(summarize(rows), list) is True\n"
        "    assert summarize(rows) == summarize(rows[::-1])\n")}, set())
    step("clean: literals asserted on code no relation owns", {"tools/fmt.py": "def fmt(n):\n    return str(n)\n",
         "tests/test_fmt.py": ("from fmt import fmt\n\n\ndef _local(n):\n    return n\n\n\n"
                               "def test_fmt():\n    assert fmt(3) == '3'\n    assert _local(2) == 2\n")}, set())
    step("clean: the golden test reformatted", {"tests/test_agg.py": (
        "# totals\nfrom agg import summarize\n\n\n\ndef test_total():\n    rows = [{'day': 'd', 'temp': '3'}]\n\n"
        "    assert summarize(rows) == summarize(list(rows))\n    assert summarize(rows)[0][1] == 3  # pinned\n")},
        set())
    step("bag output sorted", {"src/agg.py": AGG.replace(
        "    return list(totals.items())", "    return sorted(totals.items())")}, {"bag_output_sorted"})
    step("ingest replay to concatenation", {"tests/test_store.py": STORE_TEST.replace(
        "    twice.ingest(ROWS)\n    twice.ingest(ROWS)\n", "    twice.ingest(ROWS + ROWS)\n")},
        {"ingest_replay_to_concat"})
    step("lease hash", {"oracle/leases/days.yaml": lease("0" * 64)},
         {"lease_hash_edited", "protected_path_changed"})
    step("corpus", {"oracle/data/days.csv": CORPUS + "2024-01-03,9\n"},
         {"leased_corpus_edited", "protected_path_changed"})
    step("freeze added", {"oracle/freezes.json": json.dumps(freeze_row("flaky runner"), indent=2) + "\n"},
         {"freeze_row_added", "protected_path_changed"})
    step("freeze edited", {"oracle/freezes.json": json.dumps(freeze_row("flaky runner, again"), indent=2) + "\n"},
         {"freeze_row_edited", "protected_path_changed"})
    step("catalog: replay becomes concatenation", {"oracle/catalog.yaml": CATALOG.replace(
        "    kind: replay_ingest\n    subject: store:make_store\n",
        "    kind: invariance\n    subject: store:make_store\n    transform: oracle.adapters:doubled\n")},
        {"ingest_replay_to_concat", "protected_path_changed", "relation_changed"})
    step("clean: docs", {"README.md": "days, with notes\n"}, set())
    return root, expected


def _by_commit(flags) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for flag in flags:
        out.setdefault(flag.commit, set()).add(flag.name)
    return out


def test_flags_judge_what_merges(history):
    """Issue 35: the flags are the net diff's, merge base -> HEAD, whatever the commits: each
    flag a commit's change raised fires once on the merged tree, and a freeze row added in one
    commit and edited in the next is, merged, a row added."""
    root, expected = history
    with load_review(root, "main", today=TODAY) as review:
        content = [f for f in review.flags if f.name != "relation_changed"]  # patch_catalog's: per commit
        head = review.head_sha
    assert {f.commit for f in content} == {head}
    assert {f.name for f in content} == set().union(*expected.values()) - {"freeze_row_edited", "relation_changed"}


def test_each_flag_points_at_the_line_that_did_it(history):
    root, _ = history
    evidence = {"golden_literal": "== 3", "bag_output_sorted": "sorted(", "ingest_replay_to_concat": "ROWS + ROWS",
                "lease_hash_edited": "sha256", "leased_corpus_edited": "2024-01-03", "freeze_row_added": "{",
                "freeze_row_edited": "{"}
    with load_review(root, "main", today=TODAY) as review:
        flags = list(review.flags)
    for flag in flags:
        if flag.name not in evidence or flag.path.endswith(".yaml") and flag.name == "ingest_replay_to_concat":
            continue
        lines = git(root, "show", f"{flag.commit}:{flag.path}").splitlines()
        assert evidence[flag.name] in lines[flag.line - 1], (flag, lines[flag.line - 1])
    catalog_flag = next(f for f in flags if f.name == "ingest_replay_to_concat" and f.path.endswith(".yaml"))
    shown = git(root, "show", f"{catalog_flag.commit}:{catalog_flag.path}").splitlines()
    assert shown[catalog_flag.line - 1].strip() == "kind: invariance"


def test_any_flag_rejects_the_pr_and_flags_json_names_them(history, capsys):
    root, _ = history
    code = main(["flags", "--repo", str(root), "--base", "main", "--today", TODAY.isoformat(), "--json"])
    payload = json.loads(capsys.readouterr().out)
    assert code == 1
    first = payload["flags"][0]
    assert payload["decision"] == {"decision": "reject", "reason": f"review_flag:{first['name']}", "row": None}
    assert all(f["commit"] and f["path"] and (f["line"] or f["name"] == "relation_changed") for f in payload["flags"])
    golden = next(i for i in payload["checklist"] if i["key"] == "no_golden_literal")
    # a new assertion (no expected answer moved) warns by default: the item passes and names it
    added = [f for f in payload["flags"] if f["name"] == "golden_literal"]
    assert added and {f["level"] for f in added} == {"warn"}, added
    assert golden["state"] == "pass" and any("test_agg.py" in line and "(warn)" in line for line in golden["evidence"])


def test_a_clean_history_has_no_flag_and_passes(tmp_path: Path, capsys):
    root = based(tmp_path / "clean")
    git(root, "checkout", "-q", "-b", "patch")
    commit(root, "docs", {"README.md": "more\n"})
    commit(root, "a relation-style test", {"tests/test_agg.py": (
        "from agg import summarize\n\n\ndef test_halves():\n    rows = [{'day': 'd', 'temp': '3'}] * 4\n"
        "    assert sorted(summarize(rows)) == sorted(summarize(rows[:2] + rows[2:]))\n")})
    code = main(["flags", "--repo", str(root), "--base", "main", "--today", TODAY.isoformat(), "--json"])
    payload = json.loads(capsys.readouterr().out)
    assert payload["flags"] == [] and code == 0
    assert {i["state"] for i in payload["checklist"]} <= {"pass", "unknown"}


# --- the ast rules against real source: reformatting adds nothing -----------------------

REAL_SOURCES = sorted(Path(__file__).resolve().parent.glob("test_*.py"))


@pytest.mark.parametrize("path", REAL_SOURCES[:12], ids=lambda p: p.name)
def test_rules_see_nothing_new_in_a_reformatted_file(path: Path):
    """A relation over real files: shifting every line and adding comments adds no finding."""
    source = path.read_text()
    moved = "# moved down\n\n\n" + source.replace("\n\n\n", "\n\n\n# --\n")
    assert pyscan.golden_assertions(source, moved) == []
    assert pyscan.ingest_to_concat(source, moved) == []
    for name, scope in pysource._scopes(pysource.parse(source)):
        if name:
            assert pyscan.output_sorts(source, moved, name) == []


@pytest.mark.parametrize("path", REAL_SOURCES[:12], ids=lambda p: p.name)
def test_a_whole_new_file_flags_what_the_file_holds(path: Path):
    """Adding a file finds exactly what comparing it with an empty file finds, and at least
    what comparing it with itself minus its last test function finds."""
    source = path.read_text()
    assert pyscan.golden_assertions(None, source) == pyscan.golden_assertions("", source)
    cut = source[:source.rfind("\ndef ")] if "\ndef " in source else ""
    fewer = pyscan.golden_assertions(cut, source)
    assert len(fewer) <= len(pyscan.golden_assertions(None, source))


@pytest.mark.parametrize("assertion, golden", [
    ("assert f(x) == 3", True), ("assert 3 == f(x)", True), ("assert f(x)['a'].b == 'x'", True),
    ("assert f(x) == -2.5", True), ("assert f(x) == [1, 2]", True), ("assert f(x) == {'a': 1}", True),
    ("assert f(x) == pytest.approx(0.3)", True), ("self.assertEqual(f(x), 7)", True),
    ("assert f(x) == EXPECTED", True),
    ("assert f(x) == f(y)", False), ("assert f(x) is None", False), ("assert f(x) == []", False),
    ("assert f(x) is True", False), ("assert y == 3", False), ("assert f(x) < 3", False),
    ("assert f(x) == [y]", False), ("assert f(x) == pytest.approx(g(y))", False),
    # issue 16: an input compared with a function of itself is a property, not an answer
    ("assert loads(dumps(EXPECTED)) == EXPECTED", False), ("assert g(f([1, 2])) == [1, 2]", False),
    ("assert loads(dumps(EXPECTED)) == 4", True),
    # issue 35: a counter is bound to 0, then counted: a name bound to no one value is no literal
    ("n = 0\n    for _ in f(x):\n        n += 1\n    self.assertEqual(n, len(g(x)))", False),
    ("n = 0\n    n += len(f(x))\n    assert len(g(x)) == n", False),
    ("with f(x) as n:\n        assert g(n) == 3", True),
])
def test_what_counts_as_a_golden_value(assertion: str, golden: bool):
    source = f"import pytest\nEXPECTED = 4\n\n\ndef test_it(self=None):\n    {assertion}\n"
    assert bool(pyscan.golden_assertions(None, source)) is golden


def test_source_that_cannot_be_judged_says_so_and_a_broken_before_counts_as_empty():
    for after in ("def broken(:\n", "\0", "def test_deep():\n    assert f(x)" + "[0]" * 3000 + " == 5\n"):
        with pytest.raises(pysource.Unjudged):
            pyscan.golden_assertions(None, after)
    fixed = "def test_fixed():\n    assert parse('1.2') == (1, 2)\n"
    assert pyscan.golden_assertions("def broken(:\n", fixed) == pyscan.golden_assertions(None, fixed) != []


@pytest.mark.parametrize("shape", [
    "totals = f(rows)\n    assert totals['Adelie']['count'] == 1",
    "assert round(f(x), 1) == 3750.0", "assert len(f(x)) == 14", "assert str(f(x)) == '25'",
    "assert f(x)[0].get('v') == '13'", "expected: int = 15\n    assert f(x) == expected",
    "self.assertTrue(f(x) == 21)", "self.assertEqual(first=f(x), second=22)",
    "assert math.isclose(f(x), 16.0)", "np.testing.assert_allclose(f(x), 17.0)",
    "assert 0 < f(x) == 19", "assert f(x) == 18 and True", "assert not f(x) != 20",
])
def test_golden_values_in_the_shapes_tests_write_them(shape: str):
    source = f"import math\nimport numpy as np\nfrom mod import *\n\n\ndef test_it(self=None):\n    {shape}\n"
    assert len(pyscan.golden_assertions(None, source)) == 1
    guarded = lambda module: module == "mod"  # noqa: E731 - f comes from the star import
    assert len(pyscan.golden_assertions(None, source, guarded)) == 1


@pytest.mark.parametrize("count", [1, 2, 3])
def test_a_name_reassigned_between_assertions_holds_each_answer_in_turn(count: int):
    """Issue 16: ``r = f(a); assertEqual(r, "x"); r = f(b); assertEqual(r, "y")`` hid every
    golden: a name bound more than once was not followed. Each assertion reads the value the
    name holds at its line."""
    body = "".join(f"    r = parse('{n}.0')\n    self.assertEqual(r, '{n}')\n" for n in range(count))
    source = f"def test_versions(self=None):\n{body}"
    found = pyscan.golden_assertions(None, source)
    assert [f.line for f in found] == [2 * n + 3 for n in range(count)]
    literal_first = source.replace("    r = parse('0.0')\n", "    r = 'z'\n    r = parse('0.0')\n", 1)
    assert len(pyscan.golden_assertions(None, literal_first)) == count  # the literal binding before it is gone


@pytest.mark.parametrize("move", ["rename", "into_class", "swap_sides"])
def test_moving_a_golden_assertion_adds_nothing(move: str):
    before = "def test_a():\n    assert f(1) == 3\n"
    after = {"rename": "def test_b():\n    assert f(1) == 3\n",
             "into_class": "class TestF:\n    def test_a(self):\n        assert f(1) == 3\n",
             "swap_sides": "def test_a():\n    assert 3 == f(1)\n"}[move]
    assert pyscan.golden_assertions(before, after) == []
    assert len(pyscan.golden_assertions(None, after)) == 1


# --- edges a breaker found ------------------------------------------------------------

def _flags(root: Path, **kw):
    with load_review(root, "main", today=TODAY, **kw) as review:
        return list(review.flags), list(review.unjudged)


@pytest.fixture
def base_repo(tmp_path: Path) -> Path:
    return based(tmp_path / "edge repo", {"oracle/adapters.py": "def doubled(rows):\n    return rows + rows\n"})


def test_paths_with_one_space_are_read_not_a_crash(base_repo: Path):
    git(base_repo, "checkout", "-q", "-b", "patch")
    sha = commit(base_repo, "spaces", {"oracle/data/new corpus.csv": "a\n", "tests/test a.py": (
        "from agg import summarize\n\n\ndef test_a():\n    assert summarize([]) == [('d', 1)]\n")})
    flags, _ = _flags(base_repo)
    assert {(f.name, f.path) for f in flags} == {("protected_path_changed", "oracle/data/new corpus.csv"),
                                                 ("golden_literal", "tests/test a.py")}
    assert {f.commit for f in flags} == {sha}


def test_a_test_file_too_deep_to_judge_is_reported_and_the_checklist_says_unknown(base_repo: Path):
    from relconsole.engine.gate.checklist import merge_checklist

    git(base_repo, "checkout", "-q", "-b", "patch")
    commit(base_repo, "deep", {"tests/test_deep.py": "def test_deep():\n    assert f(x)" + "[0]" * 3000 + " == 5\n",
                               "src/agg.py": AGG + "\n"})
    with load_review(base_repo, "main", today=TODAY) as review:
        assert any("test_deep.py" in note for note in review.unjudged)
        golden = next(i for i in merge_checklist(review) if i.key == "no_golden_literal")
        assert golden.state == "unknown" and any("test_deep.py" in e for e in golden.evidence)


def test_a_golden_assertion_moved_to_another_file_in_one_commit_adds_nothing(base_repo: Path):
    body = "from agg import summarize\n\n\ndef test_total():\n    assert summarize([])[0][1] == 3\n"
    commit(base_repo, "a golden test on main", {"tests/test_old.py": body})
    git(base_repo, "checkout", "-q", "-b", "patch")
    commit(base_repo, "move", {"tests/test_old.py": None, "tests/test_new.py": body.replace("test_total", "test_sum")})
    assert _flags(base_repo)[0] == []


def test_merging_main_with_a_resolved_conflict_flags_nothing_of_mains(base_repo: Path):
    git(base_repo, "checkout", "-q", "-b", "patch")
    commit(base_repo, "patch test", {"tests/test_x.py": "def test_p():\n    assert True\n"})
    git(base_repo, "checkout", "-q", "main")
    main_body = "from agg import summarize\n\n\ndef test_m():\n    assert summarize([])[0][1] == 42\n"
    commit(base_repo, "main test", {"tests/test_x.py": main_body})
    git(base_repo, "checkout", "-q", "patch")
    git(base_repo, "merge", "-q", "main", "-m", "merge main", check=False)
    (base_repo / "tests/test_x.py").write_text(main_body + "\n\ndef test_p():\n    assert True\n")
    git(base_repo, "add", "tests/test_x.py")
    git(base_repo, "commit", "-q", "--no-edit")
    assert [f for f in _flags(base_repo)[0] if f.name == "golden_literal"] == []


def test_a_submodule_under_the_protected_tree_is_flagged(base_repo: Path):
    git(base_repo, "checkout", "-q", "-b", "patch")
    head = git(base_repo, "rev-parse", "HEAD").strip()
    git(base_repo, "update-index", "--add", "--cacheinfo", f"160000,{head},oracle/sub")
    git(base_repo, "commit", "-q", "-m", "a gitlink")
    flags, _ = _flags(base_repo)
    assert [(f.name, f.path) for f in flags] == [("protected_path_changed", "oracle/sub")]


def test_oracle_from_head_keeps_the_bases_layout_for_flags(base_repo: Path):
    git(base_repo, "checkout", "-q", "-b", "patch")
    sha = commit(base_repo, "move the gate", {"pyproject.toml": "[tool.relconsole]\nprotected = [\"nothing/**\"]\n"})
    row = commit(base_repo, "freeze", {"oracle/freezes.json": json.dumps(freeze_row("flaky"), indent=2) + "\n"})
    for mode in ("base", "HEAD"):
        flags, _ = _flags(base_repo, oracle_from=mode)
        names = {(f.name, f.commit) for f in flags}  # judged on the net diff: at HEAD, the last commit
        assert ("oracle_layout_changed", row) in names and ("freeze_row_added", row) in names
        assert ("protected_path_changed", row) in names and sha != row
        protected_flag = next(f for f in flags if f.name == "protected_path_changed")
        assert ("from HEAD" in protected_flag.detail) is (mode == "HEAD")


def test_an_adapter_edit_is_the_changed_relations_flag_on_that_commit(base_repo: Path):
    catalog = CATALOG.replace("    kind: replay_ingest\n    subject: store:make_store\n",
                              "    kind: invariance\n    subject: store:make_store\n    transform: oracle.adapters:doubled\n")
    commit(base_repo, "catalog: an invariance", {"oracle/catalog.yaml": catalog})
    git(base_repo, "checkout", "-q", "-b", "patch")
    sha = commit(base_repo, "adapter", {"oracle/adapters.py": "def doubled(rows):\n    return list(rows) * 2\n"})
    changed = [f for f in _flags(base_repo)[0] if f.name == "relation_changed"]
    assert [(f.commit, f.path) for f in changed] == [(sha, "oracle/adapters.py")]


def test_flags_exits_with_the_decision_it_prints(history, capsys):
    root, _ = history
    for extra in ([], ["--run"]):
        code = main(["flags", "--repo", str(root), "--base", "main", "--today", TODAY.isoformat(), "--json", *extra])
        payload = json.loads(capsys.readouterr().out)
        from relconsole.engine.decision import EXIT_CODES
        assert code == payload["exit_code"] == EXIT_CODES[payload["decision"]["decision"]]


# --- code whose text is not what the diff shows (red team, round 6) -------------------------

HIDDEN = "import signal\nSERIAL = signal.getsignal(signal.SIGTERM) is None\n"


def _hidden_in_a_comment(codec: str) -> bytes:
    """A module whose hidden lines read, in UTF-8, as one comment line."""
    newline = {"utf-7": "+AAo-", "raw_unicode_escape": "\\u000a"}[codec]
    comment = "# tuning notes" + newline + HIDDEN.replace("\n", newline)
    return (f"# -*- coding: {codec} -*-\n{comment}\ndef summarize(rows):\n    return list(rows)\n").encode("ascii")


@pytest.mark.parametrize("codec", ["utf-7", "raw_unicode_escape"])
def test_a_probe_hidden_by_a_coding_cookie_is_read_as_python_reads_it(base_repo: Path, codec: str):
    data = _hidden_in_a_comment(codec)
    assert "signal" not in data.decode("utf-8").split("\n", 2)[1].split("#", 1)[0]  # a comment to a reader
    git(base_repo, "checkout", "-q", "-b", "patch")
    (base_repo / "src" / "agg.py").write_bytes(data)
    git(base_repo, "commit", "-qam", "perf: tuning notes")
    flags, _ = _flags(base_repo)
    found = {(f.name, f.path) for f in flags}
    assert ("environment_probe", "src/agg.py") in found  # the import Python sees
    assert ("source_rewritten", "src/agg.py") in found  # and the cookie itself


def test_a_plain_latin_1_cookie_on_ascii_text_is_no_flag(base_repo: Path):
    git(base_repo, "checkout", "-q", "-b", "patch")
    commit(base_repo, "a cookie", {"src/agg.py": "# -*- coding: latin-1 -*-\n" + AGG})
    flags, _ = _flags(base_repo)
    assert [f for f in flags if f.name == "source_rewritten"] == []


def test_git_attributes_in_any_folder_and_any_symlink_are_flagged(base_repo: Path):
    git(base_repo, "checkout", "-q", "-b", "patch")
    commit(base_repo, "docs", {"docs/.gitattributes": "revision.py ident\n",
                               "docs/revision.py": 'REVISION = "$Id$"\n', "docs/tuning": HIDDEN})
    (base_repo / "docs" / "tuning.py").symlink_to("tuning")
    git(base_repo, "add", "docs/tuning.py")
    git(base_repo, "commit", "-qm", "docs: tuning")
    flags, _ = _flags(base_repo)
    rewritten = {f.path: f.detail for f in flags if f.name == "source_rewritten"}
    assert set(rewritten) == {"docs/.gitattributes", "docs/tuning.py"}
    assert "'tuning'" in rewritten["docs/tuning.py"]


def test_deleting_the_attributes_is_flagged_as_well(base_repo: Path):
    commit(base_repo, "attributes on main", {".gitattributes": "*.csv -text\n"})
    git(base_repo, "checkout", "-q", "-b", "patch")
    commit(base_repo, "drop them", {".gitattributes": None})
    flags, _ = _flags(base_repo)
    assert [(f.name, f.path) for f in flags if f.name == "source_rewritten"] == [("source_rewritten", ".gitattributes")]


def test_a_wip_commit_that_does_not_parse_is_no_flag_once_the_merged_file_parses(demo_repo: Path, capsys):
    """Issue 16: a commit whose subject file does not parse, fixed in the next commit, crashed
    run, flags, bind and replay (an uncaught pyscan.Unjudged). Issue 35: flags judge what
    merges, so the fixed WIP leaves no flag; a merged file that does not parse is unread with
    its line (a flag a reviewer can acknowledge), and every command answers."""
    git(demo_repo, "checkout", "-q", "agent/patch")
    subject = demo_repo / "src" / "aggregator.py"
    good = subject.read_text()
    subject.write_text(good + "\ndef broken(:\n")
    git(demo_repo, "commit", "-qam", "wip")
    broken_line = len((good + "\ndef broken(:\n").splitlines())
    subject.write_text(good)
    git(demo_repo, "commit", "-qam", "fix the wip")
    args = ["--repo", str(demo_repo), "--today", TODAY.isoformat()]
    for command in ("bind", "run"):
        assert main([command, *args]) in (0, 1, 2, 4), command  # an answer, not a crash (exit 1 by traceback)
        assert "Traceback" not in capsys.readouterr().err
    assert main(["flags", "--json", *args]) == 1
    flags = json.loads(capsys.readouterr().out)["flags"]
    assert not [f for f in flags if "does not parse" in f["detail"]]
    assert any(f["name"] == "golden_literal" for f in flags)  # the rest of the range is still judged
    subject.write_text(good + "\ndef broken(:\n")
    git(demo_repo, "commit", "-qam", "wip again, merged so")
    assert main(["flags", "--json", *args]) == 1
    flags = json.loads(capsys.readouterr().out)["flags"]
    unread = [f for f in flags if f["path"] == "src/aggregator.py" and "does not parse" in f["detail"]]
    assert [f["line"] for f in unread] == [broken_line]


def test_a_relation_s_miss_is_the_headline_and_a_flag_stands_beside_it(demo_repo: Path):
    """Issue 16: a flag on an honest upstream test became the PR's reason even when a relation
    missed. Both reject; the relation's miss is named, the flag is still there."""
    from relconsole.engine.gate.reviewrun import run_review
    with load_review(demo_repo, "main", "agent/patch", TODAY) as review:
        assert review.decision().reason.startswith("review_flag:")  # nothing run yet: the flag is all there is
        run_review(review)
        missed = [r for r in review.results.values() if r.verdict.decision == "reject"]
        assert missed and any(f.name == "golden_literal" for f in review.flags)
        decision = review.decision()
        assert decision.decision == "reject" and decision.reason == missed[0].verdict.reason


PYPROJECT = '[project]\nname = "days"\n\n[tool.pytest.ini_options]\ntestpaths = ["tests"]\naddopts = "--color=yes"\n'


@pytest.mark.parametrize("files, flagged", [
    ({"tests/conftest.py": "import pytest\n"}, "tests/conftest.py"),
    ({"pkg/deep/conftest.py": "def pytest_configure(config):\n    config.option.relconsole = False\n"},
     "pkg/deep/conftest.py"),
    ({"pytest.ini": "[pytest]\naddopts = -p no:relconsole\n"}, "pytest.ini"),
    ({"pyproject.toml": PYPROJECT.replace('testpaths = ["tests"]', 'addopts = "-p no:relconsole"')}, "pyproject.toml"),
    ({"setup.cfg": "[tool:pytest]\naddopts = -p no:relconsole\n"}, "setup.cfg"),
    ({"tox.ini": "[pytest]\naddopts = -p no:relconsole\n"}, "tox.ini"),
    ({"pyproject.toml": PYPROJECT.replace('name = "days"', 'name = "days"\nversion = "2"')}, None),
    ({"setup.cfg": "[metadata]\nname = days\n"}, None),
    # a section that loads nothing: markers, test paths, warnings filters (honest libraries add these)
    ({"pyproject.toml": PYPROJECT.replace('testpaths = ["tests"]', 'testpaths = ["tests", "docs"]\n'
                                          'markers = ["slow: a slow test"]')}, None),
    ({"tox.ini": "[pytest]\nfilterwarnings = error\n"}, None),
    ({"pyproject.toml": PYPROJECT.replace('testpaths = ["tests"]', 'pythonpath = ["src"]')}, "pyproject.toml"),
    # pytest 9's native table and a list for the same words (a formatter's doing, measured on humanize)
    ({"pyproject.toml": '[project]\nname = "days"\n\n[tool.pytest]\naddopts = ["--color=yes"]\n'},
     None),
    ({"pyproject.toml": '[project]\nname = "days"\n\n[tool.pytest]\naddopts = ["-p", "no:relconsole"]\n'},
     "pyproject.toml"),
    ({"tests/test_more.py": "def test_more():\n    assert True\n"}, None),
])
def test_a_patch_that_changes_pytests_own_harness_is_flagged(tmp_path: Path, files: dict, flagged: str | None):
    """Hooks and options of the test process can switch the relconsole plugin off: a person reads
    them. Project metadata, and a test file, are not the harness."""
    base_repo = based(tmp_path / "repo", {"pyproject.toml": PYPROJECT})
    git(base_repo, "checkout", "-q", "-b", "patch")
    commit(base_repo, "the patch", files)
    harness = [f.path for f in _flags(base_repo)[0] if f.name == "test_harness_changed"]
    assert harness == ([flagged] if flagged else [])


def test_changes_read_by_blob_id_hold_the_bytes_read_by_path(tmp_path: Path):
    """Issue 17: the flag rules read a commit's changed files by the blob ids of one
    ``git diff-tree`` listing; each side (a rename's source and destination, an edit, an
    addition, a deletion, a path with spaces) holds the bytes ``rev:path`` names."""
    from relconsole.engine.gate.blobreader import BlobReader
    from relconsole.engine.gate.flags.patchscan import _blob_ids
    repo = init_repo(tmp_path / "repo")
    base = commit(repo, "base", {"a b/keep.py": "x = 1\n", "gone.py": "y = 2\n",
                                 "moved.py": "def f():\n    return 1\n" * 20})
    git(repo, "mv", "moved.py", "arrived.py")
    head = commit(repo, "patch", {"a b/keep.py": "x = 3\n", "gone.py": None, "new.py": "z = 4\n"})
    before, after = _blob_ids(repo, base, head)
    changed = {"a b/keep.py", "gone.py", "moved.py", "new.py", "arrived.py"}
    assert set(before) == set(after) == changed
    assert {p for p, oid in before.items() if oid is None} == {"new.py", "arrived.py"}  # absent in the base
    assert {p for p, oid in after.items() if oid is None} == {"gone.py", "moved.py"}
    wanted = [(base, p) for p in sorted(changed)] + [(head, p) for p in sorted(changed)]
    reader = BlobReader(repo)
    try:
        by_path = reader.read_many(wanted)
        by_id = reader.read_many(wanted, [(before if rev == base else after)[p] for rev, p in wanted])
    finally:
        reader.close()
    assert by_id == by_path
    for (rev, path), data in zip(wanted, by_path):
        oid = (before if rev == base else after)[path]
        assert data == (None if oid is None else git_bytes(repo, "cat-file", "blob", f"{rev}:{path}"))


def test_flags_without_run_says_how_to_run_what_holds_it(tmp_path: Path, capsys):
    """A new user's first ``flags`` on a code change holds (not_run): the output says why and what to do."""
    root = based(tmp_path / "hold")
    git(root, "checkout", "-q", "-b", "patch")
    commit(root, "code", {"src/agg.py": AGG + "\n# tidy\n"})
    code = main(["flags", "--repo", str(root), "--base", "main", "--today", TODAY.isoformat()])
    out = capsys.readouterr().out
    assert code == 4 and "(not_run)" in out
    hint = next(line for line in out.splitlines() if "give --run" in line)
    assert "touched relation" in hint
