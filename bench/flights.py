"""A reviewed repository over the real flights corpus (336,776 rows), for benchmarks and
the ``shared`` test group: eight relations on per-carrier and per-destination summaries.

``make_repo(dest, corpus, shuffles)`` writes it as a git repository (branch ``main`` with
the oracle, branch ``patch`` touching the subject) and returns its path.
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import yaml

from bench.gitrepo import reviewed_repo

SUBJECT = '''\
"""Per-carrier and per-destination flight summaries (NA arr_delay counted, not averaged)."""
import math
from collections import defaultdict


def _summary(rows, key):
    distance, delays, missing, count = defaultdict(list), defaultdict(list), defaultdict(int), defaultdict(int)
    for row in rows:
        group = row[key]
        count[group] += 1
        distance[group].append(float(row["distance"]))
        if row["arr_delay"] in ("NA", ""):
            missing[group] += 1
        else:
            delays[group].append(float(row["arr_delay"]))
    out = {}
    for group in count:
        delay_sum = math.fsum(delays[group])
        out[group] = {"flights": count[group], "distance": math.fsum(distance[group]),
                      "arr_delay_sum": delay_sum, "arr_delay_n": len(delays[group]),
                      "arr_delay_mean": delay_sum / len(delays[group]) if delays[group] else None,
                      "arr_delay_missing": missing[group]}
    return out


def by_carrier(rows):
    return _summary(rows, "carrier")


def by_dest(rows):
    return _summary(rows, "dest")


def dumps(rows):
    import json
    return json.dumps(rows, separators=(",", ":"))


def loads(text):
    import json
    return json.loads(text)
'''

ADAPTERS = '''\
"""Adapters kept in the protected tree: the merge of two summaries, an irrelevant-column transform."""


def merge_summaries(a, b):
    out = {k: dict(v) for k, v in a.items()}
    for group, part in b.items():
        if group not in out:
            out[group] = dict(part)
            continue
        mine = out[group]
        for field in ("flights", "distance", "arr_delay_sum", "arr_delay_n", "arr_delay_missing"):
            mine[field] += part[field]
        mine["arr_delay_mean"] = mine["arr_delay_sum"] / mine["arr_delay_n"] if mine["arr_delay_n"] else None
    return out


def drop_tailnum(rows):
    return [{k: v for k, v in row.items() if k != "tailnum"} for row in rows]
'''

CANON = {"compare": "canon", "quantum": 1e-6}
RELATIONS = [
    {"id": "flights.carrier_order", "kind": "permutation", "subject": "summary:by_carrier",
     "compare": "exact", "params": {"shuffles": 6, "seed": 3}},
    {"id": "flights.dest_order", "kind": "permutation", "subject": "summary:by_dest",
     "compare": "exact", "params": {"shuffles": 6, "seed": 5}},
    {"id": "flights.carrier_split", "kind": "split_merge", "subject": "summary:by_carrier", **CANON,
     "merge": "oracle.adapters:merge_summaries", "params": {"splits": 2}},
    {"id": "flights.dest_split", "kind": "split_merge", "subject": "summary:by_dest", **CANON,
     "merge": "oracle.adapters:merge_summaries", "params": {"splits": 2}},
    {"id": "flights.carrier_tailnum", "kind": "invariance", "subject": "summary:by_carrier",
     "compare": "exact", "transform": "oracle.adapters:drop_tailnum"},
    {"id": "flights.dest_tailnum", "kind": "invariance", "subject": "summary:by_dest",
     "compare": "exact", "transform": "oracle.adapters:drop_tailnum"},
    {"id": "flights.carrier_distance_up", "kind": "monotonic", "subject": "summary:by_carrier",
     "compare": "exact", "params": {"field": "distance", "step": 100}},
    {"id": "flights.codec", "kind": "roundtrip", "subject": "summary:dumps", "inverse": "summary:loads",
     "compare": "exact"},
]
IDS = [r["id"] for r in RELATIONS]


def catalog(shuffles: int) -> str:
    """The catalog text: every relation reads the flights lease and owns src/summary.py."""
    relations = []
    for relation in RELATIONS:
        row = dict(relation, input={"lease": "flights"}, statement=f"{relation['kind']} over the flights corpus.")
        if relation["kind"] == "permutation":
            row["params"] = dict(relation["params"], shuffles=shuffles)
        relations.append(row)
    return yaml.safe_dump({"owners": {"src/summary.py": IDS}, "relations": relations}, sort_keys=False)


def make_repo(dest: Path, corpus: Path, shuffles: int = 6, expires: str = "2099-12-31") -> Path:
    """Write the flights repository into ``dest`` (must not exist); returns ``dest``."""
    (dest / "oracle" / "data").mkdir(parents=True)
    shutil.copy(corpus, dest / "oracle" / "data" / "flights.csv.gz")
    digest = hashlib.sha256((dest / "oracle" / "data" / "flights.csv.gz").read_bytes()).hexdigest()
    lease = (f'id: flights\npath: oracle/data/flights.csv.gz\nsha256: "{digest}"\nexpires: {expires}\n'
             f"owner: bench@relconsole.invalid\nallowed_relations: [{', '.join(IDS)}]\n")
    base = {"src/summary.py": SUBJECT, "oracle/adapters.py": ADAPTERS, "oracle/catalog.yaml": catalog(shuffles),
            "oracle/leases/flights.yaml": lease}
    return reviewed_repo(dest, base, {"src/summary.py": SUBJECT + "\n# reviewed\n"},
                         identity=("bench", "bench@relconsole.invalid"))
