"""Touched paths and their owners (SPEC §3 owners, §8 exit 2), on real git repositories,
and `relconsole bind`'s exit code and gap list.

Touched paths come from real commits in ``tmp_path`` (renames, deletions and names with
spaces, quotes, non-ASCII, ``[bold]`` and newlines). Which pattern matches which path is
checked against git itself (``git check-ignore --no-index``, the reference for
"gitignore-style"), and last-match-wins against a brute-force reference written here.
"""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path

import git
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.gitrepo import hermetic_git
from relconsole.cli.main import main as relconsole_main
from relconsole.engine.repo.touched import Touched, touched_paths
from relconsole.engine.literal import one_line
from relconsole.engine.repo.owners import EXEMPT, GAP, OWNED, PROTECTED, bind, gaps, winning_pattern

PROTECTED_PATTERNS = ("oracle/**",)


class Repo:
    """A scratch git repository driven with plain git commands."""

    def __init__(self, root: Path):
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        hermetic_git(root, "init", "-q", "-b", "main")
        self._n = itertools.count()

    def write(self, path: str, text: str | None = None) -> None:
        target = self.root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        # distinct bodies, so rename detection pairs only what we moved
        target.write_text(text if text is not None else f"body of {path!r} #{next(self._n)}\n" * 20,
                          encoding="utf-8")

    def commit(self, message: str = "c") -> str:
        hermetic_git(self.root, "add", "-A")
        hermetic_git(self.root, "commit", "-q", "--allow-empty", "-m", message)
        return hermetic_git(self.root, "rev-parse", "HEAD").decode().strip()

    def mv(self, old: str, new: str) -> None:
        (self.root / new).parent.mkdir(parents=True, exist_ok=True)
        hermetic_git(self.root, "mv", "--", old, new)

    def rm(self, path: str) -> None:
        hermetic_git(self.root, "rm", "-q", "--", path)

    def touched(self, base: str, head: str) -> list[Touched]:
        return touched_paths(git.Repo(self.root), base, head)


OWNERS = [
    ("src/**", ["core.all"]),
    ("src/aggregator.py", ["agg.order", "agg.split"]),
    ("src/store/**", ["store.replay"]),
    ("docs/**", []),
    ("tests/**", []),
]

ODD_NAMES = [
    "src/with space.py",
    "src/it's \"quoted\".py",
    "src/ünïcødé-π.py",
    "src/[bold].py",
    "src/[red]x[/red].py",
    "src/new\nline.py",
    "src/tab\there.py",
    "src/back\\slash.py",
    "src/-leading-dash.py",
]


# --- touched paths from real commits -------------------------------------------------------

@pytest.fixture
def repo(tmp_path) -> Repo:
    return Repo(tmp_path / "repo")


def test_odd_names_come_back_verbatim_as_additions(repo):
    repo.write("README.md")
    base = repo.commit()
    for name in ODD_NAMES:
        repo.write(name)
    head = repo.commit()
    touched = repo.touched(base, head)
    assert sorted(t.path for t in touched) == sorted(ODD_NAMES)
    assert {t.status for t in touched} == {"A"}
    assert all(t.old_path is None for t in touched)


def test_odd_names_are_owned_by_the_pattern_that_covers_them(repo):
    repo.write("README.md")
    base = repo.commit()
    for name in ODD_NAMES:
        repo.write(name)
    repo.write("docs/it's \"q\" ü [bold].md")
    repo.write("weird [bold]/x\ny.txt")
    repo.write("oracle/data/ü.csv")
    head = repo.commit()
    bindings = {b.path: b for b in bind(OWNERS, repo.touched(base, head), PROTECTED_PATTERNS)}
    for name in ODD_NAMES:
        assert bindings[name].state == OWNED and bindings[name].relations == ("core.all",)
    assert bindings["docs/it's \"q\" ü [bold].md"].state == EXEMPT
    assert bindings["weird [bold]/x\ny.txt"].state == GAP
    assert bindings["oracle/data/ü.csv"].state == PROTECTED
    assert [b.path for b in gaps(list(bindings.values()))] == ["weird [bold]/x\ny.txt"]


_counter = itertools.count()
_component = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="/\x00"),
    min_size=1, max_size=24,
).filter(lambda s: s not in (".", "..") and not s.lower().startswith(".git")
         and len(s.encode("utf-8")) < 200)


@pytest.fixture(scope="module")
def shared_repo(tmp_path_factory) -> Repo:
    shared = Repo(tmp_path_factory.mktemp("names") / "repo")
    shared.write("README.md")
    shared.commit()
    return shared


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(names=st.lists(_component, min_size=1, max_size=4, unique=True))
def test_any_file_name_is_reported_exactly(shared_repo, names):
    base = hermetic_git(shared_repo.root, "rev-parse", "HEAD").decode().strip()
    folder = f"ex{next(_counter)}"
    for name in names:
        shared_repo.write(f"{folder}/{name}")
    head = shared_repo.commit()
    touched = shared_repo.touched(base, head)
    assert sorted(t.path for t in touched) == sorted(f"{folder}/{n}" for n in names)


def test_rename_reports_both_paths(repo):
    repo.write("src/aggregator.py")
    base = repo.commit()
    repo.mv("src/aggregator.py", "src/it's a [bold] ü\nname.py")
    head = repo.commit()
    [moved] = repo.touched(base, head)
    assert (moved.status, moved.old_path, moved.path) == ("R", "src/aggregator.py", "src/it's a [bold] ü\nname.py")


def test_rename_into_an_owned_pattern_is_owned(repo):
    repo.write("docs/draft.py")
    base = repo.commit()
    repo.mv("docs/draft.py", "src/store/draft.py")
    head = repo.commit()
    [binding] = bind(OWNERS, repo.touched(base, head), PROTECTED_PATTERNS)
    assert binding.state == OWNED
    assert binding.pattern == "src/store/**"
    assert binding.relations == ("store.replay",)


def test_rename_out_of_an_owned_pattern_into_nowhere_is_a_gap(repo):
    repo.write("src/aggregator.py")
    base = repo.commit()
    repo.mv("src/aggregator.py", "attic/aggregator.py")
    head = repo.commit()
    [binding] = bind(OWNERS, repo.touched(base, head), PROTECTED_PATTERNS)
    assert binding.state == GAP
    assert binding.path == "attic/aggregator.py"


def test_rename_into_an_exempt_place_keeps_the_old_owners(repo):
    """Moving owned code under docs/ must not silently drop the relations that guarded it."""
    repo.write("src/aggregator.py")
    base = repo.commit()
    repo.mv("src/aggregator.py", "docs/aggregator.py")
    head = repo.commit()
    touched = repo.touched(base, head)
    [binding] = bind(OWNERS, touched, PROTECTED_PATTERNS)
    assert binding.touched.status == "R"
    old_owners = set(winning_pattern(OWNERS, "src/aggregator.py")[1])
    assert old_owners <= set(binding.relations)
    assert binding.state != EXEMPT


def test_deletion_is_bound_by_the_deleted_path(repo):
    repo.write("src/store/db.py")
    repo.write("docs/old.md")
    base = repo.commit()
    repo.rm("src/store/db.py")
    repo.rm("docs/old.md")
    head = repo.commit()
    touched = repo.touched(base, head)
    assert {(t.status, t.path) for t in touched} == {("D", "src/store/db.py"), ("D", "docs/old.md")}
    states = {b.path: (b.state, b.relations) for b in bind(OWNERS, touched, PROTECTED_PATTERNS)}
    assert states["src/store/db.py"] == (OWNED, ("store.replay",))
    assert states["docs/old.md"] == (EXEMPT, ())


def test_exempt_gap_and_protected_are_told_apart(repo):
    repo.write("README.md")
    base = repo.commit()
    for path in ("docs/guide.md", "tools/new.sh", "oracle/catalog.yaml", "src/x.py"):
        repo.write(path)
    head = repo.commit()
    states = {b.path: b.state for b in bind(OWNERS, repo.touched(base, head), PROTECTED_PATTERNS)}
    assert states == {"docs/guide.md": EXEMPT, "tools/new.sh": GAP,
                      "oracle/catalog.yaml": PROTECTED, "src/x.py": OWNED}
    # an owner pattern wins over protection: it is then an ordinary owned path
    with_oracle = OWNERS + [("oracle/**", ["core.all"])]
    states = {b.path: b.state for b in bind(with_oracle, repo.touched(base, head), PROTECTED_PATTERNS)}
    assert states["oracle/catalog.yaml"] == OWNED


def test_a_protected_file_moved_to_an_exempt_place_stays_protected(repo):
    """Deleting oracle/catalog.yaml binds as protected; moving it under docs/ showed only
    'R docs/… exempt' (red team): a move out of the oracle is as protected as its deletion."""
    repo.write("oracle/catalog.yaml")
    base = repo.commit()
    repo.mv("oracle/catalog.yaml", "docs/catalog.yaml")
    head = repo.commit()
    [moved] = bind(OWNERS, repo.touched(base, head), PROTECTED_PATTERNS)
    repo.rm("docs/catalog.yaml")
    [deleted] = bind(OWNERS, repo.touched(base, repo.commit()), PROTECTED_PATTERNS)
    assert moved.touched.status == "R" and deleted.touched.status == "D"
    assert moved.state == deleted.state == PROTECTED


# --- patterns: git is the reference ----------------------------------------------------------

POOL_PATTERNS = [
    "src/**", "src/*.py", "*.py", "docs/**", "**/test_*.py", "src/store/**", "src/aggregator.py",
    "/README.md", "README.md", "tests/", "src/[bold].py", "src/\\[bold\\].py", "**/ü*", "oracle/**",
    "src/store", "*.md", "lib/**/x.py", "src/*", "**", "docs/*/", "a b/**", "**/*.csv",
]
POOL_PATHS = [
    "src/aggregator.py", "src/store/db.py", "src/store", "src/[bold].py", "src/b.py",
    "src/new\nline.py", "docs/it's \"q\" ü.md", "docs/a b/c.md", "README.md", "sub/README.md",
    "tests/test_x.py", "tests/unit/test_y.py", "lib/a/b/x.py", "lib/x.py", "oracle/data/ü.csv",
    "ü-notes.txt", "x.pyc", "a b/c d.txt", "src/store/deep/er.py", "docs/x",
]
RELATION_IDS = ["r.a", "r.b", "r.c", "r.d"]


@pytest.fixture(scope="module")
def git_matches(tmp_path_factory) -> dict[str, set[str]]:
    """pattern -> the pool paths git's own ignore matcher says it matches."""
    root = tmp_path_factory.mktemp("checkignore")
    hermetic_git(root, "init", "-q")
    out = {}
    for pattern in POOL_PATTERNS:
        (root / ".gitignore").write_text(pattern + "\n", encoding="utf-8")
        raw = hermetic_git(root, "check-ignore", "--no-index", "-z", "--stdin",
                      input="\0".join(POOL_PATHS).encode() + b"\0", check=False)
        out[pattern] = {p.decode() for p in raw.split(b"\0") if p}
    return out


def test_single_patterns_match_as_git_matches(git_matches):
    from relconsole.engine.repo.owners import matches
    for pattern in POOL_PATTERNS:
        ours = {p for p in POOL_PATHS if matches(pattern, p)}
        assert ours == git_matches[pattern], pattern


def test_brackets_in_a_pattern_are_a_class_unless_escaped(git_matches):
    assert "src/b.py" in git_matches["src/[bold].py"]
    assert "src/[bold].py" not in git_matches["src/[bold].py"]
    assert git_matches["src/\\[bold\\].py"] == {"src/[bold].py"}
    owners = [("src/[bold].py", ["r.class"]), ("src/\\[bold\\].py", ["r.literal"])]
    result = {b.path: b.relations for b in bind(owners, [Touched("A", "src/[bold].py"),
                                                         Touched("A", "src/b.py")])}
    assert result == {"src/[bold].py": ("r.literal",), "src/b.py": ("r.class",)}


def reference_binding(owners, item: Touched, git_matches) -> tuple[str, set[str]]:
    """Brute force: walk every pattern in order, remember the last that git says matches."""
    def winner(path):
        found = None
        for pattern, ids in owners:
            if path in git_matches[pattern]:
                found = (pattern, ids)
        return found

    new = winner(item.path)
    old = winner(item.old_path) if item.status == "R" else None
    ids = set(new[1] if new else ()) | set(old[1] if old else ())
    if new is None:
        return (PROTECTED if item.path in git_matches["oracle/**"] else GAP), ids
    if ids:
        return OWNED, ids
    moved_out_of_the_oracle = item.status == "R" and item.old_path in git_matches["oracle/**"]
    return (PROTECTED if moved_out_of_the_oracle else EXEMPT), ids


_owners = st.lists(st.tuples(st.sampled_from(POOL_PATTERNS),
                             st.lists(st.sampled_from(RELATION_IDS), max_size=2, unique=True)),
                   max_size=8)
_touched_item = st.one_of(
    st.builds(Touched, st.sampled_from("AMD"), st.sampled_from(POOL_PATHS)),
    st.builds(lambda new, old: Touched("R", new, old), st.sampled_from(POOL_PATHS), st.sampled_from(POOL_PATHS)),
)


@settings(max_examples=400, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(owners=_owners, touched=st.lists(_touched_item, max_size=8))
def test_last_matching_pattern_wins(git_matches, owners, touched):
    bindings = bind([(p, list(ids)) for p, ids in owners], touched, PROTECTED_PATTERNS)
    assert [b.touched for b in bindings] == touched
    for binding in bindings:
        state, ids = reference_binding(owners, binding.touched, git_matches)
        assert binding.state == state, binding
        assert set(binding.relations) == ids, binding
        assert len(binding.relations) == len(set(binding.relations))
        if state in (OWNED, EXEMPT):
            last = [p for p, _ in owners if binding.path in git_matches[p]][-1]
            assert binding.pattern == last


@settings(max_examples=200, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(owners=_owners, touched=st.lists(_touched_item, max_size=8), seed=st.integers(0, 2**32))
def test_binding_does_not_depend_on_the_order_of_touched_paths(owners, touched, seed):
    shuffled = list(touched)
    random.Random(seed).shuffle(shuffled)
    owners = [(p, list(ids)) for p, ids in owners]
    key = lambda b: (b.touched.status, b.path, b.touched.old_path or "")
    one = sorted(((key(b), b.state, b.pattern, b.relations) for b in bind(owners, touched, PROTECTED_PATTERNS)))
    two = sorted(((key(b), b.state, b.pattern, b.relations) for b in bind(owners, shuffled, PROTECTED_PATTERNS)))
    assert one == two


@settings(max_examples=200)
@given(owners=_owners, paths=st.lists(st.sampled_from(POOL_PATHS), min_size=1, max_size=6),
       catch_all=st.lists(st.sampled_from(RELATION_IDS), max_size=2, unique=True))
def test_a_final_catch_all_decides_everything(owners, paths, catch_all):
    owners = [(p, list(ids)) for p, ids in owners] + [("**", catch_all)]
    for binding in bind(owners, [Touched("M", p) for p in paths], PROTECTED_PATTERNS):
        assert binding.pattern == "**"
        assert binding.relations == tuple(catch_all)
        assert binding.state == (OWNED if catch_all else EXEMPT)


@settings(max_examples=200)
@given(owners=_owners, paths=st.lists(st.sampled_from(POOL_PATHS), min_size=1, max_size=6),
       first=st.lists(st.sampled_from(RELATION_IDS), max_size=2, unique=True))
def test_a_leading_catch_all_only_fills_gaps(owners, paths, first):
    owners = [(p, list(ids)) for p, ids in owners]
    touched = [Touched("M", p) for p in paths]
    before = bind(owners, touched, PROTECTED_PATTERNS)
    after = bind([("**", first)] + owners, touched, PROTECTED_PATTERNS)
    for old, new in zip(before, after):
        if old.state in (GAP, PROTECTED):
            assert new.pattern == "**" and new.relations == tuple(first)
        else:
            assert (new.state, new.pattern, new.relations) == (old.state, old.pattern, old.relations)


def test_rename_within_its_owner_keeps_the_owner(repo):
    repo.write("src/store/db.py")
    base = repo.commit()
    repo.mv("src/store/db.py", "src/store/engine/db ü.py")
    head = repo.commit()
    [binding] = bind(OWNERS, repo.touched(base, head), PROTECTED_PATTERNS)
    assert (binding.touched.status, binding.touched.old_path) == ("R", "src/store/db.py")
    assert binding.state == OWNED
    assert binding.pattern == winning_pattern(OWNERS, "src/store/db.py")[0]
    assert set(binding.relations) == set(winning_pattern(OWNERS, "src/store/db.py")[1])


# --- `relconsole bind`: exit 2 and every gap listed (SPEC §3 owners, §8) -----------------------

RELATION_IDS_OWNED = sorted({rid for _pattern, ids in OWNERS for rid in ids})
# placed where no pattern of OWNERS reaches: every one must be reported
UNOWNED = ["tools/new.sh", "attic/ü x.py", "weird [bold]/a\nb.txt", "Makefile", "sub/dir/deep.cfg"]


def cli_bind(capsys, root: Path, *extra: str) -> tuple[int, str]:
    capsys.readouterr()
    code = relconsole_main(["bind", "--repo", str(root), "--head", "patch", "--today", "2026-01-15", *extra])
    return code, capsys.readouterr().out


@pytest.fixture
def reviewed(tmp_path) -> Repo:
    """main holds the catalog (OWNERS) and the code; branch ``patch`` adds the UNOWNED paths,
    moves one owned file within its owner and one out of every owner, edits an owned one."""
    repo = Repo(tmp_path / "reviewed")
    relations = [{"id": rid, "kind": "idempotence", "subject": "mod:f", "input": {"seeds": "oracle/seeds/s.jsonl"},
                  "compare": "exact", "statement": f"{rid} holds."} for rid in RELATION_IDS_OWNED]
    repo.write("oracle/catalog.yaml", json.dumps({"owners": dict(OWNERS), "relations": relations}, indent=1))
    repo.write("oracle/seeds/s.jsonl", '"a"\n')
    for path in ("src/aggregator.py", "src/store/db.py", "src/util.py", "docs/guide.md"):
        repo.write(path)
    repo.commit("base")
    hermetic_git(repo.root, "checkout", "-q", "-b", "patch")
    for path in UNOWNED:
        repo.write(path)
    repo.mv("src/store/db.py", "src/store/engine.py")
    repo.mv("src/aggregator.py", "attic/aggregator.py")
    repo.write("src/util.py")
    repo.commit("patch")
    return repo


def test_bind_exits_2_and_lists_every_gap_in_json(reviewed, capsys):
    code, out = cli_bind(capsys, reviewed.root, "--json")
    payload = json.loads(out)
    expected = UNOWNED + ["attic/aggregator.py"]
    assert code == 2
    assert sorted(payload["gaps"]) == sorted(expected) and len(payload["gaps"]) == len(expected)
    states = {p["path"]: p for p in payload["paths"]}
    assert all((states[p]["state"], states[p]["relations"]) == (GAP, []) for p in UNOWNED)
    moved_out = states["attic/aggregator.py"]
    assert (moved_out["status"], moved_out["old_path"], moved_out["state"]) == ("R", "src/aggregator.py", GAP)
    # the relations of the old place still guard the moved code, and are named
    assert set(moved_out["relations"]) == set(winning_pattern(OWNERS, "src/aggregator.py")[1])
    kept = states["src/store/engine.py"]
    assert (kept["status"], kept["old_path"], kept["state"]) == ("R", "src/store/db.py", OWNED)
    assert kept["pattern"] == winning_pattern(OWNERS, "src/store/engine.py")[0]
    assert set(winning_pattern(OWNERS, "src/store/db.py")[1]) <= set(kept["relations"])
    assert states["src/util.py"]["state"] == OWNED


def test_bind_exits_2_and_lists_every_gap_in_text(reviewed, capsys):
    code, out = cli_bind(capsys, reviewed.root)
    assert code == 2
    lines = out.splitlines()
    for path in UNOWNED:
        assert f"A  {one_line(path)}  gap" in lines, path
    assert any(line.startswith("R  attic/aggregator.py  gap") for line in lines)
    assert sum(1 for line in lines if line.split("  ")[2:3] == ["gap"]) == len(UNOWNED) + 1
    assert any(line.startswith("R  src/store/engine.py  owned") for line in lines)


def test_bind_exits_0_once_main_owns_every_touched_path(reviewed, capsys):
    """Control: the same patch passes when the base's owner map places the gaps."""
    hermetic_git(reviewed.root, "checkout", "-q", "main")
    catalog = json.loads((reviewed.root / "oracle/catalog.yaml").read_text(encoding="utf-8"))
    catalog["owners"] = {"**": [], **catalog["owners"]}  # first: the last match still wins
    reviewed.write("oracle/catalog.yaml", json.dumps(catalog, indent=1))
    reviewed.commit("catalog: every other path exempt")
    code, out = cli_bind(capsys, reviewed.root, "--json")
    payload = json.loads(out)
    assert code == 0 and payload["gaps"] == []
    states = {p["path"]: p["state"] for p in payload["paths"]}
    assert {states[p] for p in UNOWNED} == {EXEMPT}
    assert states["attic/aggregator.py"] == OWNED  # exempt place, but the old owners still apply


def test_an_owner_pattern_git_would_refuse_is_a_bad_input_file_with_its_line(reviewed, capsys):
    """A trailing unescaped backslash is not a gitignore pattern: exit 5 naming the catalog
    and the pattern's line, on the base where the oracle is read, not a traceback."""
    hermetic_git(reviewed.root, "checkout", "-q", "main")
    catalog = json.loads((reviewed.root / "oracle/catalog.yaml").read_text())
    catalog["owners"]["docs\\"] = []
    text = json.dumps(catalog, indent=1)
    reviewed.write("oracle/catalog.yaml", text)
    reviewed.commit("catalog: a broken pattern")
    hermetic_git(reviewed.root, "checkout", "-q", "patch")
    capsys.readouterr()
    code = relconsole_main(["bind", "--repo", str(reviewed.root), "--head", "patch", "--today", "2026-01-15"])
    err = capsys.readouterr().err
    line = next(n for n, row in enumerate(text.splitlines(), 1) if '"docs\\\\"' in row)
    assert code == 5 and f"oracle/catalog.yaml:{line}:" in err and "docs" in err
