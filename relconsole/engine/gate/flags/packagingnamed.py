"""Files that packaging metadata names as metadata, read like the metadata they stand for
(review flag ``packaging_changed``; red team, issue 36: a patch that only edited the
``requirements.txt`` that ``[tool.setuptools.dynamic] dependencies = {file = [...]}`` reads took
a dependency from a git URL, and the file, exempt from coverage, raised nothing).

Rule: a file is named when the ``pyproject.toml`` or ``setup.cfg`` of a folder above it, at the
merge base or at HEAD, reads it as requirements (``[tool.setuptools.dynamic]`` ``dependencies``
or ``optional-dependencies.X`` ``file``; ``[options] install_requires = file: ...``,
``[options.extras_require] X = file: ...``) or as entry points (``[tool.setuptools.dynamic]``
``entry-points``/``scripts`` ``file``; ``[options] entry_points = file: ...``), by a path
relative to that folder. A named requirements file is compared as its requirement lines (order,
spaces, comments and blank lines do not count): a new line naming a URL, a path, ``@`` or a
pip option (``-e``, ``--index-url``, ``-f``...) is ``dependency_source``, any other difference
``dependencies``. A named entry-points file that differs in any line is ``entry_points``. A
file no metadata names (``requirements-dev.txt``) is none of this.
"""

from __future__ import annotations

import configparser
import posixpath
import re
import tomllib
from dataclasses import dataclass

from relconsole.engine.gate.blobreader import BlobReader
from relconsole.engine.gate.flags.packagingkeys import DEPENDENCIES, DEPENDENCY_SOURCE, ENTRY_POINTS

ARCHIVES = (".whl", ".zip", ".tar.gz", ".tgz", ".tar.bz2")


@dataclass(frozen=True)
class NamedChange:
    """A named file's change: its ``path``, ``kind`` (``packagingkeys.KINDS``), the ``named_by``
    words (``[tool.setuptools.dynamic] dependencies in pyproject.toml``), and the requirement or
    entry-point lines it ``added`` and ``removed`` (normalised: spaces dropped)."""

    path: str
    kind: str
    named_by: str
    added: tuple
    removed: tuple


def named_changes(changed: list[str], merge_base: str, head: str, reader: BlobReader) -> list[NamedChange]:
    """The changes of the paths in ``changed`` that a packaging file names (``named_files`` of
    each folder above them, at either side), in ``changed``'s order; a path named by neither
    side, or whose lines compare equal, gives none."""
    folders = sorted({posixpath.dirname(p) for path in changed for p in _ancestors(path)})
    wanted = [(rev, posixpath.join(folder, name)) for folder in folders for rev in (merge_base, head)
              for name in ("pyproject.toml", "setup.cfg")]
    named: dict[str, tuple[str, str]] = {}
    for (_, meta), data in zip(wanted, reader.read_many(wanted)):
        folder = posixpath.dirname(meta)
        for relative, (kind, label) in named_files(meta, data).items():
            full = posixpath.normpath(posixpath.join(folder, relative))
            if not full.startswith("../") and full != "..":
                named.setdefault(full, (kind, f"{label} in {meta}"))
    out = []
    for path in changed:
        if path in named:
            kind, named_by = named[path]
            found = _compare(path, kind, named_by, reader.read(merge_base, path), reader.read(head, path))
            if found is not None:
                out.append(found)
    return out


def _ancestors(path: str) -> list[str]:
    """``a/b/c.txt`` -> ['a/b/c.txt', 'a/b/x', 'a/x', 'x']: one path in each folder above it."""
    parts = path.split("/")
    return ["/".join(parts[:end] + ["x"]) for end in range(len(parts) - 1, -1, -1)]


def named_files(meta: str, data: bytes | None) -> dict[str, tuple[str, str]]:
    """``{path relative to the file's folder: (kind, label)}`` of the files the packaging file
    ``meta`` (``pyproject.toml`` or ``setup.cfg``, by name; bytes or None) reads as requirements
    or entry points; {} when absent or it does not parse (that is flagged as the file itself)."""
    if data is None:
        return {}
    text = data.decode("utf-8", "replace")
    try:
        pairs = _pyproject_named(text) if meta.endswith("pyproject.toml") else _setup_cfg_named(text)
    except (ValueError, configparser.Error):
        return {}
    return {name: (kind, label) for kind, label, names in pairs for name in names if name}


def _pyproject_named(text: str) -> list[tuple[str, str, list[str]]]:
    dynamic = tomllib.loads(text).get("tool", {}).get("setuptools", {}).get("dynamic", {})
    if not isinstance(dynamic, dict):
        return []
    out = []
    for key, kind in (("dependencies", DEPENDENCIES), ("entry-points", ENTRY_POINTS), ("scripts", ENTRY_POINTS)):
        out.append((kind, f"[tool.setuptools.dynamic] {key}", _files(dynamic.get(key))))
    extras = dynamic.get("optional-dependencies")
    for extra, value in (extras.items() if isinstance(extras, dict) else ()):
        out.append((DEPENDENCIES, f"[tool.setuptools.dynamic.optional-dependencies] {extra}", _files(value)))
    return out


def _files(value) -> list[str]:
    """The names of a ``{file = name or [names]}`` table, else []."""
    names = value.get("file") if isinstance(value, dict) else None
    names = [names] if isinstance(names, str) else names if isinstance(names, list) else []
    return [n for n in names if isinstance(n, str)]


def _setup_cfg_named(text: str) -> list[tuple[str, str, list[str]]]:
    parser = configparser.RawConfigParser(comment_prefixes=("#", ";"), inline_comment_prefixes=None)
    parser.optionxform = str
    parser.read_string(text)
    wanted = [("options", "install_requires", DEPENDENCIES), ("options", "entry_points", ENTRY_POINTS)]
    if parser.has_section("options.extras_require"):
        wanted += [("options.extras_require", extra, DEPENDENCIES) for extra in parser.options("options.extras_require")]
    out = []
    for section, option, kind in wanted:
        value = parser.get(section, option, fallback="").strip()
        if value.startswith("file:"):
            out.append((kind, f"[{section}] {option}", [n.strip() for n in value[5:].split(",")]))
    return out


def _compare(path: str, kind: str, named_by: str, before: bytes | None, after: bytes | None) -> NamedChange | None:
    old, new = _lines(before, kind), _lines(after, kind)
    added = tuple(line for line in new if line not in old)
    removed = tuple(line for line in old if line not in new)
    if not added and not removed:
        return None
    if kind == DEPENDENCIES and any(_from_elsewhere(line) for line in added):
        kind = DEPENDENCY_SOURCE
    return NamedChange(path, kind, named_by, added, removed)


def _lines(data: bytes | None, kind: str) -> list[str]:
    """A file's lines as compared, sorted: continuations joined, comments (``#`` at the start
    or after a space) and blank lines dropped; a requirement line's spaces dropped, an entry
    point line's ends stripped."""
    text = re.sub(r"\\\r?\n", "", (data or b"").decode("utf-8", "replace"))
    out = set()
    for line in text.splitlines():
        line = re.sub(r"(^|\s)[#;].*$" if kind == ENTRY_POINTS else r"(^|\s)#.*$", "", line)
        line = "".join(line.split()) if kind == DEPENDENCIES else line.strip()
        if line:
            out.add(line)
    return sorted(out)


def _from_elsewhere(line: str) -> bool:
    """Whether a requirement line takes code from somewhere other than the default index by
    name: a pip option (``-e``, ``--index-url``, ``-f``, ``-r``...), ``name @ url``, a URL, a
    path or an archive."""
    return (line.startswith(("-", ".", "/", "~")) or "@" in line or "://" in line or "/" in line.split(";")[0]
            or line.lower().split(";")[0].endswith(ARCHIVES))
