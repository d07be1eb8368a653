"""The words of a miss agree with its values (issue 34): every note names the source first,
as the miss line and the console's two columns show the source's value first; a monotonic
miss says whether it ordered the output as one value or compared its members; the catalog
reference (docs/catalog.md) says where each kind's ``canon:`` applies.
"""

from __future__ import annotations

import importlib
import json
import re
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

from relconsole.console.views import COLUMN_TITLES, column_titles
from relconsole.engine.relations.canon import canonical
from relconsole.engine.relations.kinds import KINDS, PICKLED_NOTE, TYPE_MISS
from relconsole.engine.relations.records import RunRecord
from relconsole.engine.relations.worker import evaluate_values

PROJECT = Path(__file__).resolve().parents[1]
SUBJECTS = """
def bump(x):
    return x + 1

def first(xs):
    return xs[0]

def reverse(xs):
    return list(reversed(xs))

def dumps(text):
    return text[:-1]

def loads(text):
    return text

class Counting:
    def __init__(self):
        self.seen = 0

    def reset(self):
        self.seen = 0

    def ingest(self, rows):
        self.seen += len(rows)

    def projection(self):
        return self.seen

def store():
    return Counting()

def falling(row):
    return (10 - row["n"], 0)

def shrinking(row):
    return [name for name in ["a", "b", "c"] if "abc".index(name) >= row["n"]]
"""


@pytest.fixture
def subjects(tmp_path, monkeypatch):
    """``SUBJECTS`` as a module under a fresh name in ``tmp_path``: (its name, the module as
    the test imports it, to work out what each call gives)."""
    name = f"words_{uuid.uuid4().hex[:10]}"
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(SUBJECTS))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name, importlib.import_module(name), tmp_path
    sys.modules.pop(name, None)


def judged(relation: dict, inputs: list, folder: Path):
    rel = {"id": f"t.{relation['kind']}", "compare": "exact", "input": {"seeds": "x.jsonl"}, "statement": "t",
           **relation}
    return evaluate_values(rel, inputs, 1, folder, [str(folder)], protected=("**",))[0]


def _ingested(module, rows, times):
    store = module.store()
    for _ in range(times):
        store.ingest(rows)
    return store.projection()


# kind -> (the relation's fields, its input, the source's name in a note, its value worked out here)
CASES = {
    "idempotence": ({"subject": "bump"}, 4, "f(x)", lambda m, x: m.bump(x)),
    "invariance": ({"subject": "first", "transform": "reverse"}, ["a", "b", "c"], "f(x)", lambda m, x: m.first(x)),
    "replay_ingest": ({"subject": "store"}, [{"id": 1}, {"id": 2}], "ingest once", lambda m, x: _ingested(m, x, 1)),
    "roundtrip": ({"subject": "dumps", "inverse": "loads"}, "version 1.2", "x", lambda m, x: x),
}


@pytest.mark.parametrize("kind", sorted(CASES))
def test_a_miss_names_its_source_first_and_shows_its_value_first(subjects, kind):
    name, module, folder = subjects
    fields, x, source_name, source_of = CASES[kind]
    refs = {role: f"{name}:{ref}" for role, ref in fields.items()}
    out = judged({"kind": kind, **refs}, [x], folder)
    assert not out.held, out
    assert out.source == canonical(source_of(module, x)) and out.followup != out.source, out
    assert out.note.split(" vs ")[0] == source_name, out.note
    line = RunRecord(False, 1, out.source, out.followup, out.differing, out.note, compared=out.compared).describe()
    shown = line.rpartition("): ")[2]
    assert shown.index(json.dumps(out.source)) < shown.rindex(json.dumps(out.followup)), line


@pytest.mark.parametrize("subject,words", [("falling", "ordered as one value (a tuple)"),
                                           ("shrinking", "compared as members (a list)")])
def test_a_monotonic_miss_says_how_it_compared_the_outputs(subjects, subject, words):
    name, module, folder = subjects
    out = judged({"kind": "monotonic", "subject": f"{name}:{subject}", "params": {"field": "n", "step": 1}},
                 [{"n": 0}], folder)
    assert not out.held and len(out.differing) == 1, out
    assert words in out.differing[0], out.differing


def test_the_console_titles_each_side_as_the_note_names_it():
    assert set(KINDS) <= set(COLUMN_TITLES)
    assert COLUMN_TITLES["roundtrip"][0].endswith(" x")  # a roundtrip's source is its input x
    fresh, own = column_titles("roundtrip", f"seed row 2: {PICKLED_NOTE}", ["(whole output)"])
    assert fresh == PICKLED_NOTE.split(" vs ")[0] and "f's own" in own
    wanted, got = column_titles("roundtrip", "f(x) is list; the relation says f encodes to str", [TYPE_MISS])
    assert "type" in wanted and "type of f(x)" in got


def test_the_catalog_reference_says_where_canon_applies_for_every_kind():
    text = (PROJECT / "docs" / "catalog.md").read_text()
    start = text.index("Where `canon:` applies")
    head = text.index("| kind |", start)
    table = text[head:text.index("\n\n", head)]
    named = {kind for row in table.splitlines()[2:] for kind in re.findall(r"`(\w+)`", row.split("|")[1])}
    assert named == set(KINDS), table
    assert "any picklable object" in text
    assert "§" not in table and "SPEC" not in table
