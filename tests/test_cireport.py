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
    return {"relation_id": rid, "decision": decision, "reason": reason, "row": row, "detail": "missed on every HEAD run",
            "outcome": "missed", "summary": "", "differing": list(differing), "replayed": True, "sheet": None,
            "owns": list(owns), "catalog": "oracle/catalog.yaml", "catalog_line": 18}


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
    assert "fetch-depth: 0" in by_rule["split_unchecked"][0]["message"]["text"]


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
    assert len(miss["relatedLocations"]) == len(HOSTILE)  # the other owned paths and the catalog line
    catalog = miss["relatedLocations"][-1]["physicalLocation"]
    assert catalog["artifactLocation"]["uri"] == "oracle/catalog.yaml" and catalog["region"]["startLine"] == 18
    assert "r.miss" in miss["message"]["text"] and "c|d<e>" in miss["message"]["text"]
    # a relation owning no touched path is shown at its catalog line
    freeze = by_rule["intermittent_on_base"][0]["locations"][0]["physicalLocation"]
    assert freeze["artifactLocation"]["uri"] == "oracle/catalog.yaml"
    checklist = by_rule["checklist:no_golden_literal"]
    assert len(checklist) == 1 and len(locations(checklist[0])) == len(HOSTILE)
    assert "checklist:leases_fresh" not in by_rule
    assert by_rule["incomplete_evidence"][0]["level"] == "error"
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


@pytest.mark.parametrize("key", ["flags", "gaps", "split", "leases", "relations"])
def test_a_section_with_nothing_to_say_is_left_out(key):
    data = payload()
    data[key] = []
    assert cireport.summary_markdown(data).count("### ") == cireport.summary_markdown(payload()).count("### ") - 1


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
