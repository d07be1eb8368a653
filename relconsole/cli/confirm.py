"""CLI subcommand ``confirm``: the second replay of a quarantine candidate (SPEC §10).

``relconsole confirm CANDIDATE_ID [--json] [--lease-url URL] [--holder NAME] [--ttl-seconds S]
[--workspace W] [--runs N] [--first-only]`` plus the review options. Exit codes (§8): 0 when
the candidate is confirmed; 1 (reject) when the two replays disagree and it is discarded
(one ``quarantine:`` commit), or when they agree but miss on the base (not confirmed: as a
relation it would fail code that is not broken); 4 (hold) when only the first replay was
recorded (``--first-only``), or when the base misses because it lacks the subject (code the
patch adds: accept it once the patch has merged); 3 (abort) when another holder has the workspace lease or it was lost;
5 when an oracle file is bad; 64 for an unknown or rejected candidate or misuse.
"""

from __future__ import annotations

import sys
TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (6 ms a start)

from relconsole.cli.pipe import decided
from relconsole.cli.options import review_options, workspace_lease_options
from relconsole.engine.defaults import CONFIRM_RUNS as DEFAULT_RUNS
from relconsole.engine.defaults import CONFIRM_SIDES as SIDES
from relconsole.engine.errors import EXIT_BAD_INPUT
from relconsole.engine.literal import one_line

if TYPE_CHECKING:  # imported by the command itself: the parser must not load the engine
    from relconsole.engine.gate.confirm import ConfirmOutcome


def register(subparsers, commands: dict) -> None:
    """Add ``confirm`` to ``subparsers`` (with the shared review options) and its handler to ``commands``."""
    parser = subparsers.add_parser("confirm", help="second replay of a quarantine candidate: confirm or discard it")
    parser.add_argument("candidate_id", help="the candidate's id (or its path under the quarantine directory)")
    review_options(parser)
    parser.add_argument("--runs", type=int, default=DEFAULT_RUNS,
                        help=f"runs on each side in each replay (default: {DEFAULT_RUNS})")
    workspace_lease_options(parser, "workspace lease id (default: this repository's replay workspace "
                                    "plus ':confirm')")
    parser.add_argument("--first-only", action="store_true",
                        help="record the first replay only (exit 4: a second replay is still required)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    commands["confirm"] = cmd_confirm


def cmd_confirm(args) -> int:
    """Confirm the candidate ``args`` names; print the outcome; return the §8 exit code."""
    import json
    from relconsole.cli.progress import progress_reporter
    from relconsole.engine.gate.confirm import confirm_candidate
    from relconsole.engine.gate.confirmrun import ConfirmOptions
    from relconsole.engine.gate.review import load_review
    from relconsole.engine.gate.wslease.wslease import open_store
    with progress_reporter(sys.stderr, not args.json) as report:  # big corpora hashing
        review = load_review(args.repo, args.base, args.head, args.today, args.oracle_from,
                             hash_progress=report.bytes)
    try:
        if review.errors:
            if args.json:
                print(json.dumps({"errors": [{"path": e.path, "line": e.line, "message": e.message}
                                             for e in review.errors]}, indent=2))
            for error in review.errors:
                print(f"relconsole: {one_line(error.one_line())}", file=sys.stderr)
            return EXIT_BAD_INPUT
        options = ConfirmOptions(args.runs, args.workspace, args.holder, args.ttl_seconds, args.lease_url,
                                 args.first_only)
        store = open_store(args.lease_url, review.repo.common_dir)
        try:
            with progress_reporter(sys.stderr, not args.json) as report:
                outcome = confirm_candidate(review, args.candidate_id, store, report.confirm, options=options)
        finally:
            store.close()
        decided(outcome.exit_code)  # before printing: a reader who leaves cannot change it
        if args.json:
            print(json.dumps(outcome.to_json(), indent=2, default=str))
        else:
            for line in lines(outcome):
                print(line)
        return outcome.exit_code
    finally:
        review.close()


def lines(outcome: ConfirmOutcome) -> list[str]:
    """The outcome as text, one item a line; untrusted text made one printable line."""
    from relconsole.engine.gate.acceptnote import base_miss_advice
    state = outcome.state
    said = state.state
    if state.confirmed and state.base_miss:  # the replays agree, but on a miss of the base's code
        said = f"not confirmed: it misses on the base ({one_line(state.base_miss)}); {base_miss_advice(state)}"
    out = [f"{one_line(state.candidate_id)}: {said}  (sha256 {state.content_sha256[:16]}…)"]
    for which in ("first", "second"):
        record = getattr(state, which)
        if record is None:
            continue
        sides = ", ".join(f"{name} {record['sides'][name]['outcome']} ({record['sides'][name]['misses']}/"
                          f"{record['sides'][name]['runs']} missed)" for name in SIDES)
        out.append(f"  {which} replay: {sides}  (lease generation {record['lease']['generation']}, "
                   f"{record['worktree']} worktree{'' if which in outcome.ran else ', recorded earlier'})")
    out += [f"  {one_line(line)}" for line in state.reason.splitlines() if line.strip()]
    if state.base_miss and not state.confirmed:
        out.append(f"  warning: it misses on the base ({one_line(state.base_miss)}); accept refuses it unless "
                   "--override-unconfirmed")
    elif state.base_miss:
        out.append("  accept refuses it unless --override-unconfirmed")
    if outcome.commit is not None:
        out.append(f"  {outcome.commit.sha[:12]} {one_line(outcome.commit.message.splitlines()[0])}")
    out += [f"  note: {one_line(note)}" for note in outcome.notes]
    return out

