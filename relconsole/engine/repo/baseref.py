"""The base ref of a review (SPEC §2: the oracle is read from its tip).

Under CI (``in_ci``) the base must be named (``--base``, from what the platform says the pull
request targets): a patch can push branches to the remote a CI clone fetches, ``main``
included, so no ref there is trusted to be the base. Elsewhere, when no ``--base`` names it:

1. ``[tool.relconsole] base_ref`` of the reviewed commit's ``pyproject.toml``, read there only
   to find the base. A patch must not choose its own gate, so the name is taken only when

   - it is a branch (``refs/heads/NAME``, else ``refs/remotes/origin/NAME``; never a sha, a
     tag or ``HEAD~2``), and a remote-tracking one does not already hold the reviewed commit
     (a branch a patch pushed at its own commit: nothing would be reviewed);
   - the repository's default branch (2 and 3 below), when it has one, is that branch, or
     named that base_ref where the reviewed branch left it: a branch the patch pushed (or
     the patch's own branch) that names itself is refused;
   - the merge base of that branch and the reviewed commit names the same base_ref: a patch
     that edits the setting finds the merge base still naming the old one. A setting naming
     the default branch itself is taken as that branch (a team renaming master to main fixes
     the setting in a patch).

   With no default branch to check it against (a repository with neither main nor a remote)
   the setting is taken at its word: there, whoever creates branches could move the base
   branch itself. Everything else, the layout included, is then read from the base.
2. ``main`` (a local branch).
3. The remote's default branch (``origin/HEAD``), as its local branch when one exists, else
   ``origin/main``. A local main goes first, and a remote default that already holds the
   reviewed commit is skipped: origin/HEAD names whatever the remote had checked out, which for a
   clone of a work directory (the sample's, an agent's) is the patch's own branch.

Never guessed further: a missing default names the usual other branch the repository has.
"""

from __future__ import annotations

import os
import tomllib

from relconsole.engine.errors import GitError
from relconsole.engine.repo import gitio

DEFAULT_BASE = "main"  # the base ref when nothing else names it
OTHER_BASES = ("master", "trunk", "develop")  # named in the hint when main is absent


# variables a CI service sets in its jobs (CI itself: GitHub, GitLab, CircleCI, Travis,
# Buildkite, Drone; the others set their own)
CI_VARIABLES = ("CI", "JENKINS_URL", "TF_BUILD", "CODEBUILD_BUILD_ID", "TEAMCITY_VERSION",
                "BITBUCKET_BUILD_NUMBER", "BUILDKITE", "GITLAB_CI", "GITHUB_ACTIONS", "CIRCLECI", "APPVEYOR")


def resolve_base(repo: gitio.Repository, base_ref: str | None, head_sha: str | None = None) -> tuple[str, str]:
    """(name, sha) of the base ref: ``base_ref`` when given, else the module's order for the
    reviewed commit ``head_sha`` (default: HEAD). Raises GitError (abort) for an unknown ref;
    under CI with no ``base_ref``; for a setting that names no branch, that the patch changed
    or whose branch already holds the reviewed commit; and when no default exists (naming
    master, trunk or develop when the repository has one)."""
    if base_ref:
        return base_ref, gitio.resolve(repo, base_ref)
    if in_ci():
        raise GitError("in CI, name the base the platform gives with --base (GitHub Actions: --base "
                       "origin/$GITHUB_BASE_REF): a patch can push branches there, so relconsole does not "
                       "choose the base from the repository's refs")
    head_sha = head_sha or gitio.resolve(repo, "HEAD")
    configured = configured_base(repo, head_sha)
    default = _default_or_none(repo, head_sha)
    if configured:
        return _checked_setting(repo, configured, head_sha, default)
    if default is None:
        raise GitError(f"no {DEFAULT_BASE} branch (nor origin/{DEFAULT_BASE}) to review HEAD against: name the "
                       f"base with --base{_base_hint(repo)}, set it once as base_ref in pyproject.toml's "
                       f"[tool.relconsole], or fetch it (git fetch origin {DEFAULT_BASE})")
    return default


def in_ci(environ=None) -> bool:
    """Whether a CI service runs this process (one of ``CI_VARIABLES`` set, ``CI=false`` aside)."""
    environ = os.environ if environ is None else environ
    return any(environ.get(name, "").strip().lower() not in ("", "0", "false") for name in CI_VARIABLES)


def configured_base(repo: gitio.Repository, commit: str) -> str | None:
    """``[tool.relconsole] base_ref`` of ``commit``'s pyproject.toml; None when there is no
    file, no setting, or a file that does not parse (the full load reports a bad file of the
    base; a reviewed commit's bad file just sets no base)."""
    proc = gitio.run_git(_where(repo), "cat-file", "blob", f"{commit}:pyproject.toml", ok=None)
    if proc.returncode != 0:
        return None
    try:
        value = tomllib.loads(proc.stdout.decode("utf-8")).get("tool", {}).get("relconsole", {}).get("base_ref")
    except (UnicodeDecodeError, tomllib.TOMLDecodeError, AttributeError):
        return None
    return value if isinstance(value, str) and value else None


def _default_or_none(repo: gitio.Repository, head_sha: str) -> tuple[str, str] | None:
    """The first of main, origin/HEAD's branch (local, else remote), origin/main that exists,
    those after the local main only when they do not already hold ``head_sha``: origin/HEAD of a
    clone of a work directory (an agent's) is the patch's own branch, and a remote branch a
    patch pushed at its own commit leaves nothing to review (red team). The local main is the
    reviewer's own and may hold it (reviewing main itself, or a branch with no commit yet)."""
    known = _branches(repo, [DEFAULT_BASE, f"origin/{DEFAULT_BASE}"], with_origin_head=True)
    remote_default = known.pop("origin/HEAD", None)
    # a local main first: origin/HEAD names what the remote had checked out, which for a clone
    # of a work directory (the sample's, an agent's) is the patch's own branch
    names = [DEFAULT_BASE] + ([remote_default, f"origin/{remote_default}"] if remote_default else []) + [
        f"origin/{DEFAULT_BASE}"]
    if remote_default:
        known.update(_branches(repo, [remote_default, f"origin/{remote_default}"]))
    for index, name in enumerate(names):
        if name not in known:
            continue
        if index == 0 or not _holds(repo, known[name], head_sha):  # the local main is the reviewer's own
            return name, known[name]
    return None


def _holds(repo: gitio.Repository, tip: str, head_sha: str) -> bool:
    """Whether the branch tip ``tip`` is ``head_sha`` or a descendant of it."""
    if tip == head_sha:
        return True
    return gitio.run_git(_where(repo), "merge-base", "--is-ancestor", head_sha, tip, ok=None).returncode == 0


def _checked_setting(repo: gitio.Repository, name: str, head_sha: str,
                     default: tuple[str, str] | None) -> tuple[str, str]:
    """(name, sha) for a base_ref setting read from the reviewed commit, once it names a
    branch (a remote-tracking one that does not already hold the reviewed commit: a patch
    pushes those), the default branch agrees and the merge base agrees (module docstring).
    Raises GitError otherwise."""
    known = _branches(repo, [name, f"origin/{name}"])
    shown = next((n for n in (name, f"origin/{name}") if n in known), None)
    if shown is None:
        raise GitError(f"pyproject.toml: [tool.relconsole] base_ref = {name!r} names no branch here (nor "
                       f"origin/{name}): fetch it (git fetch origin {name}), or name the base with --base")
    tip = known[shown]
    if shown.startswith("origin/") and _holds(repo, tip, head_sha):
        raise GitError(f"pyproject.toml: [tool.relconsole] base_ref = {name!r}, but {shown} already holds the "
                       f"reviewed commit, so nothing would be reviewed against it: name the base with --base")
    if default is not None and _short(shown) == _short(default[0]):
        return default  # the branch the commands take with no setting: naming it gains a patch nothing
    if default is not None:
        fork = gitio.merge_base(repo, default[1], head_sha)
        if configured_base(repo, fork) not in (name, shown):
            raise GitError(f"pyproject.toml: [tool.relconsole] base_ref = {name!r}, but the default branch "
                           f"{default[0]} had no such setting where this branch left it ({fork[:12]}): a patch "
                           f"does not choose its own base; name the base with --base")
    merge_base = gitio.merge_base(repo, tip, head_sha)
    before = configured_base(repo, merge_base)
    if before not in (name, shown):
        was = f"base_ref = {before!r}" if before else "no base_ref"
        raise GitError(f"pyproject.toml: [tool.relconsole] base_ref = {name!r}, but the merge base with it "
                       f"({merge_base[:12]}) has {was}: a patch does not choose its own base; name the base "
                       f"with --base")
    return shown, tip


def _short(branch: str) -> str:
    return branch.removeprefix("origin/")


def _branches(repo: gitio.Repository, names: list[str], with_origin_head: bool = False) -> dict[str, str]:
    """name -> commit sha for each of ``names`` that is a branch: ``refs/heads/NAME``, or
    ``refs/remotes/NAME`` for a remote-tracking ``origin/...`` (a sha, a tag, ``HEAD`` or an
    expression is no branch). ``with_origin_head``: also ``"origin/HEAD"`` -> the branch name
    origin/HEAD points at (``master``), when it points at one. One ``git for-each-ref``."""
    wanted = {}
    for name in names:
        if name and not name.startswith("-") and name.isprintable():
            wanted[f"refs/heads/{name}"] = name
            if name.startswith("origin/"):
                wanted[f"refs/remotes/{name}"] = name
    patterns = sorted(wanted) + (["refs/remotes/origin/HEAD"] if with_origin_head else [])
    proc = gitio.run_git(_where(repo), "for-each-ref", "--format=%(refname)%00%(objectname)%00%(symref)",
                         *patterns, ok=None)
    found: dict[str, str] = {}
    for line in proc.stdout.decode("utf-8", "surrogateescape").splitlines():
        refname, sha, symref = (line.split("\0") + ["", ""])[:3]
        if refname == "refs/remotes/origin/HEAD" and with_origin_head:
            target = symref.removeprefix("refs/remotes/origin/")
            if symref.startswith("refs/remotes/origin/") and target != "HEAD":
                found["origin/HEAD"] = target
        elif refname in wanted and wanted[refname] not in found:
            found[wanted[refname]] = sha
    return found


def _base_hint(repo: gitio.Repository) -> str:
    """`` (this repository has master: --base master)`` when a usual other base branch
    exists, locally or on origin; "" otherwise. Only on the error path: one git call."""
    names = [f"refs/heads/{b}" for b in OTHER_BASES] + [f"refs/remotes/origin/{b}" for b in OTHER_BASES]
    listed = gitio.run_git(_where(repo), "for-each-ref", "--format=%(refname:short)",
                           *names, ok=None).stdout.decode("utf-8", "replace").split()
    return f" (this repository has {listed[0]}: --base {listed[0]})" if listed else ""


def _where(repo: gitio.Repository):
    return repo.working_tree_dir or repo.git_dir
