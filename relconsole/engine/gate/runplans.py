"""How a relation is planned on a materialised tree (SPEC §3, §7): the import paths, the fixture
pin of its input, the sandbox and clock it runs under, and the folders a subject may not write.

``plan_for`` gives the ``RunPlan`` every run uses (a review's run, a replay side, the merge-base
check, the import record, bite and confirmation), so each runs a relation the same way.
"""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path

from relconsole.engine.oracle.catalog import Relation
from relconsole.engine.oracle.hashcache import sha256_stream
from relconsole.engine.repo.config import Layout
from relconsole.engine.repo.gitio import run_git
from relconsole.engine.repo.owners import protected
from relconsole.engine.relations.drawing import draw_count
from relconsole.engine.relations.records import RunPlan
from relconsole.engine.gate import exercised
from relconsole.engine.gate.oracleload import oracle_digest
from relconsole.engine.gate.review import Review


def import_paths(layout: Layout, root: Path) -> list[str]:
    """Absolute import paths for subjects: configured, or the root plus ``src/`` (§3)."""
    if layout.import_paths is not None:
        return [str((root / p).resolve()) for p in layout.import_paths]
    paths = [str(root)]
    if (root / "src").is_dir():
        paths.append(str(root / "src"))
    return paths


def _fixture_pin(review: Review, relative: str, path: Path, digest=None) -> str:
    """sha256 of a relation's input at ``path`` in a run tree. A protected input is the
    oracle export's copy (same size and mtime: copytree keeps them) and is looked up by
    blob oid (through ``digest``, an ``oracle_digest`` shared by the caller's plans, or
    a new one); anything else is streamed."""
    exported = review.oracle_dir / relative
    try:
        copied, original = os.stat(path), os.stat(exported)
        same = (copied.st_size, copied.st_mtime_ns) == (original.st_size, original.st_mtime_ns)
    except (OSError, ValueError):
        same = False
    if same and protected(review.layout.protected, relative):
        return (digest or oracle_digest(review))(path, relative)
    return sha256_stream(path)


def sandboxed() -> bool:
    """Whether subjects will see their tree through bubblewrap's read-only mount here, so a
    run tree may hard-link the per-commit store's files (``treestore``) instead of copying."""
    from relconsole.engine.relations.subject.server import bwrap_path
    return bwrap_path() is not None


def plan_for(review: Review, relation: Relation, tree: Path, digest=None, linked: bool = False,
             lines: bool = False) -> RunPlan:
    """The RunPlan of ``relation`` on a materialised ``tree`` (its input read from that tree).

    ``digest``: an ``oracle_digest(review)`` to share between many plans (it lists the
    oracle commit's directories once); by default each plan makes its own. ``linked``: the
    tree hard-links the per-commit store's files, so a subject must see it read-only: the
    run requires bubblewrap (a worker that finds none aborts) instead of falling back to a
    plain process that could write into the store through the links. ``lines``: record the
    patch's changed lines the run executes (``wanted_lines``): a review's run on HEAD, whose
    record is the evidence of covered means exercised; the other runs (the merge base, bite's
    mutants, replays, confirmations, catalog commits, the import record) leave the tracer off."""
    if relation.lease_id:
        lease = review.lease(relation.lease_id).lease
        kind, relative = "lease", lease.path
    else:
        kind, relative = "seeds", relation.seeds_path
    path = tree / relative
    clock = {"real": None, "frozen": review.layout.frozen_clock}.get(relation.clock, relation.clock)
    return RunPlan(relation, tree, import_paths(review.layout, tree), kind, path,
                   _fixture_pin(review, relative, path, digest), review.layout.relation_timeout_seconds, clock,
                   review.layout.protected, sandbox="bwrap" if review.layout.require_sandbox or linked else "auto",
                   clock_day=relation.clock == "frozen", clock_today=review.today.isoformat(),
                   checkout=checkout_name(review), readonly=reviewer_folders(review),
                   env={name: os.environ[name] for name in review.layout.pass_env if name in os.environ},
                   library=library_names(review.repo.working_tree_dir or review.repo.git_dir, review.merge_base,
                                         _roots(review.layout)),
                   record_lines=wanted_lines(review) if lines else False,
                   generate=generate_settings(relation, review.layout),
                   targets=tuple((path, tuple(spans)) for path, spans in exercised.review_changed(review).items())
                   if lines else ())


def generate_settings(relation: Relation, layout: Layout) -> dict:
    """``RunPlan.generate`` for ``relation``: how many inputs to draw (``drawing.draw_count``) and
    the repository's budgets (``[tool.relconsole] generate_seconds``, ``shrink_seconds``,
    ``generate_rows``)."""
    return {"count": draw_count(relation.raw), "seconds": layout.generate_seconds,
            "shrink_seconds": layout.shrink_seconds, "rows": layout.generate_rows}


def wanted_lines(review: Review) -> tuple | bool:
    """The lines a run records (``RunPlan.record_lines``): every line of the patch's changed
    statements in owned ``.py`` files (``exercised.review_changed``) and of their call-time
    evidence (``exercised.wanted_rows``); False when there is none (nothing to record)."""
    return exercised.wanted_rows(exercised.review_changed(review)) or False


def _roots(layout: Layout) -> tuple[str, ...]:
    """The import roots as repository path prefixes ("" for the root), configured or §3's."""
    roots = layout.import_paths if layout.import_paths is not None else ("", "src")
    return tuple(r.strip("/").removeprefix("./").removeprefix(".") for r in roots)


@functools.lru_cache(maxsize=64)
def library_names(repo_dir: str, commit: str, roots: tuple[str, ...]) -> tuple[str, ...]:
    """The top-level modules ``commit`` holds in its import ``roots``: each package (a folder
    with ``__init__.py``) and each ``.py`` file right under a root, but no standard-library
    name. Read from the merge base, which the patch cannot change: a package the patch adds
    does not become one (it cannot stand in for an installed module an adapter imports).
    ``repo_dir``: the checkout (git run inside the git directory ignores a ``safe.directory``
    naming the checkout). Raises GitError when git cannot list the commit."""
    names = set()
    for root in roots:
        prefix = f"{root}/" if root else ""
        listed = run_git(repo_dir, "ls-tree", "-r", "-z", "--name-only", commit, "--", prefix or ".").stdout
        for path in listed.decode("utf-8", "surrogateescape").split("\0"):
            parts = path[len(prefix):].split("/") if path.startswith(prefix) else []
            if len(parts) == 1 and parts[0].endswith(".py"):
                names.add(parts[0][:-3])
            elif len(parts) == 2 and parts[1] == "__init__.py":
                names.add(parts[0])
    return tuple(sorted(n for n in names if n.isidentifier() and n not in sys.stdlib_module_names))


def reviewer_folders(review: Review) -> tuple[str, ...]:
    """The reviewer's own folders a subject must not write (SPEC §7): the git directory (its
    parse caches and the oracle export's store), the common one of a linked worktree, and the
    checkout. bwrap never shows them; a plain-process subject gets them read-only."""
    repo = review.repo
    folders = [repo.git_dir, getattr(repo, "common_dir", None), repo.working_tree_dir]
    return tuple(dict.fromkeys(str(f) for f in folders if f))


def checkout_name(review: Review) -> str:
    """The folder name the subject sees its tree under: the repository's own (SPEC §7: nothing
    in its working folder says it is being judged)."""
    name = Path(review.repo.working_tree_dir or review.repo.git_dir).resolve().name
    return name if name and not name.startswith(".") else "project"
