"""What each pane lists, built from a Review (no widgets here, so it tests headless), the
bottom strip's text and the full-screen view of an item (``questions`` holds the dialogs'
texts, ``reports`` the gate-health, checklist and lease-history views).

Item ids: ``t:<n>`` touched path n, ``r:<relation id>``, ``e:<n>`` bad-file error n,
``l:<lease source>``, ``c:<candidate path>``, ``s:<path>:<line>`` drafted seed row,
``g:<relation id>`` a seed-row group header.
"""

from __future__ import annotations

from rich.text import Text

from relconsole.console import render
from relconsole.console.render import lit
from relconsole.console.itemtext import candidate_text, lease_text, workspace_lease_text
from relconsole.console.outline import output_columns
from relconsole.console.relationtext import relation_body, relation_text, replay_text
from relconsole.console.screens.detail import DetailView
from relconsole.console.shrunktext import input_band, shrunk_columns
from relconsole.engine import docsref
from relconsole.engine.gate.acceptnote import base_miss_advice
from relconsole.engine.gate.review import Review
from relconsole.engine.gate.shrunkfacts import shrunk_facts
from relconsole.engine.relations.kinds import PICKLED_NOTE, TYPE_MISS


def touched_items(review: Review) -> list[tuple[str, Text, bool]]:
    flagged: dict[str, list[str]] = {}
    for flag in review.flags:
        acknowledged = review.acknowledgement(flag) is not None
        warning = review.flag_level(flag) == "warn"
        flagged.setdefault(flag.path, []).append(f"{flag.name} ✓ acknowledged" if acknowledged else
                                                 f"{flag.name} (warning)" if warning else flag.name)
    # the last answer made: the run's worker makes it (git reads), never the UI thread
    unexercised = {u.path: len(u.lines) for u in review.unexercised(compute=False)}
    gap = review.layout.unexercised == "gap"
    return [(f"t:{i}", render.touched_prompt(b, flagged.get(b.path, []), unexercised.get(b.path, 0), gap), False)
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
    if not review.workspace_leases:  # two short lines, whole in the narrowest pane (issue 36)
        what, _, why = (review.lease_store_note or "no workspace lease held: b replays under one").partition(": ")
        note = lit(what, "dim italic")
        if why:
            note.append("\n  ")
            note.append_text(lit(why, "dim"))
        items.append(("w:none", note, True))
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


def quarantine_item(review: Review, oid: str):
    """The quarantine item (candidate or seed row) whose ``item_id`` is ``oid``, or None."""
    for item in quarantine_items(review):
        if item_id(item) == oid:
            return item
    return None


def candidate_of(review: Review, oid: str | None):
    """The Candidate behind a ``c:`` item id, or None (a seed row, a header, nothing)."""
    return quarantine_item(review, oid) if oid and oid.startswith("c:") else None


def confirm_state(review: Review, oid: str):
    """The recorded second-replay state (confirm.ConfirmState) of a candidate item, or None."""
    candidate = candidate_of(review, oid)
    return review.candidate_states.get(candidate.path) if candidate else None


def sound_confirmation(review: Review, state) -> bool:
    """Confirmed by a second replay for this review's merge base and oracle, with no miss on
    the base (§10)."""
    return bool(state is not None and state.confirmed and not state.base_miss and not state.elsewhere(review))


def rejection(review: Review, oid: str) -> str:
    """'' when the item may be accepted, else its reasons joined."""
    item = quarantine_item(review, oid)
    if item is None:
        return "no longer in quarantine"
    return "" if item.valid else "; ".join(item.reasons)


def item_label(review: Review, oid: str) -> str:
    item = quarantine_item(review, oid)
    if item is None:
        return oid
    return f"row {item.line} of {item.path}" if oid.startswith("s:") else item.id


def split_targets(oids: list[str]) -> tuple[list[str], list[str]]:
    """(candidate paths, seed row keys) from item ids."""
    return ([o[2:] for o in oids if o.startswith("c:")], [o[2:] for o in oids if o.startswith("s:")])


def detail_text(review: Review, kind: str, oid: str | None) -> Text:
    """The bottom strip for the highlighted item."""
    if not oid:
        return Text("")
    if oid.startswith("e:"):
        return lit(review.errors[int(oid[2:])].one_line(), "red")
    if kind == "touched" and oid.startswith("t:"):
        return _touched_detail(review, review.bindings[int(oid[2:])])
    if kind == "relations" and oid.startswith("r:"):
        return relation_header(review, review.catalog.get(oid[2:]))
    if kind == "leases" and oid.startswith("w:") and oid != "w:none":
        lease = next((w for w in review.workspace_leases if w.workspace == oid[2:]), None)
        return workspace_lease_text(lease) if lease else Text("")
    if kind == "leases" and oid.startswith("p:"):
        name = oid[2:]
        return Text.assemble(("fixture pin ", "bold"), lit(name), f": {review.pins.get(name, '?')}",
                             (f"\npins in {review.layout.pins}: a mismatch rejects by "
                              f"{docsref.decision_row(4)}", "dim"))
    if kind == "leases":
        status = lease_of(review, oid)
        return lease_text(status) if status else Text("")
    item = quarantine_item(review, oid)
    if item is None:
        return Text("")
    if oid.startswith("c:"):
        return _candidate_detail(review, item)
    return _seed_row_detail(item)


def _touched_detail(review: Review, binding) -> Text:
    """The strip for a touched path: status, owner state and pattern, its review flags."""
    text = Text.assemble(lit(binding.path, "bold"), f"  {binding.touched.status} · {binding.state}")
    if binding.pattern:
        text.append(" · pattern ")
        text.append_text(lit(binding.pattern))
    for flag in review.flags:
        if flag.path in (binding.path, binding.touched.old_path):
            if review.acknowledgement(flag) is not None:
                text.append(f"\n✓ {flag.name} (acknowledged): ", "green")
            elif review.flag_level(flag) == "warn":
                text.append(f"\n· {flag.name} (a warning, no effect on the decision): ", "yellow")
            else:
                text.append(f"\n⚑ {flag.name}: ", "bold yellow")
            text.append_text(lit(flag.detail))
            text.append_text(lit(f" ({flag.where()})", "dim"))
    if binding.state == "gap":
        text.append("\n✗ no owner pattern matches this path: bind exits 2 until the catalog owns it", "red")
    for found in review.unexercised(compute=False):  # made on the run's thread
        if found.path == binding.path:
            one = len(found.lines) == 1
            text.append(f"\n◌ changed {'line' if one else 'lines'} {found.ranges_text()}: no relation's calls ran "
                        f"{'it' if one else 'them'} on HEAD"
                        + (" (a gap: exit 2 unless worse)" if review.layout.unexercised == "gap" else ""), "red")
    text.append("\nenter: show only the relations that own this path", "dim")
    return text


def _candidate_detail(review: Review, item) -> Text:
    """The strip for a quarantine candidate: valid or not, second replay, reasons, notes, provenance."""
    text = Text.assemble(lit(item.id, "bold"), ("  ✓ valid" if item.valid else "  ✗ rejected", ""))
    state = review.candidate_states.get(item.path)
    text.append_text(render.replay_state_line(state, item.valid))
    if item.valid and render.misses_on_base(state):
        text.append("\n  ✗ ", "bold red")
        text.append_text(lit(f"{state.base_miss}; {base_miss_advice(state)}", "red"))
    for reason in item.reasons:
        text.append("\n  • ")
        text.append_text(lit(reason, "red"))
    for note in item.notes:
        text.append("\n  ⚠ ")
        text.append_text(lit(note, "yellow"))
    text.append_text(Text.assemble("\n", ("provenance: ", "dim"),
                                   lit(" · ".join(f"{k} {v}" for k, v in item.provenance().items() if v), "dim")))
    return text


def _seed_row_detail(item) -> Text:
    """The strip for a drafted seed row: where it is, its id, its JSON and why it is rejected."""
    text = Text.assemble(lit(f"{item.path} line {item.line}", "bold"), (f"  {item.id}", "dim"), "\n", lit(item.text))
    for reason in item.reasons:
        text.append("\n  • ")
        text.append_text(lit(reason, "red"))
    return text


def relation_header(review: Review, relation, full: bool = True) -> Text:
    """A relation's detail: statement, verdict, reruns, freeze, then its replay sheet if any.

    ``full`` False (the detail screen's header) leaves out the rerun line and the replay:
    the screen's body shows them in full (``relationtext.relation_body``)."""
    text = relation_text(relation, review.results.get(relation.id), review.freeze_for(relation.id),
                         review.identities.get(relation.id), relation.id in review.changed_identity,
                         review.blocked_reason(relation), relation.id in review.touched_relations(),
                         review.bites.get(relation.id), relation.id in review.replays, reruns_line=full)
    replayed = review.replays.get(relation.id)
    return text.append_text(replay_text(replayed)) if replayed and full else text


COLUMN_TITLES = {  # kind -> what the two compared sides are (§3), source first as a miss's note says them
    "permutation": ("f(x)", "f(shuffled x)"),
    "idempotence": ("f(x)", "f(f(x))"),
    "replay_ingest": ("ingest x once", "ingest x twice"),
    "split_merge": ("f(A ++ B)", "merge(f(A), f(B))"),
    "monotonic": ("f(x)", "f(x, field raised)"),
    "roundtrip": ("the input x", "inverse(f(x))"),
    "invariance": ("f(x)", "f(transform(x))"),
    "bound": ("the edge the relation states", "f at the edge"),
}


def column_titles(kind: str, note: str, differing: list[str]) -> tuple[str, str]:
    """What the two sides of a run's outputs are, source first: the kind's own
    (``COLUMN_TITLES``), or for a roundtrip that missed on the type of f(x), or on f(x) handed
    to the inverse pickled, the two things that run compared instead."""
    if kind == "roundtrip" and TYPE_MISS in differing:
        return "the type the relation names", "the type of f(x)"
    if kind == "roundtrip" and PICKLED_NOTE in note:
        return "inverse(f(x)) in a fresh process", "inverse(f(x)) in f's own process"
    return COLUMN_TITLES.get(kind, ("source output", "follow-up output"))


def _shrunk_view(relation, first, facts, header: Text, body: Text | None, source: tuple[str, str]) -> DetailView:
    """A missed relation whose miss was shrunk (SPEC §7: the smallest input first): the
    smallest input above the columns (``shrunktext.input_band``), the columns its two canonical
    outputs and under them the whole input's (``shrunktext.shrunk_columns``)."""
    left, right = shrunk_columns(facts, first)
    titles = column_titles(relation.kind, facts.note or first.note, facts.differing or first.differing)
    return DetailView(header, (f"{titles[0]}, smallest input", left), (f"{titles[1]}, smallest input", right),
                      body=body, source=source, lead=input_band(facts))


def detail_view(review: Review, kind: str, oid: str | None, saved: dict | None = None) -> DetailView | None:
    """The full-screen view opened with enter, or None. ``saved``: relation id -> replay
    sheet saved before this session (``engine.gate.review.Replayed``), shown when this session
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
        facts = shrunk_facts(first)
        if facts is not None:
            return _shrunk_view(relation, first, facts, header, body, (kind, oid))
        if first is None or first.source is None:
            return DetailView(header, body=body, source=(kind, oid))
        left, right = output_columns(first.source, first.followup, first.differing)
        source, followup = column_titles(relation.kind, first.note, first.differing)
        return DetailView(header, (f"{source} (canonical)", left), (f"{followup} (canonical)", right), body=body,
                          source=(kind, oid))
    if kind == "leases" and oid.startswith("w:"):
        lease = next((w for w in review.workspace_leases if w.workspace == oid[2:]), None)
        return DetailView(workspace_lease_text(lease)) if lease else None
    if kind == "leases":
        status = lease_of(review, oid)
        return DetailView(lease_text(status)) if status else None
    if kind == "quarantine" and oid.startswith("c:"):
        candidate = quarantine_item(review, oid)
        return DetailView(Text.assemble(lit(candidate.id, "bold"), "  candidate relation"),
                            body=candidate_text(candidate, review.candidate_states.get(candidate.path),
                                                review.head_sha))
    return None
