"""Errors the engine raises and the exit codes of SPEC §8.

Every command maps its outcome to one of these codes; no two causes share one.
"""

from __future__ import annotations

from pathlib import PurePath
TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing

if TYPE_CHECKING:
    from collections.abc import Iterable

EXIT_PASS = 0  # pass or freeze
EXIT_REJECT = 1
EXIT_GAP = 2  # a touched path that no owner pattern matches
EXIT_ABORT = 3
EXIT_HOLD = 4
EXIT_BAD_INPUT = 5  # a malformed input file; the message names file and line
EXIT_USAGE = 64


class RelconsoleError(Exception):
    """Base class for errors that a front end reports as one line and an exit code."""

    exit_code = EXIT_ABORT

    def one_line(self) -> str:
        """The error as a single line fit for a terminal or a pane."""
        return " ".join(str(self).split())


class BadInputError(RelconsoleError):
    """A repository file is malformed (SPEC §8, exit 5).

    ``path`` is the file as the user knows it (repository-relative where possible),
    ``line`` is 1-based or None when the file has no line to blame.
    """

    exit_code = EXIT_BAD_INPUT

    def __init__(self, path: str | PurePath, message: str, line: int | None = None):
        self.path = str(path)
        self.line = line
        self.message = message
        where = f"{self.path}:{line}" if line else self.path
        super().__init__(f"{where}: {message}")


class UsageError(RelconsoleError):
    """The caller asked for something that does not make sense (exit 64)."""

    exit_code = EXIT_USAGE


class GitError(RelconsoleError):
    """Git could not answer (no merge base, unknown ref, shallow clone): exit 3, abort."""

    exit_code = EXIT_ABORT


class CommitRefused(RelconsoleError):
    """A console commit was refused by a rule (§4 owner, §6 policy, dirty path); no commit made.

    Exit 64: the request cannot be honoured as asked (another owner, another date, a
    clean path first); nothing about the patch under review is decided by it.
    """

    exit_code = EXIT_USAGE


def did_you_mean(wanted: str, known: Iterable[str]) -> str:
    """``" (did you mean 'x'?)"``: the one of ``known`` closest to a misspelt ``wanted``
    (``difflib.get_close_matches``, ratio at least 0.6), or ``""`` when none is close. For
    the end of a UsageError's message about an unknown id."""
    import difflib  # only when an id is unknown: every start imports this module
    close = difflib.get_close_matches(str(wanted), [str(k) for k in known], n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""
