"""The split check (SPEC §9): `relconsole check-split BASE..HEAD` over crafted histories."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from relconsole.cli.main import main
from bench.gitrepo import git, init_repo

ROOT = Path(__file__).resolve().parents[1]

ODD = ['src/a file.py', 'src/"quoted".py', 'src/naïve-ü.py']


def commit(repo: Path, message: str, files: dict[str, str | None]) -> str:
    """Write (or, for None, delete) ``files`` and commit them; returns the sha."""
    for path, text in files.items():
        target = repo / path
        if text is None:
            git(repo, "rm", "-q", "--", path)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        git(repo, "add", "--", path)
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD").strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = init_repo(tmp_path / "r")
    commit(root, "base", {"src/app.py": "v1\n", "oracle/catalog.yaml": "relations: []\n",
                          "oracle/freezes.json": "[]\n", "oracle/leases/a.yaml": "id: a\n",
                          "oracle/leases/b.yaml": "id: b\n", "oracle/quarantine/c.yaml": "id: c\n",
                          "oracle/seeds/s.jsonl": "{}\n"})
    git(root, "tag", "start")
    return root


def check(capsys, repo: Path, *extra: str) -> tuple[int, list[dict]]:
    code = main(["check-split", "start..HEAD", "--repo", str(repo), "--json", *extra])
    return code, json.loads(capsys.readouterr().out)["offences"]


def test_a_history_that_follows_the_rules_passes(repo, capsys):
    commit(repo, "code", {"src/app.py": "v2\n", **{p: "x\n" for p in ODD}})
    commit(repo, "catalog: accept c", {"oracle/catalog.yaml": "relations: [c]\n", "oracle/seeds/s.jsonl": "{}\n{}\n",
                                       "oracle/quarantine/c.yaml": None})
    commit(repo, "freeze: f", {"oracle/freezes.json": "[{}]\n"})
    commit(repo, "lease: a", {"oracle/leases/a.yaml": "id: a\nexpires: 2027-01-01\n"})
    commit(repo, "oracle adapter", {"oracle/adapters.py": "def merge(a, b): return a + b\n"})
    assert check(capsys, repo) == (0, [])


@pytest.mark.parametrize("files,offending", [
    ({"src/app.py": "v2\n", "oracle/catalog.yaml": "relations: [x]\n"}, {"src/app.py"}),
    ({ODD[0]: "x\n", ODD[1]: "x\n", ODD[2]: "x\n", "oracle/freezes.json": "[1]\n"}, set(ODD)),
    ({"oracle/catalog.yaml": "relations: [x]\n", "oracle/freezes.json": "[1]\n"},
     {"oracle/catalog.yaml", "oracle/freezes.json"}),
    ({"oracle/leases/a.yaml": "id: a\nx: 1\n", "oracle/leases/b.yaml": "id: b\nx: 1\n"},
     {"oracle/leases/a.yaml", "oracle/leases/b.yaml"}),
    ({"oracle/freezes.json": "[1]\n", "oracle/leases/a.yaml": "id: a\nx: 1\n"},
     {"oracle/freezes.json", "oracle/leases/a.yaml"}),
], ids=["protected+code", "odd-names", "catalog+freeze", "two-leases", "freeze+lease"])
def test_each_kind_of_mix_fails_on_exactly_its_commit_and_paths(repo, capsys, files, offending):
    clean = commit(repo, "clean before", {"src/app.py": "before\n"})
    bad = commit(repo, "mixed", files)
    commit(repo, "clean after", {"src/app.py": "after\n"})
    code, found = check(capsys, repo)
    assert code == 1
    assert {o["commit"] for o in found} == {bad} and clean not in {o["commit"] for o in found}
    assert {o["path"] for o in found} == offending


def test_a_rename_out_of_the_protected_tree_is_a_mix(repo, capsys):
    git(repo, "mv", "oracle/quarantine/c.yaml", "src/c.yaml")
    git(repo, "commit", "-q", "-m", "move a candidate out")
    code, found = check(capsys, repo)
    assert code == 1 and [o["path"] for o in found] == ["src/c.yaml"]


def test_a_deletion_counts_like_any_change(repo, capsys):
    commit(repo, "drop", {"src/app.py": None, "oracle/freezes.json": None})
    code, found = check(capsys, repo)
    assert code == 1 and [o["path"] for o in found] == ["src/app.py"]


def test_merges_are_judged_by_what_they_add(repo, capsys):
    git(repo, "checkout", "-q", "-b", "side")
    commit(repo, "freeze: side", {"oracle/freezes.json": "[2]\n"})
    git(repo, "checkout", "-q", "main")
    commit(repo, "code", {"src/app.py": "main\n"})
    git(repo, "merge", "-q", "--no-edit", "side")
    assert check(capsys, repo) == (0, [])  # a clean merge of commits that keep the rules
    git(repo, "checkout", "-q", "-b", "side2", "HEAD~1")
    commit(repo, "freeze: side2", {"oracle/freezes.json": "[3]\n"})
    git(repo, "checkout", "-q", "main")
    git(repo, "merge", "-q", "--no-commit", "side2", check=False)
    (repo / "oracle" / "freezes.json").write_text("[2, 3]\n")  # resolve the conflict ...
    (repo / "src" / "app.py").write_text("evil\n")  # ... and slip in a code change
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--no-edit")
    merge = git(repo, "rev-parse", "HEAD").strip()
    code, found = check(capsys, repo)
    assert code == 1 and {(o["commit"], o["path"]) for o in found} == {(merge, "src/app.py")}


def test_a_merged_history_with_its_own_root_commit_is_judged_like_any(repo, capsys):
    """Round 10: an orphan branch merged with --allow-unrelated-histories brings a root commit
    (no parent) into the range; it is read, and a mix in it is found, not a git-output error."""
    git(repo, "checkout", "-q", "--orphan", "orphan")
    git(repo, "rm", "-rfq", ".")
    root = commit(repo, "side history", {"src/other.py": "x\n", "oracle/freezes.json": "[9]\n"})
    git(repo, "checkout", "-q", "main")
    git(repo, "merge", "-q", "--no-edit", "--allow-unrelated-histories", "-X", "theirs", "orphan")
    code, found = check(capsys, repo)
    assert code == 1 and root in {o["commit"] for o in found}, found


def test_staged_mode_is_the_pre_commit_hook(repo, capsys):
    (repo / "src" / "app.py").write_text("v3\n")
    (repo / "oracle" / "freezes.json").write_text("[9]\n")
    git(repo, "add", "-A")
    assert main(["check-split", "--staged", "--repo", str(repo)]) == 1
    assert "src/app.py" in capsys.readouterr().out
    git(repo, "reset", "-q", "oracle/freezes.json")
    assert main(["check-split", "--staged", "--repo", str(repo)]) == 0


def test_text_output_names_commit_and_path_and_bad_ranges_are_refused(repo, capsys):
    bad = commit(repo, "mixed", {"src/app.py": "v2\n", "oracle/freezes.json": "[1]\n"})
    assert main(["check-split", "start..HEAD", "--repo", str(repo)]) == 1
    [line] = capsys.readouterr().out.splitlines()  # one line per offending commit and path
    assert line.startswith(f"{bad[:12]} src/app.py:") and "oracle/freezes.json" in line
    assert main(["check-split", "HEAD", "--repo", str(repo)]) == 64
    assert main(["check-split", "nope..HEAD", "--repo", str(repo)]) == 3
    assert main(["check-split", "--repo", str(repo)]) == 64


def test_the_project_history_keeps_the_rules(tmp_path, capsys):
    """relconsole's own history keeps §9 (its oracle/ was added in commits of their own),
    and one mixed commit on top of a clone of it makes the same check fail on that commit."""
    root = Path(__file__).resolve().parents[1]
    if not (root / ".git").exists():
        pytest.skip("not a git checkout")
    first = git(root, "rev-list", "--max-parents=0", "HEAD").split()[0]
    if git(root, "ls-tree", "--name-only", "HEAD", "oracle/").strip():
        assert git(root, "log", "--format=%H", f"{first}..HEAD", "--", "oracle/").strip()  # not vacuous
    assert main(["check-split", f"{first}..HEAD", "--repo", str(root), "--static"]) == 0
    # the relations of the newest catalog commit hold on it (every one of them: 2 minutes, run by CI)
    newest = git(root, "log", "-1", "--format=%H", "--", "oracle/catalog.yaml").strip()
    if newest:
        assert main(["check-split", f"{newest}^..{newest}", "--repo", str(root)]) == 0
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(root), str(clone))
    git(clone, "config", "user.name", "t")
    git(clone, "config", "user.email", "t@example.invalid")
    mixed = commit(clone, "mixed", {"oracle/seeds/extra.jsonl": "{}\n", "README.md": "changed\n"})
    capsys.readouterr()
    assert main(["check-split", f"{first}..HEAD", "--repo", str(clone), "--static"]) == 1
    out = capsys.readouterr().out
    assert mixed[:12] in out and "README.md" in out and len(out.strip().splitlines()) == 1


def test_the_gate_is_read_from_the_base_so_a_branch_cannot_move_it(repo, capsys):
    commit(repo, "unprotect", {"pyproject.toml": "[tool.relconsole]\nprotected = []\n"})
    bad = commit(repo, "mixed", {"src/app.py": "v2\n", "oracle/catalog.yaml": "relations: [x]\n"})
    code, found = check(capsys, repo)
    assert code == 1 and {o["commit"] for o in found} >= {bad}


def test_odd_bytes_in_names_never_hide_a_mix(repo, capsys):
    names = ["src/a\x01b.py", "src/\x01", "src/-x \\ 'q' \t.py"]
    bad = commit(repo, "odd", {**{n: "x\n" for n in names}, "oracle/catalog.yaml": "relations: [x]\n"})
    code, found = check(capsys, repo)
    assert code == 1 and {o["path"] for o in found} == set(names) and {o["commit"] for o in found} == {bad}


def test_a_kind_file_beside_another_oracle_file_is_a_mix_but_a_lease_rename_is_one_lease(repo, capsys):
    bad = commit(repo, "freeze and pins", {"oracle/freezes.json": "[1]\n", "oracle/pins.json": "{}\n"})
    git(repo, "mv", "oracle/leases/a.yaml", "oracle/leases/renamed.yaml")
    git(repo, "commit", "-q", "-m", "lease: rename")
    code, found = check(capsys, repo)
    assert code == 1 and {(o["commit"], o["path"]) for o in found} == {(bad, "oracle/pins.json")}


def test_a_shallow_range_aborts_and_a_bare_repository_is_checked(repo, capsys, tmp_path):
    commit(repo, "mixed", {"src/app.py": "v2\n", "oracle/freezes.json": "[1]\n"})
    commit(repo, "code", {"src/app.py": "v3\n"})
    bare = tmp_path / "bare.git"
    git(tmp_path, "clone", "-q", "--bare", str(repo), str(bare))
    assert main(["check-split", "start..HEAD", "--repo", str(bare)]) == 1
    shallow = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "2", repo.as_uri(), str(shallow))
    capsys.readouterr()
    assert main(["check-split", "HEAD~1..HEAD", "--repo", str(shallow)]) == 0
    assert main(["check-split", "HEAD~2..HEAD", "--repo", str(shallow)]) == 3
    assert "fetch" in capsys.readouterr().err


def test_the_commit_that_creates_the_oracle_stands_alone_and_a_catalog_row_brings_its_adapter(tmp_path, capsys):
    """Issue 16: there was no legal way to add an oracle to an existing repository. The commit
    that creates the catalog (its parent has none) is the ``oracle: init`` kind (§9): every
    oracle file and pyproject.toml at once, nothing else. A catalog: commit may bring the
    adapter module its rows name."""
    root = _code_only(tmp_path / "r")
    commit(root, "oracle: init", {"oracle/catalog.yaml": "relations: []\n", "oracle/freezes.json": "[]\n",
                                  "oracle/leases/a.yaml": "id: a\n", "oracle/adapters.py": "\n",
                                  "pyproject.toml": "[tool.relconsole]\n"})
    commit(root, "catalog: a row and its adapter", {"oracle/catalog.yaml": "relations: [x]\n",
                                                    "oracle/adapters.py": "def merge(a, b): return a\n"})
    assert check(capsys, root) == (0, [])
    bad = commit(root, "oracle: init again", {"oracle/freezes.json": "[1]\n", "oracle/catalog.yaml": "relations: [y]\n"})
    code, found = check(capsys, root)  # the catalog exists now: an ordinary mix of two kinds
    assert code == 1 and {o["commit"] for o in found} == {bad}
    other = _code_only(tmp_path / "o")
    commit(other, "oracle: init and code", {"oracle/catalog.yaml": "relations: []\n", "src/app.py": "v2\n"})
    code, found = check(capsys, other)
    assert code == 1 and [o["path"] for o in found] == ["src/app.py"]
    (other / "oracle").mkdir(exist_ok=True)
    assert main(["check-split", "--staged", "--repo", str(other)]) == 0


def _code_only(root: Path) -> Path:
    """A repository with code and no oracle yet, its first commit tagged ``start``."""
    init_repo(root)
    commit(root, "code", {"src/app.py": "v1\n"})
    git(root, "tag", "start")
    return root


@pytest.mark.parametrize("mix, clean", [
    (["-a"], ["--", "src/app.py"]),
    (["--", "src/app.py", "oracle/freezes.json"], ["--", "src/app.py"]),
    (["-i", "oracle/freezes.json"], ["-i", "src/app.py"]),  # src/app.py staged beforehand
])
def test_the_hook_judges_the_index_git_commits_with_commit_a_and_paths(repo, mix, clean):
    """``git commit -a`` and ``git commit -- PATHS`` commit a temporary index named by
    GIT_INDEX_FILE; the hook read the repository's own index and let a mix through (issue 17)."""
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text(f"#!/bin/sh\nexec {sys.executable} -m relconsole check-split --staged\n")
    hook.chmod(0o755)
    (repo / "src" / "app.py").write_text("v3\n")
    (repo / "oracle" / "freezes.json").write_text("[9]\n")
    if mix[0] == "-i":
        git(repo, "add", "src/app.py")
    tip = git(repo, "rev-parse", "HEAD")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")} | {"PYTHONPATH": str(ROOT)}

    def commit_with(args: list[str]) -> subprocess.CompletedProcess:
        return subprocess.run(["git", "commit", "-q", "-m", "by the hook", *args], cwd=repo, env=env,
                              capture_output=True, text=True, check=False)
    refused = commit_with(mix)
    assert refused.returncode != 0 and "mixes the protected path" in refused.stdout + refused.stderr, refused
    assert git(repo, "rev-parse", "HEAD") == tip
    git(repo, "checkout", "--", "oracle/freezes.json")
    assert commit_with(clean).returncode == 0
    assert git(repo, "show", "--name-only", "--format=", "HEAD").split() == ["src/app.py"]


def test_the_hook_judges_an_amended_commit_as_a_whole(repo):
    """Red team: ``git commit --amend`` folds the staged paths into HEAD; the hook compared the
    index with HEAD (the commit being replaced) and let code plus a seeds row through."""
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text(f"#!/bin/sh\nexec {sys.executable} -m relconsole check-split --staged\n")
    hook.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")} | {"PYTHONPATH": str(ROOT)}

    def git_commit(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["git", "commit", "-q", *args], cwd=repo, env=env, capture_output=True, text=True,
                              check=False)
    (repo / "src" / "app.py").write_text("v4\n")
    git(repo, "add", "src/app.py")
    assert git_commit("-m", "code").returncode == 0
    code_commit = git(repo, "rev-parse", "HEAD")
    (repo / "oracle" / "seeds" / "s.jsonl").write_text("{}\n{\"a\": 1}\n")
    git(repo, "add", "oracle/seeds/s.jsonl")
    refused = git_commit("--amend", "--no-edit")
    assert refused.returncode != 0 and "mixes the protected path" in refused.stdout + refused.stderr, refused
    assert git(repo, "rev-parse", "HEAD") == code_commit
    git(repo, "reset", "-q", "oracle/seeds/s.jsonl")
    (repo / "src" / "app.py").write_text("v5\n")
    git(repo, "add", "src/app.py")
    assert git_commit("--amend", "--no-edit").returncode == 0  # code amended with code: fine


def test_a_clean_range_says_what_it_checked(repo, capsys):
    """Issue 18: check-split printed nothing on success; now the range and how many commits."""
    for n in range(3):
        commit(repo, f"code {n}", {"src/app.py": f"v{n + 2}\n"})
    counted = int(git(repo, "rev-list", "--count", "start..HEAD"))
    assert main(["check-split", "start..HEAD", "--repo", str(repo)]) == 0
    [line] = capsys.readouterr().out.splitlines()
    assert "start..HEAD" in line and f"{counted} commits" in line
    code = main(["check-split", "start..HEAD", "--repo", str(repo), "--json"])
    payload = json.loads(capsys.readouterr().out)
    assert code == 0 and (payload["range"], payload["commits_checked"], payload["offences"]) == ("start..HEAD", counted, [])
    assert payload["staged"] is False


def test_one_commit_is_counted_in_the_singular(repo, capsys):
    commit(repo, "code", {"src/app.py": "v2\n"})
    assert main(["check-split", "start..HEAD", "--repo", str(repo)]) == 0
    out = capsys.readouterr().out
    assert "1 commit " in out and "1 commits" not in out


def test_an_offending_range_keeps_one_stdout_line_per_offence_and_counts_in_json(repo, capsys):
    commit(repo, "code", {"src/app.py": "v2\n"})
    commit(repo, "mixed", {"src/app.py": "v3\n", "oracle/freezes.json": "[1]\n"})
    assert main(["check-split", "start..HEAD", "--repo", str(repo), "--json"]) == 1
    payload = json.loads(capsys.readouterr().out)
    assert payload["commits_checked"] == 2 and len(payload["offences"]) == 1
    assert main(["check-split", "start..HEAD", "--repo", str(repo)]) == 1
    captured = capsys.readouterr()
    assert len(captured.out.splitlines()) == 1 and "2 commits" in captured.err


def test_a_clean_staged_commit_says_what_it_checked(repo, capsys):
    (repo / "src" / "app.py").write_text("v3\n")
    git(repo, "add", "-A")
    assert main(["check-split", "--staged", "--repo", str(repo)]) == 0
    [line] = capsys.readouterr().out.splitlines()
    assert "staged" in line and "1 path" in line
    assert main(["check-split", "--staged", "--repo", str(repo), "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert (payload["range"], payload["staged"], payload["commits_checked"], payload["offences"]) == (None, True, 1, [])


@pytest.mark.parametrize("spec", ["..HEAD", " ..HEAD", "start..", "start.. ", "...HEAD", "start..HEAD "])
def test_a_range_with_an_empty_side_is_a_usage_error_not_a_pass(repo, capsys, spec):
    """`"$(git merge-base …)..HEAD"` is `..HEAD` when merge-base fails (a shallow clone): git
    reads it as HEAD..HEAD, no commit was checked, and a mixed commit passed (new-user trial)."""
    commit(repo, "mixed", {"src/app.py": "v2\n", "oracle/catalog.yaml": "relations: [x]\n"})
    assert check(capsys, repo)[0] == 1  # the whole range finds the mix
    code = main(["check-split", spec, "--repo", str(repo)])
    assert code == 64 and "empty or blank side" in capsys.readouterr().err


@pytest.mark.parametrize("spec", ["nope..HEAD", "start..nope", "nope...HEAD", "no\x1b[31mpe..HEAD"])
def test_an_unknown_revision_is_one_line_naming_it_not_gits_words(repo, capsys, spec):
    """git's own "fatal: bad revision 'nope..HEAD'" reached the user raw (issue 17): one line
    naming the revision that is unknown, escaped, with check-split's exit code for it (3)."""
    commit(repo, "code", {"src/app.py": "v2\n"})
    code = main(["check-split", spec, "--repo", str(repo)])
    captured = capsys.readouterr()
    [line] = captured.err.splitlines()
    bad = next(side for side in spec.replace("...", "..").split("..") if "no" in side)
    assert code == 3 and captured.out == ""
    assert "fatal" not in line and "\x1b" not in line and bad.replace("\x1b", "\\x1b") in line, line
