"""Flag levels (issue 35): every review flag kind is ``block``, ``warn`` or ``off``, set in the
base's ``[tool.relconsole] flags``; what honest libraries write every week warns, what games
the gate blocks.

Kinds are read off real probe findings (``probescan`` on real code), and the levels are checked
through ``relconsole flags`` and ``run`` on small real repositories.
"""

from __future__ import annotations

import json
import textwrap

import pytest

from bench.gitrepo import reviewed_repo
from relconsole.engine.gate.flags import probescan
from relconsole.engine.gate.flags.flaglevels import BLOCK, DEFAULT_LEVELS, WARN, flag_kind, flag_level
from relconsole.engine.gate.flags.patchflags import Flag
from test_base_decides import cli
from test_exercised import BASE, SQUASH

# code an honest library writes every week, and code a patch that games the gate needs
WEEKLY = {
    "randomness": "import random\n\ndef sample(rows):\n    return random.sample(rows, 2)\n",
    "optional_import": "try:\n    import ujson as json\nexcept ImportError:\n    import json\n\n"
                       "def dumps(x):\n    return json.dumps(x)\n",
}
GAMING = {
    "parentage": "import os\n\ndef squash(text):\n    return text if os.getppid() != 1 else text.strip()\n",
    "modules": "import sys\n\ndef squash(text):\n    return text if 'pytest' in sys.modules else text.strip()\n",
    "stack": "import sys\n\ndef squash(text):\n    return text if sys._getframe(1) else text\n",
    # red team, issue 35: the judge's environment carries almost no variable
    "environment": "import os\n\ndef squash(text):\n    return text if len(os.environ) < 8 else text + '.'\n",
    # a probe's quoted literal cannot pick a warn kind by its words
    "quoted-words": "def squash(text):\n    with open('/proc/self/status draws random numbers'.split()[0]) as f:\n"
                    "        return text if 'PPid:\\t1' in f.read() else text + '.'\n",
    # the recorder of executed lines is read through threading as through sys
    "tracer": "import threading\n\ndef squash(text):\n    return text if threading.gettrace() is None else text\n",
}


def _kinds(code: str) -> set[str]:
    found = probescan.environment_probes(None, code)
    assert found, code
    return {flag_kind(Flag("environment_probe", None, "m.py", f.line, f"{f.detail}: ...")) for f in found}


@pytest.mark.parametrize("what", sorted(WEEKLY))
def test_what_honest_libraries_write_every_week_warns(what):
    kinds = _kinds(WEEKLY[what])
    assert f"environment_probe.{what}" in kinds
    assert all(DEFAULT_LEVELS.get(k, BLOCK) == WARN for k in kinds), kinds


@pytest.mark.parametrize("what", sorted(GAMING))
def test_what_a_gaming_patch_needs_blocks(what):
    kinds = _kinds(GAMING[what])
    assert any(DEFAULT_LEVELS.get(k, DEFAULT_LEVELS["environment_probe"]) == BLOCK for k in kinds), kinds


def test_a_kinds_setting_wins_over_its_names():
    flag = Flag("environment_probe", None, "m.py", 1, "uses random.random (draws random numbers): ...")
    assert flag_level(flag, {"environment_probe": "off"}) == "off"
    assert flag_level(flag, {"environment_probe": "off", "environment_probe.randomness": "block"}) == BLOCK
    assert flag_level(flag) == WARN


SAMPLED = SQUASH + "\n\ndef pick(words):\n    import random\n    return random.choice(words)\n"


def _flags(repo) -> tuple[int, dict]:
    proc = cli(repo, "flags", "--base", "main", "--json")
    return proc.returncode, json.loads(proc.stdout)


def test_a_warning_is_shown_and_leaves_the_decision(tmp_path):
    repo = reviewed_repo(tmp_path / "repo", BASE, {"timelib/squash.py": SAMPLED})
    code, payload = _flags(repo)
    [flag] = [f for f in payload["flags"] if f["name"] == "environment_probe"]
    assert flag["level"] == "warn" and flag["kind"] == "environment_probe.randomness"
    assert not payload["decision"]["reason"].startswith("review_flag"), payload["decision"]
    text = cli(repo, "flags", "--base", "main").stdout
    assert "[warn: environment_probe.randomness]" in text


@pytest.mark.parametrize("level", ["block", "off"])
def test_the_base_sets_a_kinds_level(tmp_path, level):
    setting = f'[tool.relconsole]\nflags = {{ "environment_probe.randomness" = "{level}" }}\n'
    repo = reviewed_repo(tmp_path / "repo", BASE | {"pyproject.toml": setting}, {"timelib/squash.py": SAMPLED})
    code, payload = _flags(repo)
    probes = [f for f in payload["flags"] if f["name"] == "environment_probe"]
    if level == "off":
        assert probes == [] and not payload["decision"]["reason"].startswith("review_flag"), payload
        assert code != 1  # nothing rejects it (without --run, the relations' evidence is pending: a hold)
    else:
        assert probes and payload["decision"]["reason"] == "review_flag:environment_probe" and code == 1


@pytest.mark.parametrize("table", [
    '[tool.relconsole]\nunexercised = "gap"\nflags = { "environment_probe.randomnes" = "warn" }\n',
    '[tool.relconsole]\nunexercised = "gap"\n\n[tool.relconsole.flags]\ngolden_literal = "warn"\n'
    'environment_probe.randomnes = "warn"\n',
], ids=["inline", "table"])
def test_a_misspelt_flag_kind_is_bad_input_naming_the_file_and_line(tmp_path, table):
    repo = reviewed_repo(tmp_path / "repo", BASE | {"pyproject.toml": table}, {"timelib/squash.py": SAMPLED})
    proc = cli(repo, "flags", "--base", "main")
    said = proc.stderr + proc.stdout
    line = next(n for n, text in enumerate(table.splitlines(), 1) if "randomnes" in text)
    assert proc.returncode == 5 and f"pyproject.toml:{line}" in said and "randomnes" in said, said


def test_a_patch_cannot_lower_its_own_levels(tmp_path):
    """The levels are the base's: a patch that sets them in its own pyproject.toml changes
    nothing but raises oracle_layout_changed."""
    lowered = textwrap.dedent("""\
        [tool.relconsole]
        flags = { "environment_probe" = "off", "oracle_layout_changed" = "off" }
        """)
    gaming = GAMING["parentage"]
    repo = reviewed_repo(tmp_path / "repo", BASE, {"timelib/squash.py": gaming, "pyproject.toml": lowered})
    code, payload = _flags(repo)
    names = {f["name"] for f in payload["flags"] if f["level"] == "block"}
    assert {"environment_probe", "oracle_layout_changed"} <= names and code == 1, payload["flags"]


def test_a_probe_counts_only_where_a_relation_s_subject_ran(tmp_path):
    """Issue 35: a probe in a file no judged call imported or ran cannot tell the judge from
    production: once the relations ran, it is a warning; in the subject's own file it blocks."""
    probe = "import os\n\n\ndef parent():\n    return os.getppid()\n"
    base = BASE | {"oracle/catalog.yaml": BASE["oracle/catalog.yaml"].replace(
        'owners:\n', 'owners:\n  "tools/**": []\n')}
    repo = reviewed_repo(tmp_path / "repo", base, {"tools/parent.py": probe,
                                                   "timelib/squash.py": SQUASH + "\n\n" + probe})
    proc = cli(repo, "flags", "--run", "--base", "main", "--json")
    payload = json.loads(proc.stdout)
    levels = {f["path"]: f["level"] for f in payload["flags"] if f["name"] == "environment_probe"}
    assert levels == {"tools/parent.py": "warn", "timelib/squash.py": "block"}, payload["flags"]
    before_any_run = json.loads(cli(repo, "flags", "--base", "main", "--json").stdout)
    assert {f["path"]: f["level"] for f in before_any_run["flags"]
            if f["name"] == "environment_probe"}["tools/parent.py"] == "block"


def test_one_finding_per_line_and_kind_and_a_warning_never_hides_a_block():
    """Measured on humanize: ``datetime.now(tz)`` gave two clock findings on one line. One line,
    one kind, one finding; a random draw beside a read of the parent's pid stays two."""
    code = ("import datetime as dt\nimport os\nimport random\n\n\ndef f(v):\n"
            "    today = dt.datetime.now(v.tzinfo).date()\n"
            "    x = random.random() if os.getppid() else 0\n    return today, x\n")
    found = probescan.environment_probes(None, code)
    by_line: dict[int, set[str]] = {}
    for f in found:
        by_line.setdefault(f.line, set()).add(flag_kind(Flag("environment_probe", None, "m.py", f.line, f.detail)))
    assert len([f for f in found if f.line == 7]) == 1
    kinds = by_line[8]
    assert "environment_probe.randomness" in kinds and any(DEFAULT_LEVELS.get(k, BLOCK) == BLOCK for k in kinds)


@pytest.mark.parametrize("files, path", [
    # red team, issue 35: a build script runs at install, never under a relation
    ({"setup.py": "import os\nfrom setuptools import setup\n\nif os.getppid() != 1:\n    setup(name='timelib')\n"},
     "setup.py"),
    # a module no judged call imported, but the package imports it when the judge is not looking
    ({"timelib/contrib/__init__.py": "", "timelib/contrib/speedups.py": "import os\n\n\ndef on():\n"
      "    return os.getppid() != 1\n",
      "timelib/__init__.py": "import os\nfrom timelib import squash, durations\n"
                             "if len(os.environ) > 8:\n    from timelib.contrib import speedups\n"},
     "timelib/contrib/speedups.py"),
])
def test_a_probe_a_build_or_a_lazy_import_reaches_still_blocks(tmp_path, files, path):
    base = BASE | {"oracle/catalog.yaml": BASE["oracle/catalog.yaml"].replace(
        'owners:\n', 'owners:\n  "setup.py": []\n  "timelib/contrib/**": []\n  "timelib/__init__.py": []\n')}
    repo = reviewed_repo(tmp_path / "repo", base, {**files, "timelib/squash.py": SQUASH + "\n# touched\n"})
    proc = cli(repo, "flags", "--run", "--base", "main", "--json")
    payload = json.loads(proc.stdout)
    levels = {f["path"]: f["level"] for f in payload["flags"] if f["name"] == "environment_probe"}
    assert levels.get(path) == "block", payload["flags"]
    assert proc.returncode == 1


def test_a_dotted_kind_written_unquoted_in_a_flags_table_is_that_kind():
    """``environment_probe.randomness = "block"`` unquoted parses as a nested TOML table: it means
    the kind all the same, beside its name's own level."""
    from relconsole.engine.repo.config import layout_from_pyproject
    layout = layout_from_pyproject('[tool.relconsole.flags]\nenvironment_probe.randomness = "block"\n'
                                   'golden_literal = "block"\n')
    assert layout.flags == {"environment_probe.randomness": "block", "golden_literal": "block"}
    quoted = layout_from_pyproject('[tool.relconsole]\nflags = { "environment_probe.randomness" = "block", '
                                   'golden_literal = "block" }\n')
    assert quoted.flags == layout.flags
