"""A miss is the patch's only when the base holds (SPEC §8): a relation that misses on its own
commit is the catalog keeper's to hear first. ``validate`` runs every relation on the base
(exit 5), ``accept`` refuses a ``catalog:`` commit that would miss (exit 64, nothing written),
``check-split`` flags such a commit in a range (exit 1). Small real repositories, real git,
the judge's real worker processes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.gitrepo import commit_all, committed_repo, git, write_files
from relconsole.engine import demo
from relconsole.engine.errors import (EXIT_ABORT, EXIT_BAD_INPUT, EXIT_PASS, EXIT_REJECT, EXIT_USAGE,
                                      CommitRefused)
from relconsole.engine.gate import actions
from relconsole.engine.gate.holdcheck import FAILS, changed_relations
from relconsole.engine.gate.review import load_review
from relconsole.engine.literal import one_line
from relconsole.engine.oracle.catalog import load_catalog
from relconsole.engine.relations.records import short_pair
from tests.conftest import TODAY
from tests.test_cli import cli, repo_args as where

# A version is taken apart and built again; int() drops a leading zero, so "1.01" comes back
# as another text on the base itself.
VERSIONS = '''def parse(row):
    return [int(part) for part in row["text"].split(".")]


def build(parts):
    return {"text": ".".join(str(part) for part in parts)}
'''
CATALOG = """owners:
  "vers.py": [vers.roundtrip]
  "oracle/**": []
relations:
  - id: vers.roundtrip
    kind: roundtrip
    subject: vers:parse
    inverse: vers:build
    input: {seeds: oracle/seeds/versions.jsonl, schema: {text: str}}
    compare: exact
    generate: 0
    statement: a version taken apart and built again is the same text
"""
# generate: 0: these tests are about the seed rows themselves; a str field draws any text, on
# which int() raises (tests/test_drawn_inputs.py has the base miss on a drawn input)
HOLDING = ['{"text": "1.0"}', '{"text": "2.0.1"}']
LEADING_ZERO = '{"text": "1.01"}'


def versions_repo(root: Path, seeds: list[str], catalog: str = CATALOG, code: str = VERSIONS,
                  drafts: list[str] = ()) -> Path:
    """A repository whose ``main`` holds ``vers.py`` (``code``), ``catalog`` and the seeds
    rows ``seeds`` (with ``drafts`` waiting in quarantine for ``vers.roundtrip``)."""
    files = {"vers.py": code, "oracle/__init__.py": "", "oracle/catalog.yaml": catalog,
             "oracle/seeds/versions.jsonl": "".join(row + "\n" for row in seeds)}
    if drafts:
        files["oracle/quarantine/vers.roundtrip.seeds.jsonl"] = "".join(row + "\n" for row in drafts)
    return committed_repo(root, files)


def relation_line(catalog: str, relation_id: str) -> int:
    """The 1-based catalog line of ``- id: relation_id``."""
    return next(n for n, line in enumerate(catalog.splitlines(), 1) if line.strip() == f"- id: {relation_id}")


def git_state(repo: Path) -> tuple[str, ...]:
    """What an accept must leave as it was: every ref, the index, the work tree's changes."""
    return (git(repo, "for-each-ref", "--format=%(refname) %(objectname)"), git(repo, "diff", "--cached"),
            git(repo, "diff"), git(repo, "status", "--porcelain", "--untracked-files=all"))


def test_validate_names_the_seed_row_the_base_misses_with_both_values(tmp_path: Path, capsys):
    rows = [*HOLDING, LEADING_ZERO]
    repo = versions_repo(tmp_path / "r", rows)
    code, _, err = cli(capsys, "validate", *where(repo))
    assert code == EXIT_BAD_INPUT
    [line] = [e for e in err.splitlines() if e.startswith("relconsole:")]  # the others are progress
    assert line.startswith(f"relconsole: oracle/catalog.yaml:{relation_line(CATALOG, 'vers.roundtrip')}: ")
    assert f"seed row {len(rows)} (oracle/seeds/versions.jsonl:{len(rows)}) {LEADING_ZERO}:" in line
    code, out, _ = cli(capsys, "validate", "--json", *where(repo))
    [found] = json.loads(out)["relations"]
    assert code == EXIT_BAD_INPUT and found["state"] == "missed" and found["misses"] == found["runs"] > 1
    assert [r["row"] for r in found["rows"]] == [len(rows)] and found["rows"][0]["text"] == LEADING_ZERO
    # the two values are the run's own: x, and inverse(f(x)), which is another text
    assert json.loads(LEADING_ZERO) in (found["source"], found["followup"]) and found["source"] != found["followup"]
    source, followup = short_pair(found["source"], found["followup"])
    assert f"{source} vs {followup}" in line


def test_the_same_catalog_without_that_row_validates_and_static_runs_nothing(tmp_path: Path, capsys):
    code, out, _ = cli(capsys, "validate", "--json", *where(versions_repo(tmp_path / "good", HOLDING)))
    assert code == EXIT_PASS and [r["state"] for r in json.loads(out)["relations"]] == ["held"]
    code, out, _ = cli(capsys, "validate", "--static", "--json",
                       *where(versions_repo(tmp_path / "bad", [*HOLDING, LEADING_ZERO])))
    payload = json.loads(out)
    assert code == EXIT_PASS and payload["static"] and payload["relations"] == []


def test_a_row_with_a_direction_override_is_named_escaped(tmp_path: Path, capsys):
    """The row's text reaches the terminal through literal.one_line only: JSON lets a seed
    row carry a raw right-to-left override, which would make the line read otherwise."""
    hostile = '{"text": "1.0\u202e"}'
    repo = versions_repo(tmp_path / "r", [*HOLDING, hostile])
    code, _, err = cli(capsys, "validate", *where(repo))
    assert code == EXIT_BAD_INPUT and "\u202e" not in err and one_line(hostile) in err


def test_a_relation_whose_subject_does_not_resolve_is_reported_once(tmp_path: Path, capsys):
    catalog = CATALOG.replace("subject: vers:parse", "subject: vers:prase")
    repo = versions_repo(tmp_path / "r", [*HOLDING, LEADING_ZERO], catalog)
    code, out, _ = cli(capsys, "validate", "--json", *where(repo))
    payload = json.loads(out)
    assert code == EXIT_BAD_INPUT and payload["relations"] == []
    [error] = payload["errors"]
    assert "vers:prase" in error["message"] and error["line"] == relation_line(catalog, "vers.roundtrip")


def test_a_vacuous_relation_is_a_bad_input_file(tmp_path: Path, capsys):
    """Both outputs empty for every non-empty input: the relation proves nothing on the base,
    and every patch it guards would be held."""
    catalog = CATALOG.replace("kind: roundtrip", "kind: idempotence").replace("    inverse: vers:build\n", "")
    code_text = "def parse(row):\n    return []\n"
    code, out, err = cli(capsys, "validate", "--json", *where(versions_repo(tmp_path / "r", HOLDING, catalog, code_text)))
    [found] = json.loads(out)["relations"]
    assert code == EXIT_BAD_INPUT and found["state"] == "vacuous" and "vacuous" in json.loads(out)["errors"][0]["message"]


def test_a_module_the_machine_lacks_is_an_abort_naming_it(tmp_path: Path, capsys):
    """An environment fault: the catalog is not wrong (not 5), and validate cannot say the
    relation holds (not a pass)."""
    code_text = VERSIONS.replace('    return [int(', '    import relconsole_absent_module_h34  # noqa\n    return [int(')
    repo = versions_repo(tmp_path / "r", HOLDING, code=code_text)
    code, _, err = cli(capsys, "validate", *where(repo))
    assert code == EXIT_ABORT and "relconsole_absent_module_h34" in err and "vers.roundtrip" in err


def test_the_sample_oracle_holds_on_its_base(demo_repo: Path, capsys):
    code, out, _ = cli(capsys, "validate", "--json", *where(demo_repo))
    payload = json.loads(out)
    catalog = load_catalog(git(demo_repo, "show", "main:oracle/catalog.yaml"), "oracle/catalog.yaml")
    assert code == EXIT_PASS and payload["errors"] == []
    assert [r["relation_id"] for r in payload["relations"]] == list(catalog.relations)
    assert not [r for r in payload["relations"] if r["state"] in FAILS]
    blocked = [r["relation_id"] for r in payload["relations"] if r["state"] == "blocked"]  # an expired lease
    assert not [w for w in payload["warnings"] if any(rid in w for rid in blocked)]  # the lease's state says it
    code, out, _ = cli(capsys, "validate", *where(demo_repo))
    assert code == EXIT_PASS and all(f"note: relation {rid} was not run on the base" in out for rid in blocked)


def test_an_intermittent_miss_on_the_base_is_a_warning_that_names_the_freeze_policy(demo_repo: Path, capsys):
    """The tour's recorded seed meets bands.repeat_scans' one-in-360,000 miss on main; its
    reruns draw new seeds and hold: every patch meets that miss, a freeze's matter (exit 0)."""
    code, out, _ = cli(capsys, "validate", "--json", "--replay-seed", str(demo.TOUR_RUN_SEED), *where(demo_repo))
    payload = json.loads(out)
    found = {r["relation_id"]: r for r in payload["relations"]}["bands.repeat_scans"]
    assert code == EXIT_PASS and found["state"] == "intermittent" and 0 < found["misses"] < found["runs"]
    [warning] = [w for w in payload["warnings"] if "bands.repeat_scans" in w]
    assert "freeze policy" in warning and f"{found['misses']} of {found['runs']} runs" in warning


def test_accepting_a_seed_row_the_base_misses_is_refused_and_git_is_untouched(tmp_path: Path, capsys):
    repo = versions_repo(tmp_path / "r", HOLDING, drafts=[LEADING_ZERO, '{"text": "4.5"}'])
    write_files(repo, {"vers.py": VERSIONS + "# my unstaged edit\n", "notes.txt": "staged\n"})
    git(repo, "add", "notes.txt")
    before = git_state(repo)
    code, _, err = cli(capsys, "accept", "oracle/quarantine/vers.roundtrip.seeds.jsonl:1", *where(repo))
    assert code == EXIT_USAGE and len(err.strip().splitlines()) == 1
    assert "vers.roundtrip" in err and f"seed row {len(HOLDING) + 1} " in err and LEADING_ZERO in err and " vs " in err
    assert git_state(repo) == before
    assert not list(Path(git(repo, "rev-parse", "--git-dir").strip()).glob("relconsole-index-*"))
    code, out, _ = cli(capsys, "accept", "oracle/quarantine/vers.roundtrip.seeds.jsonl:2", "--json", *where(repo))
    assert code == EXIT_PASS and json.loads(out)["kind"] == "catalog"
    assert git(repo, "show", "main:oracle/seeds/versions.jsonl").splitlines() == [*HOLDING, '{"text": "4.5"}']


def test_the_engine_path_the_console_commits_through_refuses_too(tmp_path: Path):
    """The console's ``c`` and ``relconsole accept`` both call ``actions.accept``."""
    repo = versions_repo(tmp_path / "r", HOLDING, drafts=[LEADING_ZERO])
    before = git_state(repo)
    with load_review(repo, "main", "HEAD", TODAY) as review:
        [row] = review.seed_rows
        with pytest.raises(CommitRefused, match="misses on the catalog: commit"):
            actions.accept(review, [], [row.id])
    assert git_state(repo) == before


def test_check_split_flags_a_catalog_commit_whose_relation_misses_on_its_own_tree(tmp_path: Path, capsys):
    repo = versions_repo(tmp_path / "r", HOLDING)
    start = git(repo, "rev-parse", "HEAD").strip()
    write_files(repo, {"vers.py": VERSIONS + "\n# a code change: no relation runs for it\n"})
    commit_all(repo, "code")
    write_files(repo, {"oracle/seeds/versions.jsonl": "".join(r + "\n" for r in [*HOLDING, LEADING_ZERO])})
    bad = commit_all(repo, "catalog: a seed row with a leading zero")
    code, out, _ = cli(capsys, "check-split", f"{start}..HEAD", "--repo", str(repo))
    [line] = out.strip().splitlines()
    assert code == EXIT_REJECT and line.startswith(f"{bad[:12]} oracle/catalog.yaml: relation vers.roundtrip misses on "
                                                   "its own commit")
    assert f"seed row {len(HOLDING) + 1} " in line and LEADING_ZERO in line
    code, out, _ = cli(capsys, "check-split", f"{start}..HEAD~1", "--repo", str(repo), "--json")
    assert code == EXIT_PASS and json.loads(out)["offences"] == []


def test_a_range_without_catalog_changes_runs_nothing(tmp_path: Path, capsys, monkeypatch):
    repo = versions_repo(tmp_path / "r", [*HOLDING, LEADING_ZERO])  # the base misses; no commit of the range changes it
    start = git(repo, "rev-parse", "HEAD").strip()
    write_files(repo, {"vers.py": VERSIONS + "\n# a code change\n"})
    commit_all(repo, "code")

    def refuse(*_args):
        raise AssertionError("a range without catalog changes ran relations")
    import relconsole.engine.gate.holdcommits as holdcommits
    monkeypatch.setattr(holdcommits, "range_offences", refuse)
    assert cli(capsys, "check-split", f"{start}..HEAD", "--repo", str(repo))[0] == EXIT_PASS


def test_the_staged_hook_runs_no_relation_and_says_so(tmp_path: Path, capsys, monkeypatch):
    repo = versions_repo(tmp_path / "r", HOLDING)
    write_files(repo, {"oracle/seeds/versions.jsonl": "".join(r + "\n" for r in [*HOLDING, LEADING_ZERO])})
    git(repo, "add", "-A")
    monkeypatch.chdir(repo)
    code, _, err = cli(capsys, "check-split", "--staged", "--repo", str(repo))
    assert code == EXIT_PASS and "--staged runs no relation" in err


def test_only_added_or_changed_definitions_and_changed_seeds_count():
    """An owners-only edit changes no relation; a new row, an edited definition or a changed
    seeds file does."""
    before = load_catalog(CATALOG, "oracle/catalog.yaml")
    owners = load_catalog(CATALOG.replace('"oracle/**": []', '"oracle/**": []\n  "docs/**": []'), "oracle/catalog.yaml")
    edited = load_catalog(CATALOG.replace("compare: exact", "compare: canon"), "oracle/catalog.yaml")
    assert changed_relations([before], owners, {"oracle/catalog.yaml"}) == []
    assert changed_relations([before], edited, {"oracle/catalog.yaml"}) == list(edited.relations.values())
    assert changed_relations([before], owners, {"oracle/seeds/versions.jsonl"}) == list(owners.relations.values())
    assert changed_relations([None], before, set()) == list(before.relations.values())
