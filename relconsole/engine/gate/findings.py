"""A gate decision (decision.json's mapping) as located findings: what SARIF results and
GitHub annotations both show, so that the two put each finding on the same lines.

``findings(payload)`` gives one ``Finding`` per thing a reviewer acts on, the ones that decide
first: relations that did not pass (on the changed lines their subject ran, ``missfacts.where``,
else their catalog line), review flags (at their own line, with the id ``relconsole ack``
takes), coverage gaps and changed statements no relation ran, split offences, failed
checklist items, bad input files (at their file and line) and lease warnings.
``failures(payload)`` gives the machine's part: what stopped the gate or left it without
evidence (a git error, a replay that could not finish, a missing shard, a shallow clone, a
module neither side has), never located in the patch. Each finding's ``rule`` is a
``rulehelp.RULES`` id. Messages hold untrusted text as data: each front end escapes it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from relconsole.engine.gate import rulehelp
from relconsole.engine.gate.exercised import UNEXERCISED, describe, ranges_text
from relconsole.engine.gate.missfacts import input_words

LEVELS = {"abort": "error", "reject": "error", "warn": "warning", "hold": "warning", "freeze": "note", "pass": "note"}
EVIDENCE_REASONS = ("incomplete_evidence", "replay_failed", "gate_failed")  # causes about the evidence
_WHERE = re.compile(r"^([^\s:@]+):(\d+)\b")  # "path:line" at the start of checklist evidence
BY_WORDS = {"ran": "changed lines its subject ran", "owned": "changed lines of the files it owns",
            "subject": "its subject's definition"}


@dataclass(frozen=True)
class Place:
    """A repository-relative ``path`` and 1-based lines ``line``..``end`` (None: the whole file)."""

    path: str
    line: int | None = None
    end: int | None = None


@dataclass
class Finding:
    """One thing a reviewer acts on: its ``rule`` (a RULES id), ``level`` (error, warning,
    note), ``message``, primary ``place`` and ``related`` places, ``identity`` (what tells two
    findings of one rule apart across runs: a flag or relation id), ``properties`` (ids a
    reviewer types: ``flagId``, ``relationId``), ``suppressed`` (an acknowledgement's words,
    or None) and ``track`` (the path a fingerprint names when the place moves between runs:
    a relation's catalog, not the changed lines it is shown on)."""

    rule: str
    level: str
    message: str
    place: Place
    identity: object = ""
    related: list[Place] = field(default_factory=list)
    properties: dict = field(default_factory=dict)
    suppressed: str | None = None
    track: str | None = None  # the path its fingerprint names (default: the place's): one that stays put


@dataclass
class Failure:
    """What kept the gate from deciding on evidence: its ``rule`` (a tool rule of RULES), the
    ``message``, a ``place`` when the failure has one (a file it could not read), ``properties``."""

    rule: str
    message: str
    place: Place | None = None
    properties: dict = field(default_factory=dict)


def findings(payload: dict) -> list[Finding]:
    """Every finding of ``payload`` (module docstring), the deciding kinds first."""
    return (_relations(payload) + _flags(payload) + _gaps(payload) + _split(payload) + _checklist(payload)
            + _errors(payload) + _leases(payload))


def failures(payload: dict) -> list[Failure]:
    """The machine's failures in ``payload``: evidence causes, a split check not made, and
    relations whose runs judged the machine; each once."""
    out = [Failure(c["reason"], str(c.get("detail") or c["reason"]), None, _ids(c))
           for c in payload.get("causes", []) if c.get("reason") in EVIDENCE_REASONS]
    if payload.get("split_problem"):
        out.append(Failure("split_unchecked", str(payload["split_problem"])))
    for r in payload.get("relations", []):
        rule = rulehelp.relation_rule(str(r.get("reason")))
        if rule in rulehelp.TOOL_IDS and r.get("decision") != "pass":
            out.append(Failure(rule, f"relation {r.get('relation_id')}: {r.get('detail') or r.get('reason')}",
                               None, _ids(r)))
    seen, unique = set(), []
    for failure in out:
        if (failure.rule, failure.message) not in seen:
            seen.add((failure.rule, failure.message))
            unique.append(failure)
    return unique


def _ids(entry: dict) -> dict:
    return {"relationId": entry["relation_id"]} if entry.get("relation_id") else {}


def catalog_path(payload: dict) -> str:
    """The catalog file the payload's relations name (``oracle/catalog.yaml`` when none does)."""
    return next((r["catalog"] for r in payload.get("relations", []) if r.get("catalog")), "oracle/catalog.yaml")


def _places(where: list) -> list[Place]:
    return [Place(str(w.get("path")), a, b) for w in where or [] if isinstance(w, dict)
            for a, b in w.get("lines") or []]


def _relations(payload: dict) -> list[Finding]:
    out = []
    for r in payload.get("relations", []):
        rule = rulehelp.relation_rule(str(r.get("reason")))
        if r.get("decision") == "pass" or rule in rulehelp.TOOL_IDS:
            continue
        catalog = Place(str(r.get("catalog") or catalog_path(payload)), r.get("catalog_line"))
        located = _places(r.get("where"))
        if r.get("reason") == "oracle_fault" or not located:  # the catalog keeper's to fix, or nowhere known
            primary, related = catalog, located
        else:
            primary, related = located[0], located[1:] + [catalog]
        out.append(Finding(rule, LEVELS.get(str(r.get("decision")), "error"), relation_message(r), primary,
                           r.get("relation_id"), related, {"relationId": r.get("relation_id")}, track=catalog.path))
    return out


def relation_message(r: dict) -> str:
    """A relation's finding in words: its decision and reason (and decision table row), its
    statement, the two values, the input, the keys that disagreed, the detail, and where it
    is located. Untrusted text inside."""
    row = f", {rulehelp.row_text(r['row'])}" if r.get("row") else ""
    parts = [f"relation {r.get('relation_id')}: {str(r.get('decision')).upper()} {r.get('reason')}{row}"]
    if r.get("statement"):
        parts.append(f"It states: {r['statement']}")
    shrunk = r.get("shrunk")
    if isinstance(shrunk, dict):
        parts.append(f"Smallest input that shows it, {shrunk.get('what')}: {shrunk.get('input')}")
        if shrunk.get("advice"):
            parts.append(str(shrunk["advice"]).capitalize())
        parts.append(f"On it: raised {shrunk['error']}" if shrunk.get("error") else
                     f"On it: source {shrunk.get('source')} vs follow-up {shrunk.get('followup')}")
    outputs = r.get("outputs")
    if isinstance(outputs, dict):
        on = f"On {shrunk.get('whole')}: source" if isinstance(shrunk, dict) else "Source"
        parts.append(f"{on} {outputs.get('source')} vs follow-up {outputs.get('followup')}")
    if r.get("input"):
        parts.append(f"Input: {input_words(r['input'])}")
    if r.get("differing"):
        parts.append(f"Keys that disagreed: {', '.join(map(str, r['differing']))}")
    if r.get("detail"):
        parts.append(str(r["detail"]))
    where = [w for w in r.get("where") or [] if isinstance(w, dict)]
    if where:
        parts.append(f"{BY_WORDS.get(where[0].get('by'), 'at').capitalize()}: "
                     + "; ".join(f"{w.get('path')} {ranges_text(w.get('lines') or [])}" for w in where))
    return ". ".join(part.rstrip(". ") for part in parts)


def _flags(payload: dict) -> list[Finding]:
    out = []
    for flag in payload.get("flags", []):
        ack, fid = flag.get("acknowledged"), flag.get("id")
        decision = "pass" if ack else "warn" if flag.get("level") == "warn" else "reject"
        where = f"{flag.get('path')}" + (f":{flag['line']}" if flag.get("line") else "")
        tail = (f"acknowledged by {ack.get('by')}: {ack.get('reason')}" if ack else
                f"flag id {fid}: once read, relconsole ack {fid} --reason \"what you checked\"")
        properties = {"flagId": fid, "flagName": flag.get("name"), "commit": flag.get("commit")}
        out.append(Finding(rulehelp.flag_rule(str(flag.get("name"))), LEVELS[decision],
                           f"{flag.get('name')} at {where}: {flag.get('detail')}. {tail}",
                           Place(str(flag.get("path")), flag.get("line")), fid,
                           properties={k: v for k, v in properties.items() if v is not None},
                           suppressed=f"acknowledged by {ack.get('by')}: {ack.get('reason')}" if ack else None))
    return out


def _gaps(payload: dict) -> list[Finding]:
    level = payload.get("unexercised_level", "gap")
    out = [Finding("coverage_gap", "error", f"{path} is owned by no catalog pattern: add an owner or an exempt [] "
                   "entry (exit 2)", Place(str(path))) for path in payload.get("gaps", [])]
    for row in payload.get("unexercised", []):
        spans = [Place(str(row.get("path")), a, b) for a, b in row.get("lines") or []] or [Place(str(row.get("path")))]
        out.append(Finding(UNEXERCISED, "error" if level == "gap" else "warning", describe(row, level), spans[0],
                           "", spans[1:]))
    return out


def _split(payload: dict) -> list[Finding]:
    return [Finding("commit_split", "error", f"commit {str(o.get('commit'))[:12]}: {o.get('path')}: {o.get('why')}",
                    Place(str(o.get("path")))) for o in payload.get("split", [])]


def _checklist(payload: dict) -> list[Finding]:
    out = []
    for item in payload.get("checklist", []):
        if item.get("state") != "fail":
            continue
        where = [m for m in (_WHERE.match(str(e)) for e in item.get("evidence") or []) if m]
        places = [Place(m.group(1), int(m.group(2))) for m in where] or [Place(catalog_path(payload))]
        evidence = "; ".join(map(str, item.get("evidence") or ())) or "no evidence recorded"
        out.append(Finding(rulehelp.checklist_rule(str(item.get("key"))), "error", f"{item.get('title')}: {evidence}",
                           places[0], item.get("key"), places[1:]))
    return out


def _errors(payload: dict) -> list[Finding]:
    return [Finding("bad_input", "error", f"{e.get('path')}: {e.get('message')}", Place(str(e.get("path")),
                    e.get("line")), e.get("line")) for e in payload.get("errors", [])]


def _leases(payload: dict) -> list[Finding]:
    return [Finding("lease_warning", "note", f"lease {s.get('id')}: {s.get('state')}: {s.get('reason')}",
                    Place(str(s.get("source"))), s.get("id")) for s in payload.get("leases", []) if s.get("source")]
