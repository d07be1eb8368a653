"""CLI subcommands ``decide`` (SPEC §8 over replay sheets) and ``stats`` (gate health).

``register(subparsers, commands)`` adds both to the ``relconsole`` parser and their
handlers to the dispatch table.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (6 ms a start)

from relconsole.engine.errors import EXIT_PASS, RelconsoleError, UsageError
from relconsole.cli.pipe import decided
from relconsole.engine.literal import one_line

if TYPE_CHECKING:  # imported by the commands themselves: the parser must not load the engine
    from relconsole.engine.decision import Decision


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= 36500:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of days between 1 and 36500")
    return value


def register(subparsers, commands: dict | None = None) -> dict:
    """Add ``decide`` and ``stats`` to ``subparsers``; put their handlers into ``commands``
    (the CLI's ``COMMANDS`` dispatch table, keyed by subcommand) and return them."""
    decide = subparsers.add_parser("decide", help="apply the decision table to replay sheets")
    decide.add_argument("--sheet", required=True, type=Path,
                        help="a replay sheet, or a directory searched for *.sheet.json")
    decide.add_argument("--json", action="store_true", help="print decision.json to stdout")
    decide.add_argument("--repo", default=None, help="repository whose gate history records this (default: .)")
    decide.add_argument("--lease-url", default=None,
                        help="lease store to fence every sheet against (default: the store each sheet names; "
                             "RELCONSOLE_LEASE_URL supplies it when it is that store, password included)")
    decide.add_argument("--no-history", action="store_true", help="do not record in the gate history")
    decide.add_argument("--out", type=Path, default=None,
                        help="directory for decision.json (default: the sheet directory, or beside the file)")
    stats = subparsers.add_parser("stats", help="gate health: which decision table rows fired lately")
    stats.add_argument("--days", type=_positive, default=7, help="window in days (default: 7)")
    stats.add_argument("--repo", default=None, help="repository (default: .)")
    stats.add_argument("--json", action="store_true", help="print JSON")
    handlers = {"decide": cmd_decide, "stats": cmd_stats}
    if commands is not None:
        commands.update(handlers)
    return handlers


def git_dir_of(repo: str | None) -> Path | None:
    """The absolute common git directory of ``repo`` (shared by its worktrees, where the
    lease store and the gate history live), default: the cwd's repository, or None when
    there is none. An explicit ``repo`` that is not a git repository is a UsageError. git
    runs with GIT_DIR and the other redirecting variables scrubbed (``gitio.run_git``): the
    fences and the gate history are the repository's, never a decoy's."""
    from relconsole.engine.repo.gitio import run_git
    try:
        proc = run_git(repo or ".", "rev-parse", "--path-format=absolute", "--git-common-dir", ok=None)
    except OSError as exc:
        if repo:
            raise UsageError(f"{repo}: cannot run git ({exc})") from None
        return None
    if proc.returncode != 0:
        if repo:
            raise UsageError(f"{repo}: not a git repository")
        return None
    return Path(proc.stdout.decode("utf-8", "surrogateescape").strip())


def _decision_dir(sheet: Path, out: Path | None) -> Path:
    if out is not None:
        return out
    return sheet if sheet.is_dir() else sheet.resolve().parent


def _history(report, git_dir: Path | None) -> bool | None:
    if git_dir is None:
        return None
    from relconsole.engine.gate import gatehealth
    decisions = [d for _, d in report.per_sheet]
    if not decisions or report.overall.relation_id is None:  # nothing missed, or incomplete evidence
        decisions.append(report.overall)
    return gatehealth.append(git_dir, decisions)


def _relation_line(d: Decision) -> str:
    row = d.row if d.row is not None else "-"
    return f"row {row}  {d.decision}  {d.reason}  {one_line(d.relation_id or '')}".rstrip()


def cmd_decide(args) -> int:
    """Decide every sheet (§8), write decision.json, record gate history; exit as §8 says."""
    import json
    from relconsole.engine.gate.wslease import wslease
    from relconsole.engine.gate.sheets import Fences, decide_sheets, write_decision
    git_dir = git_dir_of(args.repo)
    if args.lease_url and wslease.sqlite_path(args.lease_url) is None:
        wslease.open_store(args.lease_url, ".").close()  # a malformed URL is a usage error (64); no I/O
    fences = Fences(args.lease_url, os.environ.get(wslease.ENV_URL) or None)
    try:
        report = decide_sheets(args.sheet, fences=fences)
    finally:
        fences.close()
    try:
        written = write_decision(report, _decision_dir(args.sheet, args.out))
    except OSError as exc:
        raise RelconsoleError(f"cannot write decision.json: {exc}") from None
    recorded = None if args.no_history else _history(report, git_dir)
    decided(report.exit_code)  # before printing: a reader who leaves cannot change it
    if args.json:
        payload = report.to_json() | {"decision_file": str(written), "history_recorded": recorded}
        print(json.dumps(payload, indent=2, default=str))
        return report.exit_code
    for path, d in report.per_sheet:
        print(_relation_line(d) + f"  {one_line(path)}")
        if d.detail:
            print(f"    {one_line(d.detail)}")
    o = report.overall
    row = f"  row {o.row}" if o.row is not None else ""
    print(f"decision: {o.decision}  ({o.reason}){row}  -> {one_line(written)}")
    if o.detail and o.reason == "incomplete_evidence":
        print(f"    {one_line(o.detail)}")
    return report.exit_code




def cmd_stats(args) -> int:
    """Print gate health for the last ``--days`` days; exit 0 (warnings do not fail)."""
    import json
    from relconsole.engine.gate import gatehealth
    git_dir = git_dir_of(args.repo)
    result = gatehealth.stats(git_dir, args.days)
    if git_dir is None:
        result.notes[:] = ["not in a git repository: no decision history"]
    if args.json:
        print(json.dumps(result.to_json(), indent=2))
    else:
        print("\n".join(result.lines()))
    return EXIT_PASS
