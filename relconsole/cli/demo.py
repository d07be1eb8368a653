"""CLI subcommands that open or draw the console: ``review`` (a patch's review, SPEC §7),
``demo`` (the sample repository, materialised and opened) and ``screenshots`` (the README's
pictures, drawn from the sample). Textual and rich are the ``console`` extra: without them
these commands exit 64 with what to install; without a terminal they exit 64 too. The
console's exit code is the §8 decision it shows, or 3 (abort) after a crash.
"""

from __future__ import annotations

import sys
from pathlib import Path

from relconsole.cli.options import date, keymap_option, review_options
from relconsole.engine.errors import EXIT_ABORT, EXIT_PASS, UsageError
from relconsole.engine.literal import one_line


def register_review(subparsers, commands: dict) -> None:
    """Add ``review`` to ``subparsers`` and its handler to ``commands``."""
    review = subparsers.add_parser("review", help="open the review console")
    review_options(review)
    keymap_option(review)
    commands["review"] = cmd_review


def register_demo(subparsers, commands: dict) -> None:
    """Add ``demo`` to ``subparsers`` and its handler to ``commands``."""
    demo = subparsers.add_parser("demo", help="materialise the sample repository and open the console")
    demo.add_argument("--into", type=Path, default=None, help="directory to create (default: a temporary one)")
    demo.add_argument("--no-open", action="store_true", help="only materialise and print the path")
    demo.add_argument("--keep", action="store_true",
                      help="keep the temporary sample after the console quits (--into and --no-open always keep it)")
    demo.add_argument("--today", type=date, default=None)
    keymap_option(demo)
    commands["demo"] = cmd_demo


def register_screenshots(subparsers, commands: dict) -> None:
    """Add ``screenshots`` to ``subparsers`` and its handler to ``commands``."""
    shots = subparsers.add_parser("screenshots", help="regenerate screenshots/*.svg from the sample repository")
    shots.add_argument("--out", type=Path, default=Path("screenshots"))
    commands["screenshots"] = cmd_screenshots


CONSOLE_MISSING = "the console needs textual: pip install 'relconsole[console]'"


def _console_module(name: str):
    """Import ``relconsole.console.<name>``. Textual and rich are the extra ``console``
    (the base install serves the command line and the pre-commit hook): without them,
    UsageError (exit 64) says in one line what to install instead of a traceback."""
    import importlib

    try:
        return importlib.import_module(f"relconsole.console.{name}")
    except ModuleNotFoundError as missing:
        if (missing.name or "").partition(".")[0] in {"textual", "rich"}:
            raise UsageError(CONSOLE_MISSING) from None
        raise


def _need_terminal(command: str) -> None:
    """UsageError (64) unless stdin and stdout are a terminal: without one the console drew
    its screen as escape codes into a file and never exited (new-user trial)."""
    def terminal(stream) -> bool:
        try:
            return stream is not None and stream.isatty()
        except (AttributeError, ValueError):
            return False
    if not (terminal(sys.stdin) and terminal(sys.stdout)):
        raise UsageError(f"{command} opens the console and needs a terminal (stdin and stdout); "
                         f"in scripts and CI use bind, run, flags or gate")


def cmd_review(args) -> int:
    ReviewApp = _console_module("app").ReviewApp
    _need_terminal("review")
    _need_repository(args.repo)
    app = ReviewApp(repo=args.repo, base_ref=args.base, head_ref=args.head, today=args.today,
                    oracle_from=args.oracle_from, keymap=args.keymap)
    return _console_exit(app)


def _need_repository(path: str) -> None:
    """UsageError (64), in one line, unless ``path`` is (in) a git repository: outside one the
    console opened with empty panes and said nothing (new-user trial). One ``git rev-parse``."""
    from relconsole.engine.repo import gitio
    try:
        gitio.open_repo(path)
    except UsageError as exc:
        raise UsageError(f"{exc.one_line()}: review opens a git repository: run it in a clone or give "
                         "--repo PATH (relconsole demo opens a sample)") from None


def cmd_demo(args) -> int:
    from relconsole.engine.demo import materialise

    console = None if args.no_open else _console_module("app")  # before writing anything
    if console is not None:
        _need_terminal("demo (without --no-open)")
    path = materialise(args.into, args.today)
    print(one_line(path))
    if console is None:
        return EXIT_PASS
    from relconsole.engine.demo import TOUR_REPLAY_SEEDS, TOUR_RUN_SEED
    app = console.ReviewApp(repo=str(path), today=args.today, keymap=args.keymap,
                            run_seed=TOUR_RUN_SEED, replay_seeds=list(TOUR_REPLAY_SEEDS))
    try:
        return _console_exit(app)  # the sample's decision is reject: quitting exits 1
    finally:
        _remove_or_keep(path, keep=args.keep or args.into is not None)


def _console_exit(app) -> int:
    """Run the console and return its §8 exit code: the one it quit with, else (Textual's own
    quit) the decision it shows, and ``EXIT_ABORT`` after a crash (Textual's return code
    is non-zero then): a console that broke never exits with the pass code."""
    result = app.run()
    if isinstance(result, int) and not isinstance(result, bool):
        return result
    if app.return_code:
        return EXIT_ABORT
    return app.exit_code()


def _remove_or_keep(sample: Path, keep: bool) -> None:
    """After the demo's console: remove its temporary sample unless ``keep``; say which."""
    import shutil
    if keep:
        print(f"relconsole: the sample repository stays in {one_line(sample)}", file=sys.stderr)
        return
    shutil.rmtree(sample, ignore_errors=True)
    print(f"relconsole: removed the temporary sample repository {one_line(sample)} "
          "(relconsole demo --keep keeps it)", file=sys.stderr)


def cmd_screenshots(args) -> int:
    for path in _console_module("screenshots").regenerate(args.out):
        print(one_line(path))
    return EXIT_PASS
