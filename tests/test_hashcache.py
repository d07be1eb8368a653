"""Streamed hashing and the hash cache (SPEC §4 lease and pin hashes), on real files and repositories.

Digests are checked against hashlib on the same bytes; cache hits are proved by making
every read fail; invalidation by real stat changes (utime, same-size rewrite, a new
inode through os.replace, chmod) and by each recorded field in turn; the review's
committed-corpus cache against ``git rev-parse <commit>:<path>``.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.gitrepo import git, init_repo
from conftest import TODAY
from relconsole.engine.oracle import hashcache
from relconsole.engine.oracle.hashcache import (CHUNK_BYTES, RACY_NS, CommitFiles, HashCache, NotRegularFile,
                                         sha256_stream)
from relconsole.engine.gate.review import load_review

OLD_NS = 1_600_000_000 * 10**9  # an mtime long before any hashing in these tests


def write_old(path: Path, data: bytes) -> Path:
    """Write ``data`` and date its mtime in the past (its ctime stays now)."""
    path.write_bytes(data)
    os.utime(path, ns=(OLD_NS, OLD_NS))
    return path


def trusting() -> HashCache:
    """An in-memory cache that trusts entries at once (racy_ns=0): for the tests about
    which stat fields decide; the racy rule has its own tests with the real margin."""
    return HashCache(None, racy_ns=0)


def tick_past(path: Path) -> None:
    """Wait until the clock the filesystem stamps ctime with is past ``path``'s ctime (it
    ticks every few milliseconds), read from a probe file beside it, so that the next
    change of ``path`` gets a newer ctime."""
    ns, probe = path.stat().st_ctime_ns, path.with_name(".probe")
    probe.touch()
    while probe.stat().st_ctime_ns <= ns:
        os.utime(probe)
    probe.unlink()


@pytest.fixture
def no_reads(monkeypatch):
    """Make any opening of a file by the hashing code fail: a hit must not read."""
    def refuse(*_a, **_k):
        raise AssertionError("the file was opened although the cache should answer")

    def arm():
        monkeypatch.setattr(hashcache, "open_regular", refuse)
        monkeypatch.setattr(hashcache, "_digest_fd", refuse)
    return arm


@pytest.fixture
def opens(monkeypatch):
    """Count the files the hashing code opens."""
    seen: list[str] = []
    real = hashcache.open_regular

    def counting(path, *args, **kw):
        seen.append(str(path))
        return real(path, *args, **kw)
    monkeypatch.setattr(hashcache, "open_regular", counting)
    return seen


@pytest.fixture
def alarm():
    """Fail instead of hanging when something blocks for more than a few seconds."""
    def on_alarm(*_):
        raise TimeoutError("blocked: a non-regular file was opened for reading")
    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(5)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


# --- streaming --------------------------------------------------------------------------------

@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(chunk=st.integers(1, 96), extra=st.integers(-2, 2), chunks=st.integers(0, 4), data=st.data())
def test_stream_digest_equals_hashlib_around_chunk_boundaries(tmp_path, chunk, extra, chunks, data):
    size = max(0, chunk * chunks + extra)
    content = data.draw(st.binary(min_size=size, max_size=size))
    path = tmp_path / "f.bin"
    path.write_bytes(content)
    calls: list[tuple[int, int]] = []
    digest = sha256_stream(path, lambda done, total: calls.append((done, total)), chunk_bytes=chunk)
    assert digest == hashlib.sha256(content).hexdigest()
    dones = [done for done, _ in calls]
    assert dones == sorted(dones) and len(set(dones)) == len(dones)  # strictly rising
    assert calls[-1] == (size, size)  # ends at the total, also for an empty file
    assert len(calls) <= -(-size // chunk) + 1  # about one call per chunk, never per byte


@pytest.mark.parametrize("size", [CHUNK_BYTES - 1, CHUNK_BYTES, CHUNK_BYTES + 1, 2 * CHUNK_BYTES + 7])
def test_stream_digest_at_the_real_chunk_size(tmp_path, size):
    content = os.urandom(size)
    path = tmp_path / "f.bin"
    path.write_bytes(content)
    totals = []
    assert sha256_stream(path, lambda done, total: totals.append(total)) == hashlib.sha256(content).hexdigest()
    assert set(totals) == {size}


def test_memory_stays_flat_whatever_the_file_size(tmp_path):
    path = tmp_path / "big.bin"
    with open(path, "wb") as handle:
        for _ in range(8):
            handle.write(os.urandom(CHUNK_BYTES))
    tracemalloc.start()
    try:
        sha256_stream(path)
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < CHUNK_BYTES + (1 << 20) < path.stat().st_size  # one buffer, not the file


@pytest.mark.parametrize("make", ["fifo", "directory"])
def test_non_regular_files_are_refused_at_once(tmp_path, alarm, make):
    path = tmp_path / "corpus"
    os.mkfifo(path) if make == "fifo" else path.mkdir()
    with pytest.raises(NotRegularFile) as caught:
        sha256_stream(path)
    assert caught.value.strerror.startswith("not a regular file")
    with pytest.raises(OSError):
        HashCache(None).file_sha256(path)


def test_a_fifo_swapped_in_after_the_stat_check_does_not_hang(tmp_path, alarm, monkeypatch):
    """open_regular checks the opened descriptor, not only the earlier stat."""
    path = tmp_path / "corpus"
    os.mkfifo(path)
    regular = os.stat(__file__)
    real_stat = os.stat
    monkeypatch.setattr(hashcache.os, "stat",
                        lambda p, *a, **k: regular if str(p) == str(path) else real_stat(p, *a, **k))
    with pytest.raises(NotRegularFile, match="FIFO"):
        sha256_stream(path)


def test_no_follow_refuses_a_symlink(tmp_path):
    target = write_old(tmp_path / "target", b"x")
    (tmp_path / "link").symlink_to(target)
    assert sha256_stream(tmp_path / "link") == hashlib.sha256(b"x").hexdigest()
    with pytest.raises(OSError):
        sha256_stream(tmp_path / "link", follow_symlinks=False)


# --- the working-tree cache ---------------------------------------------------------------------

def test_a_hit_does_not_read_the_file_even_in_a_new_process_state(tmp_path, no_reads):
    path = write_old(tmp_path / "corpus.csv", os.urandom(10_000))
    store = tmp_path / "git" / "relconsole" / "hashcache.json"
    first = HashCache(store, racy_ns=0)
    digest = first.file_sha256(path)
    assert first.save() and store.is_file()
    no_reads()
    assert HashCache(store, racy_ns=0).file_sha256(path) == digest == hashlib.sha256(path.read_bytes()).hexdigest()


def _mutations():
    def utime(path: Path) -> None:
        os.utime(path, ns=(OLD_NS, OLD_NS - 10**9))

    def same_size_rewrite(path: Path) -> None:  # same size, mtime put back: only ctime tells
        before = path.stat()
        path.write_bytes(bytes(b ^ 0xFF for b in path.read_bytes()))
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))

    def new_inode(path: Path) -> None:  # another file moved over it, same size and mtime
        before = path.stat()
        other = path.with_name("other")
        other.write_bytes(os.urandom(before.st_size))
        os.utime(other, ns=(before.st_atime_ns, before.st_mtime_ns))
        os.replace(other, path)

    def chmod(path: Path) -> None:  # content unchanged; ctime moves
        os.chmod(path, 0o600)

    return {"utime": utime, "same-size-rewrite": same_size_rewrite, "new-inode": new_inode, "chmod": chmod}


@pytest.mark.parametrize("mutate", _mutations().values(), ids=_mutations().keys())
def test_any_stat_change_invalidates(tmp_path, opens, mutate):
    path = write_old(tmp_path / "corpus.csv", os.urandom(5000))
    cache = trusting()
    cache.file_sha256(path)
    assert cache.cached_file(path) is not None
    tick_past(path)
    mutate(path)
    assert cache.cached_file(path) is None
    opens.clear()
    digest = cache.file_sha256(path)
    assert opens == [str(path)]  # read again
    assert digest == hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("field", ["size", "mtime_ns", "ctime_ns", "inode", "device"])
def test_each_recorded_field_alone_decides(tmp_path, field):
    path = write_old(tmp_path / "corpus.csv", b"a,b\n1,2\n")
    cache = trusting()
    digest = cache.file_sha256(path)
    assert cache.cached_file(path) == digest
    cache.files[os.path.abspath(path)][field] += 1
    assert cache.cached_file(path) is None


def test_a_racily_clean_entry_is_not_trusted(tmp_path, opens):
    path = tmp_path / "fresh.csv"
    path.write_bytes(b"just written\n")  # mtime is now: a same-size rewrite could keep it
    cache = HashCache(None)
    cache.file_sha256(path)
    entry = cache.files[os.path.abspath(path)]
    assert entry["hashed_at_ns"] - entry["mtime_ns"] < RACY_NS
    assert cache.cached_file(path) is None
    opens.clear()
    cache.file_sha256(path)
    assert opens == [str(path)]
    entry = cache.files[os.path.abspath(path)]
    newest = max(entry["mtime_ns"], entry["ctime_ns"])
    entry["hashed_at_ns"] = newest + RACY_NS - 1
    assert cache.cached_file(path) is None
    entry["hashed_at_ns"] = newest + RACY_NS  # clearly older than its hashing: trusted
    assert cache.cached_file(path) == hashlib.sha256(b"just written\n").hexdigest()


def test_an_mtime_set_back_does_not_make_a_fresh_rewrite_trusted(tmp_path):
    """The racy rule reads ctime too: utime can fake an old mtime, not an old ctime."""
    path = write_old(tmp_path / "corpus.csv", b"rewritten a moment ago\n")
    cache = HashCache(None)
    cache.file_sha256(path)
    entry = cache.files[os.path.abspath(path)]
    assert entry["hashed_at_ns"] - entry["mtime_ns"] >= RACY_NS  # the mtime alone looks old
    assert cache.cached_file(path) is None


def test_a_file_changed_while_hashed_is_not_remembered(tmp_path, monkeypatch):
    path = write_old(tmp_path / "corpus.csv", b"x" * 100)
    real = hashcache._digest_fd

    def digest_then_append(fd, *args):
        out = real(fd, *args)
        with open(path, "ab") as handle:
            handle.write(b"more")
        return out
    monkeypatch.setattr(hashcache, "_digest_fd", digest_then_append)
    cache = HashCache(None)
    cache.file_sha256(path)
    assert cache.files == {}


@pytest.mark.parametrize("text", [b"{not json", b"[]", b'{"version": 1, "files": [], "blobs": 3}',
                                  b'{"version": 99, "files": {}}', b"\xff\xfe\x00",
                                  b'{"version": 1, "files": {"k": {"sha256": 5}}, "blobs": {}}'],
                         ids=["truncated", "list", "wrong-types", "other-version", "binary", "bad-entry"])
def test_a_corrupt_cache_file_is_ignored_then_replaced(tmp_path, text):
    store = tmp_path / "hashcache.json"
    store.write_bytes(text)
    path = write_old(tmp_path / "corpus.csv", b"payload")
    cache = HashCache(store, racy_ns=0)
    assert cache.files == {} and cache.blobs == {}
    assert cache.file_sha256(path) == hashlib.sha256(b"payload").hexdigest()
    assert cache.save()
    assert HashCache(store, racy_ns=0).cached_file(path) == hashlib.sha256(b"payload").hexdigest()


def test_an_unwritable_cache_is_not_fatal(tmp_path):
    blocker = tmp_path / "git"
    blocker.write_text("a file where the cache directory should be")
    cache = HashCache.for_git_dir(blocker)
    path = write_old(tmp_path / "corpus.csv", b"payload")
    assert cache.file_sha256(path) == hashlib.sha256(b"payload").hexdigest()
    assert cache.save() is False
    assert blocker.read_text().startswith("a file")


def test_two_writers_keep_each_others_entries(tmp_path):
    store = tmp_path / "hashcache.json"
    one, two = HashCache(store, racy_ns=0), HashCache(store, racy_ns=0)
    a, b = write_old(tmp_path / "a", b"a"), write_old(tmp_path / "b", b"b")
    one.file_sha256(a)
    two.file_sha256(b)
    assert one.save() and two.save()
    merged = HashCache(store, racy_ns=0)
    assert merged.cached_file(a) == hashlib.sha256(b"a").hexdigest()
    assert merged.cached_file(b) == hashlib.sha256(b"b").hexdigest()
    assert not list(tmp_path.glob(".hashcache-*"))  # no temp file left behind


# --- committed blobs ------------------------------------------------------------------------------

def committed(tmp_path: Path, files: dict[str, bytes]) -> Path:
    repo = init_repo(tmp_path / "repo")
    for name, data in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_bytes(data)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "c")
    return repo


def export(repo: Path, commit: str, relative: str, dest: Path) -> Path:
    archive = subprocess.run(["git", "archive", "--format=tar", commit, "--", relative], cwd=repo,
                             capture_output=True, check=True).stdout
    dest.mkdir(parents=True, exist_ok=True)
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest / relative


def test_blob_cache_is_keyed_by_oid_and_answers_without_reading(tmp_path, no_reads):
    content = os.urandom(70_000)
    repo = committed(tmp_path, {"oracle/data/c.csv": content})
    head = git(repo, "rev-parse", "HEAD").strip()
    oid = git(repo, "rev-parse", "HEAD:oracle/data/c.csv").strip()
    cache = HashCache.for_git_dir(repo / ".git")
    first = export(repo, head, "oracle/data/c.csv", tmp_path / "one")
    assert CommitFiles(repo, repo / ".git", head, cache).sha256(first, "oracle/data/c.csv") == \
        hashlib.sha256(content).hexdigest()
    stored = json.loads((repo / ".git" / "relconsole" / "hashcache.json").read_text())
    assert list(stored["blobs"]) == [oid]
    # a later commit with the same blob, exported afresh: answered by oid, never read
    (repo / "other.txt").write_text("unrelated change\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "later")
    later = git(repo, "rev-parse", "HEAD").strip()
    second = export(repo, later, "oracle/data/c.csv", tmp_path / "two")
    no_reads()
    assert CommitFiles(repo, repo / ".git", later, HashCache.for_git_dir(repo / ".git")).sha256(
        second, "oracle/data/c.csv") == hashlib.sha256(content).hexdigest()


def test_an_attributes_change_is_a_new_context_for_the_same_oid(tmp_path, opens):
    repo = committed(tmp_path, {"data/c.txt": b"line one\nline two\n"})
    first = git(repo, "rev-parse", "HEAD").strip()
    cache = HashCache(None)
    CommitFiles(repo, repo / ".git", first, cache).sha256(export(repo, first, "data/c.txt", tmp_path / "a"),
                                                          "data/c.txt")
    (repo / "data" / ".gitattributes").write_text("c.txt text eol=crlf\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "crlf on export")
    second = git(repo, "rev-parse", "HEAD").strip()
    assert git(repo, "rev-parse", f"{first}:data/c.txt") == git(repo, "rev-parse", f"{second}:data/c.txt")
    exported = export(repo, second, "data/c.txt", tmp_path / "b")
    opens.clear()
    digest = CommitFiles(repo, repo / ".git", second, cache).sha256(exported, "data/c.txt")
    assert opens == [str(exported)]  # not served from the first context
    assert digest == hashlib.sha256(exported.read_bytes()).hexdigest()


def test_a_committed_symlink_is_hashed_from_the_export_and_not_cached(tmp_path):
    repo = committed(tmp_path, {"data/real.csv": b"1,2\n"})
    (repo / "data" / "alias.csv").symlink_to("real.csv")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "alias")
    head = git(repo, "rev-parse", "HEAD").strip()
    exported = export(repo, head, "data", tmp_path / "out") / "alias.csv"
    cache = HashCache(None)
    assert CommitFiles(repo, repo / ".git", head, cache).sha256(exported, "data/alias.csv") == \
        hashlib.sha256(b"1,2\n").hexdigest()
    assert cache.blobs == {}


# --- the review hook ------------------------------------------------------------------------------

def test_load_review_reports_rising_progress_then_answers_from_the_cache(demo_repo, monkeypatch):
    monkeypatch.setattr(hashcache, "CHUNK_BYTES", 4096)  # the sample corpora span several chunks
    calls: dict[str, list[tuple[int, int]]] = {}
    with load_review(demo_repo, today=TODAY,
                     hash_progress=lambda label, done, total: calls.setdefault(label, []).append((done, total))) as review:
        leases = {s.lease.path: (s.state, s.actual_sha256) for s in review.leases if s.lease}
        pins = review.pins
    assert leases
    for path, (_state, actual) in leases.items():
        seen = calls[path]
        size = len(subprocess.run(["git", "cat-file", "blob", f"main:{path}"], cwd=demo_repo,
                                  capture_output=True, check=True).stdout)
        assert len(seen) > 1 and size > 4096
        assert [d for d, _ in seen] == sorted({d for d, _ in seen}) and seen[-1] == (size, size)
    stored = json.loads((demo_repo / ".git" / "relconsole" / "hashcache.json").read_text())
    oids = {git(demo_repo, "rev-parse", f"main:{path}").strip() for path in leases}
    assert oids <= set(stored["blobs"])
    assert {stored["blobs"][git(demo_repo, "rev-parse", f"main:{p}").strip()]["sha256"]
            for p in leases} == {actual for _s, actual in leases.values()}
    calls.clear()
    with load_review(demo_repo, today=TODAY,
                     hash_progress=lambda label, done, total: calls.setdefault(label, []).append((done, total))) as again:
        assert {s.lease.path: (s.state, s.actual_sha256) for s in again.leases if s.lease} == leases
        assert again.pins == pins
    assert not set(calls) & set(leases)  # unchanged corpora were not read again


def test_a_drifted_corpus_is_drifted_with_the_cache_warm(demo_repo):
    """The blob cache never carries a stale digest: a new corpus is a new oid."""
    with load_review(demo_repo, today=TODAY) as review:
        status = next(s for s in review.leases if s.lease and s.state != "missing")
    git(demo_repo, "checkout", "-q", "main")
    path = demo_repo / status.lease.path
    os.chmod(path, 0o644)
    path.write_bytes(path.read_bytes() + b"extra,row\n")
    git(demo_repo, "commit", "-q", "-am", "edit the corpus on main")
    with load_review(demo_repo, base_ref="main", head_ref="main", today=TODAY) as review:
        after = review.lease(status.lease.id)
    assert after.state == "drifted"
    assert after.actual_sha256 == hashlib.sha256(path.read_bytes()).hexdigest() != status.actual_sha256
