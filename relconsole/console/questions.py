"""What the console's dialogs and forms say, and what they check before a commit (SPEC §9:
a committing action asks first and says exactly what will happen; §10 the override of an
unconfirmed candidate; §6 a freeze; §4 a lease's renewal and re-hash; review flags'
acknowledgements). Plain strings, no widgets: the screens show them literally.
"""

from __future__ import annotations

import datetime as dt

from relconsole.console.views import quarantine_item, item_label, split_targets
from relconsole.engine import docsref
from relconsole.engine.errors import CommitRefused
from relconsole.engine.gate.flags.acks import MIN_PREFIX
from relconsole.engine.gate.acceptnote import base_miss_advice
from relconsole.engine.gate.actions import OVERRIDE
from relconsole.engine.gate.review import Review
from relconsole.engine.literal import counted, one_line
from relconsole.engine.oracle.freezes import check_new_row
from relconsole.engine.oracle.leases import check_renewal


CONFIRM_THEN_ACCEPT = "if it confirms, the candidate is marked for accept (c commits it)"
CONFIRM_CHOICE = "confirm first"  # the override dialog's third key, o (§10)


def offers_confirm(state) -> bool:
    """Whether the override dialog offers a second replay (``o``): not for a candidate already
    confirmed for this review, whose replay found a miss on the base."""
    return not (state is not None and state.confirmed and state.base_miss)


def unconfirmed_question(review: Review, oid: str, state) -> str:
    """The override dialog's text: why the candidate is not confirmed (or misses on the base),
    what the commit records."""
    name = item_label(review, oid)
    if state is not None and state.confirmed and state.elsewhere(review):
        return (f"{name} was confirmed for another review ({state.elsewhere(review)}).\n"
                f"Press o to confirm it here now; {CONFIRM_THEN_ACCEPT}.\n\n"
                "Accept it anyway as the reviewer's override? The catalog: commit message records "
                "the override and your git identity.")
    if state is not None and state.confirmed and state.base_miss:
        return (f"{name} is {state.said} ({state.base_miss}); its two replays agree on that.\n"
                f"{base_miss_advice(state).capitalize()}.\n\n"
                "Accept it anyway as the reviewer's override? The catalog: commit message records "
                "the override and your git identity.")
    why = (f"{state.state.replace('_', ' ')}: {state.reason or 'no replay has run'}" if state
           else "its replay state is unknown")
    return (f"{name} is not confirmed ({why}).\n"
            "A candidate is accepted after a second replay on a new workspace lease agrees with the "
            f"first ({docsref.see('quarantine')}): press o to run it now; {CONFIRM_THEN_ACCEPT}.\n\n"
            "Accept it unconfirmed as the reviewer's override? The catalog: commit message records "
            "the override and your git identity.")


def describe_change(review: Review, oids: list[str], what: str, overrides: set[str] = frozenset()) -> str:
    """Exactly what the commit will do, for the confirmation dialog; ``overrides`` are the
    candidate item ids the reviewer accepted unconfirmed."""
    branch = review.oracle_branch
    candidates, rows = split_targets(oids)
    lines = []
    if what == "accept":
        lines.append(f"One catalog: commit on {branch}:")
        for path in candidates:
            lines.append(f"  add {item_label(review, 'c:' + path)} to {review.layout.catalog}")
            lines.append(f"  remove {path}")
            if "c:" + path in overrides:
                lines.append("  ⚠ UNCONFIRMED: the message records your override")
        for key in rows:
            row = quarantine_item(review, "s:" + key)
            seeds = review.catalog.get(row.relation_id).seeds_path
            lines.append(f"  move row {row.line} of {row.path} to {seeds}: {row.text}")
        lines += _emptied(review, rows)
    else:
        lines.append(f"One quarantine: commit on {branch}:")
        for path in candidates:
            lines.append(f"  remove {path}")
        for key in rows:
            row = quarantine_item(review, "s:" + key)
            lines.append(f"  drop row {row.line} of {row.path}: {row.text}")
    lines += _emptied(review, rows)
    lines.append("Your staged and unstaged work is left as it is.")
    return "\n".join(lines)


def _emptied(review: Review, keys: list[str]) -> list[str]:
    """A line per quarantine seeds file the commit leaves with no row: it is removed too."""
    chosen = set(keys)
    paths = {row.path for row in review.seed_rows if row.key in chosen}
    return [f"  remove {path} (no row left)" for path in sorted(paths)
            if all(row.key in chosen for row in review.seed_rows if row.path == path)]


def freeze_body(review: Review, row: dict) -> str:
    """What the freeze commit writes, what it replaces, and what it cannot change."""
    result = review.results.get(row["relation_id"])
    replayed = review.replays.get(row["relation_id"])
    lines = [f"The relation missed: {result.summary}"]
    if replayed is not None:
        head, head_runs = replayed.misses("head")
        base, base_runs = replayed.misses("base")
        lines.append(f"Replay decided freeze by {docsref.decision_row(8)}: HEAD missed {head}/{head_runs}, "
                     f"base {base}/{base_runs}, same signature; its workspace lease id, signature and expiry "
                     "are copied below.")
    else:
        lines.append(f"Decision now: {result.verdict.decision} {result.verdict.reason}"
                     + (f" by {docsref.decision_row(result.verdict.row)}" if result.verdict.row else "")
                     + f" · not replayed: press b first to let {docsref.decision_row(8)} decide")
    if replayed is None and result.reruns and result.rerun_passes == 0:
        lines.append("It missed on every run: a freeze only helps an intermittent miss that the base "
                     f"shows too, the kind {docsref.decision_row(8)} freezes; this one will still be rejected.")
    old = next((f for f in review.freezes if f.relation_id == row["relation_id"]), None)
    if old is not None:
        lines.append(f"REPLACES the {old.state} row expiring {old.raw['expires']} "
                     f"(reason: {old.raw.get('reason', '')})")
    lines += [f"One freeze: commit on {review.oracle_branch} writing only {review.layout.freezes}:",
              f"  relation {row['relation_id']} · lease {row['lease_id'] or '-'} · signature {row['signature'][:23]}…",
              f"  reruns {row['reruns']}, pass_needed {row['pass_needed']}, created_by {row['created_by']}"]
    return "\n".join(lines)


def freeze_problem(review: Review, row: dict, values: dict) -> str | None:
    if not values.get("reason", "").strip():
        return "a freeze needs a reason"
    try:
        dt.date.fromisoformat(values.get("expires", "").strip())
    except ValueError:
        return "expiry must be a YYYY-MM-DD date"
    written = {k: v for k, v in row.items() if k != OVERRIDE}  # the override note goes to the message only
    return check_new_row(dict(written, reason=values["reason"].strip(), expires=values["expires"].strip()),
                         review.catalog, review.today)


def renewal_body(review: Review, status, limit: dt.date) -> str:
    from relconsole.engine.repo.identity import git_identity

    try:
        who = git_identity(review.root)
        me = f"{who.name} <{who.email}>"
    except CommitRefused as exc:
        me = exc.one_line()
    return (f"Lease {status.id} ({status.state}: {status.reason})\n"
            f"owner: {', '.join(status.lease.owners)} · you: {me}\n"
            f"One lease: commit on {review.oracle_branch} with only {status.source};\n"
            f"sha256 stays {status.lease.sha256[:16]}…; at most {limit.isoformat()} "
            f"({counted(review.layout.renew_max_days, 'day')} from today).")


def renewal_blocker(review: Review, status, limit: dt.date) -> str | None:
    """Why no date at all could renew this lease now (owner, state, already long enough)."""
    from relconsole.engine.repo.identity import git_identity

    try:
        who = git_identity(review.root)
        check_renewal(status, who.name, who.email, max(limit, status.lease.expires + dt.timedelta(days=1)),
                      review.today, 10 ** 6)
    except CommitRefused as exc:
        return exc.one_line()
    if status.lease.expires >= limit:
        return (f"{status.id} already runs to {status.lease.expires.isoformat()}, past the renewal "
                f"maximum {limit.isoformat()}: nothing to renew yet")
    return None


def renewal_problem(review: Review, status, until_text: str) -> str | None:
    from relconsole.engine.repo.identity import git_identity

    try:
        until = dt.date.fromisoformat(until_text.strip())
    except ValueError:
        return "the new expiry must be a YYYY-MM-DD date"
    try:
        who = git_identity(review.root)
        check_renewal(status, who.name, who.email, until, review.today, review.layout.renew_max_days)
    except CommitRefused as exc:
        return exc.one_line()
    return None


def override_question(relation_id: str) -> str:
    """The override dialog's text: what is missing and what the commit will record."""
    return (f"No replay sheet for HEAD says {relation_id} may be frozen: {docsref.decision_row(8)} freezes "
            "only an intermittent miss that the merge base shows too. Press n, then b, to let the table decide.\n\n"
            "Freeze anyway as an operator's override? The freeze: commit message records the override.")


def rehash_body(preview) -> str:
    """The re-hash confirmation: both digests, the corpus's size and mtime, who confirms."""
    mtime = preview.mtime.isoformat(timespec="seconds") if preview.mtime else "(no working tree copy)"
    lines = [f"Lease {preview.lease_id} ({preview.state}: {preview.reason})",
             f"manifest {preview.manifest} · corpus {preview.corpus}",
             "",
             f"old sha256  {preview.old_sha256}",
             f"new sha256  {preview.new_sha256}",
             f"read from   {preview.digest_source}",
             f"size        {preview.size_bytes:,} bytes" if preview.size_bytes is not None else "size        ?",
             f"modified    {mtime}"]
    last = preview.corpus_commit
    if last is not None:
        lines.append(f"corpus last changed in {last.sha[:12]} by {last.author_name} <{last.author_email}>")
    if preview.note:
        lines.append(preview.note)
    lines += ["", f"One lease: commit on {preview.branch} writes only the new sha256 into {preview.manifest};",
              f"its message records both digests and Confirmed-by: {preview.confirmer or '(no git identity)'}.",
              "Re-pin only if the corpus change itself was reviewed."]
    return "\n".join(lines)


def acknowledge_body(open_flags: list) -> str:
    """The flags a reviewer may acknowledge, one per line: id, name, where, what (escaped)."""
    lines = ["Each flag below rejects the PR until someone who is not the patch's author has read",
             "the flagged line and says why it is fine. The acknowledgement is void once that line changes.", ""]
    lines += [f"{fid}  {flag.name}  {one_line(flag.where())}\n    {one_line(flag.detail)}" for fid, flag in open_flags]
    return "\n".join(lines)


def acknowledge_problem(open_flags: list, values: dict) -> str | None:
    """Why the form cannot be committed yet (an unknown flag id, no reason), or None."""
    wanted = values.get("flag", "").strip().lower()
    if len(wanted) < MIN_PREFIX or sum(fid.startswith(wanted) for fid, _ in open_flags) != 1:
        return "type the id of one flag listed above (6 characters or more)"
    if not values.get("reason", "").strip():
        return "a reason is required: what you checked in the flagged code"
    return None
