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

from relconsole.cli import main
from relconsole.engine.bite import bite, cached_bite
from relconsole.engine.demo import materialise
from relconsole.engine.errors import EXIT_ABORT, EXIT_PASS, EXIT_REJECT, EXIT_USAGE, UsageError
from relconsole.engine.mutations import OPERATORS, TargetNotFound, mutants
from relconsole.engine.review import load_review
from tests.conftest import TODAY, git

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
    assert all(re.match(r"^survived  .+  src/weak\.py:\d+$", line) for line in lines[:-1])
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
    from relconsole.engine.bite import BiteReport, MutationResult
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
    from tests.conftest import reviewed_repo
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
    from relconsole.engine.workspace import build_run_tree
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
    from relconsole.engine.bite import adapter_reach, defining_file

    oracle, subject = ADAPTERS[variant]
    tree = tmp_path / "tree"
    for path, text in {**VERS_LIBRARY, **VERS_ORACLE, **oracle}.items():
        (tree / path).parent.mkdir(parents=True, exist_ok=True)
        (tree / path).write_text(text)
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
    from relconsole.engine.bite import adapter_reach

    outside = tmp_path / "outside" / "core.py"
    outside.parent.mkdir()
    outside.write_text(VERS_CORE)
    tree = tmp_path / "tree"
    for path, text in {"src/vers/__init__.py": VERS_LIBRARY["src/vers/__init__.py"],
                       **ADAPTERS["reexported"][0]}.items():
        (tree / path).parent.mkdir(parents=True, exist_ok=True)
        (tree / path).write_text(text)
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
    from relconsole.engine.mutations import choose, entry_functions, module_mutants

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
    assert all(re.search(r"  src/vers/core\.py:\d+$", line) for line in progress)
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
