"""Flags judge what merges (issue 35): each history shape that once hid a pattern from the
commit-by-commit rules is flagged as its one-commit twin is.

Real repositories, real merges: a pattern split across the two sides of a clean merge, a file
renamed to ``.txt``, edited with an encoding cookie and renamed back, and an octopus merge that
takes ``oracle/freezes.json`` from an older base commit.
"""

from __future__ import annotations

import json

from bench.gitrepo import commit_all, git, reviewed_repo, write_files
from conftest import TODAY
from relconsole.engine.gate.review import load_review
from test_exercised import BASE, SQUASH

FREEZE = [{"relation_id": "text.squash", "expires": "2026-12-10", "reruns": 3, "pass_needed": 1,
           "reason": "flaky on CI"}]


def flag_names(repo) -> set[tuple[str, str]]:
    with load_review(repo, "main", today=TODAY) as review:
        return {(f.name, f.path) for f in review.flags}


def one_commit_twin(tmp_path, files: dict) -> set[tuple[str, str]]:
    return flag_names(reviewed_repo(tmp_path / "twin", BASE, files))


def test_a_pattern_split_across_the_two_sides_of_a_clean_merge_is_flagged(tmp_path):
    probed = SQUASH.replace("def squash", "import os\n\n\ndef squash").replace(
        '    return " "', '    if os.getppid() != 1:\n        return text\n    return " "')
    repo = reviewed_repo(tmp_path / "repo", BASE)
    git(repo, "checkout", "-q", "-b", "side-a")
    write_files(repo, {"timelib/squash.py": "import os\n\n\n" + SQUASH})
    commit_all(repo, "side a: an import")
    git(repo, "checkout", "-q", "patch")
    write_files(repo, {"timelib/squash.py": SQUASH.replace(
        '    return " "', '    if os.getppid() != 1:\n        return text\n    return " "')})
    commit_all(repo, "side b: the use")
    git(repo, "merge", "-q", "--no-edit", "side-a")
    merged = (repo / "timelib/squash.py").read_text()
    assert "import os" in merged and "getppid" in merged  # the clean merge holds both halves
    twin = one_commit_twin(tmp_path, {"timelib/squash.py": probed})
    assert ("environment_probe", "timelib/squash.py") in twin
    assert ("environment_probe", "timelib/squash.py") in flag_names(repo)


def test_a_rename_round_trip_with_an_encoding_cookie_is_flagged(tmp_path):
    # under utf-7, "+ACI-" is a quote: Python reads other text than the diff shows
    cookie = "# coding: utf-7\nMARK = 'x+ACI-'\n" + SQUASH.replace('    return " "', '    import os\n    os.getppid()\n    return " "')
    repo = reviewed_repo(tmp_path / "repo", BASE)
    git(repo, "mv", "timelib/squash.py", "timelib/squash.txt")
    git(repo, "commit", "-qm", "park it")
    (repo / "timelib/squash.txt").write_text(cookie)
    commit_all(repo, "edit it as text")
    git(repo, "mv", "timelib/squash.txt", "timelib/squash.py")
    git(repo, "commit", "-qm", "bring it back")
    twin = one_commit_twin(tmp_path, {"timelib/squash.py": cookie})
    wanted = {("environment_probe", "timelib/squash.py"), ("source_rewritten", "timelib/squash.py")}
    assert wanted <= twin
    assert wanted <= flag_names(repo)


def test_an_octopus_merge_that_restores_an_older_oracle_file_is_flagged(tmp_path):
    base = BASE | {"oracle/freezes.json": json.dumps(FREEZE) + "\n"}
    repo = reviewed_repo(tmp_path / "repo", base)
    git(repo, "checkout", "-q", "main")
    write_files(repo, {"oracle/freezes.json": "[]\n"})
    commit_all(repo, "freeze: the flake is fixed")
    old = git(repo, "rev-parse", "HEAD~1").strip()
    git(repo, "checkout", "-q", "-B", "patch")
    heads = []
    for name in ("one", "two"):
        git(repo, "checkout", "-q", "-b", name, "main")
        write_files(repo, {f"notes/{name}.md": name + "\n"})
        commit_all(repo, f"notes {name}")
        heads.append(git(repo, "rev-parse", "HEAD").strip())
    git(repo, "checkout", "-q", "patch")
    git(repo, "merge", "-q", "--no-ff", "--no-edit", "one", "two")  # an octopus merge
    git(repo, "checkout", old, "--", "oracle/freezes.json")  # the older base commit's file, in the merge
    git(repo, "commit", "-q", "--amend", "--no-edit")
    parents = git(repo, "log", "-1", "--format=%P").split()
    assert len(parents) == 3
    names = {n for n, path in flag_names(repo) if path == "oracle/freezes.json"}
    assert {"protected_path_changed", "freeze_row_added"} <= names, names


def test_a_probe_renamed_out_of_a_test_into_the_package_is_new_there(tmp_path):
    """Red team, issue 35: git pairs a deleted test and an added package module as a rename;
    the test's probe was never judged (tests are not probed), so it is new in the package."""
    helper = "import os\n\n\ndef parent_is_init():\n    return os.getppid() == 1\n"
    base = BASE | {"tests/test_env.py": helper + "\n\ndef test_it():\n    assert parent_is_init() in (True, False)\n"}
    repo = reviewed_repo(tmp_path / "repo", base)
    git(repo, "mv", "tests/test_env.py", "timelib/_env.py")
    write_files(repo, {"timelib/_env.py": helper,
                       "timelib/squash.py": "from timelib._env import parent_is_init\n\n\n" + SQUASH.replace(
                           '    return " "', '    if parent_is_init():\n        return text\n    return " "')})
    commit_all(repo, "move a helper")
    assert ("environment_probe", "timelib/_env.py") in flag_names(repo)
