"""Detail views: a missed relation side by side, a candidate's body, a lease manifest.

All content is built as Rich Text from engine data and shown literally.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.screen import Screen
from textual.widgets import Static

from relconsole.console.render import lit
from relconsole.console.widgets.keybar import KeyBar
from relconsole.engine.literal import counted, literal


OUTLINE_LINES = 400  # lines of one output column before "… N more keys"
DIFF_LINES = 60  # disagreeing keys listed at the top of each column
VALUE_CHARS = 160  # characters of one value's repr in a column
_ABSENT = object()


def _ancestors(differing: set[str]) -> set[str]:
    """Dotted paths that contain a disagreeing key (``a`` and ``a.b`` for ``a.b.c``)."""
    out: set[str] = set()
    for dotted in differing:
        parts = dotted.split(".")
        out.update(".".join(parts[:n]) for n in range(1, len(parts)))
    return out


def _walk(value: Any, differing: set[str], within: set[str], path: tuple, indent: int):
    """Lazily yield ``(indent, label, value, mark, leaf, keyed)`` for each outline line.

    ``label`` is a dict key (``keyed``) or a list index; ``mark`` is ``≠`` (this path
    disagrees), ``›`` (a disagreeing key lies below) or ``""``. Nothing is rendered here,
    so the lines past the cap are only counted.
    """
    keyed = isinstance(value, dict)
    for key, item in (value.items() if keyed else enumerate(value)):
        here = path + (key,)
        dotted = ".".join(str(p) for p in here)
        mark = "≠" if dotted in differing else ("›" if dotted in within else "")
        nested = isinstance(item, (dict, list)) and bool(item)
        yield indent, key, item, mark, not nested, keyed
        if nested:
            yield from _walk(item, differing, within, here, indent + 1)


def _value(item: Any, style: str = "") -> Text:
    text = repr(item)
    return lit(text if len(text) <= VALUE_CHARS else text[:VALUE_CHARS] + "…", style)


_MARKS = {"≠": ("≠ ", "bold red"), "›": ("› ", "red"), "": ("  ", "")}


def _line(indent: int, label: Any, item: Any, mark: str, leaf: bool, keyed: bool) -> Text:
    prefix = Text(*_MARKS[mark])
    pad = "  " * indent
    hot = "reverse red" if mark == "≠" else ""
    if keyed:
        if not leaf:
            return Text.assemble(prefix, pad, lit(label, "bold"), ":")
        return Text.assemble(prefix, pad, lit(label, "bold"), ": ", _value(item, hot))
    if not leaf:
        return Text.assemble(prefix, pad, f"- [{label}]")
    return Text.assemble(prefix, pad, "- ", _value(item, hot))


def outline(value: Any, differing: set[str], path: tuple = (), indent: int = 0,
            limit: int = OUTLINE_LINES) -> list[Text]:
    """A canonical output as indented ``key: value`` lines, at most ``limit`` of them.

    A disagreeing key (its dotted path in ``differing``, as ``canon.path_text`` writes
    it; list indexes count as keys) is marked ``≠`` with its value reversed; a key with a
    disagreeing key somewhere below it is marked ``›``, so nested differences stay
    visible when folded away. Lines past ``limit`` are counted, not built: the last line
    says "… N more keys". A top-level scalar is one line, ``≠`` when ``(whole output)``
    disagrees.
    """
    whole = "(whole output)" in differing
    if not isinstance(value, (dict, list)) or not value:
        return [Text.assemble(Text(*_MARKS["≠" if whole else ""]), _value(value, "reverse red" if whole else ""))]
    lines: list[Text] = []
    if whole:
        lines.append(Text.assemble(Text(*_MARKS["≠"]), ("(whole output) disagrees: ", "bold"),
                                   f"{type(value).__name__} of {counted(len(value), 'entry', 'entries')}"))
    within = _ancestors(differing)
    rest = 0
    for entry in _walk(value, differing, within, path, indent):
        if len(lines) >= limit:
            rest += 1
            continue
        lines.append(_line(*entry))
    if rest:
        lines.append(Text(f"  … {rest} more keys (the disagreeing ones are listed at the top)", "dim"))
    return lines


def resolve(value: Any, dotted: str) -> Any:
    """The entry of ``value`` at a disagreeing key path as ``canon.path_text`` writes it
    (``Adelie.bill_length_mm_sum``, list indexes as digits, ``(whole output)``), or
    ``_ABSENT``. A dict key holding dots is found too (the longest key that matches wins)."""
    if dotted == "(whole output)":
        return value
    return _resolve(value, dotted.split("."))


def _resolve(node: Any, parts: list[str]) -> Any:
    if not parts:
        return node
    if isinstance(node, dict):
        for n in range(len(parts), 0, -1):
            key = ".".join(parts[:n])
            if key in node:
                found = _resolve(node[key], parts[n:])
                if found is not _ABSENT:
                    return found
        return _ABSENT
    if isinstance(node, list) and parts[0].isdigit() and int(parts[0]) < len(node):
        return _resolve(node[int(parts[0])], parts[1:])
    return _ABSENT


def disagreeing_lines(source: Any, followup: Any, differing: list[str],
                      limit: int = DIFF_LINES) -> tuple[list[Text], list[Text]]:
    """The top of both columns: each disagreeing key (at most ``limit``) with its value on
    that side, ``≠``-marked, the same keys in the same order on both sides so they line up.

    A key one side lacks shows ``(absent)``; an entry that names no key (``lost 2
    member(s)``, ``(no exception)``) is shown as written, once per side.
    """
    left: list[Text] = [Text(f"disagreeing keys ({len(differing)})", "bold")]
    right: list[Text] = [Text(f"disagreeing keys ({len(differing)})", "bold")]
    for dotted in differing[:limit]:
        a, b = resolve(source, dotted), resolve(followup, dotted)
        for column, found in ((left, a), (right, b)):
            line = Text.assemble(Text(*_MARKS["≠"]), lit(dotted, "bold"))
            if a is not _ABSENT or b is not _ABSENT:
                line.append(": ")
                line.append_text(Text("(absent)", "italic red") if found is _ABSENT else _value(found, "reverse red"))
            column.append(line)
    if len(differing) > limit:
        more = Text(f"  … {len(differing) - limit} more disagreeing keys", "dim")
        left.append(more)
        right.append(more.copy())
    return left, right


def output_columns(source: Any, followup: Any, differing: list[str],
                   limit: int = OUTLINE_LINES) -> tuple[list[Text], list[Text]]:
    """The two canonical outputs side by side (§11): the disagreeing keys first, then each
    whole output as an outline capped at ``limit`` lines, disagreeing keys marked ``≠``."""
    marked = set(differing)
    left, right = disagreeing_lines(source, followup, differing) if differing else ([], [])
    for column, value in ((left, source), (right, followup)):
        if column:
            column.append(Text("whole output", "bold"))
        column.extend(outline(value, marked, limit=limit))
    return left, right


def inputs_text(relation, record) -> Text:
    """The source and follow-up inputs of one run (``RunRecord.inputs``, see
    ``records.input_summary``): which file, its digest, how many rows, the first row's
    fields, and what the follow-up transformation did with this run's seed."""
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
    return text


def decision_row_text(label: str, decision) -> Text:
    """Which §8 row fired for ``decision`` and why, in the table's words: "run verdict:
    §8 row 3 fired (property_result fail) → REJECT property_fail · missed with no live
    freeze". A decision that is no table row (held, oracle_fault) says so."""
    from relconsole.engine.decision import FREEZE_FORBIDDEN, ROWS

    text = Text(f"{label}: ", "bold")
    if decision.row is None:
        text.append("no §8 row fired → ")
    else:
        evidence = FREEZE_FORBIDDEN[2] if decision.reason == FREEZE_FORBIDDEN[1] else ROWS.get(decision.row, ("", "", "?"))[2]
        text.append(f"§8 row {decision.row} fired ({evidence}) → ")
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
               else "a miss with no live freeze is not rerun (§6)")
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
        text.append("\nnot replayed: b replays it on HEAD and the merge base (§7) and lets §8 decide", "dim")
    return text


def saved_replay_text(saved) -> Text:
    """A replay sheet saved before this session for this HEAD (an ``engine.review.Replayed``,
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
            text.append("\n  committed after this run decided: r runs it again under the freeze (§6)", "cyan")
    if result.signature:
        text.append(f"\nsignature {result.signature[:23]}…", "dim")
    return text


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


def aligned_rows(left: list[Text], right: list[Text], widths: list[int], console) -> tuple[list[Text], list[Text]]:
    """The two columns' lines, each pair padded with blank lines to the same wrapped height
    (at ``widths``, cells), so that line ``n`` starts on the same row on both sides and the
    columns, scrolled together, keep a key beside its counterpart (issue 18)."""
    out: tuple[list[Text], list[Text]] = ([], [])
    for n in range(max(len(left), len(right))):
        pair = [column[n] if n < len(column) else Text("") for column in (left, right)]
        heights = [len(line.wrap(console, width)) for line, width in zip(pair, widths)]
        for column, line, height in zip(out, pair, heights):
            column.append(line if height == max(heights) else Text.assemble(line, "\n" * (max(heights) - height)))
    return out


class DetailView(NamedTuple):
    """What a detail view shows: ``header`` Text on top; ``left``/``right`` optional
    (title, lines) columns side by side (a missed relation's two canonical outputs); an
    optional scrolling ``body``."""

    header: Text
    left: tuple[str, list[Text]] | None = None
    right: tuple[str, list[Text]] | None = None
    body: Text | None = None


class DetailScreen(Screen):
    """A full-screen detail view of a ``DetailView``; ``escape``/``q`` goes back."""

    BINDINGS = [Binding("escape,q", "app.pop_screen", "Back", id="view.back",
                        tooltip="a detail view: back to the panes")]

    def __init__(self, view: DetailView):
        super().__init__()
        self.view = view
        self._following = False

    def on_mount(self) -> None:
        """The two output columns scroll together (issue 18): the same key sits on the same
        row on both sides, so scrolling one moves the other to the same offset."""
        if self.view.left and self.view.right:
            left, right = self.query_one("#detail-left"), self.query_one("#detail-right")
            self.watch(left, "scroll_y", lambda y: self._follow(right, y), init=False)
            self.watch(right, "scroll_y", lambda y: self._follow(left, y), init=False)
            self.call_after_refresh(self._align_columns)

    def on_resize(self) -> None:
        if self.view.left and self.view.right:
            self.call_after_refresh(self._align_columns)

    def _align_columns(self) -> None:
        """Line ``n`` of each column starts on the same row, at the columns' widths now."""
        statics = [self.query_one(f"#{column} Static", Static) for column in ("detail-left", "detail-right")]
        widths = [static.content_region.width for static in statics]
        if min(widths) <= 0 or getattr(self, "_aligned_for", None) == widths:
            return
        self._aligned_for = widths
        padded = aligned_rows(self.view.left[1], self.view.right[1], widths, self.app.console)
        for static, lines in zip(statics, padded):
            static.update(Text("\n").join(lines) if lines else Text("(empty)"))

    def _follow(self, other, y: float) -> None:
        if self._following or other.scroll_y == y:
            return
        self._following = True  # the other column's own watcher must not move this one back
        try:
            other.scroll_to(y=y, animate=False, immediate=True)
        finally:
            self._following = False

    def compose(self) -> ComposeResult:
        view = self.view
        yield Static(view.header, id="detail-header")
        if view.left and view.right:
            with Horizontal(id="detail-columns"):
                for column_id, (title, lines) in (("detail-left", view.left), ("detail-right", view.right)):
                    scroll = VerticalScroll(Static(Text("\n").join(lines) if lines else Text("(empty)")),
                                            id=column_id)
                    scroll.border_title = title
                    yield scroll
        if view.body is not None:
            yield VerticalScroll(Static(view.body), id="detail-body")
        yield KeyBar()


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
