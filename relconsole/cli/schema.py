"""CLI subcommand ``schema``: print one of relconsole's JSON Schemas (for editors).

``relconsole schema NAME`` prints the shipped schema file ``NAME`` (catalog, lease, freeze,
pin, candidate, ack) to stdout as it is installed, byte for byte, and exits 0;
``relconsole schema`` or ``--list`` lists the names with each file's title. An unknown
name is a usage error (exit 64, SPEC §8). The engine validates with the same files.
"""

from __future__ import annotations

import argparse

from relconsole.engine.errors import EXIT_PASS, UsageError

EPILOG = """exit codes: 0 printed, 64 unknown name.

Editors (yaml-language-server, VS Code's JSON support) read the same schema: map a file to it,
or keep the `# yaml-language-server: $schema=...` line that `relconsole init` writes."""


def register(subparsers, commands: dict | None = None) -> dict:
    """Add ``schema`` to ``subparsers``; put its handler into ``commands`` (the CLI's
    dispatch table, keyed by subcommand) and return the handlers."""
    parser = subparsers.add_parser(
        "schema", help="print the JSON Schema of a relconsole file (catalog, lease, freeze, pin, candidate, ack)",
        description="Print the JSON Schema (Draft 2020-12) of one of relconsole's files: the one the engine "
                    "validates with, for an editor.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("name", nargs="?", default=None, metavar="NAME",
                        help="catalog, lease, freeze, pin, candidate or ack (none: list them)")
    parser.add_argument("--list", action="store_true", help="list the schema names and what each describes")
    handlers = {"schema": cmd_schema}
    if commands is not None:
        commands.update(handlers)
    return handlers


def cmd_schema(args) -> int:
    """Print the schema ``args.name`` (exit 0), or the list; UsageError (64) for an unknown name."""
    import json
    from relconsole import schemas
    if args.list or args.name is None:
        for name in schemas.NAMES:
            print(f"{name:<10} {json.loads(schemas.text(name)).get('title', '')}")
        return EXIT_PASS
    if args.name not in schemas.NAMES:
        raise UsageError(f"no schema named {args.name!r}: expected one of {', '.join(schemas.NAMES)}")
    print(schemas.text(args.name), end="")
    return EXIT_PASS
