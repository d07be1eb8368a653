"""Read-only git access: running git, the repository handle and its object reader, refs.

``run_git`` runs git with the redirecting variables scrubbed and the user's fsmonitor hook
off. Objects (trees, blobs, commits) are read as bytes from one persistent
``git cat-file --batch`` per repository handle (``Repository``), never through a filter,
textconv or anything else the reviewed tree could name. No GitPython here: opening a
repository and reading its refs and objects costs a command-line start 120 ms of imports
with it (issue 17); ``open_repo`` returns a light ``Repository`` handle, and every function
below also takes a GitPython ``Repo`` (it reads only ``working_tree_dir`` and ``git_dir``).
Refs resolve to commits, ambiguous names and shallow clones refused with the fix (SPEC §8:
abort; §9: the split check reads merge-base..HEAD).

The rest of the read side: the touched paths of a patch (``touched``), a commit's tree
(``treeview``) and its blobs written to disk (``blobwrite``).
"""

from __future__ import annotations

import os
import re
import subprocess
import threading
import weakref
from pathlib import Path

from relconsole.engine.errors import GitError, UsageError

_SCRUBBED = ("GIT_DIR", "GIT_COMMON_DIR", "GIT_INDEX_FILE", "GIT_WORK_TREE", "GIT_OBJECT_DIRECTORY",
             "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_NAMESPACE")
# What a shallow clone must do before a review (§9: the split check reads merge-base..HEAD).
# CI's default checkout is shallow (actions/checkout fetches one commit), so name its fix too.
SHALLOW_FIX = ("shallow clone: fetch-depth: 0 in the CI checkout (actions/checkout), "
               "or git fetch --unshallow origin plus the base branch (git fetch origin main)")


# relconsole's git calls compare commits and read objects: none needs a scan of the user's
# work tree, so none runs the user's fsmonitor hook (a slow one cost every replay its time).
NO_FSMONITOR = ("-c", "core.fsmonitor=false")
# every diff of a patch sees its submodule changes: without it git follows ``ignore = all`` in
# the .gitmodules the patch itself ships, and a changed gitlink vanishes from the touched paths
IGNORE_NO_SUBMODULE = "--ignore-submodules=none"


def clean_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The process environment without git variables that would redirect a git call, and
    with replace refs off: ``refs/replace/*`` (a mirror fetch brings them) would swap an
    oracle blob for another under the same id, and the review must read what commits name."""
    env = {k: v for k, v in os.environ.items() if k not in _SCRUBBED}
    env["GIT_NO_REPLACE_OBJECTS"] = "1"
    env.update(extra or {})
    return env


def author_ident(cwd: str | Path) -> tuple[str, str] | None:
    """(name, email) git would author a commit as in ``cwd`` (``git var GIT_AUTHOR_IDENT``: the
    configuration, or GIT_AUTHOR_NAME/EMAIL when set); None when it has none."""
    proc = run_git(cwd, "var", "GIT_AUTHOR_IDENT", ok=None)
    found = re.match(rb"^(.*) <(.*)> \d+ [+-]\d{4}$", proc.stdout.strip()) if proc.returncode == 0 else None
    if found is None or not (found.group(1) or found.group(2)):
        return None
    return found.group(1).decode("utf-8", "replace"), found.group(2).decode("utf-8", "replace")


def run_git(cwd: str | Path, *args: str, ok: tuple[int, ...] | None = (0,),
            extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``git ARGS`` in ``cwd`` with the redirecting variables scrubbed (``extra_env`` set
    after the scrub, for a caller that means one), the user's fsmonitor hook off
    (``NO_FSMONITOR``); stdout and stderr as bytes.

    Raises GitError (abort) naming the git command and its first error line when the exit
    status is not in ``ok`` (``ok=None``: never raises; the caller reads ``returncode``).
    """
    proc = subprocess.run(["git", *NO_FSMONITOR, *args], cwd=cwd, env=clean_env(extra_env), capture_output=True)
    if ok is not None and proc.returncode not in ok:
        command = next((a for a in args if not a.startswith("-") and "=" not in a), "")
        lines = (proc.stderr or proc.stdout).decode("utf-8", "replace").strip().splitlines()
        raise GitError(f"git {command} failed in {cwd}: {lines[0] if lines else f'exit {proc.returncode}'}")
    return proc


class Repository:
    """A light handle on one git repository: its directories (the attribute names of
    GitPython's ``Repo``, which every function here also accepts) and a persistent
    ``git cat-file --batch`` that reads its objects (``read_object``), started on first use
    and ended by ``close`` (or when the handle is collected; a later read starts another).

    ``working_tree_dir`` is None for a bare repository; ``working_dir`` is the work tree,
    else the git directory (where git commands run).
    """

    def __init__(self, git_dir: str, common_dir: str, working_tree_dir: str | None):
        self.git_dir = git_dir
        self.common_dir = common_dir
        self.working_tree_dir = working_tree_dir
        self.working_dir = working_tree_dir or git_dir
        self._batch = _Batch(self.working_dir)
        weakref.finalize(self, self._batch.close)

    def __repr__(self) -> str:
        return f"Repository({self.working_dir!r})"

    def read_object(self, oid: str) -> tuple[str, bytes] | None:
        """(type, bytes) of the object ``oid`` (40 or 64 hex digits), or None when the
        object database has none. Raises GitError when git cannot be asked."""
        return self._batch.read(oid)

    def is_dirty(self, untracked_files: bool = False) -> bool:
        """Whether the index or the work tree differ from HEAD (GitPython's ``is_dirty``:
        ``git diff --cached --raw``, then ``git diff --raw``; untracked files are not
        asked about). A bare repository is never dirty."""
        if self.working_tree_dir is None:
            return False
        raw = ("--abbrev=40", "--full-index", "--raw", "--no-ext-diff")
        if os.path.isfile(os.path.join(self.git_dir, "index")) and \
                run_git(self.working_dir, "diff", "--cached", *raw, ok=None).stdout.strip():
            return True
        return bool(run_git(self.working_dir, "diff", *raw, ok=None).stdout.strip())

    def close(self) -> None:
        """End the object reader (a later ``read_object`` starts a new one)."""
        self._batch.close()


class _Batch:
    """One ``git cat-file --batch`` kept running for a repository: a request and its answer
    at a time (a lock for threads), restarted when it died or was closed."""

    def __init__(self, cwd: str):
        self.cwd = cwd
        self.proc: subprocess.Popen | None = None
        self.lock = threading.Lock()

    def read(self, oid: str) -> tuple[str, bytes] | None:
        with self.lock:
            for attempt in (1, 2):
                proc = self.proc
                if proc is None or proc.poll() is not None:
                    proc = self.proc = self._start()
                try:
                    proc.stdin.write(oid.encode("ascii", "replace") + b"\n")
                    proc.stdin.flush()
                    header = proc.stdout.readline()
                    fields = header.split()
                    if len(fields) == 3:
                        data = proc.stdout.read(int(fields[2]) + 1)[:-1]
                        if len(data) != int(fields[2]):
                            raise GitError(f"git cat-file stopped in the middle of {oid}")
                        return fields[1].decode("ascii", "replace"), data
                    if len(fields) == 2 and fields[1] in (b"missing", b"ambiguous"):
                        return None
                    if header:
                        raise GitError(f"git cat-file: unexpected answer {header[:80]!r} for {oid}")
                except (BrokenPipeError, OSError, ValueError):
                    pass
                self._stop()  # git ended (a killed process, a broken repository): once more
            raise GitError(f"git cat-file cannot read objects in {self.cwd}")

    def _start(self) -> subprocess.Popen:
        try:
            return subprocess.Popen(["git", *NO_FSMONITOR, "cat-file", "--batch"], cwd=self.cwd, env=clean_env(),
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        except OSError as exc:
            raise GitError(f"cannot run git cat-file in {self.cwd}: {exc.strerror or exc}") from None

    def _stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        for stream in (proc.stdin, proc.stdout):
            try:
                stream.close()
            except OSError:
                pass
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def close(self) -> None:
        with self.lock:
            self._stop()


def _handle(repo) -> Repository:
    """``repo`` as a ``Repository`` (a GitPython ``Repo`` gets one handle, kept on it)."""
    if isinstance(repo, Repository):
        return repo
    handle = getattr(repo, "_relconsole_handle", None)
    if handle is None:
        handle = Repository(repo.git_dir, getattr(repo, "common_dir", repo.git_dir), repo.working_tree_dir)
        try:
            repo._relconsole_handle = handle
        except AttributeError:
            pass
    return handle


def open_repo(path: str | Path) -> Repository:
    """Open the repository whose work tree (or git directory) contains ``path``.

    Raises UsageError (exit 64) when ``path`` is not inside a git repository or is a file (a
    repository is named by a folder: a file's enclosing repository is not what was asked
    for), GitError (abort) when git refuses to read it (``check_readable``).
    """
    return open_with_refs(path, ())[0]


_OPEN_QUERIES = ("--is-bare-repository", "--git-dir", "--git-common-dir", "--is-inside-work-tree", "--show-cdup")
_SHA = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")


def open_with_refs(path: str | Path, refs: tuple[str, ...] | list[str],
                   with_merge_base: bool = False) -> tuple[Repository, list[str | None]]:
    """``open_repo(path)`` and the commit sha each of ``refs`` names, asked in one
    ``git rev-parse``; a ref that call cannot answer plainly (unknown, ambiguous, starting
    with ``-``) is None: ``resolve`` it for its own answer or error. Raises as ``open_repo``.

    ``with_merge_base`` (two refs): the same call also asks ``A...B``, and the list gets a
    third item, the merge base of the two commits when git names exactly one, else None
    (none, several, or anything unexpected: ask ``merge_base``, which says why). Saves a
    start of git (issue 17)."""
    start = Path(path).expanduser().absolute()
    if not start.exists():
        raise UsageError(f"{path}: not a git repository")
    if not start.is_dir():
        raise UsageError(f"{path}: a file, not a repository: name the repository's folder "
                         f"(as {start.parent}), not a file in it")
    cwd = start
    asked = [f"{ref}^{{commit}}" for ref in refs] if not any(r.startswith("-") or not r for r in refs) else []
    symmetric = [f"{asked[0]}...{asked[1]}"] if with_merge_base and len(asked) == 2 else []
    proc = run_git(cwd, "rev-parse", *_OPEN_QUERIES, *asked, *symmetric, ok=None)
    lines = proc.stdout.decode("utf-8", "surrogateescape").split("\n")
    if len(lines) < 5 or lines[0] not in ("true", "false"):
        said = proc.stderr.decode("utf-8", "replace")
        if "not a git repository" in said and "dubious ownership" not in said:
            raise UsageError(f"{path}: not a git repository")
        check_readable(cwd)  # raises with git's words
        if asked:  # a ref this call could not take: open without them, resolve them one by one
            return open_with_refs(path, ())[0], [None] * (len(refs) + bool(with_merge_base and len(refs) == 2))
        raise GitError(f"git cannot read the repository at {cwd}: {said.strip().splitlines()[0] if said.strip() else 'exit ' + str(proc.returncode)}")
    git_dir, common, top, at = _directories(cwd, lines)
    shas = _ref_shas(lines[at:], refs, asked, bool(symmetric), proc.returncode == 0, with_merge_base)
    repository = Repository(git_dir, common, top)
    refuse_ambiguous(repository.working_tree_dir or repository.git_dir, *refs)
    return repository, shas


def _directories(cwd: Path, lines: list[str]) -> tuple[str, str, str | None, int]:
    """(git dir, common dir, work tree or None when bare, index of the first line after them)
    from ``git rev-parse``'s answers to ``_OPEN_QUERIES`` asked in ``cwd``."""
    bare, git_dir, common, inside = lines[0] == "true", lines[1], lines[2], lines[3] == "true"
    git_dir = os.path.normpath(os.path.join(cwd, git_dir))
    common = os.path.normpath(os.path.join(cwd, common))
    at = 4
    if inside:
        top = os.path.normpath(os.path.join(cwd, lines[4]))
        at = 5
        if os.path.realpath(os.path.join(top, ".git")) == os.path.realpath(git_dir):
            git_dir = os.path.join(top, ".git")  # the path as given (GitPython's), not its real path
    else:
        top = None if bare else os.path.dirname(git_dir)  # asked from inside the git directory
    return git_dir, common, top, at


def _ref_shas(lines: list[str], refs: tuple[str, ...] | list[str], asked: list[str], symmetric: bool,
              succeeded: bool, with_merge_base: bool) -> list[str | None]:
    """The sha each of ``refs`` names from ``git rev-parse``'s answer ``lines`` after the
    directories (``asked``: the refs as asked, none when they could not be; ``symmetric``: the
    ``A...B`` of the two was asked too; ``succeeded``: git exited 0), None for each it did not
    answer plainly; with the merge base appended as ``open_with_refs`` says."""
    answers, rest = lines[:len(asked)], lines[len(asked):]
    shas: list[str | None] = [None] * len(refs)
    # one line per ref, nothing after: a range ("main..HEAD") answers two lines and would
    # shift every answer after it; such a ref goes to resolve, whose --verify refuses it
    found_base = None
    exact = len(answers) == len(asked) and not any(rest)
    if symmetric:  # A...B answers A and B (in either order), then ^ and each merge base, if any
        tail = [line for line in rest if line]
        tips = sorted(line for line in tail if not line.startswith("^"))
        bases = [line[1:] for line in tail if line.startswith("^")]
        # anything else (a ref that answered more lines, shifting the rest) trusts no answer
        exact = len(answers) == len(asked) and tips == sorted(answers) and all(_SHA.match(b) for b in bases)
        found_base = bases[0] if exact and len(bases) == 1 else None
    if asked and succeeded and exact and all(_SHA.match(a) for a in answers):
        shas = list(answers)
    else:
        found_base = None
    if with_merge_base and len(refs) == 2:
        shas.append(found_base)
    return shas


def check_readable(repo_dir: str | Path) -> None:
    """Raise GitError (abort, §8) with git's own words when git refuses to read the
    repository at ``repo_dir``, as it does for one owned by another user (``safe.directory``).

    GitPython opens such a repository without asking git, and every later git call fails; so
    ask once, before anything is read from or written into it.
    """
    proc = run_git(repo_dir, "rev-parse", "--git-dir", ok=None)
    if proc.returncode == 0:
        return
    said = proc.stderr.decode("utf-8", "replace")
    trust = re.search(r"git config --global --add safe\.directory \S.*", said)
    if "dubious ownership" in said and trust:
        where = re.search(r"dubious ownership in repository at '([^\n]*)'", said)
        raise GitError(f"git refuses the repository {where.group(1) if where else repo_dir}: detected dubious "
                       f"ownership (it belongs to another user); if you trust it, add it with "
                       f"{trust.group(0).strip()}")
    lines = [line.removeprefix("fatal: ") for line in said.strip().splitlines()]
    raise GitError(f"git cannot read the repository at {repo_dir}: {lines[0] if lines else f'exit {proc.returncode}'}")


_REF_NAME = re.compile(r"[^~^:@]+")  # the name a revision starts with (main of main~2)
_DWIM = ("{}", "refs/{}", "refs/tags/{}", "refs/heads/{}", "refs/remotes/{}", "refs/remotes/{}/HEAD")  # gitrevisions


def refuse_ambiguous(where: str | Path, *refs: str) -> None:
    """Raise GitError (abort, §8) when a name one of ``refs`` starts with is a branch and also
    a tag (or a remote branch) naming another commit: git takes the tag (refs/tags before
    refs/heads) and only warns, so a pushed tag ``main`` would swap the base's oracle for the
    patch's. Refs naming one commit, full names (refs/...), HEAD and plain shas pass. One
    ``git for-each-ref`` for all of them."""
    names = {m.group(0) for ref in refs if ref and not ref.startswith("-")
             for m in [_REF_NAME.match(ref)] if m and not m.group(0).startswith("refs/") and m.group(0) != "HEAD"}
    if not names:
        return
    wanted = {pattern.format(name): name for name in names for pattern in _DWIM[1:]}
    proc = run_git(where, "for-each-ref", "--format=%(refname)%00%(objectname)%00%(*objectname)",
                   *sorted(wanted), ok=None)
    commits: dict[str, dict[str, str]] = {name: {} for name in names}
    for line in proc.stdout.decode("utf-8", "surrogateescape").splitlines():
        refname, obj, peeled = (line.split("\0") + ["", ""])[:3]
        if refname in wanted:
            commits[wanted[refname]][refname] = peeled or obj
    for name in sorted(names):
        if len(set(commits[name].values())) > 1:
            raise GitError(f"ref {name!r} is ambiguous ({', '.join(sorted(commits[name]))} name different "
                           f"commits): name the one you mean in full, e.g. --base refs/heads/{name}")


def resolve(repo, ref: str) -> str:
    """The commit sha ``ref`` names. Raises GitError (abort) for an unknown or ambiguous ref
    (``refuse_ambiguous``), or with git's own words when git refuses the repository."""
    where = repo.working_tree_dir or repo.git_dir
    refuse_ambiguous(where, ref)
    proc = run_git(where, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", ok=None)
    if proc.returncode == 0:
        return proc.stdout.decode().strip()
    if proc.stderr.strip():  # --quiet: an unknown ref says nothing; this is git refusing
        check_readable(where)
        return run_git(where, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").stdout.decode().strip()
    if ref == "HEAD":
        raise GitError("HEAD has no commit yet: commit the patch first")
    if is_shallow(where):
        raise GitError(f"unknown ref {ref!r} in a {SHALLOW_FIX}")
    if ".." in ref:
        raise GitError(f"{ref!r} is a range: --base and --head each take one ref (a branch, tag or commit)")
    remote, _, branch = ref.partition("/")
    remotes = run_git(where, "remote", ok=None).stdout.decode("utf-8", "replace").split()
    if branch and remote in remotes:
        fetch = f"fetch it (git fetch {remote} {branch}) or "
    elif remotes:
        fetch = f"fetch it (git fetch {remotes[0]} {ref}) or "
    else:
        fetch = ""  # no remote to fetch from: a hint to fetch would send the user nowhere
    raise GitError(f"unknown ref {ref!r}: no branch, tag or commit of that name; {fetch}name another with --base/--head")


def is_shallow(repo_dir: str | Path) -> bool:
    """Whether the repository at ``repo_dir`` is a shallow clone (git's own answer, so a
    linked worktree of a shallow clone counts too)."""
    proc = run_git(repo_dir, "rev-parse", "--is-shallow-repository", ok=None)
    return proc.returncode == 0 and proc.stdout.strip() == b"true"


def merge_base(repo, base: str, head: str) -> str:
    """The merge base of two commits.

    Raises GitError (abort, §8) when there is none, telling a shallow clone (fetch more
    history) apart from unrelated histories.
    """
    where = repo.working_tree_dir or repo.git_dir
    proc = run_git(where, "merge-base", base, head, ok=None)
    if proc.returncode == 0 and proc.stdout.strip():
        return proc.stdout.decode().strip()
    if is_shallow(where):
        raise GitError(f"no merge base of {base} and {head}: {SHALLOW_FIX}")
    raise GitError(f"no merge base of {base} and {head}: the histories are unrelated")


def current_branch(repo) -> str | None:
    """The checked-out branch name, or None for a detached HEAD (as CI checks out)."""
    proc = run_git(repo.working_tree_dir or repo.git_dir, "symbolic-ref", "--quiet", "--short", "HEAD", ok=None)
    return proc.stdout.decode("utf-8", "surrogateescape").strip() if proc.returncode == 0 else None
