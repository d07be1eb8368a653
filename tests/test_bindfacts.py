"""``relconsole bind`` from kept facts (``bindfacts``, issue 17), and git failures on the bind
path as GitError (exit 3, one line): a second bind of an oracle commit answers exactly as the
full load does, a changed oracle commit or a bad, corrupt or forged cache entry is never
trusted, and a broken repository is reported, not a traceback."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from bench.gitrepo import git, reviewed_repo
from conftest import TODAY
from relconsole.cli.main import main
from relconsole.engine.gate import bindfacts
from relconsole.engine.repo import gitio
from relconsole.engine.repo.treeview import TreeView
from relconsole.engine.gate import review as review_module
from relconsole.engine.errors import EXIT_ABORT, GitError, UsageError
from relconsole.engine.repo.touched import Touched, touched_paths


def bind(capsys, repo: Path, *extra: str) -> tuple[int, str, str]:
    code = main(["bind", "--repo", str(repo), "--today", TODAY.isoformat(), *extra])
    out, err = capsys.readouterr()
    return code, out, err


def full_bind(capsys, repo: Path, monkeypatch, *extra: str) -> tuple[int, str, str]:
    """What the full load answers (kept facts switched off)."""
    with monkeypatch.context() as patched:
        patched.setenv("RELCONSOLE_NO_BIND_FACTS", "1")
        return bind(capsys, repo, *extra)


def refuse_full_load(monkeypatch) -> None:
    def refuse(*_args, **_kwargs):
        raise AssertionError("the full load ran: the kept facts were not used")
    monkeypatch.setattr(review_module, "load_review", refuse)


def facts_file(repo: Path) -> Path:
    return Path(git(repo, "rev-parse", "--absolute-git-dir").strip()) / "relconsole" / f"parsed-{bindfacts.KIND}.pickle"


@pytest.mark.parametrize("extra", [(), ("--json",)])
def test_a_second_bind_answers_from_kept_facts_as_the_full_load_does(demo_repo, capsys, monkeypatch, extra):
    first = bind(capsys, demo_repo, *extra)  # the full load, which keeps the facts
    assert facts_file(demo_repo).is_file()
    with monkeypatch.context() as patched:
        refuse_full_load(patched)
        second = bind(capsys, demo_repo, *extra)
    assert second == first == full_bind(capsys, demo_repo, monkeypatch, *extra)
    assert first[0] == 2  # the sample's gap


def test_a_changed_oracle_commit_is_loaded_in_full(demo_repo, capsys, monkeypatch):
    before = bind(capsys, demo_repo)
    gap = next(line.split()[1] for line in before[1].splitlines() if line.endswith(" gap"))
    git(demo_repo, "checkout", "-q", "main")
    catalog = demo_repo / "oracle" / "catalog.yaml"
    catalog.write_text(catalog.read_text().replace('  "README.md": []', f'  "README.md": []\n  "{gap}": []', 1))
    git(demo_repo, "commit", "-q", "-am", "oracle: exempt the gap")
    git(demo_repo, "checkout", "-q", "agent/patch")
    after = bind(capsys, demo_repo)
    assert after == full_bind(capsys, demo_repo, monkeypatch)
    assert f"  {gap}  exempt" in after[1] and after[0] != before[0]


def test_a_corrupt_cache_file_is_not_trusted(demo_repo, capsys, monkeypatch):
    expected = bind(capsys, demo_repo)
    facts_file(demo_repo).write_bytes(b"\x80\x05not a pickle")
    assert bind(capsys, demo_repo) == expected


def test_a_forged_entry_is_not_trusted(demo_repo, capsys, monkeypatch):
    """An entry of the wrong shape, or one made by other code (another fingerprint), is
    ignored: the full load answers."""
    expected = bind(capsys, demo_repo)
    path = facts_file(demo_repo)
    stored = pickle.loads(path.read_bytes())
    everything_owned = {key: dict(facts, owners=[("**", ["forged.relation"])]) for key, facts in stored["entries"].items()}
    for forged in ({"fingerprint": "0" * 64, "entries": everything_owned},
                   {"fingerprint": stored["fingerprint"],
                    "entries": {key: dict(facts, owners="**") for key, facts in stored["entries"].items()}}):
        path.write_bytes(pickle.dumps(forged))
        assert bind(capsys, demo_repo) == expected


def test_a_load_with_a_bad_oracle_file_keeps_no_facts(demo_repo, capsys):
    git(demo_repo, "checkout", "-q", "main")
    (demo_repo / "oracle" / "catalog.yaml").write_text("owners: [\n")
    git(demo_repo, "commit", "-q", "-am", "oracle: break the catalog")
    git(demo_repo, "checkout", "-q", "agent/patch")
    for _ in range(2):
        code, _out, err = bind(capsys, demo_repo)
        assert code == 5 and "catalog" in err
    assert not facts_file(demo_repo).exists() or not pickle.loads(facts_file(demo_repo).read_bytes())["entries"]


def test_a_bad_relconsole_today_is_reported_by_the_full_load(demo_repo, capsys, monkeypatch):
    bind(capsys, demo_repo)  # facts kept
    monkeypatch.setenv("RELCONSOLE_TODAY", "2026-02-30")
    code = main(["bind", "--repo", str(demo_repo)])
    _out, err = capsys.readouterr()
    assert code == 64 and "RELCONSOLE_TODAY" in err


# --- git failures on the bind path: GitError, exit 3, one line ---------------------------

def _loose_object(repo: Path, oid: str) -> Path:
    return Path(git(repo, "rev-parse", "--absolute-git-dir").strip()) / "objects" / oid[:2] / oid[2:]


def test_touched_paths_raises_git_error_with_gits_message(tmp_path):
    repo = reviewed_repo(tmp_path / "r", {"a.txt": "a\n"}, {"b.txt": "b\n"})
    head = git(repo, "rev-parse", "HEAD").strip()
    with pytest.raises(GitError) as raised:
        touched_paths(gitio.open_repo(repo), "0" * 40, head)
    assert raised.value.exit_code == EXIT_ABORT and "0" * 12 in raised.value.one_line()
    with pytest.raises(GitError):
        gitio.resolve(gitio.open_repo(repo), "no-such-ref")


@pytest.mark.parametrize("broken", ["head tree", "base tree"])
def test_a_broken_repository_exits_3_with_one_line_and_no_traceback(tmp_path, broken):
    repo = reviewed_repo(tmp_path / "r", {"oracle/catalog.yaml": 'owners:\n  "*": []\nrelations: []\n', "a.txt": "a\n"},
                         {"b.txt": "b\n"})
    tree = git(repo, "rev-parse", f"{'HEAD' if broken == 'head tree' else 'main'}^{{tree}}").strip()
    _loose_object(repo, tree).unlink()  # the commit is there, its tree is gone
    env = {k: v for k, v in os.environ.items() if k != "RELCONSOLE_NO_BIND_FACTS"}
    proc = subprocess.run([sys.executable, "-m", "relconsole", "bind", "--repo", str(repo), "--today",
                           TODAY.isoformat()], capture_output=True, text=True, env=env)
    assert proc.returncode == 3, proc.stderr
    assert "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and proc.stderr.startswith("relconsole: ")


# --- bind's text lines -----------------------------------------------------------------

HOSTILE = ["plain/path.py", "new\nline.py", "tab\there.py", "esc\x1b[31mred.py", "bidi\u202eyp.txt",
           "zero\u200bwidth.md", "sep\u2028arator", "byte\udc9f.bin", "caf\u00e9 doc.md", "nbsp\u00a0x", "del\x7f.c"]


@pytest.mark.parametrize("relations", [(), ("ok.relation",), ("bad\x1b]0;title\x07.rel", "line\nbreak")])
def test_bind_lines_are_literal_of_each_whole_line(relations):
    """``_binding_lines`` (made in parts, for speed) prints what ``literal`` of each whole line,
    with the path through ``one_line``, prints: every control, bidi, separator and undecodable
    byte escaped, in paths and in relation ids alike."""
    from relconsole.cli.review import _binding_lines
    from relconsole.engine.literal import literal, one_line
    from relconsole.engine.repo.owners import Binding

    rows = [Binding(Touched(status, path, None), state, None, relations if state == "owned" else (),
                    relations[:1] if state == "owned" else ())
            for path in HOSTILE for status in ("A", "M") for state in ("owned", "gap", "exempt")]
    expected = [literal(f"{b.touched.status}  {one_line(b.path)}  {b.state}"
                        + (f"  {', '.join(b.relations)}" if b.relations else "")
                        + (f"  (via import: {', '.join(b.via_import)})" if b.via_import else "")) for b in rows]
    assert _binding_lines(rows) == expected
    assert not any(c in "\x1b\u202e\u200b\u2028\udc9f\x7f\x07" for line in expected for c in line)


def test_the_light_repository_handle_reads_dirs_dirtiness_and_objects_as_gitpython_did(tmp_path):
    """``gitio.open_repo`` (no GitPython): the directories GitPython's Repo gave, from the top
    or a subfolder, ``is_dirty`` as GitPython answered it (index or work tree, untracked files
    ignored), and objects through its one cat-file."""
    import git as gitpython
    repo = reviewed_repo(tmp_path / "r", {"a.txt": "a\n", "sub/b.txt": "b\n"})
    for where in (repo, repo / "sub"):
        handle, theirs = gitio.open_repo(where), gitpython.Repo(where, search_parent_directories=True)
        assert (handle.working_tree_dir, handle.git_dir) == (theirs.working_tree_dir, theirs.git_dir)
        assert Path(handle.common_dir).resolve() == Path(theirs.common_dir).resolve()
    handle = gitio.open_repo(repo)
    assert handle.is_dirty() is False
    (repo / "untracked.txt").write_text("u\n")
    assert handle.is_dirty() is False
    (repo / "a.txt").write_text("changed\n")
    assert handle.is_dirty() is True
    git(repo, "add", "a.txt")
    assert handle.is_dirty() is True
    git(repo, "commit", "-qm", "c")
    assert handle.is_dirty() is False
    view = TreeView(handle, git(repo, "rev-parse", "HEAD").strip())
    assert view.read_text("a.txt") == "changed\n" and view.read_bytes("nope") is None
    handle.close()  # a later read starts git cat-file again
    assert view.read_texts(["sub/b.txt", "nope"]) == {"sub/b.txt": "b\n", "nope": None}
    for nowhere in (tmp_path / "absent", tmp_path):
        with pytest.raises(UsageError):
            gitio.open_repo(nowhere)


def test_the_merge_base_asked_with_the_refs_is_git_merge_base_or_nothing(tmp_path):
    """open_with_refs(with_merge_base=True) names the merge base ``git merge-base`` names
    when there is exactly one, and None (so merge_base is asked, and says why) for two
    unrelated histories, several merge bases, or a ref that is a range."""
    repo = tmp_path / "r"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    ident = ("-c", "user.name=t", "-c", "user.email=t@example.invalid")

    def commit(name: str) -> str:
        (repo / name).write_text(name)
        git(repo, "add", name)
        git(repo, *ident, "commit", "-q", "-m", name)
        return git(repo, "rev-parse", "HEAD").strip()

    commit("a")
    git(repo, "checkout", "-q", "-b", "patch")
    commit("b")
    git(repo, "checkout", "-q", "main")
    commit("c")
    _, shas = gitio.open_with_refs(repo, ("patch", "main"), with_merge_base=True)
    assert shas[:2] == gitio.open_with_refs(repo, ("patch", "main"))[1]
    assert shas[2] == git(repo, "merge-base", "main", "patch").strip()
    # a criss-cross: two merge bases, so none is taken from rev-parse
    git(repo, "checkout", "-q", "-b", "x", "patch")
    git(repo, *ident, "merge", "-q", "--no-edit", "main")
    git(repo, "checkout", "-q", "main")
    git(repo, *ident, "merge", "-q", "--no-edit", "patch")
    commit("d")
    git(repo, "checkout", "-q", "x")
    commit("e")
    assert len(git(repo, "merge-base", "--all", "main", "x").split()) == 2
    assert gitio.open_with_refs(repo, ("x", "main"), with_merge_base=True)[1][2] is None
    git(repo, "checkout", "-q", "--orphan", "lone")
    commit("f")
    _, (head, base, found) = gitio.open_with_refs(repo, ("lone", "main"), with_merge_base=True)
    assert head and base and found is None
    with pytest.raises(GitError):
        gitio.merge_base(gitio.open_repo(repo), base, head)
    assert gitio.open_with_refs(repo, ("main..lone", "main"), with_merge_base=True)[1] == [None, None, None]


# Modules review.py imports whose code shapes nothing bind keeps: flags, acks and the checklist
# are worked out again on every bind, and records only name a run's result fields.
NOT_KEPT = {"gate/checklist.py", "gate/flags/acks.py", "gate/flags/patchflags.py", "relations/records.py", "errors.py",
            "literal.py", "atomicfile.py", "repo/config.py"}


def test_every_engine_module_the_review_load_imports_is_in_the_kept_facts_fingerprint():
    """A split of review.py (issue 19 made oracleload, seeds, patchfacts and quarantineload out of
    it) must not leave a part of the load out of the fingerprint: kept facts would then survive
    a change of the code that made them."""
    import ast
    from relconsole.engine.gate import bindfacts
    from relconsole.engine.oracle import parsecache
    covered = set(bindfacts._LOAD_CODE) | set(parsecache._DEPENDS_ON)
    review = bindfacts._ENGINE / "gate" / "review.py"
    imported = set()
    for node in ast.parse(review.read_text()).body:
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("relconsole.engine."):
            module = node.module.removeprefix("relconsole.engine.")
            for alias in node.names:
                target = bindfacts._ENGINE / (module.replace(".", "/") + "/" + alias.name + ".py")
                imported.add(target.relative_to(bindfacts._ENGINE).as_posix() if target.exists()
                             else module.replace(".", "/") + ".py")
    assert "gate/oracleload.py" in imported, "the walk finds the load's parts"
    assert imported - covered - NOT_KEPT == set()
