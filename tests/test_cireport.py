"""What CI systems read of a gate decision (engine/gate/cireport.py): SARIF 2.1.0 validated against
the SARIF schema (tests/schemas, from Microsoft's MIT-licensed @microsoft/jest-sarif) and the
rules GitHub code scanning documents for uploads, and Markdown that hostile text cannot break.

Payloads are built the way gate.finish builds them, with hostile paths, details and messages;
a real gate run's SARIF and summary are checked in tests/test_github_workflow.py.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import unquote, unquote_to_bytes

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from relconsole.engine.gate import cireport
from relconsole.engine.gate.pipeline import finish

SCHEMA = json.loads((Path(__file__).parent / "schemas" / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))
HOSTILE = ["src/a b#c?d%e.py", "src/ünï/çødé.py", "src/new\nline.py", "src/\x1b[31mred\x07.py",
           "src/<script>alert(1)</script>|x.py", "a:b/c.py", "src/@octocat #12 [x](https://evil.example).py",
           "src/`tick`*star*_under_.py"]
GITHUB_LIMITS = {"results": 25_000, "locations": 1_000}


def flag(path, name="golden_literal", line=3, ack=None, fid="f1"):
    return {"name": name, "commit": "c" * 40, "path": path, "line": line, "detail": f"detail of {path}",
            "id": fid, "acknowledged": ack}


def relation(rid, decision, reason, owns, row=3, differing=("a.b", "c|d<e>")):
    """A relation entry as pipeline._relation_json makes it: located on changed lines of each
    file it owns that its subject ran (``where``), with its statement, outputs and input."""
    return {"relation_id": rid, "decision": decision, "reason": reason, "row": row, "detail": "missed on every HEAD run",
            "outcome": "missed", "summary": "", "differing": list(differing), "replayed": True, "sheet": None,
            "owns": list(owns), "catalog": "oracle/catalog.yaml", "catalog_line": 18,
            "statement": "the total does not depend on the order of the rows",
            "outputs": {"source": '{"total":10}', "followup": '{"total":11}'},
            "input": {"seed": 7, "path": "oracle/seeds/rows.jsonl", "records": 3, "note": "shuffle 2"},
            "where": [{"path": p, "lines": [[n + 2, n + 4]], "by": "ran"} for n, p in enumerate(owns)]}


def payload(paths=HOSTILE, **extra):
    """A decision.json as gate.finish makes it, every kind of cause present, at ``paths``."""
    from relconsole.engine.decision import Decision
    merged = {"base": "main", "merge_base": "m" * 40, "head": "h" * 40, "oracle_from": "base", "today": "2026-12-02",
              "touched": ["r.miss", "r.hold", "r.freeze", "r.pass"], "shards": 2,
              "flags": [flag(p, fid=f"id{n}") for n, p in enumerate(paths)]
              + [flag(paths[0], name="bag_output_sorted", ack={"by": "reviewer@x", "reason": "sorted on purpose"},
                      fid="acked")],
              "gaps": list(paths),
              "split": [{"commit": "d" * 40, "path": p, "why": "mixes oracle/ and code"} for p in paths],
              "split_problem": "",
              "checklist": [{"key": "no_golden_literal", "title": "the patch adds no golden literal", "state": "fail",
                             "evidence": [f"tests/t.py:{n + 1} @ abc: golden {p}" for n, p in enumerate(paths)]},
                            {"key": "leases_fresh", "title": "leases fresh", "state": "pass", "evidence": []}],
              "leases": [{"id": "stocks", "source": "oracle/leases/stocks.yaml", "state": "expired",
                          "reason": "expired on 2026-11-22", "days_left": -10}],
              "relations": [relation("r.miss", "reject", "miss_not_on_base", paths, row=6),
                            relation("r.hold", "hold", "second_replay_required", [paths[0]], row=5),
                            relation("r.freeze", "freeze", "intermittent_on_base", [], row=8),
                            relation("r.pass", "pass", "held", [paths[0]], row=None, differing=())],
              "errors": [], **extra}
    verdicts = [Decision(r["decision"], r["reason"], r["row"], r["relation_id"]) for r in merged["relations"]]
    return finish(merged, verdicts, [Decision("abort", "incomplete_evidence", None, None, "no part for shard 2/2")], [])


def results(log):
    return log["runs"][0]["results"]


def locations(result):
    return result.get("locations", []) + result.get("relatedLocations", [])


def test_sarif_of_every_kind_of_cause_validates_against_the_sarif_schema():
    log = cireport.sarif(payload())
    jsonschema.Draft4Validator(SCHEMA).validate(log)
    assert log["version"] == "2.1.0" and "sarif" in log["$schema"]
    driver = log["runs"][0]["tool"]["driver"]
    assert driver["name"] == "relconsole" and driver["version"]
    rule_ids = [r["id"] for r in driver["rules"]]
    assert len(rule_ids) == len(set(rule_ids))
    for result in results(log):
        assert driver["rules"][result["ruleIndex"]]["id"] == result["ruleId"]
    for rule in driver["rules"]:
        assert rule["shortDescription"]["text"] and rule["help"]["text"] and rule["helpUri"].startswith("https://")


def test_bad_input_and_a_split_check_not_made_validate_too():
    log = cireport.sarif(payload(errors=[{"path": "oracle/catalog.yaml", "line": 7, "message": "bad\nyaml"},
                                         {"path": "oracle/x.json", "line": None, "message": "not JSON"}],
                                 split_problem="shallow clone: fetch-depth: 0"))
    jsonschema.Draft4Validator(SCHEMA).validate(log)
    by_rule = {}
    for result in results(log):
        by_rule.setdefault(result["ruleId"], []).append(result)
    assert [r["locations"][0]["physicalLocation"]["region"]["startLine"] for r in by_rule["bad_input"]] == [7, 1]
    assert by_rule["bad_input"][0]["level"] == "error"
    assert "split_unchecked" not in by_rule  # the machine's: a notification, not an alert in the code
    [invocation] = log["runs"][0]["invocations"]
    unchecked = [n for n in invocation["toolExecutionNotifications"] if n["descriptor"]["id"] == "split_unchecked"]
    assert "fetch-depth: 0" in unchecked[0]["message"]["text"] and invocation["executionSuccessful"] is False


def test_one_result_per_cause_at_its_place_with_the_level_of_its_decision():
    data = payload()
    by_rule = {}
    for result in results(cireport.sarif(data)):
        by_rule.setdefault(result["ruleId"], []).append(result)
    assert len(by_rule["golden_literal"]) == len(HOSTILE)
    assert len(by_rule["coverage_gap"]) == len(data["gaps"]) and len(by_rule["commit_split"]) == len(data["split"])
    assert {r["level"] for r in by_rule["golden_literal"]} == {"error"}
    acked = by_rule["bag_output_sorted"][0]
    assert acked["level"] == "note"
    assert acked["suppressions"][0]["kind"] == "external"
    assert "sorted on purpose" in acked["suppressions"][0]["justification"]
    # relations: reject error, hold warning, freeze note, pass not reported
    assert by_rule["miss_not_on_base"][0]["level"] == "error"
    assert by_rule["second_replay_required"][0]["level"] == "warning"
    assert by_rule["intermittent_on_base"][0]["level"] == "note"
    assert "held" not in by_rule
    miss = by_rule["miss_not_on_base"][0]
    assert len(miss["relatedLocations"]) == len(HOSTILE)  # the other files it ran and the catalog line
    catalog = miss["relatedLocations"][-1]["physicalLocation"]
    assert catalog["artifactLocation"]["uri"] == "oracle/catalog.yaml" and catalog["region"]["startLine"] == 18
    assert "r.miss" in miss["message"]["text"] and "c|d<e>" in miss["message"]["text"]
    assert miss["properties"]["relationId"] == "r.miss"
    # a relation owning no touched path is shown at its catalog line
    freeze = by_rule["intermittent_on_base"][0]["locations"][0]["physicalLocation"]
    assert freeze["artifactLocation"]["uri"] == "oracle/catalog.yaml"
    checklist = by_rule["checklist:no_golden_literal"]
    assert len(checklist) == 1 and len(locations(checklist[0])) == len(HOSTILE)
    assert "checklist:leases_fresh" not in by_rule
    assert "incomplete_evidence" not in by_rule  # a notification of the run: see test_tool_failures_...
    assert by_rule["lease_warning"][0]["level"] == "note"


def test_what_github_code_scanning_requires_of_an_upload():
    """docs.github.com "SARIF support for code scanning": ruleId, message.text, a physical
    location with a relative URI under a uriBaseId and startLine >= 1, partialFingerprints
    stable across runs, limits on results and locations per result."""
    first, again = cireport.sarif(payload()), cireport.sarif(payload())
    assert len(results(first)) <= GITHUB_LIMITS["results"]
    for result in results(first):
        assert result["ruleId"] and result["message"]["text"]
        assert len(result["message"]["text"]) <= cireport.MAX_MESSAGE
        assert result["locations"] and len(locations(result)) <= GITHUB_LIMITS["locations"]
        for loc in locations(result):
            artifact = loc["physicalLocation"]["artifactLocation"]
            assert artifact["uriBaseId"] == "%SRCROOT%" and not artifact["uri"].startswith("/")
            assert loc["physicalLocation"]["region"]["startLine"] >= 1
    assert [r["partialFingerprints"] for r in results(first)] == [r["partialFingerprints"] for r in results(again)]
    prints = [json.dumps(r["partialFingerprints"]) for r in results(first)]
    assert len(set(prints)) > len(prints) // 2  # distinct causes are told apart


def test_a_fingerprint_follows_a_flag_across_runs_whatever_its_line_or_detail():
    moved = payload()
    for f in moved["flags"]:
        f["line"], f["detail"] = f["line"] + 40, "reworded"
    before = {r["partialFingerprints"][cireport.FINGERPRINT_KEY] for r in results(cireport.sarif(payload()))
              if r["ruleId"] == "golden_literal"}
    after = {r["partialFingerprints"][cireport.FINGERPRINT_KEY] for r in results(cireport.sarif(moved))
             if r["ruleId"] == "golden_literal"}
    assert before == after


def test_long_untrusted_text_is_cut_and_kept_as_data():
    huge = "x" * 50_000 + "\x1b]0;title\x07"
    data = payload(paths=["src/a.py"])
    data["flags"][0]["detail"] = huge
    text = json.dumps(cireport.sarif(data))
    log = json.loads(text)
    jsonschema.Draft4Validator(SCHEMA).validate(log)
    flag_result = next(r for r in results(log) if r["ruleId"] == "golden_literal")
    assert len(flag_result["message"]["text"]) == cireport.MAX_MESSAGE
    assert "\x1b" not in text  # JSON escapes it


@given(st.text(min_size=1, max_size=40))
def test_a_path_becomes_a_relative_uri_reference_that_gives_it_back(path):
    uri = cireport.sarif_uri(path)
    assert re.fullmatch(r"[A-Za-z0-9\-._~!$&'()*+,;=@/%]*", uri)
    assert ":" not in uri.split("/")[0]  # no first segment that reads as a scheme
    assert unquote(uri, errors="surrogatepass") == path


def test_a_path_whose_bytes_are_not_utf8_names_those_bytes():
    path = b"src/caf\xe9 \xff.py".decode("utf-8", "surrogateescape")  # as git's reader gives it
    uri = cireport.sarif_uri(path)
    assert unquote_to_bytes(uri) == b"src/caf\xe9 \xff.py"
    jsonschema.Draft4Validator(SCHEMA).validate(cireport.sarif(payload(paths=[path, "\ud800x"])))


@settings(max_examples=25, deadline=None)
@given(st.lists(st.text(min_size=1, max_size=30), min_size=1, max_size=4))
def test_any_paths_give_schema_valid_sarif(paths):
    jsonschema.Draft4Validator(SCHEMA).validate(cireport.sarif(payload(paths=paths)))


# Markdown -----------------------------------------------------------------------------------

@given(st.text())
def test_an_escaped_cell_has_no_raw_pipe_newline_or_angle_bracket(text):
    cell = cireport.md_text(text)
    for raw in ("|", "\n", "\r", "<", ">"):
        assert raw not in cell
    assert not re.search(r"(?<!\\)[`*_\[\]]", cell)  # every emphasis, code or link mark is escaped
    assert not re.search(r"[@#](?!\u200b)", cell.replace("&#124;", ""))  # no @mention, no #reference


def rendered(markdown: str) -> str:
    return MarkdownIt("commonmark").enable("table").render(markdown)


TAGS = ("<a ", "<em>", "<strong>", "<code>", "<img", "<script", "<h1>", "<h2>", "<br", "<p>")


@settings(max_examples=40, deadline=None)
@given(st.text(min_size=1, max_size=40))
def test_hostile_text_renders_as_text_in_its_own_cell(text):
    html = rendered(cireport.summary_markdown(payload(paths=[text, "src/ok.py"])))
    tame = rendered(cireport.summary_markdown(payload(paths=["p", "src/ok.py"])))
    assert [html.count(tag) for tag in TAGS] == [tame.count(tag) for tag in TAGS]
    for table in re.findall(r"<table>(.*?)</table>", html, flags=re.S):
        width = len(re.findall(r"<th[ >]", table))
        assert all(row.count("<td") == width for row in re.findall(r"<tr>(.*?)</tr>", table.split("</thead>")[1],
                                                                     flags=re.S))


def test_the_summary_names_the_decision_the_row_and_every_cause():
    data = payload(paths=["src/<b>bold</b>.py", "src/@octocat.py"])
    markdown = cireport.summary_markdown(data)
    html = rendered(markdown)
    assert markdown.startswith("## relconsole gate: ABORT (exit 3)")
    assert "incomplete" in markdown  # the headline's reason
    for heading in ("Relations", "Review flags", "Coverage gaps", "Commit split", "Failed checklist items",
                    "Lease warnings", "Missing evidence"):
        assert f"### {heading}" in markdown
    assert "&lt;b&gt;bold&lt;/b&gt;" in html and "<b>" not in html
    assert "sorted on purpose" in markdown.replace("\\", "")
    assert "c&#124;d&lt;e&gt;" in markdown  # a disagreeing key, escaped
    assert "@octocat" not in markdown


@pytest.mark.parametrize("key, sections", [("flags", 1), ("gaps", 1), ("split", 1), ("leases", 1),
                                           ("relations", 2)])  # the relations and what missed
def test_a_section_with_nothing_to_say_is_left_out(key, sections):
    data = payload()
    data[key] = []
    assert cireport.summary_markdown(data).count("### ") == cireport.summary_markdown(payload()).count("### ") - sections


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(alphabet=st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF) | st.characters(),
                        min_size=1, max_size=12), min_size=1, max_size=3))
def test_a_file_name_that_is_not_unicode_reaches_sarif_as_valid_unicode(names):
    """git hands undecodable file-name bytes over as lone surrogates: every SARIF message is
    still valid UTF-8, with the name's readable part kept."""
    log = cireport.sarif(payload([f"src/{name}.py" for name in names]))
    text = json.dumps(log, ensure_ascii=False)
    text.encode("utf-8")  # raises on a lone surrogate
    assert all(r["message"]["text"] for r in results(log))


# Where a finding is shown, what it says, its help ----------------------------------------------

ROOT = Path(__file__).resolve().parents[1]


def by_rule_of(log) -> dict:
    out = {}
    for result in results(log):
        out.setdefault(result["ruleId"], []).append(result)
    return out


def test_a_miss_is_shown_on_the_changed_lines_its_subject_ran_with_its_statement_values_and_input():
    data = payload(paths=["src/a.py", "src/b.py"])
    entry = next(r for r in data["relations"] if r["relation_id"] == "r.miss")
    [miss] = by_rule_of(cireport.sarif(data))["miss_not_on_base"]
    where = miss["locations"][0]["physicalLocation"]
    first = entry["where"][0]
    assert where["artifactLocation"]["uri"] == first["path"]
    assert [where["region"]["startLine"], where["region"]["endLine"]] == first["lines"][0]
    text = miss["message"]["text"]
    for said in (entry["statement"], entry["outputs"]["source"], entry["outputs"]["followup"], entry["input"]["path"],
                 f"seed {entry['input']['seed']}"):
        assert said in text, said
    assert "§" not in text and "SPEC" not in text and "decision-table.md#row-6" in text


def test_a_shrunk_input_is_part_of_the_message_when_the_run_gives_one():
    data = payload(paths=["src/a.py"])
    entry = next(r for r in data["relations"] if r["relation_id"] == "r.miss")
    entry["input"]["shrunk"] = [{"species": "Adelie", "mass": -1}]
    [miss] = by_rule_of(cireport.sarif(data))["miss_not_on_base"]
    assert 'shrunk input: [{"species":"Adelie","mass":-1}]' in miss["message"]["text"]


def test_a_relation_not_located_in_the_patch_is_shown_at_its_catalog_line_not_at_line_1():
    data = payload(paths=["src/a.py", "src/b.py"])
    for entry in data["relations"]:
        entry["where"] = []
    for rule in ("miss_not_on_base", "second_replay_required"):
        [result] = by_rule_of(cireport.sarif(data))[rule]
        where = result["locations"][0]["physicalLocation"]
        assert (where["artifactLocation"]["uri"], where["region"]["startLine"]) == ("oracle/catalog.yaml", 18)
        assert all(loc["physicalLocation"]["artifactLocation"]["uri"] == "oracle/catalog.yaml"
                   for loc in locations(result))


def test_a_fingerprint_follows_a_relation_whatever_lines_it_is_shown_on():
    moved = payload(paths=["src/a.py", "src/b.py"])
    for entry in moved["relations"]:
        entry["where"] = [{"path": "src/c.py", "lines": [[40, 41]], "by": "owned"}]
    prints = [{r["ruleId"]: r["partialFingerprints"] for r in results(cireport.sarif(data))
               if r["ruleId"] == "miss_not_on_base"} for data in (payload(paths=["src/a.py", "src/b.py"]), moved)]
    assert prints[0] == prints[1]


def test_a_flag_carries_the_id_relconsole_ack_takes_in_sarif_and_the_summary():
    data = payload(paths=["src/a.py", "src/b.py"])
    flags = {f["id"]: f for f in data["flags"]}
    found = [r for r in results(cireport.sarif(data)) if r.get("properties", {}).get("flagId") in flags]
    assert {r["properties"]["flagId"] for r in found} == set(flags)
    for result in found:
        fid = result["properties"]["flagId"]
        if not flags[fid]["acknowledged"]:
            assert f"relconsole ack {fid} " in result["message"]["text"]
    summary = cireport.summary_markdown(data)
    rows = [line for line in summary.splitlines() if line.startswith("| ") and "golden" in line]
    for fid, flag in flags.items():
        if flag["name"] == "golden_literal":
            assert any(f"| {cireport.md_text(fid)} |" in row for row in rows), fid


def test_tool_failures_are_notifications_of_the_run_not_alerts_at_the_catalog():
    from relconsole.engine.errors import GitError
    from relconsole.engine.gate.pipeline import failure_payload
    log = cireport.sarif(failure_payload(GitError("fatal: bad revision 'no-such-base...HEAD'")))
    jsonschema.Draft4Validator(SCHEMA).validate(log)
    run = log["runs"][0]
    assert run["results"] == []
    [invocation] = run["invocations"]
    assert invocation["executionSuccessful"] is False and invocation["exitCode"] == 3
    [note] = invocation["toolExecutionNotifications"]
    assert note["level"] == "error" and "bad revision" in note["message"]["text"]
    descriptor = run["tool"]["driver"]["notifications"][note["descriptor"]["index"]]
    assert descriptor["id"] == note["descriptor"]["id"] == "gate_failed"
    assert descriptor["helpUri"].endswith("rules.md#gate_failed")


def test_a_run_with_nothing_the_machine_failed_at_says_it_ran():
    data = payload(paths=["src/a.py"])
    data["causes"] = [c for c in data["causes"] if c["reason"] != "incomplete_evidence"]
    [invocation] = cireport.sarif(data)["runs"][0]["invocations"]
    assert invocation["executionSuccessful"] is True and invocation["toolExecutionNotifications"] == []


def test_the_summary_links_the_row_and_the_rules_and_cites_no_spec():
    data = payload(paths=["src/a.py"])
    markdown = cireport.summary_markdown(data)
    html = rendered(markdown)
    assert "§" not in markdown and "SPEC" not in markdown
    assert 'href="https://' in html and "decision-table.md#row-6" in html and "rules.md#miss_not_on_base" in html
    assert "### Missing evidence" in markdown and "rules.md#incomplete_evidence" in markdown
    entry = next(r for r in data["relations"] if r["relation_id"] == "r.miss")
    [missed] = [line for line in markdown.splitlines() if line.startswith(f"| {cireport.md_text('r.miss')} |")
                and cireport.md_text(entry["statement"]) in line]
    for said in (entry["outputs"]["source"], entry["outputs"]["followup"], entry["input"]["path"]):
        assert cireport.md_text(said) in missed


# Rule help and docs/rules.md ---------------------------------------------------------------------

def test_every_rule_has_help_of_its_own_and_a_link_to_its_section():
    from relconsole.engine.gate import rulehelp
    from relconsole.engine.errors import GitError
    from relconsole.engine.gate.pipeline import failure_payload
    drivers = [cireport.sarif(payload())["runs"][0]["tool"]["driver"],
               cireport.sarif(failure_payload(GitError("x")))["runs"][0]["tool"]["driver"]]
    rules = list({r["id"]: r for d in drivers for r in d["rules"] + d["notifications"]}.values())
    assert {r["id"] for r in rules} == set(rulehelp.RULES)
    helps = [r["help"]["text"] for r in rules]
    assert len(set(helps)) == len(helps)  # no shared sentence
    for rule in rules:
        assert rule["helpUri"] == rulehelp.help_uri(rule["id"])
        assert rule["helpUri"].split("#")[1] == rule["id"].lower().replace(".", "-")
        assert rule["help"]["markdown"].startswith("**") and "What to do" in rule["help"]["markdown"]
        assert "§" not in rule["help"]["text"] + rule["help"]["markdown"]


def test_docs_rules_md_is_generated_from_the_rule_help():
    from relconsole.engine.gate import rulehelp
    written = (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
    assert written == rulehelp.rules_markdown(), \
        "docs/rules.md is stale: python -m relconsole.engine.gate.rulehelp > docs/rules.md"


def _checklist_keys() -> set[str]:
    source = (ROOT / "relconsole" / "engine" / "gate" / "checklist.py").read_text(encoding="utf-8")
    return set(re.findall(r'key, title = "([a-z_]+)"', source))


def test_every_rule_id_sarif_can_emit_has_a_section_in_docs_rules_md():
    from relconsole.engine.decision import ENVIRONMENT, FREEZE_FORBIDDEN, ORACLE_FAULT, ROWS
    from relconsole.engine.gate import rulehelp
    from relconsole.engine.gate.flags.patchflags import FLAG_NAMES
    anchors = set(re.findall(r'<a id="([^"]+)"></a>', (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")))
    keys = _checklist_keys()
    assert len(keys) >= 6
    reasons = {reason for _, reason, _ in ROWS.values()} | {r[1] for r in (ENVIRONMENT, FREEZE_FORBIDDEN, ORACLE_FAULT)}
    own = {rulehelp.flag_rule(n) for n in FLAG_NAMES} | {rulehelp.checklist_rule(k) for k in keys} \
        | {rulehelp.relation_rule(r) for r in reasons}
    assert own >= set(FLAG_NAMES) | {f"checklist:{k}" for k in keys} | reasons  # each has a rule of its own
    for rid in rulehelp.RULES:
        assert rulehelp.anchor(rid) in anchors, rid


@given(st.text(max_size=30))
def test_whatever_a_reason_flag_or_item_is_called_its_rule_has_help(name):
    from relconsole.engine.gate import rulehelp
    for rid in (rulehelp.relation_rule(name), rulehelp.flag_rule(name), rulehelp.checklist_rule(name)):
        assert rid in rulehelp.RULES


# GitHub annotations ----------------------------------------------------------------------------

def parse_command(line: str) -> tuple[str, dict, str]:
    """A workflow command as the Actions runner reads it (ActionCommand.TryParseV2): the
    command name, its properties and its message, unescaped."""
    assert line.startswith("::"), line
    end = line.index("::", 2)
    head, data = line[2:end], line[end + 2:]
    name, _, props = head.partition(" ")

    def unescape(text: str, prop: bool) -> str:
        if prop:
            text = text.replace("%3A", ":").replace("%2C", ",")
        return text.replace("%0D", "\r").replace("%0A", "\n").replace("%25", "%")
    properties = dict(p.split("=", 1) for p in props.split(",") if p)
    return name, {k: unescape(v, True) for k, v in properties.items()}, unescape(data, False)


def test_annotations_sit_where_sarif_puts_each_finding():
    from relconsole.engine.gate.annotations import annotations
    data = payload(paths=["src/a.py", "src/ünï b.py"])
    sarif_results = results(cireport.sarif(data))
    lines = annotations(data)
    assert len(lines) == len(sarif_results) + len(cireport.sarif(data)["runs"][0]["invocations"][0][
        "toolExecutionNotifications"])
    kinds = {"error": "error", "warning": "warning", "note": "notice"}
    for result, line in zip(sarif_results, lines):
        name, props, message = parse_command(line)
        where = result["locations"][0]["physicalLocation"]
        assert name == kinds[result["level"]]
        assert props["file"] == unquote(where["artifactLocation"]["uri"])
        assert int(props.get("line", 1)) == where["region"]["startLine"]
        assert result["ruleId"] in props["title"]


def test_hostile_text_makes_exactly_one_annotation_per_finding():
    from relconsole.engine.gate.annotations import annotations
    from relconsole.engine.literal import one_line
    hostile = "src/x\n::error file=a.py,line=1::forged%0A.py"
    data = payload(paths=[hostile, "src/ok,b:c.py"])
    for entry in data["relations"]:
        entry["statement"] = "holds\r\n::warning::forged too"
    lines = annotations(data)
    printed = "\n".join(lines)
    assert len(printed.splitlines()) == len(lines)
    assert all(line.startswith(("::error ", "::warning ", "::notice ")) for line in lines)
    files = [parse_command(line)[1].get("file") for line in lines]
    assert one_line(hostile) in files and "src/ok,b:c.py" in files
    for line in lines:
        _, props, message = parse_command(line)
        assert set(props) <= {"file", "line", "endLine", "title"} and "forged" not in props.get("title", "")
        assert "\n" not in message and "\r" not in message
        if props.get("file") == one_line(hostile):  # its own lines (a flag's 3, the miss's 2-4), not the forged 1
            assert props.get("line") in (None, "2", "3"), line


@settings(max_examples=60, deadline=None)
@given(st.text(min_size=1, max_size=40), st.text(max_size=40))
def test_any_path_or_detail_gives_one_parseable_line_per_finding(path, detail):
    from relconsole.engine.gate.annotations import annotations
    from relconsole.engine.literal import one_line
    data = payload(paths=[path])
    for flag_entry in data["flags"]:
        flag_entry["detail"] = detail
    lines = annotations(data)
    assert len("\n".join(lines).splitlines()) == len(lines)
    for line in lines:
        name, props, _ = parse_command(line)
        assert name in ("error", "warning", "notice")
        assert set(props) <= {"file", "line", "endLine", "title"}
        if "file" in props and props["file"] != "oracle/catalog.yaml" and not props["file"].startswith(
                ("tests/", "oracle/")):
            assert props["file"] == one_line(path)
