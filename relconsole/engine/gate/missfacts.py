"""Where a relation's miss belongs in the patch, and the input it showed on: what the gate's
outputs (SARIF, annotations, the summary) put before a reviewer, so that code scanning shows
a miss on the pull request's diff instead of at line 1 of a file the patch did not change.

``where(review, relation_id, result)`` locates a relation that did not pass, first found of:

1. ``ran``: the changed lines of each file the relation's subject ran (its runs on HEAD record
   which changed statements they executed, ``RunPlan.record_lines``): every changed line of a
   statement one of its lines ran;
2. ``owned``: the changed lines (the hunks of merge base -> HEAD) of each file the relation owns;
3. ``subject``: the line of the subject's definition at HEAD (``module:attr`` under the import
   roots);

else nothing (the caller shows the relation's catalog line). Each place is
``{"path", "lines": [[first, last], ...], "by": "ran" | "owned" | "subject"}``, at most
MAX_RANGES runs of lines a file, paths repository-relative at HEAD.
"""

from __future__ import annotations

import ast
import json

from relconsole.engine.errors import RelconsoleError
from relconsole.engine.gate import exercised

MAX_RANGES = 20  # runs of changed lines kept of one file
SHRUNK_SHOWN = 200  # characters of a shrunk input shown


def where(review, relation_id: str, result) -> list[dict]:
    """The places of ``relation_id``'s miss (module docstring); ``result``: its RelationResult
    on HEAD, or None. ``review``: a loaded Review (``root``, ``merge_base``, ``head_sha``,
    ``bindings``, ``catalog``, ``layout``). A git failure leaves the place unknown ([]):
    where a miss is shown never decides anything."""
    try:
        return (_ran(review, relation_id, result) or _owned(review, relation_id)
                or _subject(review, relation_id))
    except (RelconsoleError, OSError):
        return []


def patch_lines(review) -> dict[str, set[int]]:
    """``{path at HEAD: changed lines}`` of every file of the patch (one ``git diff -U0``,
    cached on the review): added lines, or for a file the patch only deleted lines from, the
    line each deletion follows (line 1 for one at the top). A deleted or binary file has none."""
    cached = review.__dict__.get("_patch_lines")
    if cached is None:
        deletions: dict[str, dict[int, list[str]]] = {}
        cached = exercised.changed_lines(review.root, review.merge_base, review.head_sha, deletions, pathspecs=())
        for path, points in deletions.items():
            if not cached.get(path):
                cached[path] = {max(point, 1) for point in points}
        review.__dict__["_patch_lines"] = cached
    return cached


def _ranges(lines) -> list[list[int]]:
    return [[a, b] for a, b in exercised.line_ranges(lines)[:MAX_RANGES]]


def _owned_paths(review, relation_id: str) -> list[str]:
    return [b.path for b in review.bindings if relation_id in b.relations]


def _ran(review, relation_id: str, result) -> list[dict]:
    """The changed lines of each changed statement the relation's runs on HEAD executed, the
    files it owns first."""
    executed = exercised.executed_by([result]) if result is not None else {}
    if not executed:
        return []
    changed, patch = exercised.review_changed(review), patch_lines(review)
    owned = _owned_paths(review, relation_id)
    out = []
    for path in sorted(changed, key=lambda p: (p not in owned, owned.index(p) if p in owned else 0)):
        ran, hit = executed.get(path) or set(), set()
        for span in changed[path]:
            lines = set(range(span[0], span[1] + 1))
            if lines & ran:
                hit |= (lines & patch.get(path, set())) or {span[0]}  # a statement standing for removed code
        if hit:
            out.append({"path": path, "lines": _ranges(hit), "by": "ran"})
    return out


def _owned(review, relation_id: str) -> list[dict]:
    patch = patch_lines(review)
    return [{"path": path, "lines": _ranges(patch[path]), "by": "owned"}
            for path in _owned_paths(review, relation_id) if patch.get(path)]


def _subject(review, relation_id: str) -> list[dict]:
    """The subject's definition line at HEAD: the first module file of ``module:attr`` under
    the import roots that defines ``attr``'s first name at its top level."""
    relation = review.catalog.get(relation_id) if review.catalog is not None else None
    if relation is None or ":" not in (relation.subject or ""):
        return []
    module, _, attrs = relation.subject.partition(":")
    name = attrs.split(".")[0]
    roots = review.layout.import_paths if review.layout.import_paths is not None else ("", "src")
    stem = module.replace(".", "/")
    candidates = [f"{prefix}{stem}{tail}" for root in roots
                  for prefix in [root.strip("/").removeprefix("./") + "/" if root.strip("/.") else ""]
                  for tail in (".py", "/__init__.py")]
    from relconsole.engine.gate.blobreader import BlobReader
    with BlobReader(review.root) as reader:
        blobs = reader.read_many([(review.head_sha, path) for path in candidates])
    for path, blob in zip(candidates, blobs):
        line = _definition_line(blob or b"", name)
        if line is not None:
            return [{"path": path, "lines": [[line, line]], "by": "subject"}]
    return []


def _definition_line(source: bytes, name: str) -> int | None:
    """The line of ``name``'s top-level ``def``, ``class`` or assignment in ``source``, or None."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
            return node.lineno
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, ast.AnnAssign) else []
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            return node.lineno
    return None


def miss_input(result) -> dict | None:
    """The input of the result's first run that missed: ``{"seed", "note" (which follow-up or
    seed row missed), "path", "records", "followup", "shrunk"}`` (keys absent when the run did
    not say; ``shrunk``: the smallest input the miss shows on, when the run shrank it), or
    None when no run missed. Untrusted text inside."""
    if result is None:
        return None
    record = next((r for r in (result.first, *result.reruns) if r is not None and not r.held), None)
    if record is None:
        return None
    facts = record.inputs or {}
    out = {"seed": record.seed, "note": record.note, "path": facts.get("path"), "records": facts.get("records"),
           "followup": facts.get("followup"), "shrunk": facts.get("shrunk")}
    if (getattr(record, "drawn", None) or {}).get("missed_on"):  # the file's rows held: the input that missed was drawn
        out.update(path=None, records=None, followup=None)
    return {key: value for key, value in out.items() if value not in (None, "")}


def input_words(facts: dict | None) -> str:
    """``miss_input``'s mapping in words ("" for None): the input file and its rows, the seed,
    which input missed, the follow-up, and the shrunk input when there is one."""
    if not facts:
        return ""
    parts = []
    if facts.get("path"):
        rows = f" ({facts['records']} rows)" if isinstance(facts.get("records"), int) else ""
        parts.append(f"{facts['path']}{rows}")
    if facts.get("seed") is not None:
        parts.append(f"seed {facts['seed']}")
    if facts.get("note"):
        parts.append(str(facts["note"]))
    if facts.get("followup"):
        parts.append(f"follow-up: {facts['followup']}")
    if facts.get("shrunk") is not None:
        shrunk = json.dumps(facts["shrunk"], ensure_ascii=False, separators=(",", ":"), default=repr)
        parts.append(f"shrunk input: {shrunk[:SHRUNK_SHOWN]}")
    return ", ".join(parts)
