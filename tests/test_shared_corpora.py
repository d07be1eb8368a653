"""Relations and leases over the real corpora in ../shared/data (the ``shared`` group).

Deselected by default (the README command passes on a fresh clone without ../shared);
``.ci/run`` runs this group with ``-m shared`` and fails when it cannot.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from relconsole.engine.leases import lease_status, parse_lease, sha256_file
from relconsole.engine.review import load_review, run_review
from tests.conftest import TODAY, git

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


SUBJECT = '''
import math
from collections import defaultdict


def by_carrier(rows):
    """Per carrier: flights, distance sum, arr_delay mean over known values (NA skipped)."""
    distance, delays, missing, count = defaultdict(list), defaultdict(list), defaultdict(int), defaultdict(int)
    for row in rows:
        carrier = row["carrier"]
        count[carrier] += 1
        distance[carrier].append(float(row["distance"]))
        if row["arr_delay"] in ("NA", ""):
            missing[carrier] += 1
        else:
            delays[carrier].append(float(row["arr_delay"]))
    return {c: {"flights": count[c], "distance": math.fsum(distance[c]),
                "arr_delay_mean": math.fsum(delays[c]) / len(delays[c]) if delays[c] else None,
                "arr_delay_missing": missing[c]} for c in count}
'''


def _flights_repo(tmp_path: Path, shared: Path) -> Path:
    repo = tmp_path / "flights"
    (repo / "oracle" / "data").mkdir(parents=True)
    (repo / "oracle" / "leases").mkdir()
    (repo / "src").mkdir()
    shutil.copy(shared / "flights.csv.gz", repo / "oracle" / "data" / "flights.csv.gz")
    digest = sha256_file(repo / "oracle" / "data" / "flights.csv.gz")
    (repo / "src" / "carriers.py").write_text(SUBJECT)
    (repo / "oracle" / "catalog.yaml").write_text(textwrap.dedent("""\
        owners:
          "src/**": [flights.carrier_order_invariant]
        relations:
          - id: flights.carrier_order_invariant
            kind: permutation
            subject: carriers:by_carrier
            input: {lease: flights}
            compare: exact
            params: {shuffles: 2, seed: 3}
            statement: Shuffling the flights leaves every carrier's totals and mean delay unchanged.
        """))
    (repo / "oracle" / "leases" / "flights.yaml").write_text(textwrap.dedent(f"""\
        id: flights
        path: oracle/data/flights.csv.gz
        sha256: "{digest}"
        expires: {TODAY.replace(year=TODAY.year + 1).isoformat()}
        owner: ci@relconsole.invalid
        allowed_relations: [flights.carrier_order_invariant]
        """))
    git(repo.parent, "init", "-q", "-b", "main", str(repo))
    git(repo, "config", "user.name", "ci")
    git(repo, "config", "user.email", "ci@relconsole.invalid")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    git(repo, "checkout", "-q", "-b", "patch")
    (repo / "src" / "carriers.py").write_text(SUBJECT.replace("math.fsum(distance[c])", "sum(distance[c])"))
    git(repo, "commit", "-q", "-am", "patch: plain sum")
    return repo


def test_order_invariance_on_336k_flights(tmp_path: Path, shared: Path):
    repo = _flights_repo(tmp_path, shared)
    review = load_review(repo, "main", "HEAD", TODAY)
    try:
        assert review.errors == []
        status = review.lease("flights")
        assert status.state == "ok"
        [result] = run_review(review)
        # distances are whole miles: even a plain float sum is exact, so the relation holds
        assert result.outcome == "held", result.summary
    finally:
        review.close()


def test_drifted_copy_of_flights_is_refused(tmp_path: Path, shared: Path):
    repo = _flights_repo(tmp_path, shared)
    lease = parse_lease((repo / "oracle/leases/flights.yaml").read_text(), "flights.yaml")
    corpus = repo / "oracle/data/flights.csv.gz"
    data = bytearray(corpus.read_bytes())
    data[-1] ^= 0x01
    corpus.write_bytes(bytes(data))
    assert lease_status(lease, repo, TODAY).state == "drifted"
    subprocess.run(["git", "checkout", "--", "."], cwd=repo, check=True)
    assert lease_status(lease, repo, TODAY).state == "ok"
