"""Ecosystem check: replay a pinned range of real upstream commits of public libraries as PRs
through ``relconsole gate`` (like ruff's ecosystem check), then plant one-line mutants.

For each library spec (``bench/ecosystem/<library>/spec.json``, or ``--spec FILE``):

* every first-parent commit C (parent P) of the pinned range, oldest first, becomes a throwaway
  repository: ``main`` is P's tree (one commit, no upstream history) plus our oracle files in a
  separate ``catalog:`` commit; branch ``patch`` is main plus ``git diff P C`` applied with
  ``git apply --index --3way`` (C's message and author). A commit whose diff touches only submodules
  or does not apply is skipped and said so;
* ``relconsole gate --base main --runs 2 --artifacts DIR --json --no-history`` runs in it with
  ``RELCONSOLE_TODAY`` fixed, and its ``decision.json`` is read;
* each planted mutant (path, old line, new line) is a PR on top of the range's last commit.

It prints one row per PR and the totals; it asserts nothing (exit 0 unless the bench itself
fails). The upstream repositories are read with plain git and copied at run time into a
temporary folder: none of their code is ever part of this repository.

    python -m bench.ecosystem --library all [--commits N] [--jobs J] [--json FILE] [--keep DIR]
    python -m bench.ecosystem --spec FILE          # a spec of your own (the smoke test's)

A spec (JSON) names ``upstream`` (a git directory), ``end`` (a pinned sha) with ``count``
(the last ``count`` first-parent commits ending there) or ``start``..``end``, ``oracle`` (the
folder copied to ``oracle/``; default the spec's own folder), optionally ``pyproject`` (text
appended to the base's ``pyproject.toml`` in the oracle commit, e.g. ``[tool.relconsole]
generated``) and ``mutants`` (a list of ``{path, old, new}``: ``old`` is one line's text, whole).
Relative paths are read from the spec file's folder.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from bench.gitrepo import init_repo

ROOT = Path(__file__).resolve().parents[1]
ECOSYSTEM = ROOT / "bench" / "ecosystem"
LIBRARIES = ("tomlkit", "humanize")
TODAY = "2026-11-30"  # leases and freezes are judged on this day, whatever the date of the run
FIXED_DATE = "2026-11-01T12:00:00+00:00"  # every commit the bench writes
BENCH_IDENTITY = ("ecosystem-bench", "bench@example.invalid")
RELATION_FAULTS = ("property_fail", "freeze_fail", "not_comparable", "miss_not_on_base", "oracle_fault",
                   "intermittent_on_base", "vacuous_output", "environment")
SKIP_FILES = {"spec.json"}


@dataclass
class Spec:
    name: str
    upstream: Path
    end: str
    oracle: Path
    count: int | None = None
    start: str | None = None
    pyproject: str = ""
    mutants: list[dict] = field(default_factory=list)


@dataclass
class Job:
    library: str
    kind: str  # "pr" or "mutant"
    label: str  # short sha, or mutant index
    subject: str
    parent: str
    commit: str | None  # the upstream commit applied on the patch branch (a PR)
    mutant: dict | None = None  # {path, old, new} (a mutant)


def load_spec(path: Path) -> Spec:
    data = json.loads(path.read_text())
    here = path.parent

    def resolve(value: str) -> Path:
        p = Path(os.path.expanduser(value))
        return p if p.is_absolute() else (here / p).resolve()

    return Spec(name=data.get("name", path.parent.name), upstream=resolve(data["upstream"]), end=data["end"],
                oracle=resolve(data.get("oracle", ".")), count=data.get("count"), start=data.get("start"),
                pyproject=data.get("pyproject", ""), mutants=list(data.get("mutants", [])))


def up(spec: Spec, *args: str) -> str:
    """git on the upstream git directory (read only)."""
    proc = subprocess.run(["git", f"--git-dir={spec.upstream}", *args], capture_output=True, text=True,
                          check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} on {spec.upstream}: {proc.stderr.strip()}")
    return proc.stdout


def pinned_range(spec: Spec, commits: int | None) -> list[tuple[str, str]]:
    """(parent, commit) pairs of the pinned first-parent range, oldest first; with ``commits``
    only the newest that many (the range's last commit stays the same)."""
    end = up(spec, "rev-parse", "--verify", spec.end + "^{commit}").strip()
    if spec.start:
        start = up(spec, "rev-parse", "--verify", spec.start + "^{commit}").strip()
        shas = up(spec, "rev-list", "--first-parent", "--reverse", f"{start}^..{end}").split()
    else:
        shas = up(spec, "rev-list", "--first-parent", f"--max-count={spec.count or 30}", end).split()[::-1]
    if commits is not None:
        shas = shas[-commits:]
    pairs = []
    for sha in shas:
        parent = up(spec, "rev-parse", f"{sha}^1").strip()
        pairs.append((parent, sha))
    return pairs


def subject_of(spec: Spec, sha: str) -> str:
    return up(spec, "log", "-1", "--format=%s", sha).strip()


# --- the throwaway repository ----------------------------------------------------------------

def _env(extra: dict | None = None) -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GIT_", "PYTEST_", "RELCONSOLE_", "COV_"))}
    env.update(GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1",
               GIT_AUTHOR_DATE=FIXED_DATE, GIT_COMMITTER_DATE=FIXED_DATE)
    env.update(extra or {})
    return env


def _git(repo: Path, *args: str, input: str | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, input=input,
                          env=_env(env), check=False)


def _must(proc: subprocess.CompletedProcess, what: str) -> str:
    if proc.returncode != 0:
        raise RuntimeError(f"{what}: {proc.stderr.strip() or proc.stdout.strip()}")
    return proc.stdout


def _commit(repo: Path, message: str, author: tuple[str, str] | None = None) -> None:
    extra = {"GIT_AUTHOR_NAME": author[0], "GIT_AUTHOR_EMAIL": author[1]} if author else None
    _must(_git(repo, "commit", "-q", "--no-verify", "--allow-empty", "-m", message, env=extra), "commit")


def gitlinks(spec: Spec, sha: str) -> list[str]:
    """Submodule paths of a commit's tree (never copied: their code is another repository's)."""
    out = up(spec, "ls-tree", "-r", "--full-tree", sha)
    return [line.split("\t", 1)[1] for line in out.splitlines() if line.startswith("160000 ")]


def copy_oracle(spec: Spec, repo: Path) -> None:
    """Our oracle files for the library into ``repo/oracle`` (plus a package marker)."""
    target = repo / "oracle"
    for path in sorted(spec.oracle.rglob("*")):
        rel = path.relative_to(spec.oracle)
        if path.is_dir() or rel.name in SKIP_FILES or "__pycache__" in rel.parts or rel.suffix == ".pyc":
            continue
        dest = target / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, dest)
    init = target / "__init__.py"
    if not init.exists():
        init.write_text("")


def write_pyproject(spec: Spec, repo: Path, upstream_text: str) -> None:
    """``pyproject.toml`` = the upstream text with the spec's block (``[tool.relconsole]``) appended."""
    text = upstream_text.rstrip("\n") + "\n\n" if upstream_text.strip() else ""
    (repo / "pyproject.toml").write_text(text + spec.pyproject.strip("\n") + "\n")


def build_base(spec: Spec, repo: Path, parent: str) -> None:
    """``repo`` with ``main`` = the upstream tree of ``parent`` (one commit, objects borrowed
    from the upstream git directory for now) + the oracle commit."""
    repo.mkdir(parents=True)
    init_repo(repo, BENCH_IDENTITY)
    _must(_git(repo, "config", "commit.gpgsign", "false"), "config")
    alternates = repo / ".git" / "objects" / "info" / "alternates"
    alternates.parent.mkdir(parents=True, exist_ok=True)
    alternates.write_text(str(spec.upstream / "objects") + "\n")
    _must(_git(repo, "read-tree", parent), "read-tree")
    links = gitlinks(spec, parent)
    if links:
        _must(_git(repo, "rm", "-q", "--cached", "--", *links), "rm gitlinks")
    _must(_git(repo, "checkout-index", "-a", "-f"), "checkout-index")
    _commit(repo, f"upstream {parent[:10]}: {subject_of(spec, parent)}")
    copy_oracle(spec, repo)
    if spec.pyproject:
        pyproject = repo / "pyproject.toml"
        write_pyproject(spec, repo, pyproject.read_text() if pyproject.exists() else "")
    _must(_git(repo, "add", "-A", "--", "oracle", *(["pyproject.toml"] if spec.pyproject else [])), "add oracle")
    _commit(repo, f"catalog: the {spec.name} ecosystem oracle (bench/ecosystem)")
    _must(_git(repo, "checkout", "-q", "-b", "patch"), "checkout patch")


def apply_commit(spec: Spec, repo: Path, parent: str, commit: str) -> str | None:
    """Commit ``git diff parent commit`` on ``patch``; the reason it was skipped, or None."""
    excluded = sorted(set(gitlinks(spec, parent)) | set(gitlinks(spec, commit)))
    # with a pyproject block of ours, C's pyproject.toml is taken whole and our block appended
    # again (a reformatting of the file's tail, as pyproject-fmt does, cannot conflict with it)
    own_pyproject = bool(spec.pyproject) and bool(up(spec, "diff", "--name-only", parent, commit, "--",
                                                        "pyproject.toml").strip())
    if own_pyproject:
        excluded.append("pyproject.toml")
    pathspec = ["--", "."] + [f":(exclude){p}" for p in excluded]
    names = up(spec, "diff", "--name-only", parent, commit, *pathspec).split()
    if own_pyproject:
        names.append("pyproject.toml")
    if not names:
        touched = up(spec, "diff", "--name-only", parent, commit).split()
        return f"touches only submodules ({', '.join(touched) or 'nothing'})"
    diff = subprocess.run(["git", f"--git-dir={spec.upstream}", "diff", "--binary", "--full-index", parent,
                           commit, *pathspec], capture_output=True, check=True).stdout
    # --3way: a hunk whose context our oracle commit moved (pyproject.toml) still applies
    proc = subprocess.run(["git", "apply", "--index", "--3way", "--whitespace=nowarn"], cwd=repo, input=diff,
                          capture_output=True, env=_env(), check=False)
    if proc.returncode != 0:
        said = proc.stderr.decode(errors="replace").strip().splitlines()
        return "does not apply: " + next((line for line in said if line.startswith("error")), said[-1] if said else "")
    if own_pyproject:
        write_pyproject(spec, repo, up(spec, "show", f"{commit}:pyproject.toml"))
        _must(_git(repo, "add", "--", "pyproject.toml"), "add pyproject.toml")
    message = up(spec, "log", "-1", "--format=%B", commit).strip() or "(no message)"
    author = tuple(up(spec, "log", "-1", "--format=%an%x00%ae", commit).strip().split("\x00"))
    _commit(repo, message, author)  # type: ignore[arg-type]
    return None


def apply_mutant(repo: Path, mutant: dict) -> str | None:
    """Replace the one line ``old`` of ``path`` by ``new`` and commit it on ``patch``."""
    target = repo / mutant["path"]
    if not target.is_file():
        return f"no file {mutant['path']}"
    lines = target.read_text().splitlines(keepends=True)
    hits = [n for n, line in enumerate(lines) if line.rstrip("\r\n") == mutant["old"]]
    if len(hits) != 1:
        return f"the line occurs {len(hits)} times in {mutant['path']}"
    ending = lines[hits[0]][len(mutant["old"]):]
    lines[hits[0]] = mutant["new"] + ending
    target.write_text("".join(lines))
    _must(_git(repo, "add", "--", mutant["path"]), "add mutant")
    _commit(repo, f"fix: {mutant.get('note') or mutant['path']}", ("mutant", "mutant@example.invalid"))
    return None


def self_contained(repo: Path) -> None:
    """Copy what the repository's refs reach out of the upstream and drop the alternates."""
    _must(_git(repo, "repack", "-a", "-d", "-q"), "repack")
    (repo / ".git" / "objects" / "info" / "alternates").unlink()


# --- running the gate ------------------------------------------------------------------------

def run_gate(repo: Path, artifacts: Path) -> dict:
    started = time.monotonic()
    env = _env({"RELCONSOLE_TODAY": TODAY, "PYTHONDONTWRITEBYTECODE": "1"})
    for key in ("GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_NOSYSTEM"):
        env.pop(key, None)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    proc = subprocess.run([sys.executable, "-m", "relconsole", "gate", "--base", "main", "--runs", "2",
                           "--artifacts", str(artifacts), "--json", "--no-history"], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=1800, check=False)
    seconds = time.monotonic() - started
    decision_file = artifacts / "decision.json"
    try:
        decided = json.loads(decision_file.read_text())
    except (OSError, ValueError):
        decided = {"decision": "abort", "reason": "bench: no decision.json",
                   "detail": (proc.stderr or proc.stdout)[-2000:]}
    return {"exit_code": proc.returncode, "seconds": round(seconds, 1), "decision": decided,
            "stderr_tail": proc.stderr[-1500:] if proc.returncode not in (0, 1, 2, 3, 4) else ""}


def summarise(decided: dict) -> dict:
    flags = [{"name": f.get("name"), "path": f.get("path"), "line": f.get("line"), "detail": f.get("detail"),
              "acknowledged": bool(f.get("acknowledged")), "commit": f.get("commit"),
              "level": f.get("level", "block"), **({"kind": f["kind"]} if f.get("kind") else {})}
             for f in decided.get("flags") or []]
    relations = []
    for rel in decided.get("relations") or []:
        relations.append({key: rel.get(key) for key in
                          ("relation_id", "decision", "reason", "detail", "summary", "row") if key in rel})
    return {"decision": decided.get("decision"), "reason": decided.get("reason"),
            "detail": decided.get("detail"), "flags": flags, "gaps": decided.get("gaps") or [],
            "unexercised": decided.get("unexercised") or [], "relations": relations,
            "split": decided.get("split") or decided.get("split_offences") or []}


def run_job(spec: Spec, job: Job, workdir: Path, keep: Path | None) -> dict:
    name = f"{job.library}-{job.kind}-{job.label}"
    repo = (keep or workdir) / name
    if repo.exists():
        shutil.rmtree(repo)
    artifacts = workdir / (name + ".artifacts")
    row = {"library": job.library, "kind": job.kind, "label": job.label, "subject": job.subject,
           "parent": job.parent, "commit": job.commit, "mutant": job.mutant}
    try:
        build_base(spec, repo, job.parent)
        if job.kind == "pr":
            skipped = apply_commit(spec, repo, job.parent, job.commit or "")
        else:
            skipped = apply_mutant(repo, job.mutant or {})
        self_contained(repo)
    except Exception as exc:  # noqa: BLE001 - the bench reports a PR it could not build and goes on
        row.update(skipped=f"bench could not build it: {exc}")
        return row
    if skipped:
        row.update(skipped=skipped)
        return row
    gated = run_gate(repo, artifacts)
    row.update(exit_code=gated["exit_code"], seconds=gated["seconds"], **summarise(gated["decision"]))
    if gated["stderr_tail"]:
        row["stderr_tail"] = gated["stderr_tail"]
    if keep is None:
        shutil.rmtree(repo, ignore_errors=True)
    shutil.rmtree(artifacts, ignore_errors=True)
    return row


# --- reading a result ------------------------------------------------------------------------

def relation_failures(row: dict) -> list[dict]:
    """Relations that did not pass on this PR (reject, abort or hold of a relation)."""
    return [r for r in row.get("relations", []) if r.get("decision") not in ("pass", "freeze", None)]


def open_flags(row: dict) -> list[dict]:
    """Flags a reviewer must act on: block-level and not acknowledged (a warn-level flag is
    shown and leaves the decision alone)."""
    return [f for f in row.get("flags", []) if not f["acknowledged"] and f.get("level", "block") != "warn"]


def caught_by_relation(row: dict) -> bool:
    return row.get("decision") == "reject" and any(
        r.get("decision") == "reject" for r in relation_failures(row))


def base_held(rel: dict) -> bool | None:
    """Whether the relation held on the merge base, as the row that fired says."""
    reason = rel.get("reason")
    if reason in ("property_fail", "freeze_fail", "not_comparable", "miss_not_on_base"):
        return True
    if reason in ("oracle_fault", "intermittent_on_base"):
        return False
    return None


def unexercised_files(row: dict) -> list[str]:
    return [f"{u.get('path')}:{_lines(u.get('lines'))}" for u in row.get("unexercised", [])]


def _lines(lines) -> str:
    if isinstance(lines, list):
        parts = []
        for item in lines[:6]:
            parts.append(f"{item[0]}-{item[1]}" if isinstance(item, list) and item[0] != item[1]
                         else str(item[0] if isinstance(item, list) else item))
        return ",".join(parts) + ("…" if len(lines) > 6 else "")
    return str(lines)


def gap_paths(row: dict) -> list[str]:
    out = []
    for gap in row.get("gaps", []):
        out.append(gap.get("path", str(gap)) if isinstance(gap, dict) else str(gap))
    return out


def classify(row: dict) -> str:
    """clean | gap_only | flagged | false_miss | other | skipped (honest PRs)."""
    if row.get("skipped"):
        return "skipped"
    if any(r.get("decision") in ("reject", "abort") for r in relation_failures(row)):
        return "false_miss"
    if open_flags(row):
        return "flagged"
    if row.get("decision") == "pass" and row.get("exit_code") == 0:
        return "clean"
    if row.get("exit_code") == 2 and (row.get("gaps") or row.get("unexercised")):
        return "gap_only"
    return "other"


# --- printing --------------------------------------------------------------------------------

def cut(text: str, width: int) -> str:
    text = str(text).replace("\r", "\\r").replace("\n", "\\n").replace("\t", "\\t")
    return text if len(text) <= width else text[:width - 1] + "…"


def print_row(row: dict) -> None:
    head = f"{row['library']:<8} {row['label']:<10} {cut(row['subject'], 44):<44}"
    if row.get("skipped"):
        print(f"{head} SKIPPED  {cut(row['skipped'], 100)}", flush=True)
        return
    print(f"{head} {row['decision'] or '?':<7} exit {row['exit_code']}  {row.get('seconds', 0):>5.0f}s"
          + (f"  reason={row['reason']}" if row.get("reason") not in (None, "pass", "all_pass") else ""), flush=True)
    for flag in row.get("flags", []):
        ack = " (acknowledged)" if flag["acknowledged"] else ""
        level = f" [{flag['level']}]" if flag.get("level", "block") != "block" else ""
        print(f"{'':20}flag {flag['name']}@{flag['path']}:{flag['line']}{level}{ack}  "
              f"{cut(flag.get('detail') or '', 110)}")
    for rel in relation_failures(row):
        print(f"{'':20}relation {rel.get('relation_id')}: {rel.get('decision')} {rel.get('reason')}  "
              f"{cut(rel.get('summary') or rel.get('detail') or '', 140)}")
    if row.get("gaps"):
        print(f"{'':20}gaps: {', '.join(gap_paths(row))}")
    if row.get("unexercised"):
        print(f"{'':20}unexercised: {'; '.join(unexercised_files(row))}")
    if row.get("split"):
        print(f"{'':20}split: {cut(json.dumps(row['split']), 140)}")
    if row.get("stderr_tail"):
        print(f"{'':20}stderr: {cut(row['stderr_tail'], 200)}")
    if row["kind"] == "mutant":
        caught = caught_by_relation(row)
        rels = [r for r in relation_failures(row) if r.get("decision") == "reject"]
        held = [base_held(r) for r in rels]
        print(f"{'':20}mutant {row['mutant']['path']}: {cut(row['mutant']['old'], 50)!r} -> "
              f"{cut(row['mutant']['new'], 50)!r}: {'CAUGHT by ' + ', '.join(r['relation_id'] for r in rels) if caught else 'NOT caught by a relation'}"
              + (f" (base held: {held})" if rels else ""))


def totals(rows: list[dict]) -> dict:
    prs = [r for r in rows if r["kind"] == "pr"]
    judged = [r for r in prs if not r.get("skipped")]
    kinds: dict[str, int] = {}
    for row in judged:
        for flag in row.get("flags", []):
            kind = flag.get("kind") or flag["name"]
            kind += "" if flag.get("level", "block") == "block" else f" [{flag['level']}]"
            kinds[kind] = kinds.get(kind, 0) + 1
    classes = {name: [r for r in prs if classify(r) == name]
               for name in ("clean", "gap_only", "flagged", "false_miss", "other", "skipped")}
    mutants = [r for r in rows if r["kind"] == "mutant"]
    built = [r for r in mutants if not r.get("skipped")]
    return {
        "prs": len(prs), "judged": len(judged), "skipped": len(classes["skipped"]),
        "clean": len(classes["clean"]),
        "gap_only": [f"{r['library']} {r['label']}" for r in classes["gap_only"]],
        "flagged": [f"{r['library']} {r['label']}" for r in classes["flagged"]],
        "false_misses": [f"{r['library']} {r['label']}" for r in classes["false_miss"]],
        "other": [f"{r['library']} {r['label']} {r.get('decision')}/{r.get('reason')}" for r in classes["other"]],
        "flags_by_kind": dict(sorted(kinds.items())),
        "mutants": len(mutants), "mutants_built": len(built),
        "mutants_caught": sum(caught_by_relation(r) for r in built),
        "mutants_missed": [f"{r['library']} {r['label']}" for r in built if not caught_by_relation(r)],
        "mutants_not_built": [f"{r['library']} {r['label']}: {r['skipped']}" for r in mutants if r.get("skipped")],
    }


def print_totals(summary: dict) -> None:
    print()
    print(f"totals: {summary['prs']} PRs, {summary['judged']} judged, {summary['skipped']} skipped; "
          f"{summary['clean']} need no reviewer action; {len(summary['gap_only'])} gap/unexercised only; "
          f"{len(summary['flagged'])} flagged; {len(summary['false_misses'])} false misses; "
          f"mutants caught {summary['mutants_caught']}/{summary['mutants_built']}")
    print(f"  gap/unexercised only: {', '.join(summary['gap_only']) or '-'}")
    print(f"  flagged: {', '.join(summary['flagged']) or '-'}")
    print(f"  flags by kind: {', '.join(f'{k} {v}' for k, v in summary['flags_by_kind'].items()) or '-'}")
    print(f"  false misses: {', '.join(summary['false_misses']) or '-'}")
    if summary["other"]:
        print(f"  other: {', '.join(summary['other'])}")
    if summary["mutants_missed"]:
        print(f"  mutants not caught: {', '.join(summary['mutants_missed'])}")
    if summary["mutants_not_built"]:
        print(f"  mutants not built: {'; '.join(summary['mutants_not_built'])}")


# --- main ------------------------------------------------------------------------------------

def jobs_for(spec: Spec, commits: int | None, mutants: bool) -> list[Job]:
    pairs = pinned_range(spec, commits)
    jobs = [Job(spec.name, "pr", commit[:10], subject_of(spec, commit), parent, commit) for parent, commit in pairs]
    if mutants and pairs:
        last = pairs[-1][1]
        for n, mutant in enumerate(spec.mutants, 1):
            jobs.append(Job(spec.name, "mutant", f"m{n}", f"mutant: {mutant.get('note') or mutant['path']}",
                            last, None, mutant))
    return jobs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.ecosystem", description=__doc__.split("\n\n")[0])
    parser.add_argument("--library", choices=(*LIBRARIES, "all"), default="all")
    parser.add_argument("--spec", type=Path, action="append", help="a library spec (JSON) instead of --library")
    parser.add_argument("--commits", type=int, help="the newest N commits of the pinned range (default all)")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--no-mutants", action="store_true")
    parser.add_argument("--json", type=Path, dest="json_out", help="write every row and the totals here")
    parser.add_argument("--keep", type=Path, help="keep the throwaway repositories under this folder")
    args = parser.parse_args(argv)

    if args.spec:
        specs = [load_spec(path.resolve()) for path in args.spec]
    else:
        names = LIBRARIES if args.library == "all" else (args.library,)
        specs = [load_spec(ECOSYSTEM / name / "spec.json") for name in names]
    for spec in specs:
        if not (spec.upstream / "HEAD").exists() and not (spec.upstream / ".git").exists():
            print(f"{spec.name}: no upstream git directory at {spec.upstream}", file=sys.stderr)
            return 3
    keep = args.keep.resolve() if args.keep else None
    if keep:
        keep.mkdir(parents=True, exist_ok=True)
    by_name = {spec.name: spec for spec in specs}
    jobs = [job for spec in specs for job in jobs_for(spec, args.commits, not args.no_mutants)]
    started = time.monotonic()
    print(f"ecosystem check: {len(jobs)} PRs and mutants over {', '.join(by_name)}, {args.jobs} at a time "
          f"(RELCONSOLE_TODAY={TODAY})", flush=True)
    with tempfile.TemporaryDirectory(prefix="relconsole-ecosystem-") as scratch, \
            ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = [pool.submit(run_job, by_name[job.library], job, Path(scratch), keep) for job in jobs]
        rows = []
        for future in futures:  # in job order: the table reads oldest first
            row = future.result()
            print_row(row)
            rows.append(row)
    summary = totals(rows)
    summary["seconds"] = round(time.monotonic() - started, 1)
    print_totals(summary)
    print(f"  wall time {summary['seconds']:.0f} s")
    if args.json_out:
        args.json_out.write_text(json.dumps({"today": TODAY, "rows": rows, "totals": summary}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
