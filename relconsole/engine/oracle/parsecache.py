"""Parsed oracle files kept between processes, keyed by git blob id (SPEC §2, §4; issue 17).

A review reads the catalog (10,000 owner patterns, 5,000 relations) and every lease manifest
from a commit on each load; YAML parsing and the schema checks were half of a console's load.
A committed file's parse depends only on its bytes (its blob id names them), the path named
in its messages, and relconsole's own code (parser, schemas, loaders): ``ParseCache`` keeps
the result of a loader for a (blob id, path) in ``<git dir>/relconsole/parsed-<kind>.pickle``
and hands back that result, not the file's, on the next load.

Why the cache cannot hand back a stale or a forged parse:

* A changed file is another blob id: its key differs, so a file edited, re-pinned or swapped
  is parsed afresh. Nothing is keyed by path or by time.
* The cache file carries a fingerprint of relconsole's version and of the bytes of every
  module and schema file a parse depends on (``code_fingerprint``); a file made by other
  code (an upgrade, another helper's schema change, a checkout of another branch of
  relconsole) is dropped whole, never partly used.
* Only successful parses are kept: a bad file is parsed (and reported) every time. The
  ``candidate`` kind is the exception that proves the rule: its result *is* a list of
  verdicts, failed ones included (``candidatecheck.read_candidate``, the rules that read a
  quarantined file alone); each entry also carries the sha256 of the text it judged and is
  used only when that matches the text the review just read and its shape is one
  ``read_candidate`` makes (``CandidateRead.judges``), so an entry planted under another
  file's blob id, or damaged, is judged afresh. The rules that read the catalog or the
  oracle's inputs are never kept.
* The file is written atomically (a temporary file, then ``os.replace``); one that does not
  unpickle, or holds anything but the expected shape, is ignored and rewritten.

How one would cheat it, and why that fails: a reviewed patch cannot write the cache, because
it lives in the reviewer's git directory, which is not part of any tree a commit carries (a
patch adding ``.git/relconsole/...`` is refused by git itself), and the review never checks
the patch out into the reviewer's repository. Planting an entry for the blob id of an
honest catalog while committing a hostile one does not work either: the hostile file has its
own blob id, whose entry is either absent (parsed afresh) or the parse of those same bytes.
An entry written by an earlier review of another branch with the same blob id is the parse of
the same bytes, by the same code: the same answer. Who can write the git directory can
already rewrite the refs and objects under review, so pickle (which runs code when loaded)
trusts nobody the repository did not already trust; a shared or world-writable git directory
is outside that model, as it is for git's own hooks.
"""

from __future__ import annotations

import hashlib
import pickle
from pathlib import Path
from functools import lru_cache
TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (2 ms of a bind)
if TYPE_CHECKING:
    from typing import Any, Callable

import relconsole

CACHE_VERSION = 1
MAX_ENTRIES = 4096  # per kind; beyond it the oldest entries are dropped
_ENGINE = Path(__file__).resolve().parents[1]  # relconsole/engine
_DEPENDS_ON = ("oracle/catalog.py", "oracle/leases.py", "oracle/rehash.py", "oracle/freezes.py", "oracle/schemacheck.py", "oracle/yamlload.py", "errors.py", "repo/config.py", "relations/canon.py", "gate/flags/probescan.py", "gate/flags/pyscan.py", "oracle/candidates.py",
               "oracle/candidatecheck.py", "oracle/candidatefile.py", "oracle/candidaterules.py",
               "oracle/candidateids.py", "oracle/skeleton.py", "oracle/seedrows.py",
               "gate/flags/probetables.py", "gate/flags/probecalls.py", "gate/flags/probeexprs.py", "gate/flags/probestate.py",
               "gate/flags/pysource.py", "gate/flags/goldenscan.py")


def code_fingerprint() -> str:
    """sha256 over relconsole's version and the bytes of the engine modules a parse depends
    on and of every file under ``relconsole/schemas/`` (when there is one) but Python's
    ``__pycache__`` (rewritten whenever an interpreter recompiles the package: it dropped
    every cache without a change of code)."""
    digest = hashlib.sha256(f"{relconsole.__version__}\0{CACHE_VERSION}\0".encode())
    files = [_ENGINE / name for name in _DEPENDS_ON]
    schemas = _ENGINE.parent / "schemas"
    if schemas.is_dir():
        files += sorted(p for p in schemas.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    for path in files:
        try:
            data = path.read_bytes()
        except OSError:
            data = b"\0absent"
        digest.update(f"{path.name}\0{len(data)}\0".encode() + data)
    return digest.hexdigest()


@lru_cache(maxsize=1)
def current_fingerprint() -> str:
    """``code_fingerprint()`` of this process's code, computed once."""
    return code_fingerprint()


class ParseCache:
    """Results of one loader (``kind``: ``catalog``, ``lease``, ``probes``, ``candidate``) by (blob id or
    content digest, source path), read from the git directory on creation, written by
    ``flush`` when it learnt something (at most ``max_entries``, newest kept). An unreadable,
    corrupt or foreign cache file is ignored; a failed write is dropped."""

    def __init__(self, git_dir: str | Path, kind: str, fingerprint: str | None = None,
                 max_entries: int = MAX_ENTRIES):
        self.file = Path(git_dir) / "relconsole" / f"parsed-{kind}.pickle"
        self.fingerprint = fingerprint or code_fingerprint()
        self.max_entries = max_entries
        self.entries: dict[tuple[str, str], Any] = self._read()
        self._dirty = False

    def _read(self) -> dict[tuple[str, str], Any]:
        try:
            with open(self.file, "rb") as handle:
                stored = pickle.load(handle)
        except Exception:  # absent, unreadable, truncated or not a pickle: start empty
            return {}
        if (not isinstance(stored, dict) or stored.get("fingerprint") != self.fingerprint
                or not isinstance(stored.get("entries"), dict)):
            return {}
        return {key: value for key, value in stored["entries"].items()
                if isinstance(key, tuple) and len(key) == 2 and all(isinstance(k, str) for k in key)}

    def get(self, blob_id: str | None, source: str, parse: Callable[[], Any],
            check: Callable[[Any], bool] | None = None) -> Any:
        """``parse()``'s result for the file ``source`` whose content is blob ``blob_id``:
        the kept one when this (blob id, source) was parsed before by this code, else
        ``parse()`` (kept when it returns; what it raises goes to the caller, unkept).
        ``blob_id`` None (no committed blob): always ``parse()``. ``check(kept)``: whether
        a kept result may be used (a kind that can verify its entries against the file it
        has in hand); one that fails it is parsed afresh and replaced."""
        if blob_id is None:
            return parse()
        key = (blob_id, source)
        if key in self.entries and (check is None or check(self.entries[key])):
            return self.entries[key]
        value = parse()
        self.entries[key] = value
        self._dirty = True
        return value

    def flush(self) -> None:
        """Write the cache atomically when this process added to it (at most
        ``max_entries``, newest kept)."""
        if not self._dirty:
            return
        self._dirty = False
        entries = dict(list(self.entries.items())[-self.max_entries:])
        try:
            from relconsole.engine.atomicfile import write_atomic  # here: a read-only start never loads it
            write_atomic(self.file, pickle.dumps({"fingerprint": self.fingerprint, "entries": entries},
                                                 protocol=pickle.HIGHEST_PROTOCOL), durable=False)
        except (OSError, pickle.PicklingError, TypeError, AttributeError, RecursionError):
            pass  # the cache is an optimisation: a failed write loses only it
