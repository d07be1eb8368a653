"""A reader that leaves early (``relconsole run --json | head -c 10``) never turns a decision
into a pass (issue 18, SPEC §8).

A command that decides records its exit code with :func:`decided` before it prints the
decision; when the pipe breaks, :func:`exit_code_after_broken_pipe` gives that code, or
:data:`SIGPIPE_EXIT` (141, what a shell reports for a writer killed by SIGPIPE) when no
decision was made yet, and points the broken stream at ``/dev/null`` so the interpreter's
last flush prints no ``Exception ignored`` traceback.
"""

from __future__ import annotations

import os
import signal
import sys

SIGPIPE_EXIT = 128 + signal.SIGPIPE  # 141

_decision: list[int] = []


def decided(code: int) -> int:
    """Record ``code`` (an exit code of SPEC §8) as this command's decision; returns it."""
    _decision[:] = [code]
    return code


def forget() -> None:
    """Forget any recorded decision (each ``main`` call starts without one)."""
    _decision.clear()


def exit_code_after_broken_pipe() -> int:
    """The exit code for a process whose stdout (or stderr) reader left: the recorded
    decision, else 141. Both streams are flushed; one that is broken is redirected to
    ``/dev/null`` (its unwritten output dropped) so nothing fails at interpreter exit."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BrokenPipeError:
            _silence(stream)
        except (OSError, ValueError):  # closed, or no file behind it (a test's capture)
            pass
    return _decision[0] if _decision else SIGPIPE_EXIT


def _silence(stream) -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


def exit_code_after_failed_write(error: OSError) -> int:
    """The exit code when stdout refused the output for another reason than a reader that left
    (ENOSPC on ``> /dev/full``, EIO): one line on stderr naming it, then the recorded decision
    when it is not a pass, else ``EXIT_ABORT`` (3): the output that says pass was never written."""
    from relconsole.engine.errors import EXIT_ABORT, EXIT_PASS
    from relconsole.engine.literal import one_line
    _silence(sys.stdout)
    try:
        print(f"relconsole: cannot write the output: {one_line(str(error.strerror or error))}", file=sys.stderr)
    except (OSError, ValueError, AttributeError):
        pass
    code = _decision[0] if _decision else EXIT_ABORT
    return EXIT_ABORT if code == EXIT_PASS else code
