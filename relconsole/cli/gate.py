"""CLI subcommand ``gate``: the one CI command (docs/ci.md, docs/decision-table.md).

``relconsole gate [--shard K/N] [--artifacts DIR]`` binds, checks the split over
merge-base..HEAD, reads the flags and the checklist, runs the touched relations, replays what
missed and decides, writing ``decision.json`` (a shard writes its part; ``relconsole gate
--collect DIR`` merges the parts and the sheets). ``--sarif FILE`` and ``--summary FILE``
write what code scanning and a job summary read; ``--format github`` prints GitHub
workflow-command annotations instead of the text lines (``--format json`` is ``--json``).
The exit code is the decision table's, the worst of all, whatever the format.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from relconsole.cli.options import directory as directory_type
from relconsole.cli.options import review_options
from relconsole.cli.options import shard as shard_type
from relconsole.cli.options import workspace_lease_options
from relconsole.cli.pipe import decided
from relconsole.cli.reviewio import decision_line, warn_uncommitted
from relconsole.engine.errors import UsageError
from relconsole.engine.literal import one_line

FORMATS = ("text", "json", "github")


def register(subparsers, commands: dict) -> None:
    """Add ``gate`` to ``subparsers`` (with the shared review options and argument types of
    ``cli.options``) and its handler to ``commands``."""
    gate = subparsers.add_parser("gate", help="the CI gate: bind, split check, flags, run, replay, decide")
    review_options(gate)
    gate.add_argument("--shard", type=shard_type, default=None, metavar="K/N",
                      help="judge only the K-th of N slices of the touched relations and write that shard's "
                           "part (gate --collect merges the parts)")
    gate.add_argument("--artifacts", type=directory_type, default=None,
                      help="directory for sheets, parts and decision.json (default: under the git directory)")
    gate.add_argument("--collect", type=directory_type, default=None, metavar="DIR",
                      help="merge the parts and replay sheets of every shard under DIR into DIR/decision.json")
    gate.add_argument("--runs", type=int, default=5, help="replay runs on each side (default: 5)")
    workspace_lease_options(gate, "workspace lease id (default: host, repository, shard)")
    gate.add_argument("--fresh-worktrees", action="store_true",
                      help="add and remove new worktrees instead of reusing the pooled ones")
    gate.add_argument("--sarif", type=Path, default=None, metavar="FILE",
                      help="also write SARIF 2.1.0 (flags, gaps, split offences, misses at file:line)")
    gate.add_argument("--summary", type=Path, default=None, metavar="FILE",
                      help="also write a Markdown summary (a job summary or a PR comment)")
    gate.add_argument("--no-history", action="store_true", help="do not record in the gate history")
    gate.add_argument("--format", choices=FORMATS, default=None,
                      help="what to print: text (default), json (decision.json, as --json) or github "
                           "(::error file=…,line=… annotations a pull request shows on its diff)")
    gate.add_argument("--json", action="store_true", help="print decision.json (a shard: its part) to stdout")
    commands["gate"] = cmd_gate


def cmd_gate(args) -> int:
    """Gate one shard, or the whole review, or collect shards; print and write the decision.

    The ``--sarif`` and ``--summary`` files are removed first and always rewritten: a gate that
    fails (a git error such as an unknown ref, a bad artifact) writes an abort there, so what
    CI shows is never an older file, nor one the patch committed at that path. So does
    ``decision.json`` in ``--artifacts`` (or the ``--collect`` directory): an abort naming why,
    with the error's exit code (3, or 5 for a bad file; issue 17). Usage errors (64) write
    nothing."""
    from relconsole.engine.errors import BadInputError, RelconsoleError
    args.format = _format(args)
    args.json = args.format == "json"
    for output in (args.sarif, args.summary):
        if output is not None:
            _write(lambda: Path(output).unlink(missing_ok=True))
    try:
        return _collect(args) if args.collect is not None else _gate(args)
    except UsageError:
        raise
    except RelconsoleError as exc:
        from relconsole.engine.gate.pipeline import failure_payload, write_decision_file
        payload = failure_payload(exc)
        if isinstance(exc, BadInputError) and args.collect is None:  # a file of the repository: at its line
            payload["errors"] = [{"path": exc.path, "line": exc.line, "message": exc.message}]
        _outputs(args, payload)
        if args.format == "github":
            _print_annotations(payload)
        directory = args.collect if args.collect is not None else args.artifacts
        if directory is not None:
            try:
                _write(lambda: write_decision_file(payload, directory))
            except RelconsoleError:
                pass  # an unwritable directory: the error that stopped the gate is the one to report
        raise


def _gate(args) -> int:
    if args.runs < 1:
        raise UsageError("--runs must be at least 1")
    from relconsole.engine.relations.pool import prestart
    prestart()  # the judge's processes boot while the gate's modules import and the review loads
    from relconsole.engine.gate import pipeline as gate
    from relconsole.engine.gate.replay import replay
    from relconsole.engine.gate.review import load_review
    from relconsole.engine.gate.wslease.wslease import open_store
    from relconsole.cli.progress import progress_reporter
    with progress_reporter(sys.stderr, not args.json) as report:
        review = load_review(args.repo, args.base, args.head, args.today, args.oracle_from, deferred=True,
                             hash_progress=report.bytes)
        try:
            warn_uncommitted(review, "gate")
            shard = args.shard or replay.Shard()
            artifacts = (args.artifacts or replay.default_artifacts(review)).resolve()
            options = gate.GateOptions(artifacts, shard, args.runs, args.workspace, args.holder,
                                       args.ttl_seconds, args.fresh_worktrees)
            store = open_store(args.lease_url, review.repo.common_dir)
            try:
                part = gate.run_gate(review, store, options, report)
            finally:
                store.close()
            git_dir = Path(review.repo.common_dir)
        finally:
            review.close()
    written = _write(lambda: gate.write_part(part, artifacts))
    if shard.total > 1:  # this shard's say; the decision is collect's
        return _report(args, gate.shard_payload(part), written, None)
    payload = gate.collect(artifacts, _fences(args), part["head"], lambda _base: part["oracle"])
    return _report(args, payload, _write(lambda: gate.write_decision_file(payload, artifacts)), git_dir)


def _collect(args) -> int:
    from relconsole.cli.decide import git_dir_of
    from relconsole.engine.gate import pipeline as gate
    if args.shard is not None or args.artifacts is not None:
        raise UsageError("gate --collect DIR merges what the shards wrote: it takes no --shard or --artifacts")
    if not args.collect.is_dir():
        raise UsageError(f"{args.collect}: not a directory of gate artifacts")
    payload = gate.collect(args.collect, _fences(args), _head_of(args), lambda base: _commit_of(args.repo, base))
    written = _write(lambda: gate.write_decision_file(payload, args.collect))
    return _report(args, payload, written, git_dir_of(None if args.repo == "." else args.repo))


def _commit_of(repo: str, ref: str) -> str | None:
    """The full sha ``ref`` names in ``repo`` now (git with a scrubbed environment), or None."""
    from relconsole.engine.repo.gitio import run_git
    try:
        proc = run_git(repo, "rev-parse", "--verify", "--end-of-options", f"{ref}^{{commit}}", ok=None)
    except OSError:
        return None
    return proc.stdout.decode().strip() if proc.returncode == 0 else None


def _head_of(args) -> str | None:
    """The full sha of ``--head`` in ``--repo`` (the checkout collect runs in), or None when git
    cannot say (collect then aborts: the evidence cannot be matched to a commit). git runs as
    every engine call runs it (``gitio.run_git``: GIT_DIR and the other redirecting variables
    scrubbed), so an exported GIT_DIR cannot name another repository's HEAD."""
    return _commit_of(args.repo, args.head)


def _fences(args):
    from relconsole.engine.gate.wslease import wslease
    from relconsole.engine.gate.sheets import Fences
    return Fences(args.lease_url, os.environ.get(wslease.ENV_URL) or None)


def _write(write) -> Path:
    try:
        return write()
    except OSError as exc:
        from relconsole.engine.errors import RelconsoleError
        raise RelconsoleError(f"cannot write the gate's decision: {exc}") from None


def _outputs(args, payload: dict) -> None:
    """Write the SARIF and the Markdown summary ``args`` asks for."""
    import json
    from relconsole.engine.atomicfile import write_atomic
    from relconsole.engine.gate import cireport
    if args.sarif is not None:
        _write(lambda: write_atomic(args.sarif, json.dumps(cireport.sarif(payload), indent=2) + "\n"))
    if args.summary is not None:
        _write(lambda: write_atomic(args.summary, cireport.summary_markdown(payload)))


def _report(args, payload: dict, written: Path, git_dir: Path | None) -> int:
    """Print the decision (text or ``--json``), write SARIF and the summary when asked, record
    the gate history; return the exit code."""
    import json
    from relconsole.engine.gate import cireport
    _outputs(args, payload)
    if git_dir is not None and not args.no_history:
        from relconsole.engine.gate.pipeline import history_decisions
        from relconsole.engine.gate.report import record_decisions
        record_decisions(git_dir, history_decisions(payload))
    decided(int(payload["exit_code"]))  # before printing: a reader who leaves cannot change it
    if args.json:
        print(json.dumps(payload | {"decision_file": str(written)}, indent=2, default=str))
        return int(payload["exit_code"])
    if args.format == "github":
        _print_annotations(payload)
    else:
        for line in cireport.text_lines(payload):
            print(one_line(line) if line else "")
    print(f"{decision_line(payload['decision'], payload['reason'], int(payload['exit_code']))}  "
          f"exit {payload['exit_code']}  -> {one_line(str(written))}")
    return int(payload["exit_code"])


def _format(args) -> str:
    """The output format ``args`` ask for: ``--format``, or json for ``--json``; both given
    must agree (UsageError)."""
    if args.json and args.format not in (None, "json"):
        raise UsageError(f"--json and --format {args.format} ask for two outputs: give one")
    return "json" if args.json else args.format or "text"


def _print_annotations(payload: dict) -> None:
    """Print the workflow commands of ``payload`` (``annotations.annotations``: escaped there)."""
    from relconsole.engine.gate.annotations import annotations
    for line in annotations(payload):
        print(line)

