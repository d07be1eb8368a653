"""The base ref of a review (SPEC §2: the oracle is read from its tip): the one named, else
``main``, else ``origin/main``; never guessed further, but a missing default names the usual
other branch the repository has.
"""

from __future__ import annotations

from relconsole.engine.errors import GitError
from relconsole.engine.repo import gitio
from relconsole.engine.repo.config import DEFAULT_BASE, OTHER_BASES


def resolve_base(repo: gitio.Repository, base_ref: str | None) -> tuple[str, str]:
    """(name, sha) of the base ref: ``base_ref`` when given, by default ``main``, else
    ``origin/main`` (a CI clone). Raises GitError for an unknown ref, and when neither default
    exists (naming master, trunk or develop when the repository has one)."""
    if base_ref:
        return base_ref, gitio.resolve(repo, base_ref)
    try:
        return DEFAULT_BASE, gitio.resolve(repo, DEFAULT_BASE)
    except GitError:
        try:
            return f"origin/{DEFAULT_BASE}", gitio.resolve(repo, f"origin/{DEFAULT_BASE}")
        except GitError:
            raise GitError(f"no {DEFAULT_BASE} branch (nor origin/{DEFAULT_BASE}): name the base "
                           f"with --base{_base_hint(repo)}, or fetch it (git fetch origin main)") from None


def _base_hint(repo: gitio.Repository) -> str:
    """`` (this repository has master: --base master)`` when a usual other base branch
    exists, locally or on origin; "" otherwise. Only on the error path: one git call."""
    names = [f"refs/heads/{b}" for b in OTHER_BASES] + [f"refs/remotes/origin/{b}" for b in OTHER_BASES]
    listed = gitio.run_git(repo.working_tree_dir or repo.git_dir, "for-each-ref", "--format=%(refname:short)",
                           *names, ok=None).stdout.decode("utf-8", "replace").split()
    return f" (this repository has {listed[0]}: --base {listed[0]})" if listed else ""
