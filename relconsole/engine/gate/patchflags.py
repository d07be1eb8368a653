"""Patch review flags (SPEC §9): what the commits under review did that a reviewer must see.

``patch_flags`` walks the commits between the merge base and HEAD (one ``git log``, merges
judged by what they add, as the split check does) and compares each changed file with
its version in the commit's first parent. Python rules are in ``pyscan`` (``ast``, never
regexes over diff text); oracle files are compared as parsed data. Each ``Flag`` names
the commit, the file and the line. Any flag makes the PR's decision ``reject`` with
reason ``review_flag:<name>`` (see ``Review.decision``).

| flag | fires when a commit |
| --- | --- |
| protected_path_changed | changes any path under ``protected`` (the relations run the base's oracle, but merging brings the change: a reviewer must see it, §9) |
| lease_hash_edited | changes a lease manifest's ``sha256`` (or its ``path``: another corpus) |
| leased_corpus_edited | changes a file a lease pins |
| freeze_row_added | adds a freeze row for a relation that had none |
| freeze_row_edited | adds or changes a freeze row for a relation that had one |
| golden_literal | adds a test assertion of a call result against a literal, the call into a module a relation owns |
| bag_output_sorted | adds an output sort in the subject of a relation that compares bags |
| ingest_replay_to_concat | turns a replayed ingest into concatenated rows (a test, or a catalog relation's kind) |
| oracle_layout_changed | changes ``[tool.relconsole]`` in pyproject.toml (the layout is always the base's here) |
| environment_probe | adds, to code that is not a test, a look at the process around it (``probescan``), or a compiled module |
| source_rewritten | adds or changes a ``.gitattributes`` (any folder), a symlink, or a Python file whose coding cookie makes Python read other text than the diff shows |
"""

from __future__ import annotations

import configparser
import hashlib
import json
import posixpath
import subprocess
import threading
import tomllib
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from relconsole.engine.gate import probescan

from relconsole.engine.gate import pyscan
from relconsole.engine.oracle.catalog import Catalog
from relconsole.engine.repo.config import Layout
from relconsole.engine.errors import BadInputError
from relconsole.engine.oracle.freezes import row_line_finder
from relconsole.engine.repo.gitio import IGNORE_NO_SUBMODULE, clean_env, run_git
from relconsole.engine.repo.owners import protection, winning_pattern
from relconsole.engine.repo.splitcheck import Commit, range_commits
from relconsole.engine.oracle.yamlload import load_yaml_text

if TYPE_CHECKING:
    from relconsole.engine.oracle.parsecache import ParseCache

FLAG_NAMES = ("protected_path_changed", "lease_hash_edited", "leased_corpus_edited", "freeze_row_added",
              "freeze_row_edited", "golden_literal", "bag_output_sorted", "ingest_replay_to_concat",
              "oracle_layout_changed", "relation_changed", "patch_catalog_invalid", "environment_probe",
              "source_rewritten", "test_harness_changed")
TEST_DIRS = frozenset({"tests", "test"})
MAX_TEXT_BYTES = 8 << 20  # larger blobs are compared by id only: no line is given


@dataclass(frozen=True)
class Flag:
    """One review flag: ``name`` (one of FLAG_NAMES), full ``commit`` sha (None: the patch as
    a whole), repository-relative ``path``, 1-based ``line`` (None: the whole file, e.g.
    a deletion or a binary corpus) and ``detail`` for a reviewer (untrusted text inside)."""

    name: str
    commit: str | None
    path: str
    line: int | None
    detail: str

    def to_json(self) -> dict:
        """The flag as ``relconsole flags --json`` prints it."""
        return {"name": self.name, "commit": self.commit, "path": self.path, "line": self.line,
                "detail": self.detail}

    def where(self) -> str:
        """``path:line @ commit`` for one-line listings."""
        line = f":{self.line}" if self.line else ""
        return f"{self.path}{line}" + (f" @ {self.commit[:10]}" if self.commit else "")


class BlobReader:
    """Reads ``rev:path`` blobs through one ``git cat-file --batch`` process (a path with a
    newline, which the batch protocol cannot name, goes through ``git cat-file blob``)."""

    def __init__(self, repo_dir: str | Path):
        self.repo_dir = repo_dir
        self._proc: subprocess.Popen | None = None

    def read(self, rev: str | None, path: str | None) -> bytes | None:
        """The blob's bytes; None when absent (or not a blob). A blob over MAX_TEXT_BYTES
        gives ``b""``: it is never held in memory, and no line is computed for it."""
        if rev is None or path is None:
            return None
        if "\n" in path:
            proc = subprocess.run(["git", "cat-file", "blob", f"{rev}:{path}"], cwd=self.repo_dir,
                                  env=clean_env(), capture_output=True)
            return proc.stdout if proc.returncode == 0 else None
        self._start()
        self._proc.stdin.write(f"{rev}:{path}\n".encode("utf-8", "surrogateescape"))
        self._proc.stdin.flush()
        return self._answer()

    def read_many(self, wanted: list[tuple[str | None, str | None]],
                  oids: list[str | None] | None = None) -> list[bytes | None]:
        """``read`` of each (rev, path), the requests written by a thread while the answers
        are read, so 20,000 blobs cost one pipe's throughput, not 20,000 round trips.
        ``oids`` (same length, when given): the blob id each (rev, path) is known to hold
        (from a ``git diff-tree`` listing), asked for by id: git then looks up no path in
        any tree, about 20 times faster over 20,000 blobs. None in it: asked by path."""
        names = [oids[i] if oids is not None and oids[i] else
                 None if rev is None or path is None or "\n" in path else f"{rev}:{path}"
                 for i, (rev, path) in enumerate(wanted)]
        batched = [i for i, name in enumerate(names) if name is not None]
        alone = set(range(len(wanted))) - set(batched)  # absent sides, and paths the batch cannot name
        out: list[bytes | None] = [self.read(*wanted[i]) if i in alone else None for i in range(len(wanted))]
        if not batched:
            return out
        self._start()
        requests = b"".join(f"{names[i]}\n".encode("utf-8", "surrogateescape") for i in batched)

        def write() -> None:
            try:
                self._proc.stdin.write(requests)
                self._proc.stdin.flush()
            except (BrokenPipeError, ValueError):
                pass  # git went away: the answers read below come up short
        writer = threading.Thread(target=write, daemon=True)
        writer.start()
        for i in batched:
            out[i] = self._answer()
        writer.join()
        return out

    def _start(self) -> None:
        if self._proc is None:
            self._proc = subprocess.Popen(["git", "cat-file", "--batch"], cwd=self.repo_dir, env=clean_env(),
                                          stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def _answer(self) -> bytes | None:
        """One blob's answer from the batch process, as ``read`` returns it."""
        # "<oid> <type> <size>", or "<object name> missing": the name holds the path, spaces
        # and all, so the answer is read from the right
        header = self._proc.stdout.readline().rstrip(b"\n").rsplit(b" ", 2)
        if len(header) != 3 or not header[2].isdigit():
            return None
        size = int(header[2])
        if header[1] != b"blob" or size > MAX_TEXT_BYTES:
            self._skip(size + 1)
            return b"" if header[1] == b"blob" else None
        data = self._proc.stdout.read(size)
        self._proc.stdout.read(1)
        return data

    def _skip(self, count: int) -> None:
        while count > 0:
            chunk = self._proc.stdout.read(min(count, 1 << 20))
            if not chunk:  # git went away; the next header read reports nothing
                return
            count -= len(chunk)

    def close(self) -> None:
        """End the batch process and close both of its pipes (no ResourceWarning under -W error)."""
        if self._proc is not None:
            self._proc.stdin.close()
            self._proc.wait()
            self._proc.stdout.close()
            self._proc = None


@dataclass
class _Change:
    commit: Commit
    old: str | None  # path in the first parent (None: added)
    new: str | None  # path in the commit (None: deleted)
    before: bytes | None
    after: bytes | None
    _texts: dict = field(default_factory=dict, repr=False, compare=False)  # decoded once: several rules read them

    @property
    def path(self) -> str:
        return self.new or self.old

    def text(self, which: str) -> str | None:
        if which not in self._texts:
            data = self.before if which == "before" else self.after
            path = self.old if which == "before" else self.new
            self._texts[which] = None if data is None else source_text(path or "", data)
        return self._texts[which]


def source_text(path: str, data: bytes) -> str:
    """The text of a file as its reader sees it: a Python file decoded as Python decodes it
    (its PEP 263 coding cookie: ``utf-7`` or ``raw_unicode_escape`` can turn a comment into
    code), anything else as UTF-8. Undecodable bytes become U+FFFD."""
    if path.endswith((".py", ".pyw")):
        encoding = python_encoding(data)
        if encoding is not None:
            try:
                return data.decode(encoding, "replace")
            except (LookupError, UnicodeError, TypeError):
                pass
    return data.decode("utf-8-sig", "replace")


def python_encoding(data: bytes) -> str | None:
    """The source encoding Python reads ``data`` with (``tokenize.detect_encoding``), or
    None when it names none Python accepts (Python then refuses the file)."""
    if _plainly_utf8(data):
        return "utf-8"
    import io
    import tokenize
    try:
        return tokenize.detect_encoding(io.BytesIO(data).readline)[0]
    except SyntaxError:
        return None


def _plainly_utf8(data: bytes) -> bool:
    """Whether ``tokenize.detect_encoding`` would surely answer ``utf-8`` without reading
    ``data``: no BOM and no ``coding`` in the two lines it may read, and those lines ASCII
    (it decodes them, and a line that is not UTF-8 raises). Anything else goes to it."""
    head = data.split(b"\n", 2)[:2]
    return all(line.isascii() and b"coding" not in line for line in head)


def reads_otherwise(data: bytes | None) -> str | None:
    """The encoding of a Python file whose text differs from its UTF-8 reading, else None."""
    if not data:
        return None
    encoding = python_encoding(data)
    if encoding in (None, "utf-8", "utf-8-sig"):
        return None
    try:
        decoded = data.decode(encoding)
    except (LookupError, UnicodeError, TypeError):
        return None
    return None if decoded == data.decode("utf-8-sig", "replace") else encoding


@dataclass
class FlagReport:
    """``flags`` oldest commit first, and ``unjudged``: "path @ commit: why" for each Python
    file the rules could not read (its golden assertions are unknown, not absent)."""

    flags: list[Flag]
    unjudged: list[str]


def patch_flags(repo_dir: str | Path, merge_base: str, head: str, layout: Layout,
                catalog: Catalog | None, lease_corpora: dict[str, str], oracle_from: str = "base",
                probe_cache: "ParseCache | None" = None) -> FlagReport:
    """Every review flag of the commits ``merge_base..head``.

    ``layout`` is the base ref's (never the patch's: a patch cannot move its own gate);
    ``catalog`` the oracle's (None when it did not load: the rules that need it are
    skipped); ``lease_corpora`` maps corpus path -> lease id; ``oracle_from`` says where
    the review reads the oracle (the wording of protected_path_changed); ``probe_cache``
    keeps each file change's probe findings by the digest of its two sides (the probe scan
    of 16,000 changed modules was most of a review's load), None: scan every change. Raises
    GitError (abort) when git cannot list the range.
    """
    if merge_base == head:
        return FlagReport([], [])
    reader = BlobReader(repo_dir)
    rules = _Rules(layout, catalog, {_normal(p): i for p, i in lease_corpora.items()}, reader, oracle_from)
    rules.probe_cache = probe_cache
    report = FlagReport([], [])
    try:
        for commit in range_commits(repo_dir, f"{merge_base}..{head}"):
            changes = list(_changes(repo_dir, commit, rules, reader))
            for change in changes:
                report.flags.extend(rules.check(change))
            report.flags.extend(rules.golden(commit, changes, report.unjudged))
        report.flags.extend(checkout_rewrites(repo_dir, merge_base, head, reader))
        report.flags.extend(harness_changes(repo_dir, merge_base, head, reader))
    finally:
        reader.close()
    return report


def probed_by_name(path: str) -> bool:
    """Whether the per-commit probe rule reads ``path`` by its name alone: every ``.py`` file but
    tests by name (``test_*.py``, ``*_test.py``, ``conftest.py``), and every compiled module."""
    name = path.rsplit("/", 1)[-1]
    return probescan.is_compiled(path) or name.endswith(".py") and not (
        name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py")


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
    ``pytest.ini`` it adds, changes or deletes, and every pytest section it changes in a
    ``pyproject.toml``, ``setup.cfg`` or ``tox.ini``, in any folder. Code there runs inside the
    pytest process (hooks, ``addopts``, ``-p no:...``): it can switch ``pytest --relconsole``
    off or reset its exit status, so a person reads it before the plugin's word counts.
    Raises GitError as ``run_git``."""
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
                                  f"changes the [{HARNESS_SECTIONS[name]}] configuration (addopts, plugins): "
                                  "the tests and the relconsole plugin run otherwise"))
    return flags


def _pytest_section(data: bytes | None, name: str) -> object:
    """The pytest configuration in a file's bytes (None: no file), comparable across commits;
    a file that does not parse compares as its raw text, so any change to it counts."""
    if data is None:
        return None
    text = data.decode("utf-8", "replace")
    try:
        if name == "pyproject.toml":
            return tomllib.loads(text).get("tool", {}).get("pytest")
        parser = configparser.RawConfigParser()
        parser.read_string(text)
        section = HARNESS_SECTIONS[name]
        return dict(parser.items(section)) if parser.has_section(section) else None
    except (ValueError, configparser.Error):
        return text


def _normal(path: str) -> str:
    """A repository path as git lists it (``./a//b`` -> ``a/b``)."""
    return posixpath.normpath(path).removeprefix("./") if path else path


def _before_rev(repo_dir: str | Path, commit: Commit) -> str | None:
    """What a commit is compared with: its parent, or for a two-parent merge git's own
    merge of the parents (``merge-tree``), so only what the merge adds is judged."""
    if len(commit.parents) == 2:
        proc = run_git(repo_dir, "merge-tree", "--write-tree", "--no-messages", *commit.parents, ok=None)
        if proc.returncode in (0, 1) and proc.stdout:
            return proc.stdout.split(b"\n", 1)[0].decode().strip()
    return commit.parents[0] if commit.parents else None


def _changes(repo_dir: str | Path, commit: Commit, rules: "_Rules", reader: BlobReader):
    """The commit's changes as (old path, new path) with the bytes the rules need."""
    rules.guarded_path.prime(commit.paths)  # one index pass per commit: wanted() asks about each
    wanted = {p for p in commit.paths if rules.wanted(p)}
    parent = _before_rev(repo_dir, commit) if wanted else None
    renamed_from = set(commit.renames.values())
    judged = [(commit.renames.get(path, path), path) for path in commit.paths
              if not (path in renamed_from and path not in commit.renames)  # a rename's source: with its destination
              and (commit.renames.get(path, path) in wanted or path in wanted)]
    before_ids, after_ids = _blob_ids(repo_dir, parent, commit.sha) if judged else ({}, {})
    wanted_sides, oids = [], []
    for old, path in judged:
        for rev, side, ids in ((parent, old, before_ids), (commit.sha, path, after_ids)):
            known = ids.get(side, "")  # "": not in the listing, asked by path
            wanted_sides.append((None if known is None else rev, side))  # None: no blob there, nothing to ask
            oids.append(known or None)
    blobs = reader.read_many(wanted_sides, oids)
    for index, (old, path) in enumerate(judged):
        before, after = blobs[2 * index], blobs[2 * index + 1]
        if before is None and after is None:  # neither side a readable blob: a submodule (gitlink)
            yield _Change(commit, old, path, None, None)
            continue
        yield _Change(commit, old if before is not None else None, path if after is not None else None,
                      before, after)


def _blob_ids(repo_dir: str | Path, parent: str | None,
              sha: str) -> tuple[dict[str, str | None], dict[str, str | None]]:
    """({path: blob id in ``parent``}, {path: blob id in ``sha``}) of the files that differ
    between the two (one ``git diff-tree -r --raw --no-renames``: a rename is its source's
    deletion and its destination's addition). None: that side holds no blob there (the
    file is added or deleted, or a gitlink, which ``BlobReader.read`` reads as None too).
    ({}, {}) without a parent or when git cannot diff them: every side is read by path."""
    if parent is None:
        return {}, {}
    proc = run_git(repo_dir, "diff-tree", "-r", "-z", "--raw", "--no-renames", IGNORE_NO_SUBMODULE, parent, sha, ok=None)
    if proc.returncode != 0:
        return {}, {}
    before: dict[str, str | None] = {}
    after: dict[str, str | None] = {}
    fields = proc.stdout.split(b"\0")
    for meta, raw_path in zip(fields[0::2], fields[1::2]):
        parts = meta.decode("ascii", "replace").lstrip(":").split()
        if len(parts) < 5:
            continue
        path = raw_path.decode("utf-8", "surrogateescape")
        for side, mode, oid in ((before, parts[0], parts[2]), (after, parts[1], parts[3])):
            side[path] = oid if mode not in ("000000", "160000") and oid.strip("0") else None
    return before, after


class _Rules:
    """The §9 flag rules for one layout and oracle."""

    def __init__(self, layout: Layout, catalog: Catalog | None, lease_corpora: dict[str, str],
                 reader: BlobReader, oracle_from: str = "base"):
        self.layout = layout
        self.oracle_from = oracle_from
        self.reader = reader
        self.guarded_path = protection(layout.protected)  # indexed once: a review may touch 100k paths
        self.catalog = catalog
        self.corpora = lease_corpora
        self.bag_subjects = _bag_subjects(layout, catalog) if catalog else {}
        self.guarded = _guarded_modules(layout, catalog, reader) if catalog else None
        self.probe_cache = None  # patch_flags sets it

    def wanted(self, path: str) -> bool:
        """Whether any rule reads this path's content."""
        return (self.guarded_path(path) or self._lease_manifest(path) or path in self.corpora
                or path in (self.layout.freezes, self.layout.catalog, "pyproject.toml")
                or path in self.bag_subjects or self._python_test(path) or self._probed(path))

    def _lease_manifest(self, path: str) -> bool:
        return path.startswith(self.layout.leases_dir.rstrip("/") + "/") and path.endswith((".yaml", ".yml"))

    def _python_test(self, path: str) -> bool:
        """A Python test (``test_*.py``, ``*_test.py``, ``conftest.py``, or any ``.py`` under a
        ``tests``/``test`` directory) or a Python file of the protected tree (hand-written relations)."""
        if not path.endswith(".py"):
            return False
        *dirs, name = path.split("/")
        return (name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py"
                or not TEST_DIRS.isdisjoint(dirs) or self.guarded_path(path))

    def _probed(self, path: str) -> bool:
        """Code a subject may run that is not a test and not the oracle: every ``.py`` file
        but tests by name (fixtures under ``tests/`` included), and every compiled module."""
        return not self.guarded_path(path) and probed_by_name(path)

    def _probes(self, change: _Change, flag) -> None:
        if probescan.is_compiled(change.new):
            if change.after != change.before:
                flag("environment_probe", None, "adds or changes a compiled module: code no reviewer or "
                     "rule can read, which may look at the process it runs in")
            return
        if change.after == b"" and change.before != b"":
            flag("environment_probe", None, f"larger than {MAX_TEXT_BYTES >> 20} MiB: not read for probes")
            return
        try:
            found = self._environment_probes(change)
        except pyscan.Unjudged as exc:
            flag("environment_probe", getattr(exc, "line", None), f"not read for probes: {exc}")
            return
        for item in found:
            flag("environment_probe", item.line, f"{item.detail}: a sandbox can always be told from production, "
                 "so code that looks at its surroundings is for a reviewer to clear")

    def _environment_probes(self, change: _Change) -> list:
        """``probescan.environment_probes`` of the change, from ``probe_cache`` when these two
        sides were scanned before by this code (a digest of both sides' bytes is the key:
        the findings depend on nothing else). Raises Unjudged (never kept) as the scan does."""
        def scan():
            return probescan.environment_probes(change.text("before"), change.text("after"))
        if self.probe_cache is None:
            return scan()
        digest = hashlib.blake2b(digest_size=20)
        for side in (change.before, change.after):
            digest.update(b"\0absent" if side is None else len(side).to_bytes(8, "big") + side)
        return self.probe_cache.get(digest.hexdigest(), change.new or "", scan)

    def check(self, change: _Change) -> list[Flag]:
        sha, flags = change.commit.sha, []

        def flag(name: str, line: int | None, detail: str, path: str | None = None) -> None:
            flags.append(Flag(name, sha, path or change.path, line, detail))

        paths = {p for p in (change.old, change.new) if p}
        if any(self.guarded_path(p) for p in paths):
            what = "deletes" if change.new is None else "adds" if change.old is None else "changes"
            moved = f" (renamed from {change.old})" if change.old and change.new and change.old != change.new else ""
            effect = ("the review reads the oracle from HEAD (--oracle-from HEAD), so this change is in "
                      "effect here" if self.oracle_from == "HEAD" else
                      "the review reads the oracle from the base ref, so the relations here run without it, but a "
                      "merge brings it")
            effect += "; the flag rejects until a reviewer acknowledges it (relconsole ack)"
            flag("protected_path_changed", _first_changed_line(change), f"{what} a protected path{moved}; {effect}")
        if any(self._lease_manifest(p) for p in paths):
            self._lease(change, flag)
        for path in sorted(paths & self.corpora.keys()):  # no set of 1,000 corpora per change
            flag("leased_corpus_edited", _first_changed_line(change),
                 f"changes the corpus lease {self.corpora[path]} pins: renew the lease in a reviewed "
                 "commit, do not patch the corpus", path)
        if change.new == self.layout.freezes:
            self._freezes(change, flag)
        if change.new == self.layout.catalog:
            self._catalog_kinds(change, flag)
        if change.new and change.new in self.bag_subjects:
            for qualname, relation_id in self.bag_subjects[change.new]:
                try:
                    sorts = pyscan.output_sorts(change.text("before"), change.text("after"), qualname)
                except pyscan.Unjudged:
                    break  # a commit's file that does not parse (a WIP commit): the probe rule flags it, once
                for found in sorts:
                    flag("bag_output_sorted", found.line,
                         f"{qualname} {found.detail}, but {relation_id} compares its output as a bag: "
                         "the sort hides nothing the relation checks and may mask an order bug")
        if change.new and self._python_test(change.new):
            try:
                for found in pyscan.ingest_to_concat(change.text("before"), change.text("after")):
                    flag("ingest_replay_to_concat", found.line, found.detail)
            except pyscan.Unjudged:
                pass  # reported once, by the golden rule
        if change.new == "pyproject.toml":
            self._layout(change, flag)
        if change.new and self._probed(change.new):
            self._probes(change, flag)
        if change.new and change.new.endswith((".py", ".pyw")) and change.after != change.before:
            encoding = reads_otherwise(change.after)
            if encoding:
                flag("source_rewritten", 1, f"declares the source encoding {encoding}: Python runs other "
                     "text than the diff shows a reviewer")
        return flags

    def golden(self, commit: Commit, changes: list[_Change], unjudged: list[str]) -> list[Flag]:
        """golden_literal flags of one commit: goldens counted across all its test files,
        so an assertion moved from one file to another (or renamed) adds nothing."""
        before: list[pyscan.Golden] = []
        after: list[tuple[str, pyscan.Golden]] = []
        guarded = None if self.guarded is None else lambda dotted: self.guarded(commit.sha, dotted)
        for change in changes:
            for which in ("before", "after"):
                path = change.old if which == "before" else change.new
                data = change.before if which == "before" else change.after
                if not path or data is None or not self._python_test(path):
                    continue
                if data == b"" and which == "after":
                    unjudged.append(f"{path} @ {commit.sha[:10]}: larger than {MAX_TEXT_BYTES >> 20} MiB")
                    continue
                try:
                    found = pyscan.golden_values(change.text(which), guarded)
                except pyscan.Unjudged as exc:
                    if which == "after":
                        unjudged.append(f"{path} @ {commit.sha[:10]}: {exc}")
                    continue
                if which == "before":
                    before += found
                else:
                    after += [(path, g) for g in found]
        if len(commit.parents) > 1:  # a merge adds no golden that one of its parents had
            for path in {c.new for c in changes if c.new and self._python_test(c.new)}:
                for parent in commit.parents:
                    before += self._goldens_or_none(self.reader.read(parent, path), guarded)
        added = {id(g) for g in pyscan.new_golden(before, [g for _, g in after])}
        return [Flag("golden_literal", commit.sha, path, g.line,
                     f"{g.detail}: a golden value restates the code's output; the relation stores no answer")
                for path, g in after if id(g) in added]

    @staticmethod
    def _goldens_or_none(data: bytes | None, guarded) -> list:
        try:
            return pyscan.golden_values(None if data is None else data.decode("utf-8-sig", "replace"), guarded)
        except pyscan.Unjudged:
            return []

    def _layout(self, change: _Change, flag) -> None:
        """A change to [tool.relconsole] moves the gate (§2): flagged, whatever it does."""
        def section(text):
            try:
                return tomllib.loads(text or "").get("tool", {}).get("relconsole")
            except tomllib.TOMLDecodeError:
                return "unparsable"
        old, new = section(change.text("before")), section(change.text("after"))
        if old != new:
            line = next((n for n, text in enumerate((change.text("after") or "").splitlines(), 1)
                         if text.strip().startswith("[tool.relconsole")), None)
            flag("oracle_layout_changed", line,
                 "changes [tool.relconsole] (where the oracle lives, what is protected): the review keeps "
                 "the base ref's layout; a layout change is a reviewed change of its own")

    def _lease(self, change: _Change, flag) -> None:
        before = _yaml_fields(change.text("before"), change.old)
        after = _yaml_fields(change.text("after"), change.new)
        for key, what in (("sha256", "hash"), ("path", "corpus path")):
            old, new = before[0].get(key), after[0].get(key)
            if key == "path" and isinstance(old, str) and isinstance(new, str) and _normal(old) == _normal(new):
                continue
            if old != new:
                line = after[1].line_of((key,)) if after[1] is not None and new is not None else None
                flag("lease_hash_edited", line,
                     f"the lease's {what} goes from {_show(old)} to {_show(new)}: a re-pin is a reviewed "
                     "lease: commit by the lease owner, never part of a patch")

    def _freezes(self, change: _Change, flag) -> None:
        before, after = _rows(change.text("before")), _rows(change.text("after"))
        if after is None:
            return
        had = Counter(_row_key(r) for r in (before or []))
        frozen = {r.get("relation_id") for r in (before or []) if isinstance(r, dict)}
        line_of = row_line_finder(change.text("after"), change.new)
        for index, row in enumerate(after):
            key = _row_key(row)
            if had[key]:
                had[key] -= 1
                continue
            rid = row.get("relation_id") if isinstance(row, dict) else None
            name = "freeze_row_edited" if rid in frozen else "freeze_row_added"
            flag(name, line_of(index, None), f"{'edits' if rid in frozen else 'adds'} the freeze row for "
                 f"{_show(rid)}: freezes are operator data, committed alone (freeze:) after a replay")

    def _catalog_kinds(self, change: _Change, flag) -> None:
        before = _relation_kinds(change.text("before"), change.old)
        after_text = change.text("after")
        after = _relation_kinds(after_text, change.new)
        for rid, (kind, line) in after.items():
            if before.get(rid, (None,))[0] == "replay_ingest" and kind != "replay_ingest":
                flag("ingest_replay_to_concat", line,
                     f"relation {rid} was replay_ingest and becomes {_show(kind)}: ingesting twice is what "
                     "it checked; a concatenation of rows checks something else")


def _bag_subjects(layout: Layout, catalog: Catalog) -> dict[str, list[tuple[str, str]]]:
    """Source file -> [(function qualname, relation id)] for subjects of relations that
    compare outputs as bags (split_merge, or ``order_free``), in every import path (§3)."""
    out: dict[str, list[tuple[str, str]]] = {}
    for relation in catalog.relations.values():
        if relation.kind != "split_merge" and not (relation.params or {}).get("order_free"):
            continue
        module, _, attr = relation.subject.partition(":")
        stem = module.replace(".", "/")
        for root in _roots(layout):
            for name in (f"{stem}.py", f"{stem}/__init__.py"):
                out.setdefault(f"{root}/{name}" if root else name, []).append((attr, relation.id))
    return out


def _roots(layout: Layout) -> list[str]:
    """Import roots as path prefixes ("" for the repository root), as §3 resolves subjects."""
    roots = list(layout.import_paths) if layout.import_paths is not None else ["", "src"]
    return [r.strip("/").removeprefix("./").removeprefix(".") for r in roots]


def _guarded_modules(layout: Layout, catalog: Catalog, reader: BlobReader):
    """(commit, dotted module) -> True when the module's source file in that commit (in any
    import root) is owned by at least one relation: a literal asserted on a call into it
    restates what a relation guards."""
    @lru_cache(maxsize=4096)
    def guarded(sha: str, dotted: str) -> bool:
        stem = dotted.replace(".", "/")
        for root in _roots(layout):
            for name in (f"{stem}.py", f"{stem}/__init__.py"):
                path = f"{root}/{name}" if root else name
                if reader.read(sha, path) is None:
                    continue
                hit = winning_pattern(catalog.owners, path)
                return hit is not None and bool(hit[1])
        return False
    return guarded


def _first_changed_line(change: _Change) -> int | None:
    """The first line where the two versions differ (None: a deletion or a large/binary blob)."""
    if change.after is None or not change.after or b"\0" in change.after[:8192]:
        return None
    old, new = (change.before or b"").splitlines(), change.after.splitlines()
    for number, line in enumerate(new, 1):
        if number > len(old) or old[number - 1] != line:
            return number
    return len(new) if len(old) > len(new) else None  # lines cut at the end, or a mode change


def _yaml_fields(text: str | None, source: str | None):
    """(mapping, Loaded or None) of a YAML file; ({}, None) when absent or unparsable."""
    if text is None:
        return {}, None
    try:
        loaded = load_yaml_text(text, source or "?")
    except BadInputError:
        return {}, None
    return (loaded.data if isinstance(loaded.data, dict) else {}), loaded


def _rows(text: str | None) -> list | None:
    if text is None:
        return None
    try:
        rows = json.loads(text) if text.strip() else []
    except ValueError:
        return None
    return rows if isinstance(rows, list) else None


def _row_key(row) -> str:
    return json.dumps(row, sort_keys=True)


def _relation_kinds(text: str | None, source: str | None) -> dict[str, tuple[str | None, int | None]]:
    """Relation id -> (kind, line of ``kind``) in a catalog text; {} when it does not parse."""
    data, loaded = _yaml_fields(text, source)
    out = {}
    for index, row in enumerate(data.get("relations") or []):
        if isinstance(row, dict) and isinstance(row.get("id"), str):
            out[row["id"]] = (row.get("kind"), loaded.line_of(("relations", index, "kind")))
    return out


def _show(value) -> str:
    text = "nothing" if value is None else str(value)
    return text if len(text) <= 80 else text[:40] + "…" + text[-39:]
