"""How wide each pane is when the four stand side by side (issue 36).

Four equal panes at 160 columns cut nearly every second line of the touched paths and the
relation results while the leases had room to spare. Each pane gets the columns every
relation id needs (``listing.pane_width_needed``); the columns left over go to the panes
whose text wants more: as many columns as its lines need to fill its rows when wrapped
(``wanted_width``), never more than its longest line. Pure functions over plain strings.
"""

from __future__ import annotations

from math import ceil

WRAP_SLACK = 1.25  # wrapped rows end at a space and continuation rows are indented: rows are not full


def wanted_width(lines: list[str], rows: int, need: int, chrome: int) -> int:
    """Columns (``chrome`` included: borders, thumb) a pane of ``rows`` text rows wants for
    ``lines``: enough for their cells, wrapped, to fill the rows, capped at the longest
    line; never under ``need``. ``rows`` 0 (not laid out yet): ``need``."""
    if rows <= 0 or not lines:
        return need
    cells = sum(len(line) for line in lines)  # len, not cell_len: 20,000 paths in a few ms
    longest = max(len(line) for line in lines) + chrome
    return max(need, min(longest, ceil(cells * WRAP_SLACK / rows) + chrome))


def share_width(total: int, need: int, wants: list[int]) -> list[int]:
    """Widths summing to ``total`` for panes that each need ``need`` and want ``wants``:
    every pane its need; the columns left in proportion to how much more each wants, up to
    its want; what is still left, one column at a time to the pane furthest from its want,
    and once every want is met, to each pane in turn. ``total`` under the needs:
    equal shares (the layout then is not side by side: ``listing.layout_class``)."""
    count = len(wants)
    if count == 0:
        return []
    if total < need * count:
        return [total // count + (1 if n < total % count else 0) for n in range(count)]
    widths = [need] * count
    extra = total - need * count
    more = [max(0, want - need) for want in wants]
    asked = sum(more)
    if asked:
        for n, wanted in enumerate(more):
            widths[n] += min(wanted, extra * wanted // asked)
    for step in range(total - sum(widths)):  # rounding, or everyone had their want
        short = max(range(count), key=lambda n: (wants[n] - widths[n], -n))
        widths[short if wants[short] > widths[short] else step % count] += 1
    return widths
