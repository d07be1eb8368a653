"""Progress of long command-line work (issue 17): a bar on stderr when it is a terminal,
plain lines when it is not, nothing with --json; stdout carries the results only.

The CLI runs as a process with stderr on a pseudo-terminal (``pty``) or a pipe; what stdout
must hold comes from the same command's --json output, not from literals.
"""

from __future__ import annotations

import io
import json
import os
import pty
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

import relconsole.cli.main as cli
from relconsole.cli.progress import HASH_MIN_BYTES, progress_reporter
from relconsole.engine.demo import materialise
from tests.conftest import TODAY

ROOT = Path(__file__).resolve().parents[1]
BAR = "━"  # rich's bar glyph
STEP_LINE = re.compile(r"^\[(\d+)/(\d+)\] (.+)$")


# --- the reporter ---------------------------------------------------------------------------


class TerminalText(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_on_a_terminal_every_step_is_drawn_however_fast_they_come():
    """CI saw a relation's result missing from the bar: it finished between two of the bar's
    ticks. Each step is drawn when it is reported."""
    stream = TerminalText()
    labels = [f"relation-{n}: held" for n in range(1, 6)]
    with progress_reporter(stream, True) as report:
        for done, label in enumerate(labels, 1):
            report.step(done, len(labels), label)
    assert BAR in stream.getvalue() and all(label in stream.getvalue() for label in labels)


def test_without_a_terminal_each_step_is_one_plain_line():
    stream = io.StringIO()
    with progress_reporter(stream, True) as report:
        for done in range(1, 4):
            report.step(done, 3, f"relation-{done}\non two lines")
    lines = stream.getvalue().splitlines()
    assert [STEP_LINE.match(line).group(1, 2) for line in lines] == [("1", "3"), ("2", "3"), ("3", "3")]
    assert all("relation-" in line and "\\n" in line for line in lines)  # one line each, escaped


def test_hashing_shows_only_big_files_and_a_few_lines_each():
    stream = io.StringIO()
    chunk = 1 << 20
    with progress_reporter(stream, True) as report:
        small = HASH_MIN_BYTES - 1
        for done in range(0, small + 1, chunk):
            report.bytes("small.csv", done, small)
        big = 4 * HASH_MIN_BYTES
        for done in range(chunk, big + 1, chunk):
            report.bytes("big.csv", done, big)
    lines = stream.getvalue().splitlines()
    assert lines and all("big.csv" in line for line in lines)
    assert len(lines) <= 5 and "100%" in lines[-1]


def test_disabled_reports_nothing_even_on_a_terminal():
    master, slave = pty.openpty()
    with os.fdopen(slave, "w") as stream:
        with progress_reporter(stream, False) as report:
            report.step(1, 2, "a")
            report.bytes("big.csv", HASH_MIN_BYTES, HASH_MIN_BYTES)
            report.stage("replaying", 0.5)
    assert read_all(master) == ""


def test_on_a_terminal_a_bar_is_drawn_and_erased():
    master, slave = pty.openpty()
    with os.fdopen(slave, "w") as stream:
        with progress_reporter(stream, True) as report:
            report.step(1, 4, "penguins.split_merge")
            report.bytes("corpus/big.csv", 2 * HASH_MIN_BYTES, 4 * HASH_MIN_BYTES)
    shown = read_all(master)
    assert BAR in shown and "penguins.split_merge" in shown and "corpus/big.csv" in shown
    assert "\x1b[" in shown  # cursor control: the bar redraws in place, then goes


def read_all(master: int, quiet: float = 0.3) -> str:
    """Everything written to a pty until it is quiet for ``quiet`` seconds (or closed)."""
    out = b""
    while True:
        ready, _, _ = select.select([master], [], [], quiet)
        if not ready:
            break
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the other side closed
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    return out.decode("utf-8", "replace")


# --- the CLI as a process -------------------------------------------------------------------


@pytest.fixture(scope="module")
def sample(tmp_path_factory) -> Path:
    return materialise(tmp_path_factory.mktemp("progress") / "sample", TODAY)


def relconsole(args: list[str], tty: bool) -> tuple[int, str, str]:
    """Run the CLI with stdout on a pipe and stderr on a pty (``tty``) or a pipe."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), TERM="xterm-256color", COLUMNS="120",
               RELCONSOLE_TODAY=TODAY.isoformat())
    command = [sys.executable, "-m", "relconsole", *args]
    if not tty:
        proc = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
        return proc.returncode, proc.stdout, proc.stderr
    master, slave = pty.openpty()
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=slave, env=env)
    os.close(slave)
    err = b""
    deadline = time.monotonic() + 600
    while proc.poll() is None or select.select([master], [], [], 0)[0]:
        assert time.monotonic() < deadline, "the CLI did not finish"
        if select.select([master], [], [], 0.1)[0]:
            try:
                err += os.read(master, 65536)
            except OSError:
                break
    out = proc.stdout.read().decode()
    proc.stdout.close()
    os.close(master)
    return proc.wait(), out, err.decode("utf-8", "replace")


def test_run_on_a_terminal_draws_a_bar_on_stderr_and_only_results_on_stdout(sample):
    code, out, err = relconsole(["run", "--repo", str(sample)], tty=True)
    json_code, json_out, json_err = relconsole(["run", "--repo", str(sample), "--json"], tty=True)
    payload = json.loads(json_out)  # --json: stdout is the JSON and nothing else
    assert BAR not in json_err and not STEP_LINE.search(json_err)
    assert code == json_code
    ids = [r["relation_id"] for r in payload["relations"]]
    assert ids and BAR in err and all(rid in err for rid in ids)
    lines = out.splitlines()
    # one per relation, one per gap and per file with lines no relation ran, then the decision
    # a miss's evidence, indented under it: its smallest input and the outputs on it, the whole input's
    evidence = [line for line in lines if line.startswith("    ")]
    missed = [r for r in payload["relations"] if r["decision"] != "pass"]
    assert len([line for line in evidence if "outputs: " in line]) <= len(missed)
    assert len(lines) == len(ids) + len(evidence) + len(payload["gaps"]) + len(payload["unexercised"]) + 1
    lines = [line for line in lines if line not in evidence]
    assert all(line.startswith(rid) for line, rid in zip(lines, ids))
    assert all(line.startswith(("gap: ", "unexercised: ")) for line in lines[len(ids):-1])
    assert "\x1b" not in out and BAR not in out


def test_run_without_a_terminal_prints_one_line_per_relation(sample):
    code, out, err = relconsole(["run", "--repo", str(sample)], tty=False)
    steps = [STEP_LINE.match(line) for line in err.splitlines() if STEP_LINE.match(line)]
    relations = [line for line in out.splitlines()[:-1] if not line.startswith(("gap: ", "unexercised: ", "    "))]
    assert len(steps) == len(relations) >= 1
    assert sorted(int(m.group(1)) for m in steps) == list(range(1, len(relations) + 1))
    assert {m.group(3).split(":")[0] for m in steps} == {line.split(":")[0] for line in relations}
    assert BAR not in err and "\x1b" not in err


def test_replay_on_a_terminal_draws_a_bar(sample):
    code, out, err = relconsole(["replay", "--repo", str(sample), "--runs", "1"], tty=True)
    assert BAR in err and "\x1b" not in out and BAR not in out
    assert out.strip() and not STEP_LINE.search(err.replace("\r", "\n"))


def test_a_big_corpus_hashed_while_loading_is_reported_unless_json(sample, capsys, monkeypatch):
    from relconsole.engine.gate import review as engine_review
    real = engine_review.load_review

    def hashing(*args, hash_progress=None, **kwargs):  # a corpus over the threshold, hashed once
        assert hash_progress is not None
        for done in (HASH_MIN_BYTES, 2 * HASH_MIN_BYTES):
            hash_progress("data/big.csv", done, 2 * HASH_MIN_BYTES)
        return real(*args, hash_progress=hash_progress, **kwargs)

    monkeypatch.setattr(engine_review, "load_review", hashing)
    cli.main(["bind", "--repo", str(sample)])
    assert "data/big.csv" in capsys.readouterr().err
    cli.main(["bind", "--repo", str(sample), "--json"])
    captured = capsys.readouterr()
    assert "data/big.csv" not in captured.err
    json.loads(captured.out)


def test_rich_is_imported_only_when_a_bar_is_drawn():
    probe = ("import io, sys, relconsole.cli.main, relconsole.cli.progress as p\n"
             "relconsole.cli.main.build_parser()\n"
             "with p.progress_reporter(io.StringIO(), True) as r:\n"
             "    r.step(1, 2, 'a')\n"
             "print(sorted(m for m in sys.modules if m == 'rich' or m.startswith('rich.')))\n")
    proc = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert proc.stdout.strip() == "[]", proc.stdout
