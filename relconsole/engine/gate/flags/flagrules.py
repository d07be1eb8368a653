"""The per-commit review flag rules (SPEC §9): one commit's changed files, judged one by one.

``FlagRules.check`` gives the flags of one file change (``ChangedFile``: both sides' bytes), and
``FlagRules.golden`` the golden literals a commit adds across its test files; ``patchscan``
walks the commits and feeds them. What each flag means is in ``patchflags``.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
import tomllib
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache

from relconsole.engine.errors import BadInputError
from relconsole.engine.gate.flags import probescan, pyscan
from relconsole.engine.gate.flags.generatedreads import generated_modules, generated_reads, package_of
from relconsole.engine.gate.blobreader import MAX_TEXT_BYTES, BlobReader, oversized
from relconsole.engine.gate.flags.patchflags import Flag
from relconsole.engine.gate.flags.sourcetext import reads_otherwise, source_text
from relconsole.engine.oracle.catalog import Catalog
from relconsole.engine.oracle.freezes import row_line_finder
from relconsole.engine.oracle.yamlload import load_yaml_text
from relconsole.engine.repo.config import Layout
from relconsole.engine.repo.owners import protection, winning_pattern
from relconsole.engine.repo.splitcheck import Commit

TEST_DIRS = frozenset({"tests", "test"})


@dataclass
class ChangedFile:
    """One file a commit changed, as the rules read it: its path in the first parent (``old``)
    and in the commit (``new``), the bytes of both sides (None: absent, ``b""``: a blob over
    ``MAX_TEXT_BYTES``), each side's text decoded once on demand."""

    commit: Commit
    old: str | None  # path in the first parent (None: added)
    new: str | None  # path in the commit (None: deleted)
    before: bytes | None
    after: bytes | None
    _texts: dict = field(default_factory=dict, repr=False, compare=False)  # decoded once: several rules read them

    @property
    def path(self) -> str:
        """The path the flags name: the new one, else (a deletion) the old one."""
        return self.new or self.old

    def text(self, which: str) -> str | None:
        """The text of side ``which`` (``"before"`` or ``"after"``) as its reader sees it
        (``sourcetext.source_text``), None when that side is absent."""
        if which not in self._texts:
            data = self.before if which == "before" else self.after
            path = self.old if which == "before" else self.new
            self._texts[which] = None if data is None else source_text(path or "", data)
        return self._texts[which]


def probed_by_name(path: str) -> bool:
    """Whether the per-commit probe rule reads ``path`` by its name alone: every ``.py`` file but
    tests by name (``test_*.py``, ``*_test.py``, ``conftest.py``), and every compiled module."""
    name = path.rsplit("/", 1)[-1]
    return probescan.is_compiled(path) or name.endswith(".py") and not (
        name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py")


def normal_path(path: str) -> str:
    """A repository path as git lists it (``./a//b`` -> ``a/b``)."""
    return posixpath.normpath(path).removeprefix("./") if path else path


class FlagRules:
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
        self.generated = generated_modules(layout.generated, _roots(layout))
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

    def _probes(self, change: ChangedFile, flag) -> None:
        if probescan.is_compiled(change.new):
            if change.after != change.before:
                flag("environment_probe", None, "adds or changes a compiled module: code no reviewer or "
                     "rule can read, which may look at the process it runs in")
            return
        if oversized(change.after):
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

    def _environment_probes(self, change: ChangedFile) -> list:
        """``probescan.environment_probes`` of the change, from ``probe_cache`` when these two
        sides were scanned before by this code (a digest of both sides' bytes is the key:
        the findings depend on nothing else). A rename whose source the rule does not read
        (a test, a text file) is judged as an added file: a probe moved out of a test into the
        package is new there (red team, issue 35). Raises Unjudged (never kept) as the scan does."""
        before = change.before if change.old is None or change.old == change.new or self._probed(change.old) \
            and change.old.endswith((".py", ".pyw")) else None

        def scan():
            return probescan.environment_probes(None if before is None else change.text("before"),
                                                change.text("after"))
        if self.probe_cache is None:
            return scan()
        digest = hashlib.blake2b(digest_size=20)
        for side in (before, change.after):
            digest.update(b"\0absent" if side is None else len(side).to_bytes(8, "big") + side)
        return self.probe_cache.get(digest.hexdigest(), change.new or "", scan)

    def check(self, change: ChangedFile) -> list[Flag]:
        """The flags of one file change of a commit (every per-commit rule but golden_literal)."""
        sha, flags = change.commit.sha, []

        def flag(name: str, line: int | None, detail: str, path: str | None = None) -> None:
            flags.append(Flag(name, sha, path or change.path, line, detail))

        paths = {p for p in (change.old, change.new) if p}
        if any(self.guarded_path(p) for p in paths):
            self._protected(change, flag)
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
            self._bag_sorts(change, flag)
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
            for line, name in generated_reads(change.text("before"), change.text("after"),
                                              package_of(change.new, _roots(self.layout)), self.generated):
                flag("environment_probe", line, f"imports {name}, a generated module: relations run with the "
                     "base's stub ([tool.relconsole] generated), production with the build's file, so code "
                     "that reads it can tell the two apart")
        if change.new and change.new.endswith((".py", ".pyw")) and change.after != change.before:
            encoding = reads_otherwise(change.after)
            if encoding:
                flag("source_rewritten", 1, f"declares the source encoding {encoding}: Python runs other "
                     "text than the diff shows a reviewer")
        return flags

    def _protected(self, change: ChangedFile, flag) -> None:
        """A change to a protected path (§9): flagged, with what it does and whether it is in
        effect in this review (the oracle read from HEAD) or comes with a merge."""
        what = "deletes" if change.new is None else "adds" if change.old is None else "changes"
        moved = f" (renamed from {change.old})" if change.old and change.new and change.old != change.new else ""
        effect = ("the review reads the oracle from HEAD (--oracle-from HEAD), so this change is in "
                  "effect here" if self.oracle_from == "HEAD" else
                  "the review reads the oracle from the base ref, so the relations here run without it, but a "
                  "merge brings it")
        effect += "; the flag rejects until a reviewer acknowledges it (relconsole ack)"
        flag("protected_path_changed", _first_changed_line(change), f"{what} a protected path{moved}; {effect}")

    def _bag_sorts(self, change: ChangedFile, flag) -> None:
        """Output sorts the change adds to the subject of a relation that compares bags."""
        for qualname, relation_id in self.bag_subjects[change.new]:
            try:
                sorts = pyscan.output_sorts(change.text("before"), change.text("after"), qualname)
            except pyscan.Unjudged:
                break  # a commit's file that does not parse (a WIP commit): the probe rule flags it, once
            for found in sorts:
                flag("bag_output_sorted", found.line,
                     f"{qualname} {found.detail}, but {relation_id} compares its output as a bag: "
                     "the sort hides nothing the relation checks and may mask an order bug")

    def golden(self, commit: Commit, changes: list[ChangedFile], unjudged: list[str]) -> list[Flag]:
        """golden_literal flags of one commit (the net diff: issue 35), of two kinds.

        An *answer that moved* (``golden_literal.moved``): an assertion whose question (its
        ``shape``) the test file already asked, given another expected value, in a patch that
        also changes the code of the package the asserted call goes into: the test was made
        to agree with the code. A *new assertion* (``golden_literal.added``): any other
        golden the merged tree adds on a call into a module a relation owns. Goldens are
        counted across all test files, so an assertion moved from one file to another (or
        renamed) adds nothing; a removed golden of the same shape in the same file, the same
        definition first, is what an added one moved from.
        """
        before: list[tuple[str, pyscan.Golden]] = []
        after: list[tuple[str, pyscan.Golden]] = []
        guarded = None if self.guarded is None else lambda dotted: self.guarded(commit.sha, dotted)
        for change in changes:
            for which in ("before", "after"):
                path = change.old if which == "before" else change.new
                data = change.before if which == "before" else change.after
                if not path or data is None or not self._python_test(path):
                    continue
                if oversized(data) and which == "after":
                    unjudged.append(f"{path} @ {commit.sha[:10]}: larger than {MAX_TEXT_BYTES >> 20} MiB")
                    continue
                try:
                    found = pyscan.golden_values(change.text(which), guarded)
                except pyscan.Unjudged as exc:
                    if which == "after":
                        unjudged.append(f"{path} @ {commit.sha[:10]}: {exc}")
                    continue
                side = change.new or path  # a renamed file's goldens compare under its new name
                (before if which == "before" else after).extend((side, g) for g in found)
        if len(commit.parents) > 1:  # a merge adds no golden that one of its parents had
            for path in {c.new for c in changes if c.new and self._python_test(c.new)}:
                for parent in commit.parents:
                    before += [(path, g) for g in self._goldens_or_none(self.reader.read(parent, path), guarded)]
        added = {id(g) for g in pyscan.new_golden([g for _, g in before], [g for _, g in after])}
        removed = {id(g) for g in pyscan.new_golden([g for _, g in after], [g for _, g in before])}
        moved_from = _answers_moved([(p, g) for p, g in after if id(g) in added],
                                    [(p, g) for p, g in before if id(g) in removed],
                                    self._changed_packages(commit))
        flags = []
        for path, g in after:
            if id(g) not in added:
                continue
            old = moved_from.get(id(g))
            detail = (f"{g.detail}: a golden value restates the code's output; the relation stores no answer"
                      if old is None else
                      f"moves the expected answer of {g.asked} "
                      f"from {old.expected} to {g.expected} in a patch that changes the code it checks: the test "
                      "was made to agree with the code; a relation's verdict is the evidence")
            flags.append(Flag("golden_literal", commit.sha, path, g.line, detail))
        return flags

    def _changed_packages(self, commit: Commit) -> set[str]:
        """The top-level modules (``pkg`` of ``src/pkg/mod.py``, in every import root) whose
        files (code or package data, not tests) the commit changes; ``ANY_CODE`` among them
        when it changes non-test Python anywhere (a dependency of the asserted code, red team)."""
        packages = set()
        for path in commit.paths:
            if self._python_test(path) or self.guarded_path(path):
                continue
            if path.endswith((".py", ".pyw")):
                packages.add(ANY_CODE)
            for root in _roots(self.layout):
                if root and not path.startswith(root + "/"):
                    continue
                first = path[len(root) + 1 if root else 0:].split("/", 1)[0]
                packages.add(first.rsplit(".", 1)[0] if first.endswith((".py", ".pyw")) else first)
        return packages

    @staticmethod
    def _goldens_or_none(data: bytes | None, guarded) -> list:
        try:
            return pyscan.golden_values(None if data is None else data.decode("utf-8-sig", "replace"), guarded)
        except pyscan.Unjudged:
            return []

    def _layout(self, change: ChangedFile, flag) -> None:
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

    def _lease(self, change: ChangedFile, flag) -> None:
        before = _yaml_fields(change.text("before"), change.old)
        after = _yaml_fields(change.text("after"), change.new)
        for key, what in (("sha256", "hash"), ("path", "corpus path")):
            old, new = before[0].get(key), after[0].get(key)
            if key == "path" and isinstance(old, str) and isinstance(new, str) and normal_path(old) == normal_path(new):
                continue
            if old != new:
                line = after[1].line_of((key,)) if after[1] is not None and new is not None else None
                flag("lease_hash_edited", line,
                     f"the lease's {what} goes from {_show(old)} to {_show(new)}: a re-pin is a reviewed "
                     "lease: commit by the lease owner, never part of a patch")

    def _freezes(self, change: ChangedFile, flag) -> None:
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

    def _catalog_kinds(self, change: ChangedFile, flag) -> None:
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


ANY_CODE = "\0code"  # _changed_packages: the patch changes non-test Python somewhere


def _answers_moved(added: list[tuple[str, "pyscan.Golden"]], removed: list[tuple[str, "pyscan.Golden"]],
                   changed_packages: set[str]) -> dict[int, "pyscan.Golden"]:
    """id(added golden) -> the removed golden it moved from: the same file and ``shape``
    (the same definition first), one to one, when the patch changes code (``ANY_CODE`` in
    ``changed_packages``) or the asserted call's package's files."""
    pool: dict[tuple[str, str], list] = {}
    for path, golden in removed:
        pool.setdefault((path, golden.shape), []).append(golden)
    moved = {}
    for path, golden in added:
        if ANY_CODE not in changed_packages and not any(m.split(".", 1)[0] in changed_packages for m in golden.modules):
            continue
        candidates = pool.get((path, golden.shape))
        if candidates:
            same = [c for c in candidates if c.scope == golden.scope]
            old = (same or candidates)[0]
            candidates.remove(old)
            moved[id(golden)] = old
    return moved


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


def _first_changed_line(change: ChangedFile) -> int | None:
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
