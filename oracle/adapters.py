"""Adapters that relconsole's own relations name (``oracle.adapters:fn``, SPEC §3).

They live in the protected tree, so a patch cannot change them. Each one calls the engine
of the tree under test (``relconsole.engine...``, imported from that tree) and turns a seed
row into one call and its result into plain JSON values, or transforms a seed row for an
``invariance`` relation. None of them stores or computes an expected answer.

Each adapter imports the engine module it calls when it is called, so the worker that runs
one relation imports only the engine it judges.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import random
from typing import Any

# --- owners.bind ---------------------------------------------------------------------------
# A row: {"owners": [[pattern, [relation ids]], ...], "touched": [[status, path] or
# [status, path, old_path], ...], "protected": [pattern, ...]}. Owners are a list of pairs,
# in order, because the last matching pattern wins (CODEOWNERS).


def bind_by_path(row: dict) -> dict[str, dict]:
    """``owners.bind`` over the row, as touched path -> {status, old_path, state, pattern,
    relations}. Raises ValueError when a path is touched twice (git never lists one twice)."""
    from relconsole.engine.repo import owners
    from relconsole.engine.repo.touched import Touched

    owner_map = [(str(pattern), list(ids)) for pattern, ids in row["owners"]]
    touched = [Touched(*item) for item in row["touched"]]
    out: dict[str, dict] = {}
    for binding in owners.bind(owner_map, touched, tuple(row["protected"])):
        if binding.path in out:
            raise ValueError(f"seed row touches {binding.path!r} twice")
        out[binding.path] = {"status": binding.touched.status, "old_path": binding.touched.old_path,
                             "state": binding.state, "pattern": binding.pattern,
                             "relations": list(binding.relations)}
    return out


def shuffle_touched(row: dict) -> dict:
    """The row with its touched paths in another order: a shuffle seeded by the row's own
    content (the same row always gets the same order), reversed instead when the shuffle
    happens to keep the order of two or more paths."""
    touched = [list(item) for item in row["touched"]]
    seed = hashlib.sha256(json.dumps(row, sort_keys=True).encode()).hexdigest()
    shuffled = list(touched)
    random.Random(seed).shuffle(shuffled)
    if shuffled == touched:
        shuffled.reverse()
    return {**row, "touched": shuffled}


def prepend_owner_copies(row: dict) -> dict:
    """The row with copies of its own owner entries, in reverse order, put in front of the
    map. Under "the last matching pattern wins" the copies never win: each path's winner
    is still the original entry behind them."""
    entries = [[pattern, list(ids)] for pattern, ids in row["owners"]]
    return {**row, "owners": list(reversed(entries)) + entries}


# --- canon ---------------------------------------------------------------------------------
# A row: {"value": any JSON, "compare": "exact"|"canon"|"tolerance", "quantum": number or
# null, "order_free": bool}; a pair row has "left" and "right" instead of "value".


def canonical_row(row: dict) -> dict:
    """The row with ``value`` replaced by ``canon.canonical`` of it under the row's
    compare, quantum and order rule (the same shape, so it can be applied again)."""
    from relconsole.engine.relations import canon

    return {**row, "value": canon.canonical(row["value"], row["compare"], row["quantum"],
                                            row["order_free"])}


def difference_paths(row: dict) -> list[str]:
    """The disagreeing key paths of ``left`` against ``right``, as a relation reports them:
    both canonicalised, then ``canon.differences``, then ``canon.path_text``."""
    from relconsole.engine.relations import canon

    compare, quantum, order_free = row["compare"], row["quantum"], row["order_free"]
    left = canon.canonical(row["left"], compare, quantum, order_free)
    right = canon.canonical(row["right"], compare, quantum, order_free)
    return [canon.path_text(p) for p in canon.differences(left, right, compare, quantum)]


def swap_sides(row: dict) -> dict:
    """The pair row with ``left`` and ``right`` exchanged."""
    return {**row, "left": row["right"], "right": row["left"]}


# --- catalog -------------------------------------------------------------------------------
# A row is a catalog document plus how it is written: {"style": "block"|"json", "owners":
# {pattern: [ids]}, "relations": [catalog rows]}.

_HEADER = "# A catalog written by oracle.adapters.write_catalog; relations appended one by one.\n"


def write_catalog(doc: dict) -> str:
    """Catalog text: the owner map written by hand (block YAML with JSON-quoted patterns,
    or one JSON document), then every relation appended with the console's own writer
    (``textedit.append_catalog_relation``, what ``accept`` uses)."""
    from relconsole.engine.oracle import textedit

    if doc["style"] == "json":
        text = '{"owners": ' + json.dumps(doc["owners"]) + ', "relations": []}\n'
    else:
        lines = [f"  {json.dumps(pattern)}: {json.dumps(ids)}\n" for pattern, ids in doc["owners"].items()]
        text = _HEADER + ("owners:\n" + "".join(lines) if lines else "owners: {}\n") + "relations: []\n"
    for row in doc["relations"]:
        text = textedit.append_catalog_relation(text, row, "catalog.yaml")
    return text


def read_catalog(text: str) -> dict:
    """``catalog.load_catalog`` of the text, back as a document: the style it is written in,
    the owner map, and each relation with the fields it was written with, their values as
    the loaded ``Relation`` holds them."""
    from relconsole.engine.oracle import catalog

    loaded = catalog.load_catalog(text, "catalog.yaml")
    return {"style": "json" if text.lstrip().startswith("{") else "block",
            "owners": {pattern: list(ids) for pattern, ids in loaded.owners},
            "relations": [_relation_row(r) for r in loaded.relations.values()]}


def _relation_row(relation) -> dict:
    freeze = relation.raw.get("freeze") or {}
    values = {"id": relation.id, "kind": relation.kind, "subject": relation.subject,
              "input": relation.input, "compare": relation.compare, "statement": relation.statement,
              "quantum": relation.quantum, "params": relation.params, "owner": relation.owner,
              "freeze": {name: getattr(relation.freeze, name) for name in freeze},
              "merge": relation.merge, "inverse": relation.inverse, "transform": relation.transform,
              "clock": relation.clock}
    return {name: values[name] for name in relation.raw}


# --- signatures and literal ---------------------------------------------------------------
# Engine functions of one string are still called through an adapter: a relation's identity
# (§3) must not change when a patch edits the engine, only when the oracle changes.


def normalise_message(text: str) -> str:
    """``signatures.normalise`` of one failure message."""
    from relconsole.engine.relations import signatures

    return signatures.normalise(text)


def one_line_text(text: str) -> str:
    """``literal.one_line`` of one untrusted text."""
    from relconsole.engine import literal

    return literal.one_line(text)


def disagree_class(keys: list[str]) -> str:
    """``signatures.failure_class`` of a miss whose disagreeing keys are ``keys``."""
    from relconsole.engine.relations import signatures

    return signatures.failure_class(None, keys)


# --- decision ------------------------------------------------------------------------------
# A sheet row: {"sheet": the text of a *.sheet.json file, "freeze_allowed": the relation's
# freeze policy, "generation": the lease store's current generation}. The sheet is text, as
# on disk: its required field ``property_result`` would read as an answer-like key (§3) in
# a seed row.


def decide_sheet(row: dict) -> dict:
    """The §8 decision of the sheet after fencing it (§5) against ``generation``, as a mapping
    (decision, reason, row, relation_id, detail, fields)."""
    from relconsole.engine import decision
    from relconsole.engine.gate import sheets

    sheet = json.loads(row["sheet"])
    if isinstance(sheet, dict):
        sheet = sheets.fence(sheet, lambda _workspace: row["generation"])
    return dataclasses.asdict(decision.decide(sheet, row["freeze_allowed"]))


def reorder_sheet_keys(row: dict) -> dict:
    """The same row with every mapping's keys in reverse order, the row's own and the
    sheet's at every depth (the sheet re-written as indented JSON)."""
    sheet = _reversed_keys(json.loads(row["sheet"]))
    out = {name: row[name] for name in reversed(list(row))}
    out["sheet"] = json.dumps(sheet, indent=2, ensure_ascii=False)
    return out


def _reversed_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {name: _reversed_keys(value[name]) for name in reversed(list(value))}
    if isinstance(value, list):
        return [_reversed_keys(item) for item in value]
    return value


def worst_of(decisions: list[str]) -> dict:
    """The PR's decision over relation decisions given as words (``decision.worst``): the
    decision and its exit code. (Its reason is the first of the tied worst, by design.)"""
    from relconsole.engine import decision

    verdicts = [decision.Decision(word, f"reason {n}", None, f"relation.{n}")
                for n, word in enumerate(decisions)]
    chosen = decision.worst(verdicts)
    return {"decision": chosen.decision, "exit_code": chosen.exit_code}


# --- pyscan (patch review flags) ----------------------------------------------------------
# A row: {"before": source or null, "after": source, "sort_in": function qualname or null}:
# one commit's version of a Python file and its parent's.


def scan_findings(row: dict) -> dict[str, list[str]]:
    """What ``pyscan`` and ``probescan`` find the commit added, by rule: the details, sorted (lines and the
    order of definitions move with layout; what was added does not)."""
    from relconsole.engine.gate.flags import probescan
    from relconsole.engine.gate.flags import pyscan

    before, after = row.get("before"), row["after"]
    found = {"golden": pyscan.golden_assertions(before, after),
             "concat": pyscan.ingest_to_concat(before, after),
             "sorts": pyscan.output_sorts(before, after, row["sort_in"]) if row.get("sort_in") else [],
             "probes": probescan.environment_probes(before, after)}
    return {rule: sorted(f.detail for f in findings) for rule, findings in found.items()}


def relayout_sources(row: dict) -> dict:
    """The same two sources moved around: top-level definitions in reverse order, a header
    comment, blank lines and comments between them, trailing comments on assertions. What
    each function holds is untouched; unparsable source is kept as it is."""
    return dict(row, before=_relayout(row.get("before")), after=_relayout(row["after"]))


def _relayout(source: str | None) -> str | None:
    import ast

    if source is None:
        return None
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return source
    lines = source.splitlines()
    blocks, header = [], []
    for node in tree.body:
        first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        text = [_commented(line) for line in lines[first - 1:node.end_lineno]]
        (blocks if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) else header).append(text)
    out = ["# laid out again by the reviewer's formatter", ""]
    for text in header:
        out += text
    for text in reversed(blocks):
        out += ["", "", "# --", *text]
    return "\n".join(out) + "\n"


def _commented(line: str) -> str:
    return line + "  # checked" if line.lstrip().startswith("assert ") and "#" not in line else line
