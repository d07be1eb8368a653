"""A reader that leaves early never turns a decision into a pass (issue 18, SPEC §8).

``relconsole run --json | head -c 10`` exited 0 where the same run unpiped exits 1, and
``relconsole bind | (exec 0<&-; true)`` exited 0 instead of 2: the CLI answered
``BrokenPipeError`` with the pass code. Now a command that decides exits with its decision,
and one that has no decision to give exits 141 (128 + SIGPIPE, as shells expect); never a
traceback. Real pipes only: a pipe shrunk to one page that the reader closes after 10 bytes,
and bash with ``set -o pipefail`` and ``PIPESTATUS`` on the sample repository.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path

import pytest

from relconsole.engine.demo import materialise
from tests.conftest import TODAY

ROOT = Path(__file__).resolve().parents[1]
SIGPIPE_EXIT = 141
PAGE = 4096


@pytest.fixture(scope="module")
def sample(tmp_path_factory) -> Path:
    return materialise(tmp_path_factory.mktemp("pipes") / "sample", TODAY)


def env() -> dict[str, str]:
    paths = [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths), "RELCONSOLE_TODAY": TODAY.isoformat()}


def unpiped(sample: Path, *args: str) -> subprocess.CompletedProcess:
    """The command with its stdout a file (no pipe to break)."""
    return subprocess.run([sys.executable, "-m", "relconsole", *args], cwd=sample, env=env(),
                          capture_output=True, timeout=600)


def read_ten_then_close(sample: Path, *args: str) -> tuple[int, bytes]:
    """Run the command into a pipe of one page, read 10 bytes, close the read end (what
    ``| head -c 10`` does); returns (exit code, stderr)."""
    read_end, write_end = os.pipe()
    fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, PAGE)  # a bigger output cannot sit in the pipe
    proc = subprocess.Popen([sys.executable, "-m", "relconsole", *args], cwd=sample, env=env(),
                            stdout=write_end, stderr=subprocess.PIPE)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as reader:
        assert len(reader.read(10)) == 10
    _, stderr = proc.communicate(timeout=600)
    return proc.returncode, stderr


def in_bash(sample: Path, pipeline: str) -> list[int]:
    """``PIPESTATUS`` of ``pipeline`` run by bash with ``set -o pipefail``; ``RC`` is relconsole."""
    script = f"set -o pipefail\nRC='{sys.executable} -m relconsole'\n{pipeline}\necho \"${{PIPESTATUS[*]}}\"\n"
    done = subprocess.run(["bash", "-c", script], cwd=sample, env=env(), capture_output=True, text=True,
                          timeout=600)
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr, done.stderr
    return [int(code) for code in done.stdout.split()[-2:]]


def test_run_json_cut_after_ten_bytes_exits_with_the_decision(sample):
    whole = unpiped(sample, "run", "--json")
    assert whole.returncode == 1 and len(whole.stdout) > 4 * PAGE  # a reject, and more than the pipe holds
    code, stderr = read_ten_then_close(sample, "run", "--json")
    assert code == whole.returncode
    assert b"Traceback" not in stderr and b"Exception ignored" not in stderr, stderr


@pytest.mark.parametrize("args", [["bind"], ["run", "--json"], ["validate"], ["check-split", "main..agent/patch"]])
def test_a_reader_that_closes_at_once_leaves_the_decision_in_pipestatus(sample, args):
    whole = unpiped(sample, *args)
    statuses = in_bash(sample, f"$RC {' '.join(args)} | (exec 0<&-; true)")
    assert statuses == [whole.returncode, 0], (statuses, whole.returncode)


def test_bind_with_a_gap_stays_exit_2_when_its_reader_leaves(sample):
    assert unpiped(sample, "bind").returncode == 2
    assert in_bash(sample, "$RC bind | (exec 0<&-; true)")[0] == 2


def test_a_command_with_no_decision_exits_141_when_its_reader_leaves(sample):
    assert unpiped(sample, "schema").returncode == 0
    assert in_bash(sample, "$RC schema | (exec 0<&-; true)") == [SIGPIPE_EXIT, 0]


@pytest.mark.parametrize("args", [["bind"], ["validate"], ["run", "--json"]])
def test_an_output_that_cannot_be_written_is_never_a_pass(sample, args):
    """Red team: ``bind > /dev/full`` ended in an OSError traceback (exit 1) and ``>&-`` in an
    AttributeError. A decision that is not a pass keeps its code; a pass nobody could read is
    an abort; a closed stdout prints nothing and keeps the decision."""
    whole = unpiped(sample, *args).returncode
    script = f"{sys.executable} -m relconsole {' '.join(args)} > /dev/full; echo $?"
    full = subprocess.run(["bash", "-c", script], cwd=sample, env=env(), capture_output=True, text=True, timeout=600)
    assert "Traceback" not in full.stderr and "Exception ignored" not in full.stderr, full.stderr
    assert int(full.stdout.split()[-1]) == (whole if whole != 0 else 3)
    closed = subprocess.run(["bash", "-c", f"{sys.executable} -m relconsole {' '.join(args)} >&-"], cwd=sample,
                            env=env(), capture_output=True, text=True, timeout=600)
    assert "Traceback" not in closed.stderr, closed.stderr
    assert closed.returncode == whole


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
def test_a_path_the_output_encoding_lacks_keeps_the_decision(tmp_path, encoding):
    """A touched path 'cafe' + U+0301 under PYTHONIOENCODING=ascii ended bind in a
    UnicodeEncodeError traceback and exit 1 (the reject code) instead of its decision."""
    repo = materialise(tmp_path / "sample", TODAY)
    name = "cafe\u0301.py"
    (repo / name).write_text("x = 1\n")
    subprocess.run(["git", "add", name], cwd=repo, check=True)
    subprocess.run(["git", "commit", "-qm", "accent"], cwd=repo, check=True)
    utf8 = unpiped(repo, "bind", "--json")
    narrow = subprocess.run([sys.executable, "-m", "relconsole", "bind"], cwd=repo, capture_output=True,
                            env={**env(), "PYTHONIOENCODING": encoding}, timeout=600)
    assert narrow.returncode == utf8.returncode and b"Traceback" not in narrow.stderr
    assert b"cafe\\u0301.py" in narrow.stdout


@pytest.mark.parametrize("command", [["review"], ["demo"]])
def test_the_console_without_a_terminal_is_one_line_and_exit_64(tmp_path, command):
    """`relconsole review > file` drew the console as escape codes and never exited."""
    proc = subprocess.run([sys.executable, "-m", "relconsole", *command], cwd=tmp_path, env=env(),
                          stdin=subprocess.DEVNULL, capture_output=True, timeout=120)
    assert proc.returncode == 64 and proc.stderr.count(b"\n") == 1 and b"terminal" in proc.stderr
    assert proc.stdout == b"" and list(tmp_path.iterdir()) == []
