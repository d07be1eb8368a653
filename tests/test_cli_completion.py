"""Shell completion (issue 17): argcomplete answers a TAB from the real parser, for bash, zsh and fish.

A completion request is simulated as the shell scripts make it: a new process with
``_ARGCOMPLETE`` and ``COMP_LINE``/``COMP_POINT`` set, the answer written to the file named by
``_ARGCOMPLETE_STDOUT_FILENAME``. Where bash is installed, its script runs for real.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from relconsole.cli import completion as cli_completion

from relconsole.cli import help as cli_help
from relconsole.cli.main import build_parser, main
from relconsole.engine.errors import EXIT_PASS, EXIT_USAGE

ROOT = Path(__file__).resolve().parents[1]


def python_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("_ARGCOMPLETE", "COMP_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env | extra


def complete(tmp_path: Path, line: str) -> list[str]:
    """What ``relconsole`` offers for a TAB at the end of ``line``, as bash asks for it."""
    answer = tmp_path / "completions.txt"
    env = python_env(_ARGCOMPLETE="1", _ARGCOMPLETE_SHELL="bash", _ARGCOMPLETE_IFS="\n",
                     _ARGCOMPLETE_SUPPRESS_SPACE="1", _ARGCOMPLETE_STDOUT_FILENAME=str(answer),
                     COMP_LINE=line, COMP_POINT=str(len(line)))
    proc = subprocess.run([sys.executable, "-m", "relconsole"], env=env, cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr[-1000:]
    return answer.read_text(encoding="utf-8").split("\n")


def subcommands(path: str) -> set[str]:
    """The names directly under command ``path`` ("" for the top level), from the parser."""
    depth = len(path.split()) + 1 if path else 1
    return {p.split()[-1] for p, _, _ in cli_help.subparsers(build_parser())
            if len(p.split()) == depth and p.startswith(path)}


def test_a_command_prefix_completes_to_the_commands_it_starts(tmp_path):
    offered = complete(tmp_path, "relconsole fl")
    assert "flags" in offered
    assert {o.strip() for o in offered if o} == {c for c in subcommands("") if c.startswith("fl")}


def test_a_command_with_actions_offers_them(tmp_path):
    offered = {o.strip() for o in complete(tmp_path, "relconsole lease ")}
    assert "renew" in offered and subcommands("lease") <= offered
    assert {o.strip() for o in complete(tmp_path, "relconsole lease re") if o} == \
        {c for c in subcommands("lease") if c.startswith("re")}


def test_an_option_of_a_subcommand_completes(tmp_path):
    offered = {o.strip() for o in complete(tmp_path, "relconsole run --rel")}
    assert "--relation" in offered


@pytest.mark.parametrize("shell", cli_completion.SHELLS)
def test_each_shell_gets_a_script_that_registers_relconsole(capsys, shell):
    assert main(["completion", shell]) == EXIT_PASS
    text = capsys.readouterr().out
    assert "relconsole" in text and "_ARGCOMPLETE" in text


def test_an_unknown_shell_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["completion", "tcsh-or-so"])
    assert stop.value.code == EXIT_USAGE


def test_help_and_commands_never_import_argcomplete():
    probe = ("import sys\nfrom relconsole.cli.main import main\n"
             "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
             "print('argcomplete' in sys.modules, file=sys.stderr)\n")
    proc = subprocess.run([sys.executable, "-c", probe], env=python_env(), capture_output=True, text=True,
                          check=True)
    assert proc.stderr.strip().splitlines()[-1] == "False"


@pytest.mark.parametrize("module", ["relconsole.cli", "relconsole"])
def test_the_entry_points_carry_argcomplete_marker(module):
    """argcomplete's global completion runs only scripts its own check accepts
    (``relconsole`` and ``python -m relconsole``)."""
    proc = subprocess.run([sys.executable, "-m", "argcomplete._check_module", module], env=python_env(),
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def on_path(tmp_path: Path) -> dict[str, str]:
    """An environment whose PATH finds a ``relconsole`` running this checkout."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    shim = bindir / "relconsole"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m relconsole "$@"\n')
    shim.chmod(0o755)
    return python_env(PATH=f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}", HOME=str(tmp_path))


def need_shell(name: str) -> None:
    """Skip without the shell ``name``, or fail when RELCONSOLE_REQUIRE_SHELLS=1 (CI installs
    bash, zsh and fish: a completion script no shell ran is not tested)."""
    if shutil.which(name) is not None:
        return
    if os.environ.get("RELCONSOLE_REQUIRE_SHELLS") == "1":
        pytest.fail(f"{name} is not on PATH and RELCONSOLE_REQUIRE_SHELLS=1: its completion test must run")
    pytest.skip(f"{name} is not installed (set RELCONSOLE_REQUIRE_SHELLS=1 to make this a failure)")


def lease_actions_starting_re() -> set[str]:
    return {c for c in subcommands("lease") if c.startswith("re")}


def test_the_bash_script_completes_in_a_real_bash(tmp_path):
    """Source the script ``relconsole completion bash`` prints and call the function bash's TAB calls."""
    need_shell("bash")
    program = ('source <(relconsole completion bash)\n'
               'complete -p relconsole >&2\n'
               'COMP_LINE="relconsole lease re"; COMP_POINT=${#COMP_LINE}; COMP_WORDS=(relconsole lease re); COMP_CWORD=2\n'
               'func=$(complete -p relconsole | sed -E "s/.* -F ([^ ]+) .*/\\1/")\n'
               '"$func" relconsole re lease\n'
               'printf "%s\\n" "${COMPREPLY[@]}"\n')
    proc = subprocess.run(["bash", "-c", program], env=on_path(tmp_path), cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr[-1000:]
    assert "relconsole" in proc.stderr  # the completion is registered for the command
    assert {line.strip() for line in proc.stdout.splitlines() if line.strip()} == lease_actions_starting_re()


def test_the_fish_script_completes_in_a_real_fish(tmp_path):
    need_shell("fish")
    program = 'relconsole completion fish | source; complete -C"relconsole lease re"'
    proc = subprocess.run(["fish", "--no-config", "-c", program], env=on_path(tmp_path), cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr[-1000:]
    offered = {line.split("\t")[0] for line in proc.stdout.splitlines() if line.strip()}
    assert offered == lease_actions_starting_re()


def test_the_zsh_script_registers_with_compinit(tmp_path):
    """zsh completes only in an interactive line editor: check the script registers its function."""
    need_shell("zsh")
    program = ('autoload -U compinit && compinit -u -d "$HOME/.zcompdump"\n'
               'eval "$(relconsole completion zsh)"\n'
               'print -r -- "${_comps[relconsole]}"\n'
               'whence -w "${_comps[relconsole]}"\n')
    proc = subprocess.run(["zsh", "-f", "-c", program], env=on_path(tmp_path), cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr[-1000:]
    function, kind = proc.stdout.splitlines()[0], proc.stdout.splitlines()[-1]
    assert function and kind.endswith(": function")


def test_the_gate_formats_complete(tmp_path):
    offered = {o.strip() for o in complete(tmp_path, "relconsole gate --format ") if o}
    assert offered == {"text", "json", "github"}
