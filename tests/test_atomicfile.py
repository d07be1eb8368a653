"""The one atomic write (engine/atomicfile.py): whole files or none, the user's mode bits kept."""

from __future__ import annotations

import os
import stat
import threading

import pytest
from hypothesis import given, settings, strategies as st

from relconsole.engine.atomicfile import write_atomic


@settings(max_examples=60, deadline=None)
@given(first=st.binary(max_size=4096), second=st.text(max_size=2048))
def test_the_file_holds_exactly_the_last_write_and_nothing_is_left_beside_it(tmp_path_factory, first, second):
    folder = tmp_path_factory.mktemp("w")
    target = folder / "deep" / "file.json"
    write_atomic(target, first)
    assert target.read_bytes() == first
    write_atomic(target, second, durable=False)
    assert target.read_bytes() == second.encode("utf-8")
    assert sorted(p.name for p in target.parent.iterdir()) == ["file.json"]


def test_an_existing_file_keeps_its_permission_bits_and_a_new_one_follows_the_umask(tmp_path):
    kept = tmp_path / "script.sh"
    kept.write_text("old")
    kept.chmod(0o750)
    write_atomic(kept, "new")
    assert stat.S_IMODE(kept.stat().st_mode) == 0o750 and kept.read_text() == "new"
    old_umask = os.umask(0o022)
    try:
        fresh, runnable = write_atomic(tmp_path / "plain", b"x"), write_atomic(tmp_path / "run", b"x", executable=True)
    finally:
        os.umask(old_umask)
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o644
    assert stat.S_IMODE(runnable.stat().st_mode) == 0o755


def test_a_failed_replace_leaves_the_target_as_it_was_and_no_temporary_file(tmp_path, monkeypatch):
    target = tmp_path / "decision.json"
    target.write_text("before")

    def refuse(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(OSError):
        write_atomic(target, "after")
    assert target.read_text() == "before"
    assert [p.name for p in tmp_path.iterdir()] == ["decision.json"]


def test_concurrent_writers_never_share_a_temporary_file(tmp_path):
    """Eight threads write the same target: it ends as one writer's whole text (a fixed
    temporary name would let one writer rename another's half-written file)."""
    target = tmp_path / "stats.json"
    texts = [str(n) * 50_000 for n in range(8)]
    errors: list[BaseException] = []

    def write(text: str) -> None:
        try:
            for _ in range(20):
                write_atomic(target, text, durable=False)
        except BaseException as exc:  # collected: an assertion in a thread would be lost
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(t,)) for t in texts]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert target.read_text() in texts
    assert [p.name for p in tmp_path.iterdir()] == ["stats.json"]
