"""Command-line options shared by several subcommands (kept in one place so their help and
defaults cannot drift apart)."""

from __future__ import annotations

import argparse


def workspace_lease_options(parser: argparse.ArgumentParser, workspace_help: str) -> None:
    """``--workspace``, ``--holder``, ``--ttl-seconds`` (seconds) and ``--lease-url``: the
    workspace lease (§5) a replay runs under; ``workspace_help`` says what the default id is."""
    parser.add_argument("--workspace", default=None, help=workspace_help)
    parser.add_argument("--holder", default=None, help="lease holder name (default: user@host:pid)")
    parser.add_argument("--ttl-seconds", type=float, default=300.0, help="workspace lease TTL (default: 300)")
    parser.add_argument("--lease-url", default=None,
                        help="lease store: redis://... or sqlite:PATH (default: RELCONSOLE_LEASE_URL, "
                             "else SQLite under the git directory)")
