"""CLI subcommands over the human-owned oracle files: ``validate`` (every oracle file, the
quarantine's candidates and drafted seed rows, §2, §10), ``init`` (a repository's first oracle,
one ``oracle: init`` commit), ``lease renew|status|history|rehash``
(dataset leases, §5), ``accept`` and ``delete`` (candidates and seed rows), ``freeze`` (a missed
relation, §6, §8 row 8) and ``ack`` (a review flag read, §9). Every change is one git commit
of one kind on the oracle branch (§9). Exit codes are §8's: 5 for a bad oracle file, 1 for a
refused rehash, 64 on misuse or an unknown id.
"""

from __future__ import annotations

import sys
TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (6 ms a start)

from relconsole.cli.options import date, review_command, review_options, seed
from relconsole.cli.reviewio import commit_payload, emit, errors_payload, load, uncommitted_oracle
from relconsole.engine.errors import (EXIT_ABORT, EXIT_BAD_INPUT, EXIT_PASS, EXIT_REJECT, EXIT_USAGE, BadInputError,
                                      CommitRefused, UsageError)
from relconsole.engine.literal import literal, one_line
from relconsole.engine.docsref import decision_row, see

if TYPE_CHECKING:  # the commands import what they need: `--help` and the parser load no engine
    from relconsole.engine.gate.review import Review


def register_validate(subparsers, commands: dict) -> None:
    """Add ``validate`` to ``subparsers`` and its handler to ``commands``."""
    validate = review_command(subparsers, "validate", "validate the oracle files and quarantine, and run every "
                                                      "relation once on the base (exit 5 on a bad file)")
    validate.add_argument("--static", action="store_true",
                          help="read the oracle files only: resolve no subject and run no relation (nothing "
                               "of the tree runs; a quick check, as for a hook)")
    validate.add_argument("--replay-seed", type=seed, default=None, metavar="SEED",
                          help="every relation's first run on the base replays this recorded run seed (the "
                               "'seed' of a run record: is a miss a patch met on the base too?)")
    commands["validate"] = cmd_validate


def register_init(subparsers, commands: dict) -> None:
    """Add ``init`` to ``subparsers`` and its handler to ``commands``."""
    init = subparsers.add_parser("init", help="write the first oracle of a repository (one oracle: init commit)")
    init.add_argument("--repo", default=".", help="the repository (default: the current folder)")
    init.add_argument("--base", default=None, help="the branch the oracle goes on (default: the checked-out one)")
    init.add_argument("--corpus", action="append", default=[], metavar="PATH",
                      help="a committed corpus (CSV with a header, or JSON lines) to lease; repeat for more")
    init.add_argument("--subject", action="append", default=[], metavar="MODULE:FUNCTION",
                      help="draft a candidate relation for this function into quarantine; repeat for more")
    init.add_argument("--today", type=date, default=None)
    init.add_argument("--json", action="store_true")
    commands["init"] = cmd_init


def register_lease(subparsers, commands: dict) -> None:
    """Add ``lease`` and its actions (renew, status, history, rehash) to ``subparsers`` and its
    handler to ``commands``."""
    lease = subparsers.add_parser("lease", help="dataset leases")
    lease_sub = lease.add_subparsers(dest="lease_command", required=True, parser_class=type(lease))
    renew = lease_sub.add_parser("renew", help="renew a lease you own (one lease: commit)")
    renew.add_argument("lease_id")
    renew.add_argument("--until", type=date, required=True)
    review_options(renew)
    renew.add_argument("--json", action="store_true")
    status = lease_sub.add_parser("status", help="state of every dataset lease")
    review_options(status)
    status.add_argument("--json", action="store_true")
    history = lease_sub.add_parser("history", help="a lease's changes on the oracle branch, from git (who, when, what)")
    history.add_argument("lease_id")
    review_options(history)
    history.add_argument("--json", action="store_true")
    rehash = lease_sub.add_parser("rehash", help="re-pin a drifted lease you own to its committed corpus "
                                                 "(without --confirm: show old and new digests; one lease: commit)")
    rehash.add_argument("lease_id")
    rehash.add_argument("--confirm", metavar="DIGEST", default=None,
                        help="the new digest the preview showed, typed or pasted: the explicit confirmation")
    review_options(rehash)
    rehash.add_argument("--json", action="store_true")
    commands["lease"] = cmd_lease


def register_accept_delete(subparsers, commands: dict) -> None:
    """Add ``accept`` and ``delete`` to ``subparsers`` and their handler to ``commands``."""
    for name, text in (("accept", "accept a candidate or drafted seed rows (catalog: commit)"),
                       ("delete", "delete a candidate or drafted seed rows (quarantine: commit)")):
        cmd = subparsers.add_parser(name, help=text)
        cmd.add_argument("item", nargs="+", help="candidate id, or a drafted seed row's id (row-…, validate lists them) or PATH:LINE")
        if name == "accept":
            cmd.add_argument("--override-unconfirmed", action="store_true",
                             help="accept candidates no second replay confirmed (recorded in the commit message)")
        review_options(cmd)
        cmd.add_argument("--json", action="store_true")
        commands[name] = cmd_accept_delete


def register_freeze(subparsers, commands: dict) -> None:
    """Add ``freeze`` to ``subparsers`` and its handler to ``commands``."""
    freeze = subparsers.add_parser("freeze", help="commit a freeze for a missed relation (freeze: commit)")
    freeze.add_argument("relation_id")
    freeze.add_argument("--reason", required=True)
    freeze.add_argument("--expires", type=date, default=None)
    freeze.add_argument("--without-replay", action="store_true",
                        help=f"override: freeze with no replay sheet saying freeze ({decision_row(8)}); the commit records it")
    review_options(freeze)
    freeze.add_argument("--json", action="store_true")
    commands["freeze"] = cmd_freeze


def register_ack(subparsers, commands: dict) -> None:
    """Add ``ack`` to ``subparsers`` and its handler to ``commands``."""
    ack = subparsers.add_parser("ack", help="acknowledge a review flag you have read (review: commit, oracle/acks.json)")
    ack.add_argument("flag_id", help="the flag's id, as relconsole flags prints it (a unique prefix of 6 or more)")
    ack.add_argument("--reason", required=True, help="what you checked in the flagged code")
    review_options(ack)
    ack.add_argument("--json", action="store_true")
    commands["ack"] = cmd_ack


def cmd_validate(args) -> int:
    """Exit 5 for a bad oracle file, a subject that does not resolve or a relation that does
    not hold on the base; 3 for a relation the machine could not judge (a module not
    installed); else 0, warnings included (README: The command line)."""
    from relconsole.engine.gate.confirmstate import load_candidate_states
    from relconsole.engine.gate.ownerhints import unmatched_patterns
    if args.static and args.replay_seed is not None:
        raise UsageError("--replay-seed replays the runs --static leaves out: give one of them")
    review = load(args)
    try:
        findings = [] if args.static or review.errors else _run_on_base(args, review)
        states = load_candidate_states(review)
        payload = {"errors": errors_payload(review), "static": bool(args.static),
                   "leases": [{"id": s.id, "source": s.source, "state": s.state, "reason": s.reason}
                              for s in review.leases],
                   "freezes": [{"relation_id": f.relation_id, "state": f.state, "why": f.why}
                               for f in review.freezes],
                   "candidates": [_candidate_payload(review, c) for c in review.candidates],
                   "seed_rows": [{"id": r.id, "key": r.key, "relation_id": r.relation_id, "valid": r.valid,
                                  "reasons": r.reasons} for r in review.seed_rows],
                   "relations": [f.to_json() for f in findings]}
        lines = [f"candidate {one_line(c.id)}: " + (f"valid · {states[c.path].state.replace('_', ' ')}" if c.valid
                                                    else "rejected: " + one_line("; ".join(c.reasons)))
                 for c in review.candidates]
        lines += [f"seed row {r.id} ({one_line(r.key)}): " + ("valid" if r.valid else "rejected: " + one_line("; ".join(r.reasons)))
                  for r in review.seed_rows]
        warnings = [f"relation {r.id} ({review.layout.catalog}:{r.line}) is named by no owner pattern: no touched "
                    "path runs it, only run --all (add the paths it guards to owners)"
                    for r in (review.catalog.unowned() if review.catalog else [])]
        warnings += uncommitted_oracle(review, "validate")
        warnings += _base_warnings(review, findings)
        warnings += unmatched_patterns(review)
        payload["warnings"] = warnings
        # its lease's own state is the report (lease status, the leases above): said, not warned
        lines += [f"note: {f.text(_on_base(review))}" for f in findings if f.state == "blocked"]
        faults = [f.text(_on_base(review)) for f in findings if f.state == "environment"]
        code = EXIT_BAD_INPUT if review.errors else EXIT_ABORT if faults else EXIT_PASS
        emit(args, payload, lines + [f"warning: {one_line(w)}" for w in warnings]
              or ([] if review.errors or faults else ["ok"]), review.errors, code)
        if not args.json:
            for fault in faults:
                print(f"relconsole: {one_line(fault)}", file=sys.stderr)
        return code
    finally:
        review.close()


def _on_base(review: Review) -> str:
    return f"on the base {one_line(review.base_ref)} {review.base_tip[:12]}"


def _run_on_base(args, review: Review) -> list:
    """Resolve every subject on the base (a relation that does not resolve is reported once,
    there), then run every other relation once on the base tip with the oracle overlaid
    (``holdcheck``): each one that misses every run, is vacuous or cannot be compared becomes
    a bad input file at its catalog line. Returns the findings (``holdcheck.Finding``)."""
    from relconsole.cli.progress import progress_reporter
    from relconsole.engine.gate.holdcheck import check_holds
    from relconsole.engine.gate.subjectcheck import unresolved_relations
    unresolved = unresolved_relations(review, review.candidates)
    review.errors.extend(unresolved.values())
    relations = [r for r in review.relations if r.id not in unresolved]
    with progress_reporter(sys.stderr, not args.json) as report:
        runnable = [r for r in relations if not review.blocked_reason(r)]
        findings = check_holds(review, relations, review.base_tip, review.oracle_dir,
                               report.results(len(runnable)) if runnable else None, replay_seed=args.replay_seed)
    review.errors.extend(BadInputError(review.layout.catalog, f.text(_on_base(review)), f.relation.line)
                         for f in findings if f.fails)
    return findings


def _base_warnings(review: Review, findings: list) -> list[str]:
    """A warning for each relation that missed on some runs of the base only: every patch it
    guards meets that miss, a freeze policy's matter rather than a bad file."""
    warnings = []
    for f in findings:
        if f.state == "intermittent":
            policy = ("its freeze policy lets a replay that sees the miss on both sides freeze it" if
                      f.relation.freeze.allowed else "give it a freeze policy (freeze: {allowed: true, max_days: 14, "
                      "min_reruns: 5}) so that a replay that sees the miss on both sides can freeze it, or fix it")
            warnings.append(f"{f.text(_on_base(review))}: every patch it guards meets this miss; {policy} "
                            f"({see('decision-table', 'the-base-holds')})")
    return warnings


def _candidate_payload(review: Review, candidate) -> dict:
    """A candidate for ``validate --json``: every rule's verdict, second-replay state, provenance."""
    state = review.candidate_states.get(candidate.path)
    return {"id": candidate.id, "path": candidate.path, "valid": candidate.valid, "reasons": candidate.reasons,
            "verdicts": [{"rule": v.rule, "ok": v.ok, "checked": v.checked, "reason": v.reason}
                         for v in candidate.verdicts],
            "replay_state": state.state if state else None, "replay_reason": state.reason if state else None,
            "provenance": candidate.provenance(), "notes": list(candidate.notes)}


def cmd_init(args) -> int:
    """One ``oracle: init`` commit on the base branch; 64 when the base has an oracle already."""
    from relconsole.engine.gate.review import today_from_env
    from relconsole.engine.oracle.bootstrap import init_oracle
    result = init_oracle(args.repo, args.base, args.today or today_from_env(), args.corpus, args.subject)
    emit(args, commit_payload(result.commit) | {"wrote": result.lines},
          [f"{result.commit.sha[:12]} on {one_line(result.commit.branch)}: {one_line(result.commit.message.splitlines()[0])}"]
          + [f"  {one_line(line)}" for line in result.lines])
    return EXIT_PASS


def cmd_lease(args) -> int:
    from relconsole.engine.gate import actions
    review = load(args)
    try:
        if args.lease_command == "status":
            rows = [{"id": s.id, "source": s.source, "state": s.state, "reason": s.reason,
                     "days_left": s.days_left} for s in review.leases]
            emit(args, {"leases": rows, "errors": errors_payload(review)},
                  [f"{r['id']}: {r['state']}  {one_line(r['reason'])}" for r in rows], review.errors)
            return EXIT_BAD_INPUT if review.errors else EXIT_PASS
        if args.lease_command == "history":
            return _lease_history(args, review)
        if args.lease_command == "rehash":
            return _lease_rehash(args, review)
        result = actions.renew_lease(review, args.lease_id, args.until)
        emit(args, commit_payload(result), [f"{result.sha[:12]} {result.message}"])
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
    emit(args, {"lease_id": args.lease_id, "events": [e.as_dict() for e in events]},
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
        emit(args, {"preview": preview.as_dict()}, [one_line(line) for line in shown])
        print(f"relconsole: {one_line(why)}", file=sys.stderr)
        return EXIT_REJECT if preview.refusal else EXIT_USAGE
    try:
        result = actions.rehash_lease(review, args.lease_id, args.confirm)
    except CommitRefused as exc:
        emit(args, {"preview": preview.as_dict(), "error": {"message": exc.one_line(), "exit_code": EXIT_REJECT}}, [])
        print(f"relconsole: {one_line(exc.one_line())}", file=sys.stderr)
        return EXIT_REJECT
    emit(args, commit_payload(result) | {"preview": preview.as_dict()}, [f"{result.sha[:12]} {result.message}"])
    return EXIT_PASS


def cmd_accept_delete(args) -> int:
    from relconsole.engine.gate import actions, ownerhints
    review = load(args)
    try:
        rows = [i for i in args.item if any(r.named_by(i) for r in review.seed_rows)]
        others = [i for i in args.item if i not in rows]
        if args.command == "accept":
            result = actions.accept(review, others, rows,
                                    unconfirmed_ok=others if args.override_unconfirmed else ())
        else:
            result = actions.delete(review, others, rows)
        hints = ownerhints.unowned_hints(review, others) if args.command == "accept" else []
        emit(args, commit_payload(result) | {"warnings": hints},
              [f"{result.sha[:12]} {literal(result.message)}"] + [f"warning: {one_line(h)}" for h in hints])
        return EXIT_PASS
    finally:
        review.close()


def cmd_freeze(args) -> int:
    from relconsole.engine.gate.reviewrun import run_review
    from relconsole.engine.gate import actions
    review = load(args)
    try:
        run_review(review, [args.relation_id])
        row = actions.proposed_freeze(review, args.relation_id, args.reason, args.expires, args.without_replay)
        result = actions.commit_freeze(review, row)
        emit(args, commit_payload(result) | {"row": row}, [f"{result.sha[:12]} {result.message}"])
        return EXIT_PASS
    finally:
        review.close()


def cmd_ack(args) -> int:
    """One ``review:`` commit acknowledging a review flag (§9); 64 for an unknown flag id."""
    from relconsole.engine.gate import actions
    review = load(args)
    try:
        if review.errors:
            emit(args, {"errors": errors_payload(review)}, [], review.errors)
            return EXIT_BAD_INPUT
        result = actions.acknowledge(review, args.flag_id, args.reason)
        emit(args, commit_payload(result),
              [f"{result.sha[:12]} on {one_line(result.branch)}: {one_line(result.message.splitlines()[0])}"])
        return EXIT_PASS
    finally:
        review.close()
