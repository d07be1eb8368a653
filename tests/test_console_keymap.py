"""The reviewer's keymap (issue 17): binding ids, a TOML keymap applied through Textual's
own keymap, problems as notifications, and the help, key bar and palette showing the keys
in force.

Expected keys come from the bindings and the keymap file the test writes, never from the
words the console prints.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st
from rich.console import Console
from textual.widgets import Static

from relconsole.cli.main import build_parser
from relconsole.console.app import ReviewApp
from relconsole.console.commands import palette_entries
from relconsole.console.bindings import console_contexts, default_keys, load_keymap
from relconsole.console.keymap import KEYMAP_ENV, key_names, keymap_path, split_keys
from relconsole.console.screens.detail import DetailScreen
from relconsole.console.screens.help import HelpScreen
from relconsole.console.widgets.keybar import KeyBar
from relconsole.console.widgets.pane import Pane
from tests.conftest import TODAY
from tests.test_console import SIZE, settle, until

CONSOLE_DOC = Path(__file__).resolve().parents[1] / "docs" / "console.md"
DEFAULTS = default_keys(ReviewApp.BINDINGS)


def binding(binding_id: str):
    return next(b for bindings in console_contexts(ReviewApp.BINDINGS).values() for b in bindings
                if b.id == binding_id)


def write_keymap(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "keys" / "keymap.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


# --- ids and the file, without the console -------------------------------------------------


def test_every_binding_of_the_app_and_its_screens_has_a_unique_id():
    everything = [b for bindings in console_contexts(ReviewApp.BINDINGS).values() for b in bindings]
    ids = [b.id for b in everything]
    assert None not in ids
    assert len(ids) == len(set(ids))


def test_the_console_guide_lists_exactly_the_binding_ids_with_their_default_keys():
    text = CONSOLE_DOC.read_text(encoding="utf-8")
    section = text.split("## Keymaps", 1)[1].split("\n## ", 1)[0]
    rows = dict(re.findall(r"^\| `([^`]+)` \| ([^|]+?) \|", section, re.M))
    assert set(rows) == set(DEFAULTS)
    for binding_id, keys in rows.items():  # the default keys column cannot drift either
        assert keys.replace("`", "").strip() == key_names(",".join(DEFAULTS[binding_id])), binding_id


def test_moving_a_key_takes_it_from_the_action_that_had_it(tmp_path):
    # k belongs to "previous item" (with up); the checklist moves from m to k
    assert "k" in DEFAULTS["cursor.up"] and len(DEFAULTS["cursor.up"]) > 1
    keymap = load_keymap(write_keymap(tmp_path, '[keys]\nmerge_checklist = "k"\n'), ReviewApp.BINDINGS)
    assert keymap.problems == []
    assert keymap.active["merge_checklist"] == ["k"]
    assert keymap.active["cursor.up"] == [k for k in DEFAULTS["cursor.up"] if k != "k"]
    changed = {bid for bid in DEFAULTS if keymap.active[bid] != DEFAULTS[bid]}
    assert changed == {"merge_checklist", "cursor.up"}


def test_a_key_given_to_two_ids_keeps_both_defaults_and_the_rest_applies(tmp_path):
    path = write_keymap(tmp_path, '[keys]\nrun = "ctrl+r"\nreplay = "ctrl+r"\nfreeze = ["F", "f9"]\n')
    keymap = load_keymap(path, ReviewApp.BINDINGS)
    assert keymap.active["run"] == DEFAULTS["run"] and keymap.active["replay"] == DEFAULTS["replay"]
    assert keymap.active["freeze"] == ["F", "f9"]
    assert len(keymap.problems) == 1 and str(path) in keymap.problems[0]


def test_taking_the_only_key_of_another_action_is_refused(tmp_path):
    assert len(DEFAULTS["run"]) == 1
    keymap = load_keymap(write_keymap(tmp_path, f'[keys]\nhelp = "{DEFAULTS["run"][0]}"\n'), ReviewApp.BINDINGS)
    assert keymap.active["help"] == DEFAULTS["help"] and keymap.active["run"] == DEFAULTS["run"]
    assert len(keymap.problems) == 1 and keymap.keys == {}


@pytest.mark.parametrize("text, problems", [
    ('[keys]\nrun = "r"\nnot_a_binding = "z"\n', 1),   # unknown id
    ('[keys]\nrun = "ctlr+r"\n', 1),                   # unknown key name
    ('[keys]\nrun = 5\n', 1),                          # not a key string
    ('[keys]\nrun = "ctrl+q"\n', 1),                   # Textual's quit
    ('run = "z"\n', 1),                                # outside [keys]
])
def test_bad_entries_keep_their_defaults(tmp_path, text, problems):
    path = write_keymap(tmp_path, text)
    keymap = load_keymap(path, ReviewApp.BINDINGS)
    assert keymap.active == DEFAULTS
    assert len(keymap.problems) == problems and all(str(path) in p for p in keymap.problems)


def test_a_syntax_error_names_the_file_and_line(tmp_path):
    path = write_keymap(tmp_path, '[keys]\nrun = "r"\nreplay = = "b"\n')
    keymap = load_keymap(path, ReviewApp.BINDINGS)
    assert keymap.active == DEFAULTS and keymap.keys == {}
    assert len(keymap.problems) == 1 and keymap.problems[0].startswith(f"{path}:3:")


def test_a_missing_file_is_no_keymap(tmp_path):
    keymap = load_keymap(tmp_path / "absent.toml", ReviewApp.BINDINGS)
    assert keymap.active == DEFAULTS and keymap.problems == [] and keymap.keys == {}


@given(st.dictionaries(st.sampled_from(sorted(DEFAULTS) + ["nope"]),
                       st.lists(st.sampled_from(["a", "k", "m", "r", "x", "escape", "enter", "f5", "ctrl+r",
                                                 "ctrl+q", "?", "bogus+k"]), min_size=0, max_size=3),
                       max_size=6))
@settings(max_examples=150, deadline=None)
def test_any_keymap_leaves_every_action_a_key_and_no_new_clash(requested):
    from relconsole.console.keymap import reserved_keys, resolve
    contexts = console_contexts(ReviewApp.BINDINGS)
    keymap = resolve(Path("k.toml"), contexts, {k: ",".join(v) for k, v in requested.items()},
                     reserved_keys(contexts))
    assert all(keymap.active[bid] for bid in DEFAULTS)
    context_of = {b.id: name for name, bindings in contexts.items() for b in bindings}
    for bid, keys in keymap.active.items():  # a key shares an action only where it did by default
        for other, other_keys in keymap.active.items():
            shared = set(keys) & set(other_keys)
            if other != bid and context_of[other] == context_of[bid] and shared:
                assert shared <= set(DEFAULTS[bid]) & set(DEFAULTS[other]), (bid, other, shared)
    for bid, keys in requested.items():  # an entry applies as written, or keeps (some of) its defaults
        if bid in DEFAULTS:
            asked = split_keys(",".join(keys)) if keys else None
            assert keymap.active[bid] == asked or set(keymap.active[bid]) <= set(DEFAULTS[bid])


def test_where_the_keymap_is_read(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert keymap_path() == tmp_path / "xdg" / "relconsole" / "keymap.toml"
    monkeypatch.setenv(KEYMAP_ENV, str(tmp_path / "env.toml"))
    assert keymap_path() == tmp_path / "env.toml"
    assert keymap_path(tmp_path / "flag.toml") == tmp_path / "flag.toml"
    for command in ("review", "demo"):
        assert build_parser().parse_args([command, "--keymap", "x.toml"]).keymap == "x.toml"


# --- the console --------------------------------------------------------------------------


def help_text(app: ReviewApp) -> list[str]:
    """The help screen's lines as the reviewer reads them."""
    console = Console(width=200, record=True, file=open("/dev/null", "w"))
    for static in app.screen.query(Static):
        console.print(static.content)
    console.file.close()
    return console.export_text().splitlines()


def help_keys_of(lines: list[str], binding_id: str) -> str:
    words = binding(binding_id).tooltip
    line = next(line for line in lines if words in line)
    return line.split(words)[0].strip()


async def checklist_opens(pilot, key: str) -> bool:
    """Press ``key`` on the main screen; True when the checklist view opened."""
    app = pilot.app
    await pilot.press(key)
    await pilot.pause()
    await until(pilot, lambda: not any(w.group == "checklist" and not w.is_finished for w in app.workers),
                "the checklist worker finished")
    await pilot.pause()
    opened = isinstance(app.screen, DetailScreen)
    if opened:
        await pilot.press(*split_keys(",".join(app.active_keys["view.back"]))[:1])
        await until(pilot, lambda: app.screen is app.screen_stack[0], "back on the panes")
    return opened


async def test_a_moved_action_runs_on_its_new_key_only_and_help_shows_it(demo_repo, tmp_path, monkeypatch):
    monkeypatch.setenv(KEYMAP_ENV, str(write_keymap(tmp_path, '[keys]\nmerge_checklist = "k"\n')))
    app = ReviewApp(repo=str(demo_repo), today=TODAY, autorun=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert not list(app._notifications)
        assert await checklist_opens(pilot, "k")
        assert not await checklist_opens(pilot, "m")
        pane = app.query_one("#touched", Pane)  # "previous item" kept its other key
        await pilot.press("j")
        moved = pane.highlighted
        await pilot.press("up")
        assert pane.highlighted == moved - 1
        bar = str(app.query_one(KeyBar).content)
        checklist = binding("merge_checklist")
        assert f"k {checklist.description}" in bar and f"m {checklist.description}" not in bar
        assert any(text.endswith("(k)") and action == checklist.action for text, action in palette_entries(app))
        status = str(app.query_one("#status").render())
        assert "review flags (k)" in status and "(m)" not in status  # the status line names the key in force
        await pilot.press("question_mark")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen), "the help screen")
        lines = help_text(app)
        assert help_keys_of(lines, "merge_checklist") == "k"
        assert help_keys_of(lines, "cursor.up") == key_names(",".join(app.active_keys["cursor.up"]))
        assert "k" not in help_keys_of(lines, "cursor.up").split(" / ")


@pytest.mark.parametrize("text, line", [('[keys]\nmerge_checklist = "k\n', 2),
                                        ('[keys]\nmerge_checklist = "k"\nrun = "k"\nnope = "z"\n', None)])
async def test_a_bad_keymap_is_a_notification_and_the_defaults_work(demo_repo, tmp_path, text, line):
    path = write_keymap(tmp_path, text)
    app = ReviewApp(repo=str(demo_repo), today=TODAY, autorun=False, keymap=str(path))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        notes = [str(n.message) for n in app._notifications]
        assert notes and all(str(path) in note and "\n" not in note for note in notes)
        if line is not None:
            assert any(f"{path}:{line}:" in note for note in notes)
        assert app.active_keys == DEFAULTS
        assert await checklist_opens(pilot, DEFAULTS["merge_checklist"][0])
        assert not await checklist_opens(pilot, "k")
        await pilot.press("question_mark")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen), "the help screen")
        assert help_keys_of(help_text(app), "merge_checklist") == key_names(binding("merge_checklist").key)


async def test_screenshots_ignore_the_users_keymap(demo_repo, tmp_path, monkeypatch):
    monkeypatch.setenv(KEYMAP_ENV, str(write_keymap(tmp_path, '[keys]\nmerge_checklist = "k"\n')))
    app = ReviewApp(repo=str(demo_repo), today=TODAY, autorun=False, preferences=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.active_keys == DEFAULTS
        assert await checklist_opens(pilot, DEFAULTS["merge_checklist"][0])
