"""Inputs the patch cannot predict (issue 37), end to end: small real repositories with real git
(tests/drawn_repos.py), ``relconsole run`` and ``gate`` judging patches in the judge's real worker
processes. The judge-side pieces (strategies, delta debugging, ``Drawing``'s choices) are in
tests/test_drawing.py.

Each of the issue's four shapes is wrong only off the curated inputs, so the leased corpus or
the seed rows hold and only a drawn input shows the miss; each is rejected, and the smallest
input shown is checked for the property that makes it a counterexample, read from the run's
own record (``first_run.shrunk``, ``first_run.drawn``). Honest rewrites of the same subjects
pass 20 runs of 20 (the ``shared`` group: about ten minutes of subject calls).
"""

from __future__ import annotations

import csv
import json
from collections import Counter
from pathlib import Path

import pytest

from bench.gitrepo import git
from relconsole.engine.errors import EXIT_PASS, EXIT_REJECT
from tests import drawn_repos as fx
from tests.conftest import TODAY
from tests.test_cli import cli, repo_args as where


def run_json(capsys, repo: Path, *args: str) -> tuple[int, dict]:
    """``relconsole run --json`` on ``repo``'s checked-out branch: (exit code, the record of
    the one relation it ran)."""
    code, out, err = cli(capsys, "run", "--json", *args, *where(repo))
    assert "Traceback" not in err, err
    payload = json.loads(out)
    [relation] = payload["relations"]
    return code, relation


def drawn_miss(relation: dict) -> tuple[dict, dict]:
    """(what was drawn, the shrunk input) of a relation the patch missed on a drawn input
    only: the file input (corpus or seed rows) held."""
    first = relation["first_run"]
    assert relation["outcome"] == "missed" and first["held"] is False, relation["summary"]
    assert "missed_on" in first["drawn"], f"the miss was not on a drawn input: {first['drawn']}"
    assert first["shrunk"] and (first["shrunk"].get("held") is False or "error" in first["shrunk"])
    return first["drawn"], first["shrunk"]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    return fx.corpus_repo(tmp_path_factory.mktemp("drawn") / "corpus", TODAY)


@pytest.fixture(scope="module")
def seeds(tmp_path_factory) -> Path:
    return fx.seeds_repo(tmp_path_factory.mktemp("drawn") / "seeds")


def test_the_fixtures_curated_inputs_never_meet_the_shapes():
    """The premise of every shape below: nothing curated crosses where the patch goes wrong."""
    assert len(fx.corpus_rows()) <= fx.BIG_ROWS
    assert all(row["percent"] + 10 < fx.SWAP_PERCENT for row in fx.ROLLOUT_SEEDS)
    assert all(row["day"] < fx.NEW_RULE.isoformat() for row in fx.BILLING_SEEDS)


# --- a corpus: subsamples and scaled copies --------------------------------------------------

def test_a_sum_exact_only_for_the_corpus_group_sizes_is_rejected_on_rows_of_other_sizes(corpus: Path, capsys):
    fx.patched(corpus, "shape-a", fx.shape_a())
    code, relation = run_json(capsys, corpus)
    assert code == EXIT_REJECT
    _, shrunk = drawn_miss(relation)
    rows = shrunk["input"]
    corpus_rows = fx.corpus_rows()
    assert rows and all(row in corpus_rows for row in rows)  # how few depends on the shrink's time
    sizes = Counter(row["species"] for row in rows)
    off = {path.split(".")[0] for path in shrunk["differing"]}
    assert off and off <= set(sizes)
    # every species whose sum came out otherwise has a group size the corpus does not have
    assert not {sizes[species] for species in off} & fx.corpus_group_sizes()
    assert shrunk["source"] != shrunk["followup"]


def test_a_branch_taken_above_five_thousand_rows_is_reached_by_the_scaled_copy(corpus: Path, capsys):
    fx.patched(corpus, "shape-b", fx.shape_b())
    code, relation = run_json(capsys, corpus)
    assert code == EXIT_REJECT
    drawn, shrunk = drawn_miss(relation)
    whole = len(fx.corpus_rows())
    missed_on = drawn["missed_on"]
    assert "scale" in missed_on and missed_on["scale"] * whole + missed_on["extra"] > fx.BIG_ROWS
    # the input shown needs the size: more rows than the branch's bound, each a corpus row
    assert len(shrunk["input"]) > fx.BIG_ROWS > whole
    assert all(0 <= index < whole for index in shrunk["recipe"]["pick"])
    assert shrunk["source"] != shrunk["followup"]


# --- seeds with an input schema: rows drawn from it ------------------------------------------

def test_a_bucket_swapped_at_sixty_percent_is_rejected_on_a_percent_just_below_it(seeds: Path, capsys, tmp_path):
    """And the drawn run replays exactly from its recorded run seed."""
    fx.patched(seeds, "shape-c", fx.shape_c())
    code, relation = run_json(capsys, seeds)
    assert code == EXIT_REJECT
    drawn, shrunk = drawn_miss(relation)
    value = shrunk["input"]
    assert fx.SWAP_PERCENT - 10 <= value["percent"] < fx.SWAP_PERCENT
    assert "percent" in shrunk["fields"]
    lost = set(shrunk["source"]) - set(shrunk["followup"])
    assert lost, "no user admitted at the lower percent was dropped at the higher"
    # the same run seed draws the same rows and shrinks to the same one
    again_code, again = run_json(capsys, seeds, "--replay-seed", str(relation["first_run"]["seed"]))
    assert again_code == EXIT_REJECT
    timeless = lambda d: {k: v for k, v in d.items() if k != "seconds"}  # noqa: E731 (the wall time differs)
    assert timeless(again["first_run"]["drawn"]) == timeless(drawn)
    assert again["first_run"]["shrunk"]["recipe"] == shrunk["recipe"]
    assert again["first_run"]["shrunk"]["input"] == value


def test_a_date_rule_from_2016_is_rejected_by_run_and_gate_on_a_day_from_then(seeds: Path, capsys, tmp_path):
    fx.patched(seeds, "shape-d", fx.shape_d())
    code, relation = run_json(capsys, seeds)
    assert code == EXIT_REJECT
    _, shrunk = drawn_miss(relation)
    day = shrunk["input"]["day"]
    assert day >= fx.NEW_RULE.isoformat() and "day" in shrunk["fields"]
    assert shrunk["followup"] < shrunk["source"]  # a later return cost less
    code, out, err = cli(capsys, "gate", "--base", "main", "--runs", "2", "--artifacts", str(tmp_path / "art"),
                         "--json", "--no-history", *where(seeds))
    assert "Traceback" not in err, err
    gated = json.loads(out)
    [found] = gated["relations"]
    assert code == EXIT_REJECT and gated["decision"] == "reject" and found["relation_id"] == "billing.monotonic"
    assert json.loads(found["shrunk"]["input"])["day"] >= fx.NEW_RULE.isoformat()
    assert int(found["shrunk"]["followup"]) < int(found["shrunk"]["source"])


# --- honest rewrites keep passing -------------------------------------------------------------

HONEST_RUNS = 20


def honest_patches() -> list[tuple[str, str, dict]]:
    """(repository kind, branch, files) of each honest rewrite."""
    fractions, ordered = fx.honest_totals()
    return [("corpus", "honest-fractions", fractions), ("corpus", "honest-sorted", ordered),
            ("seeds", "honest-rollout", fx.honest_rollout()), ("seeds", "honest-billing", fx.honest_billing())]


@pytest.mark.shared
@pytest.mark.slow
@pytest.mark.parametrize("kind,branch,files", honest_patches(), ids=[p[1] for p in honest_patches()])
def test_an_honest_rewrite_passes_twenty_runs_of_twenty(kind: str, branch: str, files: dict, corpus: Path,
                                                        seeds: Path, capsys):
    repo = corpus if kind == "corpus" else seeds
    fx.patched(repo, branch, files)
    misses = []
    for _ in range(HONEST_RUNS):
        code, relation = run_json(capsys, repo)
        first = relation["first_run"]
        assert first["drawn"].get("tried"), "nothing was drawn: the honest run proves nothing of drawing"
        if code != EXIT_PASS:
            misses.append((relation["summary"], first["drawn"], first["shrunk"].get("input")))
    assert misses == []


# --- the sample: the agent's parallel sum ------------------------------------------------------

def test_the_samples_parallel_sum_is_rejected_on_at_most_five_of_its_rows(demo_repo: Path, capsys):
    subject = (fx.SAMPLE / ".agent_patch/01-parallel-sum/message.txt").read_text().splitlines()[0]
    [commit] = git(demo_repo, "log", "--format=%H", "--fixed-strings", f"--grep={subject}", "agent/patch").split()
    code, relation = run_json(capsys, demo_repo, "--head", commit, "--relation", "penguins.order_invariant")
    assert code == EXIT_REJECT and relation["outcome"] == "missed"
    shrunk = relation["first_run"]["shrunk"]
    with (demo_repo / "oracle/data/penguins.csv").open(newline="") as handle:
        corpus_rows = list(csv.DictReader(handle))
    assert 1 <= len(shrunk["input"]) <= 5
    assert [corpus_rows[i] for i in shrunk["recipe"]["pick"]] == shrunk["input"]
    assert shrunk["held"] is False and shrunk["differing"] and shrunk["source"] != shrunk["followup"]


# --- a base that misses on a drawn input: the catalog's keeper hears it first --------------------

def test_a_base_missing_on_a_drawn_row_is_a_bad_catalog_until_the_schema_is_tightened(tmp_path: Path, capsys):
    """validate (exit 5) names the smallest drawn row, which passes the seed rows' schema check and
    is one the subject cannot take; a str pattern that says what the subject takes makes it hold."""
    import re

    from relconsole.engine.errors import EXIT_BAD_INPUT
    from relconsole.engine.oracle.catalog import check_row
    from tests.test_base_holds import CATALOG, HOLDING, versions_repo

    drawn = CATALOG.replace("    generate: 0\n", "")
    assert drawn != CATALOG
    code, out, _ = cli(capsys, "validate", "--json", *where(versions_repo(tmp_path / "loose", HOLDING, drawn)))
    payload = json.loads(out)
    [found] = payload["relations"]
    [error] = payload["errors"]
    assert code == EXIT_BAD_INPUT and found["state"] == "missed" and "drawn" in error["message"]
    smallest = json.loads(re.search(r"smallest (\{.*?\}):", error["message"]).group(1))
    assert check_row(smallest, {"text": "str"}) == []
    assert not all(part.isdigit() for part in smallest["text"].split("."))  # int() cannot take it
    # the way out: a tighter schema (whole numbers without a leading zero, joined by dots)
    tight = drawn.replace("schema: {text: str}", r"schema: {text: {type: str, pattern: '(0|[1-9][0-9]{0,2})(\.(0|[1-9][0-9]{0,2})){0,3}'}}")
    assert tight != drawn
    code, out, _ = cli(capsys, "validate", "--json", *where(versions_repo(tmp_path / "tight", HOLDING, tight)))
    payload = json.loads(out)
    assert code == EXIT_PASS and [r["state"] for r in payload["relations"]] == ["held"], payload["errors"]


# --- red team (issue 37): ways a wrong patch passed, now rejected -----------------------------

def test_a_subject_exception_named_like_a_judges_verdict_is_its_miss_not_a_stop(corpus: Path, capsys):
    """A class of the subject's called ``environment``, raised on drawn sizes the corpus never
    has, once stopped drawing (the judge took it for the machine's fault) and passed."""
    files = fx._totals_with(fx.SUM_LINE, "class environment(RuntimeError):\n    pass\n\n\n")
    small = len(fx.corpus_rows()) + 1
    files["src/totals.py"] = files["src/totals.py"].replace(
        "    groups = {}\n", f"    if len(rows) >= {small}:\n        raise environment('a medium batch')\n"
                            "    groups = {}\n", 1)
    fx.patched(corpus, "named-environment", files)
    code, relation = run_json(capsys, corpus)
    assert code == EXIT_REJECT, relation["summary"]
    _drawn, shrunk = drawn_miss(relation)
    assert "environment" in shrunk["error"]["type"] and shrunk["error"]["type"] != "environment"
    assert len(shrunk["input"]) == small  # a size: every row of the shortest prefix counts


def test_empty_outputs_on_a_scaled_copy_are_a_miss_where_the_corpus_gave_some(corpus: Path, capsys):
    files = {"src/totals.py": fx.TOTALS}
    files["src/totals.py"] = files["src/totals.py"].replace(
        "    groups = {}\n", f"    if len(rows) > {fx.BIG_ROWS}:\n        return {{}}\n    groups = {{}}\n", 1)
    fx.patched(corpus, "empty-when-big", files)
    code, relation = run_json(capsys, corpus)
    assert code == EXIT_REJECT, relation["summary"]
    drawn, shrunk = drawn_miss(relation)
    assert "scale" in drawn["missed_on"] and len(shrunk["input"]) > fx.BIG_ROWS


CODEC = '''def dumps(row):
    return ",".join(f"{n:,}".replace(",", "_") for n in [row["n"]])
'''
STRICT_INVERSE = '''import re


def loads(text):
    """The inverse: refuses a text that is no grouped number (a decoder's natural way)."""
    if not re.fullmatch(r"-?\\d{1,3}(_\\d{3})*", text):
        raise ValueError(f"not a grouped number: {text!r}")
    return {"n": int(text.replace("_", ""))}
'''
CODEC_CATALOG = """owners:
  "codec.py": [codec.roundtrip]
  "oracle/**": []
relations:
  - id: codec.roundtrip
    kind: roundtrip
    subject: codec:dumps
    inverse: oracle.adapters:loads
    input: {seeds: oracle/seeds/n.jsonl, schema: {n: int}}
    compare: exact
    generate: 0
    statement: a grouped number reads back as itself
"""


def test_an_oracle_inverse_that_raises_only_on_the_patchs_output_is_the_patchs_miss(tmp_path: Path, capsys):
    """New-user trial (issue 37): a roundtrip inverse that refuses a malformed encoding raised in
    the oracle's file, and the miss was an oracle fault (abort) with no look at the base. The
    base holds on the same input, so the patch's output is what was malformed: a reject."""
    from bench.gitrepo import committed_repo
    repo = committed_repo(tmp_path / "r", {"codec.py": CODEC, "oracle/__init__.py": "",
                                           "oracle/adapters.py": STRICT_INVERSE, "oracle/catalog.yaml": CODEC_CATALOG,
                                           "oracle/seeds/n.jsonl": '{"n": 5}\n{"n": -1234567}\n'})
    fx.patched(repo, "sign", {"codec.py": CODEC.replace('f"{n:,}"', 'f"{abs(n):,}" if n < 0 else f"{n:,}"')
                              .replace('.replace(",", "_")', '.replace(",", "_") + ("-" if n < 0 else "")')})
    code, relation = run_json(capsys, repo)
    assert code == EXIT_REJECT and relation["decision"] == "reject", relation["summary"]
    assert relation["base_run"]["held"] is True
    assert "ValueError" in relation["first_run"]["error_type"]
