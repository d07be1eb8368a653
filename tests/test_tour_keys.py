"""The reviewer's whole flow on the sample, with real keys in tmux, counted (issue 18).

``relconsole demo`` runs in a private tmux server at 160x48. The reviewer reads the decision,
accepts a candidate (confirming it from the accept dialog), accepts the two valid drafted seed
rows and deletes the three rejected ones, renews the expiring lease, replays against the
merge base and freezes the intermittent miss. Every key sent is counted, except the letters
of the typed freeze reason; cursor moves are made by reading the screen, not assumed. The
goal is at most 25 keys; the count is printed (``pytest -s``) for the issue's note.
"""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

import pytest

from bench.gitrepo import git
from tests.conftest import TODAY
from tests.test_e2e_tmux import PROJECT_ROOT, Terminal, detail_head, pane_lines, terminal  # noqa: F401

pytestmark = pytest.mark.e2e

KEY_BUDGET = 25
QUARANTINE, LEASES, RELATIONS = 3, 2, 1
REASON = "a fingerprint collision drops a band on main too; widen the fingerprint (FIELD-12)"


class CountedKeys:
    """Sends keys to the terminal one at a time and counts them."""

    def __init__(self, term: Terminal):
        self.term = term
        self.sent: list[str] = []

    def __call__(self, *keys: str) -> None:
        for key in keys:
            self.term.keys(key)
            self.sent.append(key)

    def type_text(self, text: str) -> None:
        """Typed text (a reason): sent literally and not counted as keys."""
        self.term._run("send-keys", "-t", Terminal.SESSION, "-l", text)


def log_subjects(repo: Path) -> list[str]:
    return git(repo, "log", "--format=%s", "main").splitlines()


def move_to(term: Terminal, press: CountedKeys, wanted, what: str) -> None:
    """Press j until the detail strip's first line satisfies ``wanted`` (the focused pane's
    highlighted item), waiting for each move to show."""
    screen = term.screen()
    for _ in range(30):
        head = detail_head(screen)
        if wanted(head):
            return
        press("j")
        screen = term.wait_for(lambda s, h=head: detail_head(s) != h, f"the cursor to move towards {what}")
    raise AssertionError(f"j never reached {what}; last screen:\n{screen}")


def marks(screen: str) -> int:
    return sum(line.lstrip().startswith("☑") for line in pane_lines(screen, QUARANTINE))


def mark(term: Terminal, press: CountedKeys) -> None:
    """Space on the highlighted quarantine item; waits for the mark and the cursor's move (a
    key typed before the move shows would be judged against a stale screen)."""
    before = term.screen()
    press("space")
    term.wait_for(lambda s: marks(s) == marks(before) + 1, "the item to be marked")
    term.wait_for(lambda s: detail_head(s) != detail_head(before) or s.count("☑") > before.count("☑"),
                  "the cursor to move past the marked item")


def wait_commit(term: Terminal, repo: Path, count: int, prefix: str) -> None:
    """Wait until main holds ``count`` commits and the newest starts with ``prefix``."""
    term.wait_for(lambda s: len(log_subjects(repo)) == count,
                  f"a {prefix} commit (main: {log_subjects(repo)[:3]})", timeout=60)
    assert log_subjects(repo)[0].startswith(prefix), log_subjects(repo)


def test_the_reviewer_flow_on_the_sample_fits_the_key_budget(terminal: Terminal, tmp_path: Path):  # noqa: F811
    repo = tmp_path / "tour"
    child_env = {**terminal.env, "PYTHONPATH": str(PROJECT_ROOT), "GIT_CONFIG_NOSYSTEM": "1"}
    terminal.start(f"env -i {' '.join(shlex.quote(f'{k}={v}') for k, v in sorted(child_env.items()))} "
                   f"{shlex.quote(sys.executable)} -m relconsole demo --into {shlex.quote(str(repo))} "
                   f"--today {TODAY.isoformat()}", tmp_path)
    press = CountedKeys(terminal)

    # read the decision: the first run ends with the intermittent miss and a status line (no key)
    screen = terminal.wait_for(lambda s: any("bands.repeat_scans" in line for line in pane_lines(s, RELATIONS))
                               and "MISSED" in "".join(pane_lines(s, RELATIONS))
                               and not any("running" in line for line in pane_lines(s, RELATIONS))
                               and "decision table row" in s, "the first run and the decision", timeout=120)
    assert re.search(r"REJECT\s+decision table row 3:", screen)
    commits = len(log_subjects(repo))

    # accept the valid candidate, confirming it from the accept dialog, with the two valid rows
    press("4")
    terminal.wait_for(lambda s: "Accept" in s.splitlines()[-1], "quarantine keys in the footer")
    move_to(terminal, press, lambda h: "✓ valid" in h, "the valid candidate")
    mark(terminal, press)
    move_to(terminal, press, lambda h: h.split()[:1] == ["oracle/quarantine/rollout.monotonic.seeds.jsonl"],
            "the first drafted seed row")
    mark(terminal, press)
    mark(terminal, press)
    press("a")
    terminal.wait_for(lambda s: "Accept without a confirming second replay?" in s and "o: confirm first" in s,
                      "the accept dialog offering the second replay")
    press("o")
    terminal.wait_for(lambda s: sum("accept pending" in line for line in pane_lines(s, QUARANTINE)) == 3,
                      "the confirmed candidate and both rows pending", timeout=240)

    # mark the three rejected rows (the cursor is on the first), commit the accepts, delete the rows
    for _ in range(3):
        mark(terminal, press)
    press("c")
    terminal.wait_for(lambda s: "Commit catalog changes?" in s, "the catalog commit dialog")
    press("y")
    wait_commit(terminal, repo, commits + 1, "catalog:")
    terminal.wait_for(lambda s: marks(s) == 3 and not any("accept pending" in line or "mass_permutation" in line
                                                          for line in pane_lines(s, QUARANTINE)),
                      "the reloaded quarantine: the accepted items gone, the three rows still marked")
    press("d")
    dialog = terminal.wait_for(lambda s: "Delete from quarantine?" in s, "the delete dialog")
    assert dialog.count("drop row") == 3
    press("y")
    wait_commit(terminal, repo, commits + 2, "quarantine:")
    removed = [line.split("\t")[1] for line in git(repo, "show", "--name-status", "--format=", "main").splitlines()
               if line.startswith("D\t")]
    # the dialog said every file the commit removes (a new user missed the emptied seeds file)
    assert all(f"remove {path} (no row left)" in dialog for path in removed) and dialog.count("(no row left)") == len(removed)
    terminal.wait_for(lambda s: not any("rollout.monotonic" in line for line in pane_lines(s, QUARANTINE)),
                      "the reloaded quarantine without drafted seed rows")

    # renew the expiring lease
    press("3")
    terminal.wait_for(lambda s: "Renew" in s.splitlines()[-1], "lease keys in the footer")
    move_to(terminal, press, lambda h: h.split()[:1] == ["weather"], "the expiring weather lease")
    press("n")
    terminal.wait_for(lambda s: "Renew lease weather" in s, "the renewal form")
    press("Enter")
    wait_commit(terminal, repo, commits + 3, "lease:")
    terminal.wait_for(lambda s: any("ok weather" in line for line in pane_lines(s, LEASES)), "the renewed lease")

    # replay against the merge base; row 8 puts the cursor on the miss to freeze
    press("b")
    terminal.wait_for(lambda s: any("row 8 FREEZE" in line for line in pane_lines(s, RELATIONS))
                      and "replaying" not in s and "Freeze" in s.splitlines()[-1],
                      "the replay's row 8 with the Relations pane focused", timeout=300)
    press("f")
    terminal.wait_for(lambda s: "Commit a freeze for bands.repeat_scans" in s, "the freeze form")
    press.type_text(REASON)
    terminal.wait_for(lambda s: REASON[-20:] in s, "the typed reason")
    press("Enter", "Enter")  # fast: the second enter used to be lost while the focus moved
    wait_commit(terminal, repo, commits + 4, "freeze:")

    kinds = [s.split(":", 1)[0] for s in log_subjects(repo)[:4]]
    assert kinds == ["freeze", "lease", "quarantine", "catalog"]
    assert git(repo, "show", "--format=", "--name-only", "main").split() == ["oracle/freezes.json"]
    assert f"Reason: {REASON}" in git(repo, "log", "-1", "--format=%B", "main")
    print(f"\nreviewer flow on the sample: {len(press.sent)} keys plus the typed reason: {' '.join(press.sent)}")
    assert len(press.sent) <= KEY_BUDGET, press.sent
