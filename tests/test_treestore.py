"""The per-commit tree store (issue 15, SPEC §7 "trees as committed", once per commit).

A run tree built from the store must be the run tree a fresh export gives, byte for byte
and mode for mode; nothing a run does to its own tree (the oracle overlay, a mutant written
by ``bite``, its removal) may change the store; and a commit is written once.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import git as gitpython
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.gitrepo import git, reviewed_repo
from relconsole.engine.repo.blobwrite import write_blobs
from relconsole.engine.repo import treestore
from relconsole.engine.repo.workspace import build_run_tree, export_oracle

FILES = {"src/app.py": "def f(x):\n    return x\n", "src/pkg/__init__.py": "", "README.md": "hi\n",
         "oracle/catalog.yaml": "relations: []\n", "oracle/data/rows.csv": "a,b\n1,2\n",
         ".gitattributes": "src/app.py export-ignore\n* text eol=crlf\n"}
PATCH = {"src/app.py": "def f(x):\n    return [x]\n", "oracle/data/rows.csv": "a,b\n9,9\n",
         "oracle/extra.py": "CHEAT = 1\n"}


def snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under ``root``: its bytes and whether it is executable."""
    out = {}
    for folder, _dirs, files in os.walk(root):
        for name in files:
            path = Path(folder) / name
            out[path.relative_to(root).as_posix()] = (path.read_bytes(), os.stat(path).st_mode & stat.S_IXUSR)
    return out


@pytest.fixture
def repo(tmp_path: Path) -> gitpython.Repo:
    root = reviewed_repo(tmp_path / "repo", FILES, PATCH)
    (root / "run.sh").write_text("#!/bin/sh\necho hi\n")
    os.chmod(root / "run.sh", 0o755)
    git(root, "add", "run.sh")
    git(root, "commit", "-qm", "an executable")
    return gitpython.Repo(root)


def _oracle(repo: gitpython.Repo, tmp_path: Path) -> Path:
    oracle = tmp_path / "oracle-export"
    export_oracle(repo, "main", ("oracle/**",), oracle)
    return oracle / "oracle"


@pytest.mark.parametrize("link", [True, False])
def test_a_run_tree_from_the_store_is_the_one_a_fresh_export_gives(repo, tmp_path, link):
    oracle = _oracle(repo, tmp_path)
    fresh = tmp_path / "fresh"
    write_blobs(repo, "HEAD", fresh)
    from relconsole.engine.repo.workspace import overlay_oracle
    overlay_oracle(repo, "HEAD", oracle, ("oracle/**",), fresh)
    stored = build_run_tree(repo, "HEAD", oracle, ("oracle/**",), tmp_path / "stored", link=link)
    assert snapshot(stored) == snapshot(fresh)
    assert snapshot(stored)["run.sh"][1] and snapshot(stored)["src/app.py"][0] == PATCH["src/app.py"].encode()
    assert "oracle/extra.py" not in snapshot(stored)  # the patch's own oracle file is gone


def test_a_commit_is_written_once(repo, tmp_path, monkeypatch):
    oracle = _oracle(repo, tmp_path)
    writes = []
    real = treestore.write_blobs
    monkeypatch.setattr(treestore, "write_blobs", lambda *a, **k: writes.append(a[1]) or real(*a, **k))
    first = build_run_tree(repo, "HEAD", oracle, ("oracle/**",), tmp_path / "one", link=True)
    second = build_run_tree(repo, "HEAD", oracle, ("oracle/**",), tmp_path / "two", link=True)
    assert writes == ["HEAD"] and snapshot(first) == snapshot(second)


@pytest.mark.parametrize("link", [True, False])
def test_what_a_run_does_to_its_tree_never_reaches_the_store(repo, tmp_path, link):
    oracle = _oracle(repo, tmp_path)
    store = treestore.stored_tree(repo, "HEAD")
    before = snapshot(store)
    tree = build_run_tree(repo, "HEAD", oracle, ("oracle/**",), tmp_path / "run", link=link)
    assert snapshot(store) == before  # the overlay replaced files; it never wrote into one
    if not link:  # a copied tree is the run's own: bite writes its mutants into it
        (tree / "src" / "app.py").write_text("MUTANT = 1\n")
    for folder, _dirs, files in os.walk(tree):
        for name in files:
            os.unlink(os.path.join(folder, name))
    assert snapshot(store) == before
    assert all(not os.stat(store / p).st_mode & stat.S_IWUSR for p in before)  # read-only files


def test_a_store_file_cannot_be_written_through_a_linked_tree_by_accident(repo, tmp_path):
    tree = build_run_tree(repo, "HEAD", _oracle(repo, tmp_path), ("oracle/**",), tmp_path / "run", link=True)
    if os.geteuid() == 0:
        pytest.skip("root writes read-only files")
    with pytest.raises(PermissionError):
        (tree / "src" / "app.py").write_text("changed\n")


@settings(max_examples=5, deadline=None)
@given(st.integers(min_value=treestore.KEEP + 1, max_value=treestore.KEEP + 3))
def test_the_store_keeps_the_trees_used_last(tmp_path_factory, commits):
    root = reviewed_repo(tmp_path_factory.mktemp("evict") / "repo", {"a.txt": "0\n"})
    repo = gitpython.Repo(root)
    shas = []
    for n in range(commits):
        (root / "a.txt").write_text(f"{n + 1}\n")
        git(root, "commit", "-qam", f"c{n}")
        shas.append(git(root, "rev-parse", "HEAD").strip())
        treestore.stored_tree(repo, shas[-1])
        os.utime(Path(repo.common_dir) / treestore.STORE / git(root, "rev-parse", "HEAD^{tree}").strip(),
                 (1_000_000 + n, 1_000_000 + n))  # a strictly later use each time
    kept = {p.name for p in (Path(repo.common_dir) / treestore.STORE).iterdir() if not p.name.startswith(".")}
    wanted = {git(root, "rev-parse", f"{sha}^{{tree}}").strip() for sha in shas[-treestore.KEEP:]}
    assert kept == wanted


def test_a_file_system_that_refuses_links_gets_a_copied_tree(repo, tmp_path, monkeypatch):
    """The scratch folder on another file system than the git dir (a tmpfs /tmp): os.link
    fails with EXDEV, and the run tree is made of copies, the same files, the store untouched."""
    import errno
    oracle = _oracle(repo, tmp_path)
    linked = build_run_tree(repo, "HEAD", oracle, ("oracle/**",), tmp_path / "linked", link=True)

    def refuse(src, dst, *args, **kwargs):
        raise OSError(errno.EXDEV, "Invalid cross-device link", src)
    monkeypatch.setattr(treestore.os, "link", refuse)
    store = treestore.stored_tree(repo, "HEAD")
    before = snapshot(store)
    copied = build_run_tree(repo, "HEAD", oracle, ("oracle/**",), tmp_path / "copied", link=True)
    assert snapshot(copied) == snapshot(linked)
    (copied / "src" / "app.py").write_text("MUTANT = 1\n")
    assert snapshot(store) == before
    assert os.stat(copied / "README.md").st_ino != os.stat(store / "README.md").st_ino


def test_a_run_tree_that_cannot_be_written_is_one_line_naming_the_folder(repo, tmp_path):
    from relconsole.engine.errors import RelconsoleError
    (tmp_path / "a-file").write_text("not a folder\n")
    dest = tmp_path / "a-file" / "run"
    with pytest.raises(RelconsoleError) as raised:
        build_run_tree(repo, "HEAD", _oracle(repo, tmp_path), ("oracle/**",), dest, link=True)
    message = raised.value.one_line()
    assert "\n" not in message and str(tmp_path / "a-file") in message, message
