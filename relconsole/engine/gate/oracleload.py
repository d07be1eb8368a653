"""Reading a review's oracle from its oracle commit (SPEC §2-§4): the catalog, lease
manifests and their corpora's state, pins and freeze rows, each parsed once per blob
(``parsecache``) and hashed once per blob (``hashcache``). A bad file lands in
``review.errors`` instead of stopping the load.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from relconsole.engine.repo import gitio

from relconsole.engine.oracle.catalog import Catalog, Relation, load_catalog
from relconsole.engine.errors import BadInputError
from relconsole.engine.oracle.freezes import assess, parse_rows
from relconsole.engine.oracle.hashcache import CommitFiles, HashCache
from relconsole.engine.oracle.leases import LeaseStatus, lease_status, parse_lease, pin_states
from relconsole.engine.repo.owners import protected
from relconsole.engine.oracle.parsecache import MAX_ENTRIES, ParseCache, current_fingerprint
from relconsole.engine.gate.seeds import check_seeds


def kept_or_recorded(review, fn: Callable, *args):
    """``fn(*args)``, or None with its BadInputError added to ``review.errors`` (every bad
    file is reported at once, §8 exit 5)."""
    try:
        return fn(*args)
    except BadInputError as exc:
        review.errors.append(exc)
        return None


def load_oracle(review, view: gitio.TreeView,
                 hash_progress: Callable[[str, int, int], None] | None = None) -> None:
    """Read the oracle at ``view`` into ``review``: the catalog, the lease manifests and their
    corpora's digests (``hash_progress(path, done, total)`` in bytes while hashing), freezes
    and pins. Bad files go to ``review.errors``; raises what git raises."""
    layout = review.layout
    digest = oracle_digest(review, hash_progress)
    leases = parse_cache(review, "lease")
    if not view.exists(layout.catalog):
        review.errors.append(BadInputError(layout.catalog, f"no catalog in {review.base_ref}"))
    else:
        review.catalog = kept_or_recorded(review, cached_catalog, review, view, layout.catalog, layout.catalog)
    manifests = [p for p in view.list_files(layout.leases_dir) if p.endswith((".yaml", ".yml"))]
    lease_ids = {path: view.blob_id(path) for path in manifests}
    texts = view.read_texts([p for p in manifests if (lease_ids[p], p) not in leases.entries])  # one git call
    for path in manifests:
        try:
            lease = leases.get(lease_ids[path], path, lambda: parse_lease(texts[path], path))
        except BadInputError as exc:
            review.errors.append(exc)
            review.leases.append(LeaseStatus(path, "invalid", exc.one_line()))
            continue
        status = lease_status(lease, review.oracle_dir, review.today, layout.expiring_window_days, digest)
        target = view.symlink_target(lease.path) if status.state == "missing" else None
        if target is not None:  # the export left out a link that leaves the tree (§4: invalid)
            status = LeaseStatus(lease.source, "invalid", f"path {lease.path!r} is a symlink to {target!r}, "
                                 "outside the repository", lease, status.days_left)
        review.leases.append(status)
    leases.flush()
    _duplicate_lease_ids(review)
    review.pins = kept_or_recorded(review, pin_states, view.read_text(layout.pins), review.oracle_dir,
                                   layout.pins, digest) or {}
    digest.flush()  # the digests learnt by this load, written once
    rows = kept_or_recorded(review, parse_rows, view.read_text(layout.freezes), layout.freezes) or []
    if review.catalog is not None:
        review.freezes = assess(rows, review.catalog, review.today)
        check_seeds(review, view)
        review.identities = {r.id: r.identity(callable_sources(r, view, layout.protected))
                             for r in review.relations}


def oracle_digest(review, hash_progress: Callable[[str, int, int], None] | None = None):
    """``digest(path, relative)`` for files exported from the oracle commit: sha256 by
    blob oid from the repository's hash cache, else streamed with ``hash_progress``.
    ``digest.flush()`` writes what it learnt to the cache (it writes at most once a second
    by itself)."""
    files = CommitFiles(review.repo.working_tree_dir or review.repo.git_dir, review.repo.git_dir,
                        review.oracle_sha, HashCache.for_git_dir(review.repo.git_dir))

    def digest(path: Path, relative: str) -> str:
        report = (lambda done, total: hash_progress(relative, done, total)) if hash_progress else None
        return files.sha256(path, relative, report)
    digest.flush = files.flush  # the caller writes the cache once it has hashed everything
    return digest


def parse_cache(review, kind: str, max_entries: int = MAX_ENTRIES) -> ParseCache:
    """The review's ``ParseCache`` of ``kind`` (read from the git directory once per review)."""
    if kind not in review._parse_caches:
        review._parse_caches[kind] = ParseCache(review.repo.git_dir, kind, current_fingerprint(), max_entries)
    return review._parse_caches[kind]


def cached_catalog(review, view: gitio.TreeView, path: str, source: str) -> Catalog | None:
    """``load_catalog`` of ``path`` in ``view`` (messages naming ``source``), parsed once per
    blob: the parse is kept under the git directory (``parsecache``). None when the commit
    has no such file. Raises BadInputError as ``load_catalog``."""
    blob = view.blob_id(path)
    if blob is None:
        return None
    cache = parse_cache(review, "catalog")
    try:
        return cache.get(blob, source, lambda: load_catalog(view.read_text(path), source))
    finally:
        cache.flush()


def _duplicate_lease_ids(review) -> None:
    seen: dict[str, str] = {}
    for status in review.leases:
        if status.lease is None:
            continue
        if status.lease.id in seen:
            review.errors.append(BadInputError(
                status.source, f"lease id {status.lease.id!r} is also used by {seen[status.lease.id]}", 1))
        seen[status.lease.id] = status.source


def callable_sources(relation: Relation, view: gitio.TreeView, guarded: tuple[str, ...]) -> dict[str, bytes]:
    """Source bytes of the callables kept in the protected tree (``guarded`` patterns): they
    are part of identity (§3). A subject in the code under test is not: editing it is what
    a patch does, not a change of the relation."""
    out = {}
    for role, ref in relation.callables().items():
        module = ref.split(":", 1)[0].replace(".", "/")
        for candidate in (f"{module}.py", f"{module}/__init__.py"):
            if not protected(guarded, candidate):
                continue
            data = view.read_bytes(candidate)
            if data is not None:
                out[role] = data
                break
    return out
