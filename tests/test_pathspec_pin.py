"""pathspec through what it documents, and the regexes it builds checked where relconsole runs.

The owner index decides some pattern shapes by lookup alone and strips a prefix pattern's head
to match its remainder: right only while pathspec builds the regexes ``ownerspec.shape_drift``
expects. pathspec does not promise their text, so the dependency is pinned to its 1.x major and
``ownerspec._pathspec`` refuses (RuntimeError) a pathspec that builds others, rather than
matching owners wrongly.
"""

from __future__ import annotations

import re
import subprocess
import sys
from importlib import metadata

import pathspec
import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from relconsole.engine.repo import ownerspec


def patterns_of(text: str) -> list:
    return pathspec.GitIgnoreSpec.from_lines([text], backend="simple").patterns


class Drifted:
    """A compiled pattern whose regex is another's with ``suffix`` appended."""

    def __init__(self, pattern, suffix: str):
        self.include = pattern.include
        self.regex = re.compile(pattern.regex.pattern + suffix)


def test_the_installed_pathspec_builds_the_regexes_the_index_relies_on():
    assert ownerspec.shape_drift(patterns_of) == []


def test_the_declared_range_has_an_upper_bound_and_holds_the_installed_pathspec():
    [declared] = [Requirement(r) for r in metadata.requires("relconsole") if Requirement(r).name == "pathspec"]
    assert any(spec.operator == "<" for spec in declared.specifier), str(declared)
    assert declared.specifier.contains(Version(pathspec.__version__)), (str(declared), pathspec.__version__)


@pytest.mark.parametrize("suffix", [".*$", "(?:/.*)?$"])
def test_a_regex_of_another_text_is_reported_by_its_pattern(suffix):
    drift = ownerspec.shape_drift(lambda text: [Drifted(p, suffix) for p in patterns_of(text)])
    reported = {entry.split(" -> ")[0] for entry in drift}
    assert {"a/b", "n/", "**/n/**"} <= reported
    assert all(entry.endswith(suffix) for entry in drift if entry.split(" -> ")[0] in reported)


def test_a_prefix_whose_head_is_not_the_remainders_is_reported():
    def patterns(text: str) -> list:
        compiled = patterns_of(text)
        return [Drifted(p, "x") for p in compiled] if text == "a/**/*.py" else compiled
    assert [entry.split(" -> ")[0] for entry in ownerspec.shape_drift(patterns)] == ["a/**/*.py"]


def test_a_pathspec_that_builds_other_regexes_is_refused_at_import():
    """What a user with a pathspec outside the range sees: one RuntimeError naming the pattern
    and the range to install, before any owner is matched."""
    script = (
        "import re, pathspec\n"
        "from relconsole.engine.repo import ownerspec\n"
        "original = pathspec.GitIgnoreSpec.from_lines.__func__\n"
        "def from_lines(cls, lines, **options):\n"
        "    spec = original(cls, lines, **options)\n"
        "    for p in spec.patterns:\n"
        "        if p.regex is not None: p.regex = re.compile(p.regex.pattern + '.*$')\n"
        "    return spec\n"
        "pathspec.GitIgnoreSpec.from_lines = classmethod(from_lines)\n"
        "ownerspec._pathspec()\n")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("RuntimeError: the installed pathspec") and "pathspec>=1.0,<2" in last, proc.stderr
