"""The quarantine of a review (SPEC §5, §10): every candidate file validated against the
oracle, the input shapes a candidate is judged by (seeds rows, a lease corpus's header, a
catalog schema), and what accepting a candidate would not fix.
"""

from __future__ import annotations

import gzip

from relconsole.engine.repo.treeview import TreeView

from relconsole.engine.oracle.candidatecheck import CandidateRead, read_candidate, validate_candidate
from relconsole.engine.oracle.candidates import Candidate, InputShape, Verdict
from relconsole.engine.oracle.candidates import input_shape as candidate_input_shape
from relconsole.engine.oracle.seedrows import SEEDS_SUFFIX, validate_seed_rows
from relconsole.engine.oracle.catalog import Catalog
from relconsole.engine.oracle.leases import header_fields
from relconsole.engine.oracle.textedit import first_bad_jsonl_line
from relconsole.engine.gate.oracleload import parse_cache
from relconsole.engine.gate.seeds import seed_values, seeds_path_problem


def input_fields(review, inp: dict) -> list[str] | None:
    if isinstance(inp.get("schema"), dict):
        return list(inp["schema"])
    if inp.get("lease"):
        status = review.lease(str(inp["lease"]))
        if status is None or status.lease is None:
            return None
        corpus = review.oracle_dir / status.lease.path
        opener = gzip.open if status.lease.path.endswith(".gz") else open
        try:
            with opener(corpus, "rt", encoding="utf-8", newline="") as handle:
                first = next((line for line in handle if line.strip()), "")
        except (OSError, EOFError):
            return None
        return header_fields(status.lease.path, first) or None
    if inp.get("seeds") and review.catalog:
        for relation in review.relations:
            if relation.seeds_path == inp["seeds"] and relation.input.get("schema"):
                return list(relation.input["schema"])
    return None


def input_shape(review, inp: dict, view: TreeView | None = None) -> InputShape:
    """A candidate input's InputShape (``candidates.input_shape``), read from the oracle
    (``view``, default the review's oracle commit): the seeds file's rows (a path the oracle
    does not hold, ``..`` included, reads as missing), the lease corpus's header, and a
    catalog relation's schema for the same seeds file."""
    view = view or TreeView(review.repo, review.oracle_sha)
    seeds = inp.get("seeds")
    rows = None
    if isinstance(seeds, str):
        misplaced = seeds_path_problem(review.layout, seeds)
        if misplaced:
            return InputShape(None, problem=misplaced)
        if view.symlink_target(seeds) is None and view.exists(seeds):
            text = view.read_text(seeds) or ""
            bad = first_bad_jsonl_line(text)
            if bad is not None:
                return InputShape(None, problem=f"seeds file {seeds} line {bad[0]} is not JSON")
            rows = seed_values(view, seeds)
    header = input_fields(review, {"lease": inp["lease"]}) if inp.get("lease") else None
    catalog_schema = review.catalog.seeds_schemas.get(seeds) if review.catalog and isinstance(seeds, str) else None
    return candidate_input_shape(inp, rows, header, catalog_schema)


def load_quarantine(review, view: TreeView) -> None:
    """Validate every quarantine file; without a catalog, say so on each item (fail closed)."""
    catalog = review.catalog or Catalog(review.layout.catalog, {}, [])
    no_catalog = "cannot be judged: the catalog did not load"
    listed = view.list_files(review.layout.quarantine_dir)
    texts = view.read_texts(listed)  # one git call for every quarantine file
    reads = parse_cache(review, "candidate")  # file-only verdicts by blob id (issue 17)
    for path in listed:
        text = texts[path] or ""
        if path.endswith(SEEDS_SUFFIX):
            relation = catalog.get(path.rsplit("/", 1)[-1].removesuffix(SEEDS_SUFFIX))
            existing = seed_values(view, relation.seeds_path) if relation and relation.seeds_path else []
            rows = validate_seed_rows(path, text, catalog, existing)
            for row in rows if review.catalog is None else ():
                row.reasons = [no_catalog]
            review.seed_rows.extend(rows)
        elif path.endswith((".yaml", ".yml")):
            read = reads.get(view.blob_id(path), path, lambda: read_candidate(path, text),
                             lambda kept: isinstance(kept, CandidateRead) and kept.judges(text))
            candidate = validate_candidate(path, text, catalog, lambda inp: input_shape(review, inp, view), read)
            if review.catalog is None:
                candidate.verdicts = [Verdict("unique_id", False, no_catalog) if v.rule == "unique_id" else v
                                      for v in candidate.verdicts]
                candidate.row = None
            candidate.notes.extend(_candidate_notes(review, candidate))
            review.candidates.append(candidate)
    reads.flush()


def _candidate_notes(review, candidate: Candidate) -> list[str]:
    """What accepting would not fix: a lease that does not allow the new relation (§4)."""
    if candidate.row is None or not isinstance(candidate.row.get("input"), dict):
        return []
    lease_id = candidate.row["input"].get("lease")
    status = review.lease(str(lease_id)) if lease_id else None
    if status is None or status.lease is None:
        return [f"reads lease {lease_id!r}, which does not exist"] if lease_id else []
    notes = []
    if candidate.id not in status.lease.allowed_relations:
        notes.append(f"lease {lease_id} does not list {candidate.id} in allowed_relations: once "
                     "accepted it stays blocked until the lease owner adds it (a lease: commit)")
    if status.state not in ("ok", "expiring"):
        notes.append(f"lease {lease_id} is {status.state}: {status.reason}")
    return notes
