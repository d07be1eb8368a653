"""Every callable the catalog names resolves on the base (SPEC §3 subjects, §8 exit 5).

A subject that does not resolve on the base either (``semver:Versoin.parse``) would make every
PR a "miss": it is a catalog error, found by ``validate`` at the relation's catalog line. The
names are imported in a subject process on the base tip's tree with the oracle overlaid (the
judge imports nothing of the tree), one call per relation.
"""

from __future__ import annotations

import shutil
from typing import Hashable

from relconsole.engine.oracle.candidates import Verdict
from relconsole.engine.errors import BadInputError
from relconsole.engine.gate.review import Review
from relconsole.engine.gate.runplans import checkout_name, import_paths
from relconsole.engine.relations.subject.server import ForkServer, bwrap_path
from relconsole.engine.relations.subject.results import ServerFault
from relconsole.engine.repo.workspace import build_run_tree, scratch_dir

ROLES = ("subject", "inverse", "transform", "canon")  # merge runs in the judge: checked when it runs


def _problem(ref: str, raised: dict) -> str:
    module, _, attrs = ref.partition(":")
    kind = raised.get("type")
    if kind == "AttributeError":
        return f"{ref}: {raised.get('message') or 'no such attribute'} (looking up {attrs} in module {module})"
    if kind == "ModuleNotFoundError":
        return (f"{ref}: module {raised.get('module') or module!r} is not in the tree (import paths) "
                "and not installed")
    return f"{ref}: importing it raised {kind}: {raised.get('message', '')}"


def unresolved_subjects(review: Review, candidates: list = (), timeout: float = 60.0) -> list[BadInputError]:
    """A BadInputError (the catalog's file and the relation's line) for each relation whose
    subject, inverse, transform or canon adapter does not resolve on the base tip; each of
    ``candidates`` whose refs do not resolve gets a failed ``subject_resolves`` verdict, in the
    same subject process (one run tree for both). Raises ServerFault when no subject process
    can be started."""
    return list(unresolved_relations(review, candidates, timeout).values())


def unresolved_relations(review: Review, candidates: list = (), timeout: float = 60.0) -> dict[str, BadInputError]:
    """``unresolved_subjects`` by relation id, in catalog order (what ``validate`` leaves out
    when it runs the relations: a relation already reported is not reported twice). Only a
    failure in a name the catalog gives (``in_the_name``) is reported: a module missing further
    in is the machine's, which the relation's run then says (environment, exit 3), as a review does."""
    if review.catalog is None:
        return {}
    items = {("r", relation.id): (relation.subject, [relation.raw[r] for r in ROLES if relation.raw.get(r)])
             for relation in review.relations}
    named: dict = {}
    problems = unresolved_refs(review, items | _candidate_items(candidates), timeout, named)
    _mark(candidates, problems)
    return {relation.id: BadInputError(review.layout.catalog,
                                       f"relation {relation.id!r}: {problems[('r', relation.id)]}", relation.line)
            for relation in review.relations if ("r", relation.id) in problems and named.get(("r", relation.id))}


CANDIDATE_RULE = "subject_resolves"


def reject_unresolved_candidates(review: Review, candidates: list, timeout: float = 60.0) -> None:
    """Add a failed ``subject_resolves`` verdict (not one of the text rules: it imports) to
    each valid candidate whose subject, inverse, transform or canon does not resolve on the
    base tip, so it is rejected before a replay or an accept (§10 fail closed). Raises
    ServerFault when no subject process can be started."""
    items = _candidate_items(candidates)
    _mark(candidates, unresolved_refs(review, items, timeout) if items else {})


def _candidate_items(candidates: list) -> dict:
    return {("c", c.path): (c.row["subject"], [c.row[r] for r in ROLES if c.row.get(r)])
            for c in candidates if c.valid and c.row is not None}


def _mark(candidates: list, problems: dict) -> None:
    for candidate in candidates:
        why = problems.get(("c", candidate.path))
        if why is not None and candidate.valid:
            candidate.verdicts.append(Verdict(CANDIDATE_RULE, False, f"does not resolve on the base: {why}"))


def unresolved_refs(review: Review, items: dict[Hashable, tuple[str, list[str]]],
                    timeout: float = 60.0, named: dict | None = None) -> dict[Hashable, str]:
    """key -> why, for each ``items`` entry (key -> (subject, [module:attr refs])) whose
    subject or a ref does not import and resolve on the base tip's tree with the oracle
    overlaid (one call per entry in a subject process; nothing of the tree runs in this
    process). ``named``, when given, gets key -> True when the failure is in a name the
    catalog gives (the ref's module or attribute), False when it is elsewhere (a module the
    ref's module imports, a call that died or hung). Raises ServerFault when no subject
    process can be started."""
    scratch = scratch_dir("tmp")
    tree = scratch / checkout_name(review)
    found: dict[Hashable, str] = {}
    try:
        build_run_tree(review.repo, review.base_tip, review.oracle_dir, review.layout.protected, tree,
                       link=bwrap_path() is not None, generated=review.layout.generated)
        server = ForkServer(tree, import_paths(review.layout, tree), None, None,
                            sandbox="bwrap" if review.layout.require_sandbox else "auto")
        try:
            for key, (subject, refs) in items.items():
                result = server.call({"subject": subject, "mode": "resolve", "refs": refs, "ops": []}, timeout)
                if result.status != "ok" or "ok" not in result.body:
                    why = result.detail or str((result.body.get("raised") or {}).get("message", ""))
                    problems = [(subject, {"type": result.status, "message": why})]
                else:
                    problems = [(str(ref), raised) for ref, raised in result.body["ok"] or []]
                for ref, raised in problems[:1]:
                    raised = raised if isinstance(raised, dict) else {}
                    found[key] = _problem(ref, raised)
                    if named is not None:
                        named[key] = in_the_name(ref, raised)
        finally:
            server.close()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return found


def in_the_name(ref: str, raised: dict) -> bool:
    """Whether ``raised`` (a resolve call's failure of ``ref``) is about the name itself: an
    attribute the module lacks, or a missing module that is the ref's module or one of its
    packages. A module missing further in (imported by the ref's module: a dependency not
    installed, a file the build generates) is the machine's, and the runs say so."""
    kind = raised.get("type")
    if kind == "ModuleNotFoundError":
        module, missing = ref.partition(":")[0], str(raised.get("module") or "")
        return bool(missing) and (module == missing or module.startswith(missing + "."))
    return kind in ("AttributeError", "ImportError", "ValueError")


RESOLVED_FILE = "resolved.json"  # under <git dir>/relconsole: what resolved on which base, by relation
RESOLVED_KEEP = 5000  # entries kept (the newest): a cache, rebuilt when missing


def unresolved_to_run(review: Review, relation_ids: list[str], timeout: float = 60.0) -> list[BadInputError]:
    """``unresolved_subjects`` for the relations about to run: a name the catalog gives that the
    base does not have (``in_the_name``) stops a review as it fails ``validate`` (exit 5 at the
    relation's catalog line), before anything is run or blamed; a module missing further in is
    left to the runs, which call it the machine's (environment). Answers are kept under the git
    directory by base commit, oracle commit and the names, so a later review of the same base asks
    no subject process; a missing or unreadable cache is rebuilt. A machine where no subject process starts reports nothing here (the runs
    themselves then say why)."""
    relations = [r for r in (review.catalog.get(rid) for rid in relation_ids) if r is not None] \
        if review.catalog is not None else []
    cache = _read_cache(review)
    keys = {r.id: _cache_key(review, r) for r in relations}
    asked = {("r", r.id): (r.subject, [r.raw[role] for role in ROLES if r.raw.get(role)])
             for r in relations if keys[r.id] not in cache}
    if asked:
        named: dict = {}
        try:
            found = unresolved_refs(review, asked, timeout, named)
        except ServerFault:
            return []
        cache.update({keys[rid]: found.get(("r", rid), "") if named.get(("r", rid)) else "" for _, rid in asked})
        _write_cache(review, cache)
    return [BadInputError(review.layout.catalog, f"relation {r.id!r}: {cache[keys[r.id]]}", r.line)
            for r in relations if cache.get(keys[r.id])]


def _cache_key(review: Review, relation) -> str:
    import hashlib
    import json
    named = [relation.subject, *[relation.raw.get(role) for role in ROLES], review.layout.import_paths,
             sorted(review.layout.generated.items()), review.base_tip, review.oracle_sha]
    return hashlib.sha256(json.dumps(named, default=str).encode()).hexdigest()


def _cache_path(review: Review):
    from pathlib import Path
    return Path(review.repo.common_dir) / "relconsole" / RESOLVED_FILE


def _read_cache(review: Review) -> dict[str, str]:
    import json
    try:
        data = json.loads(_cache_path(review).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {k: v for k, v in data.items() if isinstance(v, str)} if isinstance(data, dict) else {}


def _write_cache(review: Review, cache: dict[str, str]) -> None:
    """Keep the newest ``RESOLVED_KEEP`` answers; a failed write only loses the cache."""
    import json
    from relconsole.engine.atomicfile import write_atomic
    kept = dict(list(cache.items())[-RESOLVED_KEEP:])
    try:
        write_atomic(_cache_path(review), json.dumps(kept))
    except OSError:
        pass


__all__ = ["unresolved_subjects", "unresolved_relations", "unresolved_refs", "unresolved_to_run",
           "reject_unresolved_candidates", "ServerFault"]
