"""Interpreters for the benches that compare where a virtualenv lies (issue 37): the judge's
cost of a call depended on whether the venv's site folder sat under ``/tmp`` (the sandbox's
own ``/tmp`` then holds it as a bind).

``placed_venvs()`` gives ``{"under /tmp": python, "elsewhere": python}``: this
interpreter for the side its venv already lies on, and for the other a venv made there (``venv``
without pip, this interpreter's site folder copied in: an editable relconsole stays editable,
every package the same). A copy under /tmp is made in a fresh ``/tmp/bench-venv-*`` folder
(a path naming relconsole would be shown elsewhere in the sandbox); one elsewhere under
``~/.cache/relconsole-bench/`` (or ``$XDG_CACHE_HOME``). ``remove_made`` removes them.
"""

from __future__ import annotations

import os
import shutil
import sys
import sysconfig
import tempfile
import venv
from pathlib import Path

TMP = Path("/tmp")
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "relconsole-bench"


def under_tmp(path: str | Path) -> bool:
    """True when ``path`` (resolved) lies under /tmp."""
    return str(Path(path).resolve()).startswith(str(TMP.resolve()) + os.sep)


def copy_venv(home: Path) -> str:
    """A venv at ``home`` (replaced if there) holding a copy of this interpreter's site folder;
    returns its python. Raises OSError when it cannot be made."""
    shutil.rmtree(home, ignore_errors=True)
    venv.EnvBuilder(with_pip=False, symlinks=True).create(home)
    python = home / "bin" / "python"
    purelib = Path(sysconfig.get_paths()["purelib"])
    version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    shutil.copytree(purelib, home / "lib" / version / "site-packages", symlinks=True, dirs_exist_ok=True)
    return str(python)


def placed_venvs() -> tuple[dict[str, str], list[Path]]:
    """``({"under /tmp": python, "elsewhere": python}, [folders made])`` (see the module
    docstring). A venv under /tmp whose path names relconsole does not count as one: the
    sandbox shows such a site folder as a plain venv's, under /opt, not under /tmp."""
    here, made = sys.executable, []
    if under_tmp(sys.prefix) and "relconsole" not in sys.prefix.lower():
        under = here
    else:
        made.append(Path(tempfile.mkdtemp(prefix="bench-venv-", dir=TMP)))
        under = copy_venv(made[-1] / "venv")
    if under_tmp(sys.prefix):
        made.append(CACHE / "venv-elsewhere")
        elsewhere = copy_venv(made[-1])
    else:
        elsewhere = here
    return {"under /tmp": under, "elsewhere": elsewhere}, made


def remove_made(made: list[Path]) -> None:
    """Remove the folders ``placed_venvs`` made."""
    for folder in made:
        shutil.rmtree(folder, ignore_errors=True)
