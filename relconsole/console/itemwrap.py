"""An item's lines wrapped to a pane's width, for panes with rows to spare (issue 36).

A pane cuts each line of an item at its width with an ellipsis; when the pane has room
(``Pane._lay_out``), each line may take up to ``rows`` rows instead: broken at spaces or
after a ``/``, continuation rows indented two cells past the line's own indent (under the
text after a mark such as ``✗ `` or ``☐ ``), and the last row allowed cut with the
ellipsis as before.
Pure functions over Rich Text: styles are kept, nothing is rendered here.
"""

from __future__ import annotations

from rich.cells import cell_len, get_character_cell_size
from rich.text import Text

HANGING = 2  # continuation rows start this many cells past the line's own indent


def wrap_item(prompt: Text, width: int, rows: int) -> list[Text]:
    """Every line of ``prompt`` wrapped into at most ``rows`` rows of ``width`` cells
    (``wrap_line``), in order. ``rows`` 1: the lines as they are (a renderer cuts them)."""
    lines = prompt.split("\n", allow_blank=True)
    if rows <= 1 or width <= 0:
        return list(lines)
    return [row for line in lines for row in wrap_line(line, width, rows)]


def wrap_line(line: Text, width: int, rows: int) -> list[Text]:
    """``line`` as 1..``rows`` rows: each row but the last at most ``width`` cells; the last
    holds the rest (a renderer cuts it with an ellipsis when it is still too wide). Breaks
    at the last space that fits, else (one long word) after the last character that fits;
    the spaces at a break are dropped. A line that fits is returned alone, unchanged."""
    if cell_len(line.plain) <= width or rows <= 1:
        return [line]
    lead = len(line.plain) - len(line.plain.lstrip(" "))
    indent = min(lead + HANGING, width // 2)
    out: list[Text] = []
    rest, room = line, width
    while len(out) < rows - 1 and cell_len(rest.plain) > room:
        cut = break_at(rest.plain, room)
        row = rest[:cut]
        row.rstrip()
        out.append(row)
        tail = rest[cut:]
        skip = len(tail.plain) - len(tail.plain.lstrip(" "))
        rest = Text(" " * indent, end="") + tail[skip:]
        room = width
    out.append(rest)
    return out


def break_at(plain: str, width: int) -> int:
    """Where to end a row of ``plain`` that is wider than ``width`` cells: the index just
    after the last space or ``/`` (a path breaks between its folders) whose text before it
    fits, else the longest prefix that fits (at least one character, so a row advances)."""
    used, fits, space, text_seen = 0, 0, 0, False
    for n, char in enumerate(plain):
        if char == " " and text_seen:
            space = n + 1  # the text before this space fits (a wider one broke the loop)
        used += get_character_cell_size(char)
        if used > width:
            break
        fits = n + 1
        if char == "/" and text_seen:
            space = n + 1
        text_seen = text_seen or char != " "
    return space or max(1, fits)
