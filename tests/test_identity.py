"""Relation identity (SPEC §3): what leaves it alone and what changes it."""

from __future__ import annotations

import random
import textwrap
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from relconsole.engine.oracle.catalog import load_catalog
from relconsole.engine.gate.review import load_review
from bench.gitrepo import git, reviewed_repo
from tests.conftest import TODAY

BASE = {
    "id": "orders.split", "kind": "split_merge", "subject": "agg:summarize",
    "merge": "oracle.adapters:merge", "input": {"lease": "orders"}, "compare": "canon",
    "quantum": 1e-6, "params": {"splits": 3, "seed": 7}, "owner": "data-team",
    "statement": "Summarising in parts and merging equals summarising whole.",
}
OTHER = {"id": "orders.perm", "kind": "permutation", "subject": "agg:summarize",
         "input": {"lease": "orders"}, "compare": "exact", "statement": "Order does not matter."}


def identity_of(relations: list[dict], rid: str = "orders.split", style: str = "block") -> str:
    doc = {"relations": relations}
    text = yaml.safe_dump(doc, default_flow_style=(style == "flow"), sort_keys=(style == "sorted"))
    return load_catalog(text, "catalog.yaml").get(rid).identity()


def test_reordering_the_catalog_keeps_identity():
    assert identity_of([BASE, OTHER]) == identity_of([OTHER, BASE])


@given(st.randoms(use_true_random=False), st.sampled_from(["block", "flow", "sorted"]))
@settings(max_examples=25, deadline=None)
def test_reformatting_keeps_identity(rng: random.Random, style: str):
    keys = list(BASE)
    rng.shuffle(keys)
    shuffled = {k: BASE[k] for k in keys}
    assert identity_of([shuffled], style=style) == identity_of([BASE])


def test_comments_and_json_form_keep_identity():
    import json

    as_json = json.dumps({"relations": [BASE]}, indent=4)
    commented = "# reviewers' note\n" + yaml.safe_dump({"relations": [BASE]}).replace(
        "kind:", "# why split: see DATA-7\n  kind:", 1)
    expected = identity_of([BASE])
    assert load_catalog(as_json, "c.json").get("orders.split").identity() == expected
    assert load_catalog(commented, "c.yaml").get("orders.split").identity() == expected


@pytest.mark.parametrize("field", ["statement", "owner"])
def test_prose_and_ownership_are_not_semantics(field):
    assert identity_of([dict(BASE, **{field: "something else entirely"})]) == identity_of([BASE])


@pytest.mark.parametrize(("field", "value"), [
    ("kind", "permutation"), ("subject", "agg:summarize_fast"), ("input", {"lease": "orders_v2"}),
    ("compare", "tolerance"), ("quantum", 1e-3), ("params", {"splits": 4, "seed": 7}),
    ("merge", "oracle.adapters:merge_v2"),
])
def test_semantic_fields_change_identity(field, value):
    changed = dict(BASE, **{field: value})
    if field == "kind":
        changed.pop("merge")
        changed["params"] = {"seed": 7}
    assert identity_of([changed]) != identity_of([BASE])


def _repo(tmp_path: Path) -> Path:
    catalog = textwrap.dedent("""\
        owners:
          "src/**": [rows.split]
        relations:
          - id: rows.split
            kind: split_merge
            subject: agg:summarize
            merge: oracle.adapters:merge
            input: {seeds: oracle/seeds/rows.jsonl}
            compare: exact
            statement: parts merged equal the whole
        """)
    return reviewed_repo(tmp_path / "repo", {
        "src/agg.py": "def summarize(rows):\n    return list(rows)\n",
        "oracle/adapters.py": "def merge(a, b):\n    return a + b\n",
        "oracle/seeds/rows.jsonl": "[1, 2, 3]\n", "oracle/catalog.yaml": catalog})


def _changed(repo: Path) -> set[str]:
    review = load_review(repo, "main", "HEAD", TODAY)
    try:
        return set(review.changed_identity)
    finally:
        review.close()


def test_changing_a_named_callable_in_the_protected_tree_changes_identity(tmp_path):
    repo = _repo(tmp_path)
    (repo / "src" / "agg.py").write_text("def summarize(rows):\n    return sorted(rows)\n")
    git(repo, "commit", "-q", "-am", "subject change only")
    assert _changed(repo) == set()  # the subject is code under test, not part of the relation
    (repo / "oracle" / "adapters.py").write_text("def merge(a, b):\n    return a + b + []\n")
    git(repo, "commit", "-q", "-am", "adapter change")
    assert _changed(repo) == {"rows.split"}


def test_a_renamed_hand_written_test_keeps_its_relation_id(tmp_path):
    """Identity hangs on the relation id and definition, never on a test's name."""
    repo = _repo(tmp_path)
    tests = repo / "oracle" / "test_rows.py"
    tests.write_text('import pytest\n\n@pytest.mark.relation("rows.split")\ndef test_old_name():\n    pass\n')
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "hand-written relation test")
    tests.write_text('import pytest\n\n@pytest.mark.relation("rows.split")\ndef test_new_name():\n    pass\n')
    git(repo, "commit", "-q", "-am", "rename the test")
    assert _changed(repo) == set()


def test_a_subject_at_the_repository_root_is_code_under_test_not_identity(tmp_path):
    """The subject module sits where the identity's callable lookup also looks (the root):
    only a protected file may count, or every code change would read as a changed relation."""
    repo = _repo(tmp_path)
    (repo / "agg.py").write_text("def summarize(rows):\n    return list(rows)\n")
    git(repo, "add", "agg.py")
    git(repo, "commit", "-q", "-m", "a root-level subject module")
    (repo / "agg.py").write_text("def summarize(rows):\n    return sorted(rows)\n")
    git(repo, "commit", "-q", "-am", "subject change only")
    assert _changed(repo) == set()
