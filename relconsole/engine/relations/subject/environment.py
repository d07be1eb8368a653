"""What the subject's interpreter starts with: its site folders, its environment, its scratch and hash seed (SPEC §7).

The environment is built from nothing (PATH, the locale and the subject's own few), the site
folders appear where a plain venv's would, and no ``.pth`` file of relconsole's runs.
"""

from __future__ import annotations

import glob
import os
import site
import sys
import sysconfig
from pathlib import Path

from relconsole.engine.relations.subject.clock import FAKETIME_FIXED, _faketime_spec


def site_dirs() -> list[str]:
    """The judge interpreter's site-packages folders (venv first), for the subject's imports."""
    dirs = [sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]]
    try:
        dirs += site.getsitepackages()
    except AttributeError:
        pass
    out = []
    for entry in dirs:
        if entry and entry not in out and os.path.isdir(entry):
            out.append(entry)
    return out


def base_interpreter() -> str:
    """The interpreter a venv's ``python`` stands for (the venv's own path is not seen)."""
    base = getattr(sys, "_base_executable", None) or sys.executable
    return os.path.realpath(base) if os.path.exists(base) else os.path.realpath(sys.executable)


def neutral_site_dirs(dirs: list[str]) -> dict[str, str]:
    """Each site folder -> where the sandbox shows it: a folder whose path names relconsole
    (its venv in a clone called relconsole) appears as a plain venv's, ``/opt/venv/lib/pythonX.Y/
    site-packages`` (then ``-2``, ``-3`` ...); any other keeps its path."""
    version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    out, count = {}, 0
    for entry in dirs:
        if "relconsole" in entry.lower():
            count += 1
            out[entry] = f"/opt/venv/lib/{version}/site-packages" + (f"-{count}" if count > 1 else "")
        else:
            out[entry] = entry
    return out


def _own_location() -> Path:
    return Path(__file__).resolve().parents[4]  # the folder holding the relconsole package


def own_pth_files(dirs: list[str]) -> list[str]:
    """.pth files in ``dirs`` that put relconsole on the path (an editable install): the
    subject's interpreter skips them, so relconsole is not importable there."""
    mine, out = str(_own_location()), []
    for entry in dirs:
        for path in glob.glob(os.path.join(entry, "*.pth")):
            name = os.path.basename(path)
            try:
                text = Path(path).read_text(errors="replace")
            except OSError:
                continue
            if "relconsole" in name or mine in text:
                out.append(name)
    return out


def _hidden_dirs(dirs: list[str]) -> list[str]:
    """relconsole's own files inside the site folders (a normal install), masked in the sandbox."""
    out = []
    for entry in dirs:
        out += glob.glob(os.path.join(entry, "relconsole")) + glob.glob(os.path.join(entry, "relconsole-*"))
        out += glob.glob(os.path.join(entry, "__editable__*relconsole*"))
    return out


def subject_env(home: str, hashseed: int, clock: str | None, faketime: tuple[str, dict] | None,
                extra: dict[str, str] | None = None) -> dict[str, str]:
    """The subject's whole environment: nothing inherited but PATH, the locale and ``extra``
    (the repository's ``pass_env``)."""
    env = dict(extra or {})
    env |= {"PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"), "HOME": home, "TMPDIR": home,
           "LANG": os.environ.get("LANG", "C.UTF-8"), "TZ": "UTC", "PYTHONHASHSEED": str(hashseed)}
    # no PYTHONDONTWRITEBYTECODE: sys.dont_write_bytecode would say "a harness"; a sandboxed tree is
    # read-only (nothing is written), a plain process's is a scratch copy
    if clock and faketime:
        env["LD_PRELOAD"] = faketime[0]
        env["FAKETIME"] = _faketime_spec(clock)
        env.update(FAKETIME_FIXED)
        env.update(faketime[1])
    return env


SCRATCH_VARIABLE = "RELCONSOLE_JUDGE_SCRATCH"  # the worker's, never a subject's (its environment is built from nothing)


def _readonly_beside(folders, scratch: Path) -> list[str]:
    """The real paths of ``folders`` that exist and do not hold ``scratch`` (a TMPDIR inside
    the repository: the call writes its home and output there)."""
    out = []
    inner = os.path.realpath(scratch)
    for folder in folders:
        real = os.path.realpath(folder)
        if os.path.isdir(real) and not (inner + os.sep).startswith(real.rstrip(os.sep) + os.sep):
            out.append(real)
    return out


def scratch_root() -> str | None:
    """Where fork servers keep their scratch folders: the judge's own working folder, which
    the process that started the judge removes whatever happens to the judge, named by
    ``RELCONSOLE_JUDGE_SCRATCH`` in the judge's environment (None: the temp dir). Its name is
    a plain temp name: it shows in the sandbox's mount table."""
    named = os.environ.get(SCRATCH_VARIABLE)
    return named if named and os.path.isdir(named) and os.path.realpath(named) == os.path.realpath(os.getcwd()) else None


def draw_hashseed() -> int:
    """A PYTHONHASHSEED for one server's life, from os.urandom (0 is never drawn: 0 turns
    randomisation off, which a subject could notice)."""
    return 1 + int.from_bytes(os.urandom(4), "big") % 4294967294


def other_hashseed(hashseed: int) -> int:
    """The PYTHONHASHSEED of a run's second server, derived from its first's (so replaying a
    run's seed replays both): never the same, never 0."""
    return 1 + (hashseed * 2654435761 + 97) % 4294967293
