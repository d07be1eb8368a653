"""A version library's trees for tests (issue 34): the library ``verlib`` (a class of its own,
parsed from text, printed back, ordered, built from a dict of parts), its seeds, catalog
relations over it and the run plan of one, in a ``src/`` or a root layout."""

from __future__ import annotations

import textwrap
from pathlib import Path

from bench.gitrepo import write_files
from relconsole.engine.oracle.catalog import load_catalog
from relconsole.engine.relations.records import RunPlan

# A version library as a user's repository holds one: a class of its own, parsed from text,
# printed back, ordered, built from a dict of parts (issue 34).
VERSION_LIBRARY = {
    "verlib/__init__.py": "from verlib.version import Version\n",
    "verlib/version.py": textwrap.dedent("""\
        import functools


        @functools.total_ordering
        class Version:
            def __init__(self, major, minor=0, patch=0):
                self.major, self.minor, self.patch = major, minor, patch

            @classmethod
            def parse(cls, text):
                return cls(*[int(part) for part in text.split(".")])

            @classmethod
            def from_parts(cls, parts):
                return cls(parts["major"], parts.get("minor", 0), parts.get("patch", 0))

            def _key(self):
                return (self.major, self.minor, self.patch)

            def __eq__(self, other):
                return self._key() == other._key()

            def __lt__(self, other):
                return self._key() < other._key()

            def __str__(self):
                return f"{self.major}.{self.minor}.{self.patch}"
        """),
}
VERSION_SEEDS = {"oracle/seeds/versions.jsonl": '"1.0.0"\n"2.3.4"\n"10.0.1"\n',
                 "oracle/seeds/parts.jsonl": '{"major": 1, "minor": 2, "patch": 3}\n{"major": 0, "minor": 9, "patch": 0}\n'}


def relation_entry(rid: str, kind: str, subject: str, seeds: str, statement: str, **fields: str) -> str:
    """One catalog relation as YAML text (an item of ``relations:``) over the seeds file
    ``oracle/seeds/<seeds>.jsonl``, compared exactly; ``fields`` are written as given
    (``inverse="builtins:str"``, ``params="{field: patch, step: 1}"``)."""
    lines = [f"- id: {rid}", f"  kind: {kind}", f"  subject: {subject}",
             *(f"  {key}: {value}" for key, value in fields.items()),
             f"  input: {{seeds: oracle/seeds/{seeds}.jsonl}}", "  compare: exact", f"  statement: {statement}"]
    return "\n".join(lines) + "\n"


def version_library(extra: str = "", replace: tuple[str, str] | None = None) -> dict[str, str]:
    """``VERSION_LIBRARY`` with ``replace`` (old, new) made in its module and ``extra`` appended."""
    source = VERSION_LIBRARY["verlib/version.py"]
    if replace is not None:
        assert replace[0] in source
        source = source.replace(*replace)
    return {**VERSION_LIBRARY, "verlib/version.py": source + textwrap.dedent(extra)}


# the monotonic relation over the library's own class, compared through an adapter that imports it
MONOTONIC = relation_entry("ver.monotonic", "monotonic", "verlib:Version.from_parts", "parts",
                           "a higher patch is a higher version", canon="oracle.helpers:version_data",
                           params="{field: patch, step: 1}")
VERSION_HELPERS = """\
from verlib import Version


def version_data(value):
    assert isinstance(value, Version)  # the subject's class is the one the adapter imported
    return (value.major, value.minor, value.patch)
"""


def library_plan(tree: Path, relation: str, files: dict[str, str] | None = None, layout: str = "src",
                 clock: str | None = None, library: dict[str, str] | None = None) -> RunPlan:
    """A run plan for the one relation of ``relation`` (``relation_entry``'s YAML) over a
    tree at ``tree``: the version library (``library``, default
    ``VERSION_LIBRARY``) under ``src/`` or at the root (``layout``), its seeds
    (``VERSION_SEEDS``) and ``files`` (adapters under ``oracle/``, anything else), import
    roots as a review gives them (the root, and ``src/`` in a src layout)."""
    prefix = "src/" if layout == "src" else ""
    write_files(tree, {**{prefix + path: text for path, text in (library or VERSION_LIBRARY).items()},
                       **VERSION_SEEDS, **(files or {})})
    catalog = load_catalog("relations:\n" + textwrap.indent(relation, "  "), "oracle/catalog.yaml")
    [rel] = catalog.relations.values()
    roots = [str(tree)] + ([str(tree / "src")] if layout == "src" else [])
    return RunPlan(rel, tree, roots, "seeds", tree / rel.seeds_path, "pin", 60.0, clock, protected=("oracle/**",))
