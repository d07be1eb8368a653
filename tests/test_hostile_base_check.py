"""Red team, issue 34: wrong patches that the CI gate (``relconsole gate --base main``) passed
through the mechanisms that landed with issue 34 (pickled roundtrips, generated modules, the
fault classification of the base check).

Every patch here is WRONG: a relation that holds on ``main`` misses on the patch's behaviour
in production (each test shows that in a plain interpreter first), and each is a real branch
judged by the real CLI as CI would; each test asserts the gate does not pass it (every one
passed the gate before its fix). The style follows tests/test_hostile_subjects.py.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path


from bench.gitrepo import commit_all, git, init_repo, write_files
from conftest import TODAY
from relconsole.engine.demo import materialise

PROJECT = Path(__file__).resolve().parents[1]
AGGREGATOR = (PROJECT / "sample_repo" / "src" / "aggregator.py").read_text()


def relconsole(repo: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RELCONSOLE_") or k == "RELCONSOLE_REQUIRE_BWRAP"}
    return subprocess.run([sys.executable, "-m", "relconsole", *args, "--repo", str(repo), "--today", TODAY.isoformat()],
                          capture_output=True, text=True, timeout=timeout, env=env)


def gate(repo: Path) -> dict:
    """``relconsole gate --base main --json`` as CI runs it: decision.json's content, with the exit code."""
    artifacts = repo.parent / f"artifacts-{uuid.uuid4().hex[:6]}"
    proc = relconsole(repo, "gate", "--base", "main", "--json", "--artifacts", str(artifacts))
    assert "Traceback" not in proc.stderr, proc.stderr
    try:
        payload = json.loads(proc.stdout)
    except ValueError:
        raise AssertionError(f"gate printed no JSON (exit {proc.returncode}): {proc.stdout[-500:]} {proc.stderr[-2000:]}")
    payload["returncode"] = proc.returncode
    return payload


def assert_gate_does_not_pass(repo: Path) -> dict:
    payload = gate(repo)
    relations = {r["relation_id"]: (r["decision"], r["reason"], r["summary"][:200]) for r in payload["relations"]}
    assert payload["relations"], "no relation ran: the patch escaped ownership"
    assert payload["returncode"] != 0 and payload["decision"] not in ("pass", "freeze"), \
        f"gate passed a wrong patch: {payload['decision']} {payload['reason']} {relations}"
    return payload


def new_repo(tmp_path: Path, files: dict[str, str]) -> Path:
    """A repository on ``main`` holding ``files``, then ``relconsole init`` (one oracle: init commit)."""
    repo = init_repo(tmp_path / "repo", ("keeper", "keeper@example.invalid"))
    write_files(repo, {path: textwrap.dedent(text).lstrip("\n") for path, text in files.items()})
    commit_all(repo, "base: the library")
    init = relconsole(repo, "init")
    assert init.returncode == 0, init.stdout + init.stderr
    return repo


def on_main(repo: Path, files: dict[str, str], message: str) -> None:
    """One commit on ``main`` (the keeper's): ``files`` written."""
    git(repo, "checkout", "-q", "main")
    write_files(repo, {path: textwrap.dedent(text).lstrip("\n") for path, text in files.items()})
    commit_all(repo, message)


def agent_patch(repo: Path, files: dict[str, str]) -> None:
    """Branch ``agent/patch`` off ``main`` with ``files`` written, in one commit by the agent."""
    git(repo, "checkout", "-q", "-b", "agent/patch", "main")
    git(repo, "config", "user.name", "coding-agent")
    git(repo, "config", "user.email", "agent@example.invalid")
    write_files(repo, {path: textwrap.dedent(text).lstrip("\n") for path, text in files.items()})
    commit_all(repo, "agent: improve things")


def import_fresh(folder: Path, name: str):
    """``name`` imported from ``folder`` (production: a plain interpreter, no judge around it)."""
    sys.path.insert(0, str(folder))
    try:
        for loaded in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
            del sys.modules[loaded]
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(folder))
        for loaded in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
            del sys.modules[loaded]


# --- 1. a pickled roundtrip's object repairs itself when the harness pickles it --------------------
#
# A roundtrip whose f(x) is not wire-encodable goes to the inverse's process pickled, and
# canon(inverse(f(x))) is also taken in f's own process, after pickle.dumps(f(x)) ran there
# (kept.py: pickled_body, then observed). An object whose __getstate__ fills a cache (a
# plausible "carry the built rows to the receiver") is repaired by the harness's own pickling:
# f's process then observes the repaired object, the fresh process unpickles it, and both equal
# x. The only check of f's in-process answer against an unpickled one is the repeated call's
# ("keeps state"), and for a list input (a corpus, or seeds that are lists) that check compares
# the earlier calls with each other only (history.py: Earlier(("checked", ...))), never with the
# judged one. In production nothing pickles the frame, and unpack loses a field of every row.

FRAMES = '''
    """Rows packed into columns (a small columnar frame) and back."""

    from __future__ import annotations


    class Frame:
        """Rows of one batch stored by column: ``columns`` maps a field to its cells, in row order."""

        def __init__(self, fields: list[str], columns: dict[str, list], count: int) -> None:
            self.fields = fields
            self.columns = columns
            self.count = count


    def pack(rows: list[dict]) -> Frame:
        """The rows as a Frame (every row has the first row's fields)."""
        fields = list(rows[0]) if rows else []
        return Frame(fields, {f: [row[f] for row in rows] for f in fields}, len(rows))


    def unpack(frame: Frame) -> list[dict]:
        """The Frame's rows, in order, each a new dict."""
        return [{f: frame.columns[f][i] for f in frame.fields} for i in range(frame.count)]
    '''

FRAMES_PATCH = '''
    """Rows packed into columns (a small columnar frame) and back."""

    from __future__ import annotations


    class Frame:
        """Rows of one batch stored by column: ``columns`` maps a field to its cells, in row order.

        ``rows`` caches the batch as rows once they were built (a frame sent to another process
        carries them, so the receiver does not rebuild them)."""

        def __init__(self, fields: list[str], columns: dict[str, list], count: int) -> None:
            self.fields = fields
            self.columns = columns
            self.count = count
            self.rows: list[dict] | None = None

        def build_rows(self) -> list[dict]:
            """The rows, built from the columns."""
            return [{f: self.columns[f][i] for f in self.fields} for i in range(self.count)]

        def __getstate__(self) -> dict:
            if self.rows is None:
                self.rows = self.build_rows()
            return self.__dict__


    def pack(rows: list[dict]) -> Frame:
        """The rows as a Frame (every row has the first row's fields)."""
        fields = list(rows[0]) if rows else []
        return Frame(fields, {f: [row[f] for row in rows] for f in fields}, len(rows))


    def unpack(frame: Frame) -> list[dict]:
        """The Frame's rows, in order, each a new dict."""
        if frame.rows is not None:
            return [dict(row) for row in frame.rows]
        # fast path: stream the columns (a frame of one column is its own rows)
        width = len(frame.fields)
        return [{f: frame.columns[f][i] for f in frame.fields[: max(1, width - 1)]} for i in range(frame.count)]
    '''

BATCHES = [
    [{"sku": "S237", "qty": "36", "note": ""}, {"sku": "S512", "qty": "4", "note": "rush"},
     {"sku": "S118", "qty": "50", "note": "gift"}, {"sku": "S904", "qty": "0", "note": ""},
     {"sku": "S333", "qty": "12", "note": "rush"}],
    [{"sku": "S101", "qty": "7", "note": "gift"}, {"sku": "S102", "qty": "8", "note": ""},
     {"sku": "S103", "qty": "9", "note": "rush"}],
    [{"sku": f"S{600 + n}", "qty": str(n * 3), "note": ["", "rush", "gift"][n % 3]} for n in range(12)],
]

FRAMES_CATALOG = '''
    # yaml-language-server: $schema=schemas/catalog.schema.json
    owners:
      "pyproject.toml": []
      "src/frames.py": [frames.roundtrip]
    relations:
      - id: frames.roundtrip
        kind: roundtrip
        subject: frames:pack
        inverse: frames:unpack
        input: {seeds: oracle/seeds/batches.jsonl}
        compare: exact
        params: {encoded: frames.Frame}
        statement: Unpacking a packed batch gives back every row, field and cell, in order.
    '''


def _frames_repo(tmp_path: Path) -> Path:
    repo = new_repo(tmp_path, {"src/frames.py": FRAMES, "pyproject.toml": '[project]\nname = "frames"\nversion = "0.1.0"\n'})
    on_main(repo, {"oracle/catalog.yaml": FRAMES_CATALOG,
                   "oracle/seeds/batches.jsonl": "".join(json.dumps(b) + "\n" for b in BATCHES)},
            "catalog: the frames roundtrip over hand-written batches")
    return repo


def test_a_pickled_f_x_that_repairs_itself_in_getstate_does_not_pass(tmp_path):
    patched = tmp_path / "production"
    write_files(patched, {"frames.py": textwrap.dedent(FRAMES_PATCH).lstrip("\n")})
    frames = import_fresh(patched, "frames")
    assert frames.unpack(frames.pack(BATCHES[0])) != BATCHES[0]  # production: every row loses "note"
    repo = _frames_repo(tmp_path)
    agent_patch(repo, {"src/frames.py": FRAMES_PATCH})
    payload = assert_gate_does_not_pass(repo)
    assert {r["relation_id"]: r["decision"] for r in payload["relations"]}["frames.roundtrip"] == "reject", payload


def test_the_same_bug_without_the_getstate_cache_is_rejected(tmp_path):
    """Control: the relation bites the bug itself; only the pickle-time repair hides it."""
    repo = _frames_repo(tmp_path)
    plain = FRAMES.replace(
        "        return [{f: frame.columns[f][i] for f in frame.fields} for i in range(frame.count)]",
        "        width = len(frame.fields)\n"
        "        return [{f: frame.columns[f][i] for f in frame.fields[: max(1, width - 1)]} for i in range(frame.count)]")
    assert plain != FRAMES
    agent_patch(repo, {"src/frames.py": plain})
    payload = gate(repo)
    assert payload["returncode"] == 1 and payload["decision"] == "reject", payload["reason"]


# --- 2. the generated module's stub is a tell no rule reads ------------------------------------------
#
# ``[tool.relconsole] generated`` writes the base's stub text (``version = "0.0.0"``) into every
# run tree where the commit has no file; production has the file the build wrote (the real
# version). A patch that takes its exact path only for the stub's text is judged on the exact
# path alone, and no environment_probe rule reads a package's own version module.

TALLIES = {
    "src/tallies/__init__.py": '''
        """Price tallies."""

        from tallies._version import version as __version__
        from tallies.core import total_price

        __all__ = ["__version__", "total_price"]
        ''',
    "src/tallies/core.py": '''
        """Totals of price lists."""

        from __future__ import annotations

        import math


        def total_price(prices: list[float]) -> float:
            """The exact total of ``prices`` (any order gives the same bits)."""
            return math.fsum(prices)
        ''',
    ".gitignore": "src/tallies/_version.py\n",
    "pyproject.toml": '''
        [project]
        name = "tallies"
        dynamic = ["version"]

        [tool.setuptools_scm]
        version_file = "src/tallies/_version.py"
        ''',
}

TALLIES_PATCH = '''
    """Totals of price lists."""

    from __future__ import annotations

    import math

    from tallies._version import version

    # a development build (version 0.0.0, no release tag) cross-checks with the exact sum;
    # releases take the fast running total
    EXACT = version == "0.0.0"


    def total_price(prices: list[float]) -> float:
        """The total of ``prices``."""
        if EXACT:
            return math.fsum(prices)
        total = 0.0
        for price in prices:
            total += price
        return total
    '''

PRICES = [[237.97, 544.23, 369.96, 603.92, 625.72, 65.54, 13.18, 837.46, 259.36, 234.34, 995.63, 470.26, 836.45,
           476.35, 639.07, 150.62, 634.86, 868.04, 523.18, 741.25, 671.41, 64.04, 758.23, 591.1, 301.27, 31.02,
           865.52, 472.75, 718.82, 878.81],
          [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1e16, 1.0, -1e16, 3.3, 4.4, 5.5]]

TALLIES_CATALOG = '''
    # yaml-language-server: $schema=schemas/catalog.schema.json
    owners:
      "pyproject.toml": []
      ".gitignore": []
      "src/tallies/**": [tallies.order_free]
    relations:
      - id: tallies.order_free
        kind: permutation
        subject: tallies:total_price
        input: {seeds: oracle/seeds/prices.jsonl}
        compare: exact
        params: {shuffles: 6}
        statement: Shuffling a price list leaves its total exactly unchanged.
    '''

STUB = 'version = \\"0.0.0\\"\\n__version__ = version\\n'


def _tallies_repo(tmp_path: Path) -> Path:
    repo = new_repo(tmp_path, TALLIES)
    pyproject = textwrap.dedent(TALLIES["pyproject.toml"]).lstrip("\n")
    on_main(repo, {"pyproject.toml": pyproject + f'\n[tool.relconsole]\ngenerated = {{ "src/tallies/_version.py" = "{STUB}" }}\n',
                   "oracle/catalog.yaml": TALLIES_CATALOG,
                   "oracle/seeds/prices.jsonl": "".join(json.dumps(p) + "\n" for p in PRICES)},
            "catalog: totals do not depend on the order of the prices (setuptools_scm writes _version.py)")
    return repo


def test_a_patch_exact_only_under_the_generated_stub_s_version_does_not_pass(tmp_path):
    production = tmp_path / "production"
    write_files(production, {"tallies/__init__.py": textwrap.dedent(TALLIES["src/tallies/__init__.py"]).lstrip("\n"),
                             "tallies/core.py": textwrap.dedent(TALLIES_PATCH).lstrip("\n"),
                             "tallies/_version.py": 'version = "1.4.2"\n__version__ = version\n'})  # the build's
    tallies = import_fresh(production, "tallies")
    assert tallies.total_price(PRICES[1]) != tallies.total_price(list(reversed(PRICES[1])))  # production: order matters
    repo = _tallies_repo(tmp_path)
    agent_patch(repo, {"src/tallies/core.py": TALLIES_PATCH})
    payload = assert_gate_does_not_pass(repo)
    # the relation holds under the stub (that is the trick); the read of the generated module is a probe
    probes = [f for f in payload["flags"] if f["name"] == "environment_probe" and "tallies._version" in f["detail"]]
    assert probes and payload["decision"] == "reject", payload


def test_validate_writes_the_generated_stub_as_the_runs_do(tmp_path):
    """Side finding (an honest base looks broken): validate (and check-split's holdcheck, which
    builds its tree without ``generated``) runs the base without the stub and reports the honest
    catalog as a bad input file (exit 5), while gate/run write the stub and hold."""
    repo = _tallies_repo(tmp_path)
    proc = relconsole(repo, "validate")
    assert proc.returncode == 0, proc.stdout + proc.stderr


# --- 3. (partial) a miss raised through the oracle's own frame is called the oracle's fault -------
#
# runner.oracle_fault blames the oracle when the innermost frame of the subject's exception is a
# protected file. The subject can put such a frame there itself by calling an adapter of the
# oracle (importable from the tree root in the sandbox) with its own arguments: the patch that
# breaks every call is an abort "oracle_fault ... fix the oracle on the base branch; the patch is
# not judged by a broken relation", never a reject, and no review flag is raised. Not a pass
# (exit 3), but the miss is moved off the patch onto the catalog keeper.

def test_a_miss_raised_inside_an_oracle_adapter_called_by_the_subject_is_the_patch_s(tmp_path):
    sample = materialise(tmp_path / "sample-src", TODAY)
    repo = tmp_path / "sample"
    subprocess.run(["git", "clone", "-q", "-b", "main", str(sample), str(repo)], check=True)
    broken = AGGREGATOR.replace("def summarize(rows", '''def _check(rows):
    from oracle.adapters import merge_summaries
    return merge_summaries(rows, None)


def summarize(rows''', 1).replace("    return {species: summarize_species(group)",
                                  "    _check(rows)\n    return {species: summarize_species(group)", 1)
    assert broken != AGGREGATOR
    git(repo, "checkout", "-q", "-b", "agent/patch")
    git(repo, "config", "user.name", "coding-agent")
    git(repo, "config", "user.email", "agent@example.invalid")
    (repo / "src" / "aggregator.py").write_text(broken)
    commit_all(repo, "agent: check the summaries")
    payload = assert_gate_does_not_pass(repo)
    reasons = {r["relation_id"]: (r["decision"], r["reason"]) for r in payload["relations"]}
    assert all(reason != "oracle_fault" for _, reason in reasons.values()), reasons
