"""Hostile patches on the sample repository (issue 15): the code under review can neither
forge, detect, shadow nor escape the relations that judge it.

Every hostile patch here is buggy in a way some relation catches (a non-compensated sum, an
off-by-one count, a double insert) and adds a trick meant to pass anyway. Each is a real
branch off the sample's ``main``, judged by the real CLI as a reviewer's CI would: ``run``
and ``replay`` + ``decide`` must not exit 0. The honest patches beside them (renamed locals,
a reformat, a faster loop with the same fsum, a new property test, docstrings) must pass, so
a "never pass" judge cannot pass this file either.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from bench.gitrepo import git
from conftest import TODAY
from relconsole.engine.demo import materialise
from relconsole.engine.relations.subject.server import bwrap_path

PROJECT = Path(__file__).resolve().parents[1]
AGGREGATOR = (PROJECT / "sample_repo" / "src" / "aggregator.py").read_text()
STORE = (PROJECT / "sample_repo" / "src" / "store.py").read_text()

# The bug most tricks below hide: a plain float sum, whose last bits depend on row order.
NAIVE = AGGREGATOR.replace("math.fsum(present)", "_sum(present)") + textwrap.dedent('''

    def _sum(values):
        total = 0.0
        for value in values:
            total += value
        return total
    ''')
assert NAIVE != AGGREGATOR


def prelude(code: str, source: str) -> str:
    """``source`` with ``code`` run first at import (after its ``from __future__`` line)."""
    future = "from __future__ import annotations\n"
    head, _, tail = source.partition(future)
    return head + future + code + tail if tail else code + source


def _with_guard(guard: str) -> str:
    """The aggregator that sums exactly only when ``guard`` (an expression) is true."""
    return NAIVE.replace("def _sum(values):\n", f"def _sum(values):\n    if {guard}:\n"
                                                  "        return math.fsum(values)\n")


@pytest.fixture(scope="module")
def sample(tmp_path_factory) -> Path:
    return materialise(tmp_path_factory.mktemp("hostile") / "sample", TODAY)


def patched(sample: Path, tmp_path: Path, files: dict[str, str | None], symlinks: dict[str, str] = {}) -> Path:
    """A clone of the sample on branch ``hostile`` off ``main`` with ``files`` written (None
    removes one) and ``symlinks`` made, in one commit by the agent."""
    repo = tmp_path / "sample"
    subprocess.run(["git", "clone", "-q", "-b", "main", str(sample), str(repo)], check=True)
    git(repo, "config", "user.name", "coding-agent")
    git(repo, "config", "user.email", "agent@example.invalid")
    git(repo, "checkout", "-q", "-b", "hostile")
    for path, text in files.items():
        target = repo / path
        if text is None:
            target.unlink()
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(textwrap.dedent(text) if text.startswith("\n") else text)
    for path, link in symlinks.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        os.symlink(link, repo / path)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--allow-empty", "-m", "agent: improve things")
    return repo


def relconsole(repo: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RELCONSOLE_") or k == "RELCONSOLE_REQUIRE_BWRAP"}
    return subprocess.run([sys.executable, "-m", "relconsole", *args, "--repo", str(repo), "--today", TODAY.isoformat()],
                          capture_output=True, text=True, timeout=timeout, env=env)


def run_json(repo: Path) -> tuple[int, dict]:
    proc = relconsole(repo, "run", "--json")
    try:
        payload = json.loads(proc.stdout)
    except ValueError:
        raise AssertionError(f"run printed no JSON (exit {proc.returncode}): {proc.stdout[-500:]} {proc.stderr[-2000:]}")
    return proc.returncode, payload


def flags_of(repo: Path) -> list[str]:
    """The names of the review flags ``relconsole flags`` raises on the patch."""
    proc = relconsole(repo, "flags", "--json")
    return [f["name"] for f in json.loads(proc.stdout)["flags"]]


def replay_and_decide(repo: Path) -> int:
    """``replay`` then ``decide`` over its sheets; the worse of the two exit codes (0 only if both pass)."""
    artifacts = repo.parent / f"artifacts-{uuid.uuid4().hex[:6]}"
    replayed = relconsole(repo, "replay", "--runs", "2", "--artifacts", str(artifacts))
    assert "Traceback" not in replayed.stderr, replayed.stderr
    if not artifacts.is_dir() or not any(artifacts.glob("*.sheet.json")):
        return replayed.returncode
    decided = subprocess.run([sys.executable, "-m", "relconsole", "decide", "--sheet", str(artifacts)],
                             capture_output=True, text=True, timeout=120)
    assert "Traceback" not in decided.stderr, decided.stderr
    return replayed.returncode or decided.returncode


def assert_not_passed(repo: Path, replay: bool = True) -> dict:
    code, payload = run_json(repo)
    decisions = {r["relation_id"]: (r["decision"], r["summary"]) for r in payload["relations"]}
    assert code != 0, f"run passed a hostile patch: {decisions}"
    assert not any("SyntaxError" in why for _, why in decisions.values()), decisions  # the trick ran
    assert payload["relations"], "no relation ran: the patch escaped ownership"
    if replay:
        assert replay_and_decide(repo) != 0, "replay + decide passed a hostile patch"
    return decisions


# --- 1. forging the verdict ---------------------------------------------------------------------

FORGER = '''
import os, sys, json
_forged = json.dumps({"held": True, "source": {}, "followup": {}, "differing": [], "note": "",
                      "ok": {}, "status": "ok"}) + "\\n"
frame = sys._getframe()
while frame is not None:  # every stream and fd number the callers hold
    for value in list(frame.f_locals.values()):
        try:
            if hasattr(value, "write"):
                value.write(_forged); value.flush()
            elif isinstance(value, int) and 0 <= value < 64:
                os.write(value, _forged.encode())
        except Exception:
            pass
    frame = frame.f_back
for fd in range(64):
    try:
        os.write(fd, _forged.encode())
    except OSError:
        pass
os._exit(0)
'''


def test_a_forged_reply_from_the_call_stack_is_not_a_verdict(sample, tmp_path):
    repo = patched(sample, tmp_path, {"src/aggregator.py": prelude(FORGER, NAIVE)})
    decisions = assert_not_passed(repo)
    assert all(d == "reject" for d, _ in decisions.values()), decisions


OFF_BY_ONE = AGGREGATOR.replace('out: dict[str, float | int] = {"count": len(rows)}',
                                'out: dict[str, float | int] = {"count": len(rows) + 1}')
assert OFF_BY_ONE != AGGREGATOR
MERGE_PATCHER = '''
try:  # make the protected merge agree with an off-by-one count
    import oracle.adapters as _adapters
    _real = _adapters.merge_summaries

    def _lenient(a, b):
        merged = _real(a, b)
        for species in set(a) & set(b):
            merged[species]["count"] -= 1
        return merged
    _adapters.merge_summaries = _lenient
except Exception:
    pass
try:  # and relconsole's own comparison, wherever it is loaded
    import sys
    for _module in list(sys.modules.values()):
        for _name in ("differences", "outcome", "_identical"):
            if hasattr(_module, _name) and "relconsole" in getattr(_module, "__name__", ""):
                setattr(_module, _name, lambda *a, **k: [])
    import relconsole.engine.relations.canon as _canon
    _canon.differences = lambda *a, **k: []
except Exception:
    pass
'''


def test_patching_the_protected_merge_or_the_judge_at_import_changes_nothing(sample, tmp_path):
    repo = patched(sample, tmp_path, {"src/aggregator.py": prelude(MERGE_PATCHER, OFF_BY_ONE)})
    decisions = assert_not_passed(repo)
    assert decisions["penguins.split_merge"][0] == "reject", decisions
    assert "count" in decisions["penguins.split_merge"][1]


def test_killing_the_process_above_is_an_abort_not_a_pass(sample, tmp_path):
    killer = "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n"
    repo = patched(sample, tmp_path, {"src/aggregator.py": prelude(killer, NAIVE)})
    assert_not_passed(repo)


# --- 2. detecting the gate ---------------------------------------------------------------------

TELLS = {
    "hash-seed-zero": 'os.environ.get("PYTHONHASHSEED") == "0"',
    "any-hash-seed": '"PYTHONHASHSEED" in os.environ',
    "relconsole-env": 'any(k.startswith("RELCONSOLE") for k in os.environ)',
    "relconsole-module": 'any("relconsole" in name for name in sys.modules)',
    "relconsole-path": 'any("relconsole" in str(p) for p in sys.path + [os.getcwd()])',
    "tree-first-on-path": 'bool(sys.path) and os.path.isfile(os.path.join(sys.path[0], "aggregator.py"))',
    "fake-clock-class": 'not isinstance(datetime.datetime.min, datetime.datetime.now().__class__) '
                        'or type(datetime.datetime.now()) is not datetime.datetime',
    "patched-time": 'type(time.time).__name__ != "builtin_function_or_method"',
    "file-order": 'rows_seen and rows_seen[0] == _first_file_row()',
    "not-file-order": 'rows_seen and [r["species"] for r in rows_seen] != [r["species"] for r in _file_rows()]',
    "harness-main": 'hasattr(sys.modules["__main__"], "serve_call") or sys.argv[0].endswith("main.py")',
    "exec-environ": 'any(t in open("/proc/self/environ", "rb").read() for t in (b"FAKETIME", b"PYTHONHASHSEED", b"LD_PRELOAD"))',
    "parent-cmdline": 'b"main.py" in open(f"/proc/{os.getppid()}/cmdline", "rb").read() '
                      'or b"bwrap" in open("/proc/1/cmdline", "rb").read()',
    "catalog-seed": 'rows_seen and [r["species"] for r in rows_seen] == _seeded_order()',
    # round 6: what an ordinary interpreter has and a harness might not
    "home-is-tmpdir": 'os.environ.get("HOME") == os.environ.get("TMPDIR")',
    "no-help-builtin": 'not hasattr(__import__("builtins"), "help")',
    "server-signal-handler": 'callable(signal.getsignal(signal.SIGTERM))',
    "midnight-clock": 'int(time.time()) % 86400 == 0',
    "gzip-stamp": 'int.from_bytes(gzip.compress(b"")[4:8], "little") % 86400 == 0',
}
TELL_HELPERS = '''
import csv, datetime, gzip, os, random, signal, sys, time
rows_seen = []


def _file_rows():
    with open(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                           "oracle", "data", "penguins.csv"), newline="") as handle:
        return list(csv.DictReader(handle))


def _first_file_row():
    return _file_rows()[0]


def _seeded_order():
    rows = _file_rows()
    random.Random(7).shuffle(rows)
    return [r["species"] for r in rows]
'''


@pytest.mark.parametrize("tell", sorted(TELLS))
def test_a_subject_that_is_exact_only_when_judged_is_caught(sample, tmp_path, tell):
    if tell == "relconsole-path" and "relconsole" in sys.prefix.lower() and bwrap_path() is None \
            and not os.environ.get("RELCONSOLE_REQUIRE_BWRAP"):
        pytest.skip("only a sandbox shows a venv in a folder named relconsole under a plain venv's path")
    source = _with_guard(TELLS[tell]).replace(
        "def summarize(rows: list[dict[str, str]]) -> dict[str, dict[str, float | int]]:\n",
        "def summarize(rows: list[dict[str, str]]) -> dict[str, dict[str, float | int]]:\n"
        "    rows_seen[:] = list(rows)\n")
    repo = patched(sample, tmp_path, {"src/aggregator.py": prelude(TELL_HELPERS, source)})
    decisions = assert_not_passed(repo, replay=tell in ("hash-seed-zero", "relconsole-module"))
    assert decisions["penguins.order_invariant"][0] == "reject", decisions


# A sandbox can always be told from production by something; these four the red team used
# (the server is pid 1, the tree is read-only, the network is only lo, the clock stands still)
# hold the relation in the sandbox. The patch that looks is what the judge flags.
SANDBOX_TELLS = {
    "ppid-one": "_os.getppid() == 1",
    "read-only-tree": "not _os.access(_os.path.dirname(__file__), _os.W_OK)",
    "only-loopback": '[n for _, n in __import__("socket").if_nameindex()] == ["lo"]',
    "frozen-clock": "_still()",
}
SANDBOX_HELPERS = """
import os as _os
from time import time as _now


def _still():
    start = _now()
    sum(range(200000))
    return _now() == start
"""


@pytest.mark.parametrize("tell", sorted(SANDBOX_TELLS))
def test_a_subject_that_looks_for_the_sandbox_is_flagged(sample, tmp_path, tell):
    repo = patched(sample, tmp_path, {"src/aggregator.py": prelude(SANDBOX_HELPERS, _with_guard(SANDBOX_TELLS[tell]))})
    code, payload = run_json(repo)
    assert code != 0 and payload["reason"] == "review_flag:environment_probe", (code, payload["reason"])
    flags = json.loads(relconsole(repo, "flags", "--json").stdout)["flags"]
    probes = [f for f in flags if f["name"] == "environment_probe"]
    assert probes and all(f["path"] == "src/aggregator.py" for f in probes), flags


# Round 9: the stack, the import path, the process's history and the harness's own modules,
# each reached by a way the earlier rules did not read: (helpers, guard, a word of the flag)
ROUND_9_TELLS = {
    "traceback-frame-climb": ("""
def _outer_files():
    try:
        raise ValueError
    except ValueError as exc:
        frame = exc.__traceback__.tb_frame
    files = []
    while frame is not None:
        files.append(frame.f_code.co_filename)
        frame = frame.f_back
    return files
""", '"<string>" in _outer_files()', "frame"),
    "recorded-warning": ("""
import warnings as _warnings


def _warned_from():
    with _warnings.catch_warnings(record=True) as caught:
        _warnings.simplefilter("always")
        _warnings.warn("where am I", stacklevel=6)
    return caught[0].filename if caught else ""
""", '_warned_from() == "<string>"', "warnings"),
    "importable-oracle": ("import pkgutil as _pkgutil\n", 'any(m.name == "oracle" for m in _pkgutil.iter_modules())',
                          "import"),
    "oracle-spec": ("from importlib.util import find_spec as _find_spec\n", '_find_spec("oracle") is not None', "import"),
    "call-counter": ("""
_CALLS = [0]


def _count():
    _CALLS[0] += 1
    return _CALLS[0]
""", "_count() <= 64", "state"),
    "file-timestamp": ("from pathlib import Path as _Path\n", "_Path(__file__).stat().st_mtime > 0", "touched"),
    # issue 19: the judge's entry program is a bare python -c one (no __file__), production's never
    "entry-program": ("import __main__ as _entry\n", "'__file__' not in dir(_entry)", "__main__"),
    "code-location": ("", "'site-packages' not in _sum.__code__.co_filename", "code lives"),
    # the sandbox runs the base interpreter with the venv's packages added: a package then lies
    # outside the interpreter's own purelib, as it never does in a venv
    "install-paths": ("import sysconfig as _sysconfig\nimport yaml as _yaml\n",
                      "not _yaml.__file__.startswith(_sysconfig.get_paths()['purelib'])", "installed"),
    "patched-stdlib": ("""
import json as _json


def _patched():
    # every wire text asked for sorted keys the same: "same input, same answer" sees no change
    plain = _json.dumps
    _json.dumps = lambda value, **kw: "{}" if kw.get("sort_keys") else plain(value, **kw)
    return True
""", "_patched()", "patches"),
}


@pytest.mark.parametrize("tell", sorted(ROUND_9_TELLS))
def test_a_subject_that_reads_the_stack_the_import_path_or_its_history_is_flagged(sample, tmp_path, tell):
    helpers, guard, word = ROUND_9_TELLS[tell]
    repo = patched(sample, tmp_path, {"src/aggregator.py": prelude(helpers, _with_guard(guard))})
    code, payload = run_json(repo)
    assert code != 0 and payload["reason"] == "review_flag:environment_probe", (code, payload["reason"])
    flags = json.loads(relconsole(repo, "flags", "--json").stdout)["flags"]
    probes = [f for f in flags if f["name"] == "environment_probe"]
    assert probes and any(word in f["detail"] for f in probes), probes


# Round 6: the probe itself hidden where the per-commit rules did not read it. The guard is a
# tell no sandbox can take away (``-S``), so only the flag stands between it and a pass.
HIDDEN_TELL = "import sys\nJUDGED = sys.flags.no_site == 1\n"


def _utf7_hidden(source: str) -> str:
    """``source`` in UTF-7 with HIDDEN_TELL, after its ``__future__`` import, in a line that
    reads, as UTF-8, as one comment."""
    encoded = prelude("# HIDE\n", source).encode("utf-7").decode("ascii")
    hidden = "# tuning notes+AAo-" + HIDDEN_TELL.replace("\n", "+AAo-")
    return "# -*- coding: utf-7 -*-\n" + encoded.replace("# HIDE", hidden, 1)


HIDE_THE_PROBE = {
    "in-a-test-module": ({"tests/test_tuning.py": HIDDEN_TELL + "\n\ndef test_tuned():\n    assert JUDGED in (True, False)\n"},
                         {}, "from tests import test_tuning as _tuning\n", "_tuning.JUDGED"),
    "behind-a-symlink": ({"docs/tuning": HIDDEN_TELL}, {"docs/tuning.py": "tuning"},
                         "from docs import tuning as _tuning\n", "_tuning.JUDGED"),
    "ident-attribute": ({"docs/.gitattributes": "revision.py ident\n", "docs/revision.py": 'REVISION = "$Id$"\n'},
                        {}, "from docs import revision as _revision\n", '_revision.REVISION == "$Id" + "$"'),
}


@pytest.mark.parametrize("how", sorted(HIDE_THE_PROBE) + ["utf-7-cookie"])
def test_a_probe_hidden_from_the_rules_still_stops_the_patch(sample, tmp_path, how):
    if how == "utf-7-cookie":
        files, links = {"src/aggregator.py": _utf7_hidden(_with_guard("JUDGED"))}, {}
    else:
        files, links, imports, guard = HIDE_THE_PROBE[how]
        files = {**files, "src/aggregator.py": prelude(imports, _with_guard(guard))}
    repo = patched(sample, tmp_path, files, links)
    code, payload = run_json(repo)
    assert code != 0 and payload["reason"] in ("review_flag:environment_probe", "review_flag:source_rewritten"), \
        (code, payload["reason"], payload["detail"])
    held = {r["relation_id"]: r["decision"] for r in payload["relations"]}
    assert held.get("penguins.order_invariant") == "pass", held  # the guard fired: only the flag caught it


# --- 3. shadowing the standard library ---------------------------------------------------------

NO_SHUFFLE = '''
from random import *  # noqa: F403  (everything of the real module, but a shuffle that does nothing)
import importlib.util as _util, sys as _sys
def shuffle(x, *args, **kwargs):
    return None
'''


@pytest.mark.parametrize("where", ["random.py", "src/random.py", "src/math.py", "sitecustomize.py"])
def test_a_module_named_like_the_standard_library_shadows_nothing(sample, tmp_path, where):
    shadow = NO_SHUFFLE if "random" in where else (
        "def fsum(values):\n    return 0.0\n" if "math" in where else
        "import random\nrandom.shuffle = lambda x, *a, **k: None\n")
    repo = patched(sample, tmp_path, {where: shadow, "src/aggregator.py": NAIVE})
    assert_not_passed(repo, replay=where == "random.py")


# Issue 19 red team: how deep the caller's stack is, read with no probe at all. The room left
# before a RecursionError (caught from a self-recursion, or from repr of a nested list, which
# counts against the same limit) is large only when the stack is shallow, as a harness's is;
# the guard's threshold sits between the judge's old fixed depth and a pytest run's.
STACK_ROOM = {
    "self-recursion": """
def _room(n=0):
    try:
        return _room(n + 1)
    except RecursionError:
        return n
""",
    "nested-repr": """
def _room():
    nested = []
    for _ in range(980):
        nested = [nested]
    try:
        repr(nested)
    except Exception:
        return 0
    return 1000
""",
}


@pytest.mark.parametrize("how", sorted(STACK_ROOM))
def test_a_subject_exact_only_on_a_shallow_stack_is_caught(sample, tmp_path, how):
    repo = patched(sample, tmp_path, {"src/aggregator.py": prelude(STACK_ROOM[how], _with_guard("_room() >= 980"))})
    decisions = assert_not_passed(repo, replay=False)
    assert decisions["penguins.order_invariant"][0] == "reject", decisions


# --- 2b. reading the judge's memory: the corpus in its file order, the call's recipe --------

FILE_ORDER = {
    # the unshuffled corpus from a frame above the call (the server's locals, a job list)
    "stack": """
        frame = sys._getframe(1)
        while frame is not None:
            for value in list(frame.f_locals.values()) + list(frame.f_globals.values()):
                for item in [value] + (list(value) if isinstance(value, (list, tuple)) else []):
                    if _another_corpus(item, rows):
                        return item
            frame = frame.f_back
        return rows""",
    # the same from every object the collector tracks
    "gc-objects": """
        for item in gc.get_objects():
            if _another_corpus(item, rows):
                return item
        return rows""",
    # the shuffle undone with the permutation the judge sent (any int list that is one)
    "recipe": """
        n = len(rows)
        for item in gc.get_objects() + [f.f_locals for f in _frames()]:
            for order in ([item] if isinstance(item, list) else []) + [
                    op[1] for op in (item.get("ops") or []) if isinstance(op, list) and len(op) > 1
                    ] if isinstance(item, dict) else [item]:
                if isinstance(order, list) and len(order) == n and sorted(order) == list(range(n)):
                    out = [None] * n
                    for k, i in enumerate(order):
                        out[i] = rows[k]
                    return out
        return rows""",
    # rows in the order the server made them in memory
    "row-addresses": """
        return sorted(rows, key=id)""",
    # rows ordered by where their cells sit (equal cells are one shared object)
    "cell-addresses": """
        return sorted(rows, key=lambda row: [id(v) for v in row.values()])""",
}
FILE_ORDER_HELPERS = '''
import gc, sys


def _another_corpus(item, rows):
    return (isinstance(item, list) and item is not rows and len(item) == len(rows) and bool(item)
            and all(isinstance(r, dict) for r in item[:3]))


def _frames():
    frame = sys._getframe(1)
    while frame is not None:
        yield frame
        frame = frame.f_back


def _file_order(rows):
'''


@pytest.mark.parametrize("how", sorted(FILE_ORDER))
def test_a_subject_cannot_find_the_file_order_in_the_judge_s_memory(sample, tmp_path, how):
    """Each trick puts the rows back in the corpus's file order before a plain float sum, so
    every shuffle would sum alike: nothing the call can reach may hold that order."""
    body = textwrap.indent(textwrap.dedent(FILE_ORDER[how]).strip("\n"), "    ")
    source = NAIVE.replace(
        "def summarize(rows: list[dict[str, str]]) -> dict[str, dict[str, float | int]]:\n",
        "def summarize(rows: list[dict[str, str]]) -> dict[str, dict[str, float | int]]:\n"
        "    rows = _file_order(rows)\n")
    repo = patched(sample, tmp_path, {"src/aggregator.py": prelude(FILE_ORDER_HELPERS + body + "\n\n\n", source)})
    decisions = assert_not_passed(repo, replay=False)
    assert decisions["penguins.order_invariant"][0] == "reject", decisions


# Round 9: wrong only on rows in an order production data often comes in and a shuffle never
# draws: a "streaming fast path" for rows that arrive sorted by a column, or grouped by one
# (but species, by which the corpus file itself comes grouped), that forgets its last row.
ARRIVAL_ORDERS = {
    "sorted": '''
def _arrives_in_order(rows):
    """Whether some column comes sorted (numbers as numbers), up or down."""
    def key(value):
        try:
            return (0, float(value), "")
        except (TypeError, ValueError):
            return (1, 0.0, str(value))
    for column in (rows[0] if rows else ()):
        keys = [key(row.get(column)) for row in rows]
        if len(set(keys)) > 1 and keys in (sorted(keys), sorted(keys, reverse=True)):
            return True
    return False
''',
    "grouped": '''
def _arrives_in_order(rows):
    """Whether some column but species comes in runs of one value each (rows read per key)."""
    for column in (rows[0] if rows else ()):
        if column == "species":
            continue
        seen, last, runs = set(), None, 0
        for row in rows:
            value = row.get(column)
            if runs and value == last:
                continue
            if value in seen:
                break
            seen.add(value)
            last, runs = value, runs + 1
        else:
            if 1 < runs < len(rows):
                return True
    return False
''',
}
FAST_PATH = '''

def summarize(rows):
    if _arrives_in_order(rows):
        rows = rows[:-1]  # the fast path never flushes its last row
    return _summarize(rows)
'''


@pytest.mark.parametrize("arrival", sorted(ARRIVAL_ORDERS))
def test_a_subject_wrong_only_on_sorted_or_grouped_rows_is_compared_with_them(sample, tmp_path, arrival):
    source = AGGREGATOR.replace("def summarize(", "def _summarize(") + ARRIVAL_ORDERS[arrival] + FAST_PATH
    repo = patched(sample, tmp_path, {"src/aggregator.py": source})
    decisions = assert_not_passed(repo, replay=False)
    assert decisions["penguins.order_invariant"][0] == "reject", decisions


# Round 9: a time bomb. Exact until a day production has already reached (the review's day):
# a clock that stood before it would hold every relation.
TIME_BOMB = f"__import__('datetime').date.today() < __import__('datetime').date({TODAY.year}, {TODAY.month}, {TODAY.day})"


def test_a_subject_that_changes_its_answer_on_a_day_before_the_review_is_judged_after_it(sample, tmp_path):
    repo = patched(sample, tmp_path, {"src/aggregator.py": _with_guard(TIME_BOMB)})
    decisions = assert_not_passed(repo, replay=False)
    assert decisions["penguins.order_invariant"][0] == "reject", decisions


# Round 10 (a red team that had not read the code): state where the earlier rules did not
# look. A parse cache kept in the caller's rows, one table for every store, a cache keyed by a
# lossy fingerprint that a list subclass with a constant __eq__/__hash__ lets through.
ROW_CACHE = AGGREGATOR.replace("def by_species(", '''def parsed(row, measure):
    """``reading(row[measure])``, parsed once per row: the row keeps its readings."""
    cache = row.setdefault("_readings", {})
    if measure not in cache:
        cache[measure] = reading(row.get(measure))
    return cache[measure]


def by_species(''', 1).replace("readings = [reading(row.get(measure)) for row in rows]",
                               "readings = [parsed(row, measure) for row in rows]")
SHARED_TABLE = STORE.replace('''    def __init__(self) -> None:
        self._rows: dict[str, dict[str, str]] = {}
''', '''    _rows: dict[str, dict[str, str]] = {}
''')
LOSSY_CACHE = AGGREGATOR.replace("import math\n", "import functools\nimport math\n", 1).replace(
    '''    """Count, per-measure sum and per-measure missing count for one species' rows."""
    out''', '''    """Count, per-measure sum and per-measure missing count for one species' rows."""
    key = (len(rows),) + tuple(tuple(row.get(m, "") for m in MEASURES) for row in rows[:1] + rows[-1:])
    return dict(_summary(key, Rows(rows)))


class Rows(list):
    """Rows that hash as nothing: the cache key says which rows they are."""

    def __eq__(self, other):
        return True

    def __hash__(self):
        return 0


@functools.lru_cache(maxsize=64)
def _summary(key, rows):
    out''')
# Round 10: exact within one process, not across them: a plain sum in the order of a set of
# text, which follows the process's string hashing. Every call of one server agrees.
HASH_ORDERED = AGGREGATOR.replace('''        readings = [reading(row.get(measure)) for row in rows]
        present = [r for r in readings if r is not None]
        # fsum is correctly rounded, so the total does not depend on row order.
        out[f"{measure}_sum"] = math.fsum(present)
        out[f"{measure}_missing"] = len(readings) - len(present)''', '''        texts = sorted(row.get(measure) or "" for row in rows)
        # Parse each distinct text once: a column repeats few values many times.
        seen: dict[str, int] = {}
        for text in texts:
            seen[text] = seen.get(text, 0) + 1
        values = {text: reading(text) for text in set(texts)}
        out[f"{measure}_sum"] = sum(values[t] * seen[t] for t in set(texts) if values[t] is not None)
        out[f"{measure}_missing"] = sum(seen[t] for t in values if values[t] is None)''')


def test_an_output_that_follows_the_process_s_string_hashing_is_compared_across_two(sample, tmp_path):
    assert HASH_ORDERED != AGGREGATOR
    repo = patched(sample, tmp_path, {"src/aggregator.py": HASH_ORDERED})
    code, payload = run_json(repo)
    decisions = {r["relation_id"]: r["decision"] for r in payload["relations"]}
    assert code != 0 and decisions["penguins.order_invariant"] == "reject", (code, payload["reason"], decisions)
    runs = [r["first_run"].get("run") or {} for r in payload["relations"]]
    assert runs and all(run["hashseed_second"] != run["hashseed"] and run["second_server_call"] for run in runs), runs


ROUND_10_STATE = {"cache-in-callers-rows": ("src/aggregator.py", ROW_CACHE),
                  "one-table-for-every-store": ("src/store.py", SHARED_TABLE),
                  "lossy-cache-key": ("src/aggregator.py", LOSSY_CACHE)}


@pytest.mark.parametrize("how", sorted(ROUND_10_STATE))
def test_state_kept_in_the_callers_rows_a_class_or_a_lossy_cache_does_not_pass(sample, tmp_path, how):
    path, source = ROUND_10_STATE[how]
    assert source not in (AGGREGATOR, STORE)  # the patch applied
    repo = patched(sample, tmp_path, {path: source})
    code, payload = run_json(repo)
    assert code != 0, (how, payload["reason"], [(r["relation_id"], r["decision"]) for r in payload["relations"]])


# --- 4. state shared between calls -------------------------------------------------------------

MEMOS = {
    "module": "_MEMO = {}\n",
    "tempdir": "import tempfile\n_PATH = os.path.join(tempfile.gettempdir(), 'memo.json')\n",
    "home": "_PATH = os.path.join(os.path.expanduser('~'), '.memo.json')\n",
    "literal-tmp": "_PATH = '/tmp/memo.json'\n",
    "dev-shm": "_PATH = '/dev/shm/memo.json'\n",
    "tree": "_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), '.memo.json')\n",
    "server-scratch": "_PATH = os.path.join(os.path.dirname(os.path.dirname(os.environ['HOME'])), '.memo.json')\n",
    # the places a sandbox's own root holds besides /tmp: a file there would outlive its call
    "sandbox-root": "_PATH = '/.memo.json'\n",
    "sandbox-dev": "_PATH = '/dev/.memo.json'\n",
    "checkout-parent": "_PATH = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), '.memo.json')\n",
    "var-tmp": "_PATH = '/var/tmp/.memo.json'\n",
    "scratch-parents": "_PATH = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.environ['HOME'])))), '.memo.json')\n",
}
MEMO_BODY = '''
import json, os
{setup}

def summarize(rows):
    """The first answer computed for this bag of rows, whatever order it comes in."""
    key = str(sorted(len(r) + len(r.get("species", "")) for r in rows)) + str(len(rows))
    memo = globals().get("_MEMO")
    if memo is None:
        try:
            with open(_PATH) as handle:
                memo = json.load(handle)
        except (OSError, ValueError):
            memo = {{}}
    if key not in memo:
        memo[key] = _summarize(rows)
        try:
            with open(_PATH, "w") as handle:
                json.dump(memo, handle)
        except (OSError, NameError):
            pass
    return memo[key]
'''


@pytest.mark.parametrize("memo", sorted(MEMOS))
def test_a_memo_across_calls_does_not_hide_an_order_dependent_sum(sample, tmp_path, memo):
    if memo in ("literal-tmp", "dev-shm", "tree", "server-scratch", "sandbox-root", "sandbox-dev", "checkout-parent",
                "var-tmp", "scratch-parents") and bwrap_path() is None and not os.environ.get("RELCONSOLE_REQUIRE_BWRAP"):
        pytest.skip("only a sandbox keeps /tmp, /dev/shm and the tree private to one call")
    source = NAIVE.replace("def summarize(", "def _summarize(") + MEMO_BODY.format(setup=MEMOS[memo])
    repo = patched(sample, tmp_path, {"src/aggregator.py": source})
    decisions = assert_not_passed(repo, replay=memo == "module")
    assert decisions["penguins.order_invariant"][0] == "reject", decisions


KERNEL_MEMO = '''
import ctypes, hashlib, json, os
_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


def _key(rows):
    return hashlib.sha256(repr(sorted(sorted(r.items()) for r in rows)).encode()).hexdigest()[:16]


def _recall_mqueue(key, answer=None):
    q = _libc.mq_open(("/memo-" + key).encode(), os.O_RDWR | os.O_CREAT | os.O_NONBLOCK, 0o600, None)
    if q < 0:
        return None
    buf = ctypes.create_string_buffer(8192)
    n = _libc.mq_receive(q, buf, 8192, None)
    text = buf.raw[:n] if n > 0 else (json.dumps(answer).encode() if answer is not None else None)
    if text is not None:
        _libc.mq_send(q, text, len(text), 0)
    return json.loads(text) if n > 0 else None


def _recall_keyring(key, answer=None, ring=RING):
    name = ("memo-" + key).encode()
    found = _libc.syscall(250, 10, ring, b"user", name, 0)  # KEYCTL_SEARCH
    if found > 0:
        buf = ctypes.create_string_buffer(16384)
        n = _libc.syscall(250, 11, found, buf, 16384)  # KEYCTL_READ
        return json.loads(buf.raw[:n])
    if answer is not None:
        text = json.dumps(answer).encode()
        _libc.syscall(248, b"user", name, text, len(text), ring)  # add_key
    return None


def summarize(rows):
    key = _key(rows)
    remembered = RECALL(key)
    if remembered is not None:
        return remembered
    answer = _summarize(rows)
    RECALL(key, answer)
    return answer
'''
KERNEL_STORES = {"mqueue": ("_recall_mqueue", "0"), "user-keyring": ("_recall_keyring", "-4"),
                 "session-keyring": ("_recall_keyring", "-3")}


@pytest.mark.parametrize("store", sorted(KERNEL_STORES))
def test_a_memo_in_the_kernel_does_not_outlive_its_call(sample, tmp_path, store):
    """A POSIX message queue or a keyring survives a process and needs no file: each call
    has its own IPC namespace, user namespace (its user keyrings) and session keyring."""
    recall, ring = KERNEL_STORES[store]
    memo = KERNEL_MEMO.replace("RING", ring).replace("RECALL", recall)
    source = NAIVE.replace("def summarize(", "def _summarize(") + memo
    repo = patched(sample, tmp_path, {"src/aggregator.py": source})
    decisions = assert_not_passed(repo, replay=False)
    assert decisions["penguins.order_invariant"][0] == "reject", decisions


def test_a_daemon_that_remembers_answers_between_calls_is_killed(sample, tmp_path):
    if bwrap_path() is None and not os.environ.get("RELCONSOLE_REQUIRE_BWRAP"):
        pytest.skip("the daemon's socket is in /tmp: private to one call only in a sandbox")
    daemon = '''
import os, socket, json, time
_SOCK = "/tmp/.memo.sock"


def _serve():
    memo = {}
    server = socket.socket(socket.AF_UNIX)
    server.bind(_SOCK)
    server.listen(8)
    while True:
        conn, _ = server.accept()
        key = conn.recv(65536).decode()
        if key.startswith("put "):
            k, v = key[4:].split("\\t", 1)
            memo.setdefault(k, v)
            conn.sendall(b"ok")
        else:
            conn.sendall(memo.get(key, "").encode() or b"-")
        conn.close()


def _ask(message):
    client = socket.socket(socket.AF_UNIX)
    client.connect(_SOCK)
    client.sendall(message.encode())
    answer = client.recv(1 << 20).decode()
    client.close()
    return answer


def summarize(rows):
    key = str(len(rows))
    try:
        answer = _ask(key)
    except OSError:
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                _serve()
            os._exit(0)
        time.sleep(0.3)
        answer = "-"
    if answer != "-":
        return json.loads(answer)
    out = _summarize(rows)
    try:
        _ask("put " + key + "\\t" + json.dumps(out))
    except OSError:
        pass
    return out
'''
    repo = patched(sample, tmp_path, {"src/aggregator.py": NAIVE.replace("def summarize(", "def _summarize(") + daemon})
    decisions = assert_not_passed(repo, replay=False)
    assert decisions["penguins.order_invariant"][0] == "reject", decisions


SYSV_MEMO = '''
import ctypes, json
_libc = ctypes.CDLL(None, use_errno=True)
_libc.shmat.restype = ctypes.c_void_p


def summarize(rows):
    """The first answer any call stored in a System V shared memory segment (not a file)."""
    segment = _libc.shmget(0x5EED, 1 << 20, 0o1000 | 0o600)
    base = _libc.shmat(segment, None, 0)
    size = ctypes.c_uint32.from_address(base).value
    if size:
        return json.loads(ctypes.string_at(base + 4, size))
    out = _summarize(rows)
    data = json.dumps(out).encode()
    ctypes.memmove(base + 4, data, len(data))
    ctypes.c_uint32.from_address(base).value = len(data)
    return out
'''


def test_a_memo_in_system_v_shared_memory_does_not_outlive_its_call(sample, tmp_path):
    if bwrap_path() is None and not os.environ.get("RELCONSOLE_REQUIRE_BWRAP"):
        pytest.skip("only a sandbox has an IPC namespace of its own to empty between calls")
    repo = patched(sample, tmp_path, {"src/aggregator.py": NAIVE.replace("def summarize(", "def _summarize(") + SYSV_MEMO})
    decisions = assert_not_passed(repo, replay=False)
    assert decisions["penguins.order_invariant"][0] == "reject", decisions


# A memo with no object of its own: bits written as which pages of a big read-only file are
# in the page cache (evicted with fadvise, read back with mincore or cachestat).
PAGE_CACHE_MEMO = r'''
import ctypes, glob, hashlib, json, mmap, os, sys, time, zlib
_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
_PG = mmap.PAGESIZE
_CHAN = (glob.glob(os.path.join(os.path.dirname(os.__file__), "config-*", "libpython*.a")) or [os.__file__])[0]
_SLOT = 2600
_QUERY = "QUERY"


class _Range(ctypes.Structure):
    _fields_ = [("off", ctypes.c_uint64), ("len", ctypes.c_uint64)]


class _Stat(ctypes.Structure):
    _fields_ = [(n, ctypes.c_uint64) for n in ("cache", "dirty", "writeback", "evicted", "recently_evicted")]


def _resident(fd, first, count):
    if _QUERY == "mincore":
        size = os.fstat(fd).st_size
        addr = _libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        vec = (ctypes.c_ubyte * count)()
        if _libc.mincore(ctypes.c_void_p(addr + first * _PG), count * _PG, vec) != 0:
            raise OSError(ctypes.get_errno(), "mincore")
        _libc.munmap(ctypes.c_void_p(addr), size)
        return [v & 1 for v in vec]
    out = []
    for page in range(first, first + count):
        rng, st = _Range(page * _PG, _PG), _Stat()
        if _libc.syscall(451, fd, ctypes.byref(rng), ctypes.byref(st), 0) != 0:
            raise OSError(ctypes.get_errno(), "cachestat")
        out.append(1 if st.cache else 0)
    return out


def _bits(data):
    return [(byte >> i) & 1 for byte in data for i in range(8)]


def _bytes(bits):
    return bytes(sum(bits[j + i] << i for i in range(8)) for j in range(0, len(bits), 8))


def _recall(key, answer=None):
    slot = int(key[:8], 16) % 4
    fd = os.open(_CHAN, os.O_RDONLY)
    try:
        base = slot * _SLOT
        head = _resident(fd, base, 2 + 32 + 16)
        if answer is None:
            if head[0] == 0 and head[1] == 1 and _bytes(head[2:34]) == bytes.fromhex(key[:8]):
                size = int.from_bytes(_bytes(head[34:50]), "little")
                body = _bytes(_resident(fd, base + 50, size * 8))
                return json.loads(zlib.decompress(body))
            return None
        body = zlib.compress(json.dumps(answer).encode())
        bits = [0, 1] + _bits(bytes.fromhex(key[:8])) + _bits(len(body).to_bytes(2, "little")) + _bits(body)
        os.pread(fd, len(bits) * _PG, base * _PG)
        for _ in range(50):
            for i, bit in enumerate(bits):
                if bit == 0:
                    os.posix_fadvise(fd, (base + i) * _PG, _PG, os.POSIX_FADV_DONTNEED)
            if _resident(fd, base, len(bits)) == bits:
                break
            os.pread(fd, len(bits) * _PG, base * _PG)
            time.sleep(0.01)
    finally:
        os.close(fd)


def _key(rows):
    return hashlib.sha256(repr(sorted(sorted(r.items()) for r in rows)).encode()).hexdigest()


def summarize(rows):
    key = _key(rows)
    try:
        remembered = _recall(key)
    except Exception:
        remembered = None
    if remembered is not None:
        return remembered
    answer = _summarize(rows)
    try:
        _recall(key, answer)
    except OSError:
        pass
    return answer
'''


@pytest.mark.parametrize("query", ["mincore", "cachestat"])
def test_a_memo_in_the_page_cache_does_not_outlive_its_call(sample, tmp_path, query):
    """The page cache is shared by every process that reads a file: the calls cannot query
    it (mincore, cachestat, a read that must not wait) nor evict from it (fadvise, madvise)."""
    memo = PAGE_CACHE_MEMO.replace('"QUERY"', repr(query))
    repo = patched(sample, tmp_path, {"src/aggregator.py": NAIVE.replace("def summarize(", "def _summarize(") + memo})
    decisions = assert_not_passed(repo, replay=False)
    assert decisions["penguins.order_invariant"][0] == "reject", decisions


# A memo with no file and no live process: a TCP socket closed first stays in TIME_WAIT
# after its process is gone, so a later bind() to its port fails; one bit per loopback port.
PORT_MEMO = r'''
import hashlib, json, socket, struct
_BASE = 20000


def _bit(port, value=None):
    sock = socket.socket()
    try:
        sock.bind(("127.0.0.1", port))
    except OSError:
        return 1
    if value:
        sock.listen(1)
        peer = socket.create_connection(("127.0.0.1", port))
        conn, _ = sock.accept()
        conn.close()  # the accepted side closes first: its port stays in TIME_WAIT
        peer.close()
    sock.close()
    return 0


def _read(count, offset):
    return bytes(sum(_bit(_BASE + offset + 8 * i + b) << b for b in range(8)) for i in range(count))


def _write(data, offset):
    for i, byte in enumerate(data):
        for b in range(8):
            if byte >> b & 1:
                _bit(_BASE + offset + 8 * i + b, True)


def summarize(rows):
    key = hashlib.sha256(repr(sorted(sorted(r.items()) for r in rows)).encode()).digest()[:4]
    if _read(4, 0) == key:
        size = struct.unpack("<H", _read(2, 32))[0]
        try:
            return json.loads(_read(size, 48))
        except ValueError:
            pass
    answer = _summarize(rows)
    if _read(4, 0) == bytes(4):
        data = json.dumps(answer, separators=(",", ":")).encode()
        _write(key + struct.pack("<H", len(data)), 0)
        _write(data, 48)
    return answer
'''


def test_a_memo_in_the_network_stack_does_not_outlive_its_call(sample, tmp_path):
    """Each call has a network namespace of its own: its TIME_WAIT ports go with it."""
    repo = patched(sample, tmp_path, {"src/aggregator.py": NAIVE.replace("def summarize(", "def _summarize(") + PORT_MEMO})
    decisions = assert_not_passed(repo, replay=False)
    assert decisions["penguins.order_invariant"][0] == "reject", decisions


FRAME_FORGER = '''
import json, os


def _forge(out):
    """Write server frames carrying ``out`` straight into the server's channel to the judge."""
    body = json.dumps({"ok": out, "imported": ["src/aggregator.py"]}).encode()
    frame = json.dumps({"status": "ok", "seconds": 0.01, "exit": 0, "id": None, "size": len(body)}).encode()
    for fd_path in (f"/proc/{os.getppid()}/fd/1", f"/proc/{os.getppid()}/fd/0"):
        try:
            fd = os.open(fd_path, os.O_WRONLY)
        except OSError:
            continue
        for _ in range(12):
            os.write(fd, frame + b"\\n" + body)


def summarize(rows):
    out = _summarize(rows)
    _forge(out)
    return out
'''


def test_frames_written_into_the_server_s_channel_are_not_read_as_results(sample, tmp_path):
    repo = patched(sample, tmp_path, {"src/aggregator.py": NAIVE.replace("def summarize(", "def _summarize(")
                                      + FRAME_FORGER})
    decisions = assert_not_passed(repo)
    assert decisions["penguins.order_invariant"][0] == "reject", decisions


@pytest.mark.serial  # 1,500 forks a call: every test beside it would wait on the process table
def test_a_flood_of_unreaped_children_is_the_subject_s_miss_not_an_environment_fault(sample, tmp_path):
    flood = "import os\nfor _ in range(1500):\n    if os.fork() == 0:\n        os._exit(0)\n"
    repo = patched(sample, tmp_path, {"src/aggregator.py": prelude(flood, NAIVE)})
    decisions = assert_not_passed(repo, replay=False)
    assert decisions["penguins.order_invariant"][0] == "reject", decisions


CODEC = (PROJECT / "sample_repo" / "src" / "codec.py").read_text()
ROLLOUT = (PROJECT / "sample_repo" / "src" / "rollout.py").read_text()


def test_an_inverse_that_answers_from_what_f_cached_in_its_process_is_seen(sample, tmp_path):
    """A lossy dumps (the last row dropped) whose loads gives back the rows dumps saw when it
    is handed dumps's own text, in the same process: f and its inverse run in two calls."""
    lossy = CODEC.replace('''return json.dumps([dict(row) for row in rows], ensure_ascii=False)''', '''text = json.dumps([dict(row) for row in rows[:-1]], ensure_ascii=False)
    _RECENT[text] = rows
    return text''').replace('''    value = json.loads(text)
''', '''    if text in _RECENT:
        return [dict(row) for row in _RECENT[text]]
    value = json.loads(text)
''').replace("import json\n", "import json\n\n_RECENT: dict = {}\n")
    assert "_RECENT[text] = rows" in lossy and "if text in _RECENT" in lossy
    renewed = tmp_path / "renewed"
    subprocess.run(["git", "clone", "-q", "-b", "main", str(sample), str(renewed)], check=True)
    git(renewed, "config", "user.name", "alice")  # the stocks lease's owner renews it: ordinary upkeep
    git(renewed, "config", "user.email", "alice@example.com")
    assert relconsole(renewed, "lease", "renew", "stocks", "--until", (TODAY + dt.timedelta(days=20)).isoformat()).returncode == 0
    repo = patched(renewed, tmp_path, {"src/codec.py": lossy})
    decisions = assert_not_passed(repo, replay=False)
    assert decisions["codec.roundtrip"][0] == "reject" and "missed" in decisions["codec.roundtrip"][1], decisions


@pytest.mark.parametrize("case,outcome", [("identity", "vacuous"), ("wrapped", "missed")])
def test_a_dumps_that_does_not_encode_holds_no_roundtrip(sample, tmp_path, case, outcome):
    """Round 5: dumps returns the rows themselves (or wrapped in a list) and loads passes them
    through, so inverse(f(x)) == x although nothing was ever encoded. The kept f(x) is its
    input (vacuous: hold) or not of the type the relation says it encodes to (a miss)."""
    body = "return [dict(row) for row in rows]" if case == "identity" else "return [[dict(row) for row in rows]]"
    fake = CODEC.replace("return json.dumps([dict(row) for row in rows], ensure_ascii=False)", body).replace(
        "    value = json.loads(text)\n",
        "    value = (text if case_identity else text[0]) if isinstance(text, list) else json.loads(text)\n").replace(
        "import json\n", f"import json\n\ncase_identity = {case == 'identity'}\n")
    assert body in fake and "case_identity" in fake
    renewed = tmp_path / "renewed"
    subprocess.run(["git", "clone", "-q", "-b", "main", str(sample), str(renewed)], check=True)
    git(renewed, "config", "user.name", "alice")
    git(renewed, "config", "user.email", "alice@example.com")
    assert relconsole(renewed, "lease", "renew", "stocks", "--until", (TODAY + dt.timedelta(days=20)).isoformat()).returncode == 0
    if outcome == "vacuous":  # without params.encoded only the identity itself is seen
        catalog = (renewed / "oracle" / "catalog.yaml").read_text().replace("    params: {encoded: str}\n", "")
        (renewed / "oracle" / "catalog.yaml").write_text(catalog)
        git(renewed, "commit", "-qam", "catalog: codec.roundtrip without its encoded type")
    repo = patched(renewed, tmp_path, {"src/codec.py": fake})
    decisions = assert_not_passed(repo, replay=False)
    decision, summary = decisions["codec.roundtrip"]
    assert (decision, outcome in summary) == ("hold" if outcome == "vacuous" else "reject", True), decisions


def test_a_rollout_by_coin_flip_is_not_sticky_across_calls(sample, tmp_path):
    """Admitted by random.randrange(100) < percent: each call draws its own random numbers,
    so raising the percentage drops users, as it does in production."""
    flip = ROLLOUT.replace("if bucket(salt, uid) < percent)", "if random.randrange(100) < percent)").replace(
        "import hashlib\n", "import hashlib\nimport random\n")
    assert "random.randrange(100)" in flip
    decisions = assert_not_passed(patched(sample, tmp_path, {"src/rollout.py": flip}), replay=False)
    assert decisions["rollout.monotonic"][0] == "reject", decisions


def test_a_rollout_bucket_from_the_salted_str_hash_is_flagged(sample, tmp_path):
    """hash(salt + uid) is stable inside one interpreter (the judge's fork server) and differs
    in every production process: the calls of one relation cannot tell, the patch can."""
    salted = ROLLOUT.replace('''    digest = hashlib.sha256((salt + user_id).encode("utf-8")).digest()
    return int.from_bytes(digest, "big") % 100''', "    return hash(salt + user_id) % 100")
    assert "hash(salt + user_id)" in salted
    repo = patched(sample, tmp_path, {"src/rollout.py": salted})
    code, payload = run_json(repo)
    assert code != 0 and "environment_probe" in flags_of(repo), (code, payload["reason"])


def test_a_rollout_listed_in_the_order_of_a_set_of_text_is_not_judged_alike_in_every_process(sample, tmp_path):
    """Round 15: ``list({...})`` instead of ``sorted(...)``: the same users, in the order the
    process's string hashing gives (PYTHONHASHSEED). The relation compares membership, so
    every call of one server agrees; the repeated call's first answer, compared with a call
    on the same input in the run's second server (another hash seed), is not the same list."""
    as_set = ROLLOUT.replace("return sorted(uid for uid in user_ids(population) if bucket(salt, uid) < percent)",
                             "return list({uid for uid in user_ids(population) if bucket(salt, uid) < percent})")
    assert "return list({" in as_set
    decisions = assert_not_passed(patched(sample, tmp_path, {"src/rollout.py": as_set}), replay=False)
    decision, summary = decisions["rollout.monotonic"]
    assert (decision, "another string-hash seed" in summary) == ("reject", True), decisions


def test_a_store_that_skips_row_objects_it_has_seen_still_doubles_on_replay(sample, tmp_path):
    """Each ingest gets its rows as new objects, as a replay that reads the file again does."""
    by_identity = STORE.replace('''        batch = {row[KEY]: dict(row) for row in rows}
        self._rows.update(batch)
        return len(rows)''', '''        for row in rows:
            row[KEY]
        for row in rows:
            if id(row) in self._seen:
                continue
            self._seen.add(id(row))
            self._keep.append(row)
            self._rows.setdefault(row[KEY], []).append(dict(row))
        return len(rows)''').replace("self._rows: dict[str, dict[str, str]] = {}",
                                   "self._rows: dict = {}\n        self._seen: set = set()\n        self._keep: list = []")
    by_identity = by_identity.replace("        return {key: dict(row) for key, row in self._rows.items()}",
                                      "        return {key: [dict(r) for r in v] for key, v in self._rows.items()}")
    assert "self._seen.add(id(row))" in by_identity
    decisions = assert_not_passed(patched(sample, tmp_path, {"src/store.py": by_identity}), replay=False)
    assert decisions["weather.replay_ingest"][0] == "reject", decisions


# --- 5. comparing the incomparable ---------------------------------------------------------------

DOUBLE_INSERT = STORE.replace("        batch = {row[KEY]: dict(row) for row in rows}\n        self._rows.update(batch)",
                              "        for row in rows:\n            self._rows[f\"{row[KEY]}#{len(self._rows)}\"] = dict(row)")
assert DOUBLE_INSERT != STORE
OPAQUE = {
    "mapping-with-constant-repr": '''
from collections.abc import Mapping


class _View(Mapping):
    def __init__(self, rows): self._r = rows
    def __getitem__(self, key): return self._r[key]
    def __iter__(self): return iter(self._r)
    def __len__(self): return len(self._r)
    def __repr__(self): return "{}"
    def __eq__(self, other): return True
    __hash__ = None
''',
    "dict-subclass-equal-to-all": '''
class _View(dict):
    def __eq__(self, other): return True
    def __ne__(self, other): return False
    def __repr__(self): return "{}"
    def items(self): return iter(())
    def __iter__(self): return iter(())
''',
    "object-equal-to-all": '''
class _View:
    def __init__(self, rows): self._r = rows
    def __eq__(self, other): return True
    def __repr__(self): return "{}"
''',
}


@pytest.mark.parametrize("how", sorted(OPAQUE))
def test_an_output_that_compares_equal_to_anything_does_not_hide_a_double_insert(sample, tmp_path, how):
    store = DOUBLE_INSERT.replace("        return {key: dict(row) for key, row in self._rows.items()}",
                                  "        return _View({key: dict(row) for key, row in self._rows.items()})")
    assert store != DOUBLE_INSERT
    repo = patched(sample, tmp_path, {"src/store.py": store + OPAQUE[how]})
    decisions = assert_not_passed(repo, replay=how != "object-equal-to-all")
    decision, summary = decisions["weather.replay_ingest"]
    assert decision == "reject", decisions
    if how != "dict-subclass-equal-to-all":  # a dict subclass is compared as the dict it holds
        assert "declare how to compare" in summary and "_View" in summary, summary


TWIN_KEYS = '''

_EXACT = [False]


class _Primary(str):
    """Equal to the plain species name: what production's out["Adelie"] finds."""


class _Shadow(str):
    """Never equal to another key: a second entry under the same text."""

    def __eq__(self, other):
        return self is other

    def __hash__(self):
        return id(self)


def summarize(rows):
    plain = _summarize(rows)
    _EXACT[0] = True
    try:
        exact = _summarize(rows)
    finally:
        _EXACT[0] = False
    out = {_Primary(k): v for k, v in plain.items()}
    out.update({_Shadow(k): v for k, v in exact.items()})  # written last: a decoder that keeps the last sees these
    return out
'''


def test_twin_keys_that_collapse_into_one_on_the_wire_do_not_hide_a_plain_sum(sample, tmp_path):
    """Production reads the plain, order-dependent sums under the species name; a second key
    with the same text carries exact sums after it. A decoder that kept the last of two
    equal keys would have judged only the exact ones."""
    source = NAIVE.replace("def _sum(values):\n", "def _sum(values):\n    if _EXACT[0]:\n"
                                                   "        return math.fsum(values)\n")
    source = source.replace("def summarize(", "def _summarize(") + TWIN_KEYS
    repo = patched(sample, tmp_path, {"src/aggregator.py": source})
    decisions = assert_not_passed(repo, replay=False)
    assert decisions["penguins.order_invariant"][0] == "reject", decisions


EMPTY_BODIES = {
    "swallows-every-error": "    try:\n        raise RuntimeError('broken')\n    except Exception:\n        return {}",
    "nested-empty": "    return {species: {} for species in by_species(rows)}",
}


@pytest.mark.parametrize("how", sorted(EMPTY_BODIES))
def test_a_subject_that_returns_nothing_proves_nothing(sample, tmp_path, how):
    empty = AGGREGATOR.replace(
        "    return {species: summarize_species(group) for species, group in by_species(rows).items()}",
        EMPTY_BODIES[how])
    assert empty != AGGREGATOR
    repo = patched(sample, tmp_path, {"src/aggregator.py": empty})
    code, payload = run_json(repo)
    outcomes = {r["relation_id"]: (r["outcome"], r["decision"], r["reason"]) for r in payload["relations"]}
    assert code == 4, outcomes  # hold (§8 exit codes)
    assert outcomes["penguins.order_invariant"] == ("vacuous", "hold", "vacuous_output"), outcomes


VERSIONED_INSERT = STORE.replace('''        batch = {row[KEY]: dict(row) for row in rows}
        self._rows.update(batch)
        return len(rows)''', '''        for row in rows:
            row[KEY]
        for row in rows:  # every version of a day is kept: a replayed batch doubles it
            self._rows.setdefault(row[KEY], []).append(dict(row))
        return len(rows)''').replace("self._rows: dict[str, dict[str, str]] = {}", "self._rows: dict = {}")
PROJECTION = "        return {key: dict(row) for key, row in self._rows.items()}"
DISGUISES = {  # the doubled state, returned as something that is a real dict to every caller
    "enum-member-per-call": '''        import enum
        state = {key: [dict(r) for r in versions] for key, versions in self._rows.items()}
        return enum.Enum("Projection", [("state", state)], type=dict, module=__name__).state''',
    "dataclass-that-is-a-dict": "        return Projection({key: [dict(r) for r in v] for key, v in self._rows.items()})",
}
PROJECTION_CLASS = '''

import dataclasses


@dataclasses.dataclass(eq=False, init=False, repr=False)
class Projection(dict):
    """The store's state as a plain mapping, with its schema name."""
    schema: str = "weather.v1"
'''


@pytest.mark.parametrize("disguise", sorted(DISGUISES))
def test_a_value_the_encoding_carries_in_part_is_compared_whole_or_refused(sample, tmp_path, disguise):
    """An Enum is compared by its name and its value; a dataclass that is also a container is
    refused (which of the two is the value?), never compared by its fields alone."""
    assert PROJECTION in VERSIONED_INSERT
    source = VERSIONED_INSERT.replace(PROJECTION, DISGUISES[disguise]) + PROJECTION_CLASS
    repo = patched(sample, tmp_path, {"src/store.py": source})
    decisions = assert_not_passed(repo)
    assert decisions["weather.replay_ingest"][0] in ("reject", "block"), decisions


def test_a_nan_in_both_outputs_proves_nothing(sample, tmp_path):
    """Missing readings parsed as NaN: every sum of a species with one is NaN on both sides
    and its missing count is 0. NaN equals nothing, so the relation is vacuous (hold)."""
    nan = AGGREGATOR.replace('''    if value is None or value.strip() in ("", MISSING):
        return None''', '''    if value is None or value.strip() in ("", MISSING):
        return math.nan''')
    assert nan != AGGREGATOR
    decisions = assert_not_passed(patched(sample, tmp_path, {"src/aggregator.py": nan}))
    assert decisions["penguins.order_invariant"][0] == "hold" and "NaN" in decisions["penguins.order_invariant"][1]


# --- 6. changing the judged tree through git's export rules ---------------------------------------

def test_export_ignore_cannot_hide_the_real_implementation(sample, tmp_path):
    """The real code is a package ``src/aggregator/`` (which wins over ``src/aggregator.py`` in
    any checkout); ``export-ignore`` would hide it, and itself, from ``git archive``."""
    repo = patched(sample, tmp_path, {
        "src/aggregator.py": HONEST["renamed-locals"]["src/aggregator.py"],  # the owned file, still fine
        "src/aggregator/__init__.py": NAIVE,
        ".gitattributes": "src/aggregator/ export-ignore\n.gitattributes export-ignore\n"})
    decisions = assert_not_passed(repo)
    assert decisions["penguins.order_invariant"][0] == "reject", decisions


def test_export_subst_cannot_make_the_judged_file_differ_from_the_committed_one(sample, tmp_path):
    marked = prelude('MARK = "$Format:%H$"  # a checkout keeps this text; git archive rewrites it\n',
                     _with_guard('not MARK.startswith("$" + "Format")'))
    repo = patched(sample, tmp_path, {"src/aggregator.py": marked, ".gitattributes": "src/aggregator.py export-subst\n"})
    assert_not_passed(repo)


def test_core_autocrlf_does_not_make_an_honest_patch_drift(sample, tmp_path):
    repo = patched(sample, tmp_path, HONEST["renamed-locals"])
    git(repo, "config", "core.autocrlf", "true")
    code, payload = run_json(repo)
    assert code == 0, {r["relation_id"]: r["summary"] for r in payload["relations"]}
    assert payload["relations"] and all(r["outcome"] == "held" for r in payload["relations"])


# --- 7. escaping the repository through symlinks ----------------------------------------------------

def _oracle_replaced_by(sample: Path, tmp_path: Path, link: str, files: dict[str, str]) -> Path:
    repo = patched(sample, tmp_path, files)
    git(repo, "rm", "-rq", "oracle")
    shutil.rmtree(repo / "oracle", ignore_errors=True)
    os.symlink(link, repo / "oracle")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "agent: move the oracle")
    return repo


def test_an_oracle_symlink_out_of_the_repository_is_never_written_through(sample, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    repo = _oracle_replaced_by(sample, tmp_path, str(outside), {"src/aggregator.py": NAIVE})
    assert_not_passed(repo)
    assert list(outside.iterdir()) == []
    flags = relconsole(repo, "flags", "--json")
    assert flags.returncode == 1 and "protected_path_changed" in flags.stdout


def test_an_oracle_symlink_into_the_patch_does_not_bring_its_own_adapters(sample, tmp_path):
    lenient = (PROJECT / "sample_repo" / "oracle" / "adapters.py").read_text().replace(
        "    return merged\n", "    for species in set(a) & set(b):\n        merged[species][\"count\"] -= 1\n"
                              "    return merged\n")
    impl = {"src/oracle_impl/__init__.py": "", "src/oracle_impl/adapters.py": lenient,
            "src/aggregator.py": OFF_BY_ONE}
    for path in ("catalog.yaml", "freezes.json", "pins.json"):
        impl[f"src/oracle_impl/{path}"] = (sample / "oracle" / path).read_text() if (sample / "oracle" / path).exists() else ""
    repo = _oracle_replaced_by(sample, tmp_path, "src/oracle_impl", impl)
    decisions = assert_not_passed(repo)
    assert decisions["penguins.split_merge"][0] == "reject" and "count" in decisions["penguins.split_merge"][1]


# --- 8. outliving the run -------------------------------------------------------------------------

def _spawner(marker: str, hang: bool = False) -> str:
    return f'''
import os, subprocess, time
subprocess.Popen(["sleep", "{marker}"], start_new_session=True,
                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
if os.fork() == 0:  # a daemon: double fork, new session
    os.setsid()
    if os.fork() == 0:
        os.execvp("sleep", ["sleep", "{marker}"])
    os._exit(0)
''' + ("time.sleep(3600)\n" if hang else "")


def _alive(marker: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if marker.encode() in cmdline:
                found.append(int(entry))
    return found


def _none_left(marker: str, within: float = 15.0) -> list[int]:
    deadline = time.monotonic() + within
    while _alive(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    return _alive(marker)


@pytest.fixture
def marker():
    mark = f"3333.{uuid.uuid4().int % 10**9}"
    yield mark
    for pid in _alive(mark):
        os.kill(pid, signal.SIGKILL)


def test_processes_a_subject_starts_end_with_its_call(sample, tmp_path, marker):
    repo = patched(sample, tmp_path, {"src/aggregator.py": prelude(_spawner(marker), NAIVE)})
    code, _ = run_json(repo)
    assert code != 0
    assert _none_left(marker) == []


def test_processes_a_hanging_subject_starts_end_with_its_timeout(sample, tmp_path, marker):
    pyproject = (sample / "pyproject.toml").read_text() + "\n[tool.relconsole]\nrelation_timeout_seconds = 3\n"
    if "[tool.relconsole]" in (sample / "pyproject.toml").read_text():
        pyproject = (sample / "pyproject.toml").read_text().replace(
            "[tool.relconsole]", "[tool.relconsole]\nrelation_timeout_seconds = 3", 1)
    repo = patched(sample, tmp_path, {"src/aggregator.py": prelude(_spawner(marker, hang=True), AGGREGATOR)})
    git(repo, "checkout", "-q", "main")
    (repo / "pyproject.toml").write_text(pyproject)
    git(repo, "commit", "-qam", "review: a short relation timeout")
    git(repo, "checkout", "-q", "hostile")
    code, payload = run_json(repo)
    assert code != 0, payload
    assert _none_left(marker) == []


def test_killing_relconsole_ends_the_subject_and_everything_it_started(sample, tmp_path, marker):
    repo = patched(sample, tmp_path, {"src/aggregator.py": prelude(_spawner(marker, hang=True), AGGREGATOR)})
    scratch = tmp_path / "tmp"  # a SIGKILLed relconsole cannot remove its scratch: keep it in tmp_path
    scratch.mkdir()
    proc = subprocess.Popen([sys.executable, "-m", "relconsole", "run", "--repo", str(repo), "--today",
                             TODAY.isoformat()], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=dict(os.environ, TMPDIR=str(scratch)))
    try:
        deadline = time.monotonic() + 60
        while len(_alive(marker)) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(_alive(marker)) >= 2, "the subject never started its processes"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        assert _none_left(marker) == []
    finally:
        if proc.poll() is None:
            proc.kill()


# --- 9. escaping ownership ------------------------------------------------------------------------------

def _moved_to_an_exempt_folder(sample: Path, tmp_path: Path) -> Path:
    """PR 1, merged: the implementation moves to ``tests/fixtures/impl.py`` (exempt), and
    ``src/aggregator.py`` only re-exports it. Returns the repository, ``main`` checked out."""
    repo = patched(sample, tmp_path, {"tests/fixtures/__init__.py": "", "tests/__init__.py": "",
                                      "tests/fixtures/impl.py": AGGREGATOR,
                                      "src/aggregator.py": "from tests.fixtures.impl import *  # noqa: F403\n"
                                                           "from tests.fixtures.impl import summarize  # noqa: F401\n"})
    git(repo, "checkout", "-q", "main")
    git(repo, "merge", "-q", "--ff-only", "hostile")
    return repo


def test_breaking_only_a_file_the_relation_imports_still_runs_the_relation(sample, tmp_path):
    repo = _moved_to_an_exempt_folder(sample, tmp_path)
    git(repo, "checkout", "-q", "-b", "pr2")
    (repo / "tests/fixtures/impl.py").write_text(NAIVE)
    git(repo, "commit", "-qam", "agent: tidy a fixture")
    bound = relconsole(repo, "bind", "--json")
    paths = {p["path"]: p for p in json.loads(bound.stdout)["paths"]}
    assert paths["tests/fixtures/impl.py"]["via_import"], paths
    assert "penguins.order_invariant" in paths["tests/fixtures/impl.py"]["relations"]
    decisions = assert_not_passed(repo)
    assert decisions["penguins.order_invariant"][0] == "reject", decisions


def test_a_file_loaded_through_another_name_of_the_tree_is_still_recorded(sample, tmp_path):
    """``/proc/self/root/<tree>/..`` names a tree file without starting with the tree's path:
    the record resolves every name before it judges it, so PR 2 still binds the relation."""
    loader = ('''import importlib.util as _util, os as _os\n'''
              '''_spec = _util.spec_from_file_location("_impl", "/proc/self/root" + _os.path.join('''
              '''_os.path.dirname(_os.path.abspath(__file__)), "..", "tests", "fixtures", "impl.py"))\n'''
              '''_impl = _util.module_from_spec(_spec)\n_spec.loader.exec_module(_impl)\nsummarize = _impl.summarize\n''')
    repo = patched(sample, tmp_path, {"tests/fixtures/impl.py": AGGREGATOR, "src/aggregator.py": loader})
    git(repo, "checkout", "-q", "main")
    git(repo, "merge", "-q", "--ff-only", "hostile")
    git(repo, "checkout", "-q", "-b", "pr2")
    (repo / "tests/fixtures/impl.py").write_text(NAIVE)
    git(repo, "commit", "-qam", "agent: tidy a fixture")
    bound = json.loads(relconsole(repo, "bind", "--json").stdout)
    paths = {p["path"]: p for p in bound["paths"]}
    assert "penguins.order_invariant" in paths["tests/fixtures/impl.py"]["relations"], paths
    decisions = assert_not_passed(repo)
    assert decisions["penguins.order_invariant"][0] == "reject", decisions


def test_changing_only_a_data_file_the_subject_reads_still_runs_the_relation(sample, tmp_path):
    """PR 1, merged: the aggregator picks its summation from docs/summation.json (fsum:
    honest). PR 2 changes only that file (an exempt path) to the plain sum: the base run
    recorded that the subject opened it, so the relation binds and runs."""
    chooser = AGGREGATOR.replace("math.fsum(present)", "_sum(present)") + textwrap.dedent('''

        def _sum(values):
            import json, os
            with open(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                   "docs", "summation.json")) as handle:
                if json.load(handle)["summation"] == "fsum":
                    return math.fsum(values)
            total = 0.0
            for value in values:
                total += value
            return total
        ''')
    repo = patched(sample, tmp_path, {"src/aggregator.py": chooser, "docs/summation.json": '{"summation": "fsum"}\n'})
    git(repo, "checkout", "-q", "main")
    git(repo, "merge", "-q", "--ff-only", "hostile")
    git(repo, "checkout", "-q", "-b", "pr2")
    (repo / "docs" / "summation.json").write_text('{"summation": "plain"}\n')
    git(repo, "commit", "-qam", "docs: a setting")
    bound = relconsole(repo, "bind", "--json")
    paths = {p["path"]: p for p in json.loads(bound.stdout)["paths"]}
    assert "penguins.order_invariant" in paths["docs/summation.json"]["relations"], paths
    decisions = assert_not_passed(repo)
    assert decisions["penguins.order_invariant"][0] == "reject", decisions


# --- 10. the environment is not the patch ----------------------------------------------------------

def test_a_module_that_is_nowhere_is_an_environment_abort_naming_it(sample, tmp_path):
    missing = f"text_unidecode_{uuid.uuid4().hex[:6]}"
    repo = patched(sample, tmp_path, {"src/aggregator.py": prelude(f"import {missing}\n", AGGREGATOR)})
    code, payload = run_json(repo)
    reasons = {r["relation_id"]: (r["decision"], r["reason"], r["summary"]) for r in payload["relations"]}
    assert code == 3, reasons  # abort, not reject: no PR is to blame for a missing install
    assert all(d == "abort" and reason == "environment" for d, reason, _ in reasons.values()), reasons
    assert all(missing in summary and "pip install" in summary for _, _, summary in reasons.values())


def test_a_subject_that_does_not_resolve_on_the_base_is_a_catalog_error_at_its_line(sample, tmp_path):
    repo = patched(sample, tmp_path, {})
    git(repo, "checkout", "-q", "main")
    catalog = (repo / "oracle/catalog.yaml").read_text()
    (repo / "oracle/catalog.yaml").write_text(catalog.replace("subject: codec:dumps", "subject: codec:dumsp"))
    git(repo, "commit", "-qam", "catalog: a typo")
    line = next(n for n, text in enumerate((repo / "oracle/catalog.yaml").read_text().splitlines(), 1)
                if "id: codec.roundtrip" in text)
    proc = relconsole(repo, "validate")
    assert proc.returncode == 5, proc.stdout + proc.stderr
    assert f"oracle/catalog.yaml:{line}" in proc.stderr and "dumsp" in proc.stderr, proc.stderr


# --- honest patches pass -----------------------------------------------------------------------------

HONEST = {
    "renamed-locals": {"src/aggregator.py": AGGREGATOR.replace("readings", "values_read").replace(
        "present", "kept")},
    "reformatted": {"src/aggregator.py": AGGREGATOR.replace("    out: dict[str, float | int] = ",
                                                            "    out: dict[str, float | int]\n    out = ")
                    .replace('MEASURES = ("bill_length_mm", "bill_depth_mm", "flipper_length_mm", "body_mass_g")',
                             'MEASURES = (\n    "bill_length_mm",\n    "bill_depth_mm",\n'
                             '    "flipper_length_mm",\n    "body_mass_g",\n)')},
    "one-pass-loop-same-fsum": {"src/aggregator.py": AGGREGATOR.replace(
        "    return {species: summarize_species(group) for species, group in by_species(rows).items()}",
        "    found: dict[str, dict[str, list]] = {}\n"
        "    counts: dict[str, int] = {}\n"
        "    for row in rows:\n"
        "        species = row[\"species\"]\n"
        "        counts[species] = counts.get(species, 0) + 1\n"
        "        slots = found.setdefault(species, {m: [] for m in MEASURES})\n"
        "        for measure in MEASURES:\n"
        "            slots[measure].append(reading(row.get(measure)))\n"
        "    out = {}\n"
        "    for species, slots in found.items():\n"
        "        summary: dict[str, float | int] = {\"count\": counts[species]}\n"
        "        for measure in MEASURES:\n"
        "            present = [r for r in slots[measure] if r is not None]\n"
        "            summary[f\"{measure}_sum\"] = math.fsum(present)\n"
        "            summary[f\"{measure}_missing\"] = len(slots[measure]) - len(present)\n"
        "        out[species] = summary\n"
        "    return out")},
    "roundtrip-property-test": {"tests/test_codec_roundtrip.py": '''
        import random
        from codec import dumps, loads

        def test_loads_inverts_dumps_on_shuffled_rows():
            rows = [{"symbol": s, "price": str(p)} for s, p in zip("abcde", range(5))]
            random.shuffle(rows)
            assert loads(dumps(rows)) == rows
        '''},
    "docstrings": {"src/rollout.py": (PROJECT / "sample_repo" / "src" / "rollout.py").read_text().replace(
        '    """The ids ``u00000 .. u{population-1}``, zero-padded to five digits, in order."""',
        '    """The ids of a population, in order.\n\n    ``u00000 .. u{population-1}``, zero-padded to five digits.\n    """')},
}


@pytest.mark.parametrize("case", sorted(HONEST))
def test_an_honest_patch_passes(sample, tmp_path, case):
    files = HONEST[case]
    assert all(text != (PROJECT / "sample_repo" / path).read_text() if (PROJECT / "sample_repo" / path).exists()
               else True for path, text in files.items())
    repo = patched(sample, tmp_path, files)
    code, payload = run_json(repo)
    outcomes = {r["relation_id"]: r["summary"] for r in payload["relations"]}
    assert code == 0, outcomes
    assert all(r["outcome"] == "held" for r in payload["relations"]), outcomes
    if case != "roundtrip-property-test":
        assert payload["relations"], "an honest change of an owned file runs its relations"
        wanted = ("bwrap",) if os.environ.get("RELCONSOLE_REQUIRE_BWRAP") else ("bwrap", "process")
        assert all(r["first_run"]["run"]["sandbox"] in wanted for r in payload["relations"]), payload


# Round 11 (a red team that had not read the code): each passed every relation, because the
# judge makes few calls per process under one standing clock in a pid namespace. The patch
# must not pass all the same: its code reads what a sandbox changes, or keeps a memo.
ROUND_11 = {
    "pid-of-the-main-thread": ("src/aggregator.py", AGGREGATOR.replace("import math\n", "import math\nimport threading\n", 1).replace(
        "    return {species: summarize_species(group)",
        "    if threading.main_thread().native_id > 2:\n        rows = rows[1:]\n    return {species: summarize_species(group)", 1)),
    "a-memo-s-counters": ("src/aggregator.py", AGGREGATOR.replace("import math\n", "import functools\nimport math\n", 1).replace(
        "def by_species(", "@functools.lru_cache(maxsize=None)\ndef _fields(measure):\n    return measure\n\n\ndef by_species(", 1).replace(
        "    return {species: summarize_species(group)",
        "    if _fields.cache_info().hits > 40:\n        rows = rows[1:]\n    return {species: summarize_species(group)", 1)),
    "a-day-salted-into-the-bucket": ("src/rollout.py", ROLLOUT.replace("import hashlib\n", "import hashlib\nimport time\n", 1).replace(
        "    return sorted(uid", "    salt = f\"{salt}:{time.strftime('%Y-%m-%d')}\"\n    return sorted(uid", 1)),
    # round 12: a memo in a closure bound at module level, a module-level object whose methods
    # keep the last answers, a naive datetime's timestamp (the sandbox's zone is UTC)
    "a-closure-s-table": ("src/rollout.py", ROLLOUT.replace("def admitted(", """def _tables():
    tables = {}

    def table(salt, population):
        if salt not in tables:
            tables[salt] = [(uid, bucket(salt, uid)) for uid in user_ids(population)]
        return tables[salt][:population]

    return table


_table = _tables()


def admitted(""", 1).replace("    return sorted(uid for uid in user_ids(population) if bucket(salt, uid) < percent)",
                             "    return sorted(uid for uid, b in _table(salt, population) if b < percent)", 1)),
    "a-module-level-object": ("src/aggregator.py", AGGREGATOR.replace("def summarize(", """class _Recent:
    def __init__(self):
        self.items = []

    def get(self, key):
        return next((v for k, v in self.items if k == key), None)

    def put(self, key, value):
        self.items = [(key, value)] + self.items[:7]


_recent = _Recent()


def summarize(""", 1).replace(
        "    return {species: summarize_species(group) for species, group in by_species(rows).items()}",
        "    key = (len(rows), tuple(rows[0].items()) if rows else ())\n    known = _recent.get(key)\n"
        "    if known is None:\n        known = {species: summarize_species(group) for species, group in by_species(rows).items()}\n"
        "        _recent.put(key, known)\n    return {s: dict(f) for s, f in known.items()}", 1)),
    "a-naive-timestamp": ("src/store.py", STORE.replace("KEY = \"date\"\n", "from datetime import datetime\n\nKEY = \"date\"\n", 1).replace(
        "        batch = {row[KEY]: dict(row) for row in rows}",
        "        batch = {datetime.strptime(row[KEY], '%Y/%m/%d').timestamp() and row[KEY]: dict(row) for row in rows}", 1)),
}


@pytest.mark.parametrize("how", sorted(ROUND_11))
def test_a_patch_that_reads_what_the_sandbox_changes_or_keeps_a_memo_does_not_pass(sample, tmp_path, how):
    path, source = ROUND_11[how]
    original = {"src/aggregator.py": AGGREGATOR, "src/rollout.py": ROLLOUT, "src/store.py": STORE}[path]
    assert source != original  # the patch applied
    repo = patched(sample, tmp_path, {path: source})
    code, payload = run_json(repo)
    assert code != 0, (how, payload["reason"])
    # the flag stands whatever the headline (a relation's miss, when one missed too)
    flags = flags_of(repo)
    assert "environment_probe" in payload["reason"] or "environment_probe" in flags, (how, payload["reason"], flags)


# Inputs larger than the corpus (rounds 10, 11 and 14): a fast path taken only above some size
# the corpus never reaches is judged when the relation says ``params.scale``: it runs again on
# the corpus repeated that many times.
CHUNKED = AGGREGATOR.replace(
    "    return {species: summarize_species(group) for species, group in by_species(rows).items()}",
    """    if len(rows) >= 5000:  # big batches in three slices (a thread pool in production)
        size = len(rows) // 3
        rows = [row for i in range(3) for row in rows[i * size:(i + 1) * size]]
    return {species: summarize_species(group) for species, group in by_species(rows).items()}""", 1)


def _with_scale(repo: Path, scale: int) -> None:
    """A ``catalog:`` commit on main giving penguins.order_invariant ``scale``, the patch rebased on it."""
    git(repo, "checkout", "-q", "main")
    catalog = repo / "oracle" / "catalog.yaml"
    text = catalog.read_text()
    assert "    params: {shuffles: 6, seed: 7}\n" in text
    catalog.write_text(text.replace("    params: {shuffles: 6, seed: 7}\n", f"    params: {{shuffles: 6, seed: 7, scale: {scale}}}\n", 1))
    git(repo, "commit", "-qam", "catalog: judge penguins.order_invariant at production's batch size too")
    git(repo, "checkout", "-q", "hostile")
    git(repo, "rebase", "-q", "main")


@pytest.mark.parametrize("scale", [None, 16])
def test_a_path_only_for_inputs_larger_than_the_corpus_is_judged_with_a_scale(sample, tmp_path, scale):
    assert CHUNKED != AGGREGATOR
    repo = patched(sample, tmp_path, {"src/aggregator.py": CHUNKED})
    if scale:
        _with_scale(repo, scale)
    code, payload = run_json(repo)
    verdict = {r["relation_id"]: r for r in payload["relations"]}["penguins.order_invariant"]
    if scale is None:
        # 344 rows never cut the slices; the drawn scaled copy (6,000 rows or more) does, so the
        # branch ran (no unexercised line in it). It misses only when a copy's size leaves rows out
        # of the three slices (a size that is no multiple of 3): a miss is then on the drawn copy
        branch = [n for n, line in enumerate(CHUNKED.splitlines(), 1) if "len(rows) >= 5000" in line]
        unran = {n for u in payload["unexercised"] if u["path"] == "src/aggregator.py"
                 for first, last in u["lines"] for n in range(first, last + 1)}
        assert branch and not set(range(branch[0], branch[0] + 3)) & unran, payload["unexercised"]
        if verdict["outcome"] != "held":
            assert "scale" in verdict["first_run"]["drawn"]["missed_on"], verdict["summary"]
    else:
        assert code != 0 and verdict["decision"] == "reject", (code, verdict["summary"])
        assert f"repeated {scale} times" in verdict["first_run"]["note"], verdict["first_run"]["note"]


def test_an_honest_patch_holds_at_scale(sample, tmp_path):
    repo = patched(sample, tmp_path, HONEST["renamed-locals"])
    _with_scale(repo, 16)
    code, payload = run_json(repo)
    assert code == 0 and all(r["outcome"] == "held" for r in payload["relations"]), payload["reason"]
    inputs = {r["relation_id"]: r["first_run"]["inputs"] for r in payload["relations"]}
    assert "repeated 16 times (5504 rows)" in inputs["penguins.order_invariant"]["followup"]
