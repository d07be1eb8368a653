"""Where a relation's miss is shown (engine/gate/missfacts.py), over a real git repository: the
changed lines its subject ran, else the changed lines of the files it owns, else its subject's
definition; never line 1 of a file the patch did not change.

The review is the part of ``Review`` that ``missfacts.where`` reads (the repository, the two
commits, the bindings, the catalog, the layout); the run record is what a run on HEAD
records (``run["executed"]``: the changed lines it ran, ``RunPlan.record_lines``).
"""

from __future__ import annotations

from types import SimpleNamespace

from bench.gitrepo import commit_all, git, reviewed_repo
from relconsole.engine.gate import missfacts
from relconsole.engine.repo.owners import OWNED, Binding
from relconsole.engine.repo.touched import Touched

MOD = "import math\n\n\ndef mean(rows):\n    total = sum(rows)\n    return total / len(rows)\n\n\n" \
      "def spread(rows):\n    return max(rows) - min(rows)\n"
PATCHED = MOD.replace("    total = sum(rows)\n", "    total = sum(sorted(rows))\n").replace(
    "    return max(rows) - min(rows)\n", "    low = min(rows)\n    return max(rows) - low\n")
OTHER = "def name():\n    return 'a'\n"


def review_of(repo, bindings, subject="pkg.mod:mean"):
    relation = SimpleNamespace(id="r.x", subject=subject)
    return SimpleNamespace(root=str(repo), merge_base=git(repo, "rev-parse", "main").strip(),
                           head_sha=git(repo, "rev-parse", "HEAD").strip(), bindings=bindings,
                           catalog=SimpleNamespace(get=lambda rid: relation if rid == "r.x" else None),
                           layout=SimpleNamespace(import_paths=None))


def result_running(executed: dict) -> SimpleNamespace:
    return SimpleNamespace(first=SimpleNamespace(run={"executed": executed}, held=False), reruns=[])


def owned(path: str, status: str = "M", relations=("r.x",)) -> Binding:
    return Binding(Touched(status, path), OWNED, "pkg/**", tuple(relations))


def changed_by_git(repo, path: str) -> set[int]:
    """The new-side lines of ``git diff -U0 main HEAD -- path``'s hunks, read here on their own."""
    import re
    out = set()
    for start, count in re.findall(r"^@@ -\S+ \+(\d+)(?:,(\d+))? @@", git(repo, "diff", "-U0", "main", "HEAD", "--", path),
                                   flags=re.M):
        out |= set(range(int(start), int(start) + int(count or 1)))
    return out


def lines_of(place: dict) -> set[int]:
    return {n for a, b in place["lines"] for n in range(a, b + 1)}


def test_a_miss_is_at_the_changed_lines_its_subject_ran(tmp_path):
    repo = reviewed_repo(tmp_path / "r", {"pkg/__init__.py": "", "pkg/mod.py": MOD, "pkg/other.py": OTHER},
                         {"pkg/mod.py": PATCHED, "pkg/other.py": OTHER + "# note\n"})
    review = review_of(repo, [owned("pkg/mod.py"), owned("pkg/other.py")])
    changed = changed_by_git(repo, "pkg/mod.py")
    mean_line = PATCHED.splitlines().index("    total = sum(sorted(rows))") + 1
    assert mean_line in changed and len(changed) > 1
    [place] = missfacts.where(review, "r.x", result_running({"pkg/mod.py": [mean_line, mean_line + 1]}))
    assert place["path"] == "pkg/mod.py" and place["by"] == "ran"
    assert lines_of(place) == {mean_line}  # the changed line it ran, not the other hunk it did not


def test_without_a_record_of_what_ran_a_miss_is_at_the_changed_lines_of_the_files_it_owns(tmp_path):
    repo = reviewed_repo(tmp_path / "r", {"pkg/mod.py": MOD, "pkg/rows.csv": "a\n1\n2\n"},
                         {"pkg/mod.py": PATCHED, "pkg/rows.csv": "a\n1\n3\n"})
    review = review_of(repo, [owned("pkg/mod.py"), owned("pkg/rows.csv")])
    places = missfacts.where(review, "r.x", result_running({}))
    assert [(p["path"], p["by"]) for p in places] == [("pkg/mod.py", "owned"), ("pkg/rows.csv", "owned")]
    for place in places:
        assert lines_of(place) == changed_by_git(repo, place["path"]) and 1 not in lines_of(place)


def test_a_relation_owning_only_a_deleted_file_is_shown_at_its_subjects_definition(tmp_path):
    repo = reviewed_repo(tmp_path / "r", {"src/pkg/__init__.py": "", "src/pkg/mod.py": MOD, "pkg_old.py": OTHER})
    git(repo, "rm", "-q", "pkg_old.py")
    commit_all(repo, "drop")
    review = review_of(repo, [owned("pkg_old.py", "D")], subject="pkg.mod:spread")
    [place] = missfacts.where(review, "r.x", result_running({}))
    definition = MOD.splitlines().index("def spread(rows):") + 1
    assert place == {"path": "src/pkg/mod.py", "lines": [[definition, definition]], "by": "subject"}
    unknown = review_of(repo, [owned("pkg_old.py", "D")], subject="pkg.mod:nothing_by_that_name")
    assert missfacts.where(unknown, "r.x", result_running({})) == []  # the caller shows the catalog line


def test_the_input_of_the_first_missed_run_is_what_the_message_names():
    inputs = {"path": "oracle/seeds/rows.jsonl", "records": 4, "followup": "rows shuffled 3 times with seed 9",
              "shrunk": [2, 1]}
    held = SimpleNamespace(held=True, seed=1, note="", inputs={})
    missed = SimpleNamespace(held=False, seed=5, note="seed row 2", inputs=inputs)
    facts = missfacts.miss_input(SimpleNamespace(first=held, reruns=[missed]))
    assert facts["seed"] == 5 and facts["note"] == "seed row 2" and facts["shrunk"] == [2, 1]
    words = missfacts.input_words(facts)
    for said in ("oracle/seeds/rows.jsonl (4 rows)", "seed 5", "seed row 2", inputs["followup"], "shrunk input: [2,1]"):
        assert said in words
    assert missfacts.miss_input(SimpleNamespace(first=held, reruns=[])) is None
