"""Shell completion (issue 17): ``relconsole completion bash|zsh|fish`` and the hook that answers a TAB.

argcomplete, not a static script generator: the shell runs ``relconsole`` itself on each TAB
with ``_ARGCOMPLETE`` set, and ``autocomplete`` answers from the parser that is built anyway,
so completion always matches the installed commands, for bash, zsh and fish alike. argcomplete
is imported only in that case: ``--help`` and every command start without it.
"""

from __future__ import annotations

import argparse
import os
import sys

from relconsole.engine.errors import EXIT_PASS

SHELLS = ("bash", "zsh", "fish")
PROG = "relconsole"


def register(subparsers, commands: dict) -> None:
    """Add ``completion`` to ``subparsers`` and its handler to ``commands``."""
    parser = subparsers.add_parser("completion", help="print the shell completion script (bash, zsh, fish)")
    parser.add_argument("shell", choices=SHELLS, help="the shell to complete in")
    commands["completion"] = cmd_completion


def script(shell: str) -> str:
    """The completion script for ``shell`` (one of ``SHELLS``), registering ``relconsole``."""
    import argcomplete
    return argcomplete.shellcode([PROG], shell=shell)


def cmd_completion(args) -> int:
    """Print the script for ``args.shell``; exit 0."""
    sys.stdout.write(script(args.shell))
    return EXIT_PASS


def autocomplete(parser: argparse.ArgumentParser) -> None:
    """Answer a completion request from the shell and exit, when this process is one
    (``_ARGCOMPLETE`` in the environment); otherwise do nothing and import nothing."""
    if "_ARGCOMPLETE" not in os.environ:
        return
    import argcomplete
    argcomplete.autocomplete(parser)
