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
import os
import subprocess
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from relconsole import cli
from relconsole.engine.candidates import validate_candidate, validate_seed_rows
from relconsole.engine.catalog import load_catalog
from relconsole.engine.demo import materialise
from relconsole.engine.errors import EXIT_PASS
from relconsole.engine.leases import parse_lease
from relconsole.engine.review import load_review

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


def input_fields(inp: dict) -> list[str] | None:
    """The candidate input's fields, as the review tells them: schema, corpus header, seeds schema."""
    if isinstance(inp.get("schema"), dict):
        return list(inp["schema"])
    if inp.get("lease"):
        return HEADERS.get(inp["lease"])
    for relation in CATALOG.relations.values():
        if inp.get("seeds") and relation.seeds_path == inp["seeds"]:
            return list(relation.input.get("schema") or {}) or None
    return None


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


def judge(candidate: dict | str, path: str = "oracle/quarantine/c.yaml"):
    text = candidate if isinstance(candidate, str) else yaml.safe_dump(candidate, sort_keys=False)
    return validate_candidate(path, text, CATALOG, input_fields)


def failed(result) -> dict[str, str]:
    return {v.rule: v.reason for v in result.verdicts if not v.ok}


def variant(**changes) -> dict:
    out = copy.deepcopy(BASE)
    for key, value in changes.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = value
    return out


def test_the_base_candidate_passes_every_rule():
    result = judge(BASE)
    assert failed(result) == {}
    assert result.valid
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
    ("monotonic", {"subject": "rollout:admitted", "input": {"seeds": SEEDS_FILE},
                   "params": {"field": "percent", "step": 5, "max": 100},
                   "statement": "Raising percent never drops an admitted user."}),
    ("roundtrip", {"subject": "codec:dumps", "inverse": "codec:loads", "input": {"lease": "stocks"},
                   "params": {}, "compare": "exact",
                   "statement": "Decoding the encoding gives back every symbol, date and price."}),
])
def test_each_transform_becomes_its_catalog_kind(transform, extra):
    result = judge(variant(transform=transform, **extra))
    assert failed(result) == {}
    assert result.row["kind"] == KIND_OF[transform]
    load_catalog(yaml.safe_dump({"relations": [result.row]}), "check.yaml")  # accepted row loads


# --- no expected values or numeric answers ------------------------------------------------

@pytest.mark.parametrize("changes,offending", [
    ({"params": {"shuffles": 4, "seed": 11, "checks": [{"species": "Adelie", "expected": 558800.0}]}}, "expected"),
    ({"params": {"shuffles": 4, "seed": 11, "order_free": True, "cases": [1, {"answer": 2}]}}, "answer"),
    ({"input": {"lease": "penguins", "result": {"Adelie": 1}}}, "result"),
    ({"params": {"shuffles": 4, "seed": 11, "output_total": "558800.0"}}, "output_total"),
    ({"expected_sum": 558800.0}, "expected_sum"),
])
def test_answers_anywhere_in_the_body_are_rejected(changes, offending):
    result = judge(variant(**changes))
    assert "no_answers" in failed(result)
    assert offending in failed(result)["no_answers"]
    assert not result.valid and result.row is None


@pytest.mark.parametrize("params,offending", [
    ({"shuffles": 4, "seed": 11, "mass_total": 558800.5}, "mass_total"),
    ({"shuffles": 4, "seed": 11, "totals": [152, 68, 124]}, "totals"),
    ({"shuffles": 4, "seed": 11, "adelie": {"count": 152}}, "adelie"),
])
def test_a_number_in_params_that_no_kind_takes_is_an_answer(params, offending):
    result = judge(variant(params=params))
    assert offending in failed(result).get("no_answers", "")


def test_the_numbers_a_kind_takes_are_not_answers():
    result = judge(variant(params={"shuffles": 40, "seed": 123456}))
    assert "no_answers" not in failed(result)


def test_answer_words_in_must_not_are_allowed():
    result = judge(variant(must_not="assert the expected result 558800.0 as the answer"))
    assert failed(result) == {}


# --- no skip or xfail text; no freeze fields --------------------------------------------------

@pytest.mark.parametrize("changes", [
    {"statement": "Shuffling keeps body_mass_g sums (xfail on CI runners)."},
    {"statement": "Shuffling keeps body_mass_g sums; @pytest.mark.skipif(slow) on big corpora."},
    {"source": "pytest.mark.skip until DATA-142 lands"},
    {"params": {"shuffles": 4, "seed": 11, "skip": True}},
    {"params": {"shuffles": 4, "seed": 11, "notes": ["fine", "XFAIL this"]}},
])
def test_skip_or_xfail_text_is_rejected(changes):
    assert "no_skip" in failed(judge(variant(**changes)))


def test_words_that_merely_contain_skip_are_not_skip_marks():
    result = judge(variant(statement="Shuffling rows of skipping penguins keeps body_mass_g sums."))
    assert "no_skip" not in failed(result)


@pytest.mark.parametrize("changes,offending", [
    ({"freeze": {"allowed": True, "max_days": 30}}, "freeze"),
    ({"expires": "2031-06-01"}, "expires"),
    ({"params": {"shuffles": 4, "seed": 11, "reruns": 3}}, "reruns"),
    ({"params": {"shuffles": 4, "seed": 11, "policy": {"pass_needed": 2}}}, "pass_needed"),
    ({"signature": "sha256:" + "0" * 64}, "signature"),
])
def test_freeze_fields_are_rejected(changes, offending):
    result = judge(variant(**changes))
    assert offending in failed(result).get("no_freeze_fields", "")


# --- vacuous and always-true predicates --------------------------------------------------------

def test_a_statement_that_names_no_input_field_is_vacuous():
    result = judge(variant(statement="Shuffling the rows gives the same thing back."))
    assert "vacuous" in failed(result)["references_input"]


def test_a_field_must_be_named_as_a_whole_word():
    result = judge(variant(statement="Shuffling keeps the body_mass_grams and speciesism intact."))
    assert "references_input" in failed(result)


def test_a_field_named_only_in_params_counts():
    result = judge(variant(transform="monotonic", subject="rollout:admitted", input={"seeds": SEEDS_FILE},
                           params={"field": "percent", "step": 5, "max": 100},
                           statement="Raising the knob never drops anyone."))
    assert "references_input" not in failed(result)


def test_unknown_input_fields_fail_closed():
    result = judge(variant(input={"lease": "no-such-lease"}))
    assert "references_input" in failed(result)


def _tolerance(quantum_text: str) -> str:
    text = yaml.safe_dump(variant(compare="tolerance"), sort_keys=False)
    return text + f"quantum: {quantum_text}\n"


@pytest.mark.parametrize("quantum_text", ["1.0e+6", "1e6", "1E9", "1000000", ".inf", "1.0e+300"])
def test_a_tolerance_that_admits_anything_is_always_true(quantum_text):
    result = judge(_tolerance(quantum_text))
    assert "always true" in failed(result).get("references_input", ""), failed(result)


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


def test_transform_other_needs_an_edit():
    result = judge(variant(transform="other"))
    assert "other" in failed(result)["known_transform"]
    assert not result.valid and result.row is None


def test_an_unknown_transform_is_rejected():
    assert "shuffle" in failed(judge(variant(transform="shuffle")))["known_transform"]


def test_missing_provenance_is_rejected():
    result = judge(variant(drafted_by=None, source=None))
    assert "drafted_by" in failed(result)["fields"] and "source" in failed(result)["fields"]


# --- untrusted YAML is a rejected candidate, never a crash ----------------------------------

BOMB = "\n".join(["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"] + [
    f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 9)]) + "\n"


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


def test_a_syntax_error_names_its_line():
    result = judge("id: ok\ntransform: permute\nstatement: [unclosed\n")
    reason = failed(result)["parses"]
    assert "c.yaml:3" in reason or "c.yaml:4" in reason


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


def _git(root: Path, *args: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1")
    subprocess.run(["git", "-c", "user.name=T", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false",
                    *args], cwd=root, env=env, check=True, capture_output=True)


def test_bad_yaml_candidate_on_main_is_listed_as_rejected(tmp_path, capsys):
    root = materialise(tmp_path / "demo", TODAY)
    _git(root, "checkout", "-q", "main")
    (root / "oracle" / "quarantine" / "broken.yaml").write_text("id: broken\nid: again\nstatement: [\n")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "quarantine: a drafter wrote junk")
    _git(root, "checkout", "-q", "agent/patch")
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
    from relconsole.engine.catalog import check_row

    reasons = check_row(row, None)
    assert reasons and all("answer-like" in r for r in reasons)
