"""Bite with drawn inputs (issue 37): per mutant, whether the relation's own input killed it or
only an input drawn from it, and how many kills only drawn inputs made.

The repository: a corpus of 12 rows, and a subject whose branch for inputs of ``LIMIT`` rows or
more only a drawn scaled copy takes (the first one drawn is past half of ``generate_rows``).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import re
import textwrap
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relconsole.cli.main import main
from relconsole.console import views
from relconsole.engine.errors import EXIT_PASS
from relconsole.engine.gate.bite.bite import bite
from relconsole.engine.gate.bite.bitecache import cached_verdict
from relconsole.engine.gate.bite.bitereport import DRAWN, OWN, BiteReport, MutationResult
from relconsole.engine.gate.review import load_review
from bench.gitrepo import git, reviewed_repo
from tests.conftest import TODAY

LIMIT = 300  # rows from which the subject adds in two halves; the corpus has 12
CORPUS_ROWS = 12
DRAWS = 1  # generate: the one drawn input is the scaled copy
SUBJECT = textwrap.dedent(f'''\
    def total(rows):
        """The qty total; a long input is added in two halves."""
        if len(rows) >= {LIMIT}:
            half = len(rows) // 2
            return _add(rows[:half]) + _add(rows[half:])
        return _add(rows)


    def _add(rows):
        total = 0
        for row in rows:
            total += int(row["qty"])
        return total
''')
BRANCH = range(SUBJECT.splitlines().index(f"    if len(rows) >= {LIMIT}:") + 1,
               SUBJECT.splitlines().index("    return _add(rows)") + 1)  # the branch's lines, 1-based
CORPUS = "sku,qty\n" + "".join(f"s{n},{5 * n + 1}\n" for n in range(CORPUS_ROWS))  # every qty its own
RID = "orders.total_order"


def orders_repo(root: Path, generate: int) -> Path:
    digest = hashlib.sha256(CORPUS.encode()).hexdigest()
    catalog = textwrap.dedent(f"""\
        owners:
          "orders.py": [{RID}]
        relations:
          - id: {RID}
            kind: permutation
            subject: orders:total
            input: {{lease: orders}}
            compare: exact
            params: {{shuffles: 3}}
            generate: {generate}
            statement: Shuffling the order rows leaves the qty total unchanged.
        """)
    lease = (f"id: orders\npath: oracle/data/orders.csv\nsha256: \"{digest}\"\nexpires: 2027-06-30\n"
             f"owner: t@example.invalid\nallowed_relations: [{RID}]\n")
    return reviewed_repo(root, {
        "orders.py": SUBJECT, "oracle/catalog.yaml": catalog, "oracle/leases/orders.yaml": lease,
        "oracle/data/orders.csv": CORPUS, "oracle/pins.json": json.dumps({"oracle/data/orders.csv": f"sha256:{digest}"}),
        "pyproject.toml": f"[tool.relconsole]\ngenerate_rows = {2 * LIMIT}\ngenerate_seconds = 0\nshrink_seconds = 1\n"})


@pytest.fixture(scope="module")
def drawn(tmp_path_factory) -> tuple[Path, dict]:
    """The repository with one drawn input per run, and what ``bite --json`` printed for it."""
    repo = orders_repo(tmp_path_factory.mktemp("bite-drawn") / "orders", DRAWS)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["bite", RID, "--json", "--repo", str(repo), "--today", TODAY.isoformat()])
    assert code == EXIT_PASS, out.getvalue()
    return repo, json.loads(out.getvalue())


@pytest.fixture(scope="module")
def undrawn(tmp_path_factory) -> BiteReport:
    """The same relation with ``generate: 0``: only its own corpus judges each mutant."""
    repo = orders_repo(tmp_path_factory.mktemp("bite-undrawn") / "orders", 0)
    review = load_review(repo, "main", "HEAD", TODAY)
    try:
        return bite(review, RID)
    finally:
        review.close()


def fates(mutations: list[dict], killed_by: str) -> Counter:
    return Counter((m["operator"], m["label"], m["line"]) for m in mutations
                   if m["outcome"] == "caught" and m["killed_by"] == killed_by)


def rows_of(recipe: dict) -> int:
    return recipe["scale"] * CORPUS_ROWS + recipe["extra"]


def test_a_mutant_in_a_branch_only_drawn_inputs_take_is_killed_only_by_a_drawn_input(drawn):
    _repo, payload = drawn
    by_drawn = [m for m in payload["mutations"] if m["killed_by"] == DRAWN]
    assert by_drawn, "no mutant of the halves was caught: " + json.dumps(payload["mutations"])[:2000]
    assert payload["drawn_only"] == len(by_drawn) and payload["drawn_only"] <= payload["caught"]
    assert f"{payload['drawn_only']} of them only by a drawn input" in payload["verdict"]
    for m in by_drawn:
        assert m["outcome"] == "caught" and m["line"] in BRANCH, m
        recipe = m["drawn_recipe"]
        assert rows_of(recipe) >= LIMIT and m["drawn_on"] == recipe["label"]
        assert 1 <= m["drawn_tried"] <= DRAWS
        assert LIMIT <= m["shrunk"]["rows"] <= rows_of(recipe)  # still takes the branch, no larger
        assert m["how"].startswith(f"only by a drawn input ({recipe['label']}), after its corpus held")
        assert f"shrunk to {m['shrunk']['rows']} rows" in m["how"]


def test_without_drawing_exactly_the_drawn_kills_survive(drawn, undrawn):
    """What drawing adds, measured: with ``generate: 0`` the own-input kills are the same
    mutants, and every mutant a drawn input killed survives."""
    _repo, payload = drawn
    plain = [dict(r.__dict__) for r in undrawn.results]
    assert undrawn.drawn_only == 0 and all(r.drawn_tried == 0 for r in undrawn.results)
    assert fates(plain, OWN) == fates(payload["mutations"], OWN)
    survived = Counter((m["operator"], m["label"], m["line"]) for m in plain if m["outcome"] == "survived")
    assert fates(payload["mutations"], DRAWN) <= survived
    assert undrawn.caught == payload["caught"] - payload["drawn_only"]


def test_a_survivor_names_its_line_and_the_inputs_that_held(drawn):
    _repo, payload = drawn
    survivors = [m for m in payload["mutations"] if m["outcome"] == "survived"]
    assert survivors
    lines = SUBJECT.splitlines()
    for m in survivors:
        assert 1 <= m["line"] <= len(lines) and m["killed_by"] == "" and not m["drawn_recipe"]
        assert m["how"].startswith("no input killed it: its corpus")
        if m["detail"] == "held":  # an empty output (vacuous) is not drawn after
            assert m["drawn_tried"] == DRAWS and f"and {DRAWS} drawn input held" in m["how"], m


def test_the_cache_and_the_console_count_the_drawn_kills(drawn):
    repo, payload = drawn
    review = load_review(repo, "main", "HEAD", TODAY)
    try:
        verdict = cached_verdict(review, RID)
        review.bites = {RID: verdict}
        header = views.relation_header(review, review.catalog.get(RID)).plain
    finally:
        review.close()
    assert verdict is not None and (verdict.caught, verdict.drawn_only) == (payload["caught"], payload["drawn_only"])
    assert verdict.to_json()["drawn_only"] == payload["drawn_only"]
    assert f"✓ {verdict.words()}" in header.splitlines()
    assert payload["verdict"] == f"{RID}: {verdict.words()}"


def test_a_cache_entry_from_before_drawn_inputs_answers_nothing(drawn, tmp_path):
    repo, _payload = drawn
    cache = repo / ".git" / "relconsole" / "bite.json"
    kept = cache.read_bytes()
    entries = json.loads(kept)
    try:
        cache.write_text(json.dumps({k: {n: v for n, v in e.items() if n != "drawn_only"} for k, e in entries.items()}))
        review = load_review(repo, "main", "HEAD", TODAY)
        try:
            assert cached_verdict(review, RID) is None
        finally:
            review.close()
    finally:
        cache.write_bytes(kept)
    assert git(repo, "status", "--porcelain", "--untracked-files=all") == ""


FATES = ["survived", "own", "drawn", "drawn crash", "own crash"]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(FATES), max_size=8), st.integers(0, 200))
def test_the_totals_count_the_kills_only_a_drawn_input_made(fates_drawn, tried):
    results = [MutationResult("op", "label", "m.py", 3, "f", "survived" if f == "survived" else "caught", "held",
                              crashed=f.endswith("crash"), killed_by="" if f == "survived" else f.split()[0],
                              own_input="seeds", drawn_tried=tried if f != "own" else 0)
               for f in fates_drawn]
    report = BiteReport("r", "m:f", "m.py", "held", "held", results=results)
    drawn_only = sum(f.startswith("drawn") for f in fates_drawn)
    assert report.drawn_only == drawn_only == report.summary.drawn_only == report.to_json()["drawn_only"]
    words = report.verdict()
    assert ("only by a drawn input" in words) is (drawn_only > 0 and report.caught > 0)
    assert not re.search(r"(?<![\d.])1 (mutations|drawn inputs)\b", " ".join([words, *(r.how() for r in results)]))
    for result in results:
        how = result.how()
        assert how.startswith("no input killed it" if result.outcome == "survived" else "only by a drawn input"
                              if result.killed_by == DRAWN else "by its seeds")
        if result.outcome == "survived":
            assert (f"{tried} drawn input" in how) is (tried > 0)
