"""A shrunk miss in the console (SPEC §3, §11): the smallest input a miss was shrunk to and its
two outputs, shown before the whole input's result.

``input_band`` is the detail screen's band above the two columns (the smallest input's rows as
a small table, or one JSON row per line where the table does not fit the width);
``shrunk_columns`` the two columns (the smallest input's outputs, then the whole input's, each
under a heading); ``summary_lines`` the two lines the main screen's strip and the detail
header give it; ``input_lines`` the body's lines on what was drawn and picked. The facts are
``engine.gate.shrunkfacts.shrunk_facts``'s; every value from the subject or its input is
shown literally (``render.lit``).
"""

from __future__ import annotations

from typing import Any

from rich.console import Console, ConsoleOptions, Group, RenderResult
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from relconsole.console.outline import ABSENT, output_columns, resolve
from relconsole.console.render import lit
from relconsole.engine.gate.shrunkfacts import ShrunkFacts, input_text
from relconsole.engine.literal import counted

WHOLE_CORPUS = "the whole corpus"  # ShrunkFacts.whole for a miss on the corpus itself
ROWS_SHOWN = 50  # rows of the smallest input listed before "… N more rows"
ROW_CHARS = 400  # characters of one row shown as JSON (the narrow form)
VALUE_CHARS = 60  # characters of one value in the strip's line
PICKS_SHOWN = 20  # corpus row indexes named in the body
HEADER_CELLS = 8  # cells of a field's name a table column keeps before folding it
COLUMN_GAP = 2  # cells between two table columns


def shrunk_words(facts: ShrunkFacts, seconds: bool = False) -> str:
    """``"3 rows of the corpus's 344 rows, shrunk in 13 tries"`` (``seconds``: and ``" (1.5
    s)"``): what the smallest input is and what shrinking it took. Untrusted (a drawn input's
    label): print with ``lit``."""
    took = f" ({facts.seconds:.1f} s)" if seconds else ""
    how = f", shrunk in {counted(facts.tries, 'try', 'tries')}{took}" if facts.tries else ""
    return f"{facts.what}{how}"


def _as_rows(value: Any) -> list[Any]:
    """The smallest input as a list of rows: a corpus input's rows, a drawn value as one row."""
    return list(value) if isinstance(value, list) else [value]


def _fields(rows: list[Any]) -> list[str] | None:
    """The union of the rows' keys in first-seen order, or None when a row is no mapping
    (then there is no table to make)."""
    if not rows or not all(isinstance(row, dict) for row in rows):
        return None
    return list(dict.fromkeys(str(key) for row in rows for key in row))


def _cell(row: dict, name: str) -> Text:
    for key, value in row.items():
        if str(key) == name:
            return lit(value if isinstance(value, str) else input_text(value, VALUE_CHARS))
    return Text("·", "dim")


class RowsView:
    """Rows shown as a table when its columns fit the width they are drawn at, each column as
    wide as its widest value (and at least ``HEADER_CELLS`` of its name; longer names fold),
    else as one JSON row per line (wrapped); ``needed`` field names are marked ``*``. Rows past
    ``ROWS_SHOWN`` are counted, not drawn."""

    def __init__(self, rows: list[Any], needed: list[str] = ()):
        self.rows, self.needed = rows[:ROWS_SHOWN], set(needed)
        self.more = max(0, len(rows) - ROWS_SHOWN)

    def _columns(self) -> list[tuple[Text, list[Text]]] | None:
        """(header, cells) per field, or None when a row is no mapping."""
        fields = _fields(self.rows)
        if not fields:
            return None
        return [(lit(name + (" *" if name in self.needed else ""),
                     "bold underline" if name in self.needed else "bold"),
                 [_cell(row, name) for row in self.rows]) for name in fields]

    def table(self, width: int) -> Table | None:
        """The rows as a table at most ``width`` cells wide, or None when it cannot be."""
        columns = self._columns()
        if not columns:
            return None
        widths = [max([cell.cell_len for cell in cells] + [min(header.cell_len, HEADER_CELLS)])
                  for header, cells in columns]
        if sum(widths) + COLUMN_GAP * (len(widths) - 1) > width:
            return None
        table = Table(box=None, padding=(0, COLUMN_GAP, 0, 0), show_edge=False, pad_edge=False)
        for (header, _cells), least in zip(columns, widths):
            table.add_column(header, min_width=least, overflow="fold")
        for n in range(len(self.rows)):
            table.add_row(*[cells[n] for _header, cells in columns])
        return table

    def lines(self) -> Text:
        return Text("\n").join(lit(input_text(row, ROW_CHARS)) for row in self.rows)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        table = self.table(options.max_width)
        yield table if table is not None else self.lines()
        if self.more:
            yield Text(f"… {counted(self.more, 'more row')}", "dim")

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement(1, options.max_width)


def input_band(facts: ShrunkFacts) -> tuple[str, Group]:
    """The detail screen's band above the columns: ``(title, renderable)``: what the smallest
    input is, the fields a drawn row's miss needs, and its rows (``RowsView``)."""
    head = lit(shrunk_words(facts), "bold")
    parts: list[Any] = [head]
    if facts.fields:
        needs = Text("the miss needs: ", "bold")
        needs.append_text(lit(", ".join(facts.fields)))
        needs.append(" (marked *; the other fields at their simplest value)", "dim")
        parts.append(needs)
    parts.append(RowsView(_as_rows(facts.input), facts.fields))
    if facts.advice:
        parts.append(Text(facts.advice, "dim"))  # relconsole's own words, no subject text inside
    return "smallest input that still misses", Group(*parts)


def _first_difference(facts: ShrunkFacts) -> Text:
    """``≠ key: source a, follow-up b`` for the first disagreeing key on the smallest input
    (`` · N more keys``), or what it raised."""
    if facts.error:
        return Text.assemble(("raised ", "bold red"), lit(facts.error, "red"))
    if not facts.differing:
        return lit(facts.note or "missed")
    key = facts.differing[0]
    values = [resolve(side, key) for side in (facts.source, facts.followup)]
    text = Text.assemble(("≠ ", "bold red"), lit(key, "bold"))
    if any(value is not ABSENT for value in values):
        shown = ["(absent)" if value is ABSENT else input_text(value, VALUE_CHARS) for value in values]
        text.append_text(lit(f": source {shown[0]}, follow-up {shown[1]}"))
    if len(facts.differing) > 1:
        text.append(f" · {counted(len(facts.differing) - 1, 'more key')}", "dim")
    return text


def summary_lines(facts: ShrunkFacts) -> Text:
    """Two lines for the strip and the header: ``smallest input: <what, tries>[; the miss
    needs: fields]`` and ``on it: ≠ key: source a, follow-up b`` (or what it raised)."""
    text = Text("smallest input: ", "bold")
    text.append_text(lit(shrunk_words(facts)))
    if facts.fields:
        text.append("; the miss needs: ")
        text.append_text(lit(", ".join(facts.fields)))
    text.append("\n  on it: ")
    return text.append_text(_first_difference(facts))


def _heading(words: str) -> Text:
    return Text(f"▸ {words}", "bold reverse")


def _section(source: Any, followup: Any, differing: list[str], error: str) -> tuple[list[Text], list[Text]]:
    """One section's two columns: the outputs (``output_columns``) or the error on both sides."""
    if error:
        line = Text.assemble(("raised ", "bold red"), lit(error, "red"))
        return [line], [line.copy()]
    return output_columns(source, followup, differing)


def _even(left: list[Text], right: list[Text]) -> None:
    """Pad the shorter column with blank lines, so what follows starts on the same line."""
    for column in (left, right):
        column.extend(Text("") for _ in range(max(len(left), len(right)) - len(column)))


def whole_words(facts: ShrunkFacts, first) -> str:
    """The input the miss was shrunk from, in words: ``"the whole corpus (344 rows)"`` (the
    count from the run's ``inputs``), ``"the drawn input before shrinking"``."""
    records = (getattr(first, "inputs", None) or {}).get("records")
    if facts.whole == WHOLE_CORPUS and isinstance(records, int):
        return f"{facts.whole} ({counted(records, 'row')})"
    return facts.whole


def shrunk_columns(facts: ShrunkFacts, first) -> tuple[list[Text], list[Text]]:
    """The detail view's two columns for a shrunk miss (titled as the smallest input's): its
    two canonical outputs (disagreeing keys first, ``≠``), then under ``▸ on <the whole
    input>`` the run's own outputs (``first``: the RunRecord), the heading on the same line
    on both sides."""
    left, right = _section(facts.source, facts.followup, facts.differing, facts.error)
    _even(left, right)
    whole_error = f"{first.error_type}: {first.error}" if first.error_type else ""
    if first.source is None and first.followup is None and not whole_error:
        return left, right
    for column in (left, right):
        column += [Text(""), _heading(f"on {whole_words(facts, first)}")]
    rest = _section(first.source, first.followup, first.differing, whole_error)
    return left + rest[0], right + rest[1]


def input_lines(facts: ShrunkFacts | None, record) -> Text:
    """The body's lines on drawn inputs and the smallest input (``record``: the first run's
    RunRecord): what was drawn and from which seed, the drawn input it missed on, and which
    corpus rows the smallest input picks. Empty when the run drew nothing and shrank nothing."""
    text = Text()
    drawn = record.drawn if isinstance(getattr(record, "drawn", None), dict) else {}
    if drawn.get("what") or drawn.get("tried"):
        text.append("\n  drawn      ", "bold")
        text.append_text(lit(f"{drawn.get('what') or 'inputs'}: tried {drawn.get('tried', '?')} "
                             f"from seed {drawn.get('seed', '?')}"))
    missed_on = drawn.get("missed_on") if isinstance(drawn.get("missed_on"), dict) else None
    if missed_on:
        text.append("\n  missed on  ", "bold")
        text.append_text(lit(missed_on.get("label") or input_text(missed_on)))
        text.append(" (the file input held)", "dim")
    if facts is None:
        return text
    text.append("\n  smallest   ", "bold")
    text.append_text(lit(shrunk_words(facts, seconds=True)))
    pick = ((record.shrunk or {}).get("recipe") or {}).get("pick")
    if isinstance(pick, list) and not missed_on:
        shown = ", ".join(str(i) for i in pick[:PICKS_SHOWN]) + (", …" if len(pick) > PICKS_SHOWN else "")
        text.append_text(lit(f": corpus rows {shown} (counting data rows from 0)", "dim"))
    return text
