"""Does it bite (issue 3 item 6): mutation operators on snippets, and ``bite`` on the sample."""

from __future__ import annotations

import ast
import datetime as dt
import json
import re
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relconsole.cli.main import main
from relconsole.engine.gate.bite.bite import bite
from relconsole.engine.gate.bite.bitecache import cached_bite
from relconsole.engine.demo import materialise
from relconsole.engine.errors import EXIT_ABORT, EXIT_PASS, EXIT_REJECT, EXIT_USAGE, UsageError
from relconsole.engine.relations.mutations import mutants
from relconsole.engine.relations.operators import OPERATORS
from relconsole.engine.relations.targeting import TargetNotFound
from relconsole.engine.gate.review import load_review
from bench.gitrepo import git, reviewed_repo, write_files
from tests.conftest import TODAY

SNIPPET = textwrap.dedent('''
    """A module."""
    import math
    import re

    LIMIT = 3


    def helper(xs):
        return [x for x in xs]


    def other(a, b):
        return a < b


    def target(rows):
        """Every operator has a site in here."""
        if not rows:
            return []
        seen = set(rows)
        out = {}
        for r in sorted(seen):
            if r <= LIMIT:
                out[r] = max(r, 0)
        out.update({"n": 1.5})
        out.setdefault("m", 2)
        vals = list(out.values())
        vals.sort()
        label = str(rows[0]).strip().lower() if rows and out else ""
        head = rows[1:3]
        return [math.fsum(vals), rows == rows, {k: v for k, v in out.items()}, re.match(r"^a+$", label), head]
''')

STORE = textwrap.dedent('''
    class Store:
        def __init__(self):
            self.rows = {}

        def ingest(self, rows):
            for row in rows:
                self.rows[row["k"]] = row

        def projection(self):
            return sorted(self.rows)


    def make_store():
        return Store()


    def unrelated(x):
        return x > 1
''')

# A subject that ignores what its input holds: every mutant of it is permutation-invariant.
WEAK_SUBJECT = textwrap.dedent('''
    def count(rows):
        """How many rows there are."""
        total = 0
        for row in rows:
            total = total + 1
        return total
''')
WEAK_RELATION = textwrap.indent(textwrap.dedent('''
      - id: rows.count_invariant
        kind: permutation
        subject: weak:count
        input: {seeds: oracle/seeds/weak.jsonl}
        compare: exact
        params: {shuffles: 3, seed: 1}
        statement: Shuffling the rows leaves their count unchanged.
'''), "  ")


def top_level_dumps(source: str, skip: set[str]) -> list[str]:
    return [ast.dump(n) for n in ast.parse(source).body if getattr(n, "name", None) not in skip]


def function_dump(source: str, name: str) -> str:
    return next(ast.dump(n) for n in ast.parse(source).body if getattr(n, "name", None) == name)


# --- operators -------------------------------------------------------------------------

def test_every_operator_has_a_site_and_changes_only_the_target():
    found = mutants(SNIPPET, "target", limit=1000)
    assert {m.operator for m in found} == set(OPERATORS) | {"return_early"}
    for mutant in found:
        compile(mutant.source, "<mutant>", "exec")
        assert top_level_dumps(mutant.source, {"target"}) == top_level_dumps(SNIPPET, {"target"}), mutant.label
        assert function_dump(mutant.source, "target") != function_dump(SNIPPET, "target"), mutant.label
        assert mutant.function == "target" and mutant.label and mutant.line >= 16


@pytest.mark.parametrize(("operator", "before", "after"), [
    ("drop_sort", "for r in sorted(seen):", "for r in list(seen):"),
    ("drop_sort", "vals.sort()", None),
    ("boundary", "if r <= LIMIT:", "if r < LIMIT:"),
    ("negate", "rows == rows", "rows != rows"),
    ("drop_guard", "if not rows:", None),
    ("swap_args", "max(r, 0)", "max(0, r)"),
    ("constant", "1.5", "2.5"),
    ("first_only", "out[r] = max(r, 0)\n", "break"),
    ("drop_dedup", "seen = set(rows)", "seen = list(rows)"),
    ("drop_dedup", "out[r] = max(r, 0)", "out[str(r) + '#' + str(len(out))] = max(r, 0)"),
    ("uncompensated", "math.fsum(vals)", "sum(vals)"),
    ("return_early", "vals.sort()", "return\n"),
    ("drop_call", "str(rows[0]).strip().lower() if", "str(rows[0]).strip() if"),
    ("drop_call", "str(rows[0]).strip().lower() if", "str(rows[0]).lower() if"),
    ("regex", "re.match('^a+$', label)", "re.match('a+$', label)"),
    ("regex", "re.match('^a+$', label)", "re.match('^a+', label)"),
    ("regex", "re.match('^a+$', label)", "re.match('^a*$', label)"),
    ("and_or", "if rows and out else", "if rows or out else"),
    ("slice_bound", "rows[1:3]", "rows[1 + 1:3]"),
    ("slice_bound", "rows[1:3]", "rows[1:3 + 1]"),
])
def test_operator_edits(operator, before, after):
    texts = [m.source for m in mutants(SNIPPET, "target", limit=1000) if m.operator == operator]
    original = ast.unparse(ast.parse(SNIPPET))
    assert before in original
    if after is None:  # a removal: some mutant lacks the statement
        assert any(before not in t for t in texts)
    else:
        assert any(after in t and t != original for t in texts)


def test_mutating_the_module_behaves_differently():
    namespace: dict = {}
    mutant = next(m for m in mutants(SNIPPET, "target") if m.label.startswith("drop dedup: out[r]"))
    exec(compile(mutant.source, "<mutant>", "exec"), namespace)
    assert namespace["target"]([2, 1, 1])[2] == {"1#0": 1, "2#1": 2, "n": 1.5, "m": 2}


def test_helpers_one_level_deep_and_nothing_else():
    source = SNIPPET.replace("seen = set(rows)", "seen = set(helper(rows))")
    functions = {m.function for m in mutants(source, "target", limit=1000)}
    assert functions == {"target", "helper"}
    for mutant in mutants(source, "target", limit=1000):
        assert top_level_dumps(mutant.source, {"target", "helper"}) == \
            top_level_dumps(source, {"target", "helper"})


def test_factory_subject_mutates_the_returned_class_methods():
    found = mutants(STORE, "make_store", limit=1000)
    assert {m.function for m in found} == {"Store.ingest", "Store.projection"}
    assert all(top_level_dumps(m.source, {"Store"})[1:] == top_level_dumps(STORE, {"Store"})[1:] for m in found)
    assert {m.function for m in mutants(STORE, "Store", limit=1000)} == {"Store.ingest", "Store.projection"}
    assert {m.function for m in mutants(STORE, "Store.ingest", limit=1000)} == {"Store.ingest"}
    with pytest.raises(TargetNotFound):
        mutants(STORE, "Store.missing")


def test_mutants_are_deterministic_capped_and_spread_over_operators():
    assert mutants(SNIPPET, "target") == mutants(SNIPPET, "target")
    few = mutants(SNIPPET, "target", limit=6)
    assert len(few) == 6 and len({m.operator for m in few}) == 6
    assert [m.line for m in few] == sorted(m.line for m in few)
    everything = mutants(SNIPPET, "target", limit=1000)
    assert len({m.source for m in everything}) == len(everything)


# --- bite on the sample repository -------------------------------------------------------

def stocks_ok_day(repo: Path) -> dt.date:
    """A day on which the stocks lease (which the demo makes expired) is comfortably fresh."""
    text = git(repo, "show", "main:oracle/leases/stocks.yaml")
    expires = dt.date.fromisoformat(re.search(r"^expires:\s*(\S+)", text, re.MULTILINE).group(1))
    return expires - dt.timedelta(days=30)


@pytest.fixture(scope="module")
def sample(tmp_path_factory) -> Path:
    repo = materialise(tmp_path_factory.mktemp("bite") / "sample", TODAY)
    git(repo, "checkout", "-q", "main")
    return repo


@pytest.fixture(scope="module")
def reports(sample: Path) -> dict:
    before = git(sample, "status", "--porcelain", "--untracked-files=all")
    review = load_review(sample, "main", "HEAD", stocks_ok_day(sample))
    try:
        out = {r.id: bite(review, r.id) for r in review.relations}
    finally:
        review.close()
    assert before == "" and git(sample, "status", "--porcelain", "--untracked-files=all") == ""
    return out


@pytest.mark.parametrize("relation_id", ["penguins.order_invariant", "penguins.split_merge",
                                         "weather.replay_ingest", "rollout.monotonic", "codec.roundtrip"])
def test_every_sample_relation_bites(reports, relation_id):
    report = reports[relation_id]
    assert report.baseline == "held", report.verdict()
    assert report.bites is True and report.caught >= 1, report.verdict()
    assert report.total == len(report.results) > 0
    assert all(r.outcome in ("caught", "survived") and r.path == report.subject_path for r in report.results)
    assert "bites: caught" in report.verdict()


def test_a_lost_fsum_is_what_the_exact_permutation_relation_is_for(reports):
    result = next(r for r in reports["penguins.order_invariant"].results if r.operator == "uncompensated")
    assert result.outcome == "caught" and not result.crashed


def test_bite_results_are_cached_for_run_json(sample: Path, reports):
    review = load_review(sample, "main", "HEAD", stocks_ok_day(sample))
    try:
        for relation_id, report in reports.items():
            assert cached_bite(review, relation_id) is report.bites is True
        assert cached_bite(review, "no.such.relation") is None
    finally:
        review.close()
    cache = json.loads((sample / ".git" / "relconsole" / "bite.json").read_text())
    assert {entry["relation_id"] for entry in cache.values()} >= set(reports)


def test_blocked_relation_is_reported_not_run(sample: Path):
    review = load_review(sample, "main", "HEAD", TODAY)  # the demo's stocks lease is expired today
    try:
        report = bite(review, "codec.roundtrip")
    finally:
        review.close()
    assert report.baseline == "blocked" and report.bites is None and not report.results
    assert "expired" in report.verdict()


def test_a_relation_that_already_misses_is_reported_as_such(sample: Path):
    review = load_review(sample, "main", "agent/patch", TODAY)
    try:
        report = bite(review, "penguins.order_invariant")
    finally:
        review.close()
    assert report.baseline == "missed" and report.bites is None and not report.results
    assert "already misses" in report.verdict() and "would mean nothing" in report.verdict()


def test_unknown_relation_is_a_usage_error(sample: Path):
    review = load_review(sample, "main", "HEAD", TODAY)
    try:
        with pytest.raises(UsageError):
            bite(review, "no.such.relation")
    finally:
        review.close()


def test_mutants_never_leak_into_the_tree(sample: Path, tmp_path: Path):
    tree = tmp_path / "tree"
    original = git(sample, "show", "main:src/store.py").encode()
    seen: list[bool] = []
    review = load_review(sample, "main", "HEAD", TODAY)
    try:
        report = bite(review, "weather.replay_ingest", lambda r: seen.append(
            (tree / "src/store.py").read_bytes() == original), tree=tree)

        def explode(result):
            raise RuntimeError("stop after the first mutant")
        with pytest.raises(RuntimeError):
            bite(review, "weather.replay_ingest", explode, tree=tmp_path / "tree2")
    finally:
        review.close()
    assert seen and all(seen) and len(seen) == report.total
    assert (tree / "src/store.py").read_bytes() == original
    assert (tmp_path / "tree2/src/store.py").read_bytes() == original
    assert git(sample, "status", "--porcelain", "--untracked-files=all") == ""


# --- a weak relation, and the CLI ----------------------------------------------------------

@pytest.fixture
def weak_repo(demo_repo: Path) -> Path:
    git(demo_repo, "checkout", "-q", "main")
    (demo_repo / "src/weak.py").write_text(WEAK_SUBJECT, encoding="utf-8")
    (demo_repo / "oracle/seeds/weak.jsonl").write_text("[3, 1, 2]\n[5, 4]\n", encoding="utf-8")
    with open(demo_repo / "oracle/catalog.yaml", "a", encoding="utf-8") as catalog:
        catalog.write(WEAK_RELATION)
    git(demo_repo, "add", "src/weak.py", "oracle/seeds/weak.jsonl", "oracle/catalog.yaml")
    git(demo_repo, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-q", "-m", "weak relation")
    return demo_repo


def test_a_relation_over_an_input_blind_subject_does_not_bite(weak_repo: Path):
    review = load_review(weak_repo, "main", "HEAD", TODAY)
    try:
        assert cached_bite(review, "rows.count_invariant") is None
        report = bite(review, "rows.count_invariant")
        assert cached_bite(review, "rows.count_invariant") is False
    finally:
        review.close()
    assert report.baseline == "held" and report.total >= 3
    assert report.bites is False and report.caught == 0
    assert "does not bite" in report.verdict()


def cli(capsys, *args: str) -> tuple[int, str]:
    code = main(list(args))
    return code, capsys.readouterr().out


def test_cli_exit_codes_and_text(weak_repo: Path, capsys):
    common = ["--repo", str(weak_repo), "--today", TODAY.isoformat()]
    code, out = cli(capsys, "bite", "rows.count_invariant", *common)
    assert code == EXIT_REJECT
    lines = out.strip().splitlines()
    # the weak relation's seeds have no input schema: nothing is drawn from them
    assert all(re.match(r"^survived  .+  src/weak\.py:\d+  no input killed it: its seeds held.*, no input drawn$", line)
               for line in lines[:-1]), lines
    assert lines[-1].startswith("rows.count_invariant: does not bite")
    code, out = cli(capsys, "bite", "rollout.monotonic", "--json", *common)
    payload = json.loads(out)
    assert code == EXIT_PASS and payload["bites"] is True and payload["caught"] >= 1
    assert {"caught", "survived"} >= {m["outcome"] for m in payload["mutations"]}
    assert cli(capsys, "bite", "codec.roundtrip", *common)[0] == EXIT_ABORT  # blocked today
    assert cli(capsys, "bite", "no.such.relation", *common)[0] == EXIT_USAGE
    assert git(weak_repo, "status", "--porcelain", "--untracked-files=all") == ""


async def test_the_console_flags_a_relation_that_does_not_bite(weak_repo: Path):
    from relconsole.console.app import ReviewApp
    from tests.test_console import prompts, settle

    review = load_review(weak_repo, "main", "HEAD", TODAY)
    try:
        bite(review, "rows.count_invariant")
    finally:
        review.close()
    app = ReviewApp(repo=str(weak_repo), head_ref="main", today=TODAY, autorun=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        shown = prompts(app, "relations")
        assert "does not bite" in shown["r:rows.count_invariant"]
        assert not any("does not bite" in text for oid, text in shown.items()
                       if oid != "r:rows.count_invariant")


SHELF_IMPL = textwrap.dedent('''
    def spread(xs):
        """The largest value minus the smallest."""
        low, high = xs[0], xs[0]
        for x in xs[1:]:
            if x < low:
                low = x
            if x > high:
                high = x
        return high - low
''')


@pytest.mark.parametrize("init", ["from .impl import spread\n", "from .impl import *\n",
                                  "from shelf.impl import spread as spread\n", "from . import impl\nfrom .impl import spread\n"])
def test_a_subject_re_exported_from_a_package_is_mutated_where_it_is_defined(demo_repo: Path, init: str):
    """Issue 16: ``pkg:func`` where ``pkg/__init__.py`` re-exports ``func`` from ``pkg/impl.py``
    crashed bite with a TargetNotFound traceback (exit 1, the "does not bite" code)."""
    git(demo_repo, "checkout", "-q", "main")
    (demo_repo / "src/shelf").mkdir()
    (demo_repo / "src/shelf/__init__.py").write_text(init, encoding="utf-8")
    (demo_repo / "src/shelf/impl.py").write_text(SHELF_IMPL, encoding="utf-8")
    (demo_repo / "oracle/seeds/spread.jsonl").write_text("[3, 1, 2]\n[5, 4, 9, 1]\n[7]\n", encoding="utf-8")
    with open(demo_repo / "oracle/catalog.yaml", "a", encoding="utf-8") as catalog:
        catalog.write(WEAK_RELATION.replace("rows.count_invariant", "shelf.spread_order").replace(
            "weak:count", "shelf:spread").replace("weak.jsonl", "spread.jsonl"))
    git(demo_repo, "add", "-A")
    git(demo_repo, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-q", "-m", "shelf")
    review = load_review(demo_repo, "main", "HEAD", TODAY)
    try:
        report = bite(review, "shelf.spread_order")
        known = cached_bite(review, "shelf.spread_order")  # keyed on the defining file, not __init__.py
    finally:
        review.close()
    assert report.subject_path == "src/shelf/impl.py" and report.baseline == "held"
    assert report.total >= 3 and report.bites is True and known is True
    assert {r.path for r in report.results} == {"src/shelf/impl.py"} and not report.notes


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from(["survived", "caught by comparison", "caught by a crash"]), max_size=8))
def test_a_relation_that_catches_only_by_crashes_bites_by_crash_only(fates):
    """Issue 16: a mutant that raises is caught by any caller; a relation whose every catch was
    a crash has its own verdict, never "bites"."""
    from relconsole.engine.gate.bite.bitereport import BiteReport, MutationResult
    report = BiteReport("r", "m:f", "m.py", "held", "held", results=[
        MutationResult("op", "label", "m.py", 1, "f", "survived" if f == "survived" else "caught", "",
                       crashed=f.endswith("crash")) for f in fates])
    compared = "caught by comparison" in fates
    crashed = "caught by a crash" in fates
    assert report.bites is compared and report.crash_only is (crashed and not compared)
    words = report.verdict()
    assert (": bites:" in words, "bites by crash only" in words, "does not bite" in words) == (
        compared, crashed and not compared, not crashed and not compared)


# --- an adapter of the oracle: bite mutates the library it calls (issue 16) ------------------

VERS_CORE = textwrap.dedent('''
    """Versions as tuples of numbers."""


    class Version:
        """A dotted version; trailing zeros do not count."""

        def __init__(self, text):
            parts = [int(p) for p in str(text).strip().split(".")]
            while len(parts) > 1 and parts[-1] == 0:
                parts.pop()
            self.parts = tuple(parts)

        def __str__(self):
            return ".".join(str(p) for p in self.parts)

        def __lt__(self, other):
            return self.parts < other.parts

        def _debug(self):
            return repr(self.parts)


    def bump(version, index=-1):
        parts = list(version.parts)
        parts[index] = parts[index] + 1
        return Version(".".join(str(p) for p in parts))
''')
VERS_LIBRARY = {"src/vers/__init__.py": "from .core import Version, bump\n", "src/vers/core.py": VERS_CORE,
                "src/vers/extra.py": "def spare(x):\n    return x > 1\n"}
VERS_CATALOG = textwrap.dedent('''
    owners:
      "src/**": [vers.pad_invariant]
    relations:
      - id: vers.pad_invariant
        kind: invariance
        subject: SUBJECT
        transform: oracle.transforms:pad
        input: {seeds: oracle/seeds/versions.jsonl}
        compare: exact
        statement: A trailing .0 does not change how a version is written.
''')
# the transform module imports nothing of the tree: adapters a relation names are loaded
# before the tree is importable
VERS_ORACLE = {"oracle/transforms.py": 'def pad(x):\n    return x + ".0"\n',
               "oracle/seeds/versions.jsonl": '"1.2"\n"3.0.1"\n"10"\n"2.5.0"\n'}

# adapter variants: (files of the oracle, subject); each calls Version of the library
ADAPTERS = {
    "reexported": ({"oracle/adapters.py": "from vers import Version\n\n\ndef normal(x):\n"
                                          "    return str(Version(x))\n"}, "oracle.adapters:normal"),
    "import_in_function": ({"oracle/adapters.py": "def normal(x):\n    from vers import Version\n\n"
                                                  "    return str(Version(x))\n"}, "oracle.adapters:normal"),
    "star_import": ({"oracle/adapters.py": "from vers import *\n\n\ndef normal(x):\n"
                                           "    return str(Version(x))\n"}, "oracle.adapters:normal"),
    "module_attribute": ({"oracle/adapters.py": "import vers.core as vc\n\n\ndef normal(x):\n"
                                                "    return str(vc.Version(x))\n"}, "oracle.adapters:normal"),
    "same_basename_as_the_library": ({"oracle/core.py": "from vers import Version\n\n\ndef normal(x):\n"
                                                        "    return str(Version(x))\n"}, "oracle.core:normal"),
    "through_an_oracle_helper": ({
        "oracle/adapters.py": "from oracle.parsing import parse\n\n\ndef normal(x):\n    return str(parse(x))\n",
        "oracle/parsing.py": "def parse(x):\n    from vers.core import Version\n\n    return Version(x)\n"},
        "oracle.adapters:normal"),
    "guarded_import_and_a_key_function": ({
        "oracle/adapters.py": "try:\n    from vers import Version\nexcept ImportError:\n    Version = None\n\n\n"
                              "def normal(x):\n    return str(max([x], key=Version))\n"}, "oracle.adapters:normal"),
}


def vers_repo(root: Path, oracle: dict[str, str], subject: str, library: dict[str, str] | None = None) -> Path:
    files = {**(VERS_LIBRARY if library is None else library), **VERS_ORACLE, **oracle,
             "oracle/catalog.yaml": VERS_CATALOG.replace("SUBJECT", subject), "README.md": "versions\n"}
    return reviewed_repo(root, files)


def tree_files(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` (symlinks as their target text), bytecode caches left out."""
    out = {}
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root).as_posix()
        if ".git" in path.relative_to(root).parts or "__pycache__" in relative:
            continue
        if path.is_symlink():
            out[relative] = ("-> " + str(path.readlink())).encode()
        elif path.is_file():
            out[relative] = path.read_bytes()
    return out


def run_tree(repo: Path, dest: Path) -> dict[str, bytes]:
    """The files of a fresh run tree of HEAD (the oracle overlaid), as bite builds one."""
    from relconsole.engine.repo.workspace import build_run_tree
    review = load_review(repo, "main", "HEAD", TODAY)
    try:
        build_run_tree(review.repo, review.head_sha, review.oracle_dir, review.layout.protected, dest)
    finally:
        review.close()
    return tree_files(dest)


@pytest.mark.parametrize("variant", list(ADAPTERS))
def test_an_adapter_reaches_the_library_it_calls_statically(tmp_path: Path, variant: str):
    """The static resolution alone (no run): each way of importing ``Version`` from the oracle
    reaches the class in the library's defining file, and nothing of the oracle."""
    from relconsole.engine.gate.bite.adapterreach import adapter_reach, defining_file

    oracle, subject = ADAPTERS[variant]
    tree = tmp_path / "tree"
    write_files(tree, {**VERS_LIBRARY, **VERS_ORACLE, **oracle})
    module, attr = subject.split(":")
    roots = [str(tree), str(tree / "src")]
    path, attr = defining_file(tree, roots, module.replace(".", "/") + ".py", attr)
    reach = adapter_reach(tree, roots, path, attr, lambda p: p.startswith("oracle/"))
    assert reach.targets == {"src/vers/core.py": ["Version"]} and not reach.skipped
    assert path in reach.consulted and "src/vers/extra.py" not in reach.consulted


@pytest.mark.parametrize("variant", ["reexported", "import_in_function", "star_import",
                                     "same_basename_as_the_library"])
def test_bite_on_an_adapter_mutates_the_library_never_the_oracle(tmp_path: Path, variant: str):
    oracle, subject = ADAPTERS[variant]
    repo = vers_repo(tmp_path / "repo", oracle, subject)
    before = tree_files(repo)
    expected = run_tree(repo, tmp_path / "expected")
    tree = tmp_path / "tree"
    during: list[bool] = []
    review = load_review(repo, "main", "HEAD", TODAY)
    try:
        report = bite(review, "vers.pad_invariant", lambda r: during.append(
            tree_files(tree) == expected), tree=tree)
    finally:
        review.close()
    adapter = next(p for p in oracle if p.startswith("oracle/"))
    assert report.baseline == "held" and report.subject_path == adapter, report.verdict()
    assert report.total == len(report.results) > 0
    assert {r.path for r in report.results} == {"src/vers/core.py"}
    # what the adapter calls: Version's constructor, dunder and public methods; never a private
    # method, nor a function it does not call, nor anything of the oracle
    assert {r.function.split(".")[0] for r in report.results} == {"Version"}
    assert not any(r.function.endswith("._debug") for r in report.results)
    assert any(r.outcome == "caught" and not r.crashed for r in report.results)
    assert report.bites is True
    assert any("src/vers/core.py" in note and adapter in note for note in report.notes)
    # the file was restored after every mutant, the run tree and the repository are untouched
    assert during and all(during) and len(during) == report.total
    assert tree_files(tree) == expected
    assert tree_files(repo) == before and git(repo, "status", "--porcelain", "--untracked-files=all") == ""


def test_a_failing_progress_callback_still_restores_the_library_file(tmp_path: Path):
    oracle, subject = ADAPTERS["reexported"]
    repo = vers_repo(tmp_path / "repo", oracle, subject)
    expected = run_tree(repo, tmp_path / "expected")

    def explode(result):
        raise RuntimeError("stop after the first mutant")
    review = load_review(repo, "main", "HEAD", TODAY)
    try:
        with pytest.raises(RuntimeError):
            bite(review, "vers.pad_invariant", explode, tree=tmp_path / "tree")
    finally:
        review.close()
    assert tree_files(tmp_path / "tree") == expected


def test_an_adapter_that_reaches_only_the_standard_library_is_mutated_itself_and_says_so(tmp_path: Path):
    adapter = ("import re\n\n\ndef normal(x):\n    parts = re.split(r'\\.', x)\n"
               "    while len(parts) > 1 and parts[-1] == '0':\n        parts.pop()\n    return '.'.join(parts)\n")
    repo = vers_repo(tmp_path / "repo", {"oracle/adapters.py": adapter}, "oracle.adapters:normal")
    review = load_review(repo, "main", "HEAD", TODAY)
    try:
        report = bite(review, "vers.pad_invariant")
    finally:
        review.close()
    assert report.baseline == "held" and report.total > 0, report.verdict()
    assert {r.path for r in report.results} == {"oracle/adapters.py"} == {report.subject_path}
    assert report.notes and all("oracle/adapters.py" in note for note in report.notes)
    assert report.to_json()["notes"] == report.notes


@pytest.mark.parametrize("link", ["file", "folder"])
def test_a_library_file_reached_through_a_symlink_is_never_written(tmp_path: Path, link: str):
    """The library's file (or its package folder) is a link to another place in the tree: it
    is skipped with a reason, and the adapter is not mutated in its place."""
    library = {"vendor/vers/__init__.py": VERS_LIBRARY["src/vers/__init__.py"], "vendor/vers/core.py": VERS_CORE}
    if link == "file":
        library["src/vers/__init__.py"] = VERS_LIBRARY["src/vers/__init__.py"]
    repo = vers_repo(tmp_path / "repo", ADAPTERS["reexported"][0], "oracle.adapters:normal", library)
    if link == "file":
        (repo / "src/vers/core.py").symlink_to("../../vendor/vers/core.py")
    else:
        (repo / "src").mkdir()
        (repo / "src/vers").symlink_to("../vendor/vers")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "the library through a link")
    expected = run_tree(repo, tmp_path / "expected")
    review = load_review(repo, "main", "HEAD", TODAY)
    try:
        report = bite(review, "vers.pad_invariant", tree=tmp_path / "tree")
    finally:
        review.close()
    assert report.baseline == "held", report.verdict()  # the link works for Python
    assert not report.results and report.bites is not True
    assert any("src/vers" in note and "symlink" in note for note in report.notes)
    assert tree_files(tmp_path / "tree") == expected
    assert git(repo, "status", "--porcelain", "--untracked-files=all") == ""


def test_a_library_file_linked_out_of_the_tree_is_skipped_not_a_target(tmp_path: Path):
    from relconsole.engine.gate.bite.adapterreach import adapter_reach

    outside = tmp_path / "outside" / "core.py"
    outside.parent.mkdir()
    outside.write_text(VERS_CORE)
    tree = tmp_path / "tree"
    write_files(tree, {"src/vers/__init__.py": VERS_LIBRARY["src/vers/__init__.py"], **ADAPTERS["reexported"][0]})
    (tree / "src/vers/core.py").symlink_to(outside)
    reach = adapter_reach(tree, [str(tree), str(tree / "src")], "oracle/adapters.py", "normal",
                          lambda p: p.startswith("oracle/"))
    assert reach.targets == {}
    assert len(reach.skipped) == 1 and "src/vers/core.py" in reach.skipped[0] and str(outside) in reach.skipped[0]
    assert outside.read_text() == VERS_CORE


def test_the_cache_key_follows_the_library_file_an_adapter_reaches(tmp_path: Path):
    oracle, subject = ADAPTERS["reexported"]
    repo = vers_repo(tmp_path / "repo", oracle, subject)

    def bite_once() -> tuple[bool | None, object]:
        review = load_review(repo, "main", "HEAD", TODAY)
        try:
            known = cached_bite(review, "vers.pad_invariant")
            return known, bite(review, "vers.pad_invariant")
        finally:
            review.close()

    def cached() -> bool | None:
        review = load_review(repo, "main", "HEAD", TODAY)
        try:
            return cached_bite(review, "vers.pad_invariant")
        finally:
            review.close()

    def commit(path: str, text: str) -> None:
        (repo / path).write_text(text)
        git(repo, "commit", "-q", "-am", f"change {path}")

    known, first = bite_once()
    assert known is None and first.bites is True and cached() is True
    commit("README.md", "versions, told differently\n")  # no file bite read or mutated
    commit("src/vers/extra.py", "def spare(x):\n    return x >= 1\n")
    assert cached() is True
    commit("src/vers/core.py", VERS_CORE + "\n\ndef later(x):\n    return x\n")  # the mutated file
    known, second = bite_once()
    assert known is None and second.key != first.key and cached() is second.bites


def test_entry_functions_of_a_class_and_choose_spreads_over_functions():
    from relconsole.engine.relations.mutations import choose, module_mutants
    from relconsole.engine.relations.targeting import entry_functions

    module = ast.parse(VERS_CORE)
    assert [name for name, _ in entry_functions(module, "Version")] == \
        ["Version.__init__", "Version.__str__", "Version.__lt__"]
    found = module_mutants(VERS_CORE, ["Version", "bump"])
    functions = {m.function for m in found}
    assert functions >= {"Version.__init__", "bump"} and "Version._debug" not in functions
    # one long function with many sites of one operator does not crowd out the others
    items = [("a.py", "f", i) for i in range(30)] + [("b.py", "g", 0)]
    chosen = choose(items, 3, lambda item: "op", lambda item: (item[0], item[1]))
    assert len(chosen) == 3 and ("b.py", "g", 0) in chosen
    assert chosen == [item for item in items if item in chosen]


def test_the_cli_shows_library_paths_and_the_note_for_an_adapter(tmp_path: Path, capsys):
    oracle, subject = ADAPTERS["module_attribute"]
    repo = vers_repo(tmp_path / "repo", oracle, subject)
    code, out = cli(capsys, "bite", "vers.pad_invariant", "--repo", str(repo), "--today", TODAY.isoformat())
    lines = out.strip().splitlines()
    progress = [line for line in lines if line.startswith(("caught", "survived"))]
    assert code == EXIT_PASS and progress
    assert all(re.search(r"  src/vers/core\.py:\d+\b", line) for line in progress)
    assert not any("oracle/" in line for line in progress)
    notes = [line for line in lines if line not in progress][:-1]
    assert notes and any("src/vers/core.py" in line and "oracle/adapters.py" in line for line in notes)
    assert git(repo, "status", "--porcelain", "--untracked-files=all") == ""


@given(st.text(alphabet="{}ab01 ", min_size=1, max_size=6))
def test_a_comparison_with_braces_in_its_source_is_mutated_and_labelled(literal):
    """Tried on pypa/packaging: ``letter in {"a", "b", "rc"}`` crashed bite (the label was
    built with str.format over the source text)."""
    source = f"def f(x):\n    return x in {{{literal!r}, 'b'}} and x < {literal!r}\n"
    found = mutants(source, "f")
    labels = [m.label for m in found]
    assert any("not in" in label for label in labels) and any(" <= " in label for label in labels), labels


# --- a library shaped like pallets/markupsafe (found by a new user on it) ---------------------
# ``escape`` calls ``_escape_inner``, imported from a compiled ``._speedups`` (no source in the
# tree) or else from ``._native``; ``Markup`` has many public methods (in markupsafe's order),
# of which the adapter uses ``unescape`` only. The old bite spent its 40 mutants on escape and
# Markup's methods, caught only two by a crash ("bites by crash only"), and never mutated the
# function that escapes.

MARKS_INIT = textwrap.dedent('''
    try:
        from ._speedups import _escape_inner
    except ImportError:
        from ._native import _escape_inner


    def escape(s):
        if type(s) is str:
            return Markup(_escape_inner(s))
        if hasattr(s, "__html__"):
            return Markup(s.__html__())
        return Markup(_escape_inner(str(s)))


    class Markup(str):
        def __new__(cls, base="", encoding=None, errors="strict"):
            if hasattr(base, "__html__"):
                base = base.__html__()
            if encoding is None:
                return super().__new__(cls, base)
            return super().__new__(cls, base, encoding, errors)

        def __html__(self):
            return self

        def __add__(self, value):
            if isinstance(value, str) or hasattr(value, "__html__"):
                return self.__class__(super().__add__(escape(value)))
            return NotImplemented

        def __radd__(self, value):
            if isinstance(value, str) or hasattr(value, "__html__"):
                return escape(value).__add__(self)
            return NotImplemented

        def __mul__(self, value):
            return self.__class__(super().__mul__(value))

        def __rmul__(self, value):
            return self.__class__(super().__mul__(value))

        def __mod__(self, value):
            if isinstance(value, tuple):
                value = tuple(escape(x) for x in value)
            elif hasattr(type(value), "__getitem__") and not isinstance(value, str):
                value = {k: escape(v) for k, v in value.items()}
            else:
                value = (escape(value),)
            return self.__class__(super().__mod__(value))

        def __repr__(self):
            return f"{self.__class__.__name__}({super().__repr__()})"

        def join(self, items):
            return self.__class__(super().join([escape(x) for x in items]))

        def split(self, sep=None, maxsplit=-1):
            return [self.__class__(v) for v in super().split(sep, maxsplit)]

        def rsplit(self, sep=None, maxsplit=-1):
            return [self.__class__(v) for v in super().rsplit(sep, maxsplit)]

        def splitlines(self, keepends=False):
            return [self.__class__(v) for v in super().splitlines(keepends)]

        def unescape(self):
            from html import unescape
            return unescape(str(self))

        def striptags(self):
            value = str(self)
            while (start := value.find("<!--")) != -1:
                if (end := value.find("-->", start)) == -1:
                    break
                value = value[:start] + value[end + 3:]
            while (start := value.find("<")) != -1:
                if (end := value.find(">", start)) == -1:
                    break
                value = value[:start] + value[end + 1:]
            return self.__class__(" ".join(value.split())).unescape()

        def center(self, width, fillchar=" "):
            if width < 0 or width > 1000:
                raise ValueError(width)
            return self.__class__(super().center(width, escape(fillchar)))

        def ljust(self, width, fillchar=" "):
            if width <= 0:
                return self
            return self.__class__(super().ljust(width, escape(fillchar)))

        def lower(self):
            return self.__class__(super().strip().lower())

        def upper(self):
            return self.__class__(super().strip().upper())

        def capitalize(self):
            return self.__class__(super().strip().capitalize())
''')
MARKS_NATIVE = textwrap.dedent('''
    def _escape_inner(s, /):
        return (
            s.replace("&", "&amp;")
            .replace(">", "&gt;")
            .replace("<", "&lt;")
            .replace("'", "&#39;")
            .replace('"', "&#34;")
        )
''')
MARKS_ADAPTERS = textwrap.dedent('''
    from marks import Markup, escape


    def escape_text(row):
        return str(escape(row["text"]))


    def unescape_text(escaped):
        return {"text": Markup(escaped).unescape()}
''')
MARKS_CATALOG = textwrap.dedent('''
    owners:
      "src/**": [marks.escape_roundtrip]
    relations:
      - id: marks.escape_roundtrip
        kind: roundtrip
        subject: oracle.adapters:escape_text
        inverse: oracle.adapters:unescape_text
        input:
          seeds: oracle/seeds/marks.jsonl
          schema:
            text: str
        compare: exact
        params:
          encoded: str
        statement: Escaping a row's text for HTML and unescaping it again gives back the same text.
''')
MARKS_SEEDS = "".join(json.dumps({"text": t}) + "\n" for t in [
    "plain words", "<script>alert('x')</script>", 'Tom & Jerry say "hi"', "already &amp; escaped &lt;b&gt;",
    "a > b && c < d", ""])
MARKS = {"src/marks/__init__.py": MARKS_INIT, "src/marks/_native.py": MARKS_NATIVE,
         "src/marks/_speedups.pyi": "def _escape_inner(s: str, /) -> str: ...\n",  # built from C: no .py
         "oracle/adapters.py": MARKS_ADAPTERS, "oracle/catalog.yaml": MARKS_CATALOG,
         "oracle/seeds/marks.jsonl": MARKS_SEEDS, "README.md": "marks\n"}
# what the relation runs: escape_text -> escape -> _escape_inner (in _native.py) and Markup(...)
# (its constructor, its __html__); unescape_text -> Markup(...).unescape()
MARKS_RUN = {("src/marks/__init__.py", "escape"), ("src/marks/__init__.py", "Markup.__new__"),
             ("src/marks/__init__.py", "Markup.__html__"), ("src/marks/__init__.py", "Markup.unescape"),
             ("src/marks/_native.py", "_escape_inner")}


@pytest.fixture(scope="module")
def marks_report(tmp_path_factory) -> tuple[Path, object]:
    repo = reviewed_repo(tmp_path_factory.mktemp("marks") / "repo", MARKS)
    review = load_review(repo, "main", "HEAD", TODAY)
    try:
        report = bite(review, "marks.escape_roundtrip")
    finally:
        review.close()
    assert git(repo, "status", "--porcelain", "--untracked-files=all") == ""
    return repo, report


def test_an_adapter_s_library_callee_behind_a_try_import_is_mutated(marks_report):
    """``escape`` calls ``_escape_inner``, bound by ``try: from ._speedups ... except
    ImportError: from ._native ...``: the compiled module has no source, the fallback is
    followed one level into ``_native.py``, and its function is mutated."""
    _, report = marks_report
    assert report.baseline == "held", report.verdict()
    native = [r for r in report.results if r.path == "src/marks/_native.py"]
    assert native and {r.function for r in native} == {"_escape_inner"}
    # a swapped replace("&", "&amp;") loses an escape: the roundtrip's comparison sees it
    assert any(r.outcome == "caught" and not r.crashed for r in native)
    assert any("src/marks/_native.py" in note and "_escape_inner" in note for note in report.notes)


def test_most_mutants_are_in_what_the_adapter_runs_not_in_unused_public_methods(marks_report):
    _, report = marks_report
    ran = [r for r in report.results if (r.path, r.function) in MARKS_RUN]
    unused = [r for r in report.results if (r.path, r.function) not in MARKS_RUN]
    assert report.total > 0 and len(ran) > len(unused), [(r.path, r.function) for r in report.results]
    # the method the adapter calls on an instance is mutated, and so is the function it calls
    assert {"Markup.unescape", "escape"} <= {r.function for r in ran}
    # the notes name what was mutated first: the adapter's functions, not only ``escape``
    first = next(note for note in report.notes if "adapter of the oracle" in note)
    assert all(name in first for _, name in MARKS_RUN)
    assert "Markup.striptags" not in first


def test_the_markup_shaped_relation_bites_by_comparison(marks_report):
    _, report = marks_report
    assert report.bites is True and not report.crash_only, report.verdict()
    assert report.caught > report.crashed
    assert report.summary.verdict == "bites"


def test_import_alternatives_keep_each_branch_of_a_try_in_order():
    from relconsole.engine.relations.bindings import Binding, import_alternatives

    names, stars = import_alternatives(ast.parse(MARKS_INIT).body)
    assert names["_escape_inner"] == [Binding("_speedups", 1, "_escape_inner"), Binding("_native", 1, "_escape_inner")]
    assert not stars
    source = "from a import f\nif X:\n    from b import f\nimport c\nimport c as d\n"
    names, _ = import_alternatives(ast.parse(source).body)
    assert names["f"] == [Binding("b", 0, "f"), Binding("a", 0, "f")]  # the branch may not run
    assert names["c"] == [Binding("c")] and names["d"] == [Binding("c")]


def test_library_functions_prefer_what_the_caller_uses():
    from relconsole.engine.relations.targeting import library_functions

    module = ast.parse(MARKS_INIT)
    first, later = library_functions(module, "Markup", {"unescape"})
    assert set(first) == {"Markup.__new__", "Markup.__html__", "Markup.unescape"}
    assert {"Markup.striptags", "Markup.__add__", "Markup.lower"} <= set(later) and not set(first) & set(later)
    # a function: itself and, one level, the class it calls: the constructor first
    first, later = library_functions(module, "escape")
    assert first[0] == "escape" and "Markup.__new__" in first and "Markup.unescape" not in first
    assert "Markup.striptags" in later
    # a method calling its own class's method on self: that method is reached too
    assert library_functions(module, "Markup.striptags") == (["Markup.striptags"], [])
    first, _ = library_functions(ast.parse("class C:\n    def a(self):\n        return self._b()\n\n"
                                           "    def _b(self):\n        return 1\n"), "C.a")
    assert first == ["C.a", "C._b"]


def relconsole_files(repo: Path) -> dict[str, bytes]:
    return tree_files(repo / ".git" / "relconsole") if (repo / ".git" / "relconsole").is_dir() else {}


def test_reached_library_paths_reads_git_objects_and_writes_nothing(tmp_path: Path):
    from relconsole.engine.gate.bite.bitetargets import reached_library_paths

    # the patch makes escape call a function of a new module, which calls one of another
    init = MARKS_INIT.replace("from ._native import _escape_inner\n",
                              "from ._native import _escape_inner\nfrom ._quote import quote\n").replace(
        "return Markup(_escape_inner(s))", "return Markup(quote(_escape_inner(s)))")
    repo = reviewed_repo(tmp_path / "repo", MARKS, {
        "src/marks/__init__.py": init, "src/marks/_deep.py": "def same(s):\n    return s\n",
        "src/marks/_quote.py": "from ._deep import same\n\n\ndef quote(s):\n    return same(s)\n"})
    before = tree_files(repo)
    review = load_review(repo, "main", "HEAD", TODAY)
    try:
        kept = relconsole_files(repo)
        relation = review.catalog.get("marks.escape_roundtrip")
        head = reached_library_paths(review, relation)
        base = reached_library_paths(review, "marks.escape_roundtrip", review.merge_base)
        assert relconsole_files(repo) == kept  # no tree store, no cache entry
    finally:
        review.close()
    assert base == ["src/marks/__init__.py", "src/marks/_native.py"]
    # one level into other modules: _quote.py is escape's callee; _deep.py is _quote's, not reached
    assert head == ["src/marks/__init__.py", "src/marks/_native.py", "src/marks/_quote.py"]
    assert tree_files(repo) == before and git(repo, "status", "--porcelain", "--untracked-files=all") == ""


def test_a_name_a_package_re_exports_under_a_try_import_is_followed_to_its_source(tmp_path: Path):
    """``pkg/__init__.py``: ``try: from ._speedups import escape except ImportError: from
    ._escape import escape``; the adapter calls ``pkg.escape``: the compiled module has no
    source, the definition in ``_escape.py`` is the target."""
    from relconsole.engine.gate.bite.adapterreach import adapter_reach

    tree = tmp_path / "tree"
    write_files(tree, {
        "src/pkg/__init__.py": "try:\n    from ._speedups import escape\nexcept ImportError:\n"
                               "    from ._escape import escape\n",
        "src/pkg/_escape.py": "def escape(s):\n    return s.replace('&', '&amp;')\n",
        "oracle/adapters.py": "import pkg\n\n\ndef esc(x):\n    return pkg.escape(x)\n"})
    reach = adapter_reach(tree, [str(tree), str(tree / "src")], "oracle/adapters.py", "esc",
                          lambda p: p.startswith("oracle/"))
    assert reach.targets == {"src/pkg/_escape.py": ["escape"]}
    assert reach.functions == {"src/pkg/_escape.py": ["escape"]}


def test_reached_library_paths_of_other_subjects(tmp_path: Path):
    from relconsole.engine.gate.bite.bitetargets import reached_library_paths

    adapter = ("import re\n\n\ndef normal(x):\n    return '.'.join(re.split(r'\\.', x))\n")
    stdlib_only = vers_repo(tmp_path / "stdlib", {"oracle/adapters.py": adapter}, "oracle.adapters:normal")
    library = vers_repo(tmp_path / "library", {}, "vers:bump")
    linked = vers_repo(tmp_path / "oracle_helper", *ADAPTERS["through_an_oracle_helper"])
    found = {}
    for name, repo in (("stdlib", stdlib_only), ("library", library), ("helper", linked)):
        review = load_review(repo, "main", "HEAD", TODAY)
        try:
            found[name] = reached_library_paths(review, "vers.pad_invariant")
        finally:
            review.close()
    assert found == {"stdlib": [], "library": ["src/vers/core.py"], "helper": ["src/vers/core.py"]}


def test_reached_library_paths_agree_with_what_bite_mutates(marks_report):
    from relconsole.engine.gate.bite.bitetargets import reached_library_paths

    repo, report = marks_report
    review = load_review(repo, "main", "HEAD", TODAY)
    try:
        paths = reached_library_paths(review, "marks.escape_roundtrip")
    finally:
        review.close()
    assert set(paths) >= {r.path for r in report.results} and paths == sorted(paths)


# --- the verdict word, cached and shown as the CLI prints it ------------------------------------

# every row (a list) has a first element; a mutant reading the second crashes on the
# one-element row, and nothing else the subject does changes with the order of the rows
CRASHY_SUBJECT = textwrap.dedent('''
    def count(rows):
        """How many rows there are."""
        total = 0
        for row in rows:
            total = total + 1
            row[0]
        return total
''')


@pytest.fixture
def crashy_repo(weak_repo: Path) -> Path:
    (weak_repo / "src/weak.py").write_text(CRASHY_SUBJECT, encoding="utf-8")
    (weak_repo / "oracle/seeds/weak.jsonl").write_text("[[3, 4], [1], [2, 5]]\n[[5, 6]]\n", encoding="utf-8")
    git(weak_repo, "add", "src/weak.py", "oracle/seeds/weak.jsonl")
    git(weak_repo, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-q", "-m", "crashy")
    return weak_repo


async def test_the_console_and_run_json_say_what_the_cli_said_of_a_crash_only_relation(crashy_repo: Path, capsys):
    """The console said "does not bite" of a relation bite had found to bite by crash only
    (the cache kept a boolean): it shows the CLI's own words now, as ``run --json`` does."""
    from relconsole.console import views
    from relconsole.console.app import ReviewApp
    from tests.test_console import prompts, settle

    common = ["--repo", str(crashy_repo), "--today", TODAY.isoformat()]
    code, out = cli(capsys, "bite", "rows.count_invariant", *common)
    said = out.strip().splitlines()[-1]
    rid, _, words = said.partition(": ")
    assert rid == "rows.count_invariant" and code == EXIT_REJECT
    word = words.split(":")[0]
    assert word == "bites by crash only", said  # the case this test is about

    app = ReviewApp(repo=str(crashy_repo), head_ref="main", today=TODAY, autorun=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        shown = prompts(app, "relations")
        header = views.relation_header(app.review, app.review.catalog.get(rid)).plain
    assert f"⚠ {word}" in shown[f"r:{rid}"] and "does not bite" not in shown[f"r:{rid}"]
    assert f"⚠ {words}" in header.splitlines() and "does not bite" not in header

    from relconsole.engine.gate.bite.bitecache import cached_verdict
    review = load_review(crashy_repo, "main", "HEAD", TODAY)
    try:
        cached = cached_verdict(review, rid)
        assert cached_bite(review, rid) is False
    finally:
        review.close()
    assert cached is not None and cached.verdict == word and cached.words() == words
    assert cached.caught == cached.crashed > 0

    code, out = cli(capsys, "run", "--json", "--relation", rid, "--relation", "rollout.monotonic", *common)
    rows = {r["relation_id"]: r for r in json.loads(out)["relations"]}
    assert rows[rid]["bites"] is False and rows[rid]["bite"]["verdict"] == word
    assert (rows[rid]["bite"]["caught"], rows[rid]["bite"]["total"]) == (cached.caught, cached.total)
    assert rows["rollout.monotonic"]["bite"] is None and rows["rollout.monotonic"]["bites"] is None
