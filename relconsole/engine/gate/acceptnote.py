"""What accepting a quarantine candidate says about its second replay (SPEC §10, §8 row 5): the
commit message line for a confirmed candidate, an operator's override and who made it, or
the refusal (discarded, changed since the review loaded, confirmed for another review,
missing on the base), with what to do about a candidate that misses on the base.
"""

from __future__ import annotations

import hashlib

from relconsole.engine.gate.confirmstate import DISCARDED, candidate_state
from relconsole.engine.errors import CommitRefused
from relconsole.engine.repo.treeview import TreeView
from relconsole.engine.repo.identity import git_identity
from relconsole.engine.literal import one_line
from relconsole.engine.gate.review import Review
from relconsole.engine.docsref import see


def replay_note(review: Review, view: TreeView, candidate, override: bool) -> str:
    """The commit message line on a candidate's second replay (§10), or CommitRefused.

    Confirmed: names the content hash the replays agreed on, which must still be the
    bytes on the branch tip. Unconfirmed with ``override``: records the override and who
    made it. A discarded candidate (its replays disagreed) is never accepted.
    """
    state = candidate_state(review, candidate)
    if state.state == DISCARDED:
        raise CommitRefused(f"{candidate.id} was discarded: {state.reason}")
    data = view.read_bytes(candidate.path)
    if data is None or hashlib.sha256(data).hexdigest() != state.content_sha256:
        raise CommitRefused(f"{candidate.path} changed on {review.oracle_branch} since the "
                            "review loaded; reload the review")
    elsewhere = state.elsewhere(review) if state.confirmed else None
    if elsewhere:
        if not override:
            raise CommitRefused(f"{candidate.id} was confirmed for another review: {elsewhere}; run "
                                f"`relconsole confirm {candidate.id}` here, or override with --override-unconfirmed")
        who = git_identity(review.root)
        return (f"second replay: OVERRIDDEN, confirmed for another review ({elsewhere}); accepted by "
                f"{who.name} <{who.email}>")
    base_miss = state.base_miss
    if state.confirmed and not base_miss:
        return f"second replay: confirmed (content sha256 {state.content_sha256})"
    if state.confirmed:
        if not override:
            raise CommitRefused(f"{candidate.id} is confirmed but misses on the base ({one_line(base_miss)}): "
                                + base_miss_advice(state) + "; or accept it anyway with --override-unconfirmed")
        who = git_identity(review.root)
        return (f"second replay: confirmed (content sha256 {state.content_sha256}) but misses on the base "
                f"({one_line(base_miss)}); accepted anyway by {who.name} <{who.email}>")
    if not override:
        raise CommitRefused(f"{candidate.id} is {state.state.replace('_', ' ')}, not confirmed: run "
                            f"`relconsole confirm {candidate.id}` (a second replay, {see('quarantine', 'the-second-replay')}), or override "
                            "with a second confirmation (--override-unconfirmed)")
    who = git_identity(review.root)
    return (f"second replay: OVERRIDDEN while {state.state} (content sha256 "
            f"{state.content_sha256}); accepted unconfirmed by {who.name} <{who.email}>")


def base_miss_advice(state) -> str:
    """What a reviewer should do with a candidate that misses on the base (§10)."""
    if state.subject_not_on_base:
        return ("its subject is not on the base (code the patch adds): accept it once the patch has merged, "
                "or every other review would miss it")
    return "as a relation it would hold or reject reviews of code that is not broken; fix the candidate"
