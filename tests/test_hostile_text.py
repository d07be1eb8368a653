"""Issue 18 "Hostile text": a drafter's bytes never reach a terminal, a notification or a
commit message raw.

A quarantine candidate's ``source`` carries an OSC title change (``ESC ] 0 ; pwned BEL``),
a clear screen (``ESC [ 2 J``), a C1 CSI (``U+009B``) and a newline followed by a forged
``Confirmed-by:`` trailer. It validates (provenance is free text); accepting it through the
CLI and through the console must leave no control character in what is printed, notified
or committed, keep ordinary Unicode readable, and let no line of the commit message start
with the forged trailer.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from relconsole.cli.main import main
from relconsole.console.app import ReviewApp
from bench.gitrepo import git
from tests.conftest import TODAY
from tests.test_console import SIZE, goto, settle

CANDIDATE = "oracle/quarantine/penguins.mass_permutation.yaml"
FORGED = "Confirmed-by: Mallory <mallory@example.invalid>"
READABLE = "Zürich ✓ 東京"  # ordinary Unicode stays as it is
# YAML double-quoted escapes: \e ESC, \a BEL, \x9b the C1 CSI, \n a newline
HOSTILE_YAML = rf'"ticket {READABLE} \e]0;pwned\a\e[2J \x9b2J\n{FORGED}"'
# C0 except tab and newline (which literal() keeps in multi-line text), DEL and C1
CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def plant_hostile_candidate(repo: Path) -> None:
    """Commit the hostile ``source`` into the valid candidate on main, then go back to the patch."""
    branch = git(repo, "symbolic-ref", "--short", "HEAD").strip()
    git(repo, "checkout", "-q", "main")
    path = repo / CANDIDATE
    path.write_text(re.sub(r"^source: .*$", lambda _m: f"source: {HOSTILE_YAML}", path.read_text(), flags=re.M))
    git(repo, "commit", "-qam", "quarantine: a drafted candidate with a hostile source")
    git(repo, "checkout", "-q", branch)


def assert_harmless_message(repo: Path) -> str:
    """The tip of main's message: no control (tab and newline are structure), the Unicode kept,
    the hostile bytes shown escaped, and no line that is the forged trailer."""
    message = git(repo, "log", "-1", "--format=%B", "main")
    assert not CONTROLS.search(message), repr(message)
    assert READABLE in message and "\\x1b]0;pwned\\x07" in message
    assert not any(line.strip() == FORGED for line in message.splitlines()), message
    trailers = subprocess.run(["git", "interpret-trailers", "--parse"], input=message, text=True,
                              capture_output=True, check=True).stdout
    assert "Mallory" not in trailers, trailers
    return message


def test_the_hostile_source_validates(demo_repo: Path, capsys):
    """The premise: provenance is free text, so only escaping keeps it harmless."""
    plant_hostile_candidate(demo_repo)
    code = main(["validate", "--repo", str(demo_repo), "--today", TODAY.isoformat()])
    out, err = capsys.readouterr()
    assert "penguins.mass_permutation: valid" in out
    assert not CONTROLS.search(out + err)


def test_accept_through_the_cli_prints_and_commits_no_control(demo_repo: Path, capsys):
    plant_hostile_candidate(demo_repo)
    code = main(["accept", "penguins.mass_permutation", "--override-unconfirmed",
                 "--repo", str(demo_repo), "--today", TODAY.isoformat()])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert not CONTROLS.search(out + err), repr(out + err)
    assert not any(line.strip() == FORGED for line in out.splitlines())
    assert_harmless_message(demo_repo)


async def test_accept_in_the_console_notifies_and_commits_no_control(demo_repo: Path):
    plant_hostile_candidate(demo_repo)
    app = ReviewApp(repo=str(demo_repo), today=TODAY)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await goto(pilot, "quarantine", f"c:{CANDIDATE}")
        await pilot.press("a", "y")  # the override dialog: accept unconfirmed
        await pilot.press("c", "y")
        await settle(pilot)
        notes = [(str(n.title), str(n.message)) for n in app._notifications]
    made = [title + message for title, message in notes if "commit made" in title + message]  # toasts are one line
    assert made, notes
    for title, message in notes:
        assert not CONTROLS.search(title + message), repr((title, message))
    assert "\\x1b]0;pwned\\x07" in made[0] or "accept penguins.mass_permutation" in made[0]
    assert_harmless_message(demo_repo)


def test_accepting_it_in_a_real_terminal_leaves_the_pane_title(demo_repo: Path, tmp_path: Path):
    """tmux records an OSC 0 title in ``#{pane_title}``: it must not change while the console
    shows the hostile candidate, its commit toast and the reloaded panes (skipped without
    tmux unless RELCONSOLE_REQUIRE_TMUX=1, as CI sets)."""
    from tests.test_e2e_tmux import Terminal, detail_head, pane_lines, review_command, tmux_or_skip
    tmux = tmux_or_skip()
    plant_hostile_candidate(demo_repo)
    home, scratch = tmp_path / "home", tmp_path / "tmp"
    home.mkdir()
    scratch.mkdir()
    terminal = Terminal(tmux, {"PATH": "/usr/bin:/bin", "HOME": str(home), "TMPDIR": str(scratch),
                               "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "TERM": "xterm-256color"})
    try:
        terminal.start(review_command(terminal), demo_repo)

        def title() -> str:
            return terminal._run("display", "-p", "-t", Terminal.SESSION, "#{pane_title}").stdout.strip()

        name = "penguins.mass_permutation"
        screen = terminal.wait_for(lambda s: any(name in line for line in pane_lines(s, 3))
                                   and "loading review" not in s, "the quarantine pane", 60)
        before = title()
        terminal.keys("4")  # the quarantine pane, its cursor on its first item
        terminal.wait_for(lambda s: "Accept" in s.splitlines()[-1], "quarantine keys in the footer")
        for _ in range(12):
            if detail_head(terminal.screen()).split()[:1] == [name]:
                break
            head = detail_head(terminal.screen())
            terminal.keys("j")
            terminal.wait_for(lambda s, h=head: detail_head(s) != h, "the cursor to move")
        assert detail_head(terminal.screen()).split()[:1] == [name], terminal.screen()
        assert title() == before  # the detail strip shows the source: escaped
        terminal.keys("a")
        terminal.wait_for(lambda s: "Accept without a confirming second replay?" in s, "the override dialog")
        terminal.keys("y")
        terminal.wait_for(lambda s: any("accept pending" in line for line in pane_lines(s, 3)), "accept pending")
        terminal.keys("c")
        terminal.wait_for(lambda s: "Commit catalog changes?" in s, "the commit dialog")
        tip = git(demo_repo, "rev-parse", "main").strip()
        terminal.keys("y")
        terminal.wait_for(lambda s: git(demo_repo, "rev-parse", "main").strip() != tip, "the commit")
        # the toast follows the commit: wait for it, or for the screen a raw ESC [ 2 J cleared
        screen = terminal.wait_for(lambda s: "catalog commit made" in s or not pane_lines(s, 0), "the toast")
        after = title()
    finally:
        terminal.kill()
    assert after == before and "pwned" not in after, (before, after)
    assert "catalog commit made" in screen and "pwned" in screen  # the toast shows the source, escaped (its text is there, not its effect)
    assert_harmless_message(demo_repo)
