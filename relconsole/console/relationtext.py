"""A relation's detail as literal Text (SPEC §11): its header (statement, input, bite,
verdict, freeze), and the scrolling body: the run's inputs, the §8 row that fired, every
rerun (§6) and the replay sheet with both sides (§7).
"""

from __future__ import annotations

from rich.text import Text

from relconsole.console.render import lit
from relconsole.console.shrunktext import input_lines, summary_lines
from relconsole.engine import docsref
from relconsole.engine.gate.shrunkfacts import shrunk_facts
from relconsole.engine.literal import counted


def inputs_text(relation, record) -> Text:
    """The source and follow-up inputs of one run (``RunRecord.inputs``, see
    ``runner.input_summary``): which file, its digest, how many rows, the first row's
    fields, what the follow-up transformation did with this run's seed, and what was drawn
    after it and the smallest input a miss was shrunk to (``shrunktext.input_lines``)."""
    facts = getattr(record, "inputs", None) or {}
    text = Text("inputs\n", "bold")
    text.append("  source     ", "bold")
    if not facts:
        text.append_text(lit(relation.lease_id and f"lease {relation.lease_id}" or f"seeds {relation.seeds_path}"))
        return text.append(" (this run recorded nothing more about its input)", "dim")
    lease = facts.get("lease")
    text.append_text(lit(f"lease {lease} · " if lease else "seeds · "))
    text.append_text(lit(facts.get("path", "?")))
    if "records" in facts:
        unit = "rows" if facts.get("kind") == "lease" else "seed rows"
        text.append(f" · {facts['records']} {unit}")
    fields = facts.get("fields") or []
    if fields:
        more = int(facts.get("field_count", len(fields))) - len(fields)
        count = int(facts.get("field_count", len(fields)))
        text.append(f" · {count} field{'s' if count != 1 else ''}: ")
        text.append_text(lit(", ".join(fields) + (f", … {more} more" if more > 0 else ""), "dim"))
    text.append("\n             sha256 ", "dim")
    text.append_text(lit(facts.get("sha256") or "?", "dim"))
    text.append("\n  follow-up  ", "bold")
    text.append_text(lit(facts.get("followup") or f"{relation.kind} (not recorded)"))
    if record.note:
        text.append("\n  compared   ", "bold")
        text.append_text(lit(record.note))
    return text.append_text(input_lines(shrunk_facts(record), record))


def decision_row_text(label: str, decision) -> Text:
    """Which §8 row fired for ``decision`` and why, in the table's words: "run verdict:
    §8 row 3 fired (property_result fail) → REJECT property_fail · missed with no live
    freeze". A decision that is no table row (held, oracle_fault) says so."""
    from relconsole.engine.decision import FREEZE_FORBIDDEN, ROWS

    text = Text(f"{label}: ", "bold")
    if decision.row is None:
        text.append("no decision table row fired → ")
    else:
        evidence = FREEZE_FORBIDDEN[2] if decision.reason == FREEZE_FORBIDDEN[1] else ROWS.get(decision.row, ("", "", "?"))[2]
        text.append(f"{docsref.decision_row(decision.row)} fired ({evidence}) → ")
    text.append(f"{decision.decision.upper()} {decision.reason}", "bold")
    if decision.detail:
        text.append(" · ")
        text.append_text(lit(decision.detail))
    return text


def rerun_lines(result) -> list[Text]:
    """The rerun history (§6): one line per rerun with its seed, held/missed, seconds and
    its own disagreeing keys or exception; a first line with the count against the freeze."""
    freeze = result.freeze
    needed = f", needed {freeze.pass_needed}" if freeze is not None and result.reruns else ""
    head = Text(f"reruns ({len(result.reruns)}, {result.rerun_passes} held{needed})", "bold")
    if not result.reruns:
        why = ("it held on the first run" if result.first is not None and result.first.held
               else f"a miss with no live freeze is not rerun ({docsref.see('freezes')})")
        return [head.append(f": none; {why}", "dim")]
    lines = [head]
    for number, record in enumerate(result.reruns, 1):
        line = Text(f"  {number:>2}. seed {record.seed:<6} ")
        line.append("✓ held  " if record.held else "✗ missed", "green" if record.held else "bold red")
        line.append(f" {record.seconds:6.2f} s  ", "dim")
        if record.error_type:
            line.append_text(lit(f"{record.error_type}: {record.error}", "red"))
        elif record.differing:
            shown = record.differing[:6]
            line.append_text(lit("≠ " + ", ".join(shown)
                                 + (f", … {len(record.differing) - len(shown)} more" if len(record.differing) > 6
                                    else "")))
        if record.note and not record.held:
            line.append_text(lit(f" ({record.note})", "dim"))
        lines.append(line)
    return lines


def relation_body(relation, result, replayed=None, saved=None) -> Text:
    """The scrolling part of a relation's detail: the run's inputs, the §8 row of the run
    verdict, the rerun history, and the replay sheet with its own §8 row when there is one:
    this session's (``replayed``), else one saved earlier for this HEAD (``saved``, the
    sheet ``f`` goes by, issue 18)."""
    text = Text()
    if result is None:
        text.append("not run yet: press r", "dim")
        return text.append_text(saved_replay_text(saved)) if saved is not None and replayed is None else text
    if result.first is not None:
        text.append_text(inputs_text(relation, result.first))
        text.append("\n\n")
    text.append_text(decision_row_text("run verdict", result.verdict))
    text.append("\n\n")
    text.append_text(Text("\n").join(rerun_lines(result)))
    text.append("\n")
    if replayed is not None:
        text.append_text(replay_text(replayed))
    elif saved is not None:
        text.append_text(saved_replay_text(saved))
    else:
        text.append("\nnot replayed: b replays it on HEAD and the merge base and lets the decision table decide "
                    f"({docsref.see('judge')})", "dim")
    return text


def saved_replay_text(saved) -> Text:
    """A replay sheet saved before this session for this HEAD (an ``engine.gate.review.Replayed``,
    decided again after fencing): what ``f`` goes by until ``b`` replays again."""
    text = Text("\nreplay sheet saved earlier for this HEAD (f goes by it; b replays again)", "bold")
    return text.append_text(replay_text(saved))


def relation_text(relation, result, freeze, identity: str | None, changed: bool,
                  blocked: str | None = None, touched: bool = True, bites=None,
                  replayed: bool = False, reruns_line: bool = True) -> Text:
    """The header of a relation's detail: statement, input, bite verdict (``bites``: the cached
    ``bite.BiteVerdict``, in the words ``relconsole bite`` printed), verdict, reruns, freeze,
    and the exception when the subject raised. ``reruns_line`` False leaves the one-line rerun
    summary out (the detail screen lists every rerun in its body, ``rerun_lines``)."""
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
    if bites is not None:  # the cached verdict, in the words `relconsole bite` printed
        text.append(("\n✓ " if bites.bites else "\n⚠ ") + bites.words(), "dim" if bites.bites else "bold yellow")
    if blocked:
        text.append("\n⊘ blocked: ", "bold red")
        text.append_text(lit(blocked, "red"))
    if result is None:
        text.append("\nnot run yet: press r" if touched else
                    "\nno touched path is owned by this relation: it is not part of this review", "dim")
        return text
    _append_result(text, result, freeze, replayed, reruns_line)
    return text


def _append_result(text: Text, result, freeze, replayed: bool, reruns_line: bool) -> None:
    """The run's part of a relation's header, appended to ``text``: verdict and §8 row, the
    smallest input a miss was shrunk to and the first difference on it (``summary_lines``),
    the whole input's exception or disagreeing keys, the rerun summary, the freeze and the
    signature."""
    text.append("\nrun verdict: " if not replayed else "\nrun verdict (the replay below decides): ")
    row = f" · {docsref.decision_row(result.verdict.row)}" if result.verdict.row else ""
    text.append(f"{result.verdict.decision.upper()} {result.verdict.reason}{row}", "bold")
    if result.summary != result.verdict.reason:
        text.append(" · ")
        text.append_text(lit(result.summary))
    facts = shrunk_facts(result.first)
    if facts is not None:  # the smallest input first (SPEC §7), then the whole input's result
        text.append("\n")
        text.append_text(summary_lines(facts))
    on = f"on {facts.whole}, " if facts is not None else ""
    if result.first is not None and result.first.error_type:
        text.append(f"\n{on}raised: ", "bold red")
        text.append_text(lit(f"{result.first.error_type}: {result.first.error}", "red"))
    elif result.first is not None:
        text.append(f"\n{on}source vs follow-up: ")
        text.append_text(lit(result.first.note or "-"))
        if result.first.differing:
            text.append(f"\n{on}disagreeing keys ({len(result.first.differing)}): ")
            text.append_text(lit(", ".join(result.first.differing[:12])))
    if result.reruns and reruns_line:
        text.append("\nreruns (every one recorded): "
                    + " ".join(("✓" if r.held else "✗") + f"seed {r.seed}" for r in result.reruns)
                    + f"  ({result.rerun_passes}/{len(result.reruns)} held)")
    if freeze is not None:
        text.append("\nfreeze: ")
        text.append_text(lit(f"{freeze.state} · {freeze.why} · reason: {freeze.raw.get('reason', '')}"))
        if result.freeze is None and result.verdict.decision != "pass":
            # the verdict above was decided before this freeze row existed (a new user read
            # "live" beside "missed with no live freeze" as a contradiction)
            text.append("\n  committed after this run decided: r runs it again under the freeze "
                        f"({docsref.see('freezes')})", "cyan")
    if result.signature:
        text.append(f"\nsignature {result.signature[:23]}…", "dim")


PROPERTY_WORDS = {"fail": "every HEAD run missed: deterministic",
                  "pass": "not every HEAD run missed"}  # §7's definition, said where the word shows


def replay_text(replayed) -> Text:
    """The replay section of a relation's detail: sheet, the §8 row that fired, both sides."""
    sheet, decision = replayed.sheet, replayed.decision
    text = Text("\n")
    text.append_text(decision_row_text("replay", decision))
    evidence = sheet.get("evidence") if isinstance(sheet.get("evidence"), dict) else {}
    for side in ("head", "base"):
        misses, runs = replayed.misses(side)
        commit = str(sheet.get("runs", {}).get(side, {}).get("commit", ""))[:10]
        text.append(f"\n  {side.upper():<4} {commit}: missed {misses} of {counted(runs, 'run')}", "")
        first = evidence.get(side) if isinstance(evidence.get(side), dict) else None
        if first and first.get("describe"):
            text.append(f" · first miss (seed {first.get('seed')}): ", "dim")
            text.append_text(lit(first["describe"], "dim"))
    if isinstance(evidence.get("blocked"), str):
        text.append("\n  ")
        text.append_text(lit(evidence["blocked"], "red"))
    result = sheet.get("property_result")
    text.append(f"\n  property_result {result} ({PROPERTY_WORDS.get(result, 'not recorded')}) · fixture pin "
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
