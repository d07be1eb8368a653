"""The gate on an honest PR of a small library against that library's own ``pytest`` run at the
same commit (issue 35): what relconsole costs a team per PR, beside what their CI already pays.

For a library spec of the ecosystem check (``bench/ecosystem/<library>/spec.json``, or
``--spec FILE``), the newest commit of its pinned range that changes the library's Python code
(or ``--commit SHA``) is built as a PR the way ``bench.ecosystem`` builds one. Then, round by
round, interleaved:

  pytest  the library's own tests in the PR's checkout (``python -m pytest -q``, the import
          roots on PYTHONPATH, the modules its build generates written as the spec declares
          them), in a virtualenv with the spec's ``tests.requires`` (made once,
          cached under ``~/.cache/relconsole-bench/``; none: this interpreter)
  gate    ``relconsole gate --base main --runs 2`` as CI runs it on a fresh clone: the
          records a clone does not have (under the git directory) removed first

Prints each median and the gate/pytest ratio per round (median); the anchor is pytest. It
asserts nothing: a library whose tests fail here is said so, and the ratio is still printed.

    python -m bench.gate_vs_pytest [--library humanize] [--spec FILE] [--commit SHA] [--repeat 3]
                                   [--pytest-args "--benchmark-disable"]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import tomllib
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import ecosystem  # noqa: E402
from bench.timing import interleaved, round_ratios  # noqa: E402

CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "relconsole-bench"


def code_commit(spec: ecosystem.Spec) -> tuple[str, str]:
    """(parent, commit) of the newest commit of the pinned range that changes Python code
    outside tests."""
    for parent, commit in reversed(ecosystem.pinned_range(spec, None)):
        names = ecosystem.up(spec, "diff", "--name-only", parent, commit).split()
        if any(n.endswith(".py") and not n.startswith(("tests/", "test/")) and "/test" not in n for n in names):
            return parent, commit
    raise SystemExit(f"{spec.name}: no commit of the pinned range changes the library's code")


def test_python(spec_path: Path, name: str) -> str:
    """The interpreter that runs the library's tests: a cached virtualenv with the spec's
    ``tests.requires``, or this interpreter when the spec asks for none."""
    requires = json.loads(spec_path.read_text()).get("tests", {}).get("requires", [])
    if not requires:
        return sys.executable
    home = CACHE / f"venv-{name}"
    python = home / "bin" / "python"
    stamp = home / "requires.json"
    if not python.exists() or not stamp.exists() or json.loads(stamp.read_text()) != requires:
        shutil.rmtree(home, ignore_errors=True)
        venv.create(home, with_pip=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", *requires], check=True)
        stamp.write_text(json.dumps(requires))
    return str(python)


def write_generated(spec: ecosystem.Spec, repo: Path) -> None:
    """Write the build-generated modules the spec declares (``[tool.relconsole] generated``, as
    the library's build would: a version file) into the checkout, untracked, for pytest."""
    generated = tomllib.loads(spec.pyproject or "").get("tool", {}).get("relconsole", {}).get("generated", {})
    for path, text in generated.items():
        target = repo / path
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)


def import_path(repo: Path) -> str:
    """The import roots as §3 resolves them: the repository root, and ``src/`` when there is one."""
    return os.pathsep.join([str(repo)] + ([str(repo / "src")] if (repo / "src").is_dir() else []))


def run_pytest(repo: Path, python: str, args: list[str]) -> int:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "RELCONSOLE_"))}
    env["PYTHONPATH"] = import_path(repo)
    return subprocess.run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args], cwd=repo, env=env,
                          capture_output=True, check=False).returncode


def run_gate(repo: Path, scratch: Path) -> int:
    shutil.rmtree(repo / ".git" / "relconsole", ignore_errors=True)  # what a fresh clone does not have
    artifacts = scratch / "artifacts"
    shutil.rmtree(artifacts, ignore_errors=True)
    return ecosystem.run_gate(repo, artifacts)["exit_code"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--library", default="humanize", choices=ecosystem.LIBRARIES)
    parser.add_argument("--spec", type=Path, default=None)
    parser.add_argument("--commit", default=None, help="the upstream commit to build as the PR")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--pytest-args", default=None,
                        help="the library's pytest options, one string (default: the spec's tests.args)")
    args = parser.parse_args(argv)
    spec_path = args.spec or ecosystem.ECOSYSTEM / args.library / "spec.json"
    spec = ecosystem.load_spec(spec_path)
    if args.commit:
        parent = ecosystem.up(spec, "rev-parse", f"{args.commit}^1").strip()
        commit = ecosystem.up(spec, "rev-parse", args.commit).strip()
    else:
        parent, commit = code_commit(spec)
    python = test_python(spec_path, spec.name)
    pytest_args = (shlex.split(args.pytest_args) if args.pytest_args is not None
                   else json.loads(spec_path.read_text()).get("tests", {}).get("args", []))
    scratch = Path(tempfile.mkdtemp(prefix="relconsole-bench-gate-"))
    try:
        repo = scratch / spec.name
        ecosystem.build_base(spec, repo, parent)
        skipped = ecosystem.apply_commit(spec, repo, parent, commit)
        if skipped:
            raise SystemExit(f"{commit[:10]}: {skipped}")
        ecosystem.self_contained(repo)
        write_generated(spec, repo)
        codes: dict[str, int] = {}
        runs = interleaved({"pytest": lambda: codes.__setitem__("pytest", run_pytest(repo, python, pytest_args)),
                            "gate": lambda: codes.__setitem__("gate", run_gate(repo, scratch))},
                           args.repeat, warmup=1)
        ratio = statistics.median(round_ratios(runs, "gate", "pytest"))
        print(f"{spec.name} {commit[:10]} {ecosystem.subject_of(spec, commit)[:60]}")
        print(f"  pytest (anchor) {statistics.median(runs['pytest']):7.2f} s  exit {codes['pytest']}"
              + ("" if codes["pytest"] == 0 else "  (the library's tests did not all pass here)"))
        print(f"  gate            {statistics.median(runs['gate']):7.2f} s  exit {codes['gate']}")
        print(f"  gate / pytest   {ratio:.2f}x (median of {args.repeat} rounds)")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
