"""relconsole where users install it (issue 17): the sdist and the wheel built from this tree,
the wheel installed into a fresh virtual environment (no extras, then ``[console]``) and run
from a directory outside the source tree, as ``pip``, ``pipx`` or ``uv tool`` would run it.

The wheel's dependencies come from the package index (CI reaches PyPI; pip's cache keeps the
second run short). The sample repository must ship inside the package: from a wheel,
``relconsole demo`` once exited 64 with ".../site-packages/sample_repo: no sample project here".
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

import pytest

from relconsole.engine import demo
from bench.gitrepo import git
from tests.conftest import TODAY

ROOT = Path(__file__).resolve().parents[1]
INSTALL_TIMEOUT = 900  # seconds: a cold pip cache downloads every dependency
CONSOLE_HINT = "pip install 'relconsole[console]'"


def tracked_files() -> list[str]:
    """The files git tracks in this checkout (as they are in the work tree)."""
    proc = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip("not a git checkout: which files the sdist must carry is unknown")
    return sorted(p for p in proc.stdout.split("\0") if p and (ROOT / p).is_file())


def outside_env() -> dict[str, str]:
    """The environment of a user's shell: nothing points Python at this source tree."""
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV"}}
    env.pop("RELCONSOLE_TODAY", None)
    return env


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, Path]:
    """(sdist, wheel) built by ``python -m build`` from a copy of the tracked files: the
    wheel is built from the unpacked sdist, so the sdist must carry what the wheel needs."""
    try:
        import build  # noqa: F401  (python -m build below)
    except ImportError:
        pytest.fail("the build package is not installed: pip install -e '.[test]'")
    scratch = tmp_path_factory.mktemp("build")
    source = scratch / "src"
    for relative in tracked_files():
        (source / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / relative, source / relative)
    proc = subprocess.run([sys.executable, "-m", "build", "--outdir", str(scratch / "dist"), str(source)],
                          capture_output=True, text=True, timeout=INSTALL_TIMEOUT, env=outside_env())
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (sdist,) = (scratch / "dist").glob("*.tar.gz")
    (wheel,) = (scratch / "dist").glob("*.whl")
    return sdist, wheel


@pytest.fixture(scope="module")
def venv(built, tmp_path_factory) -> Path:
    """A fresh virtual environment with the wheel installed, no extras. This process's pip
    installs into it (``pip --python``): bootstrapping a pip of its own costs more than the rest."""
    where = tmp_path_factory.mktemp("venv") / "v"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True, timeout=INSTALL_TIMEOUT)
    pip_install(where, str(built[1]))
    return where


def pip_install(venv: Path, requirement: str) -> None:
    proc = subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "-q",
                           requirement], capture_output=True, text=True, timeout=INSTALL_TIMEOUT, env=outside_env())
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]


def installed(venv: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    """``<venv>/bin/relconsole args`` run in ``cwd`` as a user would."""
    return subprocess.run([str(venv / "bin" / "relconsole"), *args], cwd=cwd, capture_output=True,
                          text=True, env=outside_env(), timeout=INSTALL_TIMEOUT)


def importable(venv: Path, module: str, cwd: Path) -> bool:
    probe = f"import importlib.util, sys; sys.exit(importlib.util.find_spec({module!r}) is None)"
    return subprocess.run([str(venv / "bin" / "python"), "-c", probe], cwd=cwd, env=outside_env()).returncode == 0


# --- what the archives carry ---------------------------------------------------------------

def test_the_sdist_carries_every_tracked_file(built):
    with tarfile.open(built[0]) as sdist:
        names = {name.partition("/")[2] for name in sdist.getnames()}
    missing = [path for path in tracked_files() if path not in names]
    assert not missing, f"add them to MANIFEST.in: {missing[:20]}"


def test_the_wheel_carries_the_package_and_the_whole_sample(built):
    """Every tracked file of relconsole/ (a package missing from pyproject's list would be
    dropped) and of sample_repo/, dotfiles included, the sample under relconsole/_sample/."""
    with zipfile.ZipFile(built[1]) as wheel:
        names = set(wheel.namelist())
    tracked = tracked_files()
    package = [p for p in tracked if p.startswith("relconsole/")]
    sample = [p for p in tracked if p.startswith("sample_repo/")]
    assert any("/." in p for p in sample)  # the sample has dotfiles (.gitignore, .agent_patch/)
    assert [p for p in package if p not in names] == []
    expected = {"relconsole/" + demo.PACKAGED_SAMPLE + p.removeprefix("sample_repo") for p in sample}
    assert expected <= names
    assert {n for n in names if f"/{demo.PACKAGED_SAMPLE}/" in n} == expected  # no stray bytecode
    assert not [n for n in names if n.startswith("sample_repo/")]


def test_the_wheel_carries_the_licence_and_its_spdx_expression(built):
    """The MIT licence text travels in the wheel (PEP 639: ``dist-info/licenses/``) and the
    metadata names it by its SPDX expression, with no deprecated License classifier beside it."""
    with zipfile.ZipFile(built[1]) as wheel:
        names = wheel.namelist()
        (metadata,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        text = wheel.read(metadata).decode("utf-8")
        licences = [n for n in names if ".dist-info/licenses/" in n]
        carried = [wheel.read(n).decode("utf-8") for n in licences]
    assert [n.rsplit("/", 1)[1] for n in licences] == ["LICENSE"]
    assert carried == [(ROOT / "LICENSE").read_text(encoding="utf-8")]
    assert "License-Expression: MIT" in text.splitlines()
    assert not [line for line in text.splitlines() if line.startswith("Classifier: License ::")]
    assert "Author: the relconsole contributors" in text.splitlines()


def test_the_wheel_installs_hash_checked_and_a_changed_hash_is_refused(built, tmp_path):
    """docs/ci.md's hash-checked install: one requirements line naming the wheel with
    ``--hash=sha256:``, ``pip install --require-hashes --no-deps -r``. A wheel whose digest is
    not the one written down never installs."""
    import hashlib
    wheel = built[1]
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    where = tmp_path / "v"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True, timeout=INSTALL_TIMEOUT)
    for name, value in [("wrong", "0" * 64), ("right", digest)]:
        requirements = tmp_path / f"{name}.txt"
        requirements.write_text(f"relconsole @ {wheel.as_uri()} --hash=sha256:{value}\n")
        proc = subprocess.run([sys.executable, "-m", "pip", "--python", str(where / "bin" / "python"), "install", "-q",
                               "--require-hashes", "--no-deps", "-r", str(requirements)], capture_output=True,
                              text=True, timeout=INSTALL_TIMEOUT, env=outside_env())
        assert (proc.returncode == 0) == (name == "right"), proc.stdout[-2000:] + proc.stderr[-2000:]
        if name == "wrong":
            assert "THESE PACKAGES DO NOT MATCH THE HASHES" in proc.stderr, proc.stderr[-2000:]
    assert (where / "bin" / "relconsole").exists()


def test_the_sample_read_from_a_zip_gives_the_same_repository(tmp_path, monkeypatch):
    """A package imported from a zip hands the sample over as a Traversable, not a directory:
    the demo made from it has the same commits as the one made from sample_repo/."""
    archive = tmp_path / "sample.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        for path in sorted((ROOT / "sample_repo").rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                zipped.write(path, "pkg/_sample/" + path.relative_to(ROOT / "sample_repo").as_posix())
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    from_zip = demo.materialise(tmp_path / "zip", today=TODAY, source=zipfile.Path(archive, "pkg/_sample/"))
    from_tree = demo.materialise(tmp_path / "tree", today=TODAY)
    for ref in ("main", "agent/patch"):
        assert git(from_zip, "rev-parse", ref) == git(from_tree, "rev-parse", ref)
    assert not list((tmp_path / "tmp").iterdir())  # the unpacked copy is gone


# --- the installed wheel, from outside the source tree -------------------------------------

def test_demo_and_bind_from_the_wheel_match_the_source_tree(venv, tmp_path):
    where = tmp_path / "outside"
    where.mkdir()
    located = subprocess.run([str(venv / "bin" / "python"), "-c", "import relconsole; print(relconsole.__file__)"],
                             cwd=where, capture_output=True, text=True, env=outside_env(), check=True)
    assert Path(located.stdout.strip()).is_relative_to(venv)

    made = installed(venv, "demo", "--into", str(where / "demo"), "--no-open", "--today", TODAY.isoformat(), cwd=where)
    assert made.returncode == 0, made.stderr
    assert Path(made.stdout.strip()) == where / "demo"
    assert set(git(where / "demo", "branch", "--format=%(refname:short)").split()) == {"main", "agent/patch"}
    # the same sample and the same day give the same commits as the source tree's demo
    reference = demo.materialise(tmp_path / "reference", today=TODAY)
    for ref in ("main", "agent/patch"):
        assert git(where / "demo", "rev-parse", ref) == git(reference, "rev-parse", ref)

    bind = ["bind", "--base", "main", "--head", "agent/patch", "--today", TODAY.isoformat(), "--json"]
    wheel_bind = installed(venv, *bind, "--repo", str(where / "demo"), cwd=where)
    tree_bind = subprocess.run([sys.executable, "-m", "relconsole", *bind, "--repo", str(reference)],
                               cwd=ROOT, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert wheel_bind.returncode == tree_bind.returncode, wheel_bind.stderr + tree_bind.stderr
    touched = [json.loads(p.stdout)["paths"] for p in (wheel_bind, tree_bind)]
    assert touched[0] and touched[0] == touched[1]


def test_the_console_is_an_extra_of_the_wheel(venv, built, tmp_path):
    """Without [console]: the command line works and the console commands say in one line
    what to install (exit 64). With it: ``screenshots`` finds the packaged sample."""
    repo = demo.materialise(tmp_path / "demo", today=TODAY)
    assert not importable(venv, "textual", tmp_path) and not importable(venv, "rich", tmp_path)
    assert installed(venv, "check-split", "--staged", "--repo", str(repo), cwd=tmp_path).returncode == 0
    for command in (["review", "--repo", str(repo)], ["demo", "--into", str(tmp_path / "opened")],
                    ["screenshots", "--out", str(tmp_path / "shots")]):
        refused = installed(venv, *command, cwd=tmp_path)
        assert refused.returncode == 64, (command, refused.stderr)
        assert refused.stderr.count("\n") == 1 and CONSOLE_HINT in refused.stderr, refused.stderr
    assert not (tmp_path / "opened").exists() and not (tmp_path / "shots").exists()

    pip_install(venv, f"{built[1]}[console]")
    assert importable(venv, "textual", tmp_path)
    # the screenshots command as far as the console: the sample it materialises comes from the
    # wheel (driving the console for every picture takes minutes; test_console covers that)
    probe = ("import json, sys, relconsole, relconsole.console.screenshots as shots, relconsole.cli.main as cli\n"
             "async def shoot(repo, out):\n"
             "    print(json.dumps([sorted(p.name for p in repo.iterdir()), relconsole.__file__]))\n"
             "    return []\n"
             "shots._shoot = shoot\n"
             "sys.exit(cli.main(['screenshots', '--out', sys.argv[1]]))\n")
    shot = subprocess.run([str(venv / "bin" / "python"), "-c", probe, str(tmp_path / "shots")], cwd=tmp_path,
                          capture_output=True, text=True, env=outside_env(), timeout=INSTALL_TIMEOUT)
    assert shot.returncode == 0, shot.stderr
    listing, module = json.loads(shot.stdout)
    assert listing == sorted(p.name for p in repo.iterdir())
    assert Path(module).is_relative_to(venv)
