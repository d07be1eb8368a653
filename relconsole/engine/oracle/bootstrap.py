"""``relconsole init``: the first commit of an oracle in an existing repository (SPEC §9 ``oracle: init``).

It writes, in one commit on the base branch (a temporary index: the user's work is left
alone): the catalog with an owners map read from the repository's layout (tests, docs and
prose exempt; each package listed as a commented-out gap to fill), one lease per corpus
(a copy of the committed corpus in the protected tree, ``oracle/data/``, pinned by the sha256 of
its blob, the git identity as owner, expiring after the policy's maximum), empty freezes and pins, and, with ``--subject``, one drafted candidate per subject
in quarantine, drafted from the function's signature read as text (the code is never run):
a roundtrip where the module pairs the function with an inverse (``dumps``/``loads``,
``encode``/``decode`` ...), a permutation for a function of one argument. Candidates are
drafted and validated, never accepted: a person accepts them (§10).
"""

from __future__ import annotations

import ast
import datetime as dt
import hashlib
import json
import posixpath
import re
import tomllib
from dataclasses import dataclass
from pathlib import PurePosixPath

import yaml

from relconsole.engine.repo import gitio
from relconsole.engine.repo.treeview import TreeView
from relconsole.engine.repo.commitkinds import FileChange
from relconsole.engine.repo.commits import CommitResult, commit_changes
from relconsole.engine.repo.baseref import DEFAULT_BASE
from relconsole.engine.repo.config import Layout, layout_from_pyproject
from relconsole.engine.repo.owners import protection
from relconsole.engine.errors import GitError, UsageError
from relconsole.engine.literal import counted, one_line
from relconsole.engine.docsref import doc_url, see
from relconsole.engine.oracle.leases import header_fields
from relconsole.engine.oracle.reexports import defined_function

# Non-code paths a repository grows later (its first CI workflow, a licence, a pre-commit
# configuration, a py.typed marker, packaging metadata): exempt whether or not they exist yet,
# else every honest commit adding one is a coverage gap. Files of the root are anchored there
# (/LICENSE*): a LICENSE.py deep in a package stays the package's (red team, issue 36).
ALWAYS_EXEMPT = (".github/**", "/LICENSE*", "/COPYING*", "/.pre-commit-config.yaml", "py.typed", "/pyproject.toml",
                 "/setup.cfg", "/MANIFEST.in", "/CHANGES*", "/CHANGELOG*", "*.md", ".gitignore", "/.editorconfig",
                 "/.readthedocs.yaml", "/.readthedocs.yml", "/CITATION.cff", "/.mailmap")
# Exempt when present: a pattern that also names code or data in some repositories (*.txt,
# setup.py, tests/) is written only for a repository that has such paths at init.
EXEMPT = ALWAYS_EXEMPT + ("tests/**", "test/**", "docs/**", "doc/**", "*.rst", "*.txt", "/setup.py", "/tox.ini",
                          "/noxfile.py", "/conftest.py", ".devcontainer/**", "/.coveragerc", "/.flake8")
INVERSES = {"dumps": "loads", "dump": "load", "encode": "decode", "serialize": "deserialize",
            "to_json": "from_json", "format": "parse", "render": "parse", "pack": "unpack",
            "compress": "decompress", "encrypt": "decrypt", "quote": "unquote", "escape": "unescape"}
DRAFTER = "relconsole init (from the signature, never run)"
SCHEMAS_DIR = "schemas"  # beside the catalog: copies of the shipped JSON Schemas, for editors


def schema_copies(oracle_dir: str) -> dict[str, bytes]:
    """Repository path -> bytes of a copy of each shipped JSON Schema (``relconsole.schemas``),
    in ``<oracle_dir>/schemas/``: what the ``# yaml-language-server`` lines point at, so an
    editor finds the schema offline, with no setting, at the version that wrote the oracle."""
    from relconsole import schemas
    folder = posixpath.join(oracle_dir, SCHEMAS_DIR)
    return {posixpath.join(folder, schemas.file_name(name)): schemas.text(name).encode("utf-8")
            for name in schemas.NAMES}


def modeline(path: str, name: str, oracle_dir: str) -> str:
    """The first line for the YAML file at repository path ``path`` that ``name``'s schema
    describes: ``# yaml-language-server: $schema=<relative path to the copy>`` and a newline
    (yaml-language-server resolves a relative path from the file's folder)."""
    from relconsole import schemas
    target = posixpath.join(oracle_dir, SCHEMAS_DIR, schemas.file_name(name))
    return f"# yaml-language-server: $schema={posixpath.relpath(target, posixpath.dirname(path) or '.')}\n"


@dataclass
class InitResult:
    """What ``init`` committed: the commit, and one line per thing written, for the user."""

    commit: CommitResult
    lines: list[str]


def init_oracle(repo_path, base_ref: str | None, today: dt.date, corpora: list[str],
                subjects: list[str]) -> InitResult:
    """Write the oracle's first commit on ``base_ref`` (default: the checked-out branch).

    ``corpora``: repository paths of committed corpora (CSV with a header, or JSON lines),
    one lease each; ``subjects``: ``module:function`` references to draft candidates for.
    Raises UsageError when the base already has an oracle, a corpus is not committed on
    the base, a subject is not found, or the base is not a local branch; CommitRefused
    when there is no git identity.
    """
    repo = gitio.open_repo(repo_path)
    branch = base_ref or gitio.current_branch(repo)
    if not branch:
        raise UsageError("HEAD is detached: name the branch the oracle goes on with --base")
    try:
        tip = gitio.resolve(repo, branch)
    except GitError:
        if not _has_commits(repo):  # "unknown ref 'main'" read as a typo (issue 17)
            raise GitError("this repository has no commits yet: commit the project first, then run "
                           "relconsole init") from None
        raise
    view = TreeView(repo, tip)
    layout = layout_from_pyproject(view.read_text("pyproject.toml"))
    if view.read_text(layout.catalog) is not None:
        raise UsageError(f"{branch} already has an oracle ({layout.catalog}): relconsole init writes the first one only")
    owner = _identity(repo)
    listing = gitio.run_git(repo.working_tree_dir, "ls-tree", "-r", "-z", "--name-only", tip).stdout
    files = {p.decode("utf-8", "surrogateescape") for p in listing.split(b"\0") if p}
    leases = [_lease(view, files, path, owner, today, layout) for path in corpora]
    drafted = [_candidate(view, files, ref, leases[0] if leases else None, today) for ref in subjects]
    drafts = [d for d in drafted if "skipped" not in d]
    for lease in leases:  # a drafted relation, once accepted, reads its lease: the lease allows it now
        lease["allowed_relations"] = [d["id"] for d in drafts if d["input"]["lease"] == lease["id"]]
    changes, lines = _oracle_files(layout, files, leases, drafts, branch)
    pyproject = view.read_text("pyproject.toml")
    setting = base_setting_change(pyproject, branch)
    if setting is not None:
        pyproject = setting.content.decode()
        lines.insert(-1, f"pyproject.toml: base_ref = {one_line(branch)} in [tool.relconsole], so no command needs "
                         f"--base {one_line(branch)}")
    missing = [path for path in version_files(pyproject) if path not in files and "generated" not in layout_keys(pyproject)]
    if missing:
        pyproject = generated_setting(pyproject, missing)
        setting = FileChange("pyproject.toml", pyproject.encode())
        lines.insert(-1, f"pyproject.toml: generated = {', '.join(map(one_line, missing))} in [tool.relconsole]: the "
                         "build writes it and git does not have it, so every tree relations run in gets a stub")
    if setting is not None:
        changes.append(setting)
    lines[-1:-1] = [d["skipped"] for d in drafted if "skipped" in d]
    message = f"the oracle of {one_line(PurePosixPath(repo.working_tree_dir).name)}"
    commit = commit_changes(repo, branch, "init", message, changes,
                            "Written by relconsole init: exempt paths, leases, empty freezes and pins"
                            + (", drafted candidates in quarantine (not accepted)." if drafts else "."),
                            layout=layout)
    return InitResult(commit, lines)


def base_setting_change(pyproject: str | None, branch: str) -> FileChange | None:
    """pyproject.toml with ``base_ref = BRANCH`` in ``[tool.relconsole]`` when ``branch`` is
    not what the commands find by themselves (``main``), else None; None too when it already
    says so. The text is edited in place (a line after the table's header, or the table
    appended), every other byte kept. Raises UsageError when the file sets another base_ref,
    or when the edited text would not parse (the table defined some other way: add the line
    by hand)."""
    current = _relconsole_table(pyproject)
    if current.get("base_ref") == branch or (branch == DEFAULT_BASE and "base_ref" not in current):
        return None
    if "base_ref" in current:
        raise UsageError(f"pyproject.toml: [tool.relconsole] base_ref = {one_line(current['base_ref'])!r}, not "
                         f"{one_line(branch)}: run init on that branch (--base), or change the setting first")
    line = f"base_ref = {json.dumps(branch)}  # the branch relconsole reviews against (relconsole init)\n"
    text = pyproject or ""
    header = re.search(r"^\[tool\.relconsole\][ \t]*(#[^\n]*)?(\n|$)", text, re.M)
    if header:
        edited = text[:header.end()] + ("" if header.group(2) else "\n") + line + text[header.end():]
    else:
        edited = text + ("\n" if text and not text.endswith("\n") else "") + ("\n" if text else "") + \
            "[tool.relconsole]\n" + line
    if _relconsole_table(edited).get("base_ref") != branch:
        raise UsageError(f"pyproject.toml: add base_ref = {json.dumps(branch)} to [tool.relconsole] by hand "
                         "(the table is not a plain [tool.relconsole] section here)")
    return FileChange("pyproject.toml", edited.encode())


VERSION_STUB = '__version__ = version = "0.0.0"\n__version_tuple__ = version_tuple = (0, 0, 0)\n'


def version_files(pyproject: str | None) -> list[str]:
    """Repository paths of the version module the build writes, as pyproject.toml declares it:
    setuptools_scm's ``version_file``/``write_to``, hatch-vcs's build hook ``version-file``
    (a new user's first wall on humanize, issue 37). [] when none is declared or the text
    does not parse."""
    try:
        tool = tomllib.loads(pyproject or "").get("tool", {})
    except tomllib.TOMLDecodeError:
        return []
    scm = tool.get("setuptools_scm") or {}
    hook = ((tool.get("hatch") or {}).get("build") or {}).get("hooks", {}).get("vcs") or {}
    found = [scm.get("version_file"), scm.get("write_to"), hook.get("version-file")]
    return list(dict.fromkeys(p.strip("/") for p in found if isinstance(p, str) and p.endswith(".py")))


def layout_keys(pyproject: str | None) -> set[str]:
    """The keys ``[tool.relconsole]`` sets already."""
    return set(_relconsole_table(pyproject))


def generated_setting(pyproject: str, paths: list[str]) -> str:
    """``pyproject`` with ``generated = { PATH = STUB, ... }`` in ``[tool.relconsole]`` (a line
    after its header, which the text has: ``base_setting_change`` or the caller put it there,
    or the table appended), every other byte kept."""
    entries = ", ".join(f"{json.dumps(path)} = {json.dumps(VERSION_STUB)}" for path in paths)
    line = f"generated = {{ {entries} }}  # the build writes them, git does not have them (relconsole init)\n"
    header = re.search(r"^\[tool\.relconsole\][ \t]*(#[^\n]*)?(\n|$)", pyproject, re.M)
    if header:
        edited = pyproject[:header.end()] + ("" if header.group(2) else "\n") + line + pyproject[header.end():]
    else:
        edited = pyproject + ("" if pyproject.endswith("\n") else "\n") + "\n[tool.relconsole]\n" + line
    if set(_relconsole_table(edited).get("generated") or {}) != set(paths):
        raise UsageError("pyproject.toml: add generated = { ... } to [tool.relconsole] by hand (the table is not a "
                         "plain [tool.relconsole] section here)")
    return edited


def _relconsole_table(text: str | None) -> dict:
    """``[tool.relconsole]`` of a pyproject.toml text ({} when absent). Raises UsageError
    naming pyproject.toml when the text does not parse."""
    try:
        table = tomllib.loads(text or "").get("tool", {}).get("relconsole", {})
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"pyproject.toml: {exc}") from None
    return table if isinstance(table, dict) else {}


def _has_commits(repo) -> bool:
    """Whether any branch, tag or other ref of ``repo`` names a commit (a fresh ``git init`` has none)."""
    where = repo.working_tree_dir or repo.git_dir
    proc = gitio.run_git(where, "rev-list", "-n", "1", "--all", ok=None)
    return proc.returncode == 0 and bool(proc.stdout.strip())


def _identity(repo) -> str:
    """The email git would author a commit with (the lease owner)."""
    ident = gitio.author_ident(repo.working_tree_dir)
    if ident is None or not ident[1]:
        raise UsageError("no git identity: set user.name and user.email (the lease owner is you)")
    return ident[1]


def _lease(view, files: set[str], path: str, owner: str, today: dt.date, layout: Layout) -> dict:
    path = PurePosixPath(path).as_posix().removeprefix("./")
    if path not in files:
        raise UsageError(f"{path}: not a committed file on the base: commit the corpus first (a lease pins "
                         "the committed blob)")
    data = view.read_bytes(path)
    lease_id = re.sub(r"[^A-Za-z0-9_.-]", "_", PurePosixPath(path).name.split(".", 1)[0]) or "corpus"
    oracle = layout.catalog.split("/", 1)[0]
    pinned = path if path.startswith(oracle + "/") else f"{oracle}/data/{PurePosixPath(path).name}"
    return {"id": lease_id, "path": pinned, "sha256": hashlib.sha256(data).hexdigest(),
            "expires": (today + dt.timedelta(days=layout.renew_max_days)).isoformat(), "owner": owner,
            "allowed_relations": [], "columns": _columns(path, data), "from": path, "data": data}


def _columns(path: str, data: bytes) -> list[str]:
    """The corpus's field names: a CSV header, or the keys of a JSON-lines file's first row."""
    import gzip
    if path.endswith(".gz"):
        data = gzip.decompress(data)
    text = data.decode("utf-8", "replace")
    return header_fields(path, next((line for line in text.splitlines() if line.strip()), ""))


def _module_file(files: set[str], module: str) -> str | None:
    name = module.replace(".", "/")
    return next((p for root in ("src/", "") for p in (f"{root}{name}.py", f"{root}{name}/__init__.py")
                 if p in files), None)


def _candidate(view, files: set[str], ref: str, lease: dict | None, today: dt.date) -> dict:
    """One drafted candidate for ``module:function`` from its signature (parsed, never run)."""
    module, _, name = ref.partition(":")
    path = _module_file(files, module) if module and name else None
    if path is None:
        raise UsageError(f"{ref}: expected module:function naming a module of this repository")
    found = defined_function(files, view.read_text, module, name)  # also through pkg/__init__.py's imports
    if found is None:
        raise UsageError(f"{ref}: no function {name!r} defined in {path}, nor imported there from a module "
                         "of this repository")
    function = found[2]
    if lease is None:
        raise UsageError(f"{ref}: a drafted candidate reads a corpus: give one with --corpus")
    columns = ", ".join(lease["columns"][:6]) or "its rows"
    inverse = INVERSES.get(name) or next((k for k, v in INVERSES.items() if v == name), None)
    base = {"compare": "canon", "subject": ref, "input": {"lease": lease["id"]},
            "drafted_by": DRAFTER, "drafted_at": f"{today.isoformat()}T00:00:00Z",
            "source": f"relconsole init --subject {ref}", "owner": lease["owner"]}
    if name in INVERSES and defined_function(files, view.read_text, module, inverse):
        return {"id": f"{module}.{name}_roundtrip", "transform": "roundtrip", **base,
                "inverse": f"{module}:{inverse}",
                "must_not": f"assert a literal output of {name} in a test",
                "statement": f"{inverse}({name}(rows)) gives back every row of {lease['id']} ({columns}) exactly."}
    first = (function.args.posonlyargs + function.args.args)[:1]
    hint = ast.unparse(first[0].annotation) if first and first[0].annotation is not None else ""
    if hint and not re.search(r"\b(list|List|Sequence|Iterable|Collection|rows)\b", hint):
        return {"skipped": f"no candidate for {ref}: it takes {hint}, not rows of the corpus; draft one with "
                           "relconsole propose"}
    return {"id": f"{module}.{name}_order", "transform": "permute", **base, "params": {"shuffles": 4},
            "must_not": f"assert a literal output of {name} in a test",
            "statement": f"Shuffling the rows of {lease['id']} ({columns}) leaves the output of {name} unchanged."}


def _packages(files: set[str]) -> list[str]:
    """Top-level packages and modules, at the root or under src/ (tests, docs and setup files aside)."""
    found = set()
    exempt = protection([p for p in EXEMPT if "/" in p.strip("/")])
    for path in files:
        if exempt(path):
            continue
        parts = PurePosixPath(path).parts
        rest = parts[1:] if parts[0] == "src" else parts
        if len(rest) == 2 and rest[1] == "__init__.py":
            found.add("/".join(parts[:-1]) + "/**")
        elif len(rest) == 1 and rest[0].endswith(".py") and rest[0] not in ("setup.py", "conftest.py", "noxfile.py"):
            found.add(path)
    return sorted(found)


def _package_tests(files: set[str], packages: list[str]) -> list[str]:
    """``src/pkg/test/**`` for each test folder inside a package (hyperlink keeps its tests in
    ``src/hyperlink/test/``): exempt as the root's tests/ are, else every test-only patch runs
    the package's relations, or is a gap under a narrower owner line (new-user trial)."""
    folders = [p.removesuffix("**") for p in packages if p.endswith("/**")]
    found = set()
    for path in files:
        folder = next((pkg for pkg in folders if path.startswith(pkg)), None)
        parts = path[len(folder):].split("/")[:-1] if folder else []
        for depth, part in enumerate(parts):
            if part in ("test", "tests"):
                found.add(folder + "/".join(parts[:depth + 1]) + "/**")
                break
    return sorted(found)


def _others(files: set[str], layout: Layout, packages: list[str]) -> list[str]:
    """Top-level paths that are neither exempt, nor a package or module, nor the oracle (a
    lock file, a script folder, .gitattributes): listed so the reviewer decides, never silent."""
    covered = protection([*EXEMPT, *packages])
    oracle = layout.catalog.split("/", 1)[0]
    found = set()
    for path in files:
        if covered(path):
            continue
        top, _, rest = path.partition("/")
        if top in (oracle, "src"):
            continue
        found.add(f"{top}/**" if rest else top)
    return sorted(found)


def _oracle_files(layout: Layout, files: set[str], leases: list[dict], drafts: list[dict],
                  branch: str) -> tuple[list[FileChange], list[str]]:
    exempt = [p for p in EXEMPT if p in ALWAYS_EXEMPT or any(map(protection([p]), files))]
    owners = "".join(f'  "{p}": []\n' for p in exempt)
    packages = _packages(files)  # read once: the gap lines, the tests inside them, the others and the count
    gaps = "".join(f'  # "{p}": [ ]   # the relations that guard it; until then a coverage gap\n' for p in packages)
    # after the package lines, so that it still wins (the last match does) once one is uncommented
    gaps += "".join(f'  "{p}": []   # tests inside a package\n' for p in _package_tests(files, packages))
    others = _others(files, layout, packages)
    gaps += "".join(f'  # "{p}": [ ]   # not code relconsole knows: exempt it ([]) or name the relations that '
                    'guard it; until then a coverage gap\n' for p in others)
    oracle_dir = posixpath.dirname(layout.catalog)
    catalog = (modeline(layout.catalog, "catalog", oracle_dir) +
               f"# The oracle: relations a patch must keep ({doc_url('catalog')}), written by relconsole init.\n"
               "# Accept drafted candidates from oracle/quarantine/ (relconsole review), then name them below.\n"
               # with nothing exempt every entry is a comment, and a bare `owners:` would be null
               f"owners:{'' if owners else ' {}   # nothing exempt yet: delete the {} when you uncomment an entry'}\n"
               f"{owners}{gaps}relations: []\n")
    changes = [FileChange(layout.catalog, catalog.encode()), FileChange(layout.freezes, b"[]\n"),
               FileChange(layout.pins, b"{}\n")]
    changes += [FileChange(path, data) for path, data in schema_copies(oracle_dir).items()]
    lines = [f"{layout.catalog}: {counted(len(exempt), 'exempt pattern')}, "
             f"{counted(len(packages), 'package or module', 'packages and modules')} and "
             f"{counted(len(others), 'other top-level path')} left as {'a gap' if len(others) == 1 else 'gaps'} "
             "(commented out in owners)",
             f"{posixpath.join(oracle_dir, SCHEMAS_DIR)}/: the JSON Schemas an editor checks these files with "
             f"({see('layout', 'editors')})"]
    for lease in leases:
        manifest = {k: v for k, v in lease.items() if k not in ("columns", "from", "data")}
        path = f"{layout.leases_dir}/{lease['id']}.yaml"
        changes.append(FileChange(path, (modeline(path, "lease", oracle_dir)
                                         + yaml.safe_dump(manifest, sort_keys=False)).encode()))
        if lease["path"] != lease["from"]:  # a corpus the oracle owns: a copy in the protected tree
            changes.append(FileChange(lease["path"], lease["data"]))
        lines.append(f"{path}: lease on {lease['path']}" + (f" (a copy of {lease['from']})" if lease["path"] != lease["from"]
                                                             else "") + f", sha256 {lease['sha256'][:12]}, expires {lease['expires']}")
    for draft in drafts:
        path = f"{layout.quarantine_dir}/{draft['id']}.yaml"
        changes.append(FileChange(path, (modeline(path, "candidate", oracle_dir)
                                         + yaml.safe_dump(draft, sort_keys=False, allow_unicode=True)).encode()))
        lines.append(f"{path}: drafted {draft['transform']} candidate for {draft['subject']} (not accepted)")
    if not drafts:
        changes.append(FileChange(f"{layout.quarantine_dir}/.gitkeep", b""))
    step = ("relconsole review: confirm (o) and accept (a) the drafted candidates" if drafts else
            "relconsole propose --drafter CMD to draft relations (no corpus? commit seeds first: "
            + see("catalog", "seeds") + ")")
    lines.append(f"committed on {branch} as one oracle: init commit; next: {step}")
    return changes, lines
