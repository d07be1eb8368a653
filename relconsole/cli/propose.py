"""CLI subcommand ``propose`` (SPEC §10): a model drafts candidates or seed rows into quarantine.

``relconsole propose --drafter CMD [--ticket FILE] [--seeds RELATION_ID] [--timeout S] [--json]``
builds a prompt (ticket, diff under review, input schemas, allowed output shape), pipes it
to CMD, validates what CMD prints, and commits only what validates into quarantine: one
``quarantine:`` commit onto the oracle branch (§9), built on a temporary index like every
console commit, so the checked-out branch and the user's work are untouched.
``--print-prompt`` prints the prompt and runs nothing.

Exit codes (§8): 0 every drafted item was committed; 1 at least one was rejected (the valid
ones are still committed); 3 the drafter failed (not found, timed out, non-zero exit, no
output, not YAML): nothing committed; 5 a bad ticket file (also a FIFO or device) or oracle
file, or an oracle branch whose quarantine directory or seeds file is a symlink or (seeds)
not JSON lines; 64 usage (an unknown or lease-reading ``--seeds`` relation, an empty
drafter command, no local oracle branch, a drafted path with uncommitted work where the
oracle branch is checked out).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (6 ms a start)

from relconsole.cli.options import review_options
from relconsole.engine.errors import EXIT_ABORT, EXIT_BAD_INPUT, EXIT_PASS, EXIT_REJECT, UsageError
from relconsole.engine.literal import literal, one_line
from relconsole.engine.defaults import DRAFTER_TIMEOUT_SECONDS

if TYPE_CHECKING:  # the commands import the engine: building the parser loads none of it
    from relconsole.engine.drafting.drafter import DrafterError
    from relconsole.engine.drafting.prompt import Prompt
    from relconsole.engine.gate.review import Review


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value <= 86400:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds in (0, 86400]")
    return value


def register(subparsers, commands: dict) -> None:
    """Add ``propose`` to ``subparsers`` (with the shared review options) and its handler
    to ``commands``."""
    parser = subparsers.add_parser(
        "propose", help="draft candidate relations or seed rows with a model into quarantine")
    parser.add_argument("--drafter", default=None, metavar="CMD",
                        help="command that reads the prompt on stdin and prints YAML "
                             "(split like a shell would, run without one), e.g. 'llm -m gpt-4o-mini'")
    parser.add_argument("--ticket", type=Path, default=None, metavar="FILE",
                        help="text of the ticket the patch is for, put in the prompt")
    parser.add_argument("--seeds", default=None, metavar="RELATION_ID",
                        help="draft input rows for this seeds relation instead of candidate relations")
    parser.add_argument("--timeout", type=_seconds, default=DRAFTER_TIMEOUT_SECONDS,
                        metavar="SECONDS",
                        help=f"stop the drafter after this long (default: {DRAFTER_TIMEOUT_SECONDS:g})")
    parser.add_argument("--print-prompt", action="store_true",
                        help="print the prompt and exit; run no drafter, write nothing")
    review_options(parser)
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    commands["propose"] = cmd_propose


def cmd_propose(args) -> int:
    """Run ``propose`` for parsed ``args``; return the §8 exit code (see the module doc)."""
    import json
    from relconsole.engine.drafting.drafter import DrafterError, drafter_argv, run_drafter
    from relconsole.engine.drafting.parse import drafted_items
    from relconsole.engine.drafting.prompt import candidate_prompt, read_ticket, seeds_prompt
    from relconsole.engine.drafting.quarantine import check_quarantine
    from relconsole.engine.gate.review import load_review
    if not args.drafter and not args.print_prompt:
        raise UsageError("propose needs --drafter CMD (or --print-prompt to see the prompt)")
    if args.drafter:
        drafter_argv(args.drafter)  # an unparsable command is a usage error up front
    ticket = read_ticket(args.ticket) if args.ticket is not None else None
    review = load_review(args.repo, args.base, args.head, args.today, args.oracle_from)
    with review:
        if review.errors:
            return _bad_oracle(args, review)
        if args.seeds is not None:
            prompt = seeds_prompt(review, args.seeds, ticket)
        else:
            prompt = candidate_prompt(review, ticket)
        if args.print_prompt:
            if args.json:
                print(json.dumps({"prompt": prompt.text, "prompt_bytes": len(prompt.text.encode("utf-8")),
                                  "diff": {"bytes_shown": prompt.diff_bytes, "bytes_total": prompt.diff_total,
                                           "truncated": prompt.diff_truncated}}, indent=2))
            else:
                sys.stdout.write(prompt.text)
            return EXIT_PASS
        check_quarantine(review, args.seeds)  # a symlinked quarantine: refused before the drafter runs
        try:
            run = run_drafter(args.drafter, prompt.text, review.root, args.timeout)
            items = drafted_items(run.stdout, seeds=args.seeds is not None)
        except DrafterError as exc:
            return _drafter_failed(args, exc)
        if args.seeds is not None:
            return _seeds(args, review, prompt, items)
        return _candidates(args, review, prompt, ticket, items)


def _bad_oracle(args, review: Review) -> int:
    import json
    if args.json:
        print(json.dumps({"errors": [{"path": e.path, "line": e.line, "message": e.message}
                                     for e in review.errors], "exit_code": EXIT_BAD_INPUT}, indent=2))
    for error in review.errors:
        print(f"relconsole: {one_line(error.one_line())}", file=sys.stderr)
    print("relconsole: the oracle has a bad file: drafts cannot be validated; nothing run, nothing written",
          file=sys.stderr)
    return EXIT_BAD_INPUT


def _drafter_failed(args, exc: DrafterError) -> int:
    import json
    if args.json:
        print(json.dumps({"error": {"message": exc.one_line(), "exit_code": EXIT_ABORT,
                                    "returncode": exc.returncode, "stderr_tail": exc.stderr_tail}},
                         indent=2))
    print(f"relconsole: {one_line(exc.one_line())}", file=sys.stderr)
    if exc.stderr_tail.strip():
        print("relconsole: the end of the drafter's stderr:", file=sys.stderr)
        for line in exc.stderr_tail.rstrip("\n").split("\n"):
            print(f"  | {literal(line)}", file=sys.stderr)
    return EXIT_ABORT


def _prompt_json(prompt: Prompt, args) -> dict:
    return {"drafter": args.drafter, "prompt_bytes": len(prompt.text.encode("utf-8")),
            "diff": {"bytes_shown": prompt.diff_bytes, "bytes_total": prompt.diff_total,
                     "truncated": prompt.diff_truncated}}


def _prompt_lines(prompt: Prompt, args) -> list[str]:
    from relconsole.engine.drafting.prompt import DIFF_LIMIT_BYTES
    lines = [f"drafter: {one_line(args.drafter)}"]
    if prompt.diff_truncated:
        lines.append(f"prompt: the diff was cut to {prompt.diff_bytes} of {prompt.diff_total} bytes "
                     f"(limit {DIFF_LIMIT_BYTES})")
    return lines


def _commit_json(result) -> dict | None:
    if result is None:
        return None
    return {"sha": result.sha, "branch": result.branch, "message": result.message, "paths": list(result.paths)}


def _commit_lines(result) -> list[str]:
    if result is None:
        return ["nothing committed"]
    subject = result.message.split("\n", 1)[0]
    return [f"committed {result.sha[:10]} on {one_line(result.branch)}: {one_line(subject)}",
            "  review it with: relconsole review (accept with a, delete with d)"]


def _candidates(args, review: Review, prompt: Prompt, ticket, items: list) -> int:
    import json
    from relconsole.engine.drafting.judge import commit_candidates, judge_candidates, provenance
    stamp = provenance(args.drafter, ticket, review)
    drafted = judge_candidates(review, items, stamp)
    result = commit_candidates(review, drafted, args.drafter)
    written = [d.path for d in drafted if d.written]
    code = EXIT_PASS if all(d.written for d in drafted) else EXIT_REJECT
    if args.json:
        print(json.dumps(_prompt_json(prompt, args) | {
            "provenance": stamp, "candidates": [d.to_json() for d in drafted],
            "written": written, "commit": _commit_json(result), "exit_code": code}, indent=2))
        return code
    lines = _prompt_lines(prompt, args)
    lines.append("provenance: drafted_by, drafted_at and source are relconsole's record "
                 "(the command it ran, when, from what), not the drafter's claim")
    for item in drafted:
        if item.written:
            lines.append(f"drafted   {one_line(item.path)}")
        else:
            lines.append(f"rejected  {one_line(item.id)}")
            lines += [f"          ✗ {one_line(reason)}" for reason in item.reasons]
        lines += [f"          · {one_line(note)}" for note in item.notes]
    lines += _commit_lines(result)
    print(literal("\n".join(lines)))
    return code


def _seeds(args, review: Review, prompt: Prompt, items: list) -> int:
    import json
    from relconsole.engine.drafting.judge import commit_seed_rows, judge_seed_rows
    rows = judge_seed_rows(review, args.seeds, items)
    committed = commit_seed_rows(review, args.seeds, rows, args.drafter)
    path, result = committed if committed is not None else (None, None)
    code = EXIT_PASS if all(r.valid for r in rows) else EXIT_REJECT
    if args.json:
        print(json.dumps(_prompt_json(prompt, args) | {
            "relation_id": args.seeds, "path": path, "rows": [r.to_json() for r in rows],
            "commit": _commit_json(result), "exit_code": code}, indent=2))
        return code
    lines = _prompt_lines(prompt, args)
    for row in rows:
        if row.valid:
            lines.append(f"drafted   {row.id}  {one_line(path)}:{row.line}  {one_line(row.text)}")
        else:
            lines.append(f"rejected  row {row.index}  {one_line(row.text)}")
            lines += [f"          ✗ {one_line(reason)}" for reason in row.reasons]
    lines += _commit_lines(result)
    print(literal("\n".join(lines)))
    return code
