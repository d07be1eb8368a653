"""Full-screen reports of the console, built as literal Text: gate health (how often each
§8 row fired), the review flags with the merge checklist (§9), and a dataset lease's history
from git log (§4).
"""

from __future__ import annotations

from rich.text import Text

from relconsole.console import render
from relconsole.console.render import lit
from relconsole.console.screens.detail import DetailView
from relconsole.engine.gate.review import Review


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
        if ack is None and review.flag_level(flag) == "warn":
            body.append(f"  · {flag.name} (warning)  ", "yellow")
        elif ack is None:
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
                    "patch's author acknowledges it: w; a warning only shows ([tool.relconsole] flags)\n", "dim")
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
