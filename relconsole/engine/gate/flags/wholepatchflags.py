"""Review flags of the patch as a whole (SPEC §9): the merge base's tree against HEAD's.

Git attributes and symlinks (``source_rewritten``), pytest's own harness
(``test_harness_changed``), and the environment probes of files a run imported that the
per-commit rule leaves to reviewers by name (``environment_probe``).
"""

from __future__ import annotations

import configparser
import posixpath
import shlex
import tomllib
from pathlib import Path

from relconsole.engine.gate.flags import probescan, pyscan
from relconsole.engine.gate.blobreader import BlobReader
from relconsole.engine.gate.flags.patchflags import Flag
from relconsole.engine.gate.flags.sourcetext import source_text
from relconsole.engine.repo.gitio import IGNORE_NO_SUBMODULE, run_git

def imported_probes(repo_dir: str | Path, merge_base: str, head: str, paths: list[str]) -> list[Flag]:
    """``environment_probe`` flags of the patch as a whole for ``paths``: touched Python files
    a run on HEAD imported that the per-commit rule leaves to reviewers by name (``test_*.py``,
    ``conftest.py``: a subject that imports a probe from a test module runs it all the same).
    Each file's HEAD text is judged against the merge base's."""
    reader = BlobReader(repo_dir)
    flags = []
    try:
        for path in paths:
            if not path.endswith((".py", ".pyw")):
                continue
            before, after = reader.read(merge_base, path), reader.read(head, path)
            if after is None or after == before:
                continue
            try:
                found = probescan.environment_probes(None if before is None else source_text(path, before),
                                                     source_text(path, after))
            except pyscan.Unjudged as exc:
                flags.append(Flag("environment_probe", None, path, None, f"imported by a run, not read: {exc}"))
                continue
            flags += [Flag("environment_probe", None, path, item.line,
                           f"{item.detail}, in a file a subject imported: a reviewer must clear it") for item in found]
    finally:
        reader.close()
    return flags


SYMLINK_MODE = "120000"


def checkout_rewrites(repo_dir: str | Path, merge_base: str, head: str, reader: BlobReader) -> list[Flag]:
    """``source_rewritten`` flags of the patch as a whole: every ``.gitattributes`` it adds,
    changes or deletes, in any folder (``ident``, filters, ``eol`` and
    ``working-tree-encoding`` make a checkout's files differ from the committed blobs the
    judge reads), and every symlink it adds or changes (a module whose text lives in a file
    no rule reads, such as ``docs/tuning.py -> tuning``). Raises GitError as ``run_git``."""
    listing = run_git(repo_dir, "diff-tree", "-r", "-z", "--raw", "--no-renames", IGNORE_NO_SUBMODULE, merge_base, head).stdout
    fields = listing.split(b"\0")
    flags = []
    for meta, raw_path in zip(fields[0::2], fields[1::2]):
        parts = meta.decode("ascii", "replace").lstrip(":").split()
        if len(parts) < 5:
            continue
        new_mode, status = parts[1], parts[4]
        path = raw_path.decode("utf-8", "surrogateescape")
        if posixpath.basename(path) == ".gitattributes":
            what = {"A": "adds", "D": "deletes"}.get(status[:1], "changes")
            flags.append(Flag("source_rewritten", None, path, None,
                              f"{what} git attributes: a checkout (ident, filters, eol, encodings) then "
                              "differs from the committed files the relations judged"))
        if new_mode == SYMLINK_MODE and status[:1] != "D":
            target = (reader.read(head, path) or b"").decode("utf-8", "replace")
            flags.append(Flag("source_rewritten", None, path, None,
                              f"adds or changes a symlink to {target!r}: the code that runs there is "
                              "another file's, which no rule read under this name"))
    return flags


HARNESS_FILES = frozenset({"conftest.py", "pytest.ini", ".pytest.ini"})
# configuration files with a pytest section, and the section's name in each
HARNESS_SECTIONS = {"pyproject.toml": "tool.pytest", "setup.cfg": "tool:pytest", "tox.ini": "pytest"}


def harness_changes(repo_dir: str | Path, merge_base: str, head: str, reader: BlobReader) -> list[Flag]:
    """``test_harness_changed`` flags of the patch as a whole: every ``conftest.py`` and
    ``pytest.ini`` it adds, changes or deletes, and every pytest section of a ``pyproject.toml``,
    ``setup.cfg`` or ``tox.ini`` (any folder) whose settings that load code or options it
    changes (``HARNESS_KEYS``: ``addopts``, ``pythonpath``, ``required_plugins``...). Code
    there runs inside the pytest process (hooks, ``addopts``, ``-p no:...``): it can switch
    ``pytest --relconsole`` off or reset its exit status, so a person reads it before the
    plugin's word counts. A section that only names markers, test paths or warnings filters
    loads nothing (measured: honest libraries add such a section; issue 35). Raises GitError
    as ``run_git``."""
    listing = run_git(repo_dir, "diff-tree", "-r", "-z", "--name-only", "--no-renames", IGNORE_NO_SUBMODULE, merge_base, head).stdout
    flags = []
    for raw in filter(None, listing.split(b"\0")):
        path = raw.decode("utf-8", "surrogateescape")
        name = posixpath.basename(path)
        if name in HARNESS_FILES:
            flags.append(Flag("test_harness_changed", None, path, None,
                              "changes pytest's own harness (hooks run inside the test process): it can "
                              "switch the relconsole plugin off or reset the exit status; gate on relconsole gate"))
        elif name in HARNESS_SECTIONS:
            before, after = (_pytest_section(reader.read(rev, path), name) for rev in (merge_base, head))
            if before != after:
                flags.append(Flag("test_harness_changed", None, path, None,
                                  f"changes what the [{HARNESS_SECTIONS[name]}] configuration loads "
                                  f"({', '.join(HARNESS_KEYS[:3])}...): the tests and the relconsole plugin run otherwise"))
    return flags


# pytest settings that load code or pass options to the run (a plugin, a path to import from)
HARNESS_KEYS = ("addopts", "pythonpath", "required_plugins", "plugins", "confcutdir", "rootdir",
                "consider_namespace_packages", "usefixtures")


def _pytest_section(data: bytes | None, name: str) -> object:
    """The harness settings (``HARNESS_KEYS``) of the pytest configuration in a file's bytes
    (None: no file or none of them), comparable across commits; a file that does not parse
    compares as its raw text, so any change to it counts."""
    if data is None:
        return None
    text = data.decode("utf-8", "replace")
    try:
        if name == "pyproject.toml":
            section = tomllib.loads(text).get("tool", {}).get("pytest")
            options = section.get("ini_options", section) if isinstance(section, dict) else section
        else:
            parser = configparser.RawConfigParser()
            parser.read_string(text)
            options = dict(parser.items(HARNESS_SECTIONS[name])) if parser.has_section(HARNESS_SECTIONS[name]) else None
    except (ValueError, configparser.Error):
        return text
    if not isinstance(options, dict):
        return options
    kept = {key: _words(options[key]) for key in HARNESS_KEYS if key in options}
    return kept or None


def _words(value) -> object:
    """A setting as the words pytest reads from it: ``"--color=yes"`` and ``["--color=yes"]``
    (pytest 9's native ``[tool.pytest]`` table) are one setting (measured: a formatter moved
    humanize's section and turned the one into the other)."""
    if isinstance(value, str):
        try:
            return shlex.split(value)
        except ValueError:
            return value
    if isinstance(value, list):
        return [word for item in value for word in (_words(item) if isinstance(item, str) else [repr(item)])]
    return value
