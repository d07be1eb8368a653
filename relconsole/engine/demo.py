"""Materialise the sample project as a git repository with an agent's patch on a branch.

``relconsole demo`` and the tests need a reviewed repository whose every pane has
something real to show: a base commit on ``main`` carrying the code, the oracle
(catalog, leases, freezes, pins, seeds, quarantine) and the corpora, and a branch
``agent/patch`` with the agent's commits from ``sample_repo/.agent_patch/NN-*/``.

The sample project is ``sample_repo/`` at the top of a source checkout; a wheel carries
the same files as package data, ``relconsole/_sample/`` (pyproject.toml maps the one
folder to the other), read through ``importlib.resources`` so that an install from a
wheel, ``pipx`` or ``uv tool`` finds it too (issue 17).

Lease expiries, freeze expiries and quarantine draft dates only make sense relative to
"today", so they are spliced into the copied text (every other byte is kept, comments
included) before the base commit. Commit dates derive from ``today`` too, so the same
``today`` gives the same commit ids.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

import relconsole
from relconsole.engine.errors import BadInputError, GitError, UsageError

PATCH_DIR = ".agent_patch"
BASE_BRANCH = "main"
AGENT_BRANCH = "agent/patch"
BASE_MESSAGE = "base: penguins aggregator, ingest store, rollout, codec and their relations"
MAINTAINER = ("Seed 062ce53d maintainers", "maintainers@users.noreply.a-seed-062ce53d.example")
AGENT = ("coding-agent", "agent@example.invalid")

# Days from today; the lease states follow from the default 7-day expiring window (§4).
LEASE_EXPIRY_DAYS = {
    "oracle/leases/penguins.yaml": 120,  # ok
    "oracle/leases/weather.yaml": 3,  # expiring
    "oracle/leases/stocks.yaml": -10,  # expired
}
FREEZE_EXPIRY_DAYS = {
    "penguins.order_invariant": 7,  # live (within the relation's max_days)
    "weather.replay_ingest": -5,  # expired
}
# The tour's recorded run seeds (SPEC §7: a recorded seed replays a run). bands.repeat_scans
# misses on about one run in 360,000 (a 29-bit fingerprint collision among a visit's
# readings), on main as on the patch, so drawn seeds, tests' included, all but never meet it;
# with these the demo's first run is one of its misses and ``b`` replays five runs per side
# of which the first misses on both sides (found with tests/find_tour_seed.py), so
# the reviewer meets row 8 and a freeze to commit. ``relconsole review`` draws its own seeds.
TOUR_RUN_SEED = 1000550
TOUR_REPLAY_SEEDS = (1000550, 1000551, 1000552, 1000553, 1000554)
FREEZES_FILE = "oracle/freezes.json"
QUARANTINE_DIR = "oracle/quarantine"
DRAFTED_DAYS_AGO = 2
BASE_COMMIT_DAYS_AGO = 3
AGENT_COMMIT_DAYS_AGO = 1

PACKAGED_SAMPLE = "_sample"  # relconsole/_sample/ in a wheel: pyproject.toml's package-dir
_IGNORED = {"__pycache__", ".pytest_cache", ".git"}
_PATCH_NAME = re.compile(r"^\d{2}-[\w.-]+$")
_DATE = r"\d{4}-\d{2}-\d{2}"


def default_source() -> Traversable:
    """The sample project: ``relconsole/_sample/`` of an installed wheel (a ``Traversable``,
    a ``Path`` unless the package is imported from a zip), else ``sample_repo/`` beside the
    ``relconsole`` package (a source checkout, an editable install)."""
    packaged = resources.files(relconsole).joinpath(PACKAGED_SAMPLE)
    if packaged.is_dir():
        return packaged
    return Path(relconsole.__file__).resolve().parent.parent / "sample_repo"


@contextlib.contextmanager
def on_disk(source: Traversable) -> Iterator[Path]:
    """``source`` as a directory on disk: itself when it is one, else (a package imported
    from a zip) a temporary copy of its files, removed on exit.

    ``importlib.resources.as_file`` copies directories only from Python 3.12 on."""
    if isinstance(source, Path):
        yield source
        return
    scratch = Path(tempfile.mkdtemp(prefix="relconsole-sample-"))
    try:
        if source.is_dir():
            _extract(source, scratch / "sample")
        yield scratch / "sample"
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _extract(folder: Traversable, target: Path) -> None:
    """Copy every file under ``folder`` to ``target``, byte for byte."""
    target.mkdir(parents=True, exist_ok=True)
    for entry in folder.iterdir():
        if entry.is_dir():
            _extract(entry, target / entry.name)
        else:
            (target / entry.name).write_bytes(entry.read_bytes())


def materialise(into: Path | str | None = None, today: dt.date | None = None,
                source: Path | str | Traversable | None = None) -> Path:
    """Create the demo repository and return its root.

    ``into``: a directory that does not exist or is empty; None makes a fresh
    ``relconsole-demo-*`` temporary directory. ``today``: the day the relative dates
    are computed from (default: the local date). ``source``: the sample project, a
    directory or a ``Traversable`` (default ``default_source()``).

    The result has ``main`` (one base commit by the maintainers) and ``agent/patch``
    (one commit per ``.agent_patch/NN-*`` directory, by coding-agent), with
    ``agent/patch`` checked out and a clean work tree.

    Raises UsageError (exit 64) when ``into`` exists and is not an empty directory or
    the sample project is missing, BadInputError (exit 5) when a sample file lacks a
    date this function must splice, and GitError (exit 3) when a git command fails.
    A directory this call created is removed again on failure.
    """
    today = today or dt.date.today()
    if source is None:
        source = default_source()
    elif isinstance(source, str):
        source = Path(source)
    with on_disk(source) as folder:
        if not (folder / "oracle").is_dir():
            raise UsageError(f"{source}: no sample project here (expected an oracle/ directory)")
        target, created = _prepare_target(into)
        try:
            copy_sample(folder, target)
            write_schema_copies(target)
            rewrite_dates(target, today)
            build_history(target, folder / PATCH_DIR, today)
        except BaseException:
            if created:
                shutil.rmtree(target, ignore_errors=True)
            raise
    return target


def _prepare_target(into: Path | str | None) -> tuple[Path, bool]:
    """The directory to fill and whether this call created it. Raises UsageError if not empty."""
    if into is None:
        return Path(tempfile.mkdtemp(prefix="relconsole-demo-")), True
    target = Path(into)
    if target.exists():
        if not target.is_dir() or any(target.iterdir()):
            raise UsageError(f"{target}: exists and is not an empty directory; name a new one")
        return target, False
    target.mkdir(parents=True)
    return target, True


def copy_sample(source: Path, target: Path) -> None:
    """Copy the sample project into ``target`` without the agent patch and caches."""
    def ignore(directory: str, names: list[str]) -> set[str]:
        skipped = {n for n in names if n in _IGNORED or n.endswith(".pyc")}
        if Path(directory) == source:
            skipped |= {PATCH_DIR} & set(names)
        return skipped

    shutil.copytree(source, target, ignore=ignore, symlinks=True, dirs_exist_ok=True)


def write_schema_copies(root: Path) -> None:
    """Write the shipped JSON Schemas into ``oracle/schemas/`` (``bootstrap.schema_copies``):
    the sample's YAML files name them in their ``# yaml-language-server`` line. Written here,
    not kept in the sample, so they are always the installed version's."""
    from relconsole.engine.oracle.bootstrap import schema_copies
    for relative, data in schema_copies("oracle").items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


# --- dates relative to today ----------------------------------------------------------

def rewrite_dates(root: Path, today: dt.date) -> None:
    """Splice the today-relative dates into the copied oracle files, keeping every other byte.

    Leases get ``expires`` per LEASE_EXPIRY_DAYS, freeze rows per FREEZE_EXPIRY_DAYS,
    and each quarantine candidate's ``drafted_at`` moves to DRAFTED_DAYS_AGO before
    ``today`` (its time of day kept). Raises BadInputError when a value is not found.
    """
    for relative, days in LEASE_EXPIRY_DAYS.items():
        _edit(root, relative, lambda text, rel=relative, d=days:
              splice_lease_expiry(text, rel, today + dt.timedelta(days=d)))
    for relation_id, days in FREEZE_EXPIRY_DAYS.items():
        _edit(root, FREEZES_FILE, lambda text, rid=relation_id, d=days:
              splice_freeze_expiry(text, FREEZES_FILE, rid, today + dt.timedelta(days=d)))
    drafted = today - dt.timedelta(days=DRAFTED_DAYS_AGO)
    for path in sorted((root / QUARANTINE_DIR).glob("*.yaml")):
        relative = path.relative_to(root).as_posix()
        _edit(root, relative, lambda text, rel=relative: splice_drafted_at(text, rel, drafted))


def _edit(root: Path, relative: str, change) -> None:
    """Apply ``change(text) -> text`` to one file, bytes in and out as UTF-8, newlines kept."""
    path = root / relative
    if not path.is_file():
        raise BadInputError(relative, "missing from the sample project")
    text = path.read_bytes().decode("utf-8")
    path.write_bytes(change(text).encode("utf-8"))


def _replace_once(pattern: str, text: str, value: str, source: str, what: str) -> str:
    """Replace group ``value`` of the single match of ``pattern`` (groups: before, value)."""
    matches = list(re.finditer(pattern, text, flags=re.MULTILINE))
    if len(matches) != 1:
        raise BadInputError(source, f"expected exactly one {what}, found {len(matches)}")
    match = matches[0]
    return text[:match.start("value")] + value + text[match.end("value"):]


def splice_lease_expiry(text: str, source: str, expires: dt.date) -> str:
    """Set the top-level ``expires:`` date of a lease manifest (unquoted, as §4 writes it)."""
    pattern = rf"^expires:[ \t]*(?P<value>{_DATE})[ \t]*(?:#.*)?$"
    return _replace_once(pattern, text, expires.isoformat(), source, "top-level 'expires: YYYY-MM-DD' line")


def splice_freeze_expiry(text: str, source: str, relation_id: str, expires: dt.date) -> str:
    """Set ``expires`` of the one freeze row for ``relation_id`` in the JSON text.

    Rows are flat JSON objects, so a row is the text between its braces.
    """
    needle = re.compile(r'"relation_id"\s*:\s*"' + re.escape(relation_id) + '"')
    rows = [m for m in re.finditer(r"\{[^{}]*\}", text) if needle.search(m.group(0))]
    if len(rows) != 1:
        raise BadInputError(source, f"expected one freeze row for {relation_id!r}, found {len(rows)}")
    row = rows[0]
    edited = _replace_once(rf'"expires"\s*:\s*"(?P<value>{_DATE})"', row.group(0), expires.isoformat(),
                           source, f"'expires' date in the {relation_id!r} row")
    return text[:row.start()] + edited + text[row.end():]


def splice_drafted_at(text: str, source: str, day: dt.date) -> str:
    """Set the date part of a candidate's ``drafted_at`` (quoted or not), keeping its time."""
    pattern = rf"""^drafted_at:[ \t]*["']?(?P<value>{_DATE})"""
    return _replace_once(pattern, text, day.isoformat(), source, "'drafted_at' line")


# --- history --------------------------------------------------------------------------

def git_env(who: tuple[str, str], when: str = "") -> dict[str, str]:
    """An environment for one git call: no inherited ``GIT_*`` variables (a hook's
    GIT_DIR or GIT_INDEX_FILE would redirect it), no user or system config (a global
    excludes file could drop sample files), a fixed author and committer, and the
    ISO 8601 ``when`` as both dates when given."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    name, email = who
    env.update({
        "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email,
        "GIT_COMMITTER_NAME": name, "GIT_COMMITTER_EMAIL": email,
    })
    if when:
        env.update({"GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when})
    return env


def run_git(root: Path, *args: str, who: tuple[str, str] = MAINTAINER, when: str = "") -> str:
    """Run ``git args`` in ``root`` and return stdout. Raises GitError with git's message."""
    cmd = ["git", "-c", "core.autocrlf=false", "-c", "commit.gpgsign=false", *args]
    try:
        done = subprocess.run(cmd, cwd=root, env=git_env(who, when), capture_output=True, text=True)
    except FileNotFoundError:
        raise GitError("git is not installed or not on PATH") from None
    if done.returncode != 0:
        detail = (done.stderr or done.stdout).strip()
        raise GitError(f"git {' '.join(args)} failed in {root}: {detail}")
    return done.stdout


def _stamp(day: dt.date, minutes: int) -> str:
    """A fixed commit timestamp: ``minutes`` after 09:00 UTC on ``day``."""
    moment = dt.datetime.combine(day, dt.time(9, 0), dt.timezone.utc) + dt.timedelta(minutes=minutes)
    return moment.isoformat()


def build_history(root: Path, patch_dir: Path, today: dt.date) -> None:
    """Commit the copied tree as ``main``, then replay the agent's commits on ``agent/patch``.

    Leaves ``agent/patch`` checked out. Raises GitError when the work tree is not clean
    at the end, BadInputError for a malformed patch directory.
    """
    run_git(root, "init", "-q", "-b", BASE_BRANCH)
    run_git(root, "config", "user.name", MAINTAINER[0])
    run_git(root, "config", "user.email", MAINTAINER[1])
    base_day = today - dt.timedelta(days=BASE_COMMIT_DAYS_AGO)
    commit_all(root, BASE_MESSAGE, MAINTAINER, _stamp(base_day, 0))
    run_git(root, "checkout", "-q", "-b", AGENT_BRANCH)
    agent_day = today - dt.timedelta(days=AGENT_COMMIT_DAYS_AGO)
    for index, commit_dir in enumerate(patch_commits(patch_dir)):
        apply_patch_commit(root, commit_dir, _stamp(agent_day, 60 + 11 * index))
    if run_git(root, "status", "--porcelain", "--untracked-files=all").strip():
        raise GitError(f"{root}: work tree not clean after building the demo history")


def patch_commits(patch_dir: Path) -> list[Path]:
    """The ``NN-name`` commit directories of the agent patch, in order ([] if there is none)."""
    if not patch_dir.is_dir():
        return []
    return sorted(p for p in patch_dir.iterdir() if p.is_dir() and _PATCH_NAME.match(p.name))


def apply_patch_commit(root: Path, commit_dir: Path, when: str) -> None:
    """Write ``files/``, remove the paths in ``deleted.txt`` and commit as the agent.

    Raises BadInputError for a missing ``message.txt`` or a deleted path that does not
    exist, GitError when the commit would be empty.
    """
    message = commit_dir / "message.txt"
    if not message.is_file():
        raise BadInputError(commit_dir / "message.txt", "missing: every patch commit needs a message")
    files = commit_dir / "files"
    if files.is_dir():
        shutil.copytree(files, root, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
                        symlinks=True, dirs_exist_ok=True)
    for relative in deleted_paths(commit_dir):
        path = root / relative
        if not path.is_file():
            raise BadInputError(commit_dir / "deleted.txt", f"{relative}: no such file to delete")
        path.unlink()
    commit_all(root, None, AGENT, when, message_file=message.resolve())


def deleted_paths(commit_dir: Path) -> list[str]:
    """Repository paths listed in ``deleted.txt`` (one a line; blank and ``#`` lines skipped)."""
    listing = commit_dir / "deleted.txt"
    if not listing.is_file():
        return []
    lines = (line.strip() for line in listing.read_text(encoding="utf-8").splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def commit_all(root: Path, message: str | None, who: tuple[str, str], when: str,
               message_file: Path | None = None) -> None:
    """Stage every change in the work tree and commit it with a fixed identity and date."""
    run_git(root, "add", "-A")
    source = ["-F", str(message_file)] if message_file else ["-m", message or ""]
    run_git(root, "commit", "-q", "--no-verify", *source, who=who, when=when)
