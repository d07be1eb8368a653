"""The indexed owner matcher agrees with the straightforward one (SPEC §3 owners: last match wins).

``OwnerIndex`` only looks up candidate patterns by key; the reference here is
``owners.winning_pattern``, which tries every pattern with ``owners.matches``. Pattern
lists come from a gitignore grammar (exact files, directories, ``**``, extensions, ``?``,
``[..]``, escapes, leading and trailing slashes, negations, comments, invalid patterns,
duplicates) over a small vocabulary, and paths from the same vocabulary (dotfiles, spaces,
non-ASCII, odd slashes, newlines), so that they share prefixes and names with the patterns.
Where the index decides without pathspec's regex, the regex shapes it relies on are pinned;
the hard edges are also checked against git itself (``git check-ignore --no-index``).
"""

from __future__ import annotations

import os
import random
import re
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relconsole.engine.repo.touched import Touched
from relconsole.engine.repo.ownerindex import OwnerIndex
from relconsole.engine.repo.ownerkeys import _key
from relconsole.engine.repo.ownerspec import compile_spec
from relconsole.engine.repo.owners import bind, matches, protected, protection, winning_pattern

# pathspec's regex for a bracket holding "[" (from the grammar's odd patterns) draws this from re
pytestmark = pytest.mark.filterwarnings("ignore:Possible nested set:FutureWarning")

NAMES = ["src", "lib", "a", "b", "docs", "build", "x.py", "README.md", ".env", ".github", "my dir",
         "ünï", "π.md", "test_x.py", "b.tar.gz", "[bold].py", "x", "xy", "**", "*.py", "!x", "#x",
         "a b", "café.txt", "setup.cfg"]
EXTENSIONS = ["py", "md", "gz", "tar.gz", "txt", "cfg", "", "ü"]


# strategies built once (building them inside a draw is what makes hypothesis slow)
_NAME = st.sampled_from(NAMES)
_FLIP = st.booleans()
_SEGMENT_KIND = st.sampled_from(["literal", "literal", "literal", "star", "double", "ext", "question",
                                 "bracket", "prefix", "raw_text"])
_EXT_HEAD = st.sampled_from(["*.", "*", "test_*.", "**."])
_EXTENSION = st.sampled_from(EXTENSIONS)
_QUESTION = st.sampled_from(["?", "x?", "?.py", "??", "b.tar.?z", ".?nv"])
_BRACKET = st.sampled_from(["[ab]", "[!a]", "[^x]y", "[a-c]*", "*.[ch]", "[]]", "[]a]", "[!]]", "[!]a]x", "x[.]py",
                            "[\\]]", "[ab", "src[", "[bold].py"])
_PREFIX = st.sampled_from(["x*", "ü*", "test_*", ".*", "a*b", "*x*"])
_RAW = st.text(alphabet="ab.x*?/\\[]! ü", min_size=0, max_size=6)
_SPECIAL = st.sampled_from(["", "#comment", "/", "**", "*", "*/", "**/", "/**", "x\\", "a\\/b", "\\#x",
                            "\\!x", "foo\\ ", "foo  ", " lead", "a/**/**/b", "**/**", "!", "! ", "!/",
                            "src/a.py", "/src/", "src/**/", "**/src/**", "x.py/", "//x", "a//b/"])
_TRAILER = st.sampled_from([" ", "  ", "\\ ", "\t"])
_ODDS = st.integers(0, 24)
_DIE = st.integers(0, 9)
_COMPONENT = st.one_of(
    _NAME,
    st.builds(lambda stem, ext: f"{stem}.{ext}", st.sampled_from(["x", "a", ".b", "test_x", "ü"]), _EXTENSION),
    st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="/\x00"),
            min_size=1, max_size=8))


@st.composite
def segment(draw) -> str:
    kind = draw(_SEGMENT_KIND)
    if kind == "literal":
        # escape what a pattern would read as a wildcard, sometimes a needless "\!" too
        return "".join("\\" + c if c in "*?[]\\" or (c == "!" and draw(_FLIP)) else c for c in draw(_NAME))
    if kind == "star":
        return "*"
    if kind == "double":
        return "**"
    if kind == "ext":
        return draw(_EXT_HEAD) + draw(_EXTENSION)
    return draw({"question": _QUESTION, "bracket": _BRACKET, "prefix": _PREFIX, "raw_text": _RAW}[kind])


_SEGMENTS = st.lists(segment(), min_size=1, max_size=4)


@st.composite
def pattern(draw) -> str:
    if draw(_DIE) == 0:
        return draw(_SPECIAL)
    text = "/".join(draw(_SEGMENTS))
    if draw(_DIE) < 2:
        text = "/" + text
    if draw(_DIE) < 3:
        text += "/"
    if draw(_DIE) == 0:
        text = "!" + text
    if draw(_DIE) == 0:
        text += draw(_TRAILER)
    return text


_PATTERN = pattern()
_POOL = st.lists(_PATTERN, min_size=1, max_size=12)


@st.composite
def owner_list(draw) -> list[tuple[str, list[str]]]:
    pool = draw(_POOL)
    picks = draw(st.lists(st.sampled_from(pool), max_size=25))  # duplicates on purpose
    return [(p, [f"rel.{n}"] if n % 4 else []) for n, p in enumerate(picks)]


_COMPONENTS = st.lists(_COMPONENT, min_size=1, max_size=5)


@st.composite
def path(draw) -> str:
    text = "/".join(draw(_COMPONENTS))
    odd = draw(_ODDS)
    if odd == 0:
        text += "\n"
    elif odd == 1:
        text = text.replace("/", "//", 1)
    elif odd == 2:
        text += "/"
    elif odd == 3:
        text = "/" + text
    return text


def outcome(fn, *args):
    """What a call returns, or the exception type it raises (an invalid pattern raises)."""
    try:
        return "ok", fn(*args)
    except Exception as exc:  # noqa: BLE001 - compared between the two matchers
        return "raises", type(exc)


def reference_index(owners, item) -> int | None:
    for index in range(len(owners) - 1, -1, -1):
        if matches(owners[index][0], item):
            return index
    return None


@settings(max_examples=600, deadline=None)
@given(owners=owner_list(), paths=st.lists(path(), min_size=1, max_size=12))
def test_indexed_winner_is_the_straightforward_winner(owners, paths):
    index = OwnerIndex(owners)
    for item in paths:
        assert outcome(index.winner_index, item) == outcome(reference_index, owners, item), (owners, item)
        assert outcome(index.winner, item) == outcome(winning_pattern, owners, item), (owners, item)
    # and all at once, as bind asks (odd paths among clean ones, directories shared)
    expected = [outcome(reference_index, owners, item) for item in paths]
    if all(kind == "ok" for kind, _ in expected):
        assert OwnerIndex(owners).winner_indexes(paths) == [answer for _, answer in expected]
    else:
        assert outcome(OwnerIndex(owners).winner_indexes, paths)[0] == "raises"


@settings(max_examples=300, deadline=None)
@given(owners=owner_list(), paths=st.lists(path(), min_size=1, max_size=8))
def test_paths_built_from_the_patterns_own_literals(owners, paths):
    """Paths that are the patterns themselves, their parents and children: every prefix key."""
    derived = []
    for pat, _ in owners:
        raw = pat.lstrip("!/").replace("\\", "")
        plain = raw.rstrip()
        derived += [raw, plain, plain.rstrip("/"), plain + "/child.py", "deep/" + plain, plain.rsplit("/", 1)[0],
                    "deep/" + plain + "\n"]
    index = OwnerIndex(owners)
    for item in [p for p in derived if p] + paths:
        assert outcome(index.winner, item) == outcome(winning_pattern, owners, item), (owners, item)


@settings(max_examples=200, deadline=None)
@given(owners=owner_list(), paths=st.lists(path(), min_size=1, max_size=8), protect=st.lists(pattern(), max_size=4))
def test_bind_answers_as_winning_pattern_does(owners, paths, protect):
    """bind (one index per call) names the straightforward winner of every new and old path."""
    touched = [Touched("R", new, old if n % 2 else None) if n % 3 == 0 else Touched("M", new) for n, (new, old)
               in enumerate(zip(paths, reversed(paths)))]  # a rename row without its old path too
    got = outcome(bind, owners, touched, tuple(protect))
    expected_failure = any(outcome(winning_pattern, owners, p)[0] == "raises" for t in touched
                           for p in (t.path, t.old_path) if p) or \
        any(outcome(protected, protect, t.path)[0] == "raises" for t in touched
            if outcome(winning_pattern, owners, t.path) == ("ok", None))
    if expected_failure:
        assert got[0] == "raises"
        return
    for binding in got[1]:
        hit = winning_pattern(owners, binding.path)
        old = winning_pattern(owners, binding.touched.old_path) if binding.touched.old_path else None
        assert binding.pattern == (hit[0] if hit else None)
        assert set(binding.relations) == set(hit[1] if hit else ()) | set(old[1] if old else ())
        if hit is None:
            assert (binding.state == "protected") == protected(protect, binding.path)


@settings(max_examples=300, deadline=None)
@given(patterns=st.lists(pattern(), max_size=6), paths=st.lists(path(), min_size=1, max_size=8))
def test_protection_is_protected(patterns, paths):
    guarded = protection(patterns)
    for item in paths:
        assert outcome(guarded, item) == outcome(protected, patterns, item), (patterns, item)


def test_a_large_owner_list_agrees_path_by_path():
    """Hundreds of patterns in the same buckets (shared prefixes, names, extensions)."""
    rng = random.Random(5)
    vocabulary = NAMES + ["*", "**", "*.py", "test_*.py", "[ab]", "x?", "*.md"]
    owners = []
    for n in range(300):
        segs = [rng.choice(vocabulary) for _ in range(rng.randint(1, 4))]
        text = ("/" if rng.random() < 0.2 else "") + "/".join(segs) + ("/" if rng.random() < 0.2 else "")
        owners.append(("!" + text if rng.random() < 0.05 else text, [f"rel.{n}"]))
    paths = ["/".join(rng.choice(NAMES) for _ in range(rng.randint(1, 5))) for _ in range(400)]
    index = OwnerIndex(owners)
    for item in paths:
        assert index.winner(item) == winning_pattern(owners, item), item


# --- the shapes the index decides without a regex -------------------------------------------

_PLAIN = st.text(alphabet="ab.-_ üπ#!x", min_size=1, max_size=6).filter(
    lambda t: t.strip() == t and t[0] not in "!#" and t != "**")
DIR_MARK, FILE_OR_DIR = "(?P<ps_d>/)", "(?:(?P<ps_d>/)|$)"
# shape -> (how to write a pattern of it from literal segments, the bucket, pathspec's regex for it)
SHAPES = {
    "file": (lambda segs: "/".join(segs) if len(segs) > 1 else "/" + segs[0], "file",
             lambda lit: f"^{lit}{FILE_OR_DIR}"),
    "under": (lambda segs: "/".join(segs) + "/**", "under", lambda lit: f"^{lit}/"),
    "under_dir": (lambda segs: "/".join(segs) + "/" if len(segs) > 1 else "/" + segs[0] + "/", "under",
                  lambda lit: f"^{lit}{DIR_MARK}"),
    "name": (lambda segs: segs[0], "name_any", lambda lit: f"^(?:.+/)?{lit}{FILE_OR_DIR}"),
    "name_deep": (lambda segs: "**/" + segs[0], "name_any", lambda lit: f"^(?:.+/)?{lit}{FILE_OR_DIR}"),
    "dirname": (lambda segs: segs[0] + "/", "name_dir", lambda lit: f"^(?:.+/)?{lit}{DIR_MARK}"),
    "dirname_deep": (lambda segs: "**/" + segs[0] + "/**", "name_dir", lambda lit: f"^(?:.+/)?{lit}/"),
}


@settings(max_examples=200, deadline=None)
@given(shape=st.sampled_from(sorted(SHAPES)), segs=st.lists(_PLAIN, min_size=1, max_size=3))
def test_the_shapes_decided_by_lookup_are_the_regexes_pathspec_builds(shape, segs):
    """The index decides these shapes by the key alone (a prefix, a component); that is
    right only while pathspec compiles them to these regexes, which this pins."""
    write, bucket, regex = SHAPES[shape]
    text = write(segs)
    [compiled] = compile_spec(text).patterns
    assert compiled.include is True
    literal = re.escape("/".join(segs) if bucket in ("file", "under") else segs[0])
    assert compiled.regex.pattern == regex(literal), text
    assert _key(text)[:2] == (bucket, "/".join(segs) if bucket in ("file", "under") else segs[0])


_GLOB_SEGMENT = st.sampled_from(["*", "*.py", "test_*.py", "?", "x?", "[ab]", "[!a]*", "*.[ch]", "a*b", "x", "a b"])


@settings(max_examples=200, deadline=None)
@given(lead=st.lists(_PLAIN, min_size=1, max_size=2), deep=st.booleans(),
       rest=st.lists(_GLOB_SEGMENT, min_size=1, max_size=3).filter(lambda r: r[0] not in ("x", "a b")))
def test_a_prefix_pattern_is_its_prefix_then_its_remainder(lead, deep, rest):
    """The index decides ``L/REST`` by the regex of ``/REST`` (``**/REST``) on the path after
    ``L/``; that is right while pathspec compiles ``L/REST`` to ``^L/`` (``^L(?:/.+)?/``)
    followed by that regex, which this pins."""
    text = "/".join(lead) + ("/**/" if deep else "/") + "/".join(rest)
    remainder = ("**/" if deep else "/") + "/".join(rest)
    [full] = compile_spec(text).patterns
    [tail] = compile_spec(remainder).patterns
    assert _key(text)[::3] == ("prefix", remainder)
    head = "^(?:.+/)?" if deep else "^"
    if not tail.regex.pattern.startswith(head):  # pathspec's special cases (**/*): the index uses the full regex
        return
    joint = "(?:/.+)?/" if deep else "/"
    assert full.regex.pattern == "^" + re.escape("/".join(lead)) + joint + tail.regex.pattern[len(head):]


# --- hard edges, with git as the reference --------------------------------------------------

def git_ignored(root: Path, pattern_text: str, paths: list[str]) -> set[str]:
    """The ``paths`` git's own ignore matcher says one ``pattern_text`` matches."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1")
    (root / ".gitignore").write_text(pattern_text + "\n", encoding="utf-8")
    done = subprocess.run(["git", "check-ignore", "--no-index", "-z", "--stdin"], cwd=root, env=env,
                          input="\0".join(paths).encode() + b"\0", capture_output=True, check=False)
    return {p.decode() for p in done.stdout.split(b"\0") if p}


@pytest.fixture(scope="module")
def git_root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("edges")
    subprocess.run(["git", "init", "-q", str(root)], check=True, capture_output=True)
    return root


EDGES = {
    # a directory pattern owns what is under a directory of that name, not a file so named
    "build/": ["build", "build/out.o", "a/build", "a/build/out.o", "builds/x", "a/build.txt"],
    # an unanchored name owns a middle directory's contents at any depth, and a file so named
    "fixtures": ["fixtures", "a/fixtures/b.json", "a/b/fixtures", "a/fixtures.json", "xfixtures/b"],
    # ** in the middle: zero or more directories between a and b
    "a/**/b": ["a/b", "a/x/b", "a/x/y/b", "a/x/y/b/c", "xa/b", "a/bb", "b/a/b", "a/b/c"],
    # a leading slash anchors a single name to the root
    "/README.md": ["README.md", "docs/README.md", "README.md/x"],
    "docs/*.md": ["docs/a.md", "docs/sub/a.md", "docs/.md", "xdocs/a.md"],
    "**/*.tar.gz": ["b.tar.gz", "a/b.tar.gz", "a/b.tar.gz/c", "b.tar.gzip", "a/.tar.gz"],
    "src/[ab]?.py": ["src/ax.py", "src/bb.py", "src/cx.py", "src/a.py", "src/ax.py/y"],
    "\\[bold\\].py": ["[bold].py", "x/[bold].py", "b.py"],
    "[]a]": ["a", "]", "x/a", "b", "a]"],
    "foo\\ ": ["foo ", "x/foo ", "foo", "foo  "],
}


@pytest.mark.parametrize("pattern_text", sorted(EDGES))
def test_hard_edges_match_as_git_matches(git_root, pattern_text):
    paths = EDGES[pattern_text]
    owned = {p for p in paths if OwnerIndex([(pattern_text, ["r"])]).winner(p) is not None}
    assert owned == git_ignored(git_root, pattern_text, paths)
    assert owned == {p for p in paths if matches(pattern_text, p)}
    assert owned and owned != set(paths)  # each edge case tells some paths apart


def test_directory_pattern_and_file_pattern_of_one_name_split_by_last_match():
    """``build/`` after ``build``: the directory's contents go to the later pattern, a file
    named build stays with the earlier one."""
    owners = [("build", ["r.file"]), ("build/", ["r.dir"])]
    index = OwnerIndex(owners)
    for item in ("build", "a/build", "build/x", "a/build/x/y"):
        assert index.winner(item) == winning_pattern(owners, item)
    assert index.winner("build") != index.winner("build/x")


def test_a_path_ending_in_a_newline_is_matched_as_the_regex_matches_it():
    """Python's ``$`` matches before a final newline, so ``foo`` owns ``a/foo<newline>``;
    the component keys do not see that, the fallback scan does."""
    owners = [("foo", ["r.name"]), ("*.py", ["r.ext"]), ("src/a.py", ["r.exact"]), ("docs/**", ["r.dir"])]
    index = OwnerIndex(owners)
    for item in ("a/foo\n", "x.py\n", "src/a.py\n", "docs\n", "a\nb/foo", "src/a.py\n\n"):
        assert index.winner(item) == winning_pattern(owners, item), repr(item)
    assert index.winner("a/foo\n") is not None


def test_odd_paths_in_a_batch_are_answered_as_alone():
    """A batch of clean paths skips the per-path checks; one odd path anywhere in it must not
    be taken for clean (git reports none of these, callers might)."""
    owners = [("x", ["r.name"]), ("/a", ["r.root"]), ("b/", ["r.dir"]), ("c/*.py", ["r.glob"]), ("d/**", ["r.d"])]
    odd = ["/x", "./a", "//a", "b/", "a//b", "", "x\n", "c/y.py/", "/d/e", "./c/z.py", "d//e"]
    for item in odd:
        for batch in ([item], ["c/k.py", item], ["c/k.py", item, "d/e"], [item, "b/q"]):
            expected = [winning_pattern(owners, p) for p in batch]
            assert [None if i is None else owners[i] for i in OwnerIndex(owners).winner_indexes(batch)] == expected, \
                repr(batch)


@pytest.mark.parametrize("owners, item", [
    ([("x\\", ["r.bad"]), ("src/**", ["r.src"])], "src/a.py"),       # invalid before the winner: not reached
    ([("src/**", ["r.src"]), ("x\\", ["r.bad"])], "src/a.py"),       # invalid after it: reached, raises
    ([("x\\", ["r.bad"]), ("src/**", ["r.src"])], "docs/a.md"),      # no winner: reached, raises
    ([("src/**", ["r.src"]), (["not", "a", "str"], ["r.odd"])], "src/a.py"),
])
def test_an_invalid_pattern_raises_exactly_where_the_loop_reaches_it(owners, item):
    assert outcome(OwnerIndex(owners).winner, item) == outcome(winning_pattern, owners, item)


@pytest.mark.parametrize("patterns", [["x\\", "oracle/**"], ["oracle/**", "x\\"], ["!oracle/**", "oracle/**"]])
def test_protection_stops_where_any_stops(patterns):
    for item in ("oracle/a.yaml", "src/a.py"):
        assert outcome(protection(patterns), item) == outcome(protected, patterns, item)


def test_negation_matches_nothing_and_never_wins():
    """In a one-pattern spec ``!x`` matches nothing, so it neither owns nor un-owns a path."""
    owners = [("src/**", ["r.src"]), ("!src/keep.py", ["r.neg"])]
    index = OwnerIndex(owners)
    assert index.winner("src/keep.py") == winning_pattern(owners, "src/keep.py") == owners[0]
    assert OwnerIndex([("!x", ["r"])]).winner("x") is None


def test_bind_builds_one_index_per_call(monkeypatch):
    import relconsole.engine.repo.owners as owners_module
    built = []
    real = owners_module.OwnerIndex

    def counting(owners):
        built.append(len(owners))
        return real(owners)

    monkeypatch.setattr(owners_module, "OwnerIndex", counting)
    owners = [("src/**", ["r.a"]), ("docs/**", [])]
    touched = [Touched("M", f"src/m{n}.py") for n in range(50)] + [Touched("R", "docs/x.md", "src/y.py")]
    bindings = bind(owners, touched, ("oracle/**",))
    assert [b.pattern for b in bindings] == [winning_pattern(owners, t.path)[0] for t in touched]
    assert len(built) == 2  # the owner map once, the protected patterns once


def test_plain_owner_patterns_need_no_pathspec_and_its_files_answer_as_it_does():
    """An index of plain patterns (the sample's) matches without importing pathspec (issue 17:
    10 ms of every start); what the index read of pathspec's files before importing it is
    what pathspec says once imported."""
    import subprocess
    import sys
    script = (
        "import sys\n"
        "from relconsole.engine.repo import ownerindex as o, ownerspec as s\n"
        "index = o.OwnerIndex([('src/a.py', ['r']), ('tests/**', []), ('docs/', []), ('README.md', [])])\n"
        "got = index.winner_indexes(['src/a.py', 'tests/x/y.py', 'docs/z.md', 'a/README.md', 'src/b.py'])\n"
        "assert got == [0, 1, 2, 3, None], got\n"
        "assert 'pathspec' not in sys.modules\n"
        "before = s._mirroring()\n"
        "assert s._pathspec()['mirroring'] == before == s._mirroring()\n"
        "assert index.winner_indexes(['src/a.py']) == [0]\n")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
