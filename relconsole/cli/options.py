"""Command-line options and argument types shared by several subcommands (kept in one place
so their help and defaults cannot drift apart): the review options (SPEC §2: which repository,
base, head and day a review reads), the console's ``--keymap``, the workspace lease (§5), and
the types of dates, directories, shards and run seeds. Exit 64 on a bad value (argparse's
``ArgumentTypeError``, which the CLI's parser turns into §8's usage code)."""

from __future__ import annotations

import argparse
from pathlib import Path
TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (6 ms a start)

from relconsole.engine.errors import UsageError
from relconsole.engine.docsref import doc_path

if TYPE_CHECKING:  # the commands import what they need: `--help` and the parser load no engine
    import datetime as dt
    from relconsole.engine.gate.replay.replayoptions import Shard


def workspace_lease_options(parser: argparse.ArgumentParser, workspace_help: str) -> None:
    """``--workspace``, ``--holder``, ``--ttl-seconds`` (seconds) and ``--lease-url``: the
    workspace lease (§5) a replay runs under; ``workspace_help`` says what the default id is."""
    parser.add_argument("--workspace", default=None, help=workspace_help)
    parser.add_argument("--holder", default=None, help="lease holder name (default: user@host:pid)")
    parser.add_argument("--ttl-seconds", type=float, default=300.0, help="workspace lease TTL (default: 300)")
    parser.add_argument("--lease-url", default=None,
                        help="lease store: redis://... or sqlite:PATH (default: RELCONSOLE_LEASE_URL, "
                             "else SQLite under the git directory)")


def date(text: str) -> dt.date:
    """``--today``-like values: a ``YYYY-MM-DD`` date; ArgumentTypeError (exit 64) otherwise."""
    import datetime as dt
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a YYYY-MM-DD date") from None


def review_options(parser: argparse.ArgumentParser) -> None:
    """``--repo``, ``--base``, ``--head``, ``--today`` and ``--oracle-from``: what one review
    reads (SPEC §2: the oracle from the base ref unless asked otherwise)."""
    parser.add_argument("--repo", default=".", help="repository to review (default: .)")
    parser.add_argument("--base", default=None, help="base ref the oracle is read from (default: base_ref in pyproject.toml's [tool.relconsole], else main, else origin/HEAD)")
    parser.add_argument("--head", default="HEAD", help="the patch (default: HEAD)")
    parser.add_argument("--today", type=date, default=None,
                        help="the day leases and freezes are judged on (default: RELCONSOLE_TODAY or today)")
    parser.add_argument("--oracle-from", choices=["base", "HEAD"], default="base",
                        help="read the oracle from the base ref (default) or, explicitly, from HEAD")


def review_command(subparsers, name: str, text: str) -> argparse.ArgumentParser:
    """Add the subcommand ``name`` (one-line help ``text``) of a command that reads one review
    and prints text or JSON: the review options, then ``--json``. Returns its parser."""
    parser = subparsers.add_parser(name, help=text)
    review_options(parser)
    parser.add_argument("--json", action="store_true", help="print JSON")
    return parser


def keymap_option(parser: argparse.ArgumentParser) -> None:
    """``--keymap PATH``: the console's keymap file (``review`` and ``demo``)."""
    parser.add_argument("--keymap", default=None, metavar="PATH",
                        help="the console's keymap, a TOML file (default: $RELCONSOLE_KEYMAP, else "
                             "keymap.toml in your config folder; " + doc_path("console", "keymaps") + ")")


def directory(text: str) -> Path:
    """A directory argument (``--artifacts``): any non-blank path; ArgumentTypeError otherwise."""
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty path is not a directory")
    return Path(text)


def shard(text: str) -> "Shard":
    """``--shard K/N`` (1 <= K <= N) as a ``Shard``; ArgumentTypeError with ``Shard.parse``'s reason otherwise."""
    from relconsole.engine.gate.replay.replayoptions import Shard
    try:
        return Shard.parse(text)
    except UsageError as exc:
        raise argparse.ArgumentTypeError(exc.one_line()) from None


def seed(text: str) -> int:
    """A recorded run seed: a whole number from 0 (what ``run --json`` shows as ``seed``)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a run seed (a whole number)") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is not a run seed: seeds are 0 or more")
    return value
