"""The console in a real terminal at the sizes issue 18 names: one tmux session resized from
160x48 down to 30x8, and at each size what a reviewer must see (skipped without tmux unless
RELCONSOLE_REQUIRE_TMUX=1, as CI sets).

At every size: the decision word, and ``? Help`` and ``q Quit`` in the key bar. Where panes
are shown side by side, no relation id is cut (the pane is as wide as the longest id needs):
four across when four fit, two by two when two fit, and at 30x8 the focused pane's items.
"""

from __future__ import annotations

from pathlib import Path

from relconsole.engine.gate.review import load_review
from tests.conftest import TODAY
from tests.test_e2e_tmux import Terminal, review_command, terminal  # noqa: F401  (the fixture)

SIZES = [(160, 48), (120, 40), (100, 30), (80, 24), (70, 24), (30, 8)]


def panes_across(screen: str) -> int:
    """How many panes stand side by side on the screen's widest row of pane borders."""
    return max((line.count("│") // 2 for line in screen.splitlines()), default=0)


def fits(screen: str, width: int) -> bool:
    """Whether ``screen`` is the console drawn for ``width`` columns with what must show: no row
    wider, every pane row closed by its right border (not the last size's layout cut by tmux),
    the decision, and the key bar's ``? Help`` and ``q Quit`` with no entry cut short."""
    lines = screen.rstrip("\n").splitlines()
    keybar = [line for line in lines[-2:] if "? Help" in line or "q Quit" in line]  # its one or two rows
    return (bool(lines) and max(map(len, lines)) <= width
            and all(line.rstrip().endswith("│") for line in lines if line.startswith("│"))
            and "REJECT" in screen and "? Help" in screen and "q Quit" in screen
            and not any(line.rstrip().endswith("…") for line in keybar))


def relations_pane(screen: str) -> list[str]:
    """The text of the second pane from the left (Relations, in four across and in the top
    row of two by two) on each row above the first bottom border."""
    rows = []
    for line in screen.splitlines():
        if line.startswith("╰"):
            break
        cells = line.split("│")
        if len(cells) >= 5:
            rows.append(cells[3])
    return rows


def relation_ids(repo: Path) -> list[str]:
    with load_review(repo, "main", today=TODAY) as review:
        return [r.id for r in review.relations]


def test_the_console_fits_each_terminal_size(demo_repo: Path, terminal: Terminal):  # noqa: F811
    ids = relation_ids(demo_repo)
    terminal.start(review_command(terminal), demo_repo)
    terminal.wait_for(lambda s: "REJECT" in s and "loading review" not in s, "the review's decision", 120)
    terminal.keys("2")  # the Relations pane, where the ids are
    seen = {}
    for width, height in SIZES:
        terminal._run("resize-window", "-t", Terminal.SESSION, "-x", str(width), "-y", str(height))
        screen = terminal.wait_for(lambda s, w=width: fits(s, w), f"the console laid out for {width}x{height}", 60)
        seen[(width, height)] = screen
        across = panes_across(screen)
        assert across >= 1, screen
        if across > 1:  # panes side by side: an id the Relations pane lists is listed whole
            words = [word for row in relations_pane(screen) for word in row.split()]
            cut = [word for word in words if word.endswith("…") and len(word) > 6
                   and any(rid.startswith(word.rstrip("…")) for rid in ids)]
            assert not cut and any(rid in words for rid in ids), (cut, screen)
    assert panes_across(seen[(160, 48)]) == 4
    assert all(panes_across(seen[size]) == 2 for size in [(100, 30), (80, 24), (70, 24)])
    tiny = seen[(30, 8)]
    assert any(rid[:20] in tiny for rid in ids), tiny  # the focused pane's items, not an empty frame
    assert terminal.alive()
    terminal.keys("q")
