"""``relconsole propose`` (SPEC §10): drafted candidates and seed rows land in quarantine.

The drafters are small Python scripts written into ``tmp_path`` and run as
``sys.executable script.py``: each saves the prompt it was given and prints a scripted
answer. The repository is the materialised sample project (``agent/patch`` checked out),
and every test that runs a drafter checks what changed in it: only quarantine files, and
nothing at all when the drafter fails.
"""

from __future__ import annotations

import csv
import datetime as dt
import hashlib
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.gitrepo import git
from conftest import TODAY
from relconsole import schemas
import relconsole.cli.main as cli
from relconsole.engine.drafting.drafter import DrafterError, run_drafter
from relconsole.engine.drafting.judge import (commit_candidates, commit_seed_rows, judge_candidates, judge_seed_rows,
                                              provenance)
from relconsole.engine.drafting.parse import drafted_items
from relconsole.engine.drafting.prompt import (REQUIRED_FIELDS, TICKET_LIMIT_BYTES, candidate_prompt, read_ticket,
                                               review_diff)
from relconsole.engine.drafting.quarantine import seeds_quarantine_path
from relconsole.engine.oracle.candidatecheck import validate_candidate
from relconsole.engine.oracle.seedrows import validate_seed_rows
from relconsole.engine.errors import (EXIT_ABORT, EXIT_BAD_INPUT, EXIT_PASS, EXIT_REJECT,
                                      EXIT_USAGE, BadInputError)
from relconsole.engine.gate.review import load_review
from relconsole.engine.repo.splitcheck import check_split
from relconsole.engine.oracle.yamlload import dump_yaml

QUARANTINE = "oracle/quarantine"
SEEDS_QUARANTINE = f"{QUARANTINE}/rollout.monotonic.seeds.jsonl"
SEEDS_FILE = "oracle/seeds/rollout.jsonl"

GOOD = {
    "id": "penguins.flipper_shuffle",
    "transform": "permute",
    "compare": "canon",
    "quantum": 1.0e-9,
    "subject": "aggregator:summarize",
    "input": {"lease": "penguins"},
    "params": {"shuffles": 4, "seed": 5},
    "statement": "Shuffling the rows leaves each species' flipper_length_mm sum unchanged.",
    "must_not": "assert a literal flipper_length_mm total in a test",
}
ANSWERING = dict(GOOD, id="penguins.answering", params={"shuffles": 4, "expected_total": 1234.5})
VACUOUS = dict(GOOD, id="penguins.vacuous", statement="Shuffling changes nothing.", params={})


# --- helpers -----------------------------------------------------------------------------

def drafter(tmp_path: Path, output: str | bytes, code: str = "") -> str:
    """A drafter command: a script that saves its stdin to ``prompt.txt``, runs ``code``,
    then prints ``output`` exactly (kept in a file beside it, so no quoting is involved)."""
    data = output.encode("utf-8") if isinstance(output, str) else output
    answer = tmp_path / f"answer-{hashlib.sha256(data).hexdigest()[:12]}.txt"
    answer.write_bytes(data)
    script = tmp_path / f"drafter-{answer.stem}.py"
    script.write_text(
        "import sys, pathlib\n"
        f"pathlib.Path({str(tmp_path / 'prompt.txt')!r}).write_bytes(sys.stdin.buffer.read())\n"
        f"{code}\n"
        f"sys.stdout.buffer.write(pathlib.Path({str(answer)!r}).read_bytes())\n")
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}"


def run(repo: Path, *args: str) -> int:
    return cli.main(["propose", "--repo", str(repo), "--today", TODAY.isoformat(), *args])


def run_json(repo: Path, capsys, *args: str) -> tuple[int, dict]:
    code = run(repo, *args, "--json")
    return code, json.loads(capsys.readouterr().out)


def snapshot(repo: Path) -> dict:
    """Everything propose must leave alone: work-tree bytes, index entries, refs, HEAD, status."""
    files = {p.relative_to(repo).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
             for p in sorted(repo.rglob("*")) if p.is_file() and ".git" not in p.relative_to(repo).parts}
    return {"files": files, "index": git(repo, "ls-files", "-s"), "refs": git(repo, "for-each-ref"),
            "head": git(repo, "symbolic-ref", "HEAD"),
            "status": git(repo, "status", "--porcelain", "--untracked-files=all", "--ignored")}


def changed_files(before: dict, after: dict) -> set[str]:
    old, new = before["files"], after["files"]
    return {p for p in old.keys() | new.keys() if old.get(p) != new.get(p)}


def user_state(repo: Path) -> dict:
    """What propose must leave alone whichever branch is checked out: the snapshot without
    the oracle branch's ref, which its quarantine: commit moves."""
    state = snapshot(repo)
    del state["refs"]
    return state


def on_main(repo: Path, path: str) -> str | None:
    """The file ``path`` as the oracle branch (main) holds it, or None."""
    proc = subprocess.run(["git", "show", f"main:{path}"], cwd=repo, capture_output=True, text=True)
    return proc.stdout if proc.returncode == 0 else None


def main_commit(repo: Path, rev: str = "main") -> tuple[str, list[str]]:
    """(subject, changed paths) of the commit ``rev``."""
    subject = git(repo, "log", "-1", "--format=%s", rev).strip()
    paths = git(repo, "show", "--format=", "--name-only", rev).split()
    return subject, paths


def commit_on_main(repo: Path, change) -> None:
    """Run ``change(worktree)`` in a linked worktree of main, commit everything it did to
    the oracle there, and remove that worktree: the user's checkout is never touched."""
    other = repo.parent / f"main-{len(list(repo.parent.iterdir()))}"
    git(repo, "worktree", "add", "-q", str(other), "main")
    change(other)
    git(other, "add", "-A", "oracle")
    git(other, "commit", "-q", "-m", "quarantine: set up by the test")
    git(repo, "worktree", "remove", "--force", str(other))


def fenced(items) -> str:
    return f"Here are my candidates.\n\n```yaml\n{dump_yaml(items)}```\nHope this helps!\n"


# --- the prompt --------------------------------------------------------------------------

def test_prompt_carries_the_ticket_the_diff_and_the_input_schema(demo_repo, tmp_path, capsys):
    ticket = tmp_path / "DATA-142.md"
    ticket.write_text("DATA-142: parallelise the per-species summary; keep totals stable ✓\n")
    code = run(demo_repo, "--drafter", drafter(tmp_path, dump_yaml(GOOD)), "--ticket", str(ticket))
    assert code == EXIT_PASS
    prompt = (tmp_path / "prompt.txt").read_text(encoding="utf-8")
    assert ticket.read_text() in prompt
    base = git(demo_repo, "merge-base", "main", "HEAD").strip()
    added = [line for line in git(demo_repo, "diff", base, "HEAD").splitlines()
             if line.startswith("+") and not line.startswith("+++") and line.strip("+ ")]
    assert added and all(line in prompt for line in added)
    with open(demo_repo / "oracle" / "data" / "penguins.csv", newline="") as handle:
        header = next(csv.reader(handle))
    assert f"fields {', '.join(header)}" in prompt  # the touched relations' lease corpus
    assert all(f in prompt for f in REQUIRED_FIELDS)
    assert "drafted_by" in prompt and "lease_id" in prompt  # told what relconsole sets and what is refused


def test_seeds_prompt_carries_the_schema_and_existing_rows(demo_repo, tmp_path, capsys):
    run(demo_repo, "--seeds", "rollout.monotonic",
        "--drafter", drafter(tmp_path, '{"percent": 33, "salt": "x", "population": 7}\n'))
    prompt = (tmp_path / "prompt.txt").read_text(encoding="utf-8")
    catalog = yaml.safe_load((demo_repo / "oracle" / "catalog.yaml").read_text())
    schema = next(r for r in catalog["relations"] if r["id"] == "rollout.monotonic")["input"]["schema"]
    assert json.dumps(schema) in prompt
    first = (demo_repo / SEEDS_FILE).read_text().splitlines()[0]
    assert json.dumps(json.loads(first)) in prompt


def test_a_long_diff_is_cut_at_a_line_end_with_a_note(demo_repo):
    with load_review(demo_repo, today=TODAY) as review:
        whole, _, total = review_diff(review, 10 ** 9)
        cut = candidate_prompt(review, None, diff_limit=total // 3)
        kept, _, _ = review_diff(review, total // 3)
    assert cut.diff_truncated and cut.diff_bytes <= total // 3 < total == cut.diff_total
    assert whole.startswith(kept) and kept.endswith("\n")
    assert f"first {cut.diff_bytes} of {total} bytes" in cut.text


def test_print_prompt_runs_nothing_and_writes_nothing(demo_repo, capsys):
    before = snapshot(demo_repo)
    assert run(demo_repo, "--print-prompt") == EXIT_PASS
    assert "=== Output ===" in capsys.readouterr().out
    assert snapshot(demo_repo) == before


# --- candidates --------------------------------------------------------------------------

def test_a_good_candidate_is_committed_onto_the_oracle_branch_with_relconsoles_provenance(
        demo_repo, tmp_path, capsys):
    claimed = dict(GOOD, drafted_by="gpt-imaginary", drafted_at="1999-01-01T00:00:00Z", source="trust me")
    command = drafter(tmp_path, dump_yaml(claimed))
    before = user_state(demo_repo)
    main_before = git(demo_repo, "rev-parse", "main").strip()
    start = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
    code, out = run_json(demo_repo, capsys, "--drafter", command)
    assert code == EXIT_PASS
    path = f"{QUARANTINE}/{GOOD['id']}.yaml"
    assert out["written"] == [path]
    # one quarantine: commit on main holding exactly the drafted file; the agent's branch,
    # its work tree and index are as they were (SPEC §9)
    assert user_state(demo_repo) == before
    assert git(demo_repo, "rev-parse", "main~1").strip() == main_before
    subject, paths = main_commit(demo_repo)
    assert subject.startswith("quarantine:") and GOOD["id"] in subject and paths == [path]
    assert out["commit"]["sha"] == git(demo_repo, "rev-parse", "main").strip()
    assert check_split(demo_repo, "main~1..main") == []
    written = yaml.safe_load(on_main(demo_repo, path))
    assert written["drafted_by"] == command and written["source"] != "trust me"
    stamped = dt.datetime.fromisoformat(written["drafted_at"].replace("Z", "+00:00"))
    assert start <= stamped <= dt.datetime.now(dt.timezone.utc)
    assert {k: written[k] for k in GOOD} == GOOD
    notes = out["candidates"][0]["notes"]
    assert sum("replaced by relconsole" in n for n in notes) == 3
    with load_review(demo_repo, today=TODAY) as review:  # the review reads it and finds it valid
        found = [c for c in review.candidates if c.id == GOOD["id"]]
        assert len(found) == 1 and found[0].valid, found[0].reasons if found else review.candidates


def test_good_and_bad_candidates_are_judged_one_by_one(demo_repo, tmp_path, capsys):
    catalog_id = dict(GOOD, id="penguins.order_invariant")
    queued = dict(GOOD, id="penguins.mass_permutation")  # already in the sample's quarantine
    unsafe = dict(GOOD, id="../../escape")
    items = [GOOD, ANSWERING, VACUOUS, catalog_id, queued, unsafe, dict(GOOD), "just text", 7]
    before = user_state(demo_repo)
    code, out = run_json(demo_repo, capsys, "--drafter", drafter(tmp_path, dump_yaml(items)))
    assert code == EXIT_REJECT
    verdicts = out["candidates"]
    assert [v["written"] for v in verdicts] == [True] + [False] * (len(items) - 1)
    assert main_commit(demo_repo)[1] == [f"{QUARANTINE}/{GOOD['id']}.yaml"]
    assert user_state(demo_repo) == before
    reasons = [" ".join(v["reasons"]) for v in verdicts]
    assert "no_answers" in reasons[1] and "expected_total" in reasons[1]
    assert "references_input" in reasons[2]
    assert "unique_id" in reasons[3] and "catalog" in reasons[3]
    assert "already in quarantine" in reasons[4]
    assert "safe file name" in reasons[5] and not (demo_repo.parent / "escape.yaml").exists()
    assert "drafted twice" in reasons[6]
    assert all("mapping" in r for r in reasons[7:])


def test_a_file_the_oracle_branch_holds_is_never_replaced(demo_repo, tmp_path):
    """Between judging and committing the branch gains a file at the candidate's name."""
    path = f"{QUARANTINE}/{GOOD['id']}.yaml"
    with load_review(demo_repo, today=TODAY) as review:
        judged = judge_candidates(review, [GOOD], provenance("d", None, review))
        assert judged[0].valid
        commit_on_main(demo_repo, lambda repo: (repo / path).write_text("# a reviewer's own draft\n"))
        tip = git(demo_repo, "rev-parse", "main").strip()
        assert commit_candidates(review, judged, "d") is None
    assert not judged[0].written and "already exists on main" in " ".join(judged[0].reasons)
    assert git(demo_repo, "rev-parse", "main").strip() == tip
    assert on_main(demo_repo, path) == "# a reviewer's own draft\n"


def test_the_checked_out_branchs_stale_quarantine_is_neither_read_nor_written(demo_repo, tmp_path, capsys):
    """The agent's branch is checked out with its own (stale, edited) copies of quarantine
    files: the draft goes onto main's copy, and every byte of the work tree stays."""
    mine = demo_repo / QUARANTINE / f"{GOOD['id']}.yaml"
    mine.write_bytes(b"# a reviewer's own draft, uncommitted\n")
    stale = demo_repo / SEEDS_QUARANTINE
    stale.write_text(stale.read_text() + '{"percent": 7, "salt": "only-here", "population": 7}\n')
    before = user_state(demo_repo)
    main_seeds = on_main(demo_repo, SEEDS_QUARANTINE)
    code, out = run_json(demo_repo, capsys, "--drafter", drafter(tmp_path, dump_yaml(GOOD)))
    assert code == EXIT_PASS and out["written"] == [f"{QUARANTINE}/{GOOD['id']}.yaml"]
    row = {"percent": 7, "salt": "only-here", "population": 7}  # new to main: the stale copy is not read
    code, out = run_json(demo_repo, capsys, "--seeds", "rollout.monotonic",
                         "--drafter", drafter(tmp_path, json.dumps(row)))
    assert code == EXIT_PASS, out["rows"]
    assert on_main(demo_repo, SEEDS_QUARANTINE) == main_seeds + json.dumps(row) + "\n"
    assert user_state(demo_repo) == before and mine.read_bytes() == b"# a reviewer's own draft, uncommitted\n"


def test_the_committed_file_is_exactly_the_validated_text(demo_repo, tmp_path):
    with load_review(demo_repo, today=TODAY) as review:
        stamp = provenance("drafter", None, review, dt.datetime(2031, 1, 2, tzinfo=dt.timezone.utc))
        drafted = judge_candidates(review, [GOOD], stamp)
        result = commit_candidates(review, drafted, "drafter")
        text = on_main(demo_repo, drafted[0].path)
        again = validate_candidate(drafted[0].path, text, review.catalog, lambda i: ["flipper_length_mm"])
    assert result.paths == (drafted[0].path,)
    assert drafted[0].written and text == drafted[0].text and again.valid
    assert stamp["drafted_at"] == "2031-01-02T00:00:00Z"


def test_with_the_oracle_branch_checked_out_the_drafted_path_alone_is_updated_there(demo_repo, tmp_path, capsys):
    git(demo_repo, "switch", "-q", "main")
    (demo_repo / "README.md").write_text("an unstaged edit\n")
    (demo_repo / "notes.txt").write_text("staged\n")
    git(demo_repo, "add", "notes.txt")
    status = git(demo_repo, "status", "--porcelain")
    code, out = run_json(demo_repo, capsys, "--drafter", drafter(tmp_path, dump_yaml(GOOD)))
    assert code == EXIT_PASS
    path = out["written"][0]
    assert (demo_repo / path).read_text() == on_main(demo_repo, path)
    assert git(demo_repo, "status", "--porcelain") == status  # the draft is committed and clean
    assert git(demo_repo, "diff", "--cached", "--name-only").split() == ["notes.txt"]


def test_uncommitted_work_on_the_drafted_path_refuses_the_commit(demo_repo, tmp_path, capsys):
    git(demo_repo, "switch", "-q", "main")
    mine = demo_repo / SEEDS_QUARANTINE
    edited = mine.read_text() + '{"percent": 9, "salt": "mine", "population": 9}\n'
    mine.write_text(edited)
    tip = git(demo_repo, "rev-parse", "main").strip()
    row = '{"percent": 3, "salt": "new", "population": 9}\n'
    assert run(demo_repo, "--seeds", "rollout.monotonic", "--drafter", drafter(tmp_path, row)) == EXIT_USAGE
    assert "uncommitted changes" in capsys.readouterr().err
    assert git(demo_repo, "rev-parse", "main").strip() == tip and mine.read_text() == edited


def test_drafts_go_to_the_reviews_base_branch(demo_repo, tmp_path, capsys):
    """With --base release the oracle branch is release: main does not move (§9)."""
    git(demo_repo, "branch", "release", "main")
    main_tip = git(demo_repo, "rev-parse", "main").strip()
    code, out = run_json(demo_repo, capsys, "--base", "release", "--drafter", drafter(tmp_path, dump_yaml(GOOD)))
    assert code == EXIT_PASS and out["commit"]["branch"] == "release"
    assert git(demo_repo, "rev-parse", "main").strip() == main_tip
    assert main_commit(demo_repo, "release")[1] == out["written"]


@pytest.mark.parametrize("field", REQUIRED_FIELDS)
def test_each_field_the_prompt_calls_required_is_required_by_validation(demo_repo, field):
    with load_review(demo_repo, today=TODAY) as review:
        stamp = provenance("drafter", None, review)
        other = dict(GOOD, id=GOOD["id"] + "2")
        dropped = {k: v for k, v in other.items() if k != field}
        judged = judge_candidates(review, [GOOD, dropped], stamp)
    assert judged[0].valid, judged[0].reasons
    assert not judged[1].valid


# --- what the drafter printed ------------------------------------------------------------

def test_fenced_output_with_prose_around_it_is_accepted(demo_repo, tmp_path, capsys):
    other = dict(GOOD, id="penguins.bill_shuffle",
                 statement="Shuffling the rows keeps each species' bill_depth_mm sum.")
    text = fenced([GOOD]) + "\nAnd one more:\n```\n" + dump_yaml(other) + "```\n"
    code, out = run_json(demo_repo, capsys, "--drafter", drafter(tmp_path, text))
    assert code == EXIT_PASS
    assert sorted(out["written"]) == sorted(f"{QUARANTINE}/{c['id']}.yaml" for c in (GOOD, other))


_SCALAR = st.one_of(st.integers(), st.booleans(), st.text(max_size=12),
                    st.floats(allow_nan=False, allow_infinity=False))
_ITEM = st.dictionaries(st.text(st.characters(categories=["L", "N"]), min_size=1, max_size=8),
                        st.one_of(_SCALAR, st.lists(_SCALAR, max_size=3)), min_size=1, max_size=5)


@settings(max_examples=60, deadline=None)
@given(st.lists(_ITEM, min_size=1, max_size=4), st.sampled_from(["plain", "fenced", "documents"]))
def test_wrapping_drafted_yaml_changes_no_item(items, wrapping):
    text = {"plain": dump_yaml(items), "fenced": fenced(items),
            "documents": "".join("---\n" + dump_yaml(i) for i in items)}[wrapping]
    assert drafted_items(text) == items


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.dictionaries(st.sampled_from(["percent", "salt", "population"]), _SCALAR, min_size=1),
                min_size=1, max_size=5))
def test_json_lines_and_a_yaml_list_give_the_same_rows(rows):
    lines = "".join(json.dumps(r) + "\n" for r in rows)
    assert drafted_items(lines, seeds=True) == drafted_items(dump_yaml(rows), seeds=True) == rows


BOMB = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
    f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n"
    for i in range(8))

FAILURES = {
    "empty": ("", "", "printed nothing"),
    "blank": (" \n\n", "", "printed nothing"),
    "not_yaml": ("id: [unclosed\n  - what: {\n", "", "not YAML"),
    "prose": ("I'm sorry, I cannot draft relations for this change.\n", "", "text, not YAML"),
    "duplicate_keys": ("id: a\nid: b\n", "", "duplicate key"),
    "alias_bomb": (BOMB, "", "alias bomb"),
    "nothing_drafted": ("[]\n", "", "holds no candidate"),
    "not_utf8": (b"id: caf\xe9\n", "", "not UTF-8"),
    "exit_status": (dump_yaml(GOOD), "sys.stderr.write('quota exceeded\\n'); sys.stdout.flush(); sys.exit(7)",
                    "status 7"),
}


@pytest.mark.parametrize("case", sorted(FAILURES))
def test_a_failed_drafter_is_an_abort_and_writes_nothing(demo_repo, tmp_path, capsys, case):
    output, code, says = FAILURES[case]
    before = snapshot(demo_repo)
    exit_code = run(demo_repo, "--drafter", drafter(tmp_path, output, code))
    err = capsys.readouterr().err
    assert exit_code == EXIT_ABORT
    assert says in err
    assert snapshot(demo_repo) == before


def test_the_drafters_stderr_tail_is_shown_literally(demo_repo, tmp_path, capsys):
    code = "sys.stderr.write('x' * 20000 + '\\nlast words \\x1b]0;owned\\x07 [bold]no[/bold]\\n'); sys.exit(2)"
    assert run(demo_repo, "--drafter", drafter(tmp_path, "", code)) == EXIT_ABORT
    err = capsys.readouterr().err
    assert "last words \\x1b]0;owned\\x07 [bold]no[/bold]" in err
    assert "\x1b" not in err and "\x07" not in err
    assert err.count("x") < 20000  # a tail, not the whole stream


def test_a_drafter_that_runs_too_long_is_killed_with_its_children(demo_repo, tmp_path, capsys):
    marker = tmp_path / "child-survived"
    child = tmp_path / "child.py"
    child.write_text(f"import time, pathlib\ntime.sleep(3)\npathlib.Path({str(marker)!r}).touch()\n")
    code = f"import subprocess, time\nsubprocess.Popen([sys.executable, {str(child)!r}])\ntime.sleep(600)"

    before = snapshot(demo_repo)
    exit_code = run(demo_repo, "--drafter", drafter(tmp_path, dump_yaml(GOOD), code), "--timeout", "1")
    # waited for, the drafter would have printed a good candidate after its 600 s (exit 0)
    assert exit_code == EXIT_ABORT and "did not finish within 1 s" in capsys.readouterr().err
    assert snapshot(demo_repo) == before
    time.sleep(4)  # past the child's own 3 s: it would have left its marker by now
    assert not marker.exists()


def test_a_drafter_that_prints_too_much_is_stopped(demo_repo, tmp_path):
    with pytest.raises(DrafterError, match="more than 1000 bytes"):
        run_drafter(drafter(tmp_path, "x" * 50_000), "prompt", tmp_path, output_limit=1000)


def test_a_missing_drafter_is_an_abort(demo_repo, tmp_path, capsys):
    missing = tmp_path / "no-such-drafter"
    assert run(demo_repo, "--drafter", f"{missing} --model x") == EXIT_ABORT
    assert "not found" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["", "   ", "llm -m 'unclosed"])
def test_an_unusable_drafter_command_is_a_usage_error(demo_repo, capsys, command):
    assert run(demo_repo, "--drafter", command) == EXIT_USAGE


def test_no_drafter_is_a_usage_error(demo_repo, capsys):
    assert run(demo_repo) == EXIT_USAGE


@pytest.mark.parametrize("timeout", ["0", "-3", "soon", "nan"])
def test_a_bad_timeout_is_a_usage_error(demo_repo, capsys, timeout):
    with pytest.raises(SystemExit) as exited:
        run(demo_repo, "--drafter", "x", "--timeout", timeout)
    assert exited.value.code == EXIT_USAGE


# --- the ticket --------------------------------------------------------------------------

@pytest.mark.parametrize("problem", ["missing", "directory", "not_utf8", "too_big"])
def test_a_bad_ticket_is_a_bad_input_file_named_before_the_drafter_runs(demo_repo, tmp_path, capsys, problem):
    ticket = tmp_path / "ticket.md"
    if problem == "directory":
        ticket.mkdir()
    elif problem == "not_utf8":
        ticket.write_bytes(b"\xff\xfe ticket")
    elif problem == "too_big":
        ticket.write_bytes(b"a" * (TICKET_LIMIT_BYTES + 1))
    before = snapshot(demo_repo)
    assert run(demo_repo, "--drafter", drafter(tmp_path, dump_yaml(GOOD)), "--ticket", str(ticket)) \
        == EXIT_BAD_INPUT
    assert str(ticket) in capsys.readouterr().err
    assert not (tmp_path / "prompt.txt").exists()
    assert snapshot(demo_repo) == before


# --- seed rows ---------------------------------------------------------------------------

def test_drafted_seed_rows_are_appended_and_bad_ones_reported(demo_repo, tmp_path, capsys):
    old = on_main(demo_repo, SEEDS_QUARANTINE)
    existing = json.loads((demo_repo / SEEDS_FILE).read_text().splitlines()[0])
    queued = json.loads(old.splitlines()[0])  # a row already waiting in quarantine
    fresh = [{"percent": 1, "salt": "edge-low", "population": 1},
             {"percent": 100, "salt": "edge-high", "population": 100000}]
    bad = [existing, queued, dict(fresh[0]), {"percent": 101, "salt": "x", "population": 5},
           {"percent": 5, "salt": "x", "population": 5, "expected": [1]},
           {"percent": 5, "salt": "x"}, {"percent": "5", "salt": "x", "population": 5},
           {"percent": 5, "salt": "x", "population": 5, "region": "eu"}, "text"]
    lines = "".join(json.dumps(r) + "\n" for r in fresh[:1] + bad + fresh[1:])
    before = user_state(demo_repo)
    code, out = run_json(demo_repo, capsys, "--seeds", "rollout.monotonic", "--drafter", drafter(tmp_path, lines))
    assert code == EXIT_REJECT
    assert user_state(demo_repo) == before and main_commit(demo_repo)[1] == [SEEDS_QUARANTINE]
    now = on_main(demo_repo, SEEDS_QUARANTINE)
    assert now.startswith(old)
    added = [json.loads(line) for line in now[len(old):].splitlines()]
    assert added == fresh
    rows = out["rows"]
    assert [r["valid"] for r in rows] == [True] + [False] * len(bad) + [True]
    assert all(r["reasons"] for r in rows[1:-1])
    all_lines = now.splitlines()
    assert [json.loads(all_lines[r["line"] - 1]) for r in rows if r["valid"]] == fresh
    # each committed row is listed by the stable id the review gives it
    with load_review(demo_repo, today=TODAY) as review:
        ids = {r.id: r.value for r in review.seed_rows if r.relation_id == "rollout.monotonic"}
    assert [ids[r["id"]] for r in rows if r["valid"]] == fresh


def test_seed_rows_in_a_fenced_yaml_list_are_accepted(demo_repo, tmp_path, capsys):
    rows = [{"percent": 2, "salt": "fence", "population": 3}]
    code, out = run_json(demo_repo, capsys, "--seeds", "rollout.monotonic",
                         "--drafter", drafter(tmp_path, fenced(rows)))
    assert code == EXIT_PASS and out["path"] == SEEDS_QUARANTINE
    assert json.loads(on_main(demo_repo, SEEDS_QUARANTINE).splitlines()[-1]) == rows[0]


def test_seed_rows_for_a_relation_with_no_quarantine_file_yet_create_it(demo_repo, tmp_path, capsys):
    commit_on_main(demo_repo, lambda repo: (repo / SEEDS_QUARANTINE).unlink())
    rows = [{"percent": 3, "salt": "new", "population": 9}]
    assert run(demo_repo, "--seeds", "rollout.monotonic", "--drafter",
               drafter(tmp_path, json.dumps(rows[0]))) == EXIT_PASS
    assert on_main(demo_repo, SEEDS_QUARANTINE) == json.dumps(rows[0]) + "\n"


@pytest.mark.parametrize("relation", ["no.such.relation", "penguins.order_invariant"])
def test_seeds_for_an_unknown_or_lease_relation_is_a_usage_error(demo_repo, tmp_path, capsys, relation):
    before = snapshot(demo_repo)
    assert run(demo_repo, "--seeds", relation, "--drafter", drafter(tmp_path, "{}")) == EXIT_USAGE
    assert relation in capsys.readouterr().err
    assert not (tmp_path / "prompt.txt").exists()
    assert snapshot(demo_repo) == before


def test_a_bad_oracle_file_stops_before_the_drafter(demo_repo, tmp_path, capsys):
    git(demo_repo, "switch", "-q", "main")
    (demo_repo / "oracle" / "catalog.yaml").write_text("relations: [\n")
    git(demo_repo, "commit", "-q", "-am", "catalog: broken")
    assert run(demo_repo, "--drafter", drafter(tmp_path, dump_yaml(GOOD))) == EXIT_BAD_INPUT
    assert "oracle/catalog.yaml" in capsys.readouterr().err
    assert not (tmp_path / "prompt.txt").exists()


# --- the oracle branch's quarantine: no symlink is followed, nothing leaves the repository ---

def _outside(tmp_path: Path) -> Path:
    outside = tmp_path / "outside"
    outside.mkdir(exist_ok=True)
    return outside


def _tree(root: Path) -> dict:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_a_seeds_file_committed_as_a_symlink_is_refused_and_the_outside_file_untouched(
        demo_repo, tmp_path, capsys):
    victim = _outside(tmp_path) / "victim.txt"
    victim.write_bytes(b"secret: the operator's notes\n")

    def plant(repo: Path) -> None:
        (repo / SEEDS_QUARANTINE).unlink()
        (repo / SEEDS_QUARANTINE).symlink_to(victim)
    commit_on_main(demo_repo, plant)
    before = snapshot(demo_repo)
    rows = '{"percent": 3, "salt": "new", "population": 9}\n'
    assert run(demo_repo, "--seeds", "rollout.monotonic", "--drafter", drafter(tmp_path, rows)) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert SEEDS_QUARANTINE in err and "symlink" in err and len(err.strip().splitlines()) == 1
    assert victim.read_bytes() == b"secret: the operator's notes\n"
    assert snapshot(demo_repo) == before
    assert not (tmp_path / "prompt.txt").exists()  # refused before the drafter ran


@pytest.mark.parametrize("seeds", [False, True])
def test_a_quarantine_directory_the_branch_holds_as_a_symlink_is_refused(demo_repo, tmp_path, capsys, seeds):
    moved = _outside(tmp_path) / "moved"
    moved.mkdir()

    def plant(repo: Path) -> None:
        git(repo, "rm", "-rq", QUARANTINE)
        (repo / QUARANTINE).symlink_to(moved, target_is_directory=True)
    commit_on_main(demo_repo, plant)
    before = snapshot(demo_repo)
    if seeds:
        args = ("--seeds", "rollout.monotonic", "--drafter",
                drafter(tmp_path, '{"percent": 3, "salt": "new", "population": 9}\n'))
    else:
        args = ("--drafter", drafter(tmp_path, dump_yaml(GOOD)))
    assert run(demo_repo, *args) == EXIT_BAD_INPUT
    assert f"{QUARANTINE}: is a symlink on main" in capsys.readouterr().err
    assert _tree(moved) == {} and snapshot(demo_repo) == before


def test_with_the_oracle_branch_checked_out_a_symlinked_quarantine_in_the_work_tree_is_refused(
        demo_repo, tmp_path, capsys):
    git(demo_repo, "switch", "-q", "main")
    moved = _outside(tmp_path) / "moved"
    (demo_repo / QUARANTINE).rename(moved)
    (demo_repo / QUARANTINE).symlink_to(moved, target_is_directory=True)
    outside_before = _tree(moved)
    tip = git(demo_repo, "rev-parse", "main").strip()
    assert run(demo_repo, "--drafter", drafter(tmp_path, dump_yaml(GOOD))) == EXIT_USAGE
    assert "symbolic link" in capsys.readouterr().err
    assert _tree(moved) == outside_before and git(demo_repo, "rev-parse", "main").strip() == tip


@pytest.mark.parametrize("seeds", [False, True])
def test_the_branch_is_checked_again_when_committing(demo_repo, tmp_path, seeds):
    """The branch's quarantine directory becomes a symlink after judging, before committing."""
    with load_review(demo_repo, today=TODAY) as review:
        if seeds:
            judged = judge_seed_rows(review, "rollout.monotonic",
                                     [{"percent": 3, "salt": "late", "population": 9}])
        else:
            judged = judge_candidates(review, [GOOD], provenance("d", None, review))
        assert all(item.valid for item in judged)

        def plant(repo: Path) -> None:
            git(repo, "rm", "-rq", QUARANTINE)
            (repo / QUARANTINE).symlink_to(_outside(tmp_path), target_is_directory=True)
        commit_on_main(demo_repo, plant)
        tip = git(demo_repo, "rev-parse", "main").strip()
        with pytest.raises(BadInputError, match="oracle/quarantine: is a symlink on main"):
            if seeds:
                commit_seed_rows(review, "rollout.monotonic", judged, "d")
            else:
                commit_candidates(review, judged, "d")
    assert git(demo_repo, "rev-parse", "main").strip() == tip and _tree(_outside(tmp_path)) == {}


def test_a_symlink_at_the_candidates_name_on_the_branch_is_neither_followed_nor_replaced(demo_repo, tmp_path):
    aim = _outside(tmp_path) / "planted.yaml"
    name = f"{QUARANTINE}/{GOOD['id']}.yaml"
    with load_review(demo_repo, today=TODAY) as review:
        judged = judge_candidates(review, [GOOD], provenance("d", None, review))
        assert judged[0].valid
        commit_on_main(demo_repo, lambda repo: (repo / name).symlink_to(aim))  # appears after judging
        tip = git(demo_repo, "rev-parse", "main").strip()
        assert commit_candidates(review, judged, "d") is None
    assert not judged[0].written and "already exists" in " ".join(judged[0].reasons)
    assert not aim.exists() and git(demo_repo, "rev-parse", "main").strip() == tip


def test_an_existing_seeds_file_that_is_not_json_lines_is_refused_naming_its_line(demo_repo, tmp_path, capsys):
    old = on_main(demo_repo, SEEDS_QUARANTINE).rstrip("\n") + "\n"
    commit_on_main(demo_repo, lambda repo: (repo / SEEDS_QUARANTINE).write_text(old + "<<<<<<< a merge conflict\n"))
    line = len(old.splitlines()) + 1
    before = snapshot(demo_repo)
    rows = '{"percent": 3, "salt": "new", "population": 9}\n'
    assert run(demo_repo, "--seeds", "rollout.monotonic", "--drafter", drafter(tmp_path, rows)) == EXIT_BAD_INPUT
    assert f"{SEEDS_QUARANTINE}:{line}:" in capsys.readouterr().err
    assert snapshot(demo_repo) == before


def test_a_fifo_in_the_work_tree_at_the_seeds_name_is_never_opened(demo_repo, tmp_path, capsys):
    """The work tree is the agent's: propose reads the branch, so a FIFO planted there (which
    would block a reader forever) is not even opened."""
    (demo_repo / SEEDS_QUARANTINE).unlink()
    os.mkfifo(demo_repo / SEEDS_QUARANTINE)
    rows = '{"percent": 3, "salt": "new", "population": 9}\n'
    assert run(demo_repo, "--seeds", "rollout.monotonic", "--drafter", drafter(tmp_path, rows)) == EXIT_PASS
    assert on_main(demo_repo, SEEDS_QUARANTINE).endswith(rows)


# --- the timeout is an upper bound --------------------------------------------------------

def _setsid_child(tmp_path: Path, then: str) -> tuple[str, Path]:
    """Drafter code that forks a child into a new session, holding stdout for 60 s, then runs ``then``."""
    pid_file = tmp_path / "straggler.pid"
    code = ("import os, time\n"
            "pid = os.fork()\n"
            "if pid == 0:\n"
            "    os.setsid()\n"
            "    time.sleep(60)\n"
            "    os._exit(0)\n"
            f"pathlib.Path({str(pid_file)!r}).write_text(str(pid))\n"
            f"{then}\n")
    return code, pid_file


def _still_running(pid_file: Path) -> bool:
    """Whether the straggler ``pid_file`` names (a child that sleeps 60 s holding the drafter's
    stdout) still runs: had propose waited for that stdout to close, it would have ended."""
    try:
        pid = int(pid_file.read_text())
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z"
    except (OSError, ValueError, IndexError):
        return False


@pytest.fixture
def stragglers():
    files: list[Path] = []
    yield files
    for pid_file in files:  # the 60 s children these tests started
        try:
            os.kill(int(pid_file.read_text()), signal.SIGKILL)
        except (OSError, ValueError):
            pass


def test_a_child_in_a_new_session_holding_stdout_does_not_hold_propose(demo_repo, tmp_path, capsys, stragglers):
    code, pid_file = _setsid_child(tmp_path, "")
    stragglers.append(pid_file)
    exit_code, out = run_json(demo_repo, capsys, "--drafter", drafter(tmp_path, dump_yaml(GOOD), code),
                              "--timeout", "5")
    assert exit_code == EXIT_PASS and out["written"] == [f"{QUARANTINE}/{GOOD['id']}.yaml"]
    assert _still_running(pid_file)  # propose returned while the child still held its stdout


def test_a_hanging_drafter_with_a_new_session_child_is_stopped_at_the_timeout(
        demo_repo, tmp_path, capsys, stragglers):
    code, pid_file = _setsid_child(tmp_path, "time.sleep(600)")
    stragglers.append(pid_file)
    before = snapshot(demo_repo)
    exit_code = run(demo_repo, "--drafter", drafter(tmp_path, dump_yaml(GOOD), code), "--timeout", "2")
    assert exit_code == EXIT_ABORT and "did not finish within 2 s" in capsys.readouterr().err
    assert _still_running(pid_file)  # propose did not wait for the child's stdout to close
    assert snapshot(demo_repo) == before


def test_a_large_prompt_reaches_a_drafter_that_reads_it_all(tmp_path):
    prompt = "".join(f"line {i} ✓\n" for i in range(20_000))  # 250 kB: far more than a pipe holds
    script = tmp_path / "echo.py"
    script.write_text("import sys\nsys.stdout.buffer.write(sys.stdin.buffer.read())\n")
    got = run_drafter(f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}", prompt, tmp_path)
    assert got.stdout == prompt and got.returncode == 0


# --- the ticket is a regular file, read with a bound ---------------------------------------

@pytest.mark.parametrize("kind", ["fifo", "dev_zero", "symlink_to_dev_zero"])
def test_a_ticket_that_is_not_a_regular_file_is_refused_at_once(demo_repo, tmp_path, capsys, kind):
    ticket = tmp_path / "ticket.md"
    if kind == "fifo":
        os.mkfifo(ticket)  # reading it would wait for a writer forever
    elif kind == "dev_zero":
        ticket = Path("/dev/zero")  # reading it would never end
    else:
        ticket.symlink_to("/dev/zero")
    assert run(demo_repo, "--drafter", drafter(tmp_path, dump_yaml(GOOD)), "--ticket", str(ticket)) \
        == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert str(ticket) in err and "not a regular file" in err
    assert not (tmp_path / "prompt.txt").exists()


def test_a_ticket_is_read_only_up_to_its_limit(tmp_path, monkeypatch):
    reads: list[int] = []
    real_read = os.read

    def counting_read(fd, size):
        data = real_read(fd, size)
        reads.append(len(data))
        return data

    ticket = tmp_path / "huge.md"
    ticket.write_bytes(b"a" * (TICKET_LIMIT_BYTES * 4))
    monkeypatch.setattr(os, "read", counting_read)
    with pytest.raises(BadInputError, match="larger than"):
        read_ticket(ticket)
    assert sum(reads) == TICKET_LIMIT_BYTES + 1


# --- ids that differ only by case are the same id -----------------------------------------

def _recase(text: str, flips: list[bool]) -> str:
    return "".join(c.swapcase() if flip else c for c, flip in zip(text, flips + [False] * len(text)))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.booleans(), min_size=1, max_size=30).filter(any))
def test_an_id_differing_from_a_quarantine_candidate_only_by_case_is_rejected(demo_repo, flips):
    queued = "penguins.mass_permutation"  # in the sample's quarantine
    rid = _recase(queued, flips)
    with load_review(demo_repo, today=TODAY) as review:
        judged = judge_candidates(review, [dict(GOOD, id=rid)], provenance("d", None, review))
    reasons = " ".join(judged[0].reasons)
    assert not judged[0].valid and "unique_id" in reasons and queued in reasons


def test_ids_differing_only_by_case_collide_within_the_output(demo_repo, tmp_path, capsys):
    items = [GOOD, dict(GOOD, id=GOOD["id"].upper()), dict(GOOD, id="PENGUINS.MASS_PERMUTATION")]
    before = user_state(demo_repo)
    code, out = run_json(demo_repo, capsys, "--drafter", drafter(tmp_path, dump_yaml(items)))
    assert code == EXIT_REJECT
    assert out["written"] == [f"{QUARANTINE}/{GOOD['id']}.yaml"] == main_commit(demo_repo)[1]
    assert user_state(demo_repo) == before
    reasons = [" ".join(v["reasons"]) for v in out["candidates"]]
    assert GOOD["id"] in reasons[1] and "item 1" in reasons[1] and "case" in reasons[1]
    assert "penguins.mass_permutation" in reasons[2]


def test_an_id_colliding_by_case_with_a_file_new_on_the_branch_is_rejected(demo_repo):
    """A file committed to the branch after the review loaded still takes its name."""
    with load_review(demo_repo, today=TODAY) as review:
        commit_on_main(demo_repo, lambda repo: (repo / QUARANTINE / "penguins.Bill_Shuffle.yaml")
                       .write_text("# a reviewer's draft\n"))
        judged = judge_candidates(review, [dict(GOOD, id="penguins.bill_shuffle")],
                                  provenance("d", None, review))
    assert not judged[0].valid and "penguins.Bill_Shuffle" in " ".join(judged[0].reasons)


# --- seed rows: one line, one row; a key twice is a rejected row -----------------------------

def test_a_seed_row_with_a_key_twice_is_rejected_naming_the_key(demo_repo):
    line = '{"percent": 10, "salt": "x", "population": 5, "percent": 200}'
    nested = '{"percent": 11, "salt": "x", "population": {"a": 1, "a": 2}}'
    good = '{"percent": 12, "salt": "x", "population": 5}'
    with load_review(demo_repo, today=TODAY) as review:
        rows = validate_seed_rows(seeds_quarantine_path(review, "rollout.monotonic"),
                                  f"{line}\n{nested}\n{good}\n", review.catalog, [])
    assert [r.line for r in rows] == [1, 2, 3]
    assert "duplicate key 'percent'" in " ".join(rows[0].reasons)
    assert "duplicate key 'a'" in " ".join(rows[1].reasons)
    assert rows[2].valid, rows[2].reasons


def test_drafted_json_lines_keep_one_row_per_line(demo_repo, tmp_path, capsys):
    fresh = {"percent": 4, "salt": "after", "population": 8}
    lines = ('{"percent": 10, "salt": "x", "population": 5, "percent": 200}\n'
             '[{"percent": 1, "salt": "a", "population": 1}, {"percent": 2, "salt": "b", "population": 2}]\n'
             + json.dumps(fresh) + "\n")
    code, out = run_json(demo_repo, capsys, "--seeds", "rollout.monotonic", "--drafter", drafter(tmp_path, lines))
    assert code == EXIT_REJECT
    rows = out["rows"]
    assert [r["index"] for r in rows] == [1, 2, 3] and [r["valid"] for r in rows] == [False, False, True]
    assert "duplicate key 'percent'" in " ".join(rows[0]["reasons"])
    written = on_main(demo_repo, SEEDS_QUARANTINE).splitlines()
    assert json.loads(written[rows[2]["line"] - 1]) == fresh
    assert not any('"salt": "a"' in w or '"percent": 200' in w for w in written)




def test_print_prompt_with_json_prints_json_holding_the_same_prompt(demo_repo, capsys):
    assert run(demo_repo, "--print-prompt") == EXIT_PASS
    text = capsys.readouterr().out
    code, out = run_json(demo_repo, capsys, "--print-prompt")
    assert code == EXIT_PASS and out["prompt"] == text
    assert out["prompt_bytes"] == len(text.encode("utf-8")) and out["diff"]["bytes_shown"] <= out["diff"]["bytes_total"]


def test_a_drafted_subject_that_does_not_resolve_on_the_base_is_rejected_not_committed(demo_repo, tmp_path, capsys):
    """Tried on pallets/markupsafe: ``subject: oracle.adapters:nope`` was committed, validated,
    "confirmed" and refused only at accept. It is now rejected before the commit."""
    missing = dict(GOOD, id="penguins.missing_subject", subject="aggregator:summarise_everything")
    tip = git(demo_repo, "rev-parse", "main").strip()
    code, out = run_json(demo_repo, capsys, "--drafter", drafter(tmp_path, dump_yaml([missing, GOOD])))
    assert code == EXIT_REJECT and out["written"] == [f"{QUARANTINE}/{GOOD['id']}.yaml"]
    reasons = " ".join(out["candidates"][0]["reasons"])
    assert "subject_resolves" in reasons and "summarise_everything" in reasons
    assert main_commit(demo_repo)[1] == out["written"] and git(demo_repo, "rev-parse", "main~1").strip() == tip


def test_the_prompt_offers_seeds_files_no_relation_reads_yet(demo_repo, capsys):
    """Tried on pallets/markupsafe: seeds committed for a relation to come were not in the
    prompt ("the catalog has no relations"), so a model had no input to name."""
    def add(repo: Path) -> None:
        (repo / "oracle" / "seeds" / "words.jsonl").write_text('"Hello"\n"día"\n')
        (repo / "oracle" / "seeds" / "pairs.jsonl").write_text('{"word": "sun"}\n{"word": "sol", "lang": "es"}\n')
    commit_on_main(demo_repo, add)
    assert run(demo_repo, "--print-prompt") == EXIT_PASS
    prompt = capsys.readouterr().out
    words = next(line for line in prompt.splitlines() if line.startswith("seeds oracle/seeds/words.jsonl"))
    pairs = next(line for line in prompt.splitlines() if line.startswith("seeds oracle/seeds/pairs.jsonl"))
    assert "2 rows" in words and "plain values" in words
    assert "word" in pairs and "lang" in pairs
    assert not any(line.startswith(f"seeds {SEEDS_FILE}:") and "rows" in line for line in prompt.splitlines())


def _modeline_target(path: str, text: str) -> str | None:
    """The repository path the file's ``# yaml-language-server: $schema=`` line names, or None."""
    import posixpath
    first = text.splitlines()[0] if text else ""
    prefix = "# yaml-language-server: $schema="
    if not first.startswith(prefix):
        return None
    return posixpath.normpath(posixpath.join(posixpath.dirname(path), first[len(prefix):]))


@pytest.mark.parametrize("schemas_on_main", [True, False])
def test_a_written_candidate_names_the_candidate_schema_only_when_main_holds_it(
        demo_repo, tmp_path, capsys, schemas_on_main):
    """An editor checks a drafted candidate as it checks the files init and demo write; a line
    naming a schema copy the oracle branch does not hold would send it to a missing file."""
    if not schemas_on_main:
        commit_on_main(demo_repo, lambda tree: subprocess.run(["git", "rm", "-rq", "oracle/schemas"], cwd=tree,
                                                              check=True))
    code, out = run_json(demo_repo, capsys, "--drafter", drafter(tmp_path, dump_yaml(GOOD)))
    assert code == EXIT_PASS
    [path] = out["written"]
    text = on_main(demo_repo, path)
    target = _modeline_target(path, text)
    if not schemas_on_main:
        assert target is None
        return
    schema = json.loads(on_main(demo_repo, target))
    assert schema == json.loads(schemas.text("candidate"))
    assert yaml.safe_load(text) == yaml.safe_load(text.split("\n", 1)[1])  # a comment: the data is the same
