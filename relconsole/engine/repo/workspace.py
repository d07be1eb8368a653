"""Materialised trees that relations run in (SPEC §2: protected files come from the base ref).

A workspace is the code under test (HEAD's tree, exported with ``git archive``) with
every protected path replaced by the oracle commit's version, so seeds, corpora and
adapters are the base ref's whatever the patch did to them.
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path


from relconsole.engine.errors import RelconsoleError
from relconsole.engine.repo.exportstore import export_blobs
from relconsole.engine.repo.blobwrite import tree_listing
from relconsole.engine.repo.gitio import run_git
from relconsole.engine.repo.treeview import TreeView
from relconsole.engine.repo.owners import protected, protection
from relconsole.engine.repo.treestore import place_tree, stored_tree


def protected_files(view: TreeView, patterns: tuple[str, ...]) -> list[str]:
    """Repository paths of every file in ``view`` under a protected pattern.

    Only the directories the patterns start with are listed (``oracle/**`` lists
    ``oracle/``), so a 100,000-file tree is not walked for a small oracle.
    """
    listing = run_git(view.repo.working_tree_dir or view.repo.git_dir, "ls-tree", "-r", "-z", "--name-only", view.commit,
                      "--", *_literal_dirs(patterns)).stdout.decode("utf-8", "surrogateescape")
    return [p for p in listing.split("\0") if p and protected(patterns, p)]


def _literal_dirs(patterns: tuple[str, ...]) -> list[str]:
    """The directories the patterns are rooted in, or [] (everything) when one is not."""
    dirs = []
    for pattern in patterns:
        anchored = "/" in pattern.rstrip("/")  # gitignore: otherwise it matches at any depth
        head = re.split(r"[*?\[!\\]", pattern.lstrip("/"), maxsplit=1)[0]
        directory = head.rsplit("/", 1)[0] if "/" in head else ""
        if not anchored or not directory or pattern.startswith("!"):
            return []
        dirs.append(directory + "/")
    return dirs


def export_oracle(repo, oracle_commit: str, patterns: tuple[str, ...], dest: Path) -> list[str]:
    """Place the oracle commit's protected files under ``dest`` as committed (one ``git
    ls-tree`` of the directories the patterns start in); returns their paths. Regular files
    are hard links to the git dir's store of verified blobs (``exportstore``: read-only,
    each hashed on every export, a damaged one written again from git), symlinks that stay
    inside ``dest`` are made, submodules left out. Raises GitError when git fails."""
    listed = tree_listing(repo, oracle_commit, _literal_dirs(patterns) or None)
    guarded = protection(patterns)  # indexed once for every listed path
    guarded.prime(path for _mode, _oid, path in listed)
    entries = [entry for entry in listed if guarded(entry[2])]
    dest.mkdir(parents=True, exist_ok=True)
    export_blobs(repo, entries, dest)
    return [path for _mode, _oid, path in entries]


def build_run_tree(repo, code_commit: str, oracle_dir: Path,
                   patterns: tuple[str, ...], dest: Path, link: bool = False,
                   generated: Mapping[str, str] | None = None) -> Path:
    """``code_commit``'s committed files in ``dest`` (from the per-commit store,
    ``treestore``: hard links when ``link``, for a tree the subject sees through a read-only
    sandbox, else copies), then the oracle's protected files overlaid, then the ``generated``
    modules the commit lacks (``write_generated``).

    Protected files the code commit has but the oracle lacks are removed, so a patch
    cannot add its own seeds or adapters. Returns ``dest``. Raises GitError, RelconsoleError
    (abort, one line naming the folder) when the tree's files cannot be written, OSError
    when the overlay's cannot.
    """
    try:
        place_tree(stored_tree(repo, code_commit), Path(dest), link)
    except OSError as exc:
        where = exc.filename or dest
        raise RelconsoleError(f"cannot write {code_commit[:12]}'s tree at {where}: {exc.strerror or exc}") from None
    return overlay_oracle(repo, code_commit, oracle_dir, patterns, dest, generated)


def overlay_oracle(repo, code_commit: str, oracle_dir: Path,
                   patterns: tuple[str, ...], dest: Path, generated: Mapping[str, str] | None = None) -> Path:
    """Replace the protected files of ``code_commit`` checked out in ``dest`` by the
    oracle's (§2): the commit's own protected files are removed first. Then write the
    ``generated`` modules the tree lacks (``write_generated``). Returns ``dest``."""
    dest = Path(dest)
    for path in protected_files(TreeView(repo, code_commit), patterns):
        target = real_parents(dest, path)
        if target.is_symlink() or target.is_file():
            target.unlink()
    for source in sorted(Path(oracle_dir).rglob("*")):
        relative = source.relative_to(oracle_dir).as_posix()
        if source.is_dir() and not source.is_symlink():
            real_parents(dest, relative + "/.")
            continue
        target = real_parents(dest, relative)
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        elif target.is_symlink() or target.exists():
            target.unlink()
        if source.is_symlink():
            os.symlink(os.readlink(source), target)
        else:
            shutil.copyfile(source, target, follow_symlinks=False)
    write_generated(dest, generated or {})
    return dest


def write_generated(dest: Path, stubs: Mapping[str, str]) -> list[str]:
    """Write each ``path -> text`` of ``[tool.relconsole] generated`` (a module the build writes
    and git never has, such as setuptools_scm's version file) into the tree at ``dest``, UTF-8,
    where the tree has nothing at that path: a committed file always wins. A path whose folders
    pass through a symlink is left out (never written through a link, and the commit's linked
    package is not replaced). Returns the paths written, sorted."""
    written = []
    for path, text in sorted(stubs.items()):
        parts = path.split("/")
        folders = [Path(dest, *parts[:n]) for n in range(1, len(parts))]
        target = Path(dest, *parts)
        if os.path.lexists(target) or any(folder.is_symlink() for folder in folders):
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        written.append(path)
    return written


def real_parents(root: Path, relative: str) -> Path:
    """``root/relative`` with every folder on the way a real folder under ``root``: a symlink
    there (a patch's ``oracle -> /elsewhere``) is removed and replaced by a new folder, so an
    overlay never writes or deletes through a link (SPEC §7). Returns the leaf's path."""
    parts = [p for p in relative.split("/") if p not in ("", ".")]
    if any(p == ".." for p in parts):
        raise ValueError(f"{relative}: a path that leaves the tree")
    here = Path(root)
    for part in parts[:-1] if not relative.endswith("/.") else parts:
        here = here / part
        if here.is_symlink() or (here.exists() and not here.is_dir()):
            here.unlink()
        if not here.exists():
            here.mkdir()
    return here / parts[-1] if parts and not relative.endswith("/.") else here


_SCRATCH: set[Path] = set()  # removed at exit if their owner could not (a quit mid-load)


def scratch_dir(prefix: str = "relconsole-") -> Path:
    """A new private temporary directory. The caller removes it; whatever is left at
    interpreter exit (a worker thread cut off by a quit) is removed then."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    _SCRATCH.add(path)
    return path


@atexit.register
def remove_scratch() -> None:
    """Remove every directory ``scratch_dir`` made that is still there (run at exit, and by
    the command line's shutdown timer when the normal exit hangs)."""
    for path in list(_SCRATCH):
        shutil.rmtree(path, ignore_errors=True)
