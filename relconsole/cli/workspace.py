"""``relconsole workspace acquire|renew|release|status``: workspace leases from the shell (SPEC §5).

Exit codes (SPEC §8): 0 when the lease was acquired, renewed or released, and for every
status answer (fresh, stale or missing); 3 (abort) when another holder has the workspace,
the caller does not hold it, or the store cannot be read; 64 on misuse.
"""

from __future__ import annotations

import argparse
import os
import sys
TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (6 ms a start)

from relconsole.cli.pipe import decided
from relconsole.engine.defaults import WORKSPACE_TTL_SECONDS
from relconsole.engine.errors import EXIT_ABORT, EXIT_PASS, UsageError
from relconsole.engine.literal import one_line

if TYPE_CHECKING:  # imported by the commands themselves: the parser must not load the lease store
    from relconsole.engine.gate.wslease import wslease

ACTIONS = ("acquire", "renew", "release", "status")
PAST = {"acquire": "acquired", "renew": "renewed"}


def register(subparsers) -> argparse.ArgumentParser:
    """Add the ``workspace`` subcommand to ``subparsers`` (an argparse subparsers action whose
    parser class exits 64 on misuse); the handler is stored as the ``handler`` default."""
    parser = subparsers.add_parser("workspace", help="workspace leases for replays (acquire, renew, release, status)")
    actions = parser.add_subparsers(dest="workspace_command", required=True,
                                    parser_class=type(parser))
    for name in ACTIONS:
        _options(actions.add_parser(name, help=("show" if name == "status" else name) + " a workspace lease"), name)
    parser.set_defaults(handler=cmd_workspace)
    return parser


def _options(parser: argparse.ArgumentParser, action: str) -> None:
    parser.add_argument("--workspace", required=True, help="the workspace id")
    who = "only fresh when held by this holder (default: any holder)" if action == "status" else \
        "holder name (default: user@host:PID of the calling shell)"
    parser.add_argument("--holder", default=None, help=who)
    if action in ("acquire", "renew"):
        parser.add_argument("--ttl-seconds", type=float, default=WORKSPACE_TTL_SECONDS,
                            help=f"lease time to live in seconds (default: {WORKSPACE_TTL_SECONDS:g})")
    parser.add_argument("--lease-url", default=None,
                        help="sqlite:///PATH or redis://HOST:PORT/DB (default: $RELCONSOLE_LEASE_URL, "
                             "else a SQLite file under the repository's git directory)")
    parser.add_argument("--repo", default=".", help="repository whose git directory holds the default store")
    parser.add_argument("--json", action="store_true", help="print JSON")


def cmd_workspace(args) -> int:
    """Run one workspace lease action; returns the exit code of SPEC §8."""
    from relconsole.engine.gate.wslease import wslease
    store = wslease.open_store(args.lease_url, _git_dir(args))  # errors: relconsole's main reports them
    try:
        if args.workspace_command == "status":
            return _status(args, store)
        return _change(args, store)
    finally:
        store.close()


def _git_dir(args) -> str:
    from relconsole.engine.gate.wslease import wslease
    if args.lease_url or os.environ.get(wslease.ENV_URL):
        return "."  # not used: the URL names the store
    from relconsole.engine.repo import gitio

    try:
        repo = gitio.open_repo(args.repo)  # GitError when git refuses it (another user's: safe.directory)
    except UsageError as exc:
        raise UsageError(f"{exc.one_line()}; or pass --lease-url") from None
    return repo.common_dir


def _holder(args) -> str:
    from relconsole.engine.gate.wslease import wslease
    return args.holder or wslease.default_holder(os.getppid())


def _change(args, store: wslease.LeaseStore) -> int:
    from relconsole.engine.gate.wslease import wslease
    holder = _holder(args)
    if args.workspace_command == "release":
        store.release(args.workspace, holder)
        generation = store.generation(args.workspace)
        _print(args, {"workspace": args.workspace, "holder": holder, "released": True, "generation": generation},
               f"released workspace {args.workspace} ({holder}); generation stays {generation}")
        return EXIT_PASS
    act = store.acquire if args.workspace_command == "acquire" else store.renew
    lease = act(args.workspace, holder, args.ttl_seconds)
    _print(args, lease.to_json() | {"store": wslease.redact(store.url)},
           f"{PAST[args.workspace_command]} workspace {lease.workspace} for {lease.holder}: generation "
           f"{lease.generation}, expires {lease.to_json()['expires']} ({lease.seconds_left():.1f} s left), "
           f"lease {lease.id}")
    return EXIT_PASS


def _status(args, store: wslease.LeaseStore) -> int:
    import json
    from relconsole.engine.gate.wslease import wslease
    status = store.status(args.workspace, args.holder)
    lease = status.lease
    payload = {"workspace": args.workspace, "state": status.state, "reason": status.reason,
               "generation": status.generation, "reachable": status.reachable,
               "holder": lease.holder if lease else None,
               "seconds_left": round(lease.seconds_left(), 3) if lease else None,
               "lease": lease.to_json() if lease else None, "store": wslease.redact(store.url)}
    if not status.reachable:  # nothing could be read: an error, like any other
        decided(EXIT_ABORT)  # a reader who leaves mid-output cannot change it (issue 18)
        payload["error"] = {"message": one_line(status.reason), "exit_code": EXIT_ABORT}
        if args.json:
            print(json.dumps(payload, indent=2))
        print(f"relconsole: {one_line(status.reason)}", file=sys.stderr)
        return EXIT_ABORT
    holder = f"holder {lease.holder}  {lease.seconds_left():.1f} s left  " if lease else ""
    _print(args, payload, f"workspace {args.workspace}: {status.state}  {holder}"
                          f"generation {status.generation}  ({status.reason})")
    return EXIT_PASS


def _print(args, payload: dict, line: str) -> None:
    import json
    print(json.dumps(payload, indent=2) if args.json else one_line(line))
