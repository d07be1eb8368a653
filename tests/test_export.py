"""Exporting a commit's files with ``git archive`` (treeview.TreeView.export): streamed, and
never judged failed because git was cut off while writing the archive's padding."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from bench.gitrepo import git, init_repo


def test_repeated_exports_never_fail_on_the_archive_padding(tmp_path):
    """git pads the archive after the end marker; a reader that stops at the marker and
    closes the pipe makes git die of SIGPIPE in some runs. Sizes around the 10 KiB record."""
    repo = init_repo(tmp_path / "r")
    for size in (10_239, 47_838):
        (repo / f"f{size}.bin").write_bytes(os.urandom(size))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "files")
    import git as gitpython

    from relconsole.engine.repo.treeview import TreeView
    view = TreeView(gitpython.Repo(repo), git(repo, "rev-parse", "HEAD").strip())
    for attempt in range(200):  # the old reader failed 1 to 11 runs in 200 under load (a race)
        dest = tmp_path / f"out{attempt}"
        view.export(dest, [f"f{47_838 if attempt % 2 else 10_239}.bin"])
        assert any(dest.iterdir())


def test_an_export_does_not_hold_the_archive_in_memory(tmp_path):
    """The exporting process's peak RSS stays well below the size of the file it exports."""
    size = 160 << 20
    repo = init_repo(tmp_path / "r")
    with open(repo / "big.bin", "wb") as out:
        for _ in range(size >> 20):
            out.write(os.urandom(1 << 20))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "big")
    script = textwrap.dedent(f"""
        import sys
        from pathlib import Path
        import git
        from relconsole.engine.repo.treeview import TreeView
        repo = git.Repo({str(repo)!r})
        TreeView(repo, repo.head.commit.hexsha).export(Path({str(tmp_path / 'out')!r}))
        # VmHWM: this process image's own peak (ru_maxrss keeps the forking pytest's size across exec)
        print(next(int(line.split()[1]) * 1024 for line in open("/proc/self/status") if line.startswith("VmHWM:")))
        """)
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    peak = int(subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, text=True,
                              env=env).stdout)
    assert (tmp_path / "out" / "big.bin").stat().st_size == size
    assert peak < size // 2


# --- the oracle export's store of verified blobs (exportstore, issue 17) ---

def _oracle_repo(tmp_path: Path):
    import git as gitpython
    repo = init_repo(tmp_path / "r")
    files = {"oracle/catalog.yaml": b"relations: []\n", "oracle/seeds/a.jsonl": b'{"x": 1}\n',
             "oracle/seeds/same.jsonl": b'{"x": 1}\n', "oracle/tools/run.sh": b"#!/bin/sh\necho hi\n",
             "oracle/data/big.csv": os.urandom(300_000), "src/code.py": b"print('not the oracle')\n"}
    for path, data in files.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_bytes(data)
    (repo / "oracle/tools/run.sh").chmod(0o755)
    os.symlink("a.jsonl", repo / "oracle/seeds/alias.jsonl")
    os.symlink("/etc/passwd", repo / "oracle/seeds/outside.jsonl")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "oracle")
    return gitpython.Repo(repo), git(repo, "rev-parse", "HEAD").strip(), files


def _export(repo, commit: str, dest: Path) -> Path:
    from relconsole.engine.repo.workspace import export_oracle
    export_oracle(repo, commit, ("oracle/**",), dest)
    return dest


def _store_file(repo, commit: str, path: str) -> Path:
    from relconsole.engine.repo.exportstore import STORE
    oid = git(Path(repo.working_tree_dir), "rev-parse", f"{commit}:{path}").strip()
    store = Path(repo.common_dir) / STORE
    return next(store / name for name in (oid, oid + ".x") if (store / name).exists())


def _assert_as_committed(dest: Path, files: dict[str, bytes]) -> None:
    for path, data in files.items():
        if path.startswith("oracle/"):
            assert (dest / path).read_bytes() == data
    assert os.access(dest / "oracle/tools/run.sh", os.X_OK) and not os.access(dest / "oracle/seeds/a.jsonl", os.X_OK)
    assert os.readlink(dest / "oracle/seeds/alias.jsonl") == "a.jsonl"
    assert not os.path.lexists(dest / "oracle/seeds/outside.jsonl")  # a link out of the tree is left out
    assert not (dest / "src").exists()


def test_exports_link_one_read_only_copy_of_each_blob(tmp_path):
    repo, commit, files = _oracle_repo(tmp_path)
    first, second = _export(repo, commit, tmp_path / "one"), _export(repo, commit, tmp_path / "two")
    for dest in (first, second):
        _assert_as_committed(dest, files)
    for path in ("oracle/catalog.yaml", "oracle/data/big.csv", "oracle/tools/run.sh"):
        stored = _store_file(repo, commit, path).stat()
        assert (first / path).stat().st_ino == (second / path).stat().st_ino == stored.st_ino
        assert not stored.st_mode & 0o222, "the store's files are read-only"
    assert (first / "oracle/seeds/a.jsonl").stat().st_ino == (first / "oracle/seeds/same.jsonl").stat().st_ino


def _tamper_bytes(stored: Path) -> None:
    stored.chmod(0o644)
    data = stored.read_bytes()
    stored.write_bytes(bytes([data[0] ^ 1]) + data[1:])  # same size, one bit
    stored.chmod(0o444)


def _tamper_truncate(stored: Path) -> None:
    stored.chmod(0o644)
    stored.write_bytes(stored.read_bytes()[:-1])
    stored.chmod(0o444)


def _tamper_swap_for_link(stored: Path) -> None:
    elsewhere = stored.parent.parent / "planted"
    elsewhere.write_bytes(b"someone else's bytes\n")
    stored.unlink()
    os.symlink(elsewhere, stored)


def _tamper_folder(stored: Path) -> None:
    stored.unlink()
    stored.mkdir()


def _tamper_mode(stored: Path) -> None:
    stored.chmod(0o666)


@pytest.mark.parametrize("tamper", [_tamper_bytes, _tamper_truncate, _tamper_swap_for_link, _tamper_folder,
                                    _tamper_mode])
def test_a_store_file_changed_by_someone_else_is_replaced_never_used(tmp_path, tamper):
    repo, commit, files = _oracle_repo(tmp_path)
    _export(repo, commit, tmp_path / "first")
    path = "oracle/data/big.csv"
    stored = _store_file(repo, commit, path)
    tamper(stored)
    tampered = os.lstat(stored).st_ino
    dest = _export(repo, commit, tmp_path / "second")
    _assert_as_committed(dest, files)
    assert os.lstat(dest / path).st_ino != tampered, "the changed file is not what the export holds"
    assert stored.is_file() and not stored.is_symlink() and stored.read_bytes() == files[path], "rewritten"
    assert os.lstat(dest / path).st_ino == os.lstat(stored).st_ino


def test_where_links_are_refused_the_export_is_written_from_git(tmp_path, monkeypatch):
    import errno

    from relconsole.engine.repo import exportstore
    repo, commit, files = _oracle_repo(tmp_path)

    def refuse(*_args):
        raise OSError(errno.EXDEV, "Invalid cross-device link")
    monkeypatch.setattr(exportstore.os, "link", refuse)
    dest = _export(repo, commit, tmp_path / "copy")
    _assert_as_committed(dest, files)
    assert (dest / "oracle/data/big.csv").stat().st_nlink == 1


def test_an_export_on_another_file_system_is_written_from_git_and_leaves_the_store_alone(tmp_path):
    import tempfile

    from relconsole.engine.repo.exportstore import STORE
    other = Path("/dev/shm")
    if not other.is_dir() or os.stat(other).st_dev == os.stat(tmp_path).st_dev:
        pytest.skip("no second file system to export to")
    repo, commit, files = _oracle_repo(tmp_path)
    with tempfile.TemporaryDirectory(dir=other) as scratch:
        dest = _export(repo, commit, Path(scratch) / "oracle-export")
        _assert_as_committed(dest, files)
        assert (dest / "oracle/data/big.csv").stat().st_nlink == 1
    assert not any((Path(repo.common_dir) / STORE).iterdir()), "nothing stored that no export can link"
