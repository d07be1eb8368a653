"""The demo repository: its history, its oracle dates and hashes, and the agent's patch.

Everything is checked against the materialised git repository itself (``git`` as a
subprocess), and the sample code is imported from the committed blobs, so these tests
say what a reviewer opening the demo would actually find.
"""

from __future__ import annotations

import csv
import datetime as dt
import hashlib
import importlib.util
import io
import itertools
import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from relconsole.engine import demo
from relconsole.engine.errors import UsageError

TODAY = dt.date(2031, 5, 17)  # far from the real date, so only an injected today can pass
EXPECTED_PATCH = {
    ("M", "src/aggregator.py"),
    ("A", "src/export.py"),
    ("A", "tests/test_totals.py"),
    ("M", "oracle/catalog.yaml"),
    ("M", "src/bands.py"),
}
CORPUS = "oracle/data/penguins.csv"
_module_ids = itertools.count()


def git(root: Path, *args: str) -> str:
    """stdout of a git command in ``root``, raising on failure; no inherited GIT_* variables."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    return subprocess.run(["git", *args], cwd=root, env=env, check=True,
                          capture_output=True, text=True).stdout


def blob(root: Path, ref: str, path: str) -> bytes:
    """The bytes of ``path`` at ``ref``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    return subprocess.run(["git", "show", f"{ref}:{path}"], cwd=root, env=env, check=True,
                          capture_output=True).stdout


def load_module(root: Path, ref: str, path: str, scratch: Path):
    """Import ``path`` as committed at ``ref`` under a unique module name (not in sys.modules)."""
    name = f"demo_{Path(path).stem}_{next(_module_ids)}"
    file = scratch / f"{name}.py"
    file.write_bytes(blob(root, ref, path))
    spec = importlib.util.spec_from_file_location(name, file)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def penguin_rows(root: Path) -> list[dict[str, str]]:
    """The leased penguins corpus as committed on main, rows of strings."""
    text = blob(root, "main", CORPUS).decode("utf-8")
    return list(csv.DictReader(io.StringIO(text, newline="")))


def yaml_at(root: Path, ref: str, path: str):
    return yaml.safe_load(blob(root, ref, path).decode("utf-8"))


def within(a: dict, b: dict, quantum: float) -> bool:
    """Same species and fields, every number within ``quantum``."""
    return a.keys() == b.keys() and all(
        a[s].keys() == b[s].keys() and all(abs(a[s][k] - b[s][k]) <= quantum for k in a[s])
        for s in a)


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    return demo.materialise(tmp_path_factory.mktemp("demo"), today=TODAY)


@pytest.fixture(scope="module")
def modules(repo, tmp_path_factory):
    """Base and patched aggregator plus the oracle's merge adapter, from the commits."""
    scratch = tmp_path_factory.mktemp("modules")
    return {
        "base": load_module(repo, "main", "src/aggregator.py", scratch),
        "patched": load_module(repo, "agent/patch", "src/aggregator.py", scratch),
        "adapters": load_module(repo, "main", "oracle/adapters.py", scratch),
    }


# --- history --------------------------------------------------------------------------

def test_branches_and_commit_counts(repo):
    branches = set(git(repo, "branch", "--format=%(refname:short)").split())
    assert branches == {"main", "agent/patch"}
    assert git(repo, "symbolic-ref", "--short", "HEAD").strip() == "agent/patch"
    assert git(repo, "rev-list", "--count", "main").strip() == "1"
    with demo.on_disk(demo.default_source()) as sample:
        agent_commits = demo.patch_commits(sample / demo.PATCH_DIR)
    assert git(repo, "rev-list", "--count", "main..agent/patch").strip() == str(len(agent_commits))
    assert git(repo, "merge-base", "main", "agent/patch").strip() == git(repo, "rev-parse", "main").strip()


def test_authors_and_local_identity(repo):
    assert git(repo, "log", "-1", "--format=%an <%ae>|%s", "main").strip() == (
        f"{demo.MAINTAINER[0]} <{demo.MAINTAINER[1]}>|{demo.BASE_MESSAGE}")
    agents = git(repo, "log", "--format=%an <%ae>", "main..agent/patch").split("\n")
    assert set(filter(None, agents)) == {"coding-agent <agent@example.invalid>"}
    assert git(repo, "config", "--local", "user.name").strip() == demo.MAINTAINER[0]
    assert git(repo, "config", "--local", "user.email").strip() == demo.MAINTAINER[1]


def test_commit_dates_derive_from_today(repo):
    stamps = git(repo, "log", "--format=%cI", "main", "agent/patch").split()
    days = {dt.datetime.fromisoformat(s).date() for s in stamps}
    assert days and all(TODAY - dt.timedelta(days=7) <= d < TODAY for d in days)


def test_export_exists_only_on_the_agent_branch(repo):
    assert "src/export.py" not in git(repo, "ls-tree", "-r", "--name-only", "main").split()
    assert "src/export.py" in git(repo, "ls-tree", "-r", "--name-only", "agent/patch").split()
    assert (repo / "src" / "export.py").is_file()  # agent/patch is checked out


def test_agent_diff_touches_exactly_the_expected_paths(repo):
    lines = git(repo, "diff", "--name-status", "--no-renames", "main", "agent/patch").splitlines()
    assert {tuple(line.split("\t")) for line in lines} == EXPECTED_PATCH


def test_each_agent_commit_touches_one_path(repo):
    commits = git(repo, "rev-list", "--reverse", "main..agent/patch").split()
    touched = [git(repo, "diff-tree", "--no-commit-id", "--name-only", "-r", c).split() for c in commits]
    assert touched == [["src/aggregator.py"], ["src/export.py"], ["tests/test_totals.py"],
                       ["src/bands.py"], ["oracle/catalog.yaml"]]


def test_agent_loosens_only_the_order_invariant_compare(repo):
    base = yaml_at(repo, "main", "oracle/catalog.yaml")
    patched = yaml_at(repo, "agent/patch", "oracle/catalog.yaml")
    assert base["owners"] == patched["owners"]
    pairs = list(zip(base["relations"], patched["relations"], strict=True))
    changed = [(b, p) for b, p in pairs if b != p]
    assert len(changed) == 1
    before, after = changed[0]
    assert before["id"] == "penguins.order_invariant" and before["compare"] == "exact"
    assert after["compare"] == "tolerance" and float(after["quantum"]) == pytest.approx(1e-3)
    assert {k: v for k, v in after.items() if k not in ("compare", "quantum")} == {
        k: v for k, v in before.items() if k not in ("compare", "quantum")}
    # the reviewer's comments are still in the agent's copy: only values were edited
    base_comments = [l for l in blob(repo, "main", "oracle/catalog.yaml").decode().splitlines()
                     if l.lstrip().startswith("#")]
    patched_text = blob(repo, "agent/patch", "oracle/catalog.yaml").decode()
    assert base_comments and all(c in patched_text for c in base_comments)


def test_work_tree_is_clean(repo):
    assert git(repo, "status", "--porcelain", "--untracked-files=all") == ""


# --- oracle: hashes and dates -----------------------------------------------------------

def test_lease_hashes_equal_the_committed_corpora(repo):
    leases = {}
    for name in git(repo, "ls-tree", "--name-only", "main", "oracle/leases/").split():
        lease = yaml_at(repo, "main", name)
        leases[lease["id"]] = lease
        assert isinstance(lease["sha256"], str) and len(lease["sha256"]) == 64
        assert lease["sha256"] == hashlib.sha256(blob(repo, "main", lease["path"])).hexdigest()
    assert set(leases) == {"penguins", "weather", "stocks"}
    pins = json.loads(blob(repo, "main", "oracle/pins.json"))
    assert pins == {l["path"]: f"sha256:{l['sha256']}" for l in leases.values()}


def test_corpora_are_the_shared_copies_unchanged(repo):
    shared = Path(__file__).resolve().parents[1] / "sample_repo" / "oracle" / "data"
    for name in ("penguins.csv", "seattle-weather.csv", "stocks.csv"):
        assert blob(repo, "main", f"oracle/data/{name}") == (shared / name).read_bytes()


def test_lease_expiries_are_ok_expiring_and_expired_relative_to_today(repo):
    window = 7  # SPEC §4 default expiring window
    left = {}
    for name in ("penguins", "weather", "stocks"):
        expires = yaml_at(repo, "main", f"oracle/leases/{name}.yaml")["expires"]
        assert isinstance(expires, dt.date)  # unquoted YAML date, as §4 writes it
        left[name] = (expires - TODAY).days
    assert left["penguins"] > window
    assert 0 <= left["weather"] <= window
    assert left["stocks"] < 0


def test_freeze_rows_are_live_and_expired_relative_to_today(repo):
    rows = {r["relation_id"]: r for r in json.loads(blob(repo, "main", "oracle/freezes.json"))}
    relations = {r["id"]: r for r in yaml_at(repo, "main", "oracle/catalog.yaml")["relations"]}
    live = rows["penguins.order_invariant"]
    expires = dt.date.fromisoformat(live["expires"])
    assert TODAY <= expires <= TODAY + dt.timedelta(days=relations[live["relation_id"]]["freeze"]["max_days"])
    assert live["pass_needed"] <= live["reruns"]
    assert dt.date.fromisoformat(rows["weather.replay_ingest"]["expires"]) < TODAY


def test_quarantine_drafts_are_dated_just_before_today(repo):
    names = git(repo, "ls-tree", "--name-only", "main", "oracle/quarantine/").split()
    candidates = [n for n in names if n.endswith(".yaml")]
    assert len(candidates) == 4
    for name in candidates:
        stamp = yaml_at(repo, "main", name)["drafted_at"]
        assert isinstance(stamp, str)
        drafted = dt.date.fromisoformat(stamp[:10])
        assert TODAY - dt.timedelta(days=7) <= drafted < TODAY


def test_date_splicing_keeps_every_other_byte(repo):
    source = demo.default_source()
    for relative in [*demo.LEASE_EXPIRY_DAYS, demo.FREEZES_FILE]:
        original = (source / relative).read_bytes().decode().splitlines()
        committed = blob(repo, "main", relative).decode().splitlines()
        differing = [(a, b) for a, b in zip(original, committed, strict=True) if a != b]
        assert all("expires" in a and "expires" in b for a, b in differing)


# --- the code under review ----------------------------------------------------------------

def test_base_aggregator_is_exactly_permutation_invariant(repo, modules):
    rows = penguin_rows(repo)
    reference = modules["base"].summarize(rows)
    rng = random.Random(7)
    for _ in range(6):
        shuffled = list(rows)
        rng.shuffle(shuffled)
        assert modules["base"].summarize(shuffled) == reference


def test_patched_aggregator_breaks_exact_permutation_invariance(repo, modules):
    rows = penguin_rows(repo)
    reference = modules["patched"].summarize(rows)
    rng = random.Random(7)
    misses = 0
    for _ in range(6):
        shuffled = list(rows)
        rng.shuffle(shuffled)
        misses += modules["patched"].summarize(shuffled) != reference
    assert misses > 0


def test_base_and_patched_agree_within_the_split_merge_quantum(repo, modules):
    rows = penguin_rows(repo)
    assert within(modules["base"].summarize(rows), modules["patched"].summarize(rows), 1e-6)


def test_split_merge_holds_on_both_sides(repo, modules):
    rows = penguin_rows(repo)
    merge = modules["adapters"].merge_summaries
    third = len(rows) // 3
    for side in ("base", "patched"):
        summarize = modules[side].summarize
        whole = summarize(rows)
        for cut in (1, third, 2 * third, len(rows) - 1):
            assert within(merge(summarize(rows[:cut]), summarize(rows[cut:])), whole, 1e-6)


def band_days(root: Path) -> list[list[str]]:
    """The hand-written seeds of bands.repeat_scans as committed on main: one day's readings a line."""
    text = blob(root, "main", "oracle/seeds/bands.jsonl").decode("utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_band_sightings_miss_intermittently_and_the_same_on_both_sides(repo, tmp_path):
    """The sample's intermittent miss (issue 18): with the subject's random seeded per call, as
    the harness seeds it, a salted fingerprint collision drops a band on some seeds only, and
    the patch's bands.py drops the same band as main's for the same seed (the miss is on base).
    At the sample's width a collision is one call in millions (the tour's recorded seeds meet
    one, see test_console_tour); the mechanism is checked here at a width where seeds meet it."""
    base = load_module(repo, "main", "src/bands.py", tmp_path)
    patched = load_module(repo, "agent/patch", "src/bands.py", tmp_path)
    assert base.FINGERPRINT_BITS == patched.FINGERPRINT_BITS >= 28  # rare enough that drawn seeds miss it
    base.FINGERPRINT_BITS = patched.FINGERPRINT_BITS = 8
    day = max(band_days(repo), key=len)
    dropped = []
    for seed in range(60):
        random.seed(seed)
        mine = base.sightings(day)
        random.seed(seed)
        assert patched.sightings(day) == mine
        dropped.append(set(day) - set(mine))
        assert mine == sorted(set(mine)) and set(mine) <= set(day)
    assert any(dropped) and not all(dropped)


@pytest.mark.parametrize("side", ["base", "patched"])
def test_na_measurements_are_counted_as_missing(repo, modules, side):
    rows = penguin_rows(repo)
    summary = modules[side].summarize(rows)
    na_rows = [r for r in rows if r["body_mass_g"] == "NA"]
    assert na_rows  # the real corpus has them
    for species in summary:
        mine = [r for r in rows if r["species"] == species]
        assert summary[species]["count"] == len(mine)
        for measure in ("body_mass_g", "bill_length_mm", "flipper_length_mm"):
            missing = sum(r[measure] == "NA" for r in mine)
            assert summary[species][f"{measure}_missing"] == missing
            present = [float(r[measure]) for r in mine if r[measure] != "NA"]
            assert summary[species][f"{measure}_sum"] == pytest.approx(sum(present), abs=1e-6)


def test_the_agents_literal_test_is_green_on_the_patch(repo):
    # The point of the demo: CI passes on the patch although the relation misses.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PYTEST_"))}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
                          cwd=repo, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert git(repo, "status", "--porcelain", "--untracked-files=all") == ""


# --- the function's contract ---------------------------------------------------------------

def test_same_today_gives_the_same_commits(tmp_path):
    first = demo.materialise(tmp_path / "one", today=TODAY)
    second = demo.materialise(tmp_path / "two", today=TODAY)
    for ref in ("main", "agent/patch"):
        assert git(first, "rev-parse", ref) == git(second, "rev-parse", ref)
    assert git(second, "status", "--porcelain", "--untracked-files=all") == ""


def test_another_today_moves_the_dates(tmp_path):
    later = TODAY + dt.timedelta(days=30)
    root = demo.materialise(tmp_path / "later", today=later)
    expires = yaml_at(root, "main", "oracle/leases/weather.yaml")["expires"]
    assert 0 <= (expires - later).days <= 7


def test_refuses_a_non_empty_directory(tmp_path):
    (tmp_path / "keep.txt").write_text("mine")
    with pytest.raises(UsageError):
        demo.materialise(tmp_path, today=TODAY)
    assert [p.name for p in tmp_path.iterdir()] == ["keep.txt"]


def test_refuses_a_missing_sample_project(tmp_path):
    with pytest.raises(UsageError):
        demo.materialise(tmp_path / "out", today=TODAY, source=tmp_path / "nowhere")
    assert not (tmp_path / "out").exists()


def test_default_target_is_a_fresh_temporary_directory():
    root = demo.materialise(today=TODAY)
    try:
        assert root.name.startswith("relconsole-demo-")
        assert not (root / demo.PATCH_DIR).exists()
        assert not list(root.rglob("__pycache__"))
    finally:
        shutil.rmtree(root)


@pytest.fixture
def quitting_console(monkeypatch, tmp_path):
    """The demo's console, quit at once with the sample's decision (reject, exit 1); temporary
    directories go under ``tmp_path/tmp``. Yields the list of repositories it was opened on."""
    app = pytest.importorskip("relconsole.console.app")
    opened: list[Path] = []

    def run(self, *args, **kwargs):
        opened.append(Path(self.repo_path))
        assert (opened[-1] / ".git").is_dir()  # the sample exists while the console runs
        return 1
    monkeypatch.setattr(app.ReviewApp, "run", run)
    monkeypatch.setattr("relconsole.cli.demo._need_terminal", lambda command: None)  # pytest's stdout is no terminal
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(temp))
    yield opened


def test_quitting_the_demo_removes_its_temporary_sample(quitting_console, capsys):
    """Issue 18: the demo left its relconsole-demo-XXXX folder behind."""
    from relconsole.cli.main import main
    assert main(["demo", "--today", TODAY.isoformat()]) == 1  # the sample's decision: reject
    [opened] = quitting_console
    assert opened.name.startswith("relconsole-demo-") and not opened.exists()
    assert "--keep" in capsys.readouterr().err


def test_keep_and_into_leave_the_sample_in_place(quitting_console, tmp_path):
    from relconsole.cli.main import main
    assert main(["demo", "--today", TODAY.isoformat(), "--keep"]) == 1
    assert main(["demo", "--today", TODAY.isoformat(), "--into", str(tmp_path / "mine")]) == 1
    kept, into = quitting_console
    assert (kept / ".git").is_dir() and (into / ".git").is_dir() and into == tmp_path / "mine"
