"""The parsed-oracle cache (``parsecache``, issue 17): a kept parse is used only for the very
bytes and code that made it; a changed file, a corrupt cache or a cache from other code is
parsed afresh."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from relconsole.engine.gate import oracleload, quarantineload
from bench.gitrepo import git
from conftest import TODAY
from relconsole.engine.errors import BadInputError
from relconsole.engine.oracle.parsecache import ParseCache, code_fingerprint
from relconsole.engine.gate.review import load_review

LEASE = "oracle/leases/stocks.yaml"


def _facts(review) -> tuple:
    catalog = review.catalog
    return ({rid: (r.kind, r.subject, r.statement, r.line) for rid, r in catalog.relations.items()},
            catalog.owners, [(s.source, s.state, s.lease) for s in review.leases], [e.one_line() for e in review.errors])


def _load(repo: Path):
    with load_review(repo, "main", "HEAD", today=TODAY) as review:
        return _facts(review)


def _cache_file(repo: Path, kind: str) -> Path:
    return Path(git(repo, "rev-parse", "--absolute-git-dir").strip()) / "relconsole" / f"parsed-{kind}.pickle"


def _refuse_parsing(monkeypatch) -> None:
    def refuse(*_args):
        raise AssertionError("parsed again: the cache was not used")
    monkeypatch.setattr(oracleload, "load_catalog", refuse)
    monkeypatch.setattr(oracleload, "parse_lease", refuse)


def test_a_second_load_uses_the_kept_parse_and_sees_the_same_oracle(demo_repo, monkeypatch):
    fresh = _load(demo_repo)
    assert _cache_file(demo_repo, "catalog").exists() and _cache_file(demo_repo, "lease").exists()
    _refuse_parsing(monkeypatch)
    assert _load(demo_repo) == fresh


def _commit_on_main(repo: Path, path: str, edit) -> None:
    branch = git(repo, "rev-parse", "--abbrev-ref", "HEAD").strip()
    git(repo, "checkout", "-q", "main")
    target = repo / path
    target.write_text(edit(target.read_text()))
    git(repo, "commit", "-q", "-am", "catalog: lease renewed")
    git(repo, "checkout", "-q", branch)


def test_a_changed_manifest_is_parsed_again_never_read_stale(demo_repo):
    _load(demo_repo)  # the cache now holds the old manifest's parse
    _commit_on_main(demo_repo, LEASE, lambda text: re.sub(r"(?m)^expires: .*$", "expires: 2027-01-31", text))
    with load_review(demo_repo, "main", "HEAD", today=TODAY) as review:
        [lease] = [s.lease for s in review.leases if s.source == LEASE]
    assert str(lease.expires) == "2027-01-31"


def test_a_manifest_made_bad_is_reported_even_after_a_good_parse_was_kept(demo_repo):
    _load(demo_repo)
    _commit_on_main(demo_repo, LEASE, lambda text: re.sub(r"(?m)^expires: .*$", "expires: someday", text))
    with load_review(demo_repo, "main", "HEAD", today=TODAY) as review:
        assert any(e.path == LEASE for e in review.errors)


@pytest.mark.parametrize("garbage", [b"", b"not a pickle", b"\x80\x05\x95truncated"])
def test_a_corrupt_cache_is_ignored_and_rewritten(demo_repo, monkeypatch, garbage):
    fresh = _load(demo_repo)
    for kind in ("catalog", "lease"):
        _cache_file(demo_repo, kind).write_bytes(garbage)
    assert _load(demo_repo) == fresh
    _refuse_parsing(monkeypatch)  # rewritten whole: the next load needs no parse
    assert _load(demo_repo) == fresh


def test_entries_made_by_other_code_are_never_used(tmp_path):
    other = ParseCache(tmp_path, "catalog", fingerprint="another relconsole")
    other.get("a" * 40, "oracle/catalog.yaml", lambda: "forged")
    other.flush()
    ours = ParseCache(tmp_path, "catalog")
    assert ours.get("a" * 40, "oracle/catalog.yaml", lambda: "parsed") == "parsed"


def test_the_key_is_the_blob_and_the_path_it_is_named_by(tmp_path):
    cache = ParseCache(tmp_path, "lease")
    cache.get("a" * 40, "x.yaml", lambda: "first")
    assert cache.get("b" * 40, "x.yaml", lambda: "other bytes") == "other bytes"
    assert cache.get("a" * 40, "y.yaml", lambda: "other name") == "other name"  # errors name the path
    assert cache.get(None, "x.yaml", lambda: "no blob") == "no blob"


def test_a_failed_parse_is_not_kept(tmp_path):
    calls = []

    def bad():
        calls.append(1)
        raise BadInputError("x.yaml", "broken", 1)
    for _ in range(2):
        cache = ParseCache(tmp_path, "lease")
        with pytest.raises(BadInputError):
            cache.get("a" * 40, "x.yaml", bad)
        cache.flush()
    assert len(calls) == 2


def test_the_fingerprint_follows_the_code_it_covers(tmp_path, monkeypatch):
    from relconsole.engine.oracle import parsecache
    engine = tmp_path / "engine"
    engine.mkdir()
    for name in parsecache._DEPENDS_ON:
        (engine / name).parent.mkdir(parents=True, exist_ok=True)
        (engine / name).write_bytes((parsecache._ENGINE / name).read_bytes())
    monkeypatch.setattr(parsecache, "_ENGINE", engine)
    copied = code_fingerprint()
    leases = engine / "oracle" / "leases.py"
    leases.write_bytes(leases.read_bytes() + b"\n# a changed loader\n")
    assert code_fingerprint() != copied
    (tmp_path / "schemas").mkdir()
    changed = code_fingerprint()
    (tmp_path / "schemas" / "lease.json").write_text("{}")
    assert code_fingerprint() != changed
    schemas = code_fingerprint()
    (tmp_path / "schemas" / "__pycache__").mkdir()
    (tmp_path / "schemas" / "__pycache__" / "__init__.cpython-311.pyc").write_bytes(b"recompiled")
    assert code_fingerprint() == schemas, "a recompiled package is the same code"


# --- probe findings (the review flags' environment_probe rule), kept by the content of a change ---

PROBE = "import os\n\n\ndef summarize(rows):\n    if os.environ.get('CI'):\n        return []\n    return list(rows)\n"


def _probe_flags(repo: Path) -> list[tuple]:
    with load_review(repo, "main", "HEAD", today=TODAY) as review:
        return sorted((f.name, f.path, f.line, f.detail) for f in review.flags if f.name == "environment_probe")


def _commit_module(repo: Path, name: str, text: str) -> None:
    (repo / "src" / name).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", f"feat: {name}")


def _refuse_scanning(monkeypatch) -> None:
    from relconsole.engine.gate.flags import probescan

    def refuse(*_args):
        raise AssertionError("scanned again: the kept findings were not used")
    monkeypatch.setattr(probescan, "environment_probes", refuse)


def test_kept_probe_findings_are_the_findings_of_a_fresh_scan(demo_repo, monkeypatch):
    _commit_module(demo_repo, "probe.py", PROBE)
    fresh = _probe_flags(demo_repo)
    assert fresh, "the patch probes os.environ: the rule must flag it"
    assert _cache_file(demo_repo, "probes").exists()
    _refuse_scanning(monkeypatch)
    assert _probe_flags(demo_repo) == fresh


def test_a_changed_module_is_scanned_again_never_answered_from_its_old_bytes(demo_repo, monkeypatch):
    _commit_module(demo_repo, "probe.py", "def summarize(rows):\n    return list(rows)\n")
    assert _probe_flags(demo_repo) == []  # kept: this content probes nothing
    _commit_module(demo_repo, "probe.py", PROBE)  # same path, a probe added
    assert any(path == "src/probe.py" for _, path, _, _ in _probe_flags(demo_repo))


def test_a_poisoned_entry_for_other_bytes_cannot_clear_a_probe(demo_repo):
    """An entry that says "no probes" for every key a reviewer's cache held before cannot
    answer for the patch's bytes: the key is a digest of the change's two sides."""
    _commit_module(demo_repo, "probe.py", PROBE)
    expected = _probe_flags(demo_repo)
    cache = ParseCache(Path(git(demo_repo, "rev-parse", "--absolute-git-dir").strip()), "probes",
                       oracleload.current_fingerprint())
    assert cache.entries, "the first review kept its findings"
    cache.entries = {(digest + "0", path): [] for digest, path in cache.entries} | {("", "src/probe.py"): []}
    cache._dirty = True
    cache.flush()
    assert _probe_flags(demo_repo) == expected


# --- file-only verdicts of quarantined candidates (kind "candidate"), kept by blob id ---

GOOD = "oracle/quarantine/penguins.mass_permutation.yaml"
BAD = "oracle/quarantine/penguins.expected_total.yaml"


def _candidates(repo: Path) -> dict[str, tuple]:
    with load_review(repo, "main", "HEAD", today=TODAY) as review:
        return {c.path: (c.valid, c.row, [(v.rule, v.ok, v.reason, v.checked) for v in c.verdicts], c.notes)
                for c in review.candidates}


def _refuse_reading(monkeypatch) -> None:
    def refuse(*_args):
        raise AssertionError("read again: the kept verdicts were not used")
    monkeypatch.setattr(quarantineload, "read_candidate", refuse)


def _kept_reads(repo: Path) -> ParseCache:
    return ParseCache(Path(git(repo, "rev-parse", "--absolute-git-dir").strip()), "candidate",
                      oracleload.current_fingerprint())


def test_kept_candidate_verdicts_are_the_verdicts_of_a_fresh_validation(demo_repo, monkeypatch):
    fresh = _candidates(demo_repo)
    assert fresh[GOOD][0] and not fresh[BAD][0], "the sample has a valid and a rejected candidate"
    assert _cache_file(demo_repo, "candidate").exists()
    _refuse_reading(monkeypatch)
    assert _candidates(demo_repo) == fresh


def test_a_changed_candidate_is_judged_again_never_answered_from_its_old_blob(demo_repo):
    assert _candidates(demo_repo)[GOOD][0]  # kept: this blob passes every rule
    _commit_on_main(demo_repo, GOOD, lambda text: text + "expected_total: 4200\n")  # same path, an answer added
    valid, row, verdicts, _notes = _candidates(demo_repo)[GOOD]
    assert not valid and row is None
    assert not dict((rule, ok) for rule, ok, _reason, _checked in verdicts)["no_answers"]


def test_a_planted_or_damaged_candidate_entry_is_not_trusted(demo_repo):
    """An entry copied under the rejected file's key from the valid file (what a cache
    would say if it could be told "this blob passed"), or one of a shape ``read_candidate``
    never makes, is judged afresh: each entry is checked against the text in hand."""
    expected = _candidates(demo_repo)
    cache = _kept_reads(demo_repo)
    [good] = [value for (_blob, path), value in cache.entries.items() if path == GOOD]
    [(bad_key, bad)] = [(key, value) for key, value in cache.entries.items() if key[1] == BAD]
    assert not all(v.ok for v in bad.verdicts)
    for planted in (good, "valid", None, (), dataclasses.replace(good, verdicts=good.verdicts[:1]),
                    dataclasses.replace(bad, verdicts=(*bad.verdicts, "ok")),  # the right text, other shapes
                    dataclasses.replace(bad, verdicts=bad.verdicts[::-1]),
                    dataclasses.replace(bad, row=good.row)):
        cache.entries[bad_key] = planted
        cache._dirty = True
        cache.flush()
        assert _candidates(demo_repo) == expected
        assert _kept_reads(demo_repo).entries[bad_key] != planted, "the planted entry is replaced"


def test_a_corrupt_candidate_cache_is_ignored(demo_repo):
    expected = _candidates(demo_repo)
    _cache_file(demo_repo, "candidate").write_bytes(b"\x80\x05\x95truncated")
    assert _candidates(demo_repo) == expected
    assert _kept_reads(demo_repo).entries, "rewritten whole"
