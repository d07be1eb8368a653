"""Detail views: a missed relation side by side, a candidate's body, a lease manifest.

All content is built as Rich Text from engine data and shown literally.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Static

from relconsole.console.render import lit
from relconsole.engine.literal import literal


def outline(value: Any, differing: set[str], path: tuple = (), indent: int = 0) -> list[Text]:
    """A canonical output as indented ``key: value`` lines; disagreeing keys marked ``≠``."""
    lines: list[Text] = []
    pad = "  " * indent
    if isinstance(value, dict):
        for key, item in value.items():
            here = path + (key,)
            dotted = ".".join(str(p) for p in here)
            marked = dotted in differing
            prefix = Text("≠ " if marked else "  ", "bold red" if marked else "")
            if isinstance(item, (dict, list)) and item:
                lines.append(Text.assemble(prefix, pad, lit(key, "bold"), ":"))
                lines.extend(outline(item, differing, here, indent + 1))
            else:
                lines.append(Text.assemble(prefix, pad, lit(key, "bold"), ": ",
                                           lit(repr(item), "reverse red" if marked else "")))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            here = path + (index,)
            if isinstance(item, (dict, list)) and item:
                lines.append(Text.assemble("  ", pad, f"- [{index}]"))
                lines.extend(outline(item, differing, here, indent + 1))
            else:
                lines.append(Text.assemble("  ", pad, "- ", lit(repr(item))))
    else:
        marked = "(whole output)" in differing
        lines.append(Text.assemble("≠ " if marked else "  ", lit(repr(value))))
    return lines


def relation_text(relation, result, freeze, identity: str | None, changed: bool,
                  blocked: str | None = None, touched: bool = True, bites: bool | None = None,
                  replayed: bool = False) -> Text:
    """The header of a relation's detail: statement, input, verdict, reruns, freeze, and the
    exception when the subject raised."""
    text = Text()
    text.append_text(lit(relation.id, "bold"))
    text.append(f"  {relation.kind} · compare {relation.compare}"
                + (f" · quantum {relation.quantum:g}" if relation.quantum else ""), "dim")
    text.append("\n")
    text.append_text(lit(relation.statement, "italic"))
    text.append("\nsubject ")
    text.append_text(lit(relation.subject))
    text.append(" · input ")
    text.append_text(lit(relation.lease_id and f"lease {relation.lease_id}" or f"seeds {relation.seeds_path}"))
    if identity:
        text.append(f"\nidentity {identity[:19]}…", "dim")
        if changed:
            text.append("  Δ the patch changes this relation (ignored: the oracle comes from the base)", "bold yellow")
    if bites is False:
        text.append("\n⚠ does not bite: `relconsole bite` found no mutation of the subject it catches",
                    "bold yellow")
    if blocked:
        text.append("\n⊘ blocked: ", "bold red")
        text.append_text(lit(blocked, "red"))
    if result is None:
        text.append("\nnot run yet: press r" if touched else
                    "\nno touched path is owned by this relation: it is not part of this review", "dim")
        return text
    text.append("\nrun verdict: " if not replayed else "\nrun verdict (the replay below decides): ")
    row = f" (§8 row {result.verdict.row})" if result.verdict.row else ""
    text.append(f"{result.verdict.decision.upper()} {result.verdict.reason}{row}", "bold")
    if result.summary != result.verdict.reason:
        text.append(" · ")
        text.append_text(lit(result.summary))
    if result.first is not None and result.first.error_type:
        text.append("\nraised: ", "bold red")
        text.append_text(lit(f"{result.first.error_type}: {result.first.error}", "red"))
    elif result.first is not None:
        text.append("\nsource vs follow-up: ")
        text.append_text(lit(result.first.note or "-"))
        if result.first.differing:
            text.append(f"\ndisagreeing keys ({len(result.first.differing)}): ")
            text.append_text(lit(", ".join(result.first.differing[:12])))
    if result.reruns:
        text.append("\nreruns (every one recorded): "
                    + " ".join(("✓" if r.held else "✗") + f"seed {r.seed}" for r in result.reruns)
                    + f"  ({result.rerun_passes}/{len(result.reruns)} held)")
    if freeze is not None:
        text.append("\nfreeze: ")
        text.append_text(lit(f"{freeze.state} · {freeze.why} · reason: {freeze.raw.get('reason', '')}"))
    if result.signature:
        text.append(f"\nsignature {result.signature[:23]}…", "dim")
    return text


def replay_text(replayed) -> Text:
    """The replay section of a relation's detail: sheet, the §8 row that fired, both sides."""
    sheet, decision = replayed.sheet, replayed.decision
    text = Text("\nreplay: ", "bold")
    text.append(f"§8 row {decision.row} → {decision.decision.upper()} {decision.reason}", "bold")
    if decision.detail:
        text.append(" · ")
        text.append_text(lit(decision.detail))
    for side in ("head", "base"):
        misses, runs = replayed.misses(side)
        commit = str(sheet.get("runs", {}).get(side, {}).get("commit", ""))[:10]
        text.append(f"\n  {side.upper():<4} {commit}: missed {misses} of {runs} runs", "")
    text.append(f"\n  property_result {sheet.get('property_result')} · fixture pin "
                f"{(sheet.get('fixture_pin') or {}).get('state')}", "dim")
    text.append(f"\n  signature {_short(sheet.get('signature'))} · base {_short(sheet.get('base_signature'))}",
                "dim")
    lease = sheet.get("lease") or {}
    text.append("\n  workspace lease ", "dim")
    text.append_text(lit(f"{lease.get('workspace')} gen {lease.get('generation')} held by {lease.get('holder')}",
                         "dim"))
    if replayed.path:
        text.append("\n  sheet ", "dim")
        text.append_text(lit(str(replayed.path), "dim"))
    if decision.decision == "freeze":
        text.append("\n  in the Relations pane, f commits this freeze (lease id, signature and expiry copied; "
                    "you give the reason)",
                    "cyan")
    return text


def _short(signature) -> str:
    text = str(signature)
    return text if len(text) <= 23 else text[:23] + "…"


def workspace_lease_text(lease) -> Text:
    """A workspace lease (§5): who holds it, since when, until when, its generation."""
    text = Text.assemble(("workspace lease ", "bold"), lit(lease.workspace, "bold"))
    data = lease.to_json()
    text.append("\nholder ")
    text.append_text(lit(lease.holder))
    text.append(f" · generation {lease.generation} (a fencing token: sheets of an older one are stale)")
    text.append(f"\nacquired {data.get('acquired')} · expires {data.get('expires')}"
                f" · {int(lease.seconds_left())} s left", "dim")
    return text


class DetailScreen(Screen):
    """A full-screen detail view; ``escape``/``q`` goes back.

    ``header`` is Text shown on top; ``left``/``right`` are optional (title, lines)
    columns shown side by side (for a missed relation's two canonical outputs).
    """

    BINDINGS = [Binding("escape,q", "app.pop_screen", "Back")]

    def __init__(self, header: Text, left: tuple[str, list[Text]] | None = None,
                 right: tuple[str, list[Text]] | None = None, body: Text | None = None):
        super().__init__()
        self.header = header
        self.left = left
        self.right = right
        self.body = body

    def compose(self) -> ComposeResult:
        yield Static(self.header, id="detail-header")
        if self.left and self.right:
            with Horizontal(id="detail-columns"):
                for column_id, (title, lines) in (("detail-left", self.left), ("detail-right", self.right)):
                    scroll = VerticalScroll(Static(Text("\n").join(lines) if lines else Text("(empty)")),
                                            id=column_id)
                    scroll.border_title = title
                    yield scroll
        if self.body is not None:
            body = VerticalScroll(Static(self.body), id="detail-body")
            yield body
        yield Footer()


def candidate_text(candidate, state=None, head: str | None = None) -> Text:
    """A candidate's verdicts, second-replay state (a confirm.ConfirmState or None; ``head``
    is the reviewed commit, to say when the replays ran on another), provenance and full
    body, literally."""
    text = Text()
    text.append_text(lit(candidate.id, "bold"))
    text.append(f"  {candidate.path}\n", "dim")
    text.append_text(replay_state_text(state, candidate.valid, head))
    for note in candidate.notes:
        text.append("  ⚠ ", "yellow")
        text.append_text(lit(note, "yellow"))
        text.append("\n")
    for verdict in candidate.verdicts:
        if not getattr(verdict, "checked", True):
            text.append(f"  · {verdict.rule}: not checked (an earlier rule failed)\n", "dim")
            continue
        text.append("  ✓ " if verdict.ok else "  ✗ ", "green" if verdict.ok else "bold red")
        text.append(verdict.rule)
        if verdict.reason:
            text.append(": ")
            text.append_text(lit(verdict.reason, "" if verdict.ok else "red"))
        text.append("\n")
    text.append("provenance: ", "bold")
    text.append_text(lit(" · ".join(f"{k} {v}" for k, v in candidate.provenance().items() if v)))
    text.append("\n\n")
    text.append(literal(candidate.text))
    return text


def replay_state_text(state, valid: bool, head: str | None = None) -> Text:
    """The second replay (§10): state, reason, and each replay's lease and outcome per side;
    a note when they ran on another HEAD than ``head`` (their per-side results are then
    about older code, though the agreement still holds for these bytes)."""
    text = Text("second replay: ", style="bold")
    if not valid:
        return text.append("cannot run: the candidate is rejected\n", "dim")
    if state is None:
        return text.append("unknown\n", "dim")
    text.append(state.state.replace("_", " "), "green" if state.confirmed else "yellow")
    if state.reason:
        text.append(": ")
        text.append_text(lit(state.reason))
    for name, record in (("first", state.first), ("second", state.second)):
        if not record:
            continue
        text.append(f"\n  {name}: ", "bold")
        text.append_text(lit(_replay_summary(record), "dim"))
    if state.commit:
        text.append_text(lit(f"\n  discarded in {state.commit[:12]}", "red"))
    latest = state.second or state.first
    verdict = _what_it_shows(latest)
    ran_on = latest.get("head") if isinstance(latest, dict) else None
    if head and isinstance(ran_on, str) and ran_on != head:
        text.append(f"\n  ⚠ replayed on an older HEAD {ran_on[:12]}: what it shows is about that code", "yellow")
    elif verdict:
        text.append(f"\n  → {verdict[0]}", verdict[1])
    return text.append("\n")


def _what_it_shows(record: dict | None) -> tuple[str, str] | None:
    """What a replay's two sides say about the patch, in words (None when unknown)."""
    sides = record.get("sides") if isinstance(record, dict) and isinstance(record.get("sides"), dict) else {}
    head, base = (str((sides.get(k) or {}).get("outcome", "")) for k in ("head", "base"))
    if not head or not base:
        return None
    if base != "held":
        return ("it misses on the merge base too: it may be wrong about the code as it was", "bold yellow")
    if head != "held":
        return ("it catches this patch: it misses on HEAD and holds on the merge base", "bold green")
    return ("it holds on HEAD and on the merge base", "")


def _replay_summary(record: dict) -> str:
    """One line from a replay record: when, which worktree and lease generation, each side's outcome."""
    sides = record.get("sides") if isinstance(record.get("sides"), dict) else {}
    parts = [str(record.get("at", ""))]
    for side in ("head", "base"):
        value = sides.get(side) if isinstance(sides.get(side), dict) else None
        if value:
            parts.append(f"{side} {value.get('outcome', '?')} ({value.get('misses', '?')}/{value.get('runs', '?')} "
                         f"missed, signature {str(value.get('signature', '?'))[:12]})")
    lease = record.get("lease") if isinstance(record.get("lease"), dict) else {}
    parts.append(f"{record.get('worktree', '?')} worktree, lease generation {lease.get('generation', '?')}")
    return " · ".join(parts)


def lease_text(status) -> Text:
    """A lease's state, reason and manifest fields, literally."""
    text = Text()
    text.append_text(lit(status.id, "bold"))
    text.append(f"  {status.source}\n", "dim")
    text.append(f"state {status.state}: ", "bold")
    text.append_text(lit(status.reason))
    lease = status.lease
    if lease is not None:
        for key in ("path", "sha256", "expires", "owners", "allowed_relations", "notes"):
            value = getattr(lease, key)
            value = ", ".join(value) if isinstance(value, tuple) else value
            text.append(f"\n{key}: ", "bold")
            text.append_text(lit(value))
        if status.actual_sha256 and status.actual_sha256 != lease.sha256:
            text.append("\ncorpus hashes to: ", "bold red")
            text.append_text(lit(status.actual_sha256))
    return text
