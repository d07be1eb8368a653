"""What CI systems read of a gate's decision (``gate.collect`` / ``gate.shard_payload``
payloads): text lines for the log, SARIF 2.1.0 for code scanning, Markdown for a job summary.

Every function takes the decision.json mapping and returns text or JSON-ready data; nothing
here decides. Untrusted text (paths, flag details, failure messages) is kept as data: the
caller escapes what reaches a terminal (``literal.one_line``); Markdown escapes it here.
"""

from __future__ import annotations

import hashlib
import re
from urllib.parse import quote

from relconsole.engine.gate.exercised import UNEXERCISED, describe, ranges_text
from relconsole.engine.literal import counted

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
INFORMATION_URI = "https://pypi.org/project/relconsole/"
MAX_MESSAGE = 1000  # characters of one SARIF message (untrusted text cut, never dropped whole)
MAX_RESULTS = 25_000  # GitHub code scanning refuses a run with more results
MAX_RELATED = 100  # related locations GitHub shows of one result
FINGERPRINT_KEY = "relconsole/v1"
_LEVELS = {"abort": "error", "reject": "error", "warn": "warning", "hold": "warning", "freeze": "note", "pass": "note"}
_URI_SAFE = "/-._~!$&'()*+,;=@"  # RFC 3986 pchar without ':' (a first segment "a:b" would read as a scheme)
_MD_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;", "|": "&#124;"}
_MD_PUNCT = re.compile(r"[!-/:-@\[-`{-~]")  # ASCII punctuation: CommonMark lets each be backslash-escaped
_MD_AUTOLINKED = "@#"  # GitHub links @mentions and #references in rendered text
_WHERE = re.compile(r"^([^\s:@]+):(\d+)\b")  # "path:line" at the start of checklist evidence

# Causes that are about the evidence, not about a relation, flag or path: shown at the catalog
EVIDENCE_REASONS = ("incomplete_evidence", "replay_failed", "gate_failed")

# What each kind of result means (§8 rows, §9 split, review flags, the checklist): the rule's text.
RULE_TEXT = {
    "coverage_gap": "A touched path is owned by no catalog pattern (exit 2): add an owner or an exempt [] entry.",
    UNEXERCISED: "A changed statement that no relation's calls ran on HEAD (exit 2 unless "
                 '[tool.relconsole] unexercised = "warn"): write a relation that runs it.',
    "commit_split": "A commit mixes oracle files with other files: split it (README: Patch review flags and the merge checklist).",
    "split_unchecked": "The split check could not read merge-base..HEAD (a shallow clone?): fetch the history.",
    "bad_input": "An oracle or gate file does not parse or validate (exit 5).",
    "incomplete_evidence": "A shard's part, a replay sheet or a manifest is missing: the gate cannot decide.",
    "replay_failed": "The replay of a missed relation could not finish (workspace lease, lease store).",
    "gate_failed": "The gate could not finish (a git error, an unreadable part or sheet): nothing was decided.",
    "lease_warning": "A data lease the oracle reads is expired or expiring.",
    "missing_fields": "§8 row 1: a replay sheet lacks a required field.",
    "lease_not_fresh": "§8 row 2: the replay's workspace lease is absent or not fresh.",
    "property_fail": "§8 row 3: the relation missed on every HEAD run.",
    "fixture_drift": "§8 row 4: the fixture pin does not match.",
    "second_replay_required": "§8 row 5: a quarantined candidate needs a second replay on a new lease.",
    "miss_not_on_base": "§8 row 6: the miss on HEAD differs from the merge base's (the patch caused it).",
    "freeze_missing_expiry": "§8 row 7: a proposed freeze has no expiry date.",
    "intermittent_on_base": "§8 row 8: an intermittent miss the merge base shows too: propose a counted freeze.",
    "freeze_not_allowed": "§8 row 8: the relation's policy forbids freezing its intermittent miss.",
}


def evidence_text(evidence, title: str = "") -> str:
    """An item's evidence lines as one text, ``"; "`` between them (``title`` when there are
    none): what every front end shows for a failed item (the gate's stdout and causes, the
    Markdown summary, SARIF), so none names fewer locations than ``flags`` (issue 17)."""
    return "; ".join(map(str, evidence or ())) or title


def text_lines(payload: dict) -> list[str]:
    """The gate's log lines, one per cause a reviewer acts on (untrusted text inside: the
    caller prints each through ``one_line``)."""
    lines = [f"gate · base {payload.get('base')} · merge base {str(payload.get('merge_base'))[:10]} · "
             f"head {str(payload.get('head'))[:10]}"] if payload.get("head") else []
    for r in payload.get("relations", []):
        row = f" row {r['row']}" if r.get("row") else ""
        keys = f"  keys: {', '.join(r['differing'][:8])}" if r.get("differing") else ""
        lines.append(f"relation {r['relation_id']}: {r['decision'].upper()} ({r['reason']}{row})"
                     f"{'  replayed' if r.get('replayed') else ''}{keys}")
        if r.get("summary") and r.get("decision") != "pass":
            lines.append(f"    run: {r['summary']}")  # the counted freeze's reruns, when there were
        outputs = r.get("outputs")
        if isinstance(outputs, dict) and r.get("decision") != "pass":
            lines.append(f"    outputs: source {outputs.get('source')}  follow-up {outputs.get('followup')}")
        if r.get("sheet"):
            lines.append(f"    replay sheet: {r['sheet']}")
        fenced = r.get("fenced")
        if fenced:  # the sheet decided again at collection, after its workspace lease was checked
            lines.append(f"    sheet: {fenced['decision'].upper()} ({fenced['reason']}): {fenced.get('detail') or ''}")
    for f in payload.get("flags", []):
        state = "acknowledged" if f.get("acknowledged") else "WARN" if f.get("level") == "warn" else "REJECT"
        lines.append(f"flag {f['name']} {state}: {f['path']}{':' + str(f['line']) if f.get('line') else ''}  "
                     f"{f['detail']}")
    lines += [f"split REJECT: {o['commit'][:10]} {o['path']}: {o['why']}" for o in payload.get("split", [])]
    if payload.get("split_problem"):
        lines.append(f"split ABORT: {payload['split_problem']}")
    lines += [f"checklist FAIL {i['key']}: {evidence_text(i.get('evidence'), i['title'])}"
              for i in payload.get("checklist", []) if i.get("state") == "fail"]
    lines += [f"gap (exit 2): {path} is owned by no catalog pattern" for path in payload.get("gaps", [])]
    lines += [describe(row, payload.get("unexercised_level", "gap")) for row in payload.get("unexercised", [])]
    lines += [f"lease {s['id']}: {s['state']}  {s['reason']}" for s in payload.get("leases", [])]
    lines += [f"bad input: {e['path']}{':' + str(e['line']) if e.get('line') else ''}: {e['message']}"
              for e in payload.get("errors", [])]
    lines += [f"{c['decision']} {c['reason']}: {c['detail']}" for c in payload.get("causes", [])
              if c["reason"] in EVIDENCE_REASONS]
    return lines


def _shards(shards: object) -> str:
    """``"1 shard"``, ``"4 shards"``; a value that is not a count is shown as given."""
    return counted(shards, "shard") if isinstance(shards, int) and not isinstance(shards, bool) else f"{shards} shards"


def sarif(payload: dict) -> dict:
    """SARIF 2.1.0 of a gate decision (``gate.collect``'s payload): one run of the relconsole
    driver, one result per review flag (acknowledged ones as suppressed notes), coverage gap,
    split offence, relation that did not pass, failed checklist item, bad input, lease warning
    and missing evidence. Locations are repository-relative URIs under ``%SRCROOT%`` (percent-
    encoded), ``startLine`` >= 1; ``partialFingerprints`` hash rule, path and identity (flag or
    relation id), so code scanning tracks a result across runs. Messages are untrusted text,
    kept as data and cut to MAX_MESSAGE characters; at most MAX_RESULTS results (GitHub's limit).
    """
    results = (_flag_results(payload) + _gap_results(payload) + _split_results(payload)
               + _relation_results(payload) + _checklist_results(payload) + _error_results(payload)
               + _evidence_results(payload) + _lease_results(payload))
    rules = _rules(payload, results)
    index = {rule["id"]: n for n, rule in enumerate(rules)}
    for result in results:
        result["ruleIndex"] = index[result["ruleId"]]
    return {"version": SARIF_VERSION, "$schema": SARIF_SCHEMA, "runs": [{
        "tool": {"driver": {"name": "relconsole", "version": _version(), "informationUri": INFORMATION_URI,
                            "rules": rules}},
        "originalUriBaseIds": {"%SRCROOT%": {"description": {"text": "the repository's work tree"}}},
        "results": results[:MAX_RESULTS],
        "properties": {"decision": payload.get("decision"), "reason": payload.get("reason"),
                       "exitCode": payload.get("exit_code"), "head": payload.get("head")}}]}


def sarif_uri(path: str) -> str:
    """``path`` (repository-relative, untrusted) as a relative URI reference: every byte
    outside RFC 3986's unreserved and sub-delims (space, ``#``, ``?``, ``%``, ``:``,
    control characters, non-ASCII as UTF-8) is percent-encoded; ``unquote`` gives it back.
    A path's bytes that were not UTF-8 (surrogate-escaped by git's reader) are encoded as
    those bytes, so the URI names the file on disk."""
    try:
        raw = path.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a lone surrogate that is no escaped byte: keep it visible
        raw = path.encode("utf-8", "backslashreplace")
    return quote(raw, safe=_URI_SAFE)


def _version() -> str:
    from importlib import metadata
    try:
        return metadata.version("relconsole")
    except metadata.PackageNotFoundError:
        from relconsole import __version__
        return __version__


def _rules(payload: dict, results: list[dict]) -> list[dict]:
    """Every kind of result relconsole can report (a stable list), plus any kind ``results``
    use that the list lacks (a newer reason, a checklist key)."""
    from relconsole.engine.gate.flags.patchflags import FLAG_NAMES
    texts = {name: f"Review flag {name}: the patch changed what the review protects or restates." for name in
             FLAG_NAMES} | RULE_TEXT
    texts |= {f"checklist:{i.get('key')}": f"Merge checklist: {i.get('title')}" for i in payload.get("checklist", [])}
    for result in results:
        texts.setdefault(result["ruleId"], f"relconsole {result['ruleId']}")
    return [{"id": rid, "name": _rule_name(rid), "shortDescription": {"text": _cut(text)},
             "fullDescription": {"text": _cut(text)}, "helpUri": f"{INFORMATION_URI}#description",
             "help": {"text": _cut(text)}} for rid, text in texts.items()]


def _rule_name(rid: str) -> str:
    return "".join(part.capitalize() for part in re.split(r"[^A-Za-z0-9]+", rid) if part) or "Rule"


def _lone(text: str) -> bool:
    """Whether ``text`` holds a surrogate code point (not valid Unicode on its own)."""
    return any("\ud800" <= ch <= "\udfff" for ch in text)


def _cut(text, limit: int = MAX_MESSAGE) -> str:
    """``text`` as valid Unicode (a file name's undecodable bytes, kept by git as lone
    surrogates, become U+FFFD) and at most ``limit`` characters."""
    text = str(text)
    if _lone(text):  # surrogateescape gives git's bytes back (each one U+FFFD); any other surrogate too
        try:
            text = text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
        except UnicodeEncodeError:
            text = text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _location(path, line=None, end=None) -> dict:
    start = line if isinstance(line, int) and not isinstance(line, bool) and line >= 1 else 1
    region = {"startLine": start}
    if isinstance(end, int) and not isinstance(end, bool) and end > start:
        region["endLine"] = end
    return {"physicalLocation": {"artifactLocation": {"uri": sarif_uri(str(path)), "uriBaseId": "%SRCROOT%"},
                                 "region": region}}


def _fingerprint(rule: str, path, identity) -> dict:
    digest = hashlib.sha256("\0".join((rule, str(path), str(identity))).encode("utf-8", "surrogatepass"))
    return {FINGERPRINT_KEY: digest.hexdigest()[:32]}


def _result(rule: str, decision: str, message: str, locations: list[dict], identity, related=()) -> dict:
    path = locations[0]["physicalLocation"]["artifactLocation"]["uri"] if locations else ""
    result = {"ruleId": rule, "level": _LEVELS.get(decision, "error"), "message": {"text": _cut(message)},
              "locations": locations, "partialFingerprints": _fingerprint(rule, path, identity)}
    related = list(related)[:MAX_RELATED]
    if related:
        result["relatedLocations"] = [loc | {"id": n} for n, loc in enumerate(related, 1)]
    return result


def _catalog_path(payload: dict) -> str:
    return next((r["catalog"] for r in payload.get("relations", []) if r.get("catalog")), "oracle/catalog.yaml")


def _flag_results(payload: dict) -> list[dict]:
    out = []
    for flag in payload.get("flags", []):
        ack = flag.get("acknowledged")
        result = _result(str(flag.get("name")), "pass" if ack else "warn" if flag.get("level") == "warn" else "reject",
                         f"{flag.get('name')}: {flag.get('detail')}", [_location(flag.get("path"), flag.get("line"))],
                         flag.get("id"))
        if ack:
            result["suppressions"] = [{"kind": "external", "status": "accepted",
                                       "justification": _cut(f"acknowledged by {ack.get('by')}: {ack.get('reason')}")}]
        out.append(result)
    return out


def _gap_results(payload: dict) -> list[dict]:
    level = payload.get("unexercised_level", "gap")
    unexercised = []
    for row in payload.get("unexercised", []):
        spans = [_location(row.get("path"), start, end) for start, end in row.get("lines") or [[1, 1]]]
        unexercised.append(_result(UNEXERCISED, "reject" if level == "gap" else "warn", describe(row, level),
                                   spans[:1], "", spans[1:]))
    return [_result("coverage_gap", "reject", f"{path} is owned by no catalog pattern: add an owner or an "
                    "exempt [] entry (exit 2)", [_location(path)], "") for path in payload.get("gaps", [])] + unexercised


def _split_results(payload: dict) -> list[dict]:
    return [_result("commit_split", "reject", f"commit {str(o.get('commit'))[:12]}: {o.get('path')}: {o.get('why')}",
                    [_location(o.get("path"))], "") for o in payload.get("split", [])]


def _relation_results(payload: dict) -> list[dict]:
    out = []
    for r in payload.get("relations", []):
        if r.get("decision") == "pass":
            continue
        catalog = _location(r.get("catalog") or _catalog_path(payload), r.get("catalog_line"))
        owned = [_location(path) for path in r.get("owns") or []]
        primary, related = (owned[0], owned[1:] + [catalog]) if owned else (catalog, [])
        if r.get("reason") == "oracle_fault":  # the catalog keeper's to fix: the catalog line, not the patch's code
            primary, related = catalog, owned
        row = f" (§8 row {r['row']})" if r.get("row") else ""
        keys = f"; keys that disagreed: {', '.join(map(str, r['differing']))}" if r.get("differing") else ""
        message = f"relation {r.get('relation_id')}: {r.get('decision')} {r.get('reason')}{row}: {r.get('detail')}{keys}"
        out.append(_result(str(r.get("reason")), str(r.get("decision")), message, [primary], r.get("relation_id"),
                           related))
    return out


def _checklist_results(payload: dict) -> list[dict]:
    out = []
    for item in payload.get("checklist", []):
        if item.get("state") != "fail":
            continue
        where = [m for m in (_WHERE.match(str(e)) for e in item.get("evidence") or []) if m]
        places = [_location(m.group(1), int(m.group(2))) for m in where] or [_location(_catalog_path(payload))]
        evidence = evidence_text(item.get("evidence"), "no evidence recorded")
        out.append(_result(f"checklist:{item.get('key')}", "reject", f"{item.get('title')}: {evidence}",
                           places[:1], item.get("key"), places[1:]))
    return out


def _error_results(payload: dict) -> list[dict]:
    return [_result("bad_input", "abort", f"{e.get('path')}: {e.get('message')}", [_location(e.get("path"), e.get("line"))],
                    e.get("line")) for e in payload.get("errors", [])]


def _evidence_results(payload: dict) -> list[dict]:
    """Why the gate could not judge (missing shards or sheets, a replay that failed, a split
    check it could not make), at the catalog: the review as a whole."""
    catalog = _catalog_path(payload)
    out = [_result(c["reason"], c["decision"], c.get("detail") or c["reason"], [_location(catalog)], c.get("detail"))
           for c in payload.get("causes", []) if c.get("reason") in EVIDENCE_REASONS]
    if payload.get("split_problem"):
        out.append(_result("split_unchecked", "abort", payload["split_problem"], [_location(catalog)], ""))
    return out


def _lease_results(payload: dict) -> list[dict]:
    return [_result("lease_warning", "pass", f"lease {s.get('id')}: {s.get('state')}: {s.get('reason')}",
                    [_location(s.get("source"))], s.get("id")) for s in payload.get("leases", []) if s.get("source")]


def md_text(text) -> str:
    """Untrusted ``text`` as inert GitHub Markdown on one line, safe inside a table cell.

    Control characters and newlines become visible escapes (``literal.one_line``); ``&``,
    ``<``, ``>`` and ``|`` become entities (no HTML, no cell break); every other ASCII
    punctuation character is backslash-escaped (no emphasis, code, links, autolinks, headings);
    a zero-width space after ``@`` and ``#`` stops GitHub's mentions and issue references.
    """
    from relconsole.engine.literal import one_line
    def escape(match: re.Match) -> str:
        char = match.group()
        return _MD_ENTITIES.get(char) or "\\" + char + ("\u200b" if char in _MD_AUTOLINKED else "")
    return _MD_PUNCT.sub(escape, one_line(text))


def _md_code(text) -> str:
    return md_text(text) or "—"


def summary_markdown(payload: dict) -> str:
    """A GitHub-flavoured Markdown summary of a gate decision (``$GITHUB_STEP_SUMMARY``, a PR
    comment): the decision and exit code, the §8 row that fired and why, then a section per
    kind of cause: relations (decision, reason, row, replayed, disagreeing keys), review flags
    with acknowledgements, coverage gaps, split offences, failed checklist items, lease
    warnings, missing evidence and bad input. Every untrusted value goes through ``md_text``."""
    decision = str(payload.get("decision"))
    row = f", §8 row {payload['row']}" if payload.get("row") else ""
    lines = [f"## relconsole gate: {md_text(decision.upper())} (exit {md_text(payload.get('exit_code'))})", "",
             f"**{md_text(payload.get('reason'))}**{row}"
             + (f" for relation {md_text(payload['relation_id'])}" if payload.get("relation_id") else "")
             + (f": {md_text(_cut(payload['detail']))}" if payload.get("detail") else ""), "",
             f"base {md_text(payload.get('base'))} · merge base {md_text(str(payload.get('merge_base'))[:12])} · "
             f"head {md_text(str(payload.get('head'))[:12])} · {md_text(_shards(payload.get('shards', 1)))}", ""]
    for section in (_md_relations, _md_flags, _md_gaps, _md_split, _md_checklist, _md_leases, _md_evidence,
                    _md_errors):
        lines += section(payload)
    return "\n".join(lines).rstrip("\n") + "\n"


def _md_table(title: str, header: list[str], rows: list[list]) -> list[str]:
    if not rows:
        return []
    out = [f"### {title}", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(_md_code(_cut(cell)) for cell in row) + " |" for row in rows]
    return out + [""]


def _md_relations(payload: dict) -> list[str]:
    return _md_table("Relations", ["relation", "decision", "reason", "row", "replayed", "keys that disagreed"],
                     [[r.get("relation_id"), r.get("decision"), r.get("reason"), r.get("row") or "",
                       "yes" if r.get("replayed") else "no", ", ".join(map(str, r.get("differing") or []))]
                      for r in payload.get("relations", [])])


def _md_flags(payload: dict) -> list[str]:
    def ack(flag):
        a = flag.get("acknowledged")
        if a:
            return f"acknowledged by {a.get('by')}: {a.get('reason')}"
        return "a warning (no effect on the decision)" if flag.get("level") == "warn" else "not acknowledged (reject)"
    return _md_table("Review flags", ["flag", "where", "detail", "acknowledgement"],
                     [[f.get("name"), f"{f.get('path')}" + (f":{f['line']}" if f.get("line") else ""), f.get("detail"),
                       ack(f)] for f in payload.get("flags", [])])


def _md_gaps(payload: dict) -> list[str]:
    level = payload.get("unexercised_level", "gap")
    return _md_table("Coverage gaps (exit 2)", ["path owned by no catalog pattern"],
                     [[path] for path in payload.get("gaps", [])]) + _md_table(
        "Changed lines no relation ran" + (" (exit 2)" if level == "gap" else " (warning)"),
        ["path", "lines", "relations bound to it"],
        [[row.get("path"), ranges_text(row.get("lines") or []), ", ".join(map(str, row.get("relations") or []))]
         for row in payload.get("unexercised", [])])


def _md_split(payload: dict) -> list[str]:
    rows = [[str(o.get("commit"))[:12], o.get("path"), o.get("why")] for o in payload.get("split", [])]
    if payload.get("split_problem"):
        rows.append(["", "", f"split check not made: {payload['split_problem']}"])
    return _md_table("Commit split (§9)", ["commit", "path", "why"], rows)


def _md_checklist(payload: dict) -> list[str]:
    return _md_table("Failed checklist items", ["item", "title", "evidence"],
                     [[i.get("key"), i.get("title"), evidence_text(i.get("evidence"))]
                      for i in payload.get("checklist", []) if i.get("state") == "fail"])


def _md_leases(payload: dict) -> list[str]:
    return _md_table("Lease warnings", ["lease", "state", "why", "file"],
                     [[s.get("id"), s.get("state"), s.get("reason"), s.get("source")] for s in payload.get("leases", [])])


def _md_evidence(payload: dict) -> list[str]:
    return _md_table("Missing evidence", ["decision", "reason", "detail"],
                     [[c.get("decision"), c.get("reason"), c.get("detail")] for c in payload.get("causes", [])
                      if c.get("reason") in EVIDENCE_REASONS])


def _md_errors(payload: dict) -> list[str]:
    return _md_table("Bad input (exit 5)", ["file", "line", "error"],
                     [[e.get("path"), e.get("line") or "", e.get("message")] for e in payload.get("errors", [])])
