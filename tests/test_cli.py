"""The CLI twins of the console actions, on the sample repository (SPEC §8 exit codes)."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
from pathlib import Path

import pytest

from relconsole.cli.main import main
from relconsole.engine.errors import EXIT_BAD_INPUT, EXIT_PASS, EXIT_REJECT, EXIT_USAGE
from relconsole.engine.oracle.leases import parse_lease
from bench.gitrepo import git, git_bytes
from tests.conftest import TODAY


def cli(capsys, *args: str) -> tuple[int, str, str]:
    code = main([*args])
    out, err = capsys.readouterr()
    return code, out, err


def repo_args(repo: Path) -> list[str]:
    return ["--repo", str(repo), "--today", TODAY.isoformat()]


def tip(repo: Path) -> str:
    return git(repo, "rev-parse", "main").strip()


def names(repo: Path) -> list[str]:
    return sorted(git(repo, "show", "--format=", "--name-only", "main").split())


def test_lease_renew_by_the_owner_is_one_lease_commit(demo_repo: Path, capsys):
    until = TODAY + dt.timedelta(days=10)
    old = parse_lease(git(demo_repo, "show", "main:oracle/leases/weather.yaml"), "weather.yaml")
    code, out, _ = cli(capsys, "lease", "renew", "weather", "--until", until.isoformat(), "--json", *repo_args(demo_repo))
    assert code == EXIT_PASS
    payload = json.loads(out)
    assert payload["commit"] == tip(demo_repo) and payload["kind"] == "lease"
    assert names(demo_repo) == ["oracle/leases/weather.yaml"]
    new = parse_lease(git(demo_repo, "show", "main:oracle/leases/weather.yaml"), "weather.yaml")
    assert new.expires == until and new.sha256 == old.sha256


@pytest.mark.parametrize(("lease", "days", "words"), [
    ("stocks", 10, "owner"),  # alice's lease; the demo identity is the maintainers'
    ("weather", 31, "maximum"),  # beyond the default 30-day maximum
    ("weather", 0, "not after today"),
])
def test_lease_renew_refusals_make_no_commit(demo_repo: Path, capsys, lease, days, words):
    before = tip(demo_repo)
    until = (TODAY + dt.timedelta(days=days)).isoformat()
    code, _, err = cli(capsys, "lease", "renew", lease, "--until", until, *repo_args(demo_repo))
    assert code == EXIT_USAGE
    assert words in err and len(err.strip().splitlines()) == 1
    assert tip(demo_repo) == before


def test_accept_and_delete_twins(demo_repo: Path, capsys):
    before = tip(demo_repo)
    code, _, err = cli(capsys, "accept", "penguins.mass_permutation", *repo_args(demo_repo))
    assert code == EXIT_USAGE and "not confirmed" in err and tip(demo_repo) == before
    assert "--override-unconfirmed" in err  # the way out, named as the flag is spelled
    code, out, _ = cli(capsys, "accept", "penguins.mass_permutation", "--override-unconfirmed", "--json",
                       *repo_args(demo_repo))
    assert code == EXIT_PASS and json.loads(out)["kind"] == "catalog"
    me = git(demo_repo, "config", "user.email").strip()
    assert "OVERRIDDEN" in json.loads(out)["message"] and me in json.loads(out)["message"]
    assert names(demo_repo) == ["oracle/catalog.yaml", "oracle/quarantine/penguins.mass_permutation.yaml"]

    before = tip(demo_repo)
    code, _, err = cli(capsys, "accept", "penguins.expected_total", *repo_args(demo_repo))
    assert code == EXIT_USAGE and "expected" in err and tip(demo_repo) == before

    code, out, _ = cli(capsys, "delete", "penguins.expected_total", *repo_args(demo_repo))
    assert code == EXIT_PASS and git(demo_repo, "log", "-1", "--format=%s", "main").startswith("quarantine:")
    assert names(demo_repo) == ["oracle/quarantine/penguins.expected_total.yaml"]

    rows = "oracle/quarantine/rollout.monotonic.seeds.jsonl"
    drafted = git(demo_repo, "show", f"main:{rows}").splitlines()
    code, _, _ = cli(capsys, "accept", f"{rows}:1", f"{rows}:2", *repo_args(demo_repo))
    assert code == EXIT_PASS
    seeds = git(demo_repo, "show", "main:oracle/seeds/rollout.jsonl").splitlines()
    assert [json.loads(x) for x in seeds[-2:]] == [json.loads(x) for x in drafted[:2]]


@pytest.mark.parametrize("command", [["freeze", "no.such", "--reason", "x"], ["accept", "no.such"],
                                     ["bite", "no.such"], ["confirm", "no.such"]])
def test_an_unknown_id_is_a_usage_error_for_every_command(demo_repo: Path, capsys, command):
    before = tip(demo_repo)
    code, _, err = cli(capsys, *command, *repo_args(demo_repo))
    assert code == EXIT_USAGE and "no.such" in err and tip(demo_repo) == before


def test_freeze_twin_writes_the_row(demo_repo: Path, capsys):
    before = tip(demo_repo)
    code, _, err = cli(capsys, "freeze", "penguins.order_invariant", "--reason", "runner pool swap",
                       *repo_args(demo_repo))
    assert code == EXIT_USAGE and "replay" in err and tip(demo_repo) == before  # the table decides
    code, out, _ = cli(capsys, "freeze", "penguins.order_invariant", "--reason", "runner pool swap",
                       "--without-replay", "--json", *repo_args(demo_repo))
    assert code == EXIT_PASS
    assert "Override:" in git(demo_repo, "log", "-1", "--format=%B", "main")
    assert names(demo_repo) == ["oracle/freezes.json"]
    rows = json.loads(git(demo_repo, "show", "main:oracle/freezes.json"))
    assert [r["reason"] for r in rows if r["relation_id"] == "penguins.order_invariant"] == ["runner pool swap"]
    assert json.loads(out)["row"]["signature"].startswith("sha256:")


def test_freeze_twin_refuses_a_relation_that_held(demo_repo: Path, capsys):
    before = tip(demo_repo)
    code, _, err = cli(capsys, "freeze", "weather.replay_ingest", "--reason", "x", *repo_args(demo_repo))
    assert code == EXIT_USAGE and "no miss" in err and tip(demo_repo) == before
    code, _, err = cli(capsys, "freeze", "penguins.split_merge", "--reason", "x", *repo_args(demo_repo))
    assert code == EXIT_USAGE and "does not allow freezing" in err and tip(demo_repo) == before


@pytest.mark.parametrize("argv", [["nonsense"], ["lease"], ["lease", "renew", "x"],
                                  ["lease", "renew", "x", "--until", "soon"], ["bind", "--today", "2026-02-30"]])
def test_usage_errors_exit_64(argv, capsys):
    with pytest.raises(SystemExit) as caught:
        main(argv)
    assert caught.value.code == EXIT_USAGE


def test_bad_relconsole_today_is_a_usage_error(demo_repo: Path, capsys, monkeypatch):
    monkeypatch.setenv("RELCONSOLE_TODAY", "someday")
    code, _, err = cli(capsys, "bind", "--repo", str(demo_repo))
    assert code == EXIT_USAGE and "RELCONSOLE_TODAY" in err


def test_run_json_reports_the_miss(demo_repo: Path, capsys):
    # a recorded seed: the sample's bands.repeat_scans misses on some seeds only (issue 18),
    # and seed 0 is one where it holds, so the deterministic miss is the only one
    code, out, _ = cli(capsys, "run", "--json", "--replay-seed", "0", *repo_args(demo_repo))
    payload = json.loads(out)
    assert code == EXIT_REJECT and payload["decision"] == "reject"
    missed = {r["relation_id"]: r for r in payload["relations"] if r["outcome"] == "missed"}
    assert set(missed) == {"penguins.order_invariant"}
    first = missed["penguins.order_invariant"]["first_run"]
    assert first["differing"] and first["source"] != first["followup"]
    assert missed["penguins.order_invariant"]["identity_changed"] is True


def test_a_confirmed_candidate_is_accepted_without_override_and_the_message_names_its_bytes(demo_repo: Path, capsys):
    path = "oracle/quarantine/penguins.mass_permutation.yaml"
    digest = hashlib.sha256(git_bytes(demo_repo, "show", f"main:{path}")).hexdigest()
    def replay_state() -> str:
        _code, out, _ = cli(capsys, "validate", "--json", *repo_args(demo_repo))
        return next(c for c in json.loads(out)["candidates"] if c["path"] == path)["replay_state"]

    assert replay_state() == "unreplayed"
    code, _, _ = cli(capsys, "confirm", "penguins.mass_permutation", *repo_args(demo_repo))
    assert code == EXIT_PASS and replay_state() == "confirmed"
    code, out, _ = cli(capsys, "accept", "penguins.mass_permutation", "--json", *repo_args(demo_repo))
    assert code == EXIT_PASS
    message = json.loads(out)["message"]
    assert f"confirmed (content sha256 {digest})" in message and "OVERRIDDEN" not in message


def test_a_lease_renewed_under_an_injected_today_says_so_in_its_commit(demo_repo: Path, capsys):
    """--today moves the renewal maximum with it; the commit must not hide that."""
    injected = dt.date.today() + dt.timedelta(days=400)
    code, out, _ = cli(capsys, "lease", "renew", "weather", "--until", (injected + dt.timedelta(days=5)).isoformat(),
                       "--json", "--repo", str(demo_repo), "--today", injected.isoformat())
    assert code == EXIT_PASS
    message = json.loads(out)["message"]
    assert f"Judged as of {injected.isoformat()}" in message and dt.date.today().isoformat() in message


def test_a_run_reads_the_flags_while_it_judges_and_decides_as_a_full_load_does(demo_repo, capsys):
    from relconsole.engine.gate.review import load_review
    with load_review(demo_repo, "main", today=TODAY) as full, \
            load_review(demo_repo, "main", today=TODAY, deferred=True) as deferred:
        assert deferred.flags == [] and not deferred.finished  # nothing read yet
        assert deferred.decision() == full.decision()  # deciding reads them first: never without
        assert [f.name for f in deferred.flags] == [f.name for f in full.flags] != []
        from relconsole.engine.gate.reviewrun import run_review
        run_review(full)  # a relation's miss is the headline once the relations ran
        reason = full.decision().reason
    code, out, _ = cli(capsys, "run", "--json", *repo_args(demo_repo))
    assert json.loads(out)["reason"] == reason and code == EXIT_REJECT



def test_an_accepted_relation_no_owner_names_is_said_by_accept_and_by_validate(demo_repo: Path, capsys):
    """Issue 16: an accepted relation with no owners entry ran only with --all, silently."""
    code, out, _ = cli(capsys, "validate", "--json", *repo_args(demo_repo))
    assert json.loads(out)["warnings"] == []  # the sample's relations are all owned
    code, out, _ = cli(capsys, "accept", "penguins.mass_permutation", "--override-unconfirmed", "--json",
                       *repo_args(demo_repo))
    hints = json.loads(out)["warnings"]
    assert code == EXIT_PASS and len(hints) == 1
    assert "penguins.mass_permutation" in hints[0] and "'src/aggregator.py': [penguins.mass_permutation]" in hints[0]
    git(demo_repo, "checkout", "-q", "main")
    code, out, _ = cli(capsys, "validate", *repo_args(demo_repo))
    assert code == EXIT_PASS and "warning: relation penguins.mass_permutation" in out
    assert "only run --all" in out


def test_accept_refuses_a_relation_whose_seeds_its_own_schema_would_refuse(demo_repo: Path, capsys):
    """Issue 16: accept --override-unconfirmed committed a candidate whose schema contradicts
    the seeds it reads; afterwards every command exited 5 blaming a seeds file nobody changed."""
    git(demo_repo, "checkout", "-q", "main")
    (demo_repo / "oracle" / "quarantine" / "rollout.text_percent.yaml").write_text(
        "id: rollout.text_percent\ntransform: monotonic\ncompare: exact\n"
        "must_not: assert a literal list of admitted users in a test\nsubject: rollout:admitted\n"
        "input:\n  seeds: oracle/seeds/rollout.jsonl\n  schema: {percent: str, salt: str, population: int}\n"
        "params: {field: population, step: 10}\n"
        "statement: Growing the population never drops a user admitted before.\n"
        "drafted_by: llm -m local-coder-7b\ndrafted_at: \"2026-01-29T14:12:05Z\"\nsource: \"ticket GROW-1\"\n")
    git(demo_repo, "add", "-A")
    git(demo_repo, "commit", "-qm", "quarantine: a drafted candidate")
    before = tip(demo_repo)
    code, _, err = cli(capsys, "accept", "rollout.text_percent", "--override-unconfirmed", *repo_args(demo_repo))
    assert tip(demo_repo) == before, "a relation that would not load was committed"
    # validation itself checks a drafted schema against the rows it reads (§10)
    assert code != EXIT_PASS and "input.schema does not fit oracle/seeds/rollout.jsonl row 1" in err
    code, _, _ = cli(capsys, "validate", *repo_args(demo_repo))
    assert code == EXIT_PASS  # nothing broke


def test_a_drafted_seed_row_keeps_its_id_when_lines_move_and_no_other_row_takes_it(demo_repo: Path, capsys):
    """Issue 16: rows were addressed PATH:LINE, and lines move after every accept or delete:
    the number validate printed then failed, or named another row. A row's id is a hash of
    its relation and canonical JSON."""
    code, out, _ = cli(capsys, "validate", "--json", *repo_args(demo_repo))
    rows = json.loads(out)["seed_rows"]
    assert len(rows) >= 3 and len({r["id"] for r in rows}) == len(rows)
    first, second, third = rows[0], rows[1], rows[2]
    assert first["key"].endswith(":1") and second["key"].endswith(":2")
    drafted = git(demo_repo, "show", f"main:{second['key'].rsplit(':', 1)[0]}").splitlines()
    code, _, _ = cli(capsys, "delete", first["id"], *repo_args(demo_repo))  # line 1 goes: the others move up
    assert code == EXIT_PASS
    code, out, _ = cli(capsys, "validate", "--json", *repo_args(demo_repo))
    after = {r["id"]: r["key"] for r in json.loads(out)["seed_rows"]}
    assert first["id"] not in after and after[second["id"]].endswith(":1") and after[third["id"]].endswith(":2")
    before = tip(demo_repo)
    code, _, err = cli(capsys, "delete", first["id"], *repo_args(demo_repo))  # an old id names nothing now
    assert code == EXIT_USAGE and first["id"] in err and tip(demo_repo) == before
    code, _, _ = cli(capsys, "accept", second["id"], *repo_args(demo_repo))
    assert code == EXIT_PASS
    accepted = git(demo_repo, "show", "main:oracle/seeds/rollout.jsonl").splitlines()[-1]
    assert json.loads(accepted) == json.loads(drafted[1])  # the row the id named, at whatever line


def test_version_is_the_projects(capsys):
    """``relconsole --version`` prints the version pyproject.toml declares (installed metadata)."""
    import tomllib
    declared = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())["project"]["version"]
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.split() == ["relconsole", declared]


@pytest.mark.parametrize("module, argv", [("argparse", ["--version"]), ("json", ["schema", "pin"])])
def test_python_m_relconsole_in_a_checkout_imports_none_of_its_modules(tmp_path, module, argv):
    """``python -m relconsole`` run in the reviewed checkout (as a CI step might) puts that
    folder first on sys.path: a patch's ``argparse.py`` or ``json.py`` there must not run in
    the process that decides (red team, issue 19)."""
    import subprocess
    import sys
    (tmp_path / f"{module}.py").write_text("import sys\nsys.stderr.write('SHADOWED\\n')\nraise SystemExit(0)\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONSAFEPATH")}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1])  # relconsole itself, as installed
    done = subprocess.run([sys.executable, "-m", "relconsole", *argv], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert "SHADOWED" not in done.stderr
    assert done.returncode == 0 and done.stdout.strip(), (done.returncode, done.stdout, done.stderr)


def test_validate_rejects_a_candidate_whose_subject_does_not_resolve(demo_repo: Path, capsys):
    git(demo_repo, "checkout", "-q", "main")
    good = git(demo_repo, "show", "main:oracle/quarantine/penguins.mass_permutation.yaml")
    broken = good.replace("id: penguins.mass_permutation", "id: penguins.typo_subject").replace(
        "subject: aggregator:summarize", "subject: aggregator:summarise")
    assert broken != good
    (demo_repo / "oracle" / "quarantine" / "penguins.typo_subject.yaml").write_text(broken)
    git(demo_repo, "add", "-A")
    git(demo_repo, "commit", "-qm", "quarantine: a draft with a typo in its subject")
    code, out, _ = cli(capsys, "validate", "--json", *repo_args(demo_repo))
    found = {c["id"]: c for c in json.loads(out)["candidates"]}
    assert found["penguins.mass_permutation"]["valid"]
    typo = found["penguins.typo_subject"]
    assert not typo["valid"] and any("aggregator:summarise" in r and "does not resolve" in r for r in typo["reasons"])


@pytest.mark.parametrize("seeds", ["/oracle/seeds/rollout.jsonl", "oracle/seeds/rollout.jsonl/", "./oracle/seeds/rollout.jsonl",
                                   "tests/test_rollout.py", "oracle/quarantine/rollout.monotonic.seeds.jsonl",
                                   "oracle/catalog.yaml"])
def test_a_seeds_path_outside_the_protected_seeds_is_refused_in_catalog_and_quarantine(demo_repo: Path, capsys, seeds):
    """Red team: an absolute path read the host's file, a path outside the protected tree
    let the patch choose the inputs, a quarantine or YAML file read as plain-value seeds."""
    git(demo_repo, "checkout", "-q", "main")
    draft = git(demo_repo, "show", "main:oracle/quarantine/penguins.mass_permutation.yaml")
    draft = draft.replace("id: penguins.mass_permutation", "id: penguins.elsewhere")
    draft = draft.replace("input: {lease: penguins}", f"input: {{seeds: {json.dumps(seeds)}}}")
    assert json.dumps(seeds) in draft
    (demo_repo / "oracle" / "quarantine" / "penguins.elsewhere.yaml").write_text(draft)
    git(demo_repo, "add", "-A")
    git(demo_repo, "commit", "-qm", "quarantine: a draft reading seeds from elsewhere")
    code, out, _ = cli(capsys, "validate", "--json", *repo_args(demo_repo))
    found = next(c for c in json.loads(out)["candidates"] if c["id"] == "penguins.elsewhere")
    assert not found["valid"] and any(seeds.rstrip("/") in r and "seeds path" in r for r in found["reasons"]), found
    # the same path in a catalog row is a bad input file naming the catalog line (exit 5)
    catalog = demo_repo / "oracle" / "catalog.yaml"
    text = catalog.read_text()
    catalog.write_text(text.replace("seeds: oracle/seeds/rollout.jsonl", f"seeds: {json.dumps(seeds)}", 1))
    assert catalog.read_text() != text
    git(demo_repo, "commit", "-qam", "catalog: the rollout seeds moved")
    code, _, err = cli(capsys, "validate", *repo_args(demo_repo))
    assert code == EXIT_BAD_INPUT and "oracle/catalog.yaml:" in err and "seeds path" in err


def test_commits_are_refused_when_the_review_reads_the_oracle_from_head(demo_repo: Path, capsys):
    """Red team: under --oracle-from HEAD the patch's [tool.relconsole] chose the quarantine
    directory and the branch a propose commit went to."""
    tip = git(demo_repo, "rev-parse", "main").strip()
    code, _, err = cli(capsys, "delete", "penguins.mass_permutation", "--oracle-from", "HEAD", *repo_args(demo_repo))
    assert code == EXIT_USAGE and "--oracle-from HEAD" in err
    assert git(demo_repo, "rev-parse", "main").strip() == tip


@pytest.mark.parametrize("ran, textual_code, shown, expected", [
    (1, 0, 0, 1),        # quit with the decision's code
    (0, 0, 1, 0),        # quit on a pass
    (None, 1, 0, 3),     # crashed (Textual's return code 1): abort, never the pass code
    (None, 0, 2, 2),     # Textual's own quit: the decision the console shows
])
def test_the_console_s_exit_code_is_never_a_pass_after_a_crash(ran, textual_code, shown, expected):
    """Red team: a crash while loading exited 0 (``app.run() or 0``)."""
    from relconsole.cli.demo import _console_exit

    class App:
        return_code = textual_code

        def run(self):
            return ran

        def exit_code(self):
            return shown
    assert _console_exit(App()) == expected
