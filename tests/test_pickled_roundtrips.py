"""A roundtrip over a library's own class (issue 34): f(x) is an instance the wire does not
carry, so it goes to the inverse's call pickled, kept by the subject's server unread. The
relation compares inverse(f(x)) with x and holds for an honest library in a src/ or a root
layout; what a hostile patch could try through the pickle (hand the inverse its input,
disguise its input, answer from f's process, change earlier answers, refuse pickling) is a
miss, a vacuous hold or a block, never a pass.
"""

from __future__ import annotations

import base64
import json
import os
import pickle
import subprocess
import sys
import textwrap

import pytest

from bench.gitrepo import reviewed_repo
from conftest import TODAY
from library_trees import (MONOTONIC, VERSION_HELPERS, VERSION_LIBRARY, VERSION_SEEDS, library_plan, relation_entry,
                           version_library)
from relconsole.engine.relations.kinds import PICKLED_NOTE, roundtrip
from relconsole.engine.relations.outcome import Kept
from relconsole.engine.relations.pool import evaluate_once
from relconsole.engine.relations.subject.kept import keep_output
from relconsole.engine.relations.subject.results import _kept
from relconsole.engine.relations.subject.server import ForkServer
from relconsole.engine.repo.config import Layout

ROUNDTRIP = relation_entry("ver.roundtrip", "roundtrip", "verlib:Version.parse", "versions",
                           "a version printed after it is parsed is its text", inverse="builtins:str")
SEEDS = ["1.0.0", "2.3.4", "10.0.1"]


LOSSY_PARSE = ("return cls(*[int(part) for part in text.split(\".\")])",
               "return cls(*[int(part) for part in text.split(\".\")][:2])")


@pytest.mark.parametrize("layout", ["src", "root"])
def test_a_roundtrip_over_the_library_s_own_class_holds(tmp_path, layout):
    record = evaluate_once(library_plan(tmp_path / "tree", ROUNDTRIP, layout=layout), seed=1)
    assert record.held and not record.blocked and not record.vacuous, record.describe()


def test_a_parse_that_loses_a_part_misses_with_x_first(tmp_path):
    record = evaluate_once(library_plan(tmp_path / "tree", ROUNDTRIP, library=version_library("", LOSSY_PARSE)), seed=1)
    assert not record.held and not record.blocked and not record.error_type, record.describe()
    assert record.source in SEEDS and record.followup != record.source
    assert "x vs inverse(f(x))" in record.note
    line = record.describe()
    assert line.index(json.dumps(record.source)) < line.rindex(json.dumps(record.followup)), line


@pytest.mark.parametrize("encoded,held", [("str", False), ("verlib.version.Version", True)])
def test_a_pickled_f_x_is_typed_by_its_class_never_by_a_plain_word(tmp_path, encoded, held):
    """A patch cannot make f(x) unencodable to dodge ``params.encoded``: the type word of a
    pickled f(x) is its class's module.Qualname, which no plain word matches."""
    relation = relation_entry("ver.roundtrip", "roundtrip", "verlib:Version.parse", "versions", "printed back",
                              inverse="builtins:str", params=f"{{encoded: {encoded}}}")
    record = evaluate_once(library_plan(tmp_path / "tree", relation), seed=1)
    assert record.held is held, record.describe()
    assert held or "verlib.version.Version" in record.note


HANDS_OVER_ITS_INPUT = """

    def _lossy(cls, text):
        version = cls(*[int(part) for part in text.split(".")][:2])
        version.text = text
        return version


    Version.parse = classmethod(_lossy)
    Version.__reduce__ = lambda self: (str, (self.text,))  # the other process gets x, not this object
    """
REMEMBERS_WHAT_F_SAW = """

    _SEEN = {}


    def _lossy(cls, text):
        version = cls(*[int(part) for part in text.split(".")][:2])
        _SEEN[id(version)] = text
        return version


    Version.parse = classmethod(_lossy)
    Version.__str__ = lambda self: _SEEN.get(id(self)) or f"{self.major}.{self.minor}.{self.patch}"
    """


@pytest.mark.parametrize("trick", [HANDS_OVER_ITS_INPUT, REMEMBERS_WHAT_F_SAW], ids=["reduce-to-x", "cache-in-f"])
def test_a_lossy_parse_that_smuggles_x_through_the_pickle_or_its_process_misses(tmp_path, trick):
    record = evaluate_once(library_plan(tmp_path / "tree", ROUNDTRIP, library=version_library(trick)), seed=1)
    assert not record.held and not record.vacuous and not record.blocked, record.describe()
    if trick is HANDS_OVER_ITS_INPUT:  # inverse(f(x)) is x over there only: f's own process says otherwise
        assert PICKLED_NOTE in record.note, record.describe()


IN_DISGUISE = """

    class Text(str):
        def __eq__(self, other):  # an override: the wire refuses the value, so it goes pickled
            return str.__eq__(self, other)

        __hash__ = str.__hash__


    Version.parse = classmethod(lambda cls, text: Text(text))
    """


def test_a_parse_that_returns_its_input_in_disguise_proves_nothing(tmp_path):
    record = evaluate_once(library_plan(tmp_path / "tree", ROUNDTRIP, library=version_library(IN_DISGUISE)), seed=1)
    assert record.vacuous and not record.held, record.describe()


UNPICKLABLE = """

    Version.parse = classmethod(lambda cls, text: (part for part in text.split(".")))
    """


def test_an_f_x_neither_the_wire_nor_pickle_carries_is_blocked_with_its_type_and_why(tmp_path):
    record = evaluate_once(library_plan(tmp_path / "tree", ROUNDTRIP, library=version_library(UNPICKLABLE)), seed=1)
    assert record.blocked and not record.held
    assert "generator" in record.blocked and "pickle" in record.blocked, record.blocked
    assert "declare how to compare" not in record.blocked


CHANGES_EARLIER_ANSWERS = """

    _LAST = []


    def _reusing(cls, text):
        for earlier in _LAST:  # a result handed out before is changed under its holder
            earlier.minor += 1
        version = cls(*[int(part) for part in text.split(".")])
        _LAST.append(version)
        return version


    Version.parse = classmethod(_reusing)
    """


def test_a_parse_that_changes_the_objects_it_gave_earlier_keeps_state_across_calls(tmp_path):
    """The repeated call's earlier answers are compared through the relation's observable,
    inverse(f(x)), since f(x) itself is no data: the answer given first no longer prints as
    it did once a later call ran, though the judged call's own answer is right."""
    plan = library_plan(tmp_path / "tree", ROUNDTRIP, library=version_library(CHANGES_EARLIER_ANSWERS),
                        clock=Layout().frozen_clock)
    record = evaluate_once(plan, seed=1)
    assert not record.held and record.error_type == "state across calls", record.describe()


@pytest.mark.parametrize("observed", [None, {"x": SEEDS[1]}], ids=["none", "not-a-pair"])
def test_a_pickled_f_x_without_an_observable_the_judge_can_read_is_a_miss(observed):
    """A child that writes its own result (the subject shares its process) may send a pickle
    of x itself under a class's name, and no observable or a malformed one: the server keeps
    the bytes, passes on a word for "nothing to read", and the judge misses the roundtrip
    though the inverse's call would give x back."""
    x = SEEDS[1]
    body = {"pickled": base64.b64encode(pickle.dumps(x)).decode("ascii"), "is_input": False,
            "type": "verlib.version.Version", "imported": []}
    forged = json.dumps(body if observed is None else dict(body, observed=observed)).encode()
    held, payload = keep_output("f(x)", forged)
    assert held is not None and held[1].type == "verlib.version.Version"
    kept = _kept(payload, 0.0).kept

    class Calls:  # f(x) kept as the server kept it; the inverse's call gives x back
        def run(self, calls):
            return {"f(x)": Kept("verlib.version.Version", False, kept["observed"])} if "f(x)" in calls \
                else {"inverse(f(x))": x}

    relation = {"id": "r", "kind": "roundtrip", "subject": "verlib:Version.parse", "inverse": "builtins:str",
                "compare": "exact"}
    outcome = roundtrip(relation, x, calls=Calls(), wire=lambda value: json.dumps(value))
    assert not outcome.held and PICKLED_NOTE in outcome.note, outcome


def test_the_server_keeps_a_pickled_f_x_without_unpickling_it(tmp_path):
    """The server forks every later call: had it unpickled f(x), the library would be loaded
    in each of them before it is imported. The next call that reads it gets the object."""
    tree = tmp_path / "tree"
    library_plan(tree, ROUNDTRIP)  # writes the tree
    (tree / "probe.py").write_text("import sys\n\ndef loaded(x):\n    return sorted(m for m in sys.modules if 'verlib' in m)\n")
    server = ForkServer(tree, [str(tree), str(tree / "src")], None, None)
    try:
        text = json.dumps(SEEDS[1])
        kept = server.call({"subject": "verlib:Version.parse", "ops": [["value", text]], "seed": 1, "keep": "f(x)"}, 30)
        assert kept.status == "ok" and kept.kept["type"] == "verlib.version.Version", kept
        assert "ok" not in kept.body and kept.kept["is_input"] is False
        assert server.call({"subject": "probe:loaded", "ops": [["value", "1"]], "seed": 1}, 30).body["ok"] == []
        again = server.call({"subject": "verlib:Version.parse", "ops": [["value", text]], "seed": 1, "keep": "f(x)"}, 30)
        back = server.call({"subject": "builtins:str", "ops": [["kept", "f(x)"]], "seed": 1}, 30)
        assert again.kept and back.body["ok"] == SEEDS[1]
    finally:
        server.close()


CATALOG = ('owners:\n  "src/**": [ver.roundtrip, ver.monotonic]\nrelations:\n'
           + textwrap.indent(ROUNDTRIP + MONOTONIC, "  "))


def test_a_version_library_s_honest_relations_pass_the_review_and_a_broken_parse_does_not(tmp_path):
    """The two relations a real version library failed on: a roundtrip through its own class
    (blocked: "declare how to compare") and a monotonic relation whose canon adapter imports
    the library (every call "subject died: exit 70")."""
    base = {**{f"src/{path}": text for path, text in VERSION_LIBRARY.items()}, **VERSION_SEEDS,
            "oracle/catalog.yaml": CATALOG, "oracle/helpers.py": VERSION_HELPERS}
    source = VERSION_LIBRARY["verlib/version.py"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("RELCONSOLE_")}

    def run(patch: dict[str, str], name: str) -> subprocess.CompletedProcess:
        repo = reviewed_repo(tmp_path / name, base, patch)
        return subprocess.run([sys.executable, "-m", "relconsole", "run", "--all", "--json", "--repo", str(repo),
                               "--today", TODAY.isoformat()], capture_output=True, text=True, env=env, timeout=300)

    honest = run({"src/verlib/version.py": source + "\n# a comment\n"}, "honest")
    assert honest.returncode == 0, honest.stdout[-2000:] + honest.stderr[-2000:]
    broken = run({"src/verlib/version.py": source.replace(*LOSSY_PARSE)}, "broken")
    verdicts = {r["relation_id"]: r["decision"] for r in json.loads(broken.stdout)["relations"]}
    assert broken.returncode == 1 and verdicts == {"ver.roundtrip": "reject", "ver.monotonic": "pass"}, verdicts
