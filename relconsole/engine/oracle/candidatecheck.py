"""Judging one candidate file (SPEC §10): every rule of ``candidates.RULES``, in order.

``read_candidate`` runs the rules that read the file alone (a pure function of path and
text, which a review may keep by blob id); ``validate_candidate`` adds the rules that read
the catalog and the oracle's inputs and orders the verdicts, "not checked" where an earlier
failure stopped a rule.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Callable

from relconsole.engine.oracle.candidateids import rule_safe_id, rule_unique_id
from relconsole.engine.oracle.candidatefile import file_rules
from relconsole.engine.oracle.candidaterules import (rule_catalog_form, rule_fields, rule_input_schema,
                                                     rule_known_transform, rule_no_answers, rule_no_freeze_fields,
                                                     rule_no_skip, rule_not_always_true, rule_references_input)
from relconsole.engine.oracle.candidates import RULES, Candidate, InputShape, Verdict
from relconsole.engine.oracle.catalog import Catalog

FILE_RULES = ("size_limit", "parses", "single_document", "no_aliases", "fields", "no_answers", "no_skip",
              "no_freeze_fields", "safe_id", "known_transform", "catalog_form")
"""The rules whose verdict depends on the file alone (its path and text), never on the
catalog or the oracle's inputs: what ``read_candidate`` judges and a cache may keep by blob."""


@dataclass(frozen=True)
class CandidateRead:
    """``read_candidate``'s result: the file-only ``verdicts`` (rules of ``FILE_RULES``, in
    ``RULES`` order, those an earlier failure stopped left out), the loaded document ``raw``
    (None unless the file-level rules hold; the content rules ran when it is a mapping)
    and its catalog form ``row`` (None unless ``catalog_form`` holds). ``digest``: sha256 of the text judged (see ``judges``)."""

    verdicts: tuple[Verdict, ...]
    raw: Any
    row: dict | None
    digest: str

    def judges(self, text: str) -> bool:
        """Whether this is the reading of ``text``: its digest is the text's, and its shape
        is one ``read_candidate`` makes. A cache entry planted or damaged under another
        file's key fails this and is judged afresh."""
        verdicts = self.verdicts
        rules = [v.rule for v in verdicts] if isinstance(verdicts, tuple) and all(
            isinstance(v, Verdict) for v in verdicts) else None
        return (self.digest == text_digest(text) and rules is not None
                and rules == [r for r in FILE_RULES if r in rules] and len(set(rules)) == len(rules)
                and (self.row is None or (isinstance(self.row, dict) and all(v.ok for v in verdicts)
                                          and "catalog_form" in rules)))


def text_digest(text: str) -> str:
    """sha256 (hex) of a candidate's text, as ``CandidateRead.digest`` records it."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def read_candidate(path: str, text: str) -> CandidateRead:
    """The verdicts of the rules that read the file alone (``FILE_RULES``: size, syntax,
    fields, answers, skips, freeze fields, id, transform, catalog form), for ``path``
    with content ``text``. A pure function of (path, text) and relconsole's code, so a
    review may keep it by blob id (``parsecache``, kind ``candidate``). Never raises for
    bad content."""
    verdicts, raw = file_rules(path, text)
    row = None
    if all(v.ok for v in verdicts):
        if not isinstance(raw, dict):
            what = "an empty file" if raw is None else type(raw).__name__
            verdicts.append(Verdict("fields", False, f"{path}:1: a candidate is a YAML mapping, not {what}"))
        else:
            verdicts += [rule_fields(raw), rule_no_answers(raw), rule_no_skip(raw), rule_no_freeze_fields(raw), rule_safe_id(raw),
                         rule_known_transform(raw)]
            form, row = rule_catalog_form(raw)
            verdicts.append(form)
    return CandidateRead(tuple(verdicts), raw, row, text_digest(text))


def validate_candidate(path: str, text: str, catalog: Catalog,
                       input_fields: Callable[[dict], InputShape | list[str] | None],
                       read: CandidateRead | None = None) -> Candidate:
    """Judge one candidate file (§10). Never raises for bad content: verdicts say why.

    ``path`` names the file in reasons; ``text`` is its content. ``input_fields(input_mapping)``
    returns the candidate's InputShape (``input_shape``), or just the field names of its
    input (a lease corpus header, a seeds schema), or None when they cannot be known. The result's ``verdicts`` hold one verdict per rule
    of ``RULES`` in that order, "not checked" where an earlier failure stopped a rule;
    ``row`` is the catalog form (§10 "on accept") when every rule holds, else None.
    ``read``: ``read_candidate(path, text)`` when the caller has it (from a cache); one
    that does not ``judges(text)`` is ignored and the file read again.
    """
    if read is None or not read.judges(text):
        read = read_candidate(path, text)
    verdicts, raw = list(read.verdicts), read.raw
    if isinstance(raw, dict):  # the file-level rules held: the rules that read the catalog and the oracle
        shape = _input_shape(raw, input_fields)
        verdicts += [rule_input_schema(shape), rule_references_input(raw, shape), rule_not_always_true(raw, shape), rule_unique_id(raw, catalog)]
    by_rule = {v.rule: v for v in verdicts}
    blocker = next((rule for rule in RULES if rule in by_rule and not by_rule[rule].ok), "an earlier rule")
    ordered = [by_rule.get(rule) or Verdict(rule, False, f"not checked: {blocker} failed", checked=False)
               for rule in RULES]
    candidate = Candidate(path, text, raw, ordered)
    if candidate.valid:
        candidate.row = read.row
    return candidate


def _input_shape(raw: dict, input_fields: Callable[[dict], InputShape | list[str] | None]) -> InputShape:
    """The input's shape, field names stripped and empty names dropped."""
    inp = raw.get("input")
    if not isinstance(inp, dict):
        return InputShape()
    try:
        found = input_fields(inp)
    except (OSError, ValueError):  # an unreadable or undecodable corpus: cannot tell
        return InputShape()
    shape = found if isinstance(found, InputShape) else InputShape(found)
    cleaned = [n.strip() for n in shape.fields or () if isinstance(n, str) and n.strip()]
    return InputShape(cleaned or None, shape.plain, shape.problem)
