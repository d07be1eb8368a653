"""Quarantine validation (SPEC §10): candidate relations and drafted seed rows.

Each rule is broken on its own, starting from a candidate that passes every rule, and
the verdict must name the rule and the offending key. The catalog, lease corpora and
seeds are the sample project's real files; the demo repository check at the end runs the
whole review as a reviewer opens it.
"""

from __future__ import annotations

import copy
import csv
import datetime as dt
import json
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

import relconsole.cli.main as cli
from bench.gitrepo import hermetic_git
from relconsole.engine.oracle.candidatecheck import validate_candidate
from relconsole.engine.oracle.candidatefile import CANDIDATE_MAX_BYTES
from relconsole.engine.oracle.candidates import RULES, InputShape, input_shape
from relconsole.engine.oracle.seedrows import validate_seed_rows
from relconsole.engine.oracle.catalog import load_catalog
from relconsole.engine.demo import materialise
from relconsole.engine.errors import EXIT_PASS
from relconsole.engine.oracle.leases import parse_lease
from relconsole.engine.gate.review import load_review
from relconsole.engine.oracle.yamlload import MAX_FILE_BYTES

PROJECT = Path(__file__).resolve().parents[1]
SAMPLE = PROJECT / "sample_repo"
TODAY = dt.date(2031, 5, 17)
CATALOG_TEXT = (SAMPLE / "oracle" / "catalog.yaml").read_text(encoding="utf-8")
CATALOG = load_catalog(CATALOG_TEXT, "oracle/catalog.yaml")
SEEDS_FILE = "oracle/seeds/rollout.jsonl"
EXISTING_SEEDS = [json.loads(line) for line in (SAMPLE / SEEDS_FILE).read_text().splitlines() if line.strip()]
ROLLOUT_SCHEMA = yaml.safe_load(CATALOG_TEXT)["relations"][3]["input"]["schema"]
QUARANTINE_SEEDS = "oracle/quarantine/rollout.monotonic.seeds.jsonl"

# transform -> catalog kind, as §10 lists it
KIND_OF = {"permute": "permutation", "replay-ingest": "replay_ingest", "split-merge": "split_merge",
           "monotonic": "monotonic", "roundtrip": "roundtrip"}


def _headers() -> dict[str, list[str]]:
    out = {}
    for manifest in sorted((SAMPLE / "oracle" / "leases").glob("*.yaml")):
        lease = parse_lease(manifest.read_text(), manifest.name)
        with open(SAMPLE / lease.path, newline="", encoding="utf-8") as handle:
            out[lease.id] = next(csv.reader(handle))
    return out


HEADERS = _headers()


def input_fields(inp: dict) -> InputShape:
    """The candidate input's shape, as the review reads it from the sample's oracle: the
    corpus header, the seeds file's rows, a catalog relation's schema for those seeds."""
    seeds = inp.get("seeds")
    rows = EXISTING_SEEDS if seeds == SEEDS_FILE else None
    header = HEADERS.get(inp["lease"]) if inp.get("lease") else None
    schema = next((r.input.get("schema") for r in CATALOG.relations.values()
                   if seeds and r.seeds_path == seeds and r.input.get("schema")), None)
    return input_shape(inp, rows, header, schema)


BASE = {
    "id": "penguins.mass_permutation",
    "transform": "permute",
    "compare": "canon",
    "must_not": "assert a literal body_mass_g total for one species in a test",
    "subject": "aggregator:summarize",
    "input": {"lease": "penguins"},
    "params": {"shuffles": 4, "seed": 11},
    "statement": "Shuffling the penguin rows leaves each species' body_mass_g sum unchanged.",
    "drafted_by": "llm -m local-coder-7b",
    "drafted_at": "2031-05-15T14:12:05Z",
    "source": "ticket DATA-142",
}


def judge(candidate: dict | str, path: str = "oracle/quarantine/c.yaml", fields=None):
    text = candidate if isinstance(candidate, str) else yaml.safe_dump(candidate, sort_keys=False)
    return validate_candidate(path, text, CATALOG, fields or input_fields)


def failed(result) -> dict[str, str]:
    """Rules that ran and failed, with their reasons ("not checked" rules left out)."""
    return {v.rule: v.reason for v in result.verdicts if not v.ok and v.checked}


def not_checked(result) -> set[str]:
    return {v.rule for v in result.verdicts if not v.checked}


def variant(**changes) -> dict:
    out = copy.deepcopy(BASE)
    for key, value in changes.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = value
    return out


def params(**extra) -> dict:
    """The base candidate's params plus ``extra``."""
    return {**BASE["params"], **extra}


BASE_TEXT = yaml.safe_dump(BASE, sort_keys=False)
MONOTONIC = {"transform": "monotonic", "subject": "rollout:admitted", "input": {"seeds": SEEDS_FILE},
             "params": {"field": "percent", "step": 5, "max": 100},
             "statement": "Raising percent never drops an admitted user."}


def test_the_base_candidate_passes_every_rule():
    result = judge(BASE)
    assert failed(result) == {} and not_checked(result) == set()
    assert result.valid
    assert [v.rule for v in result.verdicts] == list(RULES)
    assert result.row["kind"] == KIND_OF[BASE["transform"]]
    assert result.row["id"] == BASE["id"]
    # provenance and must_not stay in quarantine: the catalog row is catalog form only
    assert not {"must_not", "drafted_by", "drafted_at", "source", "transform"} & set(result.row)
    reloaded = load_catalog(yaml.safe_dump({"relations": [result.row]}), "check.yaml")
    assert reloaded.get(BASE["id"]).kind == KIND_OF[BASE["transform"]]


@pytest.mark.parametrize("transform,extra", [
    ("permute", {}),
    ("replay-ingest", {"subject": "store:make_store", "input": {"lease": "weather"}, "params": {},
                       "statement": "Ingesting twice keeps one row per date."}),
    ("split-merge", {"merge": "oracle.adapters:merge_summaries", "params": {"splits": 2}}),
    ("monotonic", {k: v for k, v in MONOTONIC.items() if k != "transform"}),
    ("roundtrip", {"subject": "codec:dumps", "inverse": "codec:loads", "input": {"lease": "stocks"},
                   "params": {}, "compare": "exact",
                   "statement": "Decoding the encoding gives back every symbol, date and price."}),
])
def test_each_transform_becomes_its_catalog_kind(transform, extra):
    result = judge(variant(transform=transform, **extra))
    assert failed(result) == {}
    assert result.row["kind"] == KIND_OF[transform]
    load_catalog(yaml.safe_dump({"relations": [result.row]}), "check.yaml")  # accepted row loads


# --- one breaking example per rule: a rule removed from the validator fails here ----------------

BOMB = "\n".join(["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"] + [
    f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 9)]) + "\n"

BREAKS = {  # rule -> a base candidate with one thing changed that breaks exactly that rule
    "size_limit": BASE_TEXT + "#" * CANDIDATE_MAX_BYTES + "\n",
    "parses": BASE_TEXT + "statement: again\n",  # a duplicate key
    "single_document": BASE_TEXT + "---\n" + BASE_TEXT,
    "no_aliases": BASE_TEXT.replace("drafted_by:", "drafted_by: &who").replace(
        "source: ticket DATA-142", "source: *who"),
    "fields": variant(notes="drafted in a hurry"),
    "no_answers": variant(expected_sum=558800.0),
    "no_skip": variant(statement="Shuffling keeps each species' body_mass_g sum; xfail on CI."),
    "no_freeze_fields": variant(freeze={"allowed": True, "max_days": 30}),
    "input_schema": variant(input={"lease": "penguins", "schema": {"body_mass_g": "str", "wingspan_cm": "str"}}),
    "references_input": variant(statement="Shuffling the rows gives the same thing back."),
    "not_always_true": variant(params=params(shuffles=0)),
    "safe_id": variant(id="penguins..mass_permutation"),
    "unique_id": variant(id="penguins.order_invariant"),
    "known_transform": variant(transform="other"),
    "catalog_form": variant(compare="approximately"),
}
LATER_UNCHECKED = {"size_limit": set(RULES[1:]), "parses": set(RULES[4:]),
                   "single_document": set(RULES[4:]), "no_aliases": set(RULES[4:]),
                   "known_transform": {"catalog_form"}}


def test_every_rule_has_a_breaking_example():
    assert set(BREAKS) == set(RULES)
    assert len(set(RULES)) == len(RULES)
    assert "unique_id" in RULES and CATALOG.get(BREAKS["unique_id"]["id"]) is not None


@pytest.mark.parametrize("rule", RULES)
def test_each_rule_fails_alone_on_its_breaking_example(rule):
    result = judge(BREAKS[rule])
    assert set(failed(result)) == {rule}, failed(result)
    assert not_checked(result) == LATER_UNCHECKED.get(rule, set())
    assert [v.rule for v in result.verdicts] == list(RULES)
    assert not result.valid and result.row is None
    assert result.reasons == [failed(result)[rule]]


@settings(max_examples=200)
@given(st.one_of(st.text(max_size=300), st.sampled_from([BASE_TEXT, BOMB]).flatmap(
    lambda text: st.tuples(st.just(text), st.integers(0, len(text)), st.text(max_size=8)).map(
        lambda t: t[0][:t[1]] + t[2] + t[0][t[1]:]))))
def test_any_text_gets_one_verdict_per_rule_in_order(text):
    """Never raises; one verdict per rule in RULES order; valid only with every rule checked."""
    result = judge(text)
    assert [v.rule for v in result.verdicts] == list(RULES)
    assert result.valid == (failed(result) == {} and not_checked(result) == set())
    assert (result.row is not None) == result.valid
    if not result.valid:
        assert result.reasons and all(isinstance(r, str) and r for r in result.reasons)
    for verdict in result.verdicts:
        assert verdict.checked or not verdict.ok


@settings(max_examples=80)
@given(order=st.permutations(sorted(BASE)), style=st.sampled_from(["block", "flow", "json"]),
       indent=st.integers(2, 8), width=st.integers(40, 200))
def test_a_reformatted_valid_candidate_stays_valid(order, style, indent, width):
    """Key order, flow or block style, indentation and line width change nothing."""
    reordered = {key: BASE[key] for key in order}
    if style == "json":
        text = json.dumps(reordered, indent=indent)
    else:
        text = yaml.safe_dump(reordered, sort_keys=False, default_flow_style=style == "flow",
                              indent=indent, width=width)
    result = judge(text)
    assert failed(result) == {}, failed(result)
    assert result.row == judge(BASE).row


# --- the file: size, syntax, one document, no aliases ---------------------------------------------

def _padded(total_bytes: int, filler: str = "#") -> str:
    """The base candidate followed by a comment line, ``total_bytes`` long in UTF-8."""
    room = total_bytes - len(BASE_TEXT.encode()) - len("#\n")
    pad = filler * (room // len(filler.encode()))
    return BASE_TEXT + "#" + pad + "#" * (room - len(pad.encode())) + "\n"


def test_the_size_limit_is_exact_in_bytes_and_below_the_general_cap():
    assert CANDIDATE_MAX_BYTES < MAX_FILE_BYTES
    at_limit = _padded(CANDIDATE_MAX_BYTES)
    assert len(at_limit.encode()) == CANDIDATE_MAX_BYTES
    assert judge(at_limit).valid
    over = _padded(CANDIDATE_MAX_BYTES + 1)
    assert set(failed(judge(over))) == {"size_limit"}
    # bytes, not characters: two-byte letters push a file over that has fewer characters
    wide = _padded(CANDIDATE_MAX_BYTES + 2, filler="é")
    assert len(wide) <= CANDIDATE_MAX_BYTES < len(wide.encode())
    assert set(failed(judge(wide))) == {"size_limit"}
    assert str(CANDIDATE_MAX_BYTES) in failed(judge(wide))["size_limit"]


@pytest.mark.parametrize("text,where", [
    ("id: [unclosed\ntransform: permute\n", None),
    ("id: a\nid: b\n", "c.yaml:2"),
    ("id: a\nexpires: 2031-02-30\n", "c.yaml:2"),
    ("id: !!python/object/apply:os.system ['true']\n", None),
    ("id: a\n<<: {transform: permute}\n", "c.yaml:2"),
    ("id: a\nparams: " + "[" * 40 + "]" * 40 + "\n", "c.yaml:2"),
    ("id: a\nparams: " + "[" * 998 + "]" * 998 + "\n", "c.yaml:2"),
    ("id: a\nsource: caf" + b"\xe9".decode("utf-8", "surrogateescape") + "\n", "c.yaml:2"),
    ("id: a\nsource: a\x00b\n", "c.yaml:2"),
], ids=["syntax", "duplicate-key", "impossible-date", "python-tag", "merge-key", "deep", "deeper",
        "not-utf8", "nul"])
def test_text_that_does_not_load_fails_parses(text, where):
    result = judge(text)
    assert set(failed(result)) == {"parses"}
    assert not_checked(result) >= set(RULES[4:])
    if where:
        assert where in failed(result)["parses"]


def test_a_syntax_error_names_its_line():
    result = judge("id: ok\ntransform: permute\nstatement: [unclosed\n")
    reason = failed(result)["parses"]
    assert "c.yaml:3" in reason or "c.yaml:4" in reason


@pytest.mark.parametrize("text", [
    "---\n" + BASE_TEXT,
    "---\n" + BASE_TEXT + "...\n",
    "%YAML 1.1\n---\n" + BASE_TEXT,
])
def test_one_marked_document_is_one_document(text):
    assert judge(text).valid


@pytest.mark.parametrize("text", [
    BASE_TEXT + "---\n" + BASE_TEXT,
    BASE_TEXT + "---\n",
    "---\n" + BASE_TEXT + "...\n---\nid: x\n",
], ids=["two-candidates", "empty-second", "explicit-markers"])
def test_several_documents_fail_single_document(text):
    result = judge(text)
    assert set(failed(result)) == {"single_document"}
    assert result.verdict("parses").ok and result.verdict("no_aliases").ok
    line = len(BASE_TEXT.splitlines()) + 1
    if text.startswith(BASE_TEXT):
        assert f"c.yaml:{line}" in failed(result)["single_document"]


def test_a_syntax_error_in_a_second_document_is_a_syntax_error():
    result = judge(BASE_TEXT + "---\nid: [unclosed\n")
    assert set(failed(result)) == {"parses"}


@pytest.mark.parametrize("text", [
    BOMB,
    BASE_TEXT.replace("drafted_by:", "drafted_by: &who").replace("source: ticket DATA-142", "source: *who"),
    BASE_TEXT.replace("params:", "params: &p").replace("statement:", "checks: *p\nstatement:"),
    BASE_TEXT.replace("source: ticket DATA-142", "source: *undefined"),
], ids=["billion-laughs", "one-harmless-alias", "alias-under-new-key", "undefined-alias"])
def test_any_alias_fails_no_aliases(text):
    """A candidate never needs an alias: each one is refused, not only those that expand hugely."""
    result = judge(text)
    assert set(failed(result)) == {"no_aliases"}
    assert "alias" in failed(result)["no_aliases"]
    assert not_checked(result) == set(RULES[4:])


def test_an_anchor_without_an_alias_changes_nothing():
    assert judge(BASE_TEXT.replace("drafted_by:", "drafted_by: &who")).valid


def test_a_rule_that_could_not_run_is_listed_as_not_checked():
    result = judge("id: [unclosed\n")
    assert [v.rule for v in result.verdicts] == list(RULES)
    assert result.verdict("size_limit").ok
    assert all("parses" in v.reason for v in result.verdicts if not v.checked)
    assert result.reasons == [failed(result)["parses"]]  # not-checked rules are no reasons


# --- fields -----------------------------------------------------------------------------------

@pytest.mark.parametrize("changes,offending", [
    ({"notes": "x"}, "notes"),
    ({"drafted_by": None, "source": None}, "drafted_by"),
    ({"drafted_by": ["llm", "me"]}, "drafted_by"),
    ({"must_not": ""}, "must_not"),
    ({"source": True}, "source"),
])
def test_unknown_missing_or_mistyped_fields_fail_fields(changes, offending):
    result = judge(variant(**changes))
    assert set(failed(result)) == {"fields"}
    assert offending in failed(result)["fields"]


@pytest.mark.parametrize("text", ["- a list\n- not a mapping\n", "just a scalar\n", ""])
def test_a_candidate_that_is_not_a_mapping_fails_fields(text):
    result = judge(text)
    assert set(failed(result)) == {"fields"}
    assert not_checked(result) == set(RULES[5:])


def test_must_not_may_be_a_list_and_drafted_at_a_timestamp():
    text = yaml.safe_dump(variant(must_not=["assert a total", "count rows"], drafted_at=None), sort_keys=False)
    assert judge(text + "drafted_at: 2031-05-15T14:12:05Z\n").valid


# --- no expected values or numeric answers ------------------------------------------------

@pytest.mark.parametrize("changes,offending", [
    ({"params": params(checks=[{"species": "Adelie", "expected": 558800.0}])}, "expected"),
    ({"params": params(order_free=True, cases=[1, {"answer": 2}])}, "answer"),
    ({"input": {"lease": "penguins", "result": {"Adelie": 1}}}, "result"),
    ({"input": {"lease": "penguins", "rows": [{"species": "Adelie"}], "expected_total": 9}}, "expected_total"),
    ({"params": params(output_total="558800.0")}, "output_total"),
    ({"statement": ["Shuffling keeps body_mass_g sums.", {"expected": 3}]}, "expected"),
    ({"expected_sum": 558800.0}, "expected_sum"),
], ids=["nested-in-list", "list-item-map", "input-map", "input-beside-rows", "text-value", "statement-list",
        "top-level"])
def test_answers_anywhere_in_the_body_are_rejected(changes, offending):
    result = judge(variant(**changes))
    assert offending in failed(result)["no_answers"]
    assert not result.valid and result.row is None


@pytest.mark.parametrize("key", ["Expected", "EXPECTED", " expected ", "expected\t", "ExpectedTotal",
                                 "totalExpected", "expected-total", "expected.total", "expectedtotal",
                                 "totalexpected", "results", "actualOutputs", "golden_total",
                                 "\u0435xpected", "ex\u200bpected", "\uff45\uff58\uff50\uff45\uff43\uff54\uff45\uff44",
                                 "\u00e9xpected", "ground truth"])
def test_answer_keys_in_any_spelling_are_rejected(key):
    result = judge(variant(params=params(checks=[{key: "x"}])))
    assert "no_answers" in failed(result), key


def test_a_smuggled_top_level_answer_is_reported_by_no_answers_alone():
    result = judge(variant(expected_sum=558800.0))
    assert set(failed(result)) == {"no_answers"}


ANSWER_WORDS = ["expected", "result", "output", "answer"]


@st.composite
def smuggled(draw):
    """A params or input mapping of the base candidate with an answer-like key at some depth."""
    word = draw(st.sampled_from(ANSWER_WORDS))
    word = "".join(draw(st.sampled_from([c.lower(), c.upper()])) for c in word)
    affix = draw(st.sampled_from(["", "total", "sum", "value"]))
    sep = draw(st.sampled_from(["_", "-", " ", "."]))
    key = draw(st.sampled_from([word, f"{word}{sep}{affix}" if affix else word, f"{affix}{sep}{word}" if affix else word]))
    key = draw(st.sampled_from(["", " "])) + key + draw(st.sampled_from(["", " "]))
    value: object = {key: draw(st.one_of(st.integers(), st.text(max_size=5), st.none()))}
    for _ in range(draw(st.integers(0, 4))):
        value = draw(st.sampled_from([lambda v: [v], lambda v: {"cases": v}, lambda v: ["x", v]]))(value)
    where = draw(st.sampled_from(["params", "input"]))
    return where, {**BASE[where], "nested": value}


@settings(max_examples=150)
@given(smuggled())
def test_an_answer_key_at_any_depth_of_params_or_input_is_rejected(case):
    where, mapping = case
    assert "no_answers" in failed(judge(variant(**{where: mapping})))


@pytest.mark.parametrize("changes,offending", [
    ({"params": params(mass_total=558800.5)}, "mass_total"),
    ({"params": params(totals=[152, 68, 124])}, "totals"),
    ({"params": params(adelie={"count": 152})}, "adelie"),
    ({"params": {"shuffles": [152, 68, 124], "seed": 11}}, "shuffles"),
    ({"params": {"shuffles": 4, "seed": {"Adelie": 152}}}, "seed"),
    ({"params": params(mass="5588e2")}, "mass"),
    ({"params": params(**{"558800": "Adelie"})}, "558800"),
    ({"input": {"lease": "penguins", "rows": [{"body_mass_g": 3750}]}}, "input.rows"),
    ({"source": 558800.0}, "source"),
    ({"statement": ["Shuffling keeps body_mass_g sums.", 558800]}, "statement"),
], ids=["unknown-param", "list", "nested-map", "list-under-shuffles", "map-under-seed", "numeric-string",
        "numeric-key", "input-rows", "source", "statement-list"])
def test_a_number_where_no_kind_takes_one_is_an_answer(changes, offending):
    result = judge(variant(**changes))
    assert offending in failed(result).get("no_answers", ""), failed(result)


def test_the_numbers_a_kind_takes_are_not_answers():
    assert failed(judge(variant(params={"shuffles": 40, "seed": 123456}))) == {}
    assert failed(judge(variant(params={"shuffles": 6, "scale": 16}))) == {}  # a size, not a total
    assert failed(judge(variant(transform="split-merge", merge="oracle.adapters:merge_summaries",
                                params={"splits": [0.25, 0.5]}))) == {}
    seen = sorted({row["percent"] for row in EXISTING_SEEDS})  # choices every seed row fits
    schema = {"percent": {"type": "int", "min": 0, "max": 100, "choices": seen},
              "salt": "str", "population": {"type": "int", "min": 1, "max": 5000}}
    monotonic = variant(**dict(MONOTONIC, input={"seeds": SEEDS_FILE, "schema": schema}))
    assert failed(judge(monotonic)) == {}


def test_answer_words_in_must_not_are_allowed():
    result = judge(variant(must_not="assert the expected result 558800.0 as the answer"))
    assert failed(result) == {}


# --- no skip or xfail text; no freeze fields --------------------------------------------------

@pytest.mark.parametrize("changes", [
    {"statement": "Shuffling keeps body_mass_g sums (xfail on CI runners)."},
    {"statement": "Shuffling keeps body_mass_g sums; @pytest.mark.skipif(slow) on big corpora."},
    {"statement": "Shuffling keeps body_mass_g sums; @skip until fixed."},
    {"statement": "Shuffling keeps body_mass_g sums, else pytest.xfail(reason)."},
    {"statement": "Shuffling keeps body_mass_g sums; skip_if slow."},
    {"statement": "Shuffling keeps body_mass_g sums; self.skipTest('big') otherwise."},
    {"statement": "Shuffling keeps body_mass_g sums; raise unittest.SkipTest on CI."},
    {"statement": "Shuffling keeps body_mass_g sums; pytest.importorskip('numpy')."},
    {"statement": "Shuffling keeps body_mass_g sums; XFail when flaky."},
    {"statement": "Shuffling keeps body_mass_g sums; \u0455kip on CI."},
    {"statement": "Shuffling keeps body_mass_g sums;\x00skip\non CI."},
    {"source": "pytest.mark.skip until DATA-142 lands"},
    {"must_not": "mark the relation xfail instead of fixing it"},
    {"params": params(skip=True)},
    {"params": params(notes=["fine", ["XFAIL this"]])},
    {"input": {"lease": "penguins", "mode": "skip"}},
], ids=lambda c: repr(c)[:40])
def test_skip_or_xfail_text_is_rejected(changes):
    assert "no_skip" in failed(judge(variant(**changes)))


@pytest.mark.parametrize("word", ["skipping", "Skipping", "skipper", "skipjack", "SKIPPED", "unskippable"])
def test_words_that_merely_contain_skip_are_not_skip_marks(word):
    result = judge(variant(statement=f"Shuffling rows of {word} penguins keeps body_mass_g sums."))
    assert failed(result) == {}


SKIP_MARKS = ["skip", "@skip", "pytest.mark.skip", "mark.skipif(x)", "xfail", "xfail(", "pytest.xfail",
              "skipIf", "skip_if", "skipUnless", "SkipTest", "importorskip"]


@settings(max_examples=120)
@given(mark=st.sampled_from(SKIP_MARKS), as_key=st.booleans(), depth=st.integers(0, 3),
       where=st.sampled_from(["params", "input", "statement", "source"]))
def test_a_skip_mark_anywhere_is_rejected(mark, as_key, depth, where):
    item: object = {mark: 1} if as_key else mark
    for _ in range(depth):
        item = [item]
    if where in ("params", "input"):
        changes = {where: {**BASE[where], "extra": item}}
    else:
        changes = {where: [BASE[where], item] if depth else f"{BASE[where]} {mark}"}
    assert "no_skip" in failed(judge(variant(**changes)))


@pytest.mark.parametrize("changes,offending", [
    ({"freeze": {"allowed": True, "max_days": 30}}, "freeze"),
    ({"Freeze": {"allowed": True}}, "Freeze"),
    ({"expires": "2031-06-01"}, "expires"),
    ({"params": params(reruns=3)}, "reruns"),
    ({"params": params(policy={"pass_needed": 2})}, "pass_needed"),
    ({"params": params(policy=[{"passNeeded": 2}])}, "passNeeded"),
    ({"params": params(policy=[{"min-reruns": 2}])}, "min-reruns"),
    ({"input": {"lease": "penguins", "freeze_until": "2031-06-01"}}, "freeze_until"),
    ({"signature": "sha256:" + "0" * 64}, "signature"),
    ({" lease id ": "penguins"}, "lease id"),
])
def test_freeze_fields_are_rejected(changes, offending):
    result = judge(variant(**changes))
    assert offending in failed(result).get("no_freeze_fields", "")


def test_a_top_level_freeze_field_is_reported_by_no_freeze_fields_alone():
    assert set(failed(judge(variant(Freeze={"allowed": True})))) == {"no_freeze_fields"}


def test_an_input_schema_field_may_be_named_like_a_freeze_key():
    """A corpus column named ``expires`` is data, not a freeze."""
    schema = {"species": "str", "body_mass_g": "str", "expires": "str"}
    result = judge(variant(input={"lease": "penguins", "schema": schema}))
    assert "no_freeze_fields" not in failed(result)


# --- vacuous and always-true predicates --------------------------------------------------------

def test_a_statement_that_names_no_input_field_is_vacuous():
    result = judge(variant(statement="Shuffling the rows gives the same thing back."))
    assert "vacuous" in failed(result)["references_input"]


@pytest.mark.parametrize("statement", [
    "Shuffling keeps the body_mass_grams and speciesism intact.",
    "Shuffling keeps every subspecies' xbody_mass_g sum.",
    "Shuffling keeps the sums of the penguin rows.",
])
def test_a_field_must_be_named_as_a_whole_word(statement):
    assert set(failed(judge(variant(statement=statement)))) == {"references_input"}


def test_a_field_named_only_outside_the_statement_does_not_count():
    result = judge(variant(statement="Shuffling the rows changes nothing.",
                           must_not="assert a body_mass_g total", source="ticket about species"))
    assert set(failed(result)) == {"references_input"}


def test_a_field_named_only_in_params_field_counts():
    result = judge(variant(**dict(MONOTONIC, statement="Raising the knob never drops anyone.")))
    assert "references_input" not in failed(result)


def test_unknown_input_fields_fail_closed():
    result = judge(variant(input={"lease": "no-such-lease"}))
    assert "references_input" in failed(result)


@pytest.mark.parametrize("answer", [[], ["", "  "], None])
def test_empty_field_names_are_no_fields(answer):
    """A header of empty names (a trailing comma) must not make every statement a reference."""
    result = judge(BASE, fields=lambda _inp: answer)
    assert "cannot tell" in failed(result)["references_input"]


def test_an_unreadable_corpus_fails_closed_without_raising():
    def broken(_inp):
        raise UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte")
    assert "references_input" in failed(judge(BASE, fields=broken))


def _tolerance(quantum_text: str, compare: str = "tolerance") -> str:
    text = yaml.safe_dump(variant(compare=compare), sort_keys=False)
    return text + f"quantum: {quantum_text}\n"


@pytest.mark.parametrize("compare", ["tolerance", "canon"])
@pytest.mark.parametrize("quantum_text", ["1.0e+6", "1e6", "1E9", "1000000", "1.0e+300"])
def test_a_quantum_that_admits_anything_is_always_true(quantum_text, compare):
    result = judge(_tolerance(quantum_text, compare))
    assert set(failed(result)) == {"not_always_true"}, failed(result)


@pytest.mark.parametrize("quantum_text", [".inf", "1e400"])
def test_an_infinite_quantum_is_always_true_and_no_catalog_row(quantum_text):
    result = judge(_tolerance(quantum_text))
    assert set(failed(result)) == {"not_always_true", "catalog_form"}


@pytest.mark.parametrize("quantum_text", [".nan", "0", "-1.0e-6", "-.inf"])
def test_a_nan_zero_or_negative_quantum_is_invalid_not_always_true(quantum_text):
    """nan and negative tolerances admit nothing, zero is exact: invalid rows, not vacuous ones."""
    result = judge(_tolerance(quantum_text))
    assert set(failed(result)) == {"catalog_form"}


@settings(max_examples=150)
@given(mantissa=st.integers(1, 9), exponent=st.integers(-12, 12))
def test_tolerance_verdict_does_not_depend_on_how_yaml_reads_the_number(mantissa, exponent):
    """YAML 1.1 reads ``5e3`` as a string and ``5.0e+3`` as a float: same quantum, same verdict."""
    as_string = judge(_tolerance(f"{mantissa}e{exponent}"))
    as_float = judge(_tolerance(f"{mantissa}.0e{exponent:+d}"))
    assert yaml.safe_load(f"q: {mantissa}e{exponent}")["q"] == f"{mantissa}e{exponent}"  # the trap
    assert failed(as_string).keys() == failed(as_float).keys()
    assert as_string.valid == as_float.valid


@settings(max_examples=100)
@given(small=st.floats(1e-12, 1e12), factor=st.floats(1, 1e6))
def test_wider_tolerance_is_never_more_acceptable(small, factor):
    narrow = judge(_tolerance(repr(small)))
    wide = judge(_tolerance(repr(small * factor)))
    if not narrow.valid:
        assert not wide.valid


@pytest.mark.parametrize("changes", [
    {"params": params(shuffles=0)},
    {"params": params(shuffles=-3)},
    {"transform": "split-merge", "params": {"splits": 0}},
    {"transform": "split-merge", "params": {"splits": [0, 1, 1.5]}},
    {"subject": "builtins:sorted"},
    {"subject": "copy:deepcopy"},
    {"subject": "json.decoder:JSONDecoder.decode"},
    dict(MONOTONIC, params={"field": "body_mass_g", "step": 5}),
    dict(MONOTONIC, params={"field": "percent", "step": 0}),
    dict(MONOTONIC, params={"field": "percent", "step": -5}),
    dict(MONOTONIC, params={"step": 5}),
    dict(MONOTONIC, input={"seeds": SEEDS_FILE, "schema": {"percent": {"type": "int", "min": 0, "max": 100},
                                                           "salt": "str", "population": "int"}},
         params={"field": "percent", "step": 5, "max": 0}),
], ids=["no-shuffle", "negative-shuffles", "no-split", "splits-at-the-ends", "builtin-subject",
        "stdlib-subject", "stdlib-dotted", "monotonic-field-not-in-input", "step-zero", "step-negative",
        "monotonic-no-field", "max-at-the-minimum"])
def test_a_comparison_that_cannot_fail_is_always_true(changes):
    result = judge(variant(**changes))
    assert set(failed(result)) == {"not_always_true"}, failed(result)
    assert failed(result)["not_always_true"].startswith("always true")


@pytest.mark.parametrize("changes,quantum_text", [
    ({"compare": "tolerance"}, None),
    ({"compare": "tolerance"}, ".nan"),
    ({"compare": "tolerance"}, "0"),
    ({"compare": "canon"}, "-1.0e-6"),
], ids=["tolerance-without-quantum", "nan", "zero", "negative"])
def test_a_candidate_is_valid_only_if_its_row_would_load(changes, quantum_text):
    text = yaml.safe_dump(variant(**changes), sort_keys=False)
    text += f"quantum: {quantum_text}\n" if quantum_text else ""
    result = judge(text)
    assert not result.valid
    assert "catalog_form" in failed(result)


@pytest.mark.parametrize("params_,offending", [
    ({"shuffles": "four", "seed": 11}, "shuffles"),
    ({"shuffles": True, "seed": 11}, "shuffles"),
    ({"shuffles": 4, "seed": 11, "order_free": "maybe"}, "order_free"),
    ({"shuffles": 4, "seed": "eleven"}, "seed"),
])
def test_params_of_the_wrong_type_fail_catalog_form(params_, offending):
    result = judge(variant(params=params_))
    assert set(failed(result)) == {"catalog_form"}
    assert offending in failed(result)["catalog_form"]


def test_roundtrip_without_an_inverse_is_not_valid():
    result = judge(variant(transform="roundtrip", subject="codec:dumps", input={"lease": "stocks"},
                           params={}, statement="Decoding keeps every symbol, date and price."))
    assert "inverse" in failed(result).get("catalog_form", "")


@settings(max_examples=60)
@given(st.dictionaries(st.sampled_from(sorted(BASE)), st.just(None), max_size=4))
def test_every_valid_candidate_row_loads_as_a_catalog_row(drop):
    """Whatever subset of fields a drafter leaves out, "valid" implies the catalog accepts it."""
    result = judge(variant(**drop))
    if result.valid:
        load_catalog(yaml.safe_dump({"relations": [result.row]}), "check.yaml")
    else:
        assert result.row is None and result.reasons


# --- identity and transform -------------------------------------------------------------------

def test_an_id_that_collides_with_the_catalog_is_rejected():
    existing = next(iter(CATALOG.relations))
    result = judge(variant(id=existing))
    assert existing in failed(result)["unique_id"]


@pytest.mark.parametrize("spell", [str.upper, str.title, lambda s: f" {s} ", lambda s: f"{s}\n",
                                   lambda s: s.replace("o", "\u043e")],
                         ids=["upper", "title", "spaces", "newline", "cyrillic-o"])
def test_an_id_that_collides_up_to_case_spacing_or_look_alikes_is_rejected(spell):
    existing = next(iter(CATALOG.relations))
    result = judge(variant(id=spell(existing)))
    assert existing in failed(result)["unique_id"]


def test_a_case_only_collision_fails_unique_id_alone():
    assert set(failed(judge(variant(id="Penguins.Order_Invariant")))) == {"unique_id"}


@pytest.mark.parametrize("rid", ["../escape", "a/b", "a\\b", ".hidden", "trailing.", "-dash", "a..b", "..",
                                 "tab\there", "nul\x00", "esc\x1b[31m", "caf\u00e9", "x" * 201, "", 42])
def test_an_id_that_is_not_a_safe_file_name_is_rejected(rid):
    result = judge(variant(id=rid))
    assert "safe_id" in failed(result)
    assert not result.valid and result.row is None


@pytest.mark.parametrize("rid", ["a", "_a", "penguins.mass-permutation_2", "x" * 200])
def test_safe_ids_pass(rid):
    assert "safe_id" not in failed(judge(variant(id=rid)))


def test_transform_other_needs_an_edit():
    result = judge(variant(transform="other"))
    assert set(failed(result)) == {"known_transform"}
    assert "other" in failed(result)["known_transform"]
    assert not_checked(result) == {"catalog_form"}
    assert not result.valid and result.row is None


@pytest.mark.parametrize("transform", ["shuffle", "Permute", " permute", ["permute"]])
def test_an_unknown_transform_is_rejected(transform):
    assert "known_transform" in failed(judge(variant(transform=transform)))


# --- untrusted YAML is a rejected candidate, never a crash ----------------------------------

@pytest.mark.parametrize("text", [
    "id: [unclosed\ntransform: permute\n",
    "id: a\nid: b\n",
    BOMB,
    "id: a\n---\nid: b\n",
    "- a list\n- not a mapping\n",
    "just a scalar\n",
    "",
    "id: a\nexpires: 2031-02-30\n",
    "id: !!python/object/apply:os.system ['true']\n",
], ids=["syntax", "duplicate-key", "alias-bomb", "two-documents", "list", "scalar", "empty",
        "impossible-date", "python-tag"])
def test_bad_yaml_is_a_rejected_candidate(text):
    result = judge(text)
    assert not result.valid
    assert result.row is None
    assert result.reasons and all(isinstance(r, str) and r for r in result.reasons)
    assert [v.rule for v in result.verdicts] == list(RULES)


# --- drafted seed rows ----------------------------------------------------------------------

GOOD = {"percent": 25, "salt": "onboarding-tour", "population": 800}


def seeds(*rows, existing=EXISTING_SEEDS) -> list:
    text = "\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n"
    return validate_seed_rows(QUARANTINE_SEEDS, text, CATALOG, existing)


def test_a_legal_row_is_valid():
    [row] = seeds(GOOD)
    assert row.valid and row.reasons == [] and row.relation_id == "rollout.monotonic"


@pytest.mark.parametrize("key", ["expected", "result", "output", "answer", "Expected", "result_ids",
                                 "admitted_output"])
def test_an_answer_like_key_is_rejected(key):
    [row] = seeds(GOOD | {key: ["u00004"]})
    assert not row.valid
    assert key in row.reasons[0]  # answer-like keys are reported first


def test_a_key_outside_the_schema_is_rejected():
    [row] = seeds(GOOD | {"region": "eu"})
    assert any("region" in r for r in row.reasons)


def test_a_missing_key_is_rejected():
    [row] = seeds({k: v for k, v in GOOD.items() if k != "salt"})
    assert any("salt" in r for r in row.reasons)


@pytest.mark.parametrize("field,value", [
    ("percent", "25"), ("percent", 25.5), ("percent", True), ("percent", None),
    ("salt", 5), ("salt", ["a"]), ("population", "800"), ("population", False),
])
def test_a_value_of_the_wrong_type_is_rejected(field, value):
    [row] = seeds(GOOD | {field: value})
    assert not row.valid
    assert any(field in r for r in row.reasons)


def _bounds(field: str) -> tuple[int, int]:
    spec = ROLLOUT_SCHEMA[field]
    return spec["min"], spec["max"]


@settings(max_examples=200)
@given(field=st.sampled_from(["percent", "population"]), value=st.integers(-10**6, 10**6))
def test_bounds_are_the_schema_bounds(field, value):
    low, high = _bounds(field)
    [row] = seeds(GOOD | {field: value, "salt": f"s-{field}-{value}"}, existing=[])
    assert row.valid is (low <= value <= high)
    if not row.valid:
        assert any(field in r for r in row.reasons)


def test_bound_edges():
    low, high = _bounds("percent")
    valid = lambda p: seeds(GOOD | {"percent": p, "salt": f"edge-{p}"}, existing=[])[0].valid
    assert valid(low) and valid(high)
    assert not valid(low - 1) and not valid(high + 1)


def test_a_duplicate_of_an_existing_seed_is_rejected_whatever_its_key_order():
    existing = EXISTING_SEEDS[0]
    reordered = dict(reversed(list(existing.items())))
    assert list(reordered) != list(existing)
    [row] = seeds(reordered)
    assert any("duplicate" in r for r in row.reasons)


def test_a_row_repeated_in_the_draft_is_rejected_the_second_time():
    first, second = seeds(GOOD, GOOD)
    assert first.valid and not second.valid
    assert any("duplicate" in r for r in second.reasons)


def test_non_json_lines_are_rejected_rows_and_lines_are_file_lines():
    rows = seeds(GOOD, "", "{not json", "", GOOD | {"salt": "other"})
    by_line = {r.line: r for r in rows}
    assert set(by_line) == {1, 3, 5}  # blank lines skipped, numbering kept
    assert by_line[1].valid and by_line[5].valid
    assert "JSON" in by_line[3].reasons[0]


def test_a_non_object_row_is_rejected():
    [row] = seeds([25, "salt", 800])
    assert not row.valid


def test_rows_for_an_unknown_or_lease_relation_are_rejected():
    for path in ("oracle/quarantine/no.such.seeds.jsonl", "oracle/quarantine/penguins.order_invariant.seeds.jsonl"):
        [row] = validate_seed_rows(path, json.dumps(GOOD) + "\n", CATALOG, [])
        assert not row.valid


# --- the demo repository as a reviewer opens it -----------------------------------------------

def _independent_row_verdict(value) -> bool:
    """What §3/§10 say about a drafted rollout row, written from the schema alone."""
    if not isinstance(value, dict) or set(value) != set(ROLLOUT_SCHEMA):
        return False
    if not isinstance(value["salt"], str):
        return False
    for field in ("percent", "population"):
        v = value[field]
        low, high = _bounds(field)
        if not isinstance(v, int) or isinstance(v, bool) or not low <= v <= high:
            return False
    return value not in EXISTING_SEEDS


@pytest.fixture(scope="module")
def demo_review(tmp_path_factory):
    root = materialise(tmp_path_factory.mktemp("cand") / "demo", TODAY)
    review = load_review(root, today=TODAY)
    yield review
    review.close()


def test_demo_candidates_get_the_intended_verdicts(demo_review):
    by_id = {c.id: c for c in demo_review.candidates}
    assert set(by_id) == {"penguins.mass_permutation", "penguins.expected_total",
                          "weather.frozen_ingest", "codec.vacuous_roundtrip"}
    assert by_id["penguins.mass_permutation"].valid
    assert not by_id["penguins.expected_total"].valid
    assert any("expected_total" in r for r in by_id["penguins.expected_total"].reasons)
    assert not by_id["weather.frozen_ingest"].valid
    assert any("reruns" in r or "freeze" in r for r in by_id["weather.frozen_ingest"].reasons)
    assert not by_id["codec.vacuous_roundtrip"].valid
    assert any("vacuous" in r for r in by_id["codec.vacuous_roundtrip"].reasons)


def test_demo_seed_rows_get_the_intended_verdicts(demo_review):
    rows = demo_review.seed_rows
    drafted = [json.loads(line) for line in (SAMPLE / QUARANTINE_SEEDS).read_text().splitlines() if line.strip()]
    assert [r.value for r in rows] == drafted
    for row in rows:
        assert row.valid is _independent_row_verdict(row.value), row
    for row in rows:
        if row.valid:
            continue
        # the offending key: one outside the schema, else a field out of its bounds
        extra = sorted(set(row.value) - set(ROLLOUT_SCHEMA))
        out_of_bounds = [f for f in ("percent", "population")
                         if not _bounds(f)[0] <= row.value[f] <= _bounds(f)[1]]
        key = (extra or out_of_bounds)[0]
        assert any(key in r for r in row.reasons), (row.value, row.reasons)


def test_bad_yaml_candidate_on_main_is_listed_as_rejected(tmp_path, capsys):
    root = materialise(tmp_path / "demo", TODAY)
    hermetic_git(root, "checkout", "-q", "main")
    (root / "oracle" / "quarantine" / "broken.yaml").write_text("id: broken\nid: again\nstatement: [\n")
    hermetic_git(root, "add", "-A")
    hermetic_git(root, "commit", "-q", "-m", "quarantine: a drafter wrote junk")
    hermetic_git(root, "checkout", "-q", "agent/patch")
    capsys.readouterr()
    code = cli.main(["validate", "--repo", str(root), "--today", TODAY.isoformat(), "--json"])
    payload = json.loads(capsys.readouterr().out)
    assert code == EXIT_PASS  # a rejected draft is quarantine's normal state, not a bad oracle file
    [broken] = [c for c in payload["candidates"] if c["path"].endswith("broken.yaml")]
    assert broken["valid"] is False and broken["reasons"]
    assert len(payload["candidates"]) == 5


@pytest.mark.parametrize("row", [{"s": "2", "meta": {"expected": 2}}, {"s": "2", "output ": 2},
                                 {"s": "2", "rows": [{"result": 1}]}])
def test_answers_hidden_in_nested_or_padded_keys_fail_a_seed_row(row):
    from relconsole.engine.oracle.catalog import check_row

    reasons = check_row(row, None)
    assert reasons and all("answer-like" in r for r in reasons)


# --- the candidate's own input schema is checked against the rows it reads (issue 16) -------

ROWS = st.lists(st.dictionaries(st.sampled_from(["word", "lang", "tag"]), st.text(max_size=4), min_size=1),
                min_size=1, max_size=6)


def _schema_for(rows: list[dict]) -> dict:
    """The schema that fits ``rows``: every key seen, optional where some row lacks it."""
    keys = list(dict.fromkeys(k for row in rows for k in row))
    return {k: "str" if all(k in row for row in rows) else {"type": "str", "optional": True} for k in keys}


@given(ROWS)
def test_a_schema_fits_exactly_when_each_missing_key_is_declared_optional(rows):
    schema = _schema_for(rows)
    fitted = input_shape({"seeds": "s.jsonl", "schema": schema}, rows, None)
    assert fitted.problem is None and fitted.fields == list(schema)
    for key, spec in schema.items():
        if isinstance(spec, dict):  # the same key required: the first row without it is named
            strict = input_shape({"seeds": "s.jsonl", "schema": dict(schema, **{key: "str"})}, rows, None)
            first = next(n for n, row in enumerate(rows, 1) if key not in row)
            assert f"row {first}:" in strict.problem and repr(key) in strict.problem


@given(ROWS)
def test_object_seeds_without_a_schema_offer_the_union_of_their_keys(rows):
    shape = input_shape({"seeds": "s.jsonl"}, rows, None)
    assert set(shape.fields) == {k for row in rows for k in row} and not shape.plain


def test_plain_value_seeds_have_no_fields_and_cannot_be_raised():
    rows = ["1.0", "2.0rc1", "1!3.post2"]
    plain = lambda inp: input_shape(inp, rows, None)  # noqa: E731
    roundtrip = variant(transform="roundtrip", subject="codec:dumps", inverse="codec:loads",
                        input={"seeds": SEEDS_FILE}, params={}, compare="exact",
                        statement="Decoding the encoding of a version gives it back.")
    assert failed(judge(roundtrip, fields=plain)) == {}
    rising = variant(**MONOTONIC)
    assert "plain-value seeds have no field" in failed(judge(rising, fields=plain))["not_always_true"]


def test_a_schema_naming_a_column_the_corpus_lacks_is_rejected():
    drafted = variant(input={"lease": "penguins", "schema": {"body_mass_g": "str", "wingspan_cm": "str"}})
    assert "wingspan_cm" in failed(judge(drafted))["input_schema"]
    optional = variant(input={"lease": "penguins", "schema": {"body_mass_g": "str",
                                                             "wingspan_cm": {"type": "str", "optional": True}}})
    assert "wingspan_cm" in failed(judge(optional))["input_schema"]  # every corpus row has the header's keys


def test_a_seeds_file_the_oracle_does_not_hold_is_named():
    missing = variant(input={"seeds": "oracle/seeds/nowhere.jsonl", "schema": {"body_mass_g": "str"}})
    assert "oracle/seeds/nowhere.jsonl is not in the oracle" in failed(judge(missing))["input_schema"]


def test_an_optional_key_may_be_missing_from_a_seed_row_and_a_required_one_may_not():
    schema = {"word": "str", "lang": {"type": "str", "optional": True}}
    catalog = load_catalog(yaml.safe_dump({"relations": [{
        "id": "t.rt", "kind": "roundtrip", "subject": "m:dumps", "inverse": "m:loads", "compare": "exact",
        "input": {"seeds": "oracle/seeds/pairs.jsonl", "schema": schema}, "owner": "t",
        "statement": "Decoding the encoding of a word row gives it back."}]}), "oracle/catalog.yaml")
    rows = validate_seed_rows("oracle/quarantine/t.rt.seeds.jsonl",
                              '{"word": "sun"}\n{"word": "sol", "lang": "es"}\n{"lang": "en"}\n', catalog, [])
    assert [r.valid for r in rows] == [True, True, False] and "missing key 'word'" in rows[2].reasons[0]


@pytest.mark.parametrize("transform", ["idempotence", "permutation", "other"])
def test_an_unknown_transform_is_told_every_transform_it_may_use(transform):
    from relconsole.engine.oracle.candidates import TRANSFORM_TO_KIND
    reason = failed(judge(variant(transform=transform)))["known_transform"]
    assert all(name in reason for name in TRANSFORM_TO_KIND), reason


def test_an_optional_field_no_row_has_is_a_ghost_and_rejected():
    """Red team: ``ghost: {type: int, optional: true}`` raised by a monotonic changed no row,
    so the relation held whatever the patch did (and its choices smuggled numbers in)."""
    rows = [{"word": "sun"}, {"word": "sol", "lang": "es"}]
    ghost = input_shape({"seeds": "s.jsonl", "schema": {"word": "str", "lang": {"type": "str", "optional": True},
                                                         "ghost": {"type": "int", "optional": True}}}, rows, None)
    assert ghost.problem and "'ghost'" in ghost.problem and "'lang'" not in ghost.problem
    over_lease = input_shape({"lease": "w", "schema": {"word": "str", "ghost": {"type": "int", "optional": True}}},
                             None, ["word", "lang"])
    assert over_lease.problem and "ghost" in over_lease.problem
    assert "no rows" in input_shape({"seeds": "s.jsonl", "schema": {"word": "str"}}, [], None).problem


@pytest.mark.parametrize("rid", ["con", "NUL", "com1.orders", "lpt9", "aux.x"])
def test_an_id_windows_reserves_for_a_device_is_not_a_safe_file_name(rid):
    assert "safe_id" in failed(judge(variant(id=rid)))
    assert "safe_id" not in failed(judge(variant(id="my" + rid)))  # only the device name itself


@pytest.mark.parametrize("step, always_true", [(0.5, True), (1e-9, True), (1, False), (1.5, False)])
def test_a_step_below_one_on_an_integer_field_is_always_true(step, always_true):
    schema = {"percent": {"type": "int", "min": 0, "max": 100}, "salt": "str", "population": "int"}
    drafted = variant(**dict(MONOTONIC, input={"seeds": SEEDS_FILE, "schema": schema},
                             params={"field": "percent", "step": step, "max": 100}))
    assert ("not_always_true" in failed(judge(drafted))) == always_true


def test_a_drafted_seed_row_with_a_lone_surrogate_is_rejected_and_can_be_deleted(demo_repo, capsys):
    """Red team: ``"\\ud800"`` in a drafted row crashed validate, accept, delete and the
    console's load (UnicodeEncodeError). It is a rejected row like any other bad line."""
    from bench.gitrepo import git
    seeds = "oracle/quarantine/rollout.monotonic.seeds.jsonl"
    other = demo_repo.parent / "main-surrogate"
    git(demo_repo, "worktree", "add", "-q", str(other), "main")
    with open(other / seeds, "a", encoding="utf-8") as handle:
        handle.write('{"percent": 50, "salt": "zz\\ud800", "population": 10}\n')
    line = len((other / seeds).read_text(encoding="utf-8").splitlines())
    git(other, "commit", "-qam", "quarantine: a surrogate")
    git(demo_repo, "worktree", "remove", "--force", str(other))
    args = ["--repo", str(demo_repo), "--today", TODAY.isoformat()]
    assert cli.main(["validate", "--json", *args]) == EXIT_PASS
    rows = [r for r in json.loads(capsys.readouterr().out)["seed_rows"] if r["key"] == f"{seeds}:{line}"]
    assert len(rows) == 1 and rows[0]["valid"] is False
    assert any("surrogate" in reason for reason in rows[0]["reasons"]), rows
    assert cli.main(["delete", f"{seeds}:{line}", *args]) == EXIT_PASS
    assert "zz" not in git(demo_repo, "show", f"main:{seeds}")
