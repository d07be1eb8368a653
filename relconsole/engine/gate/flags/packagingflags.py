"""Review flag ``packaging_changed`` (the patch as a whole): a change to what is built, shipped,
installed or loaded, read from the packaging metadata that ``relconsole init`` exempts from
coverage (red team, issue 36: a patch that touched only ``pyproject.toml`` pointed the wheel at
a copy of the package kept under ``.github/`` and passed the gate).

Rule: every ``pyproject.toml``, ``setup.cfg``, ``setup.py`` and ``MANIFEST.in`` (any folder but
a test folder, ``TEST_DIRS``: there it is a project a test builds) whose settings differ between
the merge base and HEAD, compared as parsed data (``packagingread``: a reformat, a comment, a
key order is no change; a version bump, the description, classifiers or ``[tool.ruff]`` change
nothing that runs; a change of file patterns that names data files only is none either,
``data_only``), one flag per setting changed, at the line of its key in HEAD's file (a deleted
file's settings are each removed; a file that does not parse on one side is one ``layout``
flag); every ``.pth`` file the patch adds or changes (``site`` runs its import lines at
every interpreter start once it is installed); and every file the metadata of either side reads
as requirements or entry points, compared as such (``packagingnamed``: a ``requirements.txt``
no metadata names is none).
The flag's kind (``packagingkeys.KINDS``) is read back from the detail's opening words
(``flaglevels.flag_kind``). An acknowledgement clears the setting's value, not its line
(``acked_content``).
"""

from __future__ import annotations

import json
import posixpath
import re
from pathlib import Path

from relconsole.engine.gate.blobreader import BlobReader, oversized
from relconsole.engine.gate.flags.packagingkeys import (
    CODE_SUFFIXES, DEPENDENCIES, DEPENDENCY_SOURCE, ENTRY_POINTS, KIND_WHY, KIND_WORDS, LAYOUT, PACKAGE_DATA,
    PATTERNS)
from relconsole.engine.gate.flags.packagingnamed import NamedChange, named_changes
from relconsole.engine.gate.flags.packagingread import MANIFEST, PACKAGING_FILES, UNPARSED, Setting, settings
from relconsole.engine.gate.flags.patchflags import Flag
from relconsole.engine.repo.gitio import IGNORE_NO_SUBMODULE, run_git

NAME = "packaging_changed"
# folders whose packaging files are test data (a project a test builds), never the package's
TEST_DIRS = frozenset({"tests", "test", "testing"})


def packaging_changes(repo_dir: str | Path, merge_base: str, head: str, reader: BlobReader) -> list[Flag]:
    """``packaging_changed`` flags of the patch as a whole (merge base -> HEAD, one listing of
    the paths that differ). Raises GitError as ``run_git``."""
    listing = run_git(repo_dir, "diff-tree", "-r", "-z", "--name-only", "--no-renames", IGNORE_NO_SUBMODULE,
                      merge_base, head).stdout
    flags = []
    paths = [raw.decode("utf-8", "surrogateescape") for raw in filter(None, listing.split(b"\0"))]
    for path in paths:
        name = posixpath.basename(path)
        if name.lower().endswith(".pth"):
            after = reader.read(head, path)
            if after is not None:
                flags.append(Flag(NAME, None, path, None, f"{KIND_WORDS[LAYOUT]}: {path} is a .pth file: once "
                                  "installed, Python runs its import lines at every interpreter start"))
        elif name in PACKAGING_FILES and TEST_DIRS.isdisjoint(path.split("/")[:-1]):
            before, after = reader.read(merge_base, path), reader.read(head, path)
            if before != after:
                flags += file_changes(path, before, after)
    others = [p for p in paths if posixpath.basename(p) not in PACKAGING_FILES and not p.lower().endswith(".pth")]
    return flags + [_named_flag(change) for change in named_changes(others, merge_base, head, reader)]


def _named_flag(change: NamedChange) -> Flag:
    """The flag of a file packaging metadata names (``packagingnamed``), on the whole file."""
    parts = [f"adds {_show(list(change.added))}" if change.added else "",
             f"removes {_show(list(change.removed))}" if change.removed else ""]
    return Flag(NAME, None, change.path, None, f"{KIND_WORDS[change.kind]}: {change.path}, read as "
                f"{change.named_by}, {'; '.join(p for p in parts if p)}; {KIND_WHY[change.kind]}")


def file_changes(path: str, before: bytes | None, after: bytes | None) -> list[Flag]:
    """The flags of one packaging file's two sides (bytes, None: absent), one per setting whose
    normalised value differs, in the order of their lines in HEAD's file."""
    if oversized(before) or oversized(after):
        return [Flag(NAME, None, path, None, f"{KIND_WORDS[LAYOUT]}: {path} is too large to read: what it "
                     "builds is unknown")]
    old, new = settings(path, before), settings(path, after)
    if UNPARSED in old or UNPARSED in new:  # one flag for the file: setting by setting means nothing
        state = "does not parse at HEAD" if UNPARSED in new else "parses again at HEAD"
        return [Flag(NAME, None, path, None, f"{KIND_WORDS[LAYOUT]}: {path} {state}: what the build reads "
                     "from it cannot be compared (a build backend may read it otherwise)")]
    flags = []
    for key in sorted(old.keys() | new.keys(), key=lambda k: ((new.get(k) or old[k]).line or 0, repr(k))):
        was, now = old.get(key), new.get(key)
        if was is not None and now is not None and was.value == now.value or data_only(was, now):
            continue
        flags.append(_flag(path, was, now))
    return flags


def data_only(was: Setting | None, now: Setting | None) -> bool:
    """Whether a change of file patterns (``PATTERNS``, ``PACKAGE_DATA``, ``MANIFEST.in`` commands) names data
    files only (``*.mo``, ``LICENSE``, ``py.typed``; an exclusion): nothing it adds or drops
    can be a module, a ``.pth`` or a compiled extension, so what runs is the same (measured:
    most honest edits of ``MANIFEST.in`` and package data are translations and licences)."""
    shape = (now or was).shape
    if shape not in (PATTERNS, PACKAGE_DATA, MANIFEST):
        return False
    old = _patterns(was.value, shape) if was is not None else []
    new = _patterns(now.value, shape) if now is not None else []
    changed = [p for p in new if p not in old] + [p for p in old if p not in new] or new
    return all(_data_pattern(p, shape) for p in changed)


MANIFEST_EXCLUDES = frozenset({"exclude", "global-exclude", "recursive-exclude", "prune"})


def _patterns(value, shape: str) -> list:
    """The file patterns a value names: a list's strings, a table's values, flattened; for
    ``MANIFEST.in``, each including command's patterns (``graft DIR`` as ``DIR/``: a folder),
    exclusions left out (shipping less runs nothing new)."""
    if shape == MANIFEST:
        out = []
        for command in value:
            word, *args = command.split()
            if word in MANIFEST_EXCLUDES:
                continue
            out += [a + "/" for a in args] if word == "graft" else args[1:] if word == "recursive-include" else args
        return out
    if isinstance(value, dict):
        return [p for v in value.values() for p in _patterns(v, shape)]
    if isinstance(value, list):
        return [p for v in value for p in _patterns(v, shape)]
    return [value]


def _data_pattern(pattern, shape: str) -> bool:
    """Whether a file pattern can match data files only: its last part ends in an extension
    that is no code (``*.mo``, ``*.tar.gz``, ``LICENSE.txt``). A bare name is a file in
    ``MANIFEST.in`` and package data (``include LICENSE``), a folder elsewhere (hatch, poetry)."""
    if not isinstance(pattern, str):
        return False
    last = pattern.rstrip("/").rsplit("/", 1)[-1]
    if pattern.endswith("/") or last.lower().endswith(CODE_SUFFIXES) or last in ("", ".", ".."):
        return False
    tail = re.split(r"[*?\]]", last)[-1]
    if tail != last:  # a wildcard: what follows it must be a data extension
        return bool(re.fullmatch(r"(\.[A-Za-z0-9_-]+)+", tail))
    return "." in last.lstrip(".") or shape in (MANIFEST, PACKAGE_DATA)


def _flag(path: str, was: Setting | None, now: Setting | None) -> Flag:
    setting = now or was
    kind = _kind(setting, was, now)
    line = _changed_line(was, now) if now is not None else None
    where = f"{path}:{line}" if line else path
    why = KIND_WHY[kind]
    if kind == ENTRY_POINTS and "pytest11" in json.dumps(setting.label + str(setting.value)):
        why = "a pytest11 entry point is a plugin pytest loads in every run, beside the review's own plugin"
    return Flag(NAME, None, path, line, f"{KIND_WORDS[kind]}: {where} {setting.label} "
                                        f"{_change(was, now)}; {why}")


def _kind(setting: Setting, was: Setting | None, now: Setting | None) -> str:
    """The setting's kind, ``dependency_source`` for requirements that now name a URL or a path."""
    if setting.kind == DEPENDENCIES and now is not None:
        old = _items(was.value) if was is not None else []
        if any(_direct(item) for item in _items(now.value) if item not in old):
            return DEPENDENCY_SOURCE
    return setting.kind


_URL_OR_PATH = re.compile(r"(^|@)\s*([a-z][a-z0-9+.-]*://|file:|\.{0,2}/)|^\.")
SOURCE_KEYS = frozenset({"git", "path", "url", "file", "index", "source", "hg", "svn", "editable"})


def _direct(item) -> bool:
    """Whether a requirement names a URL or a path (PEP 508 ``name @ url``, a bare URL or
    path, a poetry/uv table with ``git``/``path``/``url``...) rather than a name on the index."""
    if isinstance(item, str):
        return bool(_URL_OR_PATH.search(item))
    if isinstance(item, dict):  # {name: spec}: a spec table naming a source
        return any(isinstance(v, dict) and bool(SOURCE_KEYS & v.keys()) or _direct(v) for v in item.values())
    if isinstance(item, list):
        return any(_direct(v) for v in item)
    return False


def _items(value) -> list:
    """A value's items: a list's, a table's ``key: value`` pairs (as one-entry dicts), else itself."""
    if isinstance(value, list):
        return value
    if isinstance(value, dict):
        return [{k: v} for k, v in value.items()]
    return [value]


def _changed_line(was: Setting | None, now: Setting) -> int | None:
    """The line of ``now``'s first item that differs from ``was`` (commands, statements), else of its key."""
    if now.lines and isinstance(now.value, list):
        old = was.value if was is not None and isinstance(was.value, list) else []
        for index, item in enumerate(now.value):
            if index >= len(old) or old[index] != item:
                return now.lines[index]
    return now.line


def _change(was: Setting | None, now: Setting | None) -> str:
    """What changed, in words: ``adds 'a'; removes 'b'``, ``from X to Y``, ``added``, ``removed``."""
    if (was or now).code:
        return "added" if was is None else "removed" if now is None else "changed (the line shows it)"
    if was is None:
        return f"added: {_show(now.value)}"
    if now is None:
        return f"removed (was {_show(was.value)})"
    if isinstance(was.value, (list, dict)) and isinstance(now.value, (list, dict)):
        old, new = _items(was.value), _items(now.value)
        added = [i for i in new if i not in old]
        removed = [i for i in old if i not in new]
        parts = [f"adds {_show(added)}" if added else "", f"removes {_show(removed)}" if removed else ""]
        return "; ".join(p for p in parts if p) or "reorders its items"
    return f"from {_show(was.value)} to {_show(now.value)}"


def _show(value) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 120 else text[:60] + "…" + text[-59:]


def acked_content(path: str, data: bytes | None, line: int) -> str:
    """What an acknowledgement of a ``packaging_changed`` flag at ``line`` of ``path`` (HEAD's
    bytes) clears: the label and normalised value of each setting whose key, or whose changed
    item, is on that line (all of the file's settings when none is), as JSON. Bound to the
    value, not the line: the same line with another value, or another entry added to the same
    table, is not what was acknowledged; a reformat keeps it."""
    found = settings(path, data)
    held = [s for s in found.values() if s.line == line or line in s.lines] or list(found.values())
    pairs = [json.dumps([s.label, s.value], ensure_ascii=False, sort_keys=True, default=str) for s in held]
    return "packaging " + "\n".join(sorted(pairs))
