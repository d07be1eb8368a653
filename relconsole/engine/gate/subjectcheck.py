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
from relconsole.engine.gate.reviewrun import checkout_name, import_paths
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
    when it runs the relations: a relation already reported is not reported twice)."""
    if review.catalog is None:
        return {}
    items = {("r", relation.id): (relation.subject, [relation.raw[r] for r in ROLES if relation.raw.get(r)])
             for relation in review.relations}
    problems = unresolved_refs(review, items | _candidate_items(candidates), timeout)
    _mark(candidates, problems)
    return {relation.id: BadInputError(review.layout.catalog,
                                       f"relation {relation.id!r}: {problems[('r', relation.id)]}", relation.line)
            for relation in review.relations if ("r", relation.id) in problems}


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
                    timeout: float = 60.0) -> dict[Hashable, str]:
    """key -> why, for each ``items`` entry (key -> (subject, [module:attr refs])) whose
    subject or a ref does not import and resolve on the base tip's tree with the oracle
    overlaid (one call per entry in a subject process; nothing of the tree runs in this
    process). Raises ServerFault when no subject process can be started."""
    scratch = scratch_dir("tmp")
    tree = scratch / checkout_name(review)
    found: dict[Hashable, str] = {}
    try:
        build_run_tree(review.repo, review.base_tip, review.oracle_dir, review.layout.protected, tree,
                       link=bwrap_path() is not None)
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
                    found[key] = _problem(ref, raised if isinstance(raised, dict) else {})
        finally:
            server.close()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return found


__all__ = ["unresolved_subjects", "unresolved_relations", "unresolved_refs", "reject_unresolved_candidates", "ServerFault"]
