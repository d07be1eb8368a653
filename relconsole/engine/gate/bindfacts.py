"""What ``relconsole bind`` needs of an oracle commit, kept between processes (issue 17).

``bind`` prints each touched path's owners (SPEC §3) and exits 5 on a bad oracle file, 2 on a
gap (§8). Everything it reads of the oracle comes from one commit: the layout's protected
patterns, the catalog's owner map and relation ids, and whether any oracle file is bad. A
full ``load_review`` finds them by importing the whole engine (YAML, JSON Schema) and reading,
exporting and hashing every oracle file: most of a command-line start. After a load of an
oracle commit with no bad file, ``save`` keeps those facts in a ``ParseCache`` of kind
``bindfacts`` under the git directory, keyed by the oracle commit's sha (which names every
byte the load read) and the base ref's name and oracle mode (which messages name), with a
fingerprint of the code of that load; ``bind_from_facts`` answers a later ``bind`` of the
same oracle commit from them: the same rows, through the same ``owners.bind`` and
``importmap.apply``, the same exit code.

It answers None, and the caller makes the full load, whenever the facts cannot decide alone:
no entry (a new oracle commit, other code, a corrupt or foreign cache file), a ref git
cannot resolve in one plain call or a bad ``RELCONSOLE_TODAY`` (the full load reports both),
or an import record that lacks a relation the full load might run (``importrun.ensure``
runs every relation missing from it but those whose lease or seeds fail closed; which ones
do is kept with the facts for the day of the load, and used on that day only).
A load that found a bad file keeps nothing: bad files are read and reported every time.
The trust model is ``parsecache``'s: the git directory is not part of any tree a patch
carries, and a patch cannot forge an entry for another commit's sha.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from types import SimpleNamespace

from relconsole.engine.repo import gitio
from relconsole.engine.repo.touched import start_touched
from relconsole.engine.oracle.parsecache import ParseCache, current_fingerprint

KIND = "bindfacts"
MAX_ENTRIES = 64  # oracle commits remembered (each: one owner map)
_ENGINE = Path(__file__).resolve().parents[1]  # relconsole/engine
# the code of the load whose facts are kept, beyond what parsecache's fingerprint covers
_LOAD_CODE = ("gate/review.py", "gate/oracleload.py", "gate/seeds.py", "gate/patchfacts.py",
              "gate/quarantineload.py", "oracle/jsonnumbers.py", "oracle/textedit.py", "decision.py",
              "oracle/candidates.py", "oracle/candidatecheck.py", "oracle/candidatefile.py",
              "oracle/candidaterules.py", "oracle/candidateids.py", "oracle/skeleton.py", "oracle/seedrows.py",
              "repo/gitio.py", "repo/baseref.py", "repo/touched.py", "repo/treeview.py", "repo/blobwrite.py",
              "repo/workspace.py", "repo/owners.py", "gate/bindfacts.py", "oracle/hashcache.py", "gate/importmap.py",
              "gate/exercised.py", "gate/calltime.py", "gate/flags/flaglevels.py", "gate/exercisedrecord.py", "gate/diffview.py")


def fingerprint() -> str:
    """sha256 over ``parsecache.current_fingerprint()`` and the bytes of the other engine
    modules a review load runs (``_LOAD_CODE``)."""
    digest = hashlib.sha256(current_fingerprint().encode())
    for name in _LOAD_CODE:
        try:
            data = (_ENGINE / name).read_bytes()
        except OSError:
            data = b"\0absent"
        digest.update(f"{name}\0{len(data)}\0".encode() + data)
    return digest.hexdigest()


def _today_from_env() -> str | None:
    """``review.today_from_env()`` as YYYY-MM-DD, or None where it would raise (a
    ``RELCONSOLE_TODAY`` that is not a date)."""
    import datetime as dt
    value = os.environ.get("RELCONSOLE_TODAY")
    if not value:
        return dt.date.today().isoformat()
    try:
        return dt.date.fromisoformat(value).isoformat()
    except ValueError:
        return None


def _cache(git_dir: str) -> ParseCache:
    return ParseCache(git_dir, KIND, fingerprint(), MAX_ENTRIES)


def _key(oracle_sha: str, base_ref: str, oracle_from: str) -> tuple[str, str]:
    return oracle_sha, f"{oracle_from}\0{base_ref}"


def save(review) -> None:
    """Keep the bind facts of a just-loaded ``review`` (``load_review``, before
    ``importrun.ensure``) when it found no bad file. A failed write is dropped."""
    if review.errors or review.catalog is None:
        return
    facts = {"protected": tuple(review.layout.protected), "unexercised": review.layout.unexercised,
             "owners": [(pattern, list(ids)) for pattern, ids in review.catalog.owners],
             "relations": [r.id for r in review.relations],
             # relations importrun.ensure never runs (their lease or seeds fail closed) on this day
             "blocked_on": (review.today.isoformat(), [r.id for r in review.relations if review.blocked_reason(r)])}
    cache = _cache(review.repo.git_dir)
    cache.entries[_key(review.oracle_sha, review.base_ref, review.oracle_from)] = facts
    cache._dirty = True
    cache.flush()


def _valid(facts) -> bool:
    """Whether a kept entry has the shape ``save`` writes (anything else is not trusted)."""
    return (isinstance(facts, dict) and isinstance(facts.get("protected"), tuple)
            and all(isinstance(p, str) for p in facts["protected"])
            and isinstance(facts.get("owners"), list)
            and all(isinstance(o, tuple) and len(o) == 2 and isinstance(o[1], list) for o in facts["owners"])
            and facts.get("unexercised") in ("gap", "warn")
            and isinstance(facts.get("relations"), list) and all(isinstance(r, str) for r in facts["relations"])
            and isinstance(facts.get("blocked_on"), tuple) and len(facts["blocked_on"]) == 2
            and isinstance(facts["blocked_on"][0], str) and isinstance(facts["blocked_on"][1], list))


def bind_from_facts(repo_path: str, base_ref: str | None, head_ref: str, today, oracle_from: str):
    """The ``bind`` answer from kept facts: a namespace with ``base_ref``, ``merge_base``,
    ``head_sha``, ``repo``, ``oracle_sha``, ``oracle_from``, ``root``, ``layout`` (``unexercised``,
    ``protected``), ``bindings`` (as ``load_review`` plus ``importrun.ensure`` leave them) and
    ``errors`` ([]), or None when the facts cannot decide alone (see the module docstring).
    Raises UsageError and GitError as ``load_review`` does for the same repository."""
    day = today.isoformat() if today is not None else _today_from_env()
    if day is None:
        return None  # the full load says what is wrong with RELCONSOLE_TODAY
    if base_ref:
        repo, (head_sha, base_tip, known_base) = gitio.open_with_refs(repo_path, (head_ref, base_ref),
                                                                      with_merge_base=True)
    else:  # the same order as the full load (baseref), which says what is wrong when it fails
        repo, (head_sha,) = gitio.open_with_refs(repo_path, (head_ref,))
        if head_sha is None:
            return None
        from relconsole.engine.repo.baseref import resolve_base
        base_ref, base_tip = resolve_base(repo, None, head_sha)
        known_base = None
    if head_sha is None or base_tip is None:
        return None
    from_head = oracle_from.upper() == "HEAD"
    oracle_sha = head_sha if from_head else base_tip
    mode = "HEAD" if from_head else "base"
    facts = _cache(repo.git_dir).entries.get(_key(oracle_sha, base_ref, mode))
    if not _valid(facts):
        return None
    merge_base = known_base or gitio.merge_base(repo, base_tip, head_sha)  # merge_base says why there is none
    diff = start_touched(repo, merge_base, head_sha)
    try:  # while git diffs: the imports and the owner index
        from relconsole.engine.gate import importmap
        from relconsole.engine.repo.ownerindex import OwnerIndex
        from relconsole.engine.repo.owners import bind
        index = OwnerIndex(facts["owners"])
        touched = diff.result()
    except BaseException:
        diff.cancel()
        raise

    relations = facts["relations"]
    known = frozenset(relations)
    review = SimpleNamespace(repo=repo, merge_base=merge_base, oracle_sha=oracle_sha,
                             catalog=SimpleNamespace(get=lambda rid: rid if rid in known else None),
                             bindings=bind(facts["owners"], touched, facts["protected"], index))
    importmap.apply(review)
    if importmap.needed(review):
        recorded = importmap.load(review)
        blocked_day, blocked = facts["blocked_on"]
        unrecorded = [rid for rid in relations if rid not in recorded]
        if unrecorded and (blocked_day != day or not set(unrecorded) <= set(blocked)):
            return None  # importrun.ensure may run relations on the base: the full load does it
    return SimpleNamespace(base_ref=base_ref, merge_base=merge_base, head_sha=head_sha,
                           bindings=review.bindings, errors=[], repo=repo, oracle_sha=oracle_sha,
                           layout=SimpleNamespace(unexercised=facts["unexercised"], protected=facts["protected"]),
                           root=Path(repo.working_tree_dir or "."), oracle_from=mode)


def enabled() -> bool:
    """Whether ``bind`` may answer from kept facts (``RELCONSOLE_NO_BIND_FACTS`` unset)."""
    return not os.environ.get("RELCONSOLE_NO_BIND_FACTS")
