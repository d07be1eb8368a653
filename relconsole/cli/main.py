"""The command line: ``relconsole review|demo|bind|run|replay|confirm|propose|decide|stats|workspace|flags|ack|validate|lease|accept|delete|freeze|bite|check-split|screenshots``.

A thin front end over the engine: parse arguments (argparse, exit 64 on misuse), call
the engine, print text or ``--json``, and exit with the codes of SPEC §8. Here: the parser
and the dispatch; each command group's module (``cli.review``, ``cli.oracle``, ``cli.demo``,
``cli.gate``, ...) adds its subcommands and imports the engine only when one runs.
"""
# PYTHON_ARGCOMPLETE_OK  (argcomplete's marker: this entry point answers shell completion)

from __future__ import annotations

import argparse
import os
import sys

from relconsole.cli import bite as cli_bite
from relconsole.cli import demo as cli_demo
from relconsole.cli import help as cli_help
from relconsole.cli import oracle as cli_oracle
from relconsole.cli import pipe as cli_pipe
from relconsole.cli import review as cli_review
from relconsole.cli.completion import autocomplete
from relconsole.cli.completion import register as register_completion
from relconsole.cli.confirm import register as register_confirm
from relconsole.cli.decide import register as register_decide
from relconsole.cli.flags import register as register_flags
from relconsole.cli.gate import register as register_gate
from relconsole.cli.propose import register as register_propose
from relconsole.cli.schema import register as register_schema
from relconsole.cli.workspace import cmd_workspace
from relconsole.cli.workspace import register as register_workspace
from relconsole.engine.errors import EXIT_PASS, EXIT_USAGE, RelconsoleError
from relconsole.engine.literal import one_line


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse exits 2, which §8 gives to coverage gaps
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def _version() -> str:
    """The installed distribution's version (package metadata), or a note when it is not installed."""
    from importlib import metadata
    try:
        return metadata.version("relconsole")
    except metadata.PackageNotFoundError:
        return "(not installed: run from a source tree)"


class _VersionAction(argparse.Action):
    """``--version``: the version is read from package metadata only when asked for (reading it
    costs every start 40 ms otherwise)."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS,
                         help="print relconsole's version and exit")

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"relconsole {_version()}")
        parser.exit()


class _Unbuilt:
    """Stands in for the parser of a subcommand this start does not run: it takes every
    ``add_argument``-like call and builds nothing. Building all of them cost ``--help``
    about half its time (argparse makes a formatter per argument)."""

    def __init__(self):
        self._actions: list = []

    def __getattr__(self, name: str):
        return lambda *args, **kwargs: _Unbuilt()


class _SubCommands(argparse._SubParsersAction):
    """The subcommand action of a parser built for one command (``only``): every other
    command is listed, with its one-line help, but its parser is an ``_Unbuilt``."""

    only: str | None = None
    everything = True

    def add_parser(self, name, **kwargs):
        if self.everything or name == self.only:
            return super().add_parser(name, **kwargs)
        if "help" in kwargs:
            self._choices_actions.append(self._ChoicesPseudoAction(name, (), kwargs["help"]))
        stub = _Unbuilt()
        self._name_parser_map[name] = stub
        return stub


def command_in(argv: list[str]) -> str | None:
    """The subcommand ``argv`` (the arguments after the program name) names: its first word
    that is not an option, or None (``--help``, ``--version``, nothing)."""
    return next((word for word in argv if not word.startswith("-")), None)


def build_parser(only: str | None = None, *, everything: bool = True) -> argparse.ArgumentParser:
    """The argument parser with every subcommand; with ``everything=False`` only the
    subcommand ``only`` (None: none) gets its arguments, the others are listed by name and
    one-line help (what ``relconsole --help`` and a run of one command need)."""
    parser = _Parser(prog="relconsole")  # its description, grouped commands and exit codes: cli_help.apply
    parser.add_argument("--version", action=_VersionAction)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser, action=_SubCommands)
    sub.only, sub.everything = only, everything
    # each group's module adds its commands and their handlers (COMMANDS), in the order listed
    cli_demo.register_review(sub, COMMANDS)
    cli_demo.register_demo(sub, COMMANDS)
    cli_review.register_bind(sub, COMMANDS)
    cli_review.register_run(sub, COMMANDS)
    cli_oracle.register_validate(sub, COMMANDS)
    cli_review.register_replay(sub, COMMANDS)
    cli_oracle.register_lease(sub, COMMANDS)
    cli_oracle.register_accept_delete(sub, COMMANDS)
    cli_oracle.register_freeze(sub, COMMANDS)
    cli_oracle.register_init(sub, COMMANDS)
    cli_oracle.register_ack(sub, COMMANDS)
    cli_bite.register(sub, COMMANDS)
    cli_demo.register_screenshots(sub, COMMANDS)
    cli_review.register_check_split(sub, COMMANDS)
    register_workspace(sub)
    register_decide(sub, COMMANDS)
    register_flags(sub, COMMANDS)
    register_propose(sub, COMMANDS)
    register_confirm(sub, COMMANDS)
    register_schema(sub, COMMANDS)
    register_gate(sub, COMMANDS)
    register_completion(sub, COMMANDS)
    return cli_help.apply(parser)


COMMANDS = {"workspace": cmd_workspace}  # the command name -> its handler; the groups' modules add theirs


SHUTDOWN_GRACE_SECONDS = 10.0  # after SIGHUP/SIGTERM, a shutdown stuck longer than this is cut short


def _exit_cleanly_on_signals() -> None:
    """A closed terminal (SIGHUP) or a kill (SIGTERM) ends the process through Python's
    normal shutdown, so the atexit hooks remove scratch directories (an oracle copy can be
    gigabytes). Only default handlers are replaced, and only on the main thread.

    The normal shutdown can hang on a terminal that is gone (Textual restores the terminal
    through a writer thread that died with it: an orphaned console sat in ``Queue.put``
    for an hour), so a daemon timer runs the engine's exit hooks and ends the process after
    ``SHUTDOWN_GRACE_SECONDS``."""
    import signal
    import threading
    def stop(signum, _frame) -> None:
        timer = threading.Timer(SHUTDOWN_GRACE_SECONDS, _force_exit, (128 + signum,))
        timer.daemon = True
        timer.start()
        sys.exit(128 + signum)

    for number in (signal.SIGTERM, signal.SIGHUP):
        try:
            if signal.getsignal(number) is signal.SIG_DFL:
                signal.signal(number, stop)
        except ValueError:  # not the main thread (main() called from a worker)
            return


# The engine's exit hooks the grace timer runs itself, in the modules that were loaded: the
# interpreter's own atexit run is what hangs, and its list is private.
EXIT_HOOKS = (("relconsole.engine.repo.workspace", "remove_scratch"),
              ("relconsole.engine.relations.pool", "close_started"))


def _force_exit(code: int) -> None:
    """Run the loaded engine modules' exit hooks (``EXIT_HOOKS``: scratch directories,
    prestarted workers) and leave without waiting for anything else."""
    try:
        for name, hook in EXIT_HOOKS:
            module = sys.modules.get(name)
            if module is not None:
                try:
                    getattr(module, hook)()
                except Exception:  # one hook failing must not keep the next from running
                    pass
    finally:
        os._exit(code)


# Commands whose exit code is a decision (§8) even when it is 0: a reader who leaves their
# output early gets that code. Any other command's 0 becomes 141 then (issue 18).
DECIDING = frozenset({"bind", "run", "validate", "bite", "replay", "check-split", "decide", "gate",
                      "confirm", "flags", "propose"})


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit code of §8.

    A reader that leaves early (``| head``, a closed pipe) never turns a decision into a pass:
    the command's decision is the exit code when it was made (recorded before printing, or
    returned, or any non-zero code), else 141 as shells expect of a writer whose reader left;
    no traceback either way."""
    words = sys.argv[1:] if argv is None else argv
    completing = "_ARGCOMPLETE" in os.environ  # completion walks every command's options
    parser = build_parser(command_in(words), everything=completing)
    autocomplete(parser)  # a TAB in the shell: answer and exit (only when _ARGCOMPLETE is set)
    args = parser.parse_args(argv)
    _exit_cleanly_on_signals()  # after parsing: --help and usage errors need no handlers
    _escape_what_the_terminal_cannot_encode()
    cli_pipe.forget()
    try:
        code = _dispatch(args)
        if code != EXIT_PASS or args.command in DECIDING:
            cli_pipe.decided(code)
        if sys.stdout is not None:  # started with stdout closed (>&-): nothing to flush
            sys.stdout.flush()  # a reader that left shows here, not in the interpreter's last flush
        return code
    except BrokenPipeError:
        return cli_pipe.exit_code_after_broken_pipe()
    except OSError as exc:  # stdout cannot take the output (a full disk, /dev/full): never a pass
        return cli_pipe.exit_code_after_failed_write(exc)


def _escape_what_the_terminal_cannot_encode() -> None:
    """stdout and stderr write a character their encoding lacks as a backslash escape: a path
    named "café" with a combining accent under PYTHONIOENCODING=ascii ended bind in a
    UnicodeEncodeError traceback and exit 1, the reject code (red team)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(errors="backslashreplace")
        except (AttributeError, ValueError, OSError):  # closed, or not a text stream we may change
            pass


def _dispatch(args) -> int:
    """Run the command ``args`` names; a RelconsoleError is reported (one line, JSON too with
    ``--json``) and its exit code returned."""
    try:
        return COMMANDS[args.command](args)
    except RelconsoleError as exc:
        cli_pipe.decided(exc.exit_code)
        if getattr(args, "json", False):
            error = {"message": exc.one_line(), "exit_code": exc.exit_code}
            if hasattr(exc, "path"):
                error |= {"path": exc.path, "line": exc.line}
            lease = getattr(exc, "lease", None)  # a workspace lease held by someone else
            if lease is not None:
                error |= {"holder": lease.holder, "generation": lease.generation, "lease_id": lease.id}
            import json
            print(json.dumps({"error": error}))
        print(f"relconsole: {one_line(exc.one_line())}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
