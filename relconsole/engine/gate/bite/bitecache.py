"""Bite's cache (issue 3 item 6, issue 16): ``<git_dir>/relconsole/bite.json``, keyed by the
relation identity (§3), its input's sha256, the way targets are chosen, and the bytes of
every file read to find the mutated functions and of every file mutated, so
``cached_verdict`` answers for HEAD's files without running anything.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Mapping

from relconsole.engine.relations import mutations, operators
from relconsole.engine.oracle.catalog import Relation
from relconsole.engine.repo.treeview import TreeView
from relconsole.engine.repo.owners import protected
from relconsole.engine.gate.review import Review
from relconsole.engine.gate.bite.bitereport import VERDICTS, BiteReport, BiteVerdict


CACHE_FILE = ("relconsole", "bite.json")


CACHE_ENTRIES = 500


# how bite chooses what to mutate; part of the cache key, so a cached verdict reached by an
# older choice of targets is not served
TARGETING = "tiers-2"


def _head_bytes(review: Review, path: str, view: TreeView | None = None) -> bytes | None:
    """The file as a run tree holds it: the oracle's for a protected path, else HEAD's
    (``view``: a TreeView of HEAD to reuse)."""
    if protected(review.layout.protected, path):
        oracle = review.oracle_dir / path
        return oracle.read_bytes() if oracle.is_file() else None
    return (view or TreeView(review.repo, review.head_sha)).read_bytes(path)


def _input_pin(review: Review, relation: Relation) -> str:
    if relation.lease_id:
        status = review.lease(relation.lease_id)
        path = status.lease.path if status and status.lease else None
    else:
        path = relation.seeds_path
    file = review.oracle_dir / path if path else None
    return hashlib.sha256(file.read_bytes()).hexdigest() if file and file.is_file() else ""


def cache_key(review: Review, relation: Relation, files: Mapping[str, bytes | None],
              mutated: list[str] | tuple[str, ...] = ()) -> str:
    """sha256 over the relation identity (§3), the input, the operator set and the way
    targets are chosen (``TARGETING``), the bytes of ``files`` (tree path -> bytes, None for
    absent: every file read to find what to mutate, and every file mutated, so a change to
    any library file an adapter reaches changes the key, issue 16) and the names of the
    ``mutated`` files."""
    digests = [f"{path}={hashlib.sha256(data).hexdigest() if data is not None else '-'}"
               for path, data in sorted(files.items())]
    parts = [relation.id, review.identities.get(relation.id, ""), _input_pin(review, relation),
             ",".join(operators.OPERATORS), str(mutations.DEFAULT_LIMIT), TARGETING, *digests,
             "mutated:" + ",".join(sorted(mutated))]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def key_files(review: Review, paths) -> dict[str, bytes | None]:
    """The bytes the key is made of, as a run tree of HEAD holds them (``_head_bytes``): the
    same function for ``bite`` and ``cached_verdict``, so the two always agree."""
    view = TreeView(review.repo, review.head_sha)
    return {path: _head_bytes(review, path, view) for path in sorted(set(paths))}


def _cache_path(review: Review) -> Path:
    return Path(review.repo.git_dir).joinpath(*CACHE_FILE)


def _read_cache(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def store_report(review: Review, report: BiteReport, files: list[str], mutated: list[str]) -> None:
    """Keep ``report`` in the bite cache under its key (the newest ``CACHE_ENTRIES`` stay), with
    the ``files`` its key hashed and the ``mutated`` paths; an atomic write."""
    path = _cache_path(review)
    data = _read_cache(path)
    data.pop(report.key, None)
    summary = report.summary
    data[report.key] = {"relation_id": report.relation_id, "bites": report.bites, "verdict": summary.verdict,
                        "caught": summary.caught, "crashed": summary.crashed, "total": summary.total,
                        "drawn_only": summary.drawn_only,
                        "head": review.head_sha, "files": sorted(files), "paths": sorted(mutated)}
    data = dict(list(data.items())[-CACHE_ENTRIES:])
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_suffix(f".{os.getpid()}.tmp")
    temp.write_text(json.dumps(data, indent=1), encoding="utf-8")
    os.replace(temp, path)  # readers never see half a file


def _entry_verdict(entry: dict) -> BiteVerdict | None:
    """The verdict a cache entry holds, None when it holds none readable. An entry without
    ``drawn_only`` was made before mutants were judged on drawn inputs (issue 37): its counts
    are not the ones bite finds now, so it answers nothing."""
    counts = [entry.get(name) for name in ("caught", "crashed", "total", "drawn_only")]
    if entry.get("verdict") not in VERDICTS or not all(isinstance(n, int) and n >= 0 for n in counts):
        return None
    return BiteVerdict(entry["verdict"], *counts)


def cached_verdict(review: Review, relation_id: str) -> BiteVerdict | None:
    """The cached verdict of a relation (word and counts, as ``relconsole bite`` last
    printed it) for HEAD's files, or None when not known.

    An entry answers when the files it was keyed on (``files``: the subject's, the library's
    an adapter reaches, the ones mutated) still hold the same bytes in a run tree of HEAD, the
    newest such entry first. Never runs anything and never raises for an unknown relation (None).
    """
    relation = review.catalog.get(relation_id) if review.catalog else None
    if relation is None:
        return None
    read: dict[str, bytes | None] = {}
    view = None
    for key, entry in reversed(list(_read_cache(_cache_path(review)).items())):
        if not (isinstance(entry, dict) and entry.get("relation_id") == relation.id
                and isinstance(entry.get("files"), list) and isinstance(entry.get("paths"), list)):
            continue
        verdict = _entry_verdict(entry)
        if verdict is None:
            continue
        files = [str(f) for f in entry["files"]]
        view = view or TreeView(review.repo, review.head_sha)
        for path in files:
            if path not in read:
                read[path] = _head_bytes(review, path, view)
        if cache_key(review, relation, {f: read[f] for f in files}, [str(p) for p in entry["paths"]]) == key:
            return verdict
    return None


def cached_bite(review: Review, relation_id: str) -> bool | None:
    """The cached ``bites`` of a relation for HEAD's files (``cached_verdict``): True when it
    bites, False when it does not or only by crashes, None when not known."""
    verdict = cached_verdict(review, relation_id)
    return None if verdict is None else verdict.bites
