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

from relconsole.engine.docsref import decision_row, doc_url
from relconsole.engine.gate.exercised import describe, ranges_text
from relconsole.engine.gate.findings import BY_WORDS, EVIDENCE_REASONS
from relconsole.engine.literal import counted

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
MAX_MESSAGE = 1000  # characters of one SARIF message (untrusted text cut, never dropped whole)
MAX_RESULTS = 25_000  # GitHub code scanning refuses a run with more results
MAX_RELATED = 100  # related locations GitHub shows of one result
FINGERPRINT_KEY = "relconsole/v1"
_URI_SAFE = "/-._~!$&'()*+,;=@"  # RFC 3986 pchar without ':' (a first segment "a:b" would read as a scheme)
_MD_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;", "|": "&#124;"}
_MD_PUNCT = re.compile(r"[!-/:-@\[-`{-~]")  # ASCII punctuation: CommonMark lets each be backslash-escaped
_MD_AUTOLINKED = "@#"  # GitHub links @mentions and #references in rendered text


def shrunk_text_lines(shrunk: dict) -> list[str]:
    """A gate payload's ``shrunk`` part (``shrunkfacts.shrunk_json``) as the log's lines."""
    tries = f" (shrunk in {counted(int(shrunk.get('tries') or 0), 'try', 'tries')})" if shrunk.get("tries") else ""
    lines = [f"    smallest input: {shrunk.get('what')}{tries}: {shrunk.get('input')}"]
    if shrunk.get("fields"):
        lines.append(f"    the miss needs: {', '.join(map(str, shrunk['fields']))}")
    if shrunk.get("advice"):
        lines.append(f"    {shrunk['advice']}")
    if shrunk.get("error"):
        return lines + [f"    on it: raised {shrunk['error']}"]
    keys = f"  (disagree on {', '.join(map(str, (shrunk.get('differing') or [])[:6]))})" if shrunk.get("differing") else ""
    return lines + [f"    on it: source {shrunk.get('source')}  follow-up {shrunk.get('followup')}{keys}"]


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
        row = f", {decision_row(r['row'])}" if r.get("row") else ""
        keys = f"  keys: {', '.join(r['differing'][:8])}" if r.get("differing") else ""
        lines.append(f"relation {r['relation_id']}: {r['decision'].upper()} ({r['reason']}{row})"
                     f"{'  replayed' if r.get('replayed') else ''}{keys}")
        if r.get("summary") and r.get("decision") != "pass":
            lines.append(f"    run: {r['summary']}")  # the counted freeze's reruns, when there were
        shrunk = r.get("shrunk") if isinstance(r.get("shrunk"), dict) and r.get("decision") != "pass" else None
        if shrunk:  # the smallest input that shows the miss, before the whole input's outputs
            lines += shrunk_text_lines(shrunk)
        outputs = r.get("outputs")
        if isinstance(outputs, dict) and r.get("decision") != "pass":
            on = f"on {shrunk.get('whole')}: " if shrunk else ""
            lines.append(f"    {on}outputs: source {outputs.get('source')}  follow-up {outputs.get('followup')}")
        where = [w for w in r.get("where") or [] if isinstance(w, dict)]
        if where and r.get("decision") != "pass":
            lines.append(f"    {BY_WORDS.get(where[0].get('by'), 'at')}: "
                         + "; ".join(f"{w.get('path')} {ranges_text(w.get('lines') or [])}" for w in where))
        if r.get("sheet"):
            lines.append(f"    replay sheet: {r['sheet']}")
        fenced = r.get("fenced")
        if fenced:  # the sheet decided again at collection, after its workspace lease was checked
            lines.append(f"    sheet: {fenced['decision'].upper()} ({fenced['reason']}): {fenced.get('detail') or ''}")
    for f in payload.get("flags", []):
        state = "acknowledged" if f.get("acknowledged") else "WARN" if f.get("level") == "warn" else "REJECT"
        ack = f"  (flag id {f['id']}: relconsole ack {f['id']} --reason ...)" if f.get("id") and state != \
            "acknowledged" else ""
        lines.append(f"flag {f['name']} {state}: {f['path']}{':' + str(f['line']) if f.get('line') else ''}  "
                     f"{f['detail']}{ack}")
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
    driver with one result per ``findings.findings`` (acknowledged flags as suppressed notes;
    a relation's miss on the changed lines its subject ran; a flag's id, what ``relconsole ack``
    takes, in its message and ``properties.flagId``), and the machine's failures
    (``findings.failures``: a git error, a replay that could not finish, missing evidence) as
    the invocation's ``toolExecutionNotifications`` with ``executionSuccessful`` false, never
    as results. Every rule carries its own help (``rulehelp``: text, Markdown, a ``helpUri``
    into docs/rules.md). Locations are repository-relative URIs under ``%SRCROOT%`` (percent-
    encoded), ``startLine`` >= 1; ``partialFingerprints`` hash rule, path and identity (flag or
    relation id), so code scanning tracks a result across runs. Messages are untrusted text,
    kept as data and cut to MAX_MESSAGE characters; at most MAX_RESULTS results (GitHub's limit).
    """
    from relconsole.engine.gate import findings as found
    results = [_result(f) for f in found.findings(payload)][:MAX_RESULTS]
    notifications = [_notification(f) for f in found.failures(payload)]
    rules, descriptors = _descriptors(r["ruleId"] for r in results), _descriptors(
        n["descriptor"]["id"] for n in notifications)
    index = {rule["id"]: n for n, rule in enumerate(rules)}
    for result in results:
        result["ruleIndex"] = index[result["ruleId"]]
    index = {rule["id"]: n for n, rule in enumerate(descriptors)}
    for note in notifications:
        note["descriptor"]["index"] = index[note["descriptor"]["id"]]
    invocation = {"executionSuccessful": not notifications, "toolExecutionNotifications": notifications}
    if isinstance(payload.get("exit_code"), int):
        invocation["exitCode"] = payload["exit_code"]
    return {"version": SARIF_VERSION, "$schema": SARIF_SCHEMA, "runs": [{
        "tool": {"driver": {"name": "relconsole", "version": _version(), "informationUri": doc_url("index"),
                            "rules": rules, "notifications": descriptors}},
        "invocations": [invocation],
        "originalUriBaseIds": {"%SRCROOT%": {"description": {"text": "the repository's work tree"}}},
        "results": results,
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


def _descriptors(used) -> list[dict]:
    """The reporting descriptors of every rule id in ``rulehelp.RULES`` of the kind ``used``
    holds (results or notifications), plus any id ``used`` names that RULES lacks: each with
    its own help text, Markdown and ``helpUri`` (its section of docs/rules.md)."""
    from relconsole.engine.gate import rulehelp
    used = list(dict.fromkeys(used))
    tool = bool(used) and all(rid in rulehelp.TOOL_IDS for rid in used)
    ids = [rid for rid in rulehelp.RULES if (rid in rulehelp.TOOL_IDS) == tool] if used else []
    ids += [rid for rid in used if rid not in ids]
    return [_descriptor(rid) for rid in ids]


def _descriptor(rid: str) -> dict:
    from relconsole.engine.gate import rulehelp
    rule = rulehelp.RULES.get(rid)
    if rule is None:
        return {"id": rid, "name": _rule_name(rid), "shortDescription": {"text": _cut(f"relconsole {rid}")}}
    return {"id": rid, "name": _rule_name(rid), "shortDescription": {"text": rule.title},
            "fullDescription": {"text": f"{rule.title}. {rule.means}"}, "helpUri": rulehelp.help_uri(rid),
            "help": {"text": rulehelp.help_text(rid), "markdown": rulehelp.help_markdown(rid)},
            "properties": {"tags": ["relconsole", rule.group]}}


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


def _whole(value) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 1 else None


def _location(place) -> dict:
    """A SARIF location of a ``findings.Place`` (line 1 for a place that is a whole file)."""
    start = _whole(place.line) or 1
    region = {"startLine": start}
    end = _whole(place.end)
    if end is not None and end > start:
        region["endLine"] = end
    return {"physicalLocation": {"artifactLocation": {"uri": sarif_uri(str(place.path)), "uriBaseId": "%SRCROOT%"},
                                 "region": region}}


def _fingerprint(rule: str, path, identity) -> dict:
    digest = hashlib.sha256("\0".join((rule, str(path), str(identity))).encode("utf-8", "surrogatepass"))
    return {FINGERPRINT_KEY: digest.hexdigest()[:32]}


def _properties(properties: dict) -> dict:
    return {key: _cut(value) for key, value in properties.items() if value is not None}


def _result(finding) -> dict:
    location = _location(finding.place)
    result = {"ruleId": finding.rule, "level": finding.level, "message": {"text": _cut(finding.message)},
              "locations": [location],
              "partialFingerprints": _fingerprint(finding.rule, sarif_uri(finding.track) if finding.track is not None
                                                  else location["physicalLocation"]["artifactLocation"]["uri"],
                                                  finding.identity)}
    related = finding.related[:MAX_RELATED]
    if related:
        result["relatedLocations"] = [_location(place) | {"id": n} for n, place in enumerate(related, 1)]
    if finding.properties:
        result["properties"] = _properties(finding.properties)
    if finding.suppressed is not None:
        result["suppressions"] = [{"kind": "external", "status": "accepted", "justification": _cut(finding.suppressed)}]
    return result


def _notification(failure) -> dict:
    note = {"level": "error", "message": {"text": _cut(failure.message)}, "descriptor": {"id": failure.rule}}
    if failure.place is not None:
        note["locations"] = [_location(failure.place)]
    if failure.properties:
        note["properties"] = _properties(failure.properties)
    return note


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
    comment): the decision and exit code, the decision table row that fired (a link into the
    docs) and why, then a section per kind of cause: relations (decision, reason linked to its
    rule's help, row, replayed, disagreeing keys, the changed lines it is located on), what
    each one that did not pass states with its two values and input, review flags with their ids and how to acknowledge them, coverage gaps, split offences, failed
    checklist items, lease warnings, tool failures and bad input. Every untrusted value goes
    through ``md_text``; links are built from relconsole's own words only."""
    from relconsole.engine.gate.rulehelp import row_link
    decision = str(payload.get("decision"))
    row = f", {row_link(payload['row'])}" if _whole_row(payload.get("row")) else ""
    lines = [f"## relconsole gate: {md_text(decision.upper())} (exit {md_text(payload.get('exit_code'))})", "",
             f"**{md_text(payload.get('reason'))}**{row}"
             + (f" for relation {md_text(payload['relation_id'])}" if payload.get("relation_id") else "")
             + (f": {md_text(_cut(payload['detail']))}" if payload.get("detail") else ""), "",
             f"base {md_text(payload.get('base'))} · merge base {md_text(str(payload.get('merge_base'))[:12])} · "
             f"head {md_text(str(payload.get('head'))[:12])} · {md_text(_shards(payload.get('shards', 1)))}", ""]
    for section in (_md_relations, _md_misses, _md_flags, _md_gaps, _md_split, _md_checklist, _md_leases, _md_evidence,
                    _md_errors):
        lines += section(payload)
    return "\n".join(lines).rstrip("\n") + "\n"


class _Markdown(str):
    """A table cell that is Markdown made here from relconsole's own words (a link), not escaped."""


def _whole_row(row) -> bool:
    return isinstance(row, int) and not isinstance(row, bool) and row >= 1


def _rule_cell(rule: str, shown) -> _Markdown:
    """``shown`` (escaped) linked to ``rule``'s section of docs/rules.md."""
    from relconsole.engine.gate.rulehelp import help_uri
    return _Markdown(f"[{_md_code(_cut(shown))}]({help_uri(rule)})")


def _md_table(title: str, header: list[str], rows: list[list]) -> list[str]:
    if not rows:
        return []
    out = [f"### {title}", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(cell if isinstance(cell, _Markdown) else _md_code(_cut(cell)) for cell in row) + " |"
            for row in rows]
    return out + [""]


def _md_relations(payload: dict) -> list[str]:
    from relconsole.engine.gate.rulehelp import relation_rule, row_link

    def where(r: dict) -> str:
        places = [w for w in r.get("where") or [] if isinstance(w, dict)] if r.get("decision") != "pass" else []
        return "; ".join(f"{w.get('path')} {ranges_text(w.get('lines') or [])}" for w in places)
    return _md_table("Relations", ["relation", "decision", "reason", "row", "replayed", "keys that disagreed",
                                   "changed lines"],
                     [[r.get("relation_id"), r.get("decision"),
                       r.get("reason") if r.get("decision") == "pass" else _rule_cell(relation_rule(str(
                           r.get("reason"))), r.get("reason")),
                       _Markdown(row_link(r["row"])) if _whole_row(r.get("row")) else "",
                       "yes" if r.get("replayed") else "no", ", ".join(map(str, r.get("differing") or [])), where(r)]
                      for r in payload.get("relations", [])])


def _md_misses(payload: dict) -> list[str]:
    """What each relation that did not pass states, the two values and the input it missed on:
    the smallest input first (a row of its own) when the miss was shrunk, then the whole input."""
    from relconsole.engine.gate.missfacts import input_words
    rows = []
    for r in payload.get("relations", []):
        outputs = r.get("outputs") if isinstance(r.get("outputs"), dict) else {}
        shrunk = r.get("shrunk") if isinstance(r.get("shrunk"), dict) else None
        if r.get("decision") != "pass" and shrunk:
            on = shrunk.get("error") and f"raised {shrunk['error']}"
            rows.append([r.get("relation_id"), r.get("statement") or "", on or shrunk.get("source", ""),
                         "" if on else shrunk.get("followup", ""),
                         f"smallest input, {shrunk.get('what')}: {shrunk.get('input')}"])
        if r.get("decision") != "pass" and (r.get("statement") or outputs):
            rows.append([r.get("relation_id"), "" if shrunk else r.get("statement") or "", outputs.get("source", ""),
                         outputs.get("followup", ""),
                         (f"{shrunk.get('whole')}: " if shrunk else "") + input_words(r.get("input"))])
    return _md_table("What missed", ["relation", "it states", "source", "follow-up", "input"], rows)


def _md_flags(payload: dict) -> list[str]:
    def ack(flag):
        a = flag.get("acknowledged")
        if a:
            return f"acknowledged by {a.get('by')}: {a.get('reason')}"
        state = "a warning (no effect on the decision)" if flag.get("level") == "warn" else "not acknowledged (reject)"
        return f"{state}; once read: relconsole ack {flag.get('id')} --reason \"…\"" if flag.get("id") else state
    from relconsole.engine.gate.rulehelp import flag_rule
    return _md_table("Review flags", ["flag", "flag id", "where", "detail", "acknowledgement"],
                     [[_rule_cell(flag_rule(str(f.get("name"))), f.get("name")), f.get("id") or "",
                       f"{f.get('path')}" + (f":{f['line']}" if f.get("line") else ""), f.get("detail"), ack(f)]
                      for f in payload.get("flags", [])])


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
    from relconsole.engine.gate.rulehelp import help_uri
    return _md_table(f"Commit split ([what to do]({help_uri('commit_split')}))", ["commit", "path", "why"], rows)


def _md_checklist(payload: dict) -> list[str]:
    return _md_table("Failed checklist items", ["item", "title", "evidence"],
                     [[i.get("key"), i.get("title"), evidence_text(i.get("evidence"))]
                      for i in payload.get("checklist", []) if i.get("state") == "fail"])


def _md_leases(payload: dict) -> list[str]:
    return _md_table("Lease warnings", ["lease", "state", "why", "file"],
                     [[s.get("id"), s.get("state"), s.get("reason"), s.get("source")] for s in payload.get("leases", [])])


def _md_evidence(payload: dict) -> list[str]:
    from relconsole.engine.gate.findings import failures
    return _md_table("Missing evidence and tool failures (nothing was decided about the code)",
                     ["reason", "detail"], [[_rule_cell(f.rule, f.rule), f.message] for f in failures(payload)])


def _md_errors(payload: dict) -> list[str]:
    return _md_table("Bad input (exit 5)", ["file", "line", "error"],
                     [[e.get("path"), e.get("line") or "", e.get("message")] for e in payload.get("errors", [])])
