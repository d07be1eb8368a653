"""examples/github-actions.yml is a workflow that works: it validates against the GitHub
workflow schema (check-jsonschema's vendored copy), and its ``run:`` steps, run for real in a
full and in a shallow clone of the sample repository, give the decision's exit code (the sample
patch is a reject) or, shallow, an abort that says to fetch the whole history.

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
WORKFLOW = PROJECT / "examples" / "github-actions.yml"
SARIF_SCHEMA = json.loads((Path(__file__).parent / "schemas" / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))
TODAY = "2026-12-02"
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def workflow() -> dict:
    return yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))


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

    def __init__(self, origin: Path, store: Path, shim: Path, context: dict, tmp: Path):
        self.origin, self.store, self.shim, self.context, self.tmp = origin, store, shim, context, tmp

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
        spec = workflow()
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


def runner(tmp_path, origin, shim, lease_url) -> Runner:
    context = {"github.base_ref": "main", "github.run_id": "4242", "github.run_attempt": "1",
               "secrets.RELCONSOLE_LEASE_URL": lease_url}
    return Runner(origin, tmp_path / "artifact-store", shim, context, tmp_path)


def gate_step(ran) -> tuple[int, str]:
    return next((code, out) for step, code, out in ran if "relconsole gate" in step["run"])


def test_the_workflow_validates_and_has_what_ci_needs():
    spec = workflow()
    check = pytest.importorskip("check_jsonschema")
    proc = subprocess.run([sys.executable, "-m", check.__name__, "--builtin-schema", "vendor.github-workflows",
                           str(WORKFLOW)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert spec.get("on", spec.get(True)) == "pull_request"  # YAML 1.1 reads the key `on` as True
    gate, collect = spec["jobs"]["gate"], spec["jobs"]["collect"]
    assert gate["strategy"]["matrix"]["shard"] == [1, 2] and gate["strategy"]["fail-fast"] is False
    checkout = next(s for s in gate["steps"] if s.get("uses", "").startswith("actions/checkout@"))
    assert checkout["with"]["fetch-depth"] == 0
    assert collect["needs"] == "gate" and "always()" in collect["if"]
    assert collect["permissions"]["security-events"] == "write"
    assert any(s.get("uses", "").startswith("github/codeql-action/upload-sarif@") for s in collect["steps"])
    download = next(s for s in collect["steps"] if s.get("uses", "").startswith("actions/download-artifact@"))
    assert download["with"]["merge-multiple"] is True
    uploads = [s for s in gate["steps"] if s.get("uses", "").startswith("actions/upload-artifact@")]
    assert "matrix.shard" in uploads[0]["with"]["name"] and "always()" in uploads[0]["if"]


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
