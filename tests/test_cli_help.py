"""Every command's --help: a description and the exit codes it returns (issue 17, SPEC §8).

The commands are found from the parser itself, so a new command without a ``cli_help.HELP``
entry fails here until someone writes what it does and which codes it returns.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from relconsole.cli import help as cli_help
from relconsole.cli.main import build_parser, main
from relconsole.engine import errors
from tests.conftest import TODAY

SPEC_CODES = {value for name, value in vars(errors).items() if name.startswith("EXIT_")}
PENDING = {"gate", "schema"}  # written ahead of the commands other branches add (issue 17)
CODE_LINE = re.compile(r"^  (\d+) {2,}\S")  # a code's line; its wrapped continuation is indented deeper


def listed_codes(help_text: str) -> set[int]:
    """The codes of the ``exit codes:`` block of a rendered help text."""
    assert "\nexit codes:\n" in help_text, help_text[-400:]
    block = help_text.split("\nexit codes:\n", 1)[1].split("\n\n", 1)[0]
    return {int(m.group(1)) for m in map(CODE_LINE.match, block.splitlines()) if m}


def commands() -> list[tuple[str, argparse.ArgumentParser]]:
    return [(path, sub) for path, sub, _ in cli_help.subparsers(build_parser())]


def test_the_parser_has_nested_commands_to_check():
    paths = {path for path, _ in commands()}
    assert {"lease renew", "lease rehash", "workspace status", "completion"} <= paths


def test_every_command_has_its_own_entry():
    missing = [path for path, _ in commands() if path not in cli_help.HELP]
    assert not missing, f"write a description and exit codes for {missing} in relconsole/cli/help.py"


def test_no_entry_outlives_its_command():
    stale = set(cli_help.HELP) - {path for path, _ in commands()} - PENDING
    assert not stale


@pytest.mark.parametrize("path", sorted(cli_help.HELP))
def test_each_entry_names_only_spec_codes_and_always_pass_and_usage(path):
    description, codes = cli_help.HELP[path]
    assert len(description.split()) >= 8  # a sentence, not a label
    assert {errors.EXIT_PASS, errors.EXIT_USAGE} <= set(codes) <= SPEC_CODES
    assert all(meaning.strip() for meaning in codes.values())


@pytest.mark.parametrize("path", [path for path, _ in commands()])
def test_each_help_shows_the_description_and_the_codes_of_its_entry(path):
    sub = dict(commands())[path]
    text = sub.format_help()
    description, codes = cli_help.HELP[path]
    assert " ".join(description.split()) in " ".join(text.split())
    shown = listed_codes(text)
    assert shown == set(codes) and {errors.EXIT_PASS, errors.EXIT_USAGE} <= shown <= SPEC_CODES


def test_the_top_level_help_is_plain_text_listing_every_command_in_a_group(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["--help"])
    assert stop.value.code == 0
    text = capsys.readouterr().out
    assert "``" not in text and ":ref:" not in text and ".. " not in text
    top = [path for path, _ in commands() if " " not in path]
    listed = re.findall(r"^  (\S+)  ", text.split("\npositional arguments:\n")[0], re.MULTILINE)
    assert sorted(listed) == sorted(top)  # each command once, none missing
    titles = [title for title, _ in cli_help.GROUPS]
    assert sum(f"\n{title}:\n" in text for title in titles) >= 4
    assert listed_codes(text) == SPEC_CODES


def test_a_command_without_an_entry_still_gets_a_description_and_every_code():
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    action.add_parser("zz-new", help="a command nobody described yet")
    cli_help.apply(parser)
    text = action.choices["zz-new"].format_help()
    assert "a command nobody described yet" in text
    assert listed_codes(text) == SPEC_CODES
    assert "\nother:\n  zz-new" in parser.format_help()


@pytest.mark.parametrize("columns", [60, 100])
def test_help_texts_wrap_to_the_terminal(monkeypatch, columns):
    monkeypatch.setenv("COLUMNS", str(columns))
    parser = build_parser()
    texts = [parser.format_help()] + [sub.format_help() for _, sub, _ in cli_help.subparsers(parser)]
    after_usage = [text.split("\n\n", 1)[1] for text in texts]  # argparse wraps the usage lines itself
    longest = max(len(line) for text in after_usage for line in text.splitlines())
    assert longest <= columns


def test_the_codes_a_command_returns_are_among_those_its_help_lists(demo_repo: Path, capsys):
    """Run commands on the sample and check each exit code against the command's own list."""
    where = ["--repo", str(demo_repo), "--today", TODAY.isoformat()]
    runs = {"bind": ["bind", *where], "validate": ["validate", *where], "flags": ["flags", *where],
            "lease status": ["lease", "status", *where], "lease history": ["lease", "history", "weather", *where],
            "lease rehash": ["lease", "rehash", "weather", *where],
            "check-split": ["check-split", "--repo", str(demo_repo)],
            "stats": ["stats", "--repo", str(demo_repo)], "completion": ["completion", "fish"],
            "bite": ["bite", "no.such", *where]}
    seen = {}
    for path, argv in runs.items():
        code = main(argv)
        capsys.readouterr()
        seen[path] = code
        assert code in cli_help.HELP[path][1], (path, code)
    assert seen["bind"] == errors.EXIT_GAP and seen["check-split"] == errors.EXIT_USAGE  # the sample's gap; no range


def _help_of(parser: argparse.ArgumentParser, words: list[str]) -> tuple[int, str]:
    """(exit code, text) of parsing ``words`` with ``parser`` (a help or a usage error)."""
    import contextlib
    import io
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        try:
            parser.parse_args(words)
        except SystemExit as stop:
            return stop.code, out.getvalue()
    return 0, out.getvalue()


@pytest.mark.parametrize("words", [["--help"], [], ["no-such-command"], ["bind", "--help"],
                                   ["lease", "renew", "--help"], ["run", "--shard", "x"],
                                   ["workspace", "status", "--help"], ["gate", "--help"]])
def test_a_parser_built_for_one_command_says_what_the_full_parser_says(words):
    """The start builds only the named command's parser (``--help`` in under 2x argparse's
    import, bench/cli.py); the texts and exit codes must be those of the full parser."""
    from relconsole.cli.main import command_in
    lazy = build_parser(command_in(words), everything=False)
    assert _help_of(lazy, words) == _help_of(build_parser(), words)


def test_every_command_parses_the_same_when_built_alone():
    """Each command's own options, nested commands included, survive building it alone."""
    from relconsole.cli.main import command_in
    for path, _ in commands():
        words = path.split() + ["--help"]
        lazy = build_parser(command_in(words), everything=False)
        assert _help_of(lazy, words) == _help_of(build_parser(), words), path
