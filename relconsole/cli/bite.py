"""CLI subcommand ``bite``: mutate a relation's subject and say whether the relation catches
each mutation (does the relation bite?), and what caught it: the relation's own input, or only
an input drawn from it; a survivor says how many drawn inputs held. Exit 0 when it bites, 1
when it does not, 3 when it cannot be judged (blocked, or it misses unmutated), 5 for a bad
oracle file, 64 for an unknown relation (SPEC §8).
"""

from __future__ import annotations

from relconsole.cli.options import review_options
from relconsole.cli.reviewio import emit, errors_payload, load
from relconsole.engine.errors import EXIT_ABORT, EXIT_BAD_INPUT, EXIT_PASS, EXIT_REJECT
from relconsole.engine.literal import one_line


def register(subparsers, commands: dict) -> None:
    """Add ``bite`` to ``subparsers`` and its handler to ``commands``."""
    bite_cmd = subparsers.add_parser("bite", help="mutate a relation's subject: does the relation catch it?")
    bite_cmd.add_argument("relation_id")
    review_options(bite_cmd)
    bite_cmd.add_argument("--json", action="store_true", help="print JSON")
    commands["bite"] = cmd_bite


def cmd_bite(args) -> int:
    """Exit 0 when the relation bites, 1 when it does not, 3 when it cannot be judged
    (blocked, or it misses unmutated), 64 for an unknown relation."""
    from relconsole.engine.gate.bite.bite import bite
    review = load(args)
    try:
        if review.errors:
            emit(args, {"errors": errors_payload(review)}, [], review.errors, EXIT_BAD_INPUT)
            return EXIT_BAD_INPUT

        def show(result):
            if not args.json:
                print(f"{result.outcome:<8}  {one_line(result.label)}  {one_line(result.path)}:{result.line}  "
                      f"{one_line(result.how())}", flush=True)
        report = bite(review, args.relation_id, show)
        code = {True: EXIT_PASS, False: EXIT_REJECT, None: EXIT_ABORT}[report.bites]
        emit(args, report.to_json(), [*map(one_line, report.notes), one_line(report.verdict())], code=code)
        return code
    finally:
        review.close()
