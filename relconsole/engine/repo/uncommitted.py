"""What the working tree holds that no commit does, under given patterns: a command that reads
the oracle from a commit (SPEC §2: the oracle is read from the base ref, never the working
tree) says which edits it did not read, so an uncommitted fix is not taken for a checked one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from relconsole.engine.repo.gitio import run_git
from relconsole.engine.repo.owners import protection


_FOLDER = re.compile(r"^/?([^*?\[\]\\!/][^*?\[\]\\]*)/\*\*$")  # "oracle/**": every path under oracle/


def uncommitted(root: str | Path, patterns: Sequence[str]) -> list[str]:
    """Repository paths under ``patterns`` (the protected patterns, §2) that the working tree of
    ``root`` holds other than HEAD: changed, staged, deleted or untracked and not ignored, in
    git's order. One ``git status``, limited to the patterns' folders when each is a plain
    ``folder/**`` (``run``, ``bind`` and ``gate`` ask too: a big untracked tree elsewhere is not
    walked); raises GitError when git fails."""
    folders = [_FOLDER.match(p) for p in patterns]
    where = ["--", *(f":(literal){m.group(1)}" for m in folders)] if folders and all(folders) else []
    out = run_git(root, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames", *where).stdout
    guarded = protection(patterns)
    paths = [entry[3:].decode("utf-8", "surrogateescape") for entry in out.split(b"\0") if len(entry) > 3]
    return [p for p in paths if guarded(p)]
