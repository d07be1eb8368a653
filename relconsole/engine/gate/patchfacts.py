"""What the patch itself did, read by ``review.finish_review`` (SPEC §3, §9): its review
flags, the commit-split check, relations whose identity it changes, and the reviewers'
acknowledgements on the base ref. The patch is judged by the base ref's layout even when
the oracle is read from HEAD (a patch cannot move its own gate, §2).
"""

from __future__ import annotations


from relconsole.engine.repo import gitio
from relconsole.engine.repo.treeview import TreeView

from relconsole.engine.oracle.catalog import Relation
from relconsole.engine.repo.config import Layout
from relconsole.engine.errors import BadInputError, GitError
from relconsole.engine.repo.owners import protected, protection
from relconsole.engine.gate.flags.acks import parse_acks, range_authors, with_makers
from relconsole.engine.gate.flags.patchflags import Flag
from relconsole.engine.gate.flags.patchscan import patch_flags
from relconsole.engine.repo.splitcheck import check_split, layout_at
from relconsole.engine.gate.oracleload import cached_catalog, callable_sources, kept_or_recorded, parse_cache


def load_acks(review) -> None:
    """The acknowledgements of review flags, always from the base ref (a patch's own acks file,
    even under ``--oracle-from HEAD``, acknowledges nothing), and the patch's authors, whose
    own acknowledgements count for nothing."""
    path = review.layout.acks
    review.acks = kept_or_recorded(review, parse_acks, TreeView(review.repo, review.base_tip).read_text(path),
                                   path) or []
    if review.acks:
        review.acks = with_makers(review.root, review.base_tip, path, review.acks)
        review.authors = range_authors(review.root, review.merge_base, review.head_sha)
        if review.flags:  # the ids read here, off any console's UI thread
            review.flag_id(review.flags[0])


PROBE_CACHE_ENTRIES = 200_000
"""Changed modules whose probe findings are kept (about 150 bytes each): two reviews of a
patch touching 100,000 files."""


def _judging_layout(review) -> Layout:
    """The base ref's layout, which the patch's flags and split are judged by even when the
    oracle is read from HEAD (a patch cannot move its own gate, §2)."""
    if review.oracle_from != "HEAD":
        return review.layout
    try:
        return layout_at(review.root, review.base_tip)
    except BadInputError:
        return review.layout  # the base's pyproject is broken: the review already reports its own


def _split(review) -> None:
    """The §9 split check over ``merge_base..head``: offences in ``review.split``; a range git
    cannot read (a shallow clone's boundary) leaves the reason in ``split_problem`` (abort)."""
    try:
        review.split = check_split(review.root, f"{review.merge_base}..{review.head_sha}", _judging_layout(review))
    except (GitError, BadInputError) as exc:
        review.split_problem = exc.one_line()


def _flag(review) -> None:
    """The §9 review flags of the commits under review (protected paths, leases, corpora,
    freeze rows, golden literals, sorts in bag relations, ingest turned concatenation),
    judged with the base ref's layout even when the oracle is read from HEAD."""
    corpora = {s.lease.path: s.lease.id for s in review.leases if s.lease is not None}
    cache = parse_cache(review, "probes", PROBE_CACHE_ENTRIES)
    try:
        report = patch_flags(review.root, review.merge_base, review.head_sha, _judging_layout(review), review.catalog,
                             corpora, review.oracle_from, probe_cache=cache)
    finally:
        cache.flush()
    review.flags[:0] = report.flags
    review.unjudged = report.unjudged


def patch_catalog(review) -> None:
    """Relations whose identity the patch changes (§3): HEAD's catalog against the merge base's.

    The review still runs the oracle's relations; a changed identity is shown ("Δ changed
    in PR") and raised as a ``relation_changed`` flag on the last commit that changed what
    the identity covers (the catalog, or a callable's source in the protected tree), as is
    a patch catalog that does not load (when the patch touched it).
    """
    if review.merge_base == review.head_sha:
        return
    path = review.layout.catalog
    guarded = review.layout.protected
    if not any(f.name == "protected_path_changed" for f in review.flags) and not any(
            path in (b.path, b.touched.old_path) for b in review.bindings):
        return  # identity covers the catalog and protected callables only: none of them changed
    changed = {p for b in review.bindings for p in (b.path, b.touched.old_path) if p}
    if path not in changed and not _any_protected(guarded, [p for p in changed if p.endswith(".py")]):
        return  # protected files changed, but neither the catalog nor a module a callable can name
    head_view = TreeView(review.repo, review.head_sha)
    try:
        after = _catalog_identities(review, head_view, path, f"{path} (in {review.head_ref})", guarded)
    except BadInputError as exc:
        last = _last_commit(review, [path])
        if last is not None:
            review.flags.append(Flag("patch_catalog_invalid", last[0], path, exc.line, exc.one_line()))
        return
    try:
        before = _catalog_identities(review, TreeView(review.repo, review.merge_base), path,
                                     f"{path} (at the merge base)", guarded)
    except BadInputError:
        before = {}
    catalog = kept_or_recorded(review, cached_catalog, review, head_view, path, path) if after else None
    for rid in sorted(set(before) | set(after)):
        old, new = before.get(rid, ("-", None)), after.get(rid, ("-", None))
        if old[0] == new[0]:
            continue
        review.changed_identity.add(rid)
        what = "added" if rid not in before else "removed" if rid not in after else "changed"
        relation = catalog.get(rid) if catalog else None
        sources = [path] + (_protected_sources(relation, guarded) if relation else [])
        commit, where = _last_commit(review, sources) or (None, path)
        review.flags.append(Flag(
            "relation_changed", commit, where, new[1] if where == path else None,
            f"the patch {what} relation {rid} (identity {old[0][:19]} -> {new[0][:19]}); "
            "the review runs the oracle's version"))


def _any_protected(guarded: tuple[str, ...], paths: list[str]) -> bool:
    """Whether one of ``paths`` is protected (``owners.protected``), the patterns indexed
    once: a patch may change 100,000 modules."""
    guarded_path = protection(guarded)
    guarded_path.prime(paths)
    return any(map(guarded_path, paths))


def _protected_sources(relation: Relation, guarded: tuple[str, ...]) -> list[str]:
    """Files of the relation's callables that sit in the protected tree (part of identity)."""
    out = []
    for ref in relation.callables().values():
        module = ref.split(":", 1)[0].replace(".", "/")
        out += [p for p in (f"{module}.py", f"{module}/__init__.py") if protected(guarded, p)]
    return out


def _last_commit(review, paths: list[str]) -> tuple[str, str] | None:
    """(sha, path) of the newest commit of the patch that changed one of ``paths``, or None."""
    out = gitio.run_git(review.root, "log", "-1", "--format=%H", "--name-only", "-z",
                        f"{review.merge_base}..{review.head_sha}", "--", *paths).stdout.decode("utf-8", "surrogateescape")
    fields = [f.strip("\n") for f in out.split("\0") if f.strip("\n")]
    if not fields:
        return None
    sha, _, first = fields[0].partition("\n")
    changed = [first] + fields[1:] if first else fields[1:]
    return sha, next((p for p in paths if p in changed), paths[0])


def _catalog_identities(review, view: TreeView, path: str, source: str,
                        guarded: tuple[str, ...]) -> dict[str, tuple[str, int | None]]:
    """Relation id -> (identity, line) for the catalog in ``view`` ({} when it has none)."""
    catalog = cached_catalog(review, view, path, source)
    if catalog is None:
        return {}
    return {r.id: (r.identity(callable_sources(r, view, guarded)), r.line) for r in catalog.relations.values()}
