"""What ``propose`` shows a drafter of the library (issue 36 new-user trial): its public
functions and methods as ``module:name(args)``, parsed from the commit, so a model drafting
on the base (no diff) can name a subject."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from bench.gitrepo import committed_repo, git
from relconsole.cli.main import main
from relconsole.engine.drafting.apioutline import api_outline, library_modules, module_name, outline_roots
from relconsole.engine.errors import EXIT_PASS
from relconsole.engine.repo import gitio
from relconsole.engine.repo.treeview import TreeView
from tests.conftest import TODAY

CORE = '''"""Codec."""
import json


def dumps(rows, *, indent=None) -> str:
    """Rows as JSON text.

    More words."""
    return json.dumps(rows, indent=indent)


def _private(x):
    return x


class Url:
    """A parsed URL."""

    @classmethod
    def from_text(cls, text):
        return cls()

    def _hidden(self):
        pass
'''


def library(tmp_path: Path) -> Path:
    return committed_repo(tmp_path / "lib", {
        "src/kit/__init__.py": "from .core import dumps, Url\n", "src/kit/core.py": CORE,
        "src/kit/_impl.py": "def secret():\n    pass\n", "src/kit/tests/test_core.py": "def test_x():\n    pass\n",
        "tests/test_more.py": "def helper():\n    pass\n", "setup.py": "def setup():\n    pass\n",
        "src/kit/broken.py": "def (:\n"}, identity=("Rita", "rita@example.org"), message="kit")


def outline_of(repo: Path) -> str:
    files = git(repo, "ls-tree", "-r", "--name-only", "HEAD").split()
    view = TreeView(gitio.open_repo(repo), git(repo, "rev-parse", "HEAD").strip())
    return api_outline(view, library_modules(files), outline_roots(None, files))


def test_public_functions_and_methods_are_named_as_a_subject_names_them(tmp_path: Path):
    lines = outline_of(library(tmp_path)).splitlines()
    names = {line.split("(")[0].split("  #")[0] for line in lines}
    assert {"kit.core:dumps", "kit.core:Url", "kit.core:Url.from_text"} <= names
    assert not any(word in " ".join(names) for word in ("_private", "_hidden", "secret", "test_", "helper", "setup"))
    dumps = next(line for line in lines if line.startswith("kit.core:dumps("))
    assert "indent=None" in dumps and "Rows as JSON text." in dumps and "More words" not in dumps


def test_the_outline_is_capped_and_says_what_it_left_out(tmp_path: Path):
    repo = library(tmp_path)
    whole = outline_of(repo)
    files = git(repo, "ls-tree", "-r", "--name-only", "HEAD").split()
    view = TreeView(gitio.open_repo(repo), git(repo, "rev-parse", "HEAD").strip())
    cut = api_outline(view, library_modules(files), ("", "src"), limit=len(whole.encode()) // 2)
    assert len(cut.encode()) < len(whole.encode()) and "left out" in cut


@settings(max_examples=50)
@given(st.lists(st.from_regex(r"[a-z][a-z0-9]{0,6}", fullmatch=True), min_size=1, max_size=4),
       st.sampled_from(["", "src", "lib/python"]))
def test_a_module_name_is_the_path_under_its_root(parts, root):
    prefix = f"{root}/" if root else ""
    path = prefix + "/".join(parts) + ".py"
    name = module_name(path, ("", root) if root else ("",))
    assert name.split(".") == parts
    assert module_name(prefix + "/".join(parts) + "/__init__.py", ("", root) if root else ("",)) == name


def test_propose_on_the_base_shows_the_drafter_the_library(tmp_path: Path, capsys):
    repo = library(tmp_path)
    assert main(["init", "--repo", str(repo), "--today", TODAY.isoformat()]) == EXIT_PASS
    capsys.readouterr()
    assert main(["propose", "--repo", str(repo), "--print-prompt", "--today", TODAY.isoformat()]) == EXIT_PASS
    prompt = capsys.readouterr().out
    assert "kit.core:Url.from_text(cls, text)" in prompt and "(the patch changes nothing)" in prompt
