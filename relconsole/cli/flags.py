"""CLI subcommand ``flags``: the patch review flags (SPEC §9) and the merge checklist.

``relconsole flags [--run] [--json]`` prints the review's decision made worse by the
checklist (a failed item is ``reject``, reason ``checklist:<key>``; any flag already made it
``reject``, reason ``review_flag:<name>``) and exits with that decision's §8 code: 5 on a
bad oracle file, 2 for a coverage gap when nothing worse. An ``unknown`` item (evidence not
there yet) does not fail.
"""

from __future__ import annotations


from relconsole.cli.options import review_options
from relconsole.cli.pipe import decided
from relconsole.engine.literal import counted, one_line
from relconsole.engine.docsref import doc_path

MARK = {"pass": "✓ pass   ", "fail": "✗ FAIL   ", "unknown": "? unknown"}


def register(subparsers, commands: dict) -> None:
    """Add ``flags`` to ``subparsers`` (with the shared review options) and its handler to ``commands``."""
    parser = subparsers.add_parser("flags", help="patch review flags and the merge checklist")
    review_options(parser)
    parser.add_argument("--run", action="store_true",
                        help="run the touched relations first, so the freeze-rerun item can be judged")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    commands["flags"] = cmd_flags


def cmd_flags(args) -> int:
    """Print the flags and checklist of the review ``args`` names; return the exit code."""
    import json
    from relconsole.engine.gate.checklist import merge_checklist
    from relconsole.engine.gate.flags.flaglevels import flag_kind
    from relconsole.engine.gate.review import load_review
    from relconsole.cli.review import gap_lines
    from relconsole.engine.gate import importrun
    from relconsole.engine.gate.reviewrun import run_review
    review = load_review(args.repo, args.base, args.head, args.today, args.oracle_from)
    try:
        if not review.errors:
            importrun.ensure(review)  # ownership follows imports (§3), as bind, run and gate bind
        if args.run and not review.errors:
            run_review(review)
        items = merge_checklist(review)
        decision = review.decision()
        code = decided(review.exit_code())  # before printing: a reader who leaves cannot change it
        if args.json:
            print(json.dumps({
                "base": review.base_ref, "merge_base": review.merge_base, "head": review.head_sha,
                "oracle_from": review.oracle_from, "unjudged": review.unjudged,
                "flags": [review.flag_json(f) for f in review.flags],
                "checklist": [i.to_json() for i in items],
                "split": [{"commit": o.commit, "path": o.path, "why": o.why} for o in review.split],
                "split_problem": review.split_problem,
                "decision": {"decision": decision.decision, "reason": decision.reason, "row": decision.row},
                "errors": [{"path": e.path, "line": e.line, "message": e.message} for e in review.errors],
                "exit_code": code}, indent=2))
            return code
        span = f"{review.merge_base[:10]}..{review.head_sha[:10]}"
        if review.oracle_from == "HEAD":
            print("oracle read from HEAD (--oracle-from HEAD): the patch's own catalog, leases and freezes")
        print(f"review flags in {span}: {len(review.flags) or 'none'}")
        for flag in review.flags:
            ack = review.acknowledgement(flag)
            level = review.flag_level(flag)
            mark = "✓" if ack is not None else "⚑" if level == "block" else "·"
            tag = "" if level == "block" else one_line(f"  [{level}: {flag_kind(flag)}]")
            print(f"  {mark} {one_line(review.flag_id(flag))}  {one_line(flag.name)}{tag}  {one_line(flag.where())}  "
                  f"{one_line(flag.detail)}")
            if ack is not None:
                print(f"      acknowledged by {one_line(ack.by)}: {one_line(ack.reason)}")
        if any(review.standing(f) for f in review.flags):
            print("  (a reviewer who has read a flagged line clears it: relconsole ack ID --reason TEXT)")
        if review.split or review.split_problem:
            where = doc_path("commits", "the-split-check")
            print(f"split check in {span} ({where}): " + (counted(len(review.split), "offence") if review.split
                                                      else f"not made: {one_line(review.split_problem)}"))
            for o in review.split:
                print(f"  ✗ {o.commit[:10]}  {one_line(o.path)}  {one_line(o.why)}")
        print("merge checklist:")
        for item in items:
            print(f"  {MARK[item.state]}  {item.title}")
            for line in item.evidence:
                print(f"               {one_line(line)}")
        for line in gap_lines(review):
            print(line)
        print(f"decision: {decision.decision}  ({decision.reason})")
        if decision.reason == "not_run" and not args.run:
            pending = [rid for rid in review.touched_relations() if rid not in review.results]
            print(f"  ({counted(len(pending), 'touched relation')} not run: give --run to run them, "
                  "or relconsole gate for the whole verdict)")
        for error in review.errors:
            print(f"relconsole: {one_line(error.one_line())}")
        return code
    finally:
        review.close()
