"""Covered means exercised (issue 35): a changed statement no relation's calls ran is a gap,
whatever imports the file.

The pure parts (statements of a change, runs of lines, what is left unexercised) are checked
by properties; the subject's own line record on a real harness; the front ends on small real
repositories whose package ``__init__`` imports every submodule, so that ownership through
imports binds every module to the one relation while it calls only one of them.
"""

from __future__ import annotations

import json
import textwrap

import pytest
from hypothesis import given, strategies as st

from bench.gitrepo import reviewed_repo
from relconsole.engine.gate import exercised
from relconsole.engine.gate.cireport import sarif
from relconsole.engine.relations.subject.results import _written_alike
from test_base_decides import cli

SQUASH = 'def squash(text):\n    """Collapse runs of whitespace."""\n    return " ".join(text.split())\n'
DURATIONS = "def seconds(minutes):\n    return minutes * 60\n"
CATALOG = textwrap.dedent("""\
    owners:
      "timelib/squash.py": [text.squash]
    relations:
      - id: text.squash
        kind: idempotence
        subject: timelib.squash:squash
        input: {seeds: oracle/seeds/texts.jsonl}
        compare: exact
        statement: Squashing twice is squashing once.
    """)
BASE = {"timelib/__init__.py": "from timelib import squash, durations\n", "timelib/squash.py": SQUASH,
        "timelib/durations.py": DURATIONS, "oracle/seeds/texts.jsonl": '"a  b"\n"  x y   z "\n"plain"\n',
        "oracle/catalog.yaml": CATALOG}
# the one-line bug of the issue: durations read minutes as seconds, in a module no relation calls
MINUTES_AS_SECONDS = {"timelib/durations.py": "def seconds(minutes):\n    return minutes  # read as seconds\n"}


# --- the pure parts ---------------------------------------------------------------------------

spans = st.lists(st.tuples(st.integers(1, 200), st.integers(0, 3)), max_size=20).map(
    lambda pairs: sorted({(a, a + n) for a, n in pairs}))


@given(st.sets(st.integers(1, 500)))
def test_line_ranges_cover_exactly_the_lines_given(lines):
    ranges = exercised.line_ranges(lines)
    assert {n for a, b in ranges for n in range(a, b + 1)} == lines
    assert all(b1 + 1 < a2 for (_, b1), (a2, _) in zip(ranges, ranges[1:]))  # runs never touch


@given(spans, st.sets(st.integers(1, 210)), st.sets(st.integers(1, 210)))
def test_running_more_lines_never_leaves_more_unexercised(changed, ran, more):
    before = exercised.unexercised({"m.py": changed}, {"m.py": ran})
    after = exercised.unexercised({"m.py": changed}, {"m.py": ran | more})
    left = set(before[0].spans) if before else set()
    assert (set(after[0].spans) if after else set()) <= left
    # a statement is left exactly when no line of it ran
    assert left == {s for s in changed if not set(range(s[0], s[1] + 1)) & ran}


def test_a_line_inside_a_multi_line_statement_stands_for_the_statement():
    text = "def f(a,\n      b):\n    return (a +\n            b)\n"
    [(first, last)] = exercised.changed_statements(text, {4})
    assert (first, last) == (3, 4)
    assert exercised.unexercised({"f.py": [(first, last)]}, {"f.py": {4}}) == []


def test_comments_docstrings_and_type_checking_blocks_are_no_statements():
    text = textwrap.dedent('''\
        from typing import TYPE_CHECKING
        if TYPE_CHECKING:
            from os import PathLike
        def f():
            """Changed words."""
            # a changed comment
            return 1
        ''')
    lines = text.splitlines()
    changed = {n for n, line in enumerate(lines, 1) if "PathLike" in line or "Changed" in line or "comment" in line}
    assert exercised.changed_statements(text, changed) == []
    assert exercised.changed_statements(text, {7}) == [(7, 7)]


def test_a_file_that_does_not_parse_counts_every_changed_line_with_text():
    text = "def f(:\n\n    return 1\n"
    assert exercised.changed_statements(text, {1, 2, 3}) == [(1, 1), (3, 3)]


def test_the_fast_result_path_carries_the_executed_lines_and_nothing_else():
    expected = b'"x"'
    rows = [["m.py", [1, 2]]]
    body = _written_alike(b'{"ok":"x","imported":["m.py"],"executed":' + json.dumps(rows).encode() + b"}", expected)
    assert body is not None and body["executed"] == rows and body["imported"] == ["m.py"]
    # a result that says more (an earlier call's answer) is read the slow way, never dropped
    assert _written_alike(b'{"ok":"x","first":"y","imported":[]}', expected) is None


# --- real repositories ------------------------------------------------------------------------

def _unexercised(payload: dict) -> dict[str, set[int]]:
    return {row["path"]: {n for a, b in row["lines"] for n in range(a, b + 1)} for row in payload["unexercised"]}


def test_a_bug_in_a_module_only_imported_is_a_gap_naming_its_line(tmp_path):
    repo = reviewed_repo(tmp_path / "repo", BASE, MINUTES_AS_SECONDS)
    bound = cli(repo, "bind", "--base", "main", "--json")  # a fresh clone: bind runs what it needs
    assert "timelib/durations.py" in [p["path"] for p in json.loads(bound.stdout)["paths"]
                                      if p["state"] == "owned" and p["via_import"]]
    assert _unexercised(json.loads(bound.stdout)) == {"timelib/durations.py": {2}} and bound.returncode == 2
    proc = cli(repo, "run", "--base", "main", "--json")
    payload = json.loads(proc.stdout)
    assert payload["decision"] == "pass" and proc.returncode == 2, proc.stdout[-2000:]
    assert _unexercised(payload) == {"timelib/durations.py": {2}}
    text = cli(repo, "run", "--base", "main")
    assert "unexercised: timelib/durations.py line 2" in text.stdout
    again = cli(repo, "bind", "--base", "main")  # from what the runs recorded
    assert "unexercised: timelib/durations.py line 2" in again.stdout and again.returncode == 2


def test_the_gate_its_sarif_and_its_summary_name_the_lines(tmp_path):
    repo = reviewed_repo(tmp_path / "repo", BASE, MINUTES_AS_SECONDS)
    artifacts = tmp_path / "artifacts"
    proc = cli(repo, "gate", "--base", "main", "--runs", "2", "--artifacts", str(artifacts), "--json",
               "--no-history", "--sarif", str(tmp_path / "gate.sarif"))
    decision = json.loads(proc.stdout)
    assert proc.returncode == 2 and decision["exit_code"] == 2, proc.stdout[-2000:]
    assert _unexercised(decision) == {"timelib/durations.py": {2}}
    results = json.loads((tmp_path / "gate.sarif").read_text())["runs"][0]["results"]
    [found] = [r for r in results if r["ruleId"] == exercised.UNEXERCISED]
    region = found["locations"][0]["physicalLocation"]
    assert region["artifactLocation"]["uri"] == "timelib/durations.py" and region["region"]["startLine"] == 2
    assert sarif(decision)["runs"][0]["results"] == results


def test_changed_lines_a_relation_runs_are_no_gap_but_a_new_branch_it_skips_is(tmp_path):
    guarded = SQUASH.replace('    return " "', '    if text is None:\n        return ""\n    return " "')
    repo = reviewed_repo(tmp_path / "repo", BASE, {"timelib/squash.py": guarded})
    proc = cli(repo, "run", "--base", "main", "--json")
    payload = json.loads(proc.stdout)
    skipped = guarded.splitlines().index('        return ""') + 1
    assert _unexercised(payload) == {"timelib/squash.py": {skipped}} and proc.returncode == 2
    ran = SQUASH.replace('" ".join(text.split())', '" ".join(text.split()).strip()')
    honest = reviewed_repo(tmp_path / "honest", BASE, {"timelib/squash.py": ran})
    proc = cli(honest, "run", "--base", "main", "--json")
    assert json.loads(proc.stdout)["unexercised"] == [] and proc.returncode == 0, proc.stdout[-2000:]


def test_warn_lists_the_lines_and_leaves_the_exit_code(tmp_path):
    base = BASE | {"pyproject.toml": '[tool.relconsole]\nunexercised = "warn"\n'}
    repo = reviewed_repo(tmp_path / "repo", base, MINUTES_AS_SECONDS)
    proc = cli(repo, "run", "--base", "main", "--json")
    payload = json.loads(proc.stdout)
    assert proc.returncode == 0 and payload["unexercised_level"] == "warn"
    assert _unexercised(payload) == {"timelib/durations.py": {2}}


STOPPED = """\
import sys


def _quiet():
    sys.settrace(None)


def _join(words):
    return " ".join(words)


def squash(text):
    _quiet()
    return _join(text.split())
"""


def test_a_patch_that_stops_the_line_record_is_never_passed(tmp_path):
    """Replacing the trace function hides the lines the patch runs after it: they count as
    unexercised, never as run (and setting the tracer is a §9 probe besides)."""
    repo = reviewed_repo(tmp_path / "repo", BASE, {"timelib/squash.py": STOPPED})
    proc = cli(repo, "run", "--base", "main", "--json")
    payload = json.loads(proc.stdout)
    assert proc.returncode != 0, proc.stdout[-2000:]
    hidden = STOPPED.splitlines().index('    return " ".join(words)') + 1
    assert hidden in _unexercised(payload).get("timelib/squash.py", set()), payload["unexercised"]


POOLED = """\
from concurrent.futures import ThreadPoolExecutor


def _join(words):
    return " ".join(words)


def squash(text):
    with ThreadPoolExecutor(max_workers=2) as pool:
        return pool.submit(_join, text.split()).result()
"""


def test_lines_a_worker_thread_runs_are_exercised(tmp_path):
    """A pool's workers run the patch's code as surely as the calling thread (the sample's
    patch sums its chunks on a thread pool): their lines are traced as coverage.py traces them."""
    repo = reviewed_repo(tmp_path / "repo", BASE, {"timelib/squash.py": POOLED})
    proc = cli(repo, "run", "--base", "main", "--json")
    payload = json.loads(proc.stdout)
    assert payload["unexercised"] == [] and proc.returncode == 0, proc.stdout[-2000:]


async def test_the_console_shows_each_changed_line_with_what_ran_it(tmp_path):
    """``v`` on a touched path (the tour's keys keep their meaning): its diff, the changed line a
    relation ran marked with the relation, the one none ran with ◌; the pane says how many."""
    from relconsole.console.app import ReviewApp
    from relconsole.console.screens.diff import DiffScreen
    from test_console import goto, settle, until
    from test_console_fit import screen_rows
    from test_console_owners import screen_text
    from conftest import TODAY
    guarded = SQUASH.replace('    return " "', '    if text is None:\n        return ""\n    return " "')
    repo = reviewed_repo(tmp_path / "repo", BASE, {**MINUTES_AS_SECONDS, "timelib/squash.py": guarded})
    app = ReviewApp(repo=str(repo), base_ref="main", today=TODAY)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot, timeout=300)
        await until(pilot, lambda: "no relation ran" in screen_text(app), "the touched pane's ◌ count")
        index = [b.path for b in app.review.bindings].index("timelib/squash.py")
        await goto(pilot, "touched", f"t:{index}")
        await pilot.press("v")
        await until(pilot, lambda: isinstance(app.screen, DiffScreen), "the diff view")
        await until(pilot, lambda: any("if text is None" in row for row in screen_rows(app)), "the diff's rows")
        lines = screen_rows(app)
        ran = next(line for line in lines if "if text is None" in line)
        skipped = next(line for line in lines if 'return ""' in line)
        assert "✓ text.squash" in ran and "◌" not in ran
        assert "◌" in skipped and "text.squash" not in skipped
        await pilot.press("escape")
        assert not isinstance(app.screen, DiffScreen)
        assert app.review.exit_code() == 2


HEADER = "def seconds(minutes, per=60):\n    return minutes * per\n"


@pytest.mark.parametrize("before, patched", [
    # red team, issue 35: a changed default, signature or decorator runs at import, and does its
    # harm only when the function is called
    (HEADER, "def seconds(minutes, per=1):\n    return minutes * per\n"),
    (HEADER, "def _per(f):\n    return lambda minutes: f(minutes) // 60\n\n\n@_per\ndef seconds(minutes):\n"
             "    return minutes * 60\n"),
    # a constant the module's functions read, a lambda, a body on the def line: each line runs at
    # import as a definition; what it changes happens in a call
    ("PER = 60\n\n\ndef seconds(minutes):\n    return minutes * PER\n",
     "PER = 1\n\n\ndef seconds(minutes):\n    return minutes * PER\n"),
    ("seconds = lambda minutes: minutes * 60\n", "seconds = lambda minutes: minutes\n"),
    ("def seconds(minutes): return minutes * 60\n", "def seconds(minutes): return minutes\n"),
    ("class Clock:\n    PER = 60\n\n    def seconds(self, minutes):\n        return minutes * self.PER\n",
     "class Clock:\n    PER = 1\n\n    def seconds(self, minutes):\n        return minutes * self.PER\n"),
    # a second red team: a decorated signature, a one-line property, function code in a default on
    # the def line, a public name rebound to another function, lines deleted from a body
    ("import functools\n\n\n@functools.cache\ndef seconds(minutes, per=60):\n    return minutes * per\n",
     "import functools\n\n\n@functools.cache\ndef seconds(minutes, per=1):\n    return minutes * per\n"),
    ("class Clock:\n    @property\n    def seconds(self): return 60\n",
     "class Clock:\n    @property\n    def seconds(self): return 1\n"),
    ("def seconds(minutes, _=(lambda: 0)()): return minutes * 60\n",
     "def seconds(minutes, _=(lambda: 0)()): return minutes\n"),
    ("def seconds(minutes, _=sum(i for i in ())): return minutes * 60\n",
     "def seconds(minutes, _=sum(i for i in ())): return minutes\n"),
    ("def _exact(m):\n    return m * 60\n\n\ndef _cut(m):\n    return m\n\n\nseconds = _exact\n",
     "def _exact(m):\n    return m * 60\n\n\ndef _cut(m):\n    return m\n\n\nseconds = _cut\n"),
    ("def seconds(minutes):\n    if minutes < 0:\n        raise ValueError(minutes)\n    return minutes * 60\n",
     "def seconds(minutes):\n    return minutes * 60\n"),
    # a third red team: a header change made to "run" by a call at import, removed lines (a final
    # return, a decorator, the end of a branch), TYPE_CHECKING shadowed, a constant with a derived
    # binding, an imported name, a class's base
    ("def seconds(minutes, per=60):\n    return minutes * per\n",
     "def seconds(minutes, per=1):\n    return minutes * per\n\n\n_WARM = seconds(0)\n"),
    ("def seconds(minutes):\n    m = minutes\n    return m * 60\n", "def seconds(minutes):\n    m = minutes\n"),
    ("def _checked(f):\n    return f\n\n\n@_checked\ndef seconds(minutes):\n    return minutes * 60\n",
     "def _checked(f):\n    return f\n\n\ndef seconds(minutes):\n    return minutes * 60\n"),
    ("def seconds(minutes):\n    if minutes < 0:\n        print(minutes)\n        raise ValueError(minutes)\n"
     "    return minutes * 60\n",
     "def seconds(minutes):\n    if minutes < 0:\n        print(minutes)\n    return minutes * 60\n"),
    ("from typing import TYPE_CHECKING\n\n\ndef seconds(minutes):\n    return minutes * 60\n",
     "from typing import TYPE_CHECKING\nfrom os import sep as TYPE_CHECKING\n\n\ndef seconds(minutes):\n"
     "    if TYPE_CHECKING:\n        return minutes\n    return minutes * 60\n"),
    ("PER = 60\nHOUR = 60 * PER\n\n\ndef seconds(minutes):\n    return minutes * PER\n",
     "PER = 1\nHOUR = 60 * PER\n\n\ndef seconds(minutes):\n    return minutes * PER\n"),
    ("from math import ceil as _cut\n\n\ndef seconds(minutes):\n    return _cut(minutes * 60)\n",
     "from math import floor as _cut\n\n\ndef seconds(minutes):\n    return _cut(minutes * 60)\n"),
    ("class _Exact:\n    PER = 60\n\n\nclass _Cut:\n    PER = 1\n\n\nclass Clock(_Exact):\n"
     "    def seconds(self, minutes):\n        return minutes * self.PER\n",
     "class _Exact:\n    PER = 60\n\n\nclass _Cut:\n    PER = 1\n\n\nclass Clock(_Cut):\n"
     "    def seconds(self, minutes):\n        return minutes * self.PER\n"),
])
def test_a_change_whose_effect_is_in_a_call_counts_only_when_the_call_ran(tmp_path, before, patched):
    repo = reviewed_repo(tmp_path / "repo", BASE | {"timelib/durations.py": before}, {"timelib/durations.py": patched})
    proc = cli(repo, "run", "--base", "main", "--json")
    payload = json.loads(proc.stdout)
    assert "timelib/durations.py" in _unexercised(payload) and proc.returncode == 2, proc.stdout[-2000:]


@pytest.mark.parametrize("shape", ["constant", "lambda", "one-line", "default", "derived"])
def test_the_same_changes_in_code_a_relation_calls_are_exercised(tmp_path, shape):
    """The counterpart: in the module the relation calls, each change ran in a call (read in a
    default of the called function, or through a derived binding, too)."""
    describe = "def describe():\n    return 'joined by ' + repr(SEP)\n\n\n"  # a reader no relation calls
    before, after = {
        "constant": ("SEP = ' '\n\n\n", "SEP = chr(32)\n\n\n"),
        "default": ("SEP = ' '\n\n\n" + describe, "SEP = chr(32)\n\n\n" + describe),
        "derived": ("SEP = ' '\nJOIN = SEP.join\n\n\n" + describe, "SEP = chr(32)\nJOIN = SEP.join\n\n\n" + describe),
        "lambda": ("_join = lambda words: ' '.join(words)\n\n\n", "_join = lambda words: chr(32).join(words)\n\n\n"),
        "one-line": ("def _join(words): return ' '.join(words)\n\n\n", "def _join(words): return chr(32).join(words)\n\n\n"),
    }[shape]
    use = {"constant": "SEP.join(text.split())", "default": "sep.join(text.split())",
           "derived": "JOIN(text.split())"}.get(shape, "_join(text.split())")
    squash = SQUASH.replace('" ".join(text.split())', use)
    if shape == "default":
        squash = squash.replace("def squash(text):", "def squash(text, sep=SEP):")
    repo = reviewed_repo(tmp_path / "repo", BASE | {"timelib/squash.py": before + squash},
                         {"timelib/squash.py": after + squash})
    proc = cli(repo, "run", "--base", "main", "--json")
    payload = json.loads(proc.stdout)
    assert payload["unexercised"] == [] and proc.returncode == 0, proc.stdout[-2000:]


@pytest.mark.parametrize("shape", ["branch-end", "overload"])
def test_honest_removals_and_overloads_in_code_a_relation_runs_are_no_gap(tmp_path, shape):
    """A line removed from the end of a branch that runs, and ``@overload`` signatures whose
    bodies never run, are judged by code the relation runs (red team: false gaps)."""
    guarded = SQUASH.replace('    return " "', '    if text:\n        text = text.strip()\n        text = text + " "\n    else:\n'
                             '        return ""\n    return " "')
    before, after = {
        "branch-end": (guarded, guarded.replace('        text = text + " "\n', "")),
        "overload": (SQUASH, "from typing import overload\n\n\n@overload\ndef squash(text: str) -> str: ...\n"
                             "@overload\ndef squash(text: bytes) -> str: ...\n" + SQUASH),
    }[shape]
    repo = reviewed_repo(tmp_path / "repo", BASE | {"timelib/squash.py": before}, {"timelib/squash.py": after})
    payload = json.loads(cli(repo, "run", "--base", "main", "--json").stdout)
    assert payload["unexercised"] == [], payload["unexercised"]


def test_a_changed_lambda_of_a_table_counts_only_when_that_lambda_ran(tmp_path):
    """The relation runs the table's ``squash`` entry; the patch changes the ``strip`` one."""
    table = ("_OPS = {{\n    'squash': lambda t: ' '.join(t.split()),\n    'strip': lambda t: t.strip({}),\n}}\n\n\n"
             "def squash(text):\n    return _OPS['squash'](text)\n")
    repo = reviewed_repo(tmp_path / "repo", BASE | {"timelib/squash.py": table.format("")},
                         {"timelib/squash.py": table.format("'x'")})
    payload = json.loads(cli(repo, "run", "--base", "main", "--json").stdout)
    assert _unexercised(payload) == {"timelib/squash.py": {3}}


def test_a_local_of_the_same_name_is_no_read_of_the_constant(tmp_path):
    """``SEP`` changed is read only by a function no relation calls; the called one has a local
    ``SEP`` of its own, which is another variable."""
    module = ("SEP = '{}'\n\n\ndef squash_csv(text):\n    return SEP.join(text.split())\n\n\n"
              + SQUASH.replace('return " ".join', 'SEP = " "\n    return SEP.join'))
    repo = reviewed_repo(tmp_path / "repo", BASE | {"timelib/squash.py": module.format(",")},
                         {"timelib/squash.py": module.format(";")})
    payload = json.loads(cli(repo, "run", "--base", "main", "--json").stdout)
    assert _unexercised(payload) == {"timelib/squash.py": {1}}


def test_calltime_evidence_keys_every_header_line_and_names_shared_lines():
    from relconsole.engine.gate.calltime import call_time_evidence
    text = "@a\n@b(1)\ndef f(x,\n      y=2): return x\n"
    evidence = call_time_evidence(text)
    assert set(evidence) == {1, 2, 3, 4}
    assert all(entries == ((4, "f"),) for entries in evidence.values())


def test_a_module_that_sets_its_own_type_checking_hides_nothing():
    text = "TYPE_CHECKING = True\n\n\ndef seconds(minutes):\n    if TYPE_CHECKING:\n        return minutes\n" \
           "    return minutes * 60\n"
    assert (6, 6) in exercised.changed_statements(text, {5, 6})
    typed = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import os\n"
    assert exercised.changed_statements(typed, {2, 3}) == []


# --- the tracer's wanted lines ------------------------------------------------------------------

WALK = """\
def walk(text):
    out = []
    for ch in text:
        if ch == "x":
            out.append("y")
        else:
            out.append(ch)
    return "".join(out)


def other(n):
    return n + 1
"""


def _traced(tmp_path, wanted, text="abxc"):
    """Run ``walk`` and ``other`` under a LineRecorder with ``wanted``; the recorded rows."""
    import importlib.util
    from relconsole.engine.relations.subject.tracing import LineRecorder
    (tmp_path / "walkmod.py").write_text(WALK)
    spec = importlib.util.spec_from_file_location("walkmod", tmp_path / "walkmod.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    recorder = LineRecorder(str(tmp_path), wanted)
    recorder.start()
    try:
        module.walk(text)
        module.other(1)
    finally:
        recorder.stop()
    return dict((path, set(lines)) for path, lines in recorder.executed(str(tmp_path)))


@given(st.text(alphabet="abx", max_size=30), st.sets(st.integers(1, 12)))
def test_wanted_lines_that_ran_are_recorded_as_a_full_record_says(tmp_path_factory, text, wanted):
    """Relation: narrowing the record to wanted lines keeps exactly the wanted lines a full
    record holds (a loop stops being traced once its wanted lines ran, never before)."""
    folder = tmp_path_factory.mktemp("walk")
    full = _traced(folder, None, text).get("walkmod.py", set())
    narrow = _traced(folder, [["walkmod.py", sorted(wanted)]], text).get("walkmod.py", set())
    assert narrow & wanted == full & wanted


def test_a_file_with_no_wanted_line_is_not_traced(tmp_path):
    assert _traced(tmp_path, [["elsewhere.py", [1]]]) == {}
