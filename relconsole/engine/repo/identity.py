"""Who commits: the git identity the console's commits are authored as (SPEC §9)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from relconsole.engine.errors import CommitRefused
from relconsole.engine.repo.gitio import author_ident


@dataclass(frozen=True)
class Identity:
    """The git identity commits are made as (user.name, user.email)."""

    name: str
    email: str


def git_identity(root: str | Path) -> Identity:
    """The identity git would author a commit as in the checkout ``root`` (``git var
    GIT_AUTHOR_IDENT``: the configuration, or GIT_AUTHOR_NAME/EMAIL when set).

    Raises CommitRefused when none is set."""
    ident = author_ident(root)
    if ident is None:
        raise CommitRefused("no git identity: set user.name and user.email")
    return Identity(*ident)
