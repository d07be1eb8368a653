"""Read-only git access: refs, merge base, touched paths and blobs of a commit.

Touched paths come from ``git diff --name-status -z -M`` (no C-quoting of odd names,
renames with both paths). Objects (trees, blobs, commits) are read as bytes from one
persistent ``git cat-file --batch`` per repository handle (``Repository``), never through a
filter, textconv or anything else the reviewed tree could name. No GitPython here: opening a
repository and reading its refs and objects costs a command-line start 120 ms of imports
with it (issue 17); ``open_repo`` returns a light ``Repository`` handle, and every function
below also takes a GitPython ``Repo`` (it reads only ``working_tree_dir`` and ``git_dir``).
"""

from __future__ import annotations

import gc
import os
import re
import subprocess
import threading
import weakref
from collections import OrderedDict, namedtuple
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

    Raises UsageError (exit 64) when ``path`` is not inside a git repository, GitError
    (abort) when git refuses to read it (``check_readable``).
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
    cwd = start if start.is_dir() else start.parent
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
    answers, rest = lines[at:at + len(asked)], lines[at + len(asked):]
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
    if asked and proc.returncode == 0 and exact and all(_SHA.match(a) for a in answers):
        shas = list(answers)
    else:
        found_base = None
    if with_merge_base and len(refs) == 2:
        shas.append(found_base)
    repository = Repository(git_dir, common, top)
    refuse_ambiguous(repository.working_tree_dir or repository.git_dir, *refs)
    return repository, shas


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


class Touched(namedtuple("Touched", "status path old_path", defaults=(None,))):
    """One path the patch touched: ``Touched(status, path, old_path=None)``; ``status`` is
    git's letter (A, M, D, R, C, T). For renames and copies ``old_path`` is the source path;
    else None. Immutable (a named tuple: a diff of 100,000 paths makes 100,000 of them, and
    a tuple costs less to make, read and free than a frozen dataclass; importing
    ``dataclasses`` alone cost a command-line start 6 ms)."""

    __slots__ = ()


class TouchedDiff:
    """``git diff --name-status -z -M`` of two commits, running: started by ``start_touched``
    so that git works while the caller reads the oracle; ``result()`` waits for it and
    parses it into ``Touched`` rows (``touched_paths``). Raises GitError from ``result``
    with git's first error line when git fails (an unknown or missing commit, a broken
    object database)."""

    def __init__(self, repo, base: str, head: str):
        self.base, self.head = base, head
        self.cwd = repo.working_tree_dir or repo.git_dir
        try:
            self.proc = subprocess.Popen(
                ["git", *NO_FSMONITOR, "diff", "--name-status", "-z", "-M", "--no-ext-diff", IGNORE_NO_SUBMODULE, base, head],
                cwd=self.cwd, env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        except OSError as exc:
            raise GitError(f"cannot run git diff in {self.cwd}: {exc.strerror or exc}") from None
        self._out: list = []
        # drained on a thread: git would stop at a full pipe (64 KiB) until result() reads
        self._drain = threading.Thread(target=self._communicate, name="relconsole-diff", daemon=True)
        self._drain.start()

    def _communicate(self) -> None:
        try:
            self._out[:] = self.proc.communicate()
        except BaseException as exc:  # raised by result(), on the caller's thread
            self._out[:] = [exc]

    def cancel(self) -> None:
        """Stop git (the caller no longer wants the diff) and wait for it."""
        if self.proc.poll() is None:
            self.proc.kill()
        self._drain.join()

    def result(self) -> list[Touched]:
        self._drain.join()
        if len(self._out) == 1:
            raise self._out[0]
        raw, said = self._out
        if self.proc.returncode != 0:
            lines = said.decode("utf-8", "replace").strip().splitlines()
            raise GitError(f"git diff {self.base[:12]} {self.head[:12]} failed in {self.cwd}: "
                           f"{lines[0] if lines else f'exit {self.proc.returncode}'}")
        return _parse_touched(raw.decode("utf-8", "surrogateescape"))


def start_touched(repo, base: str, head: str) -> TouchedDiff:
    """Start ``touched_paths(repo, base, head)`` in the background (see ``TouchedDiff``)."""
    return TouchedDiff(repo, base, head)


def touched_paths(repo, base: str, head: str) -> list[Touched]:
    """Paths changed between ``base`` and ``head`` (commits), renames detected. Raises
    GitError (abort, §8) with git's message when git cannot diff them."""
    return TouchedDiff(repo, base, head).result()


def _parse_touched(raw: str) -> list[Touched]:
    """Touched rows of ``--name-status -z`` output. The cyclic garbage collector is paused
    while they are made (100,000 acyclic rows would otherwise trigger collections that walk
    the caller's whole heap); each row is made by ``tuple.__new__`` (the named tuple's own
    ``__new__`` adds an argument-handling call per row)."""
    fields = raw.split("\0")
    out: list[Touched] = []
    append = out.append
    make = tuple.__new__
    collecting = gc.isenabled()
    gc.disable()
    try:
        i = 0
        count = len(fields)
        while i < count and fields[i]:
            letter = fields[i][0]
            if letter in "RC":
                append(make(Touched, (letter, fields[i + 2], fields[i + 1])))
                i += 3
            else:
                append(make(Touched, (letter, fields[i + 1], None)))
                i += 2
    finally:
        if collecting:
            gc.enable()
    return out


_TREE_MODE, _SUBMODULE_MODE = 0o040000, 0o160000
_TREES: "OrderedDict[tuple[str, bytes], dict[str, tuple[int, bytes]]]" = OrderedDict()
_TREES_MAX = 1024  # parsed trees kept (a tree of 1,000 entries is ~100 KB parsed)
_TREES_LOCK = threading.Lock()


def tree_entries(repo, binsha: bytes) -> dict[str, tuple[int, bytes]]:
    """name -> (mode, binsha) of the tree object ``binsha``, parsed from git's raw format.

    Kept in a process-wide LRU keyed by (git dir, tree id): a tree object's id is its
    content's hash, so an entry can never go stale. Raises ValueError for a malformed tree,
    GitError when the object database has no such tree.
    """
    key = (str(repo.git_dir), binsha)
    with _TREES_LOCK:
        hit = _TREES.get(key)
        if hit is not None:
            _TREES.move_to_end(key)
            return hit
    found = _handle(repo).read_object(binsha.hex())
    if found is None or found[0] != "tree":
        raise GitError(f"git cat-file: tree {binsha.hex()} is missing from the object database")
    data = found[1]
    entries: dict[str, tuple[int, bytes]] = {}
    at = 0
    while at < len(data):  # "<octal mode> <name>\0<20-byte id>", repeated
        space = data.index(b" ", at)
        nul = data.index(b"\0", space)
        end = nul + 1 + _oid_bytes(binsha)
        entries[data[space + 1:nul].decode("utf-8", "surrogateescape")] = (int(data[at:space], 8),
                                                                          data[nul + 1:end])
        at = end
    with _TREES_LOCK:
        _TREES[key] = entries
        while len(_TREES) > _TREES_MAX:
            _TREES.popitem(last=False)
    return entries


def _oid_bytes(binsha: bytes) -> int:
    return len(binsha)  # 20 (SHA-1) or 32 (SHA-256): a tree names its entries with ids of its own kind


class TreeView:
    """Read-only view of one commit's tree: what the oracle or the code under test holds.
    Raises GitError when ``commit`` names no commit in the object database."""

    def __init__(self, repo, commit: str):
        self.repo = repo
        self.commit = commit
        self._objects = _handle(repo)
        found = self._objects.read_object(commit)
        if found is None or found[0] != "commit" or not found[1].startswith(b"tree "):
            raise GitError(f"git cat-file: {commit} is not a commit in the object database")
        self._root = bytes.fromhex(found[1][5:found[1].index(b"\n")].decode("ascii"))
        self._dirs: dict[str, dict | None] = {}

    def _directory(self, directory: str) -> dict | None:
        """name -> (mode, binsha) of the entries directly under ``directory`` ("" is the
        root), or None when the commit has no such directory. Trees are parsed once per
        process (``tree_entries``)."""
        if directory in self._dirs:
            return self._dirs[directory]
        if directory == "":
            entries = tree_entries(self._objects, self._root)
        else:
            parent, _, name = directory.rpartition("/")
            above = self._directory(parent)
            found = above.get(name) if above is not None else None
            entries = tree_entries(self._objects, found[1]) if found and found[0] == _TREE_MODE else None
        self._dirs[directory] = entries
        return entries

    def _blob(self, path: str) -> tuple[int, bytes] | None:
        """(mode, binsha) of the file (blob: a regular file or a symlink) at ``path``, or None."""
        parent, _, name = path.strip("/").rpartition("/")
        entries = self._directory(parent)
        found = entries.get(name) if entries is not None and name else None
        if found is None or found[0] in (_TREE_MODE, _SUBMODULE_MODE):
            return None
        return found

    def _data(self, binsha: bytes) -> bytes:
        found = self._objects.read_object(binsha.hex())
        if found is None:
            raise GitError(f"git cat-file: blob {binsha.hex()} is missing from the object database")
        return found[1]

    def blob_id(self, path: str) -> str | None:
        """The hex git blob id of the file ``path`` in this commit (it names the bytes), or
        None when the commit has no such file."""
        blob = self._blob(path)
        return None if blob is None else blob[1].hex()

    def exists(self, path: str) -> bool:
        """True when ``path`` is a file in this commit."""
        return self._blob(path) is not None

    def read_bytes(self, path: str) -> bytes | None:
        """The file's exact bytes, or None when the commit has no such file."""
        blob = self._blob(path)
        return None if blob is None else self._data(blob[1])

    def symlink_target(self, path: str) -> str | None:
        """The target ``path`` names when the commit holds it as a symlink, else None."""
        blob = self._blob(path)
        if blob is None or blob[0] != 0o120000:
            return None
        return self._data(blob[1]).decode("utf-8", "surrogateescape")

    def read_text(self, path: str) -> str | None:
        """The file decoded as UTF-8, or None when absent."""
        data = self.read_bytes(path)
        return None if data is None else data.decode("utf-8", "replace")

    def read_texts(self, paths: list[str]) -> dict[str, str | None]:
        """path -> the file decoded as UTF-8 (None when absent), for many files at once,
        through the repository's one ``git cat-file --batch``. Raises GitError when git fails."""
        data: dict[bytes, str] = {}
        out: dict[str, str | None] = {}
        for path in paths:
            blob = self._blob(path)
            if blob is None:
                out[path] = None
                continue
            if blob[1] not in data:
                data[blob[1]] = self._data(blob[1]).decode("utf-8", "replace")
            out[path] = data[blob[1]]
        return out

    def is_dir(self, path: str) -> bool:
        """True when ``path`` is a directory (a tree, not a symlink) in this commit."""
        return self._directory(path.strip("/")) is not None

    def list_files(self, directory: str) -> list[str]:
        """Repository-relative paths of the files directly under ``directory``, sorted."""
        directory = directory.strip("/")
        entries = self._directory(directory)
        if entries is None:
            return []
        return sorted(f"{directory}/{name}" if directory else name for name, (mode, _sha) in entries.items()
                      if mode not in (_TREE_MODE, _SUBMODULE_MODE))

    def export(self, dest: Path, paths: list[str] | None = None) -> None:
        """Write the commit's files (or only those under ``paths``) into ``dest`` as committed.

        The committed blob bytes, whatever the tree's ``.gitattributes`` (``export-ignore``,
        ``export-subst``, ``eol``, filters) or the user's ``core.autocrlf`` say (SPEC §7:
        "trees as committed"): ``git ls-tree`` then one streamed ``git cat-file --batch``.
        Executable bits are kept; a symlink is made only when it stays inside ``dest`` (one
        that leaves the tree is left out, so nothing is ever written outside it);
        submodules are left out. Raises GitError when git fails.
        """
        write_blobs(self.repo, self.commit, Path(dest), paths)


def tree_listing(repo, commit: str, paths: list[str] | None = None) -> list[tuple[int, str, str]]:
    """(mode, blob id, path) of every blob ``commit`` holds (under ``paths``), from
    ``git ls-tree -r -z``. Raises GitError."""
    args = ["ls-tree", "-r", "-z", "--full-tree", commit]
    if paths:
        args += ["--", *paths]
    proc = subprocess.run(["git", *args], cwd=repo.working_tree_dir or repo.git_dir, env=clean_env(),
                          capture_output=True)
    if proc.returncode != 0:
        raise GitError(f"git ls-tree {commit[:12]} failed: {proc.stderr.decode(errors='replace').strip()}")
    out = []
    for record in proc.stdout.split(b"\0"):
        if not record:
            continue
        meta, _, path = record.partition(b"\t")
        mode, kind, oid = meta.split()
        if kind == b"blob":
            out.append((int(mode, 8), oid.decode(), path.decode("utf-8", "surrogateescape")))
    return out


def write_blobs(repo, commit: str, dest: Path, paths: list[str] | None = None,
                unchanged: dict[str, tuple] | None = None) -> dict[str, tuple]:
    """Write ``commit``'s blobs (under ``paths``) into ``dest`` byte for byte (see
    ``TreeView.export``). ``unchanged``: what an earlier call returned for the same ``dest``;
    a path whose blob id and stat are still as recorded there is not written again.
    Returns path -> (blob id, size, mtime_ns, ctime_ns, inode) of every file now there.
    Raises GitError."""
    entries = tree_listing(repo, commit, paths)
    written: dict[str, tuple] = {}
    if unchanged:
        kept = []
        for mode, oid, path in entries:
            state = _stat(Path(dest) / path, oid)
            if state is not None and list(unchanged.get(path) or ()) == list(state):
                written[path] = state
            else:
                kept.append((mode, oid, path))
        entries = kept
    if not entries:
        return written
    os.makedirs(dest, exist_ok=True)
    root = os.path.realpath(dest)
    proc = subprocess.Popen(["git", "cat-file", "--batch"], cwd=repo.working_tree_dir or repo.git_dir,
                            env=clean_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    feeder = threading.Thread(target=_feed, args=(proc.stdin, [oid for _, oid, _ in entries]), daemon=True)
    feeder.start()
    try:
        for mode, oid, path in entries:
            header = proc.stdout.readline().split()
            if len(header) != 3 or header[1] != b"blob":
                raise GitError(f"git cat-file: blob {oid} of {path} is missing from the object database")
            placed = _place(root, path, mode, proc.stdout, int(header[2]))
            proc.stdout.read(1)  # the newline after the content
            if placed:
                state = _stat(Path(dest) / path, oid)
                if state is not None:
                    written[path] = state
    finally:
        proc.stdout.close()
        proc.kill()
        proc.wait()
        feeder.join(timeout=5)
    return written


def _stat(path: Path, oid: str) -> tuple | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return (oid, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def _feed(stream, oids: list[str]) -> None:
    try:
        for start in range(0, len(oids), 1000):
            stream.write("".join(o + "\n" for o in oids[start:start + 1000]).encode())
        stream.close()
    except (BrokenPipeError, OSError, ValueError):
        pass


def _copy(stream, size: int, out=None) -> bytes:
    """Read ``size`` bytes of ``stream`` (into ``out`` in chunks, when given; else returned)."""
    chunks, left = [], size
    while left:
        chunk = stream.read(min(left, 1 << 20))
        if not chunk:
            raise GitError("git cat-file stopped in the middle of a blob")
        left -= len(chunk)
        if out is not None:
            out.write(chunk)
        else:
            chunks.append(chunk)
    return b"".join(chunks)


def place_target(root: str, path: str) -> str | None:
    """Where the repository path ``path`` goes under the real folder ``root``: every folder
    on the way made a real folder (a file in the way removed), whatever is at the target
    removed. None for a path that would leave ``root`` (absolute,
    ``..``, ``.``, an empty part, ``.git``, a folder on the way that is a symlink)."""
    parts = path.split("/")
    if path.startswith("/") or any(p in ("", ".", "..", ".git") for p in parts):
        return None
    parent = root
    for part in parts[:-1]:
        parent = os.path.join(parent, part)
        if os.path.islink(parent):
            return None
        if not os.path.isdir(parent):
            if os.path.lexists(parent):
                os.unlink(parent)
            os.mkdir(parent)
    target = os.path.join(parent, parts[-1])
    if os.path.isdir(target) and not os.path.islink(target):
        import shutil  # here: a command that writes no tree never loads it
        shutil.rmtree(target)
    elif os.path.lexists(target):
        os.unlink(target)
    return target


def _place(root: str, path: str, mode: int, stream, size: int) -> bool:
    """Write the next ``size`` bytes of ``stream`` (one blob) at ``root/path``, never through
    a symlink, streamed (a 1 GiB corpus never sits in memory); False when it is not written
    (a path that leaves ``root``, a symlink whose target leaves it): its bytes are read anyway."""
    target = place_target(root, path)
    if target is None:
        _copy(stream, size, _Discard())
        return False
    parent = os.path.dirname(target)
    if mode == 0o120000:
        link = _copy(stream, size).decode("utf-8", "surrogateescape")
        resolved = os.path.normpath(os.path.join(parent, link))
        if os.path.isabs(link) or not (resolved == root or resolved.startswith(root + os.sep)):
            return False  # a symlink out of the tree is left out (a lease on it reads as absent)
        os.symlink(link, target)
        return True
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o755 if mode == 0o100755 else 0o644)
    with os.fdopen(fd, "wb") as handle:
        _copy(stream, size, handle)
    return True


class _Discard:
    def write(self, chunk: bytes) -> None:
        pass
