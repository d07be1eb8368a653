"""Patch review flags (SPEC §9): what the commits under review did that a reviewer must see.

``patchscan.patch_flags`` walks the commits between the merge base and HEAD (one ``git log``,
merges judged by what they add, as the split check does) and compares each changed file with
its version in the commit's first parent (the rules: ``flagrules``); the flags of the patch as
a whole are in ``wholepatchflags``. Python rules are in ``pyscan`` (``ast``, never regexes
over diff text); oracle files are compared as parsed data. Each ``Flag`` names the commit,
the file and the line. Any flag makes the PR's decision ``reject`` with reason
``review_flag:<name>`` (see ``Review.decision``).

This module holds the flags' names, what each fires on (below), ``Flag`` and ``FlagReport``.

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
| test_harness_changed | changes a ``conftest.py``, ``pytest.ini`` or the pytest settings that load code (``wholepatchflags``) |
| packaging_changed | changes what is built, shipped, installed or loaded: packaging settings compared as parsed data, or a ``.pth`` file (``packagingflags``) |
"""

from __future__ import annotations

from dataclasses import dataclass

FLAG_NAMES = ("protected_path_changed", "lease_hash_edited", "leased_corpus_edited", "freeze_row_added",
              "freeze_row_edited", "golden_literal", "bag_output_sorted", "ingest_replay_to_concat",
              "oracle_layout_changed", "relation_changed", "patch_catalog_invalid", "environment_probe",
              "source_rewritten", "test_harness_changed", "packaging_changed")


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


@dataclass
class FlagReport:
    """``flags`` oldest commit first, and ``unjudged``: "path @ commit: why" for each Python
    file the rules could not read (its golden assertions are unknown, not absent)."""

    flags: list[Flag]
    unjudged: list[str]
