"""Engine objects rendered as Rich ``Text`` for the panes, literally.

Every untrusted string (paths, ids, candidate bodies, failure messages) goes through
``literal`` and into ``Text`` objects, never into markup, so ``[bold]`` or an escape
sequence in a path shows as typed. Each state carries a word or symbol as well as a
colour so it reads on a monochrome terminal.
"""

from __future__ import annotations

from rich.text import Text

from relconsole.engine.oracle.candidates import Candidate
from relconsole.engine.oracle.seedrows import SeedRow
from relconsole.engine.oracle.leases import LeaseStatus
from relconsole.engine.literal import one_line
from relconsole.engine.repo.owners import Binding
from relconsole.engine.relations.records import RelationResult

STATE_STYLE = {
    "owned": ("●", "green"), "exempt": ("○", "dim"), "gap": ("✗ UNOWNED", "bold red"),
    "protected": ("⚑ PROTECTED", "bold yellow"), "unknown": ("? owners unknown", "bold yellow"),
    "ok": ("✓ ok", "green"), "expiring": ("⚠ expiring", "yellow"), "expired": ("✗ expired", "bold red"),
    "drifted": ("✗ drifted", "bold red"), "missing": ("✗ missing", "bold red"),
    "invalid": ("✗ invalid", "bold red"),
}
DECISION_STYLE = {"pass": "green", "freeze": "cyan", "hold": "yellow", "reject": "bold red",
                  "abort": "bold magenta"}


def lit(text: object, style: str = "") -> Text:
    """Untrusted text as a single-line Text, control characters made visible."""
    return Text(one_line(text), style=style)


def touched_prompt(binding: Binding, flags: list[str] = (), unexercised: int = 0, gap: bool = True) -> Text:
    """Two lines: status letter and path; then the owners or the gap, the changed lines no
    relation ran (``unexercised``: how many; ``gap``: whether they make a gap or only a
    warning) and the names of the review flags (§9) raised on this path.

    Built as one Text from (text, style) pieces, one span each (the pane lists 20,000 of
    these: a Text per piece, assembled and joined, cost 0.5 s of a console's load; Rich
    strips control codes from each piece, quickly for the ASCII ones, where one string of
    both lines takes its slow path). The same text and spans as assembling the pieces
    with ``lit``."""
    symbol, style = STATE_STYLE[binding.state]
    pieces: list[tuple[str, str]] = [(f"{binding.touched.status} ", "bold"), (one_line(binding.path), "")]
    if binding.touched.old_path:
        pieces += [(" ← ", "dim"), (one_line(binding.touched.old_path), "dim")]
    pieces += [("\n  ", ""), (symbol, style)]
    if binding.relations:
        pieces.append((" " + one_line(", ".join(binding.relations)), "dim"))
        if binding.via_import:
            pieces.append((" via import", "italic"))
    elif binding.state == "exempt":
        pieces.append((" exempt", "dim"))
    if unexercised:
        pieces.append((f" ◌ {unexercised} line{'s' if unexercised > 1 else ''} no relation ran",
                       "bold red" if gap else "yellow"))
    if flags:
        pieces.append((" ⚑ " + ", ".join(dict.fromkeys(flags)), "bold yellow"))
    return Text().append_tokens(piece for piece in pieces if piece[0])


# An abort is nobody's miss: whose it is to fix, in the word the Relations pane shows.
ABORT_WORDS = {"oracle_fault": "ORACLE FAULT (catalog keeper's)", "environment": "ENVIRONMENT (not the patch's)"}


def result_text(result: RelationResult | None, blocked: str | None, touched: bool, running: bool) -> tuple[str, Text]:
    """(symbol, words) for a relation's result: held, MISSED with rerun counts, blocked..."""
    if running:
        return "…", Text("running", "italic yellow")
    if result is None:
        if blocked:
            return "⊘", Text("BLOCKED", "bold red")
        return "·", Text("not run" if touched else "untouched", "dim")
    if result.outcome == "blocked":
        return "⊘", Text("BLOCKED", "bold red")
    if result.verdict.decision == "abort":  # nothing was judged: an environment or oracle fault
        return "⊘", Text(ABORT_WORDS.get(result.verdict.reason, "ABORT"), "bold red")
    if result.verdict.reason == "intermittent_on_base":  # not the patch's on this evidence: a replay says
        return "✗", Text("MISSED on base too", "bold yellow")
    if result.outcome == "vacuous":  # held only on empty outputs: proved nothing (§7)
        return "∅", Text("VACUOUS", "bold yellow")
    text = Text("MISSED", "bold red") if result.outcome == "missed" else Text("held", "green")
    if result.reruns:
        text.append(f" {result.rerun_passes}/{len(result.reruns)} reruns (need {result.freeze.pass_needed})",
                    "cyan")
    return ("✗" if result.outcome == "missed" else "✓"), text


def replay_words(replayed) -> Text:
    """``↻ row 8 FREEZE HEAD 2/5 base 3/5 missed`` for a relation's replay (§7, §8)."""
    decision = replayed.decision
    head, head_runs = replayed.misses("head")
    base, base_runs = replayed.misses("base")
    text = Text("  ↻ ", "dim")
    text.append(f"row {decision.row} {decision.decision.upper()}", DECISION_STYLE[decision.decision])
    text.append(f" HEAD {head}/{head_runs} base {base}/{base_runs} missed", "dim")
    return text


def relation_prompt(relation, result, blocked, touched, running, freeze, identity_changed,
                    bites=None, replayed=None) -> Text:
    """Two lines: result symbol and id; then result words, decision row, identity, bite
    verdict when it does not bite by comparison (``bites``: the cached ``bite.BiteVerdict``,
    its word as ``relconsole bite`` printed it), freeze, kind. A replayed relation gets a
    third line: the sheet's §8 row and both sides' misses."""
    symbol, words = result_text(result, blocked, touched, running)
    colour = words.spans[0].style if words.spans else words.style
    # one Text, its pieces appended in line order (5,000 relations: a Text per line, joined, cost twice as much)
    text = Text().append_tokens([(symbol + " ", colour)])
    if freeze is not None and freeze.state == "live":
        text.append("❄ ", "cyan")  # up front: a narrow pane cuts the end of the second line
    text.append_tokens([(one_line(relation.id), "bold" if touched else ""), ("\n  ", "")])
    text.append_text(words)
    second: list[tuple[str, str]] = []
    if result is not None and result.verdict.decision != "pass":
        row = f"·{result.verdict.row}" if result.verdict.row else ""
        second.append((f" {result.verdict.decision}{row}", DECISION_STYLE[result.verdict.decision]))
    if identity_changed:
        second.append((" Δ", "bold yellow"))
    if bites is not None and not bites.bites:
        second.append((f" · ⚠ {bites.verdict}", "bold yellow"))
    if freeze is not None:  # also after a run: the reruns say whether the freeze covers the miss
        live = freeze.state == "live"
        second.append((" · ❄ frozen" if live else f" · freeze {freeze.state}", "cyan" if live else "dim"))
    second.append((f" · {relation.kind}", "dim"))
    text.append_tokens(second)
    if replayed is not None and not running:
        text.append("\n")
        text.append_text(replay_words(replayed))
    return text


def lease_prompt(status: LeaseStatus) -> Text:
    """Two lines: state and lease id; then expiry, days left and owner."""
    symbol, style = STATE_STYLE[status.state]
    head = Text.assemble((symbol, style), " ", lit(status.id, "bold"))
    second = Text("  ")
    if status.lease is not None:
        left = status.days_left
        when = f"{-left} d ago" if left is not None and left < 0 else f"{left} d left"
        second.append(f"{status.lease.expires.isoformat()} · {when} · ", "dim")
        second.append_text(lit(", ".join(status.lease.owners), "dim"))
    else:
        second.append_text(lit(status.reason, "red"))
    return Text("\n").join([head, second])


def workspace_lease_prompt(lease, mine: bool = False) -> Text:
    """Two lines: held/expired and workspace; then holder, generation and time left (§5)."""
    left = lease.seconds_left()
    state, style = ("◆ held", "green") if left > 0 else ("◇ EXPIRED", "bold yellow")
    head = Text.assemble((state, style), (" workspace ", "dim"), lit(lease.workspace, "bold"))
    second = Text("  ")
    second.append_text(lit(lease.holder, "dim"))
    when = f"{int(left)} s left" if left > 0 else "expired: a new holder may take it"
    second.append(f" · gen {lease.generation} · {when}" + (" · this console" if mine else ""), "dim")
    return Text("\n").join([head, second])


def pin_prompt(name: str, state: str) -> Text:
    """Two lines: pin state and fixture name; then what the state means."""
    good = state == "match"
    head = Text.assemble(("✓ pin" if good else "✗ PIN", "green" if good else "bold red"), " ", lit(name))
    return Text("\n").join([head, Text("  hash matches" if good else "  hash differs: fixture drift",
                                         "dim" if good else "red")])


REPLAY_STATES = {  # state -> (symbol and words, style): readable without colour
    "unreplayed": ("○ not replayed (o replays)", "dim"),
    "replayed_once": ("◐ replayed once (o: second replay)", "yellow"),
    "confirmed": ("● confirmed by a second replay", "green"),
    "discarded": ("✗ discarded: replays disagree", "bold red"),
}


def replay_state_line(state, valid: bool = True) -> Text:
    """`` · <symbol> <state words>`` for a candidate's second-replay state (§10); a confirmed
    state whose replays missed on the base: ``✗ not confirmed: misses on the base``, as
    ``relconsole confirm`` says it (red; yellow when the base lacks the subject: a hold)."""
    if not valid:
        return Text("")
    words, style = REPLAY_STATES.get(state.state if state else "", ("? replay state unknown", "dim"))
    if state is not None and state.confirmed and state.base_miss:
        words, style = f"✗ {state.said}", "bold yellow" if state.subject_not_on_base else "bold red"
    return Text.assemble((" · ", "dim"), (words, style))


def misses_on_base(state) -> bool:
    """Whether a candidate's replays agree on a miss of the base (not confirmed, §10)."""
    return bool(state is not None and state.confirmed and state.base_miss)


def candidate_prompt(candidate: Candidate, marked: bool, pending: str | None, state=None) -> Text:
    """Two lines: mark box and id; then the verdict (first reason when rejected), the
    second-replay state and the first note; a candidate whose replays agree on a miss of
    the base: that alone (``replay_state_line``)."""
    box = "✚" if pending else ("☑" if marked else "☐")
    head = Text.assemble((box + " ", "bold cyan" if pending else "bold"), lit(candidate.id, "bold"))
    second = Text("  ")
    if pending:
        second.append(f"{pending} pending (c commits) · ", "bold cyan")
    if candidate.valid and misses_on_base(state):
        # what decides, whole in the pane at 80x24: "valid" and the notes are in the strip and the view
        second.append_text(replay_state_line(state)[len(" · "):])
    elif candidate.valid:
        second.append("✓ valid", "green")
        second.append_text(replay_state_line(state))
        if candidate.notes:
            second.append(" · ⚠ " + candidate.notes[0], "dim")
    else:
        second.append("✗ rejected: ", "bold red")
        second.append_text(lit(candidate.reasons[0], "red"))
    return Text("\n").join([head, second])


def seed_group_prompt(relation_id: str, count: int) -> Text:
    """Header line above a relation's drafted seed rows."""
    return Text.assemble(("▾ ", "dim"), lit(relation_id, "bold"), (f" · drafted seed rows ({count})", "dim"))


def seed_row_prompt(row: SeedRow, marked: bool, pending: str | None) -> Text:
    """Two lines: mark box, line number and the row text; then its verdict."""
    box = "✚" if pending else ("☑" if marked else "☐")
    head = Text.assemble(("  " + box + f" {row.line}: ", "bold cyan" if pending else "bold"), lit(row.text),
                         (f"  {row.id}", "dim"))
    second = Text("     ")
    if pending:
        second.append(f"{pending} pending (c commits) · ", "bold cyan")
    if row.valid:
        second.append("✓ valid", "green")
    else:
        second.append("✗ ", "bold red")
        second.append_text(lit("; ".join(row.reasons), "red"))
    return Text("\n").join([head, second])
