"""Relations and leases over the real corpora in ../shared/data (the ``shared`` group).

Deselected by default (the README command passes on a fresh clone without ../shared);
``.ci/run`` runs this group with ``-m shared`` and fails when it cannot.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import re
import shutil
import textwrap
from pathlib import Path

import pytest

from bench.flights import IDS, make_repo
from relconsole.engine.oracle.leases import lease_status, parse_lease, sha256_file
from relconsole.engine.gate.review import load_review
from relconsole.engine.gate.reviewrun import run_review
from bench.gitrepo import git
from tests.conftest import TODAY

pytestmark = pytest.mark.shared

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("RELCONSOLE_SHARED", REPO_ROOT.parent / "shared")) / "data"


@pytest.fixture(scope="module")
def shared() -> Path:
    if not SHARED.is_dir():
        pytest.fail(f"{SHARED} is missing: the shared group needs the real corpora")
    return SHARED


def published_digests(shared: Path) -> dict[str, str]:
    """file -> sha256 as SOURCES.md lists them."""
    text = (shared / "SOURCES.md").read_text()
    return {name: digest for digest, name in re.findall(r"^([0-9a-f]{64})\s+(\S+)$", text, re.M)}


def test_sample_corpora_are_unchanged_copies(shared: Path):
    digests = published_digests(shared)
    for name in ("penguins.csv", "seattle-weather.csv", "stocks.csv"):
        copy = REPO_ROOT / "sample_repo" / "oracle" / "data" / name
        assert sha256_file(copy) == sha256_file(shared / name) == digests[name]


def test_sample_leases_pin_the_published_digests(shared: Path):
    digests = published_digests(shared)
    leases = REPO_ROOT / "sample_repo" / "oracle" / "leases"
    for manifest in leases.glob("*.yaml"):
        lease = parse_lease(manifest.read_text(), str(manifest))
        assert lease.sha256 == digests[Path(lease.path).name]


def test_streamed_hash_matches_hashlib_on_flights(shared: Path):
    corpus = shared / "flights.csv.gz"
    assert sha256_file(corpus) == hashlib.sha256(corpus.read_bytes()).hexdigest()
    assert sha256_file(corpus) == published_digests(shared)["flights.csv.gz"]


def _flights(tmp_path: Path, shared: Path) -> Path:
    return make_repo(tmp_path / "flights", shared / "flights.csv.gz", shuffles=2,
                     expires=(TODAY + dt.timedelta(days=90)).isoformat())


@pytest.mark.slow
def test_eight_flights_relations_hold_on_336k_rows(tmp_path: Path, shared: Path):
    repo = _flights(tmp_path, shared)
    review = load_review(repo, "main", "HEAD", TODAY)
    try:
        assert review.errors == [] and review.lease("flights").state == "ok"
        results = run_review(review)
        assert {r.relation_id for r in results} == set(IDS)
        assert all(r.outcome == "held" for r in results), [(r.relation_id, r.summary) for r in results]
    finally:
        review.close()


@pytest.mark.slow
def test_an_early_return_on_real_flights_is_caught(tmp_path: Path, shared: Path):
    """Summarising only the first rows seen: order and split relations must miss."""
    repo = _flights(tmp_path, shared)
    source = (repo / "src" / "summary.py").read_text()
    (repo / "src" / "summary.py").write_text(source.replace("    for row in rows:", "    for row in rows[:5000]:"))
    git(repo, "commit", "-q", "-am", "patch: look at the first rows only")
    review = load_review(repo, "main", "HEAD", TODAY)
    try:
        ids = ["flights.carrier_order", "flights.dest_split", "flights.carrier_tailnum"]
        results = {r.relation_id: r for r in run_review(review, ids)}
    finally:
        review.close()
    assert results["flights.carrier_order"].outcome == "missed"
    assert results["flights.dest_split"].outcome == "missed"
    assert results["flights.carrier_tailnum"].outcome == "held"  # dropping a column is still harmless


def test_drifted_copy_of_flights_is_refused(tmp_path: Path, shared: Path):
    repo = tmp_path / "corpus"
    repo.mkdir()
    corpus = repo / "flights.csv.gz"
    shutil.copy(shared / "flights.csv.gz", corpus)
    lease = parse_lease(textwrap.dedent(f"""\
        id: flights
        path: flights.csv.gz
        sha256: "{sha256_file(corpus)}"
        expires: {(TODAY + dt.timedelta(days=60)).isoformat()}
        owner: ci@relconsole.invalid
        allowed_relations: []
        """), "flights.yaml")
    assert lease_status(lease, repo, TODAY).state == "ok"
    data = bytearray(corpus.read_bytes())
    data[-1] ^= 0x01
    corpus.write_bytes(bytes(data))
    assert lease_status(lease, repo, TODAY).state == "drifted"
