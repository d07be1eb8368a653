"""The command line: ``relconsole review|demo|bind|run|replay|confirm|propose|decide|stats|workspace|flags|ack|validate|lease|accept|delete|freeze|bite|check-split|screenshots``.

A thin front end over the engine: parse arguments (argparse, exit 64 on misuse), call
the engine, print text or ``--json``, and exit with the codes of SPEC §8.
"""
# PYTHON_ARGCOMPLETE_OK  (argcomplete's marker: this entry point answers shell completion)

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (6 ms a start)

from relconsole.cli import help as cli_help

from relconsole.cli import pipe as cli_pipe
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
from relconsole.cli.options import workspace_lease_options
from relconsole.engine.errors import (EXIT_ABORT, EXIT_BAD_INPUT, EXIT_GAP, EXIT_PASS, EXIT_REJECT,
                                      EXIT_USAGE, CommitRefused, RelconsoleError, UsageError)
from relconsole.engine.literal import counted, literal, one_line

if TYPE_CHECKING:  # the commands import what they need: `--help` and the parser load no engine
    import datetime as dt
    from relconsole.engine.gate.replayoptions import Shard
    from relconsole.engine.gate.review import Review


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse exits 2, which §8 gives to coverage gaps
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def _date(text: str) -> dt.date:
    import datetime as dt
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a YYYY-MM-DD date") from None


def _review_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--repo", default=".", help="repository to review (default: .)")
    parser.add_argument("--base", default=None, help="base ref the oracle is read from (default: main)")
    parser.add_argument("--head", default="HEAD", help="the patch (default: HEAD)")
    parser.add_argument("--today", type=_date, default=None,
                        help="the day leases and freezes are judged on (default: RELCONSOLE_TODAY or today)")
    parser.add_argument("--oracle-from", choices=["base", "HEAD"], default="base",
                        help="read the oracle from the base ref (default) or, explicitly, from HEAD")


def _keymap_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--keymap", default=None, metavar="PATH",
                        help="the console's keymap, a TOML file (default: $RELCONSOLE_KEYMAP, else "
                             "keymap.toml in your config folder; README: Keymaps)")


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

    review = sub.add_parser("review", help="open the review console")
    _review_options(review)
    _keymap_option(review)

    demo = sub.add_parser("demo", help="materialise the sample repository and open the console")
    demo.add_argument("--into", type=Path, default=None, help="directory to create (default: a temporary one)")
    demo.add_argument("--no-open", action="store_true", help="only materialise and print the path")
    demo.add_argument("--keep", action="store_true",
                      help="keep the temporary sample after the console quits (--into and --no-open always keep it)")
    demo.add_argument("--today", type=_date, default=None)
    _keymap_option(demo)

    for name, text in (("bind", "map touched paths to owners (exit 2 on a gap)"),
                       ("run", "run the touched relations with the counted freeze protocol"),
                       ("validate", "validate the oracle files and quarantine (exit 5 on a bad file)")):
        cmd = sub.add_parser(name, help=text)
        _review_options(cmd)
        cmd.add_argument("--json", action="store_true", help="print JSON")
    sub.choices["run"].add_argument("--all", action="store_true", help="run every relation, not only touched ones")
    sub.choices["run"].add_argument("--replay-seed", type=_seed, default=None, metavar="SEED",
                                    help="replay a recorded run: every relation's first run uses this seed "
                                         "(the 'seed' of a run record) instead of a new draw")
    sub.choices["run"].add_argument("--replay-hashseed", type=_seed, default=None, metavar="N",
                                    help="with --replay-seed: the subject's PYTHONHASHSEED too (run.hashseed "
                                         "of the record), for a subject whose output follows hash order")
    sub.choices["run"].add_argument("--relation", action="append", default=None, help="run only this relation (repeatable)")
    sub.choices["run"].add_argument("--shard", type=_shard, default=None, metavar="K/N",
                                    help="run only the K-th of N slices of the touched relations (a CI matrix)")

    replay_cmd = sub.add_parser("replay", help="replay missed relations on HEAD and the merge base (§7 sheets)")
    _review_options(replay_cmd)
    replay_cmd.add_argument("--runs", type=int, default=5, help="runs on each side (default: 5)")
    replay_cmd.add_argument("--shard", type=_shard, default=None, metavar="K/N",
                            help="replay only the K-th of N slices of the touched relations")
    replay_cmd.add_argument("--artifacts", type=_directory, default=None,
                            help="directory for the replay sheets (default: under the git directory)")
    workspace_lease_options(replay_cmd, "workspace lease id (default: host, repository, shard)")
    replay_cmd.add_argument("--fresh-worktrees", action="store_true",
                            help="add and remove new worktrees instead of reusing the pooled ones")
    replay_cmd.add_argument("--json", action="store_true", help="print JSON")

    lease = sub.add_parser("lease", help="dataset leases")
    lease_sub = lease.add_subparsers(dest="lease_command", required=True, parser_class=_Parser)
    renew = lease_sub.add_parser("renew", help="renew a lease you own (one lease: commit)")
    renew.add_argument("lease_id")
    renew.add_argument("--until", type=_date, required=True)
    _review_options(renew)
    renew.add_argument("--json", action="store_true")
    status = lease_sub.add_parser("status", help="state of every dataset lease")
    _review_options(status)
    status.add_argument("--json", action="store_true")
    history = lease_sub.add_parser("history", help="a lease's changes on the oracle branch, from git (who, when, what)")
    history.add_argument("lease_id")
    _review_options(history)
    history.add_argument("--json", action="store_true")
    rehash = lease_sub.add_parser("rehash", help="re-pin a drifted lease you own to its committed corpus "
                                                 "(without --confirm: show old and new digests; one lease: commit)")
    rehash.add_argument("lease_id")
    rehash.add_argument("--confirm", metavar="DIGEST", default=None,
                        help="the new digest the preview showed, typed or pasted: the explicit confirmation")
    _review_options(rehash)
    rehash.add_argument("--json", action="store_true")

    for name, text in (("accept", "accept a candidate or drafted seed rows (catalog: commit)"),
                       ("delete", "delete a candidate or drafted seed rows (quarantine: commit)")):
        cmd = sub.add_parser(name, help=text)
        cmd.add_argument("item", nargs="+", help="candidate id, or a drafted seed row's id (row-…, validate lists them) or PATH:LINE")
        if name == "accept":
            cmd.add_argument("--override-unconfirmed", action="store_true",
                             help="accept candidates no second replay confirmed (recorded in the commit message)")
        _review_options(cmd)
        cmd.add_argument("--json", action="store_true")

    freeze = sub.add_parser("freeze", help="commit a freeze for a missed relation (freeze: commit)")
    freeze.add_argument("relation_id")
    freeze.add_argument("--reason", required=True)
    freeze.add_argument("--expires", type=_date, default=None)
    freeze.add_argument("--without-replay", action="store_true",
                        help="override: freeze with no replay sheet saying freeze (§8 row 8); the commit records it")
    _review_options(freeze)
    freeze.add_argument("--json", action="store_true")

    init = sub.add_parser("init", help="write the first oracle of a repository (one oracle: init commit)")
    init.add_argument("--repo", default=".", help="the repository (default: the current folder)")
    init.add_argument("--base", default=None, help="the branch the oracle goes on (default: the checked-out one)")
    init.add_argument("--corpus", action="append", default=[], metavar="PATH",
                      help="a committed corpus (CSV with a header, or JSON lines) to lease; repeat for more")
    init.add_argument("--subject", action="append", default=[], metavar="MODULE:FUNCTION",
                      help="draft a candidate relation for this function into quarantine; repeat for more")
    init.add_argument("--today", type=_date, default=None)
    init.add_argument("--json", action="store_true")

    ack = sub.add_parser("ack", help="acknowledge a review flag you have read (review: commit, oracle/acks.json)")
    ack.add_argument("flag_id", help="the flag's id, as relconsole flags prints it (a unique prefix of 6 or more)")
    ack.add_argument("--reason", required=True, help="what you checked in the flagged code")
    _review_options(ack)
    ack.add_argument("--json", action="store_true")

    bite_cmd = sub.add_parser("bite", help="mutate a relation's subject: does the relation catch it?")
    bite_cmd.add_argument("relation_id")
    _review_options(bite_cmd)
    bite_cmd.add_argument("--json", action="store_true", help="print JSON")

    shots = sub.add_parser("screenshots", help="regenerate screenshots/*.svg from the sample repository")
    shots.add_argument("--out", type=Path, default=Path("screenshots"))
    split = sub.add_parser("check-split", help="fail when a commit mixes a protected path with others, or two kinds (§9)")
    split.add_argument("range", nargs="?", default=None, help="BASE..HEAD")
    split.add_argument("--staged", action="store_true", help="check the staged paths (the pre-commit hook)")
    split.add_argument("--repo", default=".", help="repository (default: .)")
    split.add_argument("--json", action="store_true", help="print JSON")
    register_workspace(sub)
    register_decide(sub, COMMANDS)
    register_flags(sub, COMMANDS, _review_options)
    register_propose(sub, COMMANDS, _review_options)
    register_confirm(sub, COMMANDS, _review_options)
    register_schema(sub, COMMANDS)
    register_gate(sub, COMMANDS, _review_options, _shard, _directory)
    register_completion(sub, COMMANDS)
    return cli_help.apply(parser)


def _directory(text: str) -> Path:
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty path is not a directory")
    return Path(text)


def _shard(text: str) -> "Shard":
    from relconsole.engine.gate.replayoptions import Shard
    try:
        return Shard.parse(text)
    except UsageError as exc:
        raise argparse.ArgumentTypeError(exc.one_line()) from None


def _seed(text: str) -> int:
    """A recorded run seed: a whole number from 0 (what ``run --json`` shows as ``seed``)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a run seed (a whole number)") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is not a run seed: seeds are 0 or more")
    return value


def _load(args, deferred: bool = False) -> Review:
    from relconsole.cli.progress import progress_reporter
    from relconsole.engine.gate.review import load_review
    with progress_reporter(sys.stderr, not getattr(args, "json", False)) as report:  # big corpora hashing
        return load_review(args.repo, args.base, args.head, args.today, args.oracle_from, hash_progress=report.bytes,
                           deferred=deferred)


def _emit(args, payload: dict, lines: list[str], errors=(), code: int | None = None) -> None:
    """Print ``payload`` as JSON (``json.dumps`` escapes every control), or ``lines`` as text
    through ``literal`` (a commit message carries drafted text; issue 18), with each bad file
    on stderr. ``code`` is the command's decision (§8), recorded first so that a reader who
    leaves mid-output cannot change the exit code (issue 18)."""
    import json
    if code is not None:
        cli_pipe.decided(code)
    if getattr(args, "json", False):
        print(json.dumps(payload, indent=2, default=str))
        return
    for line in lines:
        print(literal(line))
    for error in errors:
        print(f"relconsole: {one_line(error.one_line())}", file=sys.stderr)


def _errors_payload(review: Review) -> list[dict]:
    return [{"path": e.path, "line": e.line, "message": e.message} for e in review.errors]


def cmd_bind(args) -> int:
    from relconsole.engine.gate import bindfacts
    if bindfacts.enabled():  # an oracle commit bound before: its facts, without the full load
        known = bindfacts.bind_from_facts(args.repo, args.base, args.head, args.today, args.oracle_from)
        if known is not None:
            return _print_bind(args, known)
    from relconsole.engine.gate import importrun
    review = _load(args, deferred=True)  # ownership needs no flags, quarantine or split check
    try:
        bindfacts.save(review)
        if not review.errors:
            importrun.ensure(review)
        return _print_bind(args, review)
    finally:
        review.close()


def _print_bind(args, review) -> int:
    """Print ``bind``'s rows of ``review`` (a Review, or ``bindfacts``' answer: ``base_ref``,
    ``merge_base``, ``head_sha``, ``bindings``, ``errors``); returns the §8 exit code."""
    gaps = [b for b in review.bindings if b.state == "gap"]
    code = EXIT_BAD_INPUT if review.errors else EXIT_GAP if gaps else EXIT_PASS
    if args.json:
        paths = [{"status": b.touched.status, "path": b.path, "old_path": b.touched.old_path,
                  "state": b.state, "pattern": b.pattern, "relations": list(b.relations),
                  "via_import": list(b.via_import)}
                 for b in review.bindings]
        payload = {"base": review.base_ref, "merge_base": review.merge_base, "head": review.head_sha,
                   "paths": paths, "gaps": [b.path for b in gaps],
                   "errors": [{"path": e.path, "line": e.line, "message": e.message} for e in review.errors]}
        _emit(args, payload, [], review.errors, code)
        return code
    cli_pipe.decided(code)
    if review.bindings:  # one write: 100,000 lines cost 0.6 s as a print and a literal() each
        print("\n".join(_binding_lines(review.bindings)))
    _emit(args, {}, [], review.errors)
    return code


def _binding_lines(bindings) -> list[str]:
    """``bind``'s text lines, ``STATUS  PATH  STATE[  RELATIONS][  (via import: ...)]``, each
    what ``literal`` makes of it: the path through ``one_line`` (its newlines and tabs shown as
    ``\\n`` and ``\\t``; a printable path has no character ``literal`` escapes, so it is
    its own ``one_line``), the rest through ``literal``, made once per (status, state,
    relations, via) (``literal`` works character by character: the parts' escapes are the
    line's)."""
    tails: dict = {}
    out = []
    append = out.append
    for b in bindings:
        key = (b.touched.status, b.state, b.relations, b.via_import)
        parts = tails.get(key)
        if parts is None:
            parts = tails[key] = (literal(b.touched.status + "  "), literal(
                "  " + b.state + (f"  {', '.join(b.relations)}" if b.relations else "")
                + (f"  (via import: {', '.join(b.via_import)})" if b.via_import else "")))
        path = b.touched.path
        append(parts[0] + (path if path.isprintable() else one_line(path)) + parts[1])
    return out


def cmd_run(args) -> int:
    from relconsole.engine.gate import importrun
    from relconsole.engine.gate.report import run_payload
    from relconsole.engine.gate.review import finish_review, load_review
    from relconsole.engine.gate.reviewrun import run_review
    from relconsole.engine.relations.pool import prestart
    from relconsole.cli.progress import progress_reporter
    prestart()  # the judge's processes boot while the review loads
    with progress_reporter(sys.stderr, not args.json) as report:
        review = load_review(args.repo, args.base, args.head, args.today, args.oracle_from, deferred=True,
                             hash_progress=report.bytes)
    try:
        if review.errors:
            finish_review(review)  # every bad file in one report
            _emit(args, {"errors": _errors_payload(review)}, [], review.errors, EXIT_BAD_INPUT)
            return EXIT_BAD_INPUT
        ids = args.relation or ([r.id for r in review.relations] if args.all else None)
        if ids is None:
            importrun.ensure(review)  # ownership follows imports (§3)
        if args.shard is not None:
            ids = args.shard.select(ids if ids is not None else review.touched_relations())
        if args.replay_hashseed is not None and args.replay_seed is None:
            raise UsageError("--replay-hashseed replays a recorded run: give its --replay-seed too")
        # the flags, the quarantine and the patch's catalog are read while the workers judge
        with progress_reporter(sys.stderr, not args.json) as report:
            total = len(ids if ids is not None else review.touched_relations())
            results = run_review(review, ids, report.results(total), replay_seed=args.replay_seed,
                                 replay_hashseed=args.replay_hashseed, meanwhile=lambda: finish_review(review))
        if review.errors:  # a bad quarantine file, found while the relations ran
            _emit(args, {"errors": _errors_payload(review)}, [], review.errors, EXIT_BAD_INPUT)
            return EXIT_BAD_INPUT
        # the PR's decision, as gate, flags, the plugin and the console make it; --relation asks
        # only about the relations named
        judged = None if args.relation is None and args.shard is None and not args.all else ids
        decision = _worst_of(results) if args.relation else review.decision(judged)
        payload = run_payload(review, results, decision)
        lines = [f"{r.relation_id}: {r.verdict.decision.upper()}  {one_line(r.summary)}" for r in results]
        lines.append(f"decision: {decision.decision}  ({decision.reason})")
        code = decision.exit_code if args.relation else review.exit_code(judged)  # a coverage gap is exit 2 (§8)
        _emit(args, payload, lines, code=code)
        return code
    finally:
        review.close()


def _worst_of(results):
    from relconsole.engine.decision import worst
    return worst([r.verdict for r in results])


def cmd_validate(args) -> int:
    from relconsole.engine.gate.confirmstate import load_candidate_states
    from relconsole.engine.gate.subjectcheck import unresolved_subjects
    review = _load(args)
    try:
        if not review.errors:
            # every subject resolves on the base (§3), and every candidate's (§10)
            review.errors.extend(unresolved_subjects(review, review.candidates))
        states = load_candidate_states(review)
        payload = {"errors": _errors_payload(review),
                   "leases": [{"id": s.id, "source": s.source, "state": s.state, "reason": s.reason}
                              for s in review.leases],
                   "freezes": [{"relation_id": f.relation_id, "state": f.state, "why": f.why}
                               for f in review.freezes],
                   "candidates": [_candidate_payload(review, c) for c in review.candidates],
                   "seed_rows": [{"id": r.id, "key": r.key, "relation_id": r.relation_id, "valid": r.valid,
                                  "reasons": r.reasons} for r in review.seed_rows]}
        lines = [f"candidate {one_line(c.id)}: " + (f"valid · {states[c.path].state.replace('_', ' ')}" if c.valid
                                                    else "rejected: " + one_line("; ".join(c.reasons)))
                 for c in review.candidates]
        lines += [f"seed row {r.id} ({one_line(r.key)}): " + ("valid" if r.valid else "rejected: " + one_line("; ".join(r.reasons)))
                  for r in review.seed_rows]
        warnings = [f"relation {r.id} ({review.layout.catalog}:{r.line}) is named by no owner pattern: no touched "
                    "path runs it, only run --all (add the paths it guards to owners)"
                    for r in (review.catalog.unowned() if review.catalog else [])]
        payload["warnings"] = warnings
        code = EXIT_BAD_INPUT if review.errors else EXIT_PASS
        _emit(args, payload, lines + [f"warning: {one_line(w)}" for w in warnings]
              or ([] if review.errors else ["ok"]), review.errors, code)
        return code
    finally:
        review.close()


def _candidate_payload(review: Review, candidate) -> dict:
    """A candidate for ``validate --json``: every rule's verdict, second-replay state, provenance."""
    state = review.candidate_states.get(candidate.path)
    return {"id": candidate.id, "path": candidate.path, "valid": candidate.valid, "reasons": candidate.reasons,
            "verdicts": [{"rule": v.rule, "ok": v.ok, "checked": v.checked, "reason": v.reason}
                         for v in candidate.verdicts],
            "replay_state": state.state if state else None, "replay_reason": state.reason if state else None,
            "provenance": candidate.provenance(), "notes": list(candidate.notes)}


def _commit_payload(result) -> dict:
    return {"commit": result.sha, "branch": result.branch, "kind": result.kind,
            "message": result.message, "paths": list(result.paths)}


def cmd_lease(args) -> int:
    from relconsole.engine.gate import actions
    review = _load(args)
    try:
        if args.lease_command == "status":
            rows = [{"id": s.id, "source": s.source, "state": s.state, "reason": s.reason,
                     "days_left": s.days_left} for s in review.leases]
            _emit(args, {"leases": rows, "errors": _errors_payload(review)},
                  [f"{r['id']}: {r['state']}  {one_line(r['reason'])}" for r in rows], review.errors)
            return EXIT_BAD_INPUT if review.errors else EXIT_PASS
        if args.lease_command == "history":
            return _lease_history(args, review)
        if args.lease_command == "rehash":
            return _lease_rehash(args, review)
        result = actions.renew_lease(review, args.lease_id, args.until)
        _emit(args, _commit_payload(result), [f"{result.sha[:12]} {result.message}"])
        return EXIT_PASS
    finally:
        review.close()


def _lease_history(args, review: Review) -> int:
    """``lease history``: one line per commit that changed the manifest, newest first."""
    from relconsole.engine.gate.leasehistory import lease_history
    events = lease_history(review, args.lease_id)
    lines = []
    for e in events:
        change = ""
        if e.expires_before != e.expires_after:
            change += f"  expires {e.expires_before or '-'} -> {e.expires_after or '-'}"
        if e.sha256_before != e.sha256_after:
            change += f"  sha256 {(e.sha256_before or '-')[:12]} -> {(e.sha256_after or '-')[:12]}"
        lines.append(one_line(f"{e.committed.isoformat(sep=' ')}  {e.sha[:12]}  {e.kind:<8}  by {e.who}{change}"
                              + (f"  ({e.note})" if e.note else "")))
    _emit(args, {"lease_id": args.lease_id, "events": [e.as_dict() for e in events]},
          lines or [f"{args.lease_id}: no commit changed its manifest"])
    return EXIT_PASS


def _lease_rehash(args, review: Review) -> int:
    """``lease rehash``: the preview (exit 64 asking for --confirm), or the commit; a refusal exits 1."""
    from relconsole.engine.gate import actions
    from relconsole.engine.oracle.rehash import rehash_preview
    preview = rehash_preview(review, args.lease_id)
    shown = [f"lease {preview.lease_id} ({preview.manifest}): {preview.state}  {preview.reason}",
             f"  corpus     {preview.corpus}  {preview.size_bytes if preview.size_bytes is not None else '-'} bytes"
             f"  from {preview.digest_source}",
             f"  modified   {preview.mtime.isoformat(timespec='seconds') if preview.mtime else '-'}"
             + (f"; last changed in {preview.corpus_commit.sha[:12]} by {preview.corpus_commit.author_name} "
                f"<{preview.corpus_commit.author_email}> at {preview.corpus_commit.committed.isoformat()}"
                if preview.corpus_commit else ""),
             *([f"  note       {preview.note}"] if preview.note else []),
             f"  old sha256 {preview.old_sha256 or '-'}",
             f"  new sha256 {preview.new_sha256 or '-'}",
             f"  confirmer  {preview.confirmer or '-'}"]
    if preview.refusal or args.confirm is None:
        why = preview.refusal or f"to re-pin, run again with --confirm {preview.new_sha256}"
        _emit(args, {"preview": preview.as_dict()}, [one_line(line) for line in shown])
        print(f"relconsole: {one_line(why)}", file=sys.stderr)
        return EXIT_REJECT if preview.refusal else EXIT_USAGE
    try:
        result = actions.rehash_lease(review, args.lease_id, args.confirm)
    except CommitRefused as exc:
        _emit(args, {"preview": preview.as_dict(), "error": {"message": exc.one_line(), "exit_code": EXIT_REJECT}}, [])
        print(f"relconsole: {one_line(exc.one_line())}", file=sys.stderr)
        return EXIT_REJECT
    _emit(args, _commit_payload(result) | {"preview": preview.as_dict()}, [f"{result.sha[:12]} {result.message}"])
    return EXIT_PASS


def cmd_accept_delete(args) -> int:
    from relconsole.engine.gate import actions, ownerhints
    review = _load(args)
    try:
        rows = [i for i in args.item if any(r.named_by(i) for r in review.seed_rows)]
        others = [i for i in args.item if i not in rows]
        if args.command == "accept":
            result = actions.accept(review, others, rows,
                                    unconfirmed_ok=others if args.override_unconfirmed else ())
        else:
            result = actions.delete(review, others, rows)
        hints = ownerhints.unowned_hints(review, others) if args.command == "accept" else []
        _emit(args, _commit_payload(result) | {"warnings": hints},
              [f"{result.sha[:12]} {literal(result.message)}"] + [f"warning: {one_line(h)}" for h in hints])
        return EXIT_PASS
    finally:
        review.close()


def cmd_freeze(args) -> int:
    from relconsole.engine.gate.reviewrun import run_review
    from relconsole.engine.gate import actions
    review = _load(args)
    try:
        run_review(review, [args.relation_id])
        row = actions.proposed_freeze(review, args.relation_id, args.reason, args.expires, args.without_replay)
        result = actions.commit_freeze(review, row)
        _emit(args, _commit_payload(result) | {"row": row}, [f"{result.sha[:12]} {result.message}"])
        return EXIT_PASS
    finally:
        review.close()


def cmd_init(args) -> int:
    """One ``oracle: init`` commit on the base branch; 64 when the base has an oracle already."""
    from relconsole.engine.gate.review import today_from_env
    from relconsole.engine.oracle.bootstrap import init_oracle
    result = init_oracle(args.repo, args.base, args.today or today_from_env(), args.corpus, args.subject)
    _emit(args, _commit_payload(result.commit) | {"wrote": result.lines},
          [f"{result.commit.sha[:12]} on {one_line(result.commit.branch)}: {one_line(result.commit.message.splitlines()[0])}"]
          + [f"  {one_line(line)}" for line in result.lines])
    return EXIT_PASS


def cmd_ack(args) -> int:
    """One ``review:`` commit acknowledging a review flag (§9); 64 for an unknown flag id."""
    from relconsole.engine.gate import actions
    review = _load(args)
    try:
        if review.errors:
            _emit(args, {"errors": _errors_payload(review)}, [], review.errors)
            return EXIT_BAD_INPUT
        result = actions.acknowledge(review, args.flag_id, args.reason)
        _emit(args, _commit_payload(result),
              [f"{result.sha[:12]} on {one_line(result.branch)}: {one_line(result.message.splitlines()[0])}"])
        return EXIT_PASS
    finally:
        review.close()


def cmd_bite(args) -> int:
    """Exit 0 when the relation bites, 1 when it does not, 3 when it cannot be judged
    (blocked, or it misses unmutated), 64 for an unknown relation."""
    from relconsole.engine.gate.bite import bite
    review = _load(args)
    try:
        if review.errors:
            _emit(args, {"errors": _errors_payload(review)}, [], review.errors, EXIT_BAD_INPUT)
            return EXIT_BAD_INPUT

        def show(result):
            if not args.json:
                print(f"{result.outcome:<8}  {one_line(result.label)}  {one_line(result.path)}:{result.line}", flush=True)
        report = bite(review, args.relation_id, show)
        code = {True: EXIT_PASS, False: EXIT_REJECT, None: EXIT_ABORT}[report.bites]
        _emit(args, report.to_json(), [*map(one_line, report.notes), one_line(report.verdict())], code=code)
        return code
    finally:
        review.close()


def cmd_replay(args) -> int:
    """Exit with the worst §8 decision of the sheets; 3 when the workspace lease is held or lost."""
    from relconsole.cli.progress import progress_reporter
    from relconsole.engine.gate import importrun
    from relconsole.engine.gate.report import replay_lines, replay_payload
    from relconsole.engine.gate.replay import replay
    from relconsole.engine.gate.replayoptions import ReplayOptions, Shard
    from relconsole.engine.gate.wslease import open_store
    review = _load(args)
    try:
        if review.errors:
            _emit(args, {"errors": _errors_payload(review)}, [], review.errors, EXIT_BAD_INPUT)
            return EXIT_BAD_INPUT
        importrun.ensure(review)
        options = ReplayOptions(args.runs, args.workspace, args.holder, args.ttl_seconds,
                                args.artifacts, args.shard or Shard(), args.fresh_worktrees)
        store = open_store(args.lease_url, review.repo.common_dir)
        try:
            with progress_reporter(sys.stderr, not args.json) as report:
                outcome = replay(review, store, options, report.replay)
        finally:
            store.close()
        overall = outcome.overall()  # the gate history is decide's: CI runs decide over the sheets
        _emit(args, replay_payload(outcome), replay_lines(outcome), code=overall.exit_code)
        return overall.exit_code
    finally:
        review.close()


def cmd_check_split(args) -> int:
    """Exit 1 with one line per offending commit and path, 0 when every commit keeps §9."""
    from relconsole.engine.repo import gitio
    from relconsole.engine.repo import splitcheck
    if bool(args.range) == bool(args.staged):
        raise UsageError("check-split takes a BASE..HEAD range or --staged")
    if args.range:
        _refuse_half_range(args.range)
    repo = gitio.open_repo(args.repo)
    root = repo.working_tree_dir or repo.git_dir  # a bare repository has history, no work tree
    if args.staged and Path(repo.git_dir, "MERGE_HEAD").exists():
        print("relconsole: concluding a merge: check the range once it is committed "
              "(check-split judges a merge by what it adds beyond its parents)", file=sys.stderr)
        return EXIT_PASS
    if args.staged:
        paths, found = splitcheck.staged_check(root)
        checked = f"the staged commit ({counted(paths, 'path')})"
    else:
        commits, found = splitcheck.check_range(root, args.range)
        checked = f"{counted(commits, 'commit')} in {one_line(args.range)}"
    payload = {"range": args.range, "staged": bool(args.staged), "commits_checked": 1 if args.staged else commits,
               "offences": [{"commit": o.commit, "path": o.path, "why": o.why} for o in found]}
    code = EXIT_REJECT if found else EXIT_PASS
    lines = [f"{o.commit[:12]} {one_line(o.path)}: {one_line(o.why)}" for o in found]
    _emit(args, payload, lines or [f"split check (§9): {checked} checked, no offence"],
          code=code)
    if found and not args.json:  # stdout stays one line per offence, for scripts
        print(f"relconsole: split check (§9): {checked} checked, {counted(len(found), 'offence')}", file=sys.stderr)
    return code


def _refuse_half_range(spec: str) -> None:
    """UsageError (64) for a range with an empty or blank side: ``"..HEAD"`` is what the
    README's ``"$(git merge-base …)..HEAD"`` becomes when merge-base fails (a shallow CI
    clone), and git reads it as HEAD..HEAD: no commit checked, a pass (new-user trial)."""
    sides = spec.split("...") if "..." in spec else spec.split("..")
    if len(sides) == 2 and not all(side.strip() and side == side.strip() for side in sides):
        raise UsageError(f"check-split: {one_line(spec)!r} has an empty or blank side: give both, "
                         f"as in \"$(git merge-base origin/main HEAD)..HEAD\" (did git merge-base fail? "
                         f"a shallow clone needs fetch-depth: 0)")


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
    app = ReviewApp(repo=args.repo, base_ref=args.base, head_ref=args.head, today=args.today,
                    oracle_from=args.oracle_from, keymap=args.keymap)
    return _console_exit(app)


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


COMMANDS = {"bind": cmd_bind, "run": cmd_run, "validate": cmd_validate, "lease": cmd_lease,
            "accept": cmd_accept_delete, "delete": cmd_accept_delete, "freeze": cmd_freeze, "ack": cmd_ack, "init": cmd_init,
            "bite": cmd_bite, "replay": cmd_replay, "workspace": cmd_workspace,
            "check-split": cmd_check_split, "review": cmd_review, "demo": cmd_demo, "screenshots": cmd_screenshots}


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
