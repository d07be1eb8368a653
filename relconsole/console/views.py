"""What each pane lists, built from a Review (no widgets here, so it tests headless).

Item ids: ``t:<n>`` touched path n, ``r:<relation id>``, ``e:<n>`` bad-file error n,
``l:<lease source>``, ``c:<candidate path>``, ``s:<path>:<line>`` drafted seed row,
``g:<relation id>`` a seed-row group header.
"""

from __future__ import annotations

import datetime as dt

from rich.text import Text

from relconsole.console import render
from relconsole.console.render import lit
from relconsole.console.screens.detail import (DetailView, candidate_text, lease_text, output_columns,
                                               relation_body, relation_text, replay_text, workspace_lease_text)
from relconsole.engine.gate.acks import MIN_PREFIX
from relconsole.engine.gate.acceptnote import base_miss_advice
from relconsole.engine.gate.actions import OVERRIDE
from relconsole.engine.errors import CommitRefused
from relconsole.engine.oracle.freezes import check_new_row
from relconsole.engine.oracle.leases import check_renewal
from relconsole.engine.literal import counted, one_line
from relconsole.engine.gate.review import Review


def touched_items(review: Review) -> list[tuple[str, Text, bool]]:
    flagged: dict[str, list[str]] = {}
    for flag in review.flags:
        acknowledged = review.acknowledgement(flag) is not None
        flagged.setdefault(flag.path, []).append(f"{flag.name} ✓ acknowledged" if acknowledged else flag.name)
    return [(f"t:{i}", render.touched_prompt(b, flagged.get(b.path, [])), False)
            for i, b in enumerate(review.bindings)]


def touched_path(review: Review, oid: str | None) -> str | None:
    if not oid or not oid.startswith("t:"):
        return None
    return review.bindings[int(oid[2:])].path


def _lease_paths(review: Review) -> set[str]:
    return {s.source for s in review.leases}


def error_items(review: Review) -> list[tuple[str, Text, bool]]:
    """Bad files other than lease manifests (those show as invalid leases)."""
    out = []
    for index, error in enumerate(review.errors):
        if error.path in _lease_paths(review):
            continue
        out.append((f"e:{index}", Text.assemble(("✗ BAD FILE ", "bold red"), lit(error.one_line(), "red")), False))
    return out


def relation_items(review: Review, narrow: str | None, running: set[str]) -> list[tuple[str, Text, bool]]:
    touched = set(review.touched_relations())
    owners = None
    if narrow is not None:
        owners = {rid for b in review.bindings if b.path == narrow for rid in b.relations}
    items = error_items(review)
    ordered = sorted(review.relations, key=lambda r: (r.id not in touched,))
    for relation in ordered:
        if owners is not None and relation.id not in owners:
            continue
        items.append(relation_item(review, relation, relation.id in touched, relation.id in running))
    return items


def relation_item(review: Review, relation, touched: bool, running: bool) -> tuple[str, Text, bool]:
    """One Relations pane item (``r:<id>``, prompt, False): rebuilt alone when its run ends."""
    prompt = render.relation_prompt(
        relation, review.results.get(relation.id), review.blocked_reason(relation), touched, running,
        review.freeze_for(relation.id), relation.id in review.changed_identity, review.bites.get(relation.id),
        review.replays.get(relation.id))
    return (f"r:{relation.id}", prompt, False)


def relation_of(oid: str | None) -> str | None:
    return oid[2:] if oid and oid.startswith("r:") else None


def lease_items(review: Review) -> list[tuple[str, Text, bool]]:
    """Dataset leases, fixture pins, then workspace leases (``l:``, ``p:``, ``w:`` ids)."""
    items = [(f"l:{s.source}", render.lease_prompt(s), False) for s in review.leases]
    items += [(f"p:{name}", render.pin_prompt(name, state), False) for name, state in review.pins.items()]
    return items + workspace_lease_items(review)


def workspace_lease_items(review: Review) -> list[tuple[str, Text, bool]]:
    """The workspace leases (§5) alone: they change every few seconds, the rest does not."""
    items = [(f"w:{w.workspace}", render.workspace_lease_prompt(w), False) for w in review.workspace_leases]
    if not review.workspace_leases:
        note = review.lease_store_note or "no workspace leases held (b replays under one)"
        items.append(("w:none", lit(note, "dim italic"), True))
    return items


def lease_of(review: Review, oid: str | None):
    if not oid or not oid.startswith("l:"):
        return None
    return next((s for s in review.leases if s.source == oid[2:]), None)


def quarantine_items(review: Review) -> list:
    """Candidates and seed rows in display order."""
    return list(review.candidates) + list(review.seed_rows)


def item_id(item) -> str:
    return f"s:{item.key}" if hasattr(item, "key") and hasattr(item, "line") else f"c:{item.path}"


def moved_items(old: Review, new: Review) -> dict[str, str]:
    """Item id in ``old`` -> the same item's id in ``new``: a candidate by its path, a seed row
    by its stable ``id`` (its content) in the same file, since its line moves after every accept
    or delete. Items gone from ``new`` are left out; equal rows pair up in file order."""
    moved = {item_id(c): item_id(c) for c in new.candidates
             if any(o.path == c.path for o in old.candidates)}
    places: dict[tuple[str, str], list[str]] = {}
    for row in new.seed_rows:
        places.setdefault((row.path, row.id), []).append(item_id(row))
    for row in old.seed_rows:
        spots = places.get((row.path, row.id))
        if spots:
            moved[item_id(row)] = spots.pop(0)
    return moved


def quarantine_options(review: Review, marked: set[str], pending: dict[str, str]) -> list[tuple[str, Text, bool]]:
    items = []
    for candidate in review.candidates:
        oid = item_id(candidate)
        items.append((oid, render.candidate_prompt(candidate, oid in marked, pending.get(oid),
                                                   review.candidate_states.get(candidate.path)), False))
    groups: dict[str, list] = {}
    for row in review.seed_rows:
        groups.setdefault(row.relation_id, []).append(row)
    for relation_id, rows in groups.items():
        items.append((f"g:{relation_id}", render.seed_group_prompt(relation_id, len(rows)), True))
        for row in rows:
            oid = item_id(row)
            items.append((oid, render.seed_row_prompt(row, oid in marked, pending.get(oid)), False))
    return items


def is_decidable(oid: str) -> bool:
    return oid.startswith(("c:", "s:"))


def _find(review: Review, oid: str):
    for item in quarantine_items(review):
        if item_id(item) == oid:
            return item
    return None


def candidate_of(review: Review, oid: str | None):
    """The Candidate behind a ``c:`` item id, or None (a seed row, a header, nothing)."""
    return _find(review, oid) if oid and oid.startswith("c:") else None


def confirm_state(review: Review, oid: str):
    """The recorded second-replay state (confirm.ConfirmState) of a candidate item, or None."""
    candidate = candidate_of(review, oid)
    return review.candidate_states.get(candidate.path) if candidate else None


def sound_confirmation(review: Review, state) -> bool:
    """Confirmed by a second replay for this review's merge base and oracle, with no miss on
    the base (§10)."""
    return bool(state is not None and state.confirmed and not state.base_miss and not state.elsewhere(review))


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
        return (f"{name} is confirmed, but it misses on the base ({state.base_miss}).\n"
                f"{base_miss_advice(state).capitalize()}.\n\n"
                "Accept it anyway as the reviewer's override? The catalog: commit message records "
                "the override and your git identity.")
    why = (f"{state.state.replace('_', ' ')}: {state.reason or 'no replay has run'}" if state
           else "its replay state is unknown")
    return (f"{name} is not confirmed ({why}).\n"
            "A candidate is accepted after a second replay on a new workspace lease agrees with the "
            f"first (§10): press o to run it now; {CONFIRM_THEN_ACCEPT}.\n\n"
            "Accept it unconfirmed as the reviewer's override? The catalog: commit message records "
            "the override and your git identity.")


def rejection(review: Review, oid: str) -> str:
    """'' when the item may be accepted, else its reasons joined."""
    item = _find(review, oid)
    if item is None:
        return "no longer in quarantine"
    return "" if item.valid else "; ".join(item.reasons)


def item_label(review: Review, oid: str) -> str:
    item = _find(review, oid)
    if item is None:
        return oid
    return f"row {item.line} of {item.path}" if oid.startswith("s:") else item.id


def split_targets(oids: list[str]) -> tuple[list[str], list[str]]:
    """(candidate paths, seed row keys) from item ids."""
    return ([o[2:] for o in oids if o.startswith("c:")], [o[2:] for o in oids if o.startswith("s:")])


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
            row = _find(review, "s:" + key)
            seeds = review.catalog.get(row.relation_id).seeds_path
            lines.append(f"  move row {row.line} of {row.path} to {seeds}: {row.text}")
        lines += _emptied(review, rows)
    else:
        lines.append(f"One quarantine: commit on {branch}:")
        for path in candidates:
            lines.append(f"  remove {path}")
        for key in rows:
            row = _find(review, "s:" + key)
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


def detail_text(review: Review, kind: str, oid: str | None) -> Text:
    """The bottom strip for the highlighted item."""
    if not oid:
        return Text("")
    if oid.startswith("e:"):
        return lit(review.errors[int(oid[2:])].one_line(), "red")
    if kind == "touched" and oid.startswith("t:"):
        binding = review.bindings[int(oid[2:])]
        text = Text.assemble(lit(binding.path, "bold"), f"  {binding.touched.status} · {binding.state}")
        if binding.pattern:
            text.append(" · pattern ")
            text.append_text(lit(binding.pattern))
        for flag in review.flags:
            if flag.path in (binding.path, binding.touched.old_path):
                if review.acknowledgement(flag) is not None:
                    text.append(f"\n✓ {flag.name} (acknowledged): ", "green")
                else:
                    text.append(f"\n⚑ {flag.name}: ", "bold yellow")
                text.append_text(lit(flag.detail))
                text.append_text(lit(f" ({flag.where()})", "dim"))
        if binding.state == "gap":
            text.append("\n✗ no owner pattern matches this path: bind exits 2 until the catalog owns it", "red")
        text.append("\nenter: show only the relations that own this path", "dim")
        return text
    if kind == "relations" and oid.startswith("r:"):
        return relation_header(review, review.catalog.get(oid[2:]))
    if kind == "leases" and oid.startswith("w:") and oid != "w:none":
        lease = next((w for w in review.workspace_leases if w.workspace == oid[2:]), None)
        return workspace_lease_text(lease) if lease else Text("")
    if kind == "leases" and oid.startswith("p:"):
        name = oid[2:]
        return Text.assemble(("fixture pin ", "bold"), lit(name), f": {review.pins.get(name, '?')}",
                             (f"\n(pins in {review.layout.pins}: a mismatch rejects, §8 row 4)", "dim"))
    if kind == "leases":
        status = lease_of(review, oid)
        return lease_text(status) if status else Text("")
    item = _find(review, oid)
    if item is None:
        return Text("")
    if oid.startswith("c:"):
        text = Text.assemble(lit(item.id, "bold"), ("  ✓ valid" if item.valid else "  ✗ rejected", ""))
        text.append_text(render.replay_state_line(review.candidate_states.get(item.path), item.valid))
        for reason in item.reasons:
            text.append("\n  • ")
            text.append_text(lit(reason, "red"))
        for note in item.notes:
            text.append("\n  ⚠ ")
            text.append_text(lit(note, "yellow"))
        text.append_text(Text.assemble("\n", ("provenance: ", "dim"),
                                       lit(" · ".join(f"{k} {v}" for k, v in item.provenance().items() if v), "dim")))
        return text
    text = Text.assemble(lit(f"{item.path} line {item.line}", "bold"), (f"  {item.id}", "dim"), "\n", lit(item.text))
    for reason in item.reasons:
        text.append("\n  • ")
        text.append_text(lit(reason, "red"))
    return text


def relation_header(review: Review, relation, full: bool = True) -> Text:
    """A relation's detail: statement, verdict, reruns, freeze, then its replay sheet if any.

    ``full`` False (the detail screen's header) leaves out the rerun line and the replay:
    the screen's body shows them in full (``screens.detail.relation_body``)."""
    text = relation_text(relation, review.results.get(relation.id), review.freeze_for(relation.id),
                         review.identities.get(relation.id), relation.id in review.changed_identity,
                         review.blocked_reason(relation), relation.id in review.touched_relations(),
                         review.bites.get(relation.id), relation.id in review.replays, reruns_line=full)
    replayed = review.replays.get(relation.id)
    return text.append_text(replay_text(replayed)) if replayed and full else text


COLUMN_TITLES = {  # kind -> what the two compared sides are (§3): a roundtrip's left side is its input
    "permutation": ("f(x)", "f(shuffled x)"),
    "idempotence": ("f(x)", "f(f(x))"),
    "replay_ingest": ("ingest x once", "ingest x twice"),
    "split_merge": ("f(A ++ B)", "merge(f(A), f(B))"),
    "monotonic": ("f(x)", "f(x, field raised)"),
    "roundtrip": ("the input x", "inverse(f(x))"),
    "invariance": ("f(x)", "f(transform(x))"),
}


def detail_view(review: Review, kind: str, oid: str | None, saved: dict | None = None) -> DetailView | None:
    """The full-screen view opened with enter, or None. ``saved``: relation id -> replay
    sheet saved before this session (``engine.review.Replayed``), shown when this session
    has not replayed the relation."""
    if not oid:
        return None
    if kind == "relations" and oid.startswith("r:"):
        relation = review.catalog.get(oid[2:])
        result = review.results.get(relation.id)
        header = relation_header(review, relation, full=False)
        earlier = (saved or {}).get(relation.id)
        body = relation_body(relation, result, review.replays.get(relation.id), earlier) \
            if result or earlier else None
        first = result.first if result else None
        if first is None or first.source is None:
            return DetailView(header, body=body)
        left, right = output_columns(first.source, first.followup, first.differing)
        source, followup = COLUMN_TITLES.get(relation.kind, ("source output", "follow-up output"))
        return DetailView(header, (f"{source} (canonical)", left), (f"{followup} (canonical)", right), body=body)
    if kind == "leases" and oid.startswith("w:"):
        lease = next((w for w in review.workspace_leases if w.workspace == oid[2:]), None)
        return DetailView(workspace_lease_text(lease)) if lease else None
    if kind == "leases":
        status = lease_of(review, oid)
        return DetailView(lease_text(status)) if status else None
    if kind == "quarantine" and oid.startswith("c:"):
        candidate = _find(review, oid)
        return DetailView(Text.assemble(lit(candidate.id, "bold"), "  candidate relation"),
                            body=candidate_text(candidate, review.candidate_states.get(candidate.path),
                                                review.head_sha))
    return None


def freeze_body(review: Review, row: dict) -> str:
    """What the freeze commit writes, what it replaces, and what it cannot change."""
    result = review.results.get(row["relation_id"])
    replayed = review.replays.get(row["relation_id"])
    lines = [f"The relation missed: {result.summary}"]
    if replayed is not None:
        head, head_runs = replayed.misses("head")
        base, base_runs = replayed.misses("base")
        lines.append(f"Replay decided freeze (§8 row 8): HEAD missed {head}/{head_runs}, base {base}/{base_runs}, "
                     "same signature; its workspace lease id, signature and expiry are copied below.")
    else:
        lines.append(f"Decision now: {result.verdict.decision} {result.verdict.reason}"
                     + (f" (§8 row {result.verdict.row})" if result.verdict.row else "")
                     + " · not replayed: press b first to let the table decide (§8 row 8)")
    if replayed is None and result.reruns and result.rerun_passes == 0:
        lines.append("It missed on every run: a freeze only helps an intermittent miss that the base "
                     "shows too (§8 row 8); this one will still be rejected.")
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


def gate_health_view(result) -> DetailView:
    """The gate-health view: each §8 row's count, then the warnings in bold (engine GateStats)."""
    lines = result.lines()
    header = Text.assemble(("Gate health", "bold"), (" · relconsole stats --days 7 (esc goes back)", "dim"))
    body = Text()
    for line in lines:
        style = "bold yellow" if line.startswith("warning:") else ("dim" if line.startswith("note:") else "")
        body.append_text(lit(line, style))
        body.append("\n")
    return DetailView(header, body=body)


CHECK_MARK = {"pass": ("✓ pass   ", "green"), "fail": ("✗ FAIL   ", "bold red"), "unknown": ("? unknown", "yellow")}


def checklist_view(review: Review, items) -> DetailView:
    """Review flags (§9), then the merge checklist: each item's state word and its evidence."""
    header = Text.assemble(("Review flags and merge checklist", "bold"),
                           (" · relconsole flags (esc goes back)", "dim"))
    body = Text()
    decision = review.decision()
    body.append(f" {decision.decision.upper()} ", f"reverse {render.DECISION_STYLE[decision.decision]}")
    body.append_text(lit(f" {decision.reason}", "bold"))
    body.append(" with the checklist and the relations' results so far (relconsole flags --run exits "
                "with this; without --run, flags judges what needs no run)\n\n", "dim")
    body.append(f"Review flags in {review.merge_base[:10]}..{review.head_sha[:10]}: ", "bold")
    body.append(f"{len(review.flags)}\n" if review.flags else "none\n")
    for flag in review.flags:
        ack = review.acknowledgement(flag)
        if ack is None:
            body.append(f"  ⚑ {flag.name}  ", "bold yellow")
        else:
            body.append(f"  ✓ {flag.name} (acknowledged)  ", "green")
        body.append_text(lit(flag.where()))
        body.append(f"  id {review.flag_id(flag)}", "dim")
        body.append("\n      ")
        body.append_text(lit(flag.detail, "dim"))
        if ack is not None:
            body.append("\n      acknowledged by ", "dim")
            body.append_text(lit(f"{ack.by}: {ack.reason}", "dim"))
        body.append("\n")
    if review.flags:
        body.append("  a flag makes the PR's decision reject (review_flag:<name>) until someone who is not the "
                    "patch's author acknowledges it: w\n", "dim")
    body.append("\nMerge checklist\n", "bold")
    for item in items:
        word, style = CHECK_MARK[item.state]
        body.append(f"  {word} ", style)
        body.append_text(lit(item.title))
        body.append("\n")
        for line in item.evidence:
            body.append("              ")
            body.append_text(lit(line, "dim"))
            body.append("\n")
    return DetailView(header, body=body)


def override_question(relation_id: str) -> str:
    """The override dialog's text: what is missing and what the commit will record."""
    return (f"No replay sheet for HEAD says {relation_id} may be frozen (§8 row 8: an intermittent miss "
            "that the merge base shows too). Press n, then b, to let the table decide.\n\n"
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


def history_text(events, failed: str | None = None) -> Text:
    """A lease's history from git log, newest first: who, when, which dates and digests."""
    text = Text("history on the oracle branch (from git log, newest first)", style="bold")
    if failed:
        return text.append_text(Text.assemble("\n  ", lit(failed, "red")))
    if not events:
        return text.append("\n  no commit touched this manifest", "dim")
    for event in events:
        text.append(f"\n  {event.committed.date().isoformat()} {event.sha[:10]} ", "dim")
        text.append(f"{event.kind:<9}", "bold")
        text.append_text(lit(event.who))
        if event.expires_before != event.expires_after and (event.expires_before or event.expires_after):
            before = event.expires_before.isoformat() if event.expires_before else "—"
            after = event.expires_after.isoformat() if event.expires_after else "—"
            text.append(f"  expires {before} → {after}")
        if event.sha256_before != event.sha256_after and event.sha256_before and event.sha256_after:
            text.append(f"  sha256 {event.sha256_before[:12]}… → {event.sha256_after[:12]}…")
        if event.note:
            text.append_text(lit(f"  ({event.note})", "dim"))
    return text


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
