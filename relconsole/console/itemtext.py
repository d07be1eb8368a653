"""A candidate's and a lease's detail as literal Text: a quarantine candidate's verdicts,
second replay (§10), provenance and body; a dataset lease's manifest and state (§4); a
workspace lease's holder and generation (§5).
"""

from __future__ import annotations

from rich.text import Text

from relconsole.console.render import lit
from relconsole.engine.gate.acceptnote import base_miss_advice
from relconsole.engine.literal import literal


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
    if state.confirmed and state.base_miss:  # as `relconsole confirm` says it: the replays agree on a miss
        text.append(state.said, "bold yellow" if state.subject_not_on_base else "bold red")
        text.append(" (")
        text.append_text(lit(state.base_miss))
        text.append(")\n  ")
        text.append_text(lit(base_miss_advice(state)))
        text.append("; accept refuses it unless overridden", "dim")
        if state.reason:
            text.append("\n  the replays agree: ", "dim")
            text.append_text(lit(state.reason, "dim"))
    else:
        text.append(state.said, "green" if state.confirmed else "yellow")
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
