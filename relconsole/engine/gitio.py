"""Read-only git access: refs, merge base, touched paths and blobs of a commit.

Touched paths come from ``git diff --name-status -z -M`` (no C-quoting of odd names,
renames with both paths), never from GitPython's object diff, which is orders of
magnitude slower on big diffs. Blobs are read as bytes from the object database
because ``git show`` through GitPython strips the final newline.
"""

from __future__ import annotations

import gc
import os
import re
import shutil
import subprocess
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

import git

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


def clean_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The process environment without git variables that would redirect a git call."""
    env = {k: v for k, v in os.environ.items() if k not in _SCRUBBED}
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


def open_repo(path: str | Path) -> git.Repo:
    """Open the repository whose work tree contains ``path``.

    Raises UsageError (exit 64) when ``path`` is not inside a git work tree.
    """
    try:
        repo = git.Repo(path, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        raise UsageError(f"{path}: not a git repository") from None
    check_readable(repo.working_tree_dir or repo.git_dir)
    repo.git.set_persistent_git_options(c=NO_FSMONITOR[1])
    return repo


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


def resolve(repo: git.Repo, ref: str) -> str:
    """The commit sha ``ref`` names. Raises GitError (abort) for an unknown ref."""
    try:
        return repo.git.rev_parse("--verify", "--quiet", f"{ref}^{{commit}}")
    except git.GitCommandError as exc:
        if (exc.stderr or "").strip():  # --quiet: an unknown ref says nothing; this is git refusing
            where = repo.working_tree_dir or repo.git_dir
            check_readable(where)
            return run_git(where, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").stdout.decode().strip()
    if ref == "HEAD":
        raise GitError("HEAD has no commit yet: commit the patch first")
    if is_shallow(repo.working_dir or repo.git_dir):
        raise GitError(f"unknown ref {ref!r} in a {SHALLOW_FIX}")
    remote, _, branch = ref.partition("/")
    fetch = f"git fetch {remote} {branch}" if branch and remote in {r.name for r in repo.remotes} \
        else f"git fetch origin {ref}"
    raise GitError(f"unknown ref {ref!r}: fetch it ({fetch}) or name another with --base/--head")


def is_shallow(repo_dir: str | Path) -> bool:
    """Whether the repository at ``repo_dir`` is a shallow clone (git's own answer, so a
    linked worktree of a shallow clone counts too)."""
    proc = run_git(repo_dir, "rev-parse", "--is-shallow-repository", ok=None)
    return proc.returncode == 0 and proc.stdout.strip() == b"true"


def merge_base(repo: git.Repo, base: str, head: str) -> str:
    """The merge base of two commits.

    Raises GitError (abort, §8) when there is none, telling a shallow clone (fetch more
    history) apart from unrelated histories.
    """
    try:
        return repo.git.merge_base(base, head)
    except git.GitCommandError:
        pass
    if is_shallow(repo.working_dir or repo.git_dir):
        raise GitError(f"no merge base of {base} and {head}: {SHALLOW_FIX}")
    raise GitError(f"no merge base of {base} and {head}: the histories are unrelated")


def current_branch(repo: git.Repo) -> str | None:
    """The checked-out branch name, or None for a detached HEAD (as CI checks out)."""
    try:
        return repo.git.symbolic_ref("--quiet", "--short", "HEAD")
    except git.GitCommandError:
        return None


@dataclass(frozen=True)
class Touched:
    """One path the patch touched: ``status`` is git's letter (A, M, D, R, C, T).

    For renames and copies ``old_path`` is the source path; else None.
    """

    status: str
    path: str
    old_path: str | None = None


def touched_paths(repo: git.Repo, base: str, head: str) -> list[Touched]:
    """Paths changed between ``base`` and ``head`` (commits), renames detected.

    The cyclic garbage collector is paused while the rows are made: 100,000 acyclic
    Touched rows would otherwise trigger collections that walk the caller's whole heap.
    """
    raw = repo.git.execute(
        ["git", "diff", "--name-status", "-z", "-M", "--no-ext-diff", base, head],
        env=clean_env(), strip_newline_in_stdout=False)
    fields = raw.split("\0")
    out: list[Touched] = []
    collecting = gc.isenabled()
    gc.disable()
    try:
        i = 0
        while i < len(fields) and fields[i]:
            status = fields[i]
            letter = status[0]
            if letter in "RC":
                out.append(Touched(letter, fields[i + 2], fields[i + 1]))
                i += 3
            else:
                out.append(Touched(letter, fields[i + 1]))
                i += 2
    finally:
        if collecting:
            gc.enable()
    return out


_TREE_MODE, _SUBMODULE_MODE = 0o040000, 0o160000
_TREES: "OrderedDict[tuple[str, bytes], dict[str, tuple[int, bytes]]]" = OrderedDict()
_TREES_MAX = 1024  # parsed trees kept (a tree of 1,000 entries is ~100 KB parsed)
_TREES_LOCK = threading.Lock()


def tree_entries(repo: git.Repo, binsha: bytes) -> dict[str, tuple[int, bytes]]:
    """name -> (mode, binsha) of the tree object ``binsha``, parsed from git's raw format.

    Kept in a process-wide LRU keyed by (git dir, tree id): a tree object's id is its
    content's hash, so an entry can never go stale. Raises ValueError for a malformed tree.
    """
    key = (repo.git_dir, binsha)
    with _TREES_LOCK:
        hit = _TREES.get(key)
        if hit is not None:
            _TREES.move_to_end(key)
            return hit
    data = repo.odb.stream(binsha).read()
    entries: dict[str, tuple[int, bytes]] = {}
    at = 0
    while at < len(data):  # "<octal mode> <name>\0<20-byte id>", repeated
        space = data.index(b" ", at)
        nul = data.index(b"\0", space)
        entries[data[space + 1:nul].decode("utf-8", "surrogateescape")] = (int(data[at:space], 8),
                                                                          data[nul + 1:nul + 21])
        at = nul + 21
    with _TREES_LOCK:
        _TREES[key] = entries
        while len(_TREES) > _TREES_MAX:
            _TREES.popitem(last=False)
    return entries


class TreeView:
    """Read-only view of one commit's tree: what the oracle or the code under test holds."""

    def __init__(self, repo: git.Repo, commit: str):
        self.repo = repo
        self.commit = commit
        self._tree = repo.commit(commit).tree
        self._dirs: dict[str, dict | None] = {}

    def _directory(self, directory: str) -> dict | None:
        """name -> (mode, binsha) of the entries directly under ``directory`` ("" is the
        root), or None when the commit has no such directory. Trees are parsed once per
        process (``tree_entries``); GitPython's ``tree / path`` re-parsed, and validated,
        every tree on the way for every lookup."""
        if directory in self._dirs:
            return self._dirs[directory]
        if directory == "":
            entries = tree_entries(self.repo, self._tree.binsha)
        else:
            parent, _, name = directory.rpartition("/")
            above = self._directory(parent)
            found = above.get(name) if above is not None else None
            entries = tree_entries(self.repo, found[1]) if found and found[0] == _TREE_MODE else None
        self._dirs[directory] = entries
        return entries

    def _object(self, path: str):
        """The GitPython Blob or Tree at ``path`` (a "/"-separated repository path), or None."""
        parent, _, name = path.strip("/").rpartition("/")
        entries = self._directory(parent)
        found = entries.get(name) if entries is not None and name else None
        if found is None:
            return None
        mode, binsha = found
        full = f"{parent}/{name}" if parent else name
        if mode == _TREE_MODE:
            return git.Tree(self.repo, binsha, mode, full)
        if mode == _SUBMODULE_MODE:
            return None
        return git.Blob(self.repo, binsha, mode, full)

    def _blob(self, path: str):
        obj = self._object(path)
        return obj if obj is not None and obj.type == "blob" else None

    def blob_id(self, path: str) -> str | None:
        """The hex git blob id of the file ``path`` in this commit (it names the bytes), or
        None when the commit has no such file."""
        blob = self._blob(path)
        return None if blob is None else blob.hexsha

    def exists(self, path: str) -> bool:
        """True when ``path`` is a file in this commit."""
        return self._blob(path) is not None

    def read_bytes(self, path: str) -> bytes | None:
        """The file's exact bytes, or None when the commit has no such file."""
        blob = self._blob(path)
        return None if blob is None else blob.data_stream.read()

    def symlink_target(self, path: str) -> str | None:
        """The target ``path`` names when the commit holds it as a symlink, else None."""
        blob = self._blob(path)
        if blob is None or blob.mode != 0o120000:
            return None
        return blob.data_stream.read().decode("utf-8", "surrogateescape")

    def read_text(self, path: str) -> str | None:
        """The file decoded as UTF-8, or None when absent."""
        data = self.read_bytes(path)
        return None if data is None else data.decode("utf-8", "replace")

    def read_texts(self, paths: list[str]) -> dict[str, str | None]:
        """path -> the file decoded as UTF-8 (None when absent), for many files at once:
        one ``git cat-file --batch`` for all of them instead of a round trip each (a
        thousand lease manifests). Raises GitError when git fails."""
        blobs = {path: self._blob(path) for path in paths}
        oids = list(dict.fromkeys(b.hexsha for b in blobs.values() if b is not None))
        data: dict[str, bytes] = {}
        if oids:
            proc = subprocess.run(["git", "cat-file", "--batch"], input="".join(o + "\n" for o in oids).encode(),
                                  cwd=self.repo.working_tree_dir or self.repo.git_dir, env=clean_env(),
                                  capture_output=True)
            if proc.returncode != 0:
                raise GitError(f"git cat-file failed: {proc.stderr.decode(errors='replace').strip()}")
            out, at = proc.stdout, 0
            for oid in oids:
                end = out.index(b"\n", at)
                header = out[at:end].split()
                if len(header) != 3 or header[1] == b"missing":
                    raise GitError(f"git cat-file: {oid} is missing from the object database")
                size = int(header[2])
                data[oid] = out[end + 1:end + 1 + size]
                at = end + 1 + size + 1  # the content, then a newline
        return {path: None if blob is None else data[blob.hexsha].decode("utf-8", "replace")
                for path, blob in blobs.items()}

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


def tree_listing(repo: git.Repo, commit: str, paths: list[str] | None = None) -> list[tuple[int, str, str]]:
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


def write_blobs(repo: git.Repo, commit: str, dest: Path, paths: list[str] | None = None,
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
