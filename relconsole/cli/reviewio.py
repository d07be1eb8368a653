"""What the commands that read one review share: loading it (big corpora's hashing shown on
stderr) and printing their answer, as JSON (``--json``) or as text through
``relconsole.engine.literal`` (issue 18), with the command's §8 exit code recorded first
(``cli.pipe.decided``) so that a reader who leaves early cannot turn it into a pass.
"""

from __future__ import annotations

import sys
TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (6 ms a start)

from relconsole.cli.pipe import decided
from relconsole.engine.errors import EXIT_GAP
from relconsole.engine.literal import literal, one_line

if TYPE_CHECKING:  # the commands import what they need: `--help` and the parser load no engine
    from relconsole.engine.gate.review import Review


def load(args, deferred: bool = False) -> Review:
    """The review ``args`` names (``--repo``, ``--base``, ``--head``, ``--today``, ``--oracle-from``;
    SPEC §2), a big corpus's hashing shown on stderr unless ``--json``; ``deferred`` leaves the
    flags, the quarantine and the split check for later (``finish_review``). Raises what
    ``load_review`` raises (a RelconsoleError: git, usage)."""
    from relconsole.cli.progress import progress_reporter
    from relconsole.engine.gate.review import load_review
    with progress_reporter(sys.stderr, not getattr(args, "json", False)) as report:  # big corpora hashing
        return load_review(args.repo, args.base, args.head, args.today, args.oracle_from, hash_progress=report.bytes,
                           deferred=deferred)


def emit(args, payload: dict, lines: list[str], errors=(), code: int | None = None) -> None:
    """Print ``payload`` as JSON (``json.dumps`` escapes every control), or ``lines`` as text
    through ``literal`` (a commit message carries drafted text; issue 18), with each bad file
    on stderr. ``code`` is the command's decision (§8), recorded first so that a reader who
    leaves mid-output cannot change the exit code (issue 18)."""
    import json
    if code is not None:
        decided(code)
    if getattr(args, "json", False):
        print(json.dumps(payload, indent=2, default=str))
        return
    for line in lines:
        print(literal(line))
    for error in errors:
        print(f"relconsole: {one_line(error.one_line())}", file=sys.stderr)


def uncommitted_oracle(review, command: str) -> list[str]:
    """One warning per oracle file (the protected patterns) the working tree holds other than
    its commit: ``command`` reads the oracle of the base (or HEAD) commit, never the working
    tree (SPEC §2), so an uncommitted fix is not what it checked. ``review`` is a Review or
    ``bind``'s kept facts (``root``, ``layout.protected``, ``base_ref``, ``oracle_sha``). []
    for a bare repository or when git cannot say (a warning never fails a command)."""
    from relconsole.engine.errors import GitError
    from relconsole.engine.repo.uncommitted import uncommitted
    if not getattr(review.repo, "working_tree_dir", None):
        return []
    source = "HEAD" if getattr(review, "oracle_from", "base").upper() == "HEAD" else review.base_ref
    try:
        paths = uncommitted(review.root, review.layout.protected)
    except GitError:
        return []
    return [f"{path}: not committed, so not read: {command} reads the oracle of {source} "
            f"({review.oracle_sha[:12]}); commit it, then {command}" for path in paths]


def warn_uncommitted(review, command: str) -> None:
    """Print ``uncommitted_oracle``'s warnings on stderr, one line each, escaped."""
    for warning in uncommitted_oracle(review, command):
        print(f"relconsole: warning: {one_line(warning)}", file=sys.stderr)


def decision_line(decision: str, reason: str, code: int) -> str:
    """``decision: pass  (held)``, and when the exit code is a coverage gap's over a decision
    that would pass, ``, but a coverage gap: exit 2`` after it: the gap is not part of the
    decision table, and "pass" beside exit 2 read as a contradiction (new-user trial)."""
    line = f"decision: {one_line(decision)}  ({one_line(reason)})"
    return line + (f", but a coverage gap: exit {EXIT_GAP}" if code == EXIT_GAP and decision == "pass" else "")


def errors_payload(review: Review) -> list[dict]:
    """The review's bad oracle files for ``--json``: ``path``, ``line``, ``message`` each (exit 5, §8)."""
    return [{"path": e.path, "line": e.line, "message": e.message} for e in review.errors]


def commit_payload(result) -> dict:
    """One oracle commit (a ``CommitResult``) for ``--json``: sha, branch, kind (§9), message, paths."""
    return {"commit": result.sha, "branch": result.branch, "kind": result.kind,
            "message": result.message, "paths": list(result.paths)}
