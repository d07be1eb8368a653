"""relconsole guards itself: the project's own relations (``oracle/catalog.yaml``).

On a copy of this tree (``relconsole/`` and ``oracle/``, no git needed) every relation holds,
run through the engine as ``relconsole run`` runs it (a worker process per run, importing
the copy's engine), and every relation catches at least one bug planted in the engine
function it is about. A planted bug is code appended to one engine module of the copy that
rebinds a public name (or a named helper) to a plausible wrong version; the real file is
never touched. The owner map leaves no tracked path of the repository a coverage gap.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

from relconsole.cli.main import main
from relconsole.engine.oracle.catalog import Catalog, check_row, load_catalog
from relconsole.engine.repo.config import Layout
from relconsole.engine.repo.touched import Touched
from relconsole.engine.repo.owners import GAP, bind
from relconsole.engine.relations.pool import evaluate_once
from relconsole.engine.relations.records import RunPlan, RunRecord
from relconsole.engine.relations.runner import run_all

ROOT = Path(__file__).resolve().parents[1]
CATALOG = "oracle/catalog.yaml"
LAYOUT = Layout()


@dataclass(frozen=True)
class Planted:
    """A bug for ``relation`` to catch: ``code`` appended to ``module`` (a repository path).

    ``needs`` are module-level names the code relies on (checked first, so a refactor that
    renames one fails here instead of planting nothing). ``raises``: the bug may be caught by
    an exception (the engine's own check refusing), not only by a disagreement.
    """

    id: str
    relation: str
    module: str
    code: str
    needs: tuple[str, ...] = ()
    raises: bool = False


def _code(text: str) -> str:
    return "\n\n# --- planted by tests/test_own_oracle.py ---\n" + textwrap.dedent(text)


BUGS = [
    Planted("bind-dedupes-across-paths", "owners.bind_order_free", "relconsole/engine/repo/owners.py", _code('''
        _planted_bind = bind
        def bind(owners, touched, protected_patterns=()):
            """A relation already listed for an earlier path is left off the later ones."""
            seen, out = set(), []
            for binding in _planted_bind(owners, touched, protected_patterns):
                out.append(binding._replace(relations=tuple(r for r in binding.relations if r not in seen)))
                seen.update(binding.relations)
            return out
        '''), ("bind",)),
    Planted("bind-memoises-by-file-name", "owners.bind_order_free", "relconsole/engine/repo/owners.py", _code('''
        _planted_bind = bind
        def bind(owners, touched, protected_patterns=()):
            """The binding of a file name is looked up once and reused for other directories."""
            memo, out = {}, []
            for item in touched:
                name = item.path.rsplit("/", 1)[-1]
                if name not in memo:
                    memo[name] = _planted_bind(owners, [item], protected_patterns)[0]
                hit = memo[name]
                out.append(Binding(item, hit.state, hit.pattern, hit.relations))
            return out
        '''), ("bind", "Binding")),
    Planted("bind-first-match-wins", "owners.last_match_wins", "relconsole/engine/repo/owners.py", _code('''
        _planted_bind = bind
        def bind(owners, touched, protected_patterns=()):
            """The first matching pattern wins (gitattributes order, not CODEOWNERS)."""
            return _planted_bind(list(reversed(owners)), touched, protected_patterns)
        '''), ("bind",)),
    Planted("canonical-sorts-bag-before-rounding", "canon.canonical_idempotent", "relconsole/engine/relations/canon.py", _code('''
        import json as _planted_json
        _planted_canonical = canonical
        def canonical(value, compare="canon", quantum=None, order_free=False):
            """A bag is sorted by its raw elements, then each element is canonicalised."""
            if order_free and isinstance(value, list):
                ordered = sorted(value, key=lambda v: _planted_json.dumps(v, sort_keys=True, default=repr))
                return [_planted_canonical(v, compare, quantum, order_free) for v in ordered]
            return _planted_canonical(value, compare, quantum, order_free)
        '''), ("canonical",)),
    Planted("canonical-names-keys-by-repr", "canon.canonical_idempotent", "relconsole/engine/relations/canon.py", _code('''
        _planted_canonical = canonical
        def canonical(value, compare="canon", quantum=None, order_free=False):
            """Every key is named by its repr, so that 1 and "1" stay apart."""
            if isinstance(value, dict):
                return {repr(k): canonical(v, compare, quantum, order_free)
                        for k, v in sorted(value.items(), key=lambda kv: repr(kv[0]))}
            return _planted_canonical(value, compare, quantum, order_free)
        '''), ("canonical",)),
    Planted("differences-ignores-right-only-keys", "canon.differences_symmetric", "relconsole/engine/relations/canon.py", _code('''
        _planted_differences = differences
        def differences(left, right, compare="canon", quantum=None, path=()):
            """Only the keys the left (source) output has are compared."""
            if isinstance(left, dict) and isinstance(right, dict):
                right = {k: v for k, v in right.items() if k in left}
            return _planted_differences(left, right, compare, quantum, path)
        '''), ("differences",)),
    Planted("differences-tolerance-without-abs", "canon.differences_symmetric", "relconsole/engine/relations/canon.py", _code('''
        _planted_differences = differences
        def differences(left, right, compare="canon", quantum=None, path=()):
            """Tolerance as left - right <= quantum (the abs() forgotten)."""
            numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (left, right))
            if compare == "tolerance" and quantum is not None and numbers and left != right:
                try:
                    if left - right <= quantum:
                        return []
                except OverflowError:
                    pass
            return _planted_differences(left, right, compare, quantum, path)
        '''), ("differences",)),
    Planted("loader-drops-clock", "catalog.write_load_roundtrip", "relconsole/engine/oracle/catalog.py", _code('''
        _planted_load_catalog = load_catalog
        def load_catalog(text, source):
            """A relation's clock is not read: every relation runs on the frozen clock."""
            loaded = _planted_load_catalog(text, source)
            for relation in loaded.relations.values():
                relation.clock = "frozen"
            return loaded
        '''), ("load_catalog",)),
    Planted("loader-keeps-six-digits-of-quantum", "catalog.write_load_roundtrip", "relconsole/engine/oracle/catalog.py", _code('''
        _planted_load_catalog = load_catalog
        def load_catalog(text, source):
            """quantum read through "%g" (six significant digits)."""
            loaded = _planted_load_catalog(text, source)
            for relation in loaded.relations.values():
                if relation.quantum is not None:
                    relation.quantum = float(f"{relation.quantum:g}")
            return loaded
        '''), ("load_catalog",)),
    Planted("writer-without-nel-escape", "catalog.write_load_roundtrip", "relconsole/engine/oracle/yamlload.py", _code('''
        _UNICODE_BREAKS = ()  # a raw NEL is written into a quoted scalar, which YAML 1.1 folds
        '''), ("_UNICODE_BREAKS", "dump_yaml"), raises=True),
    Planted("normalise-one-pass", "signatures.normalise_idempotent", "relconsole/engine/relations/signatures.py", _code('''
        normalise = _one_pass  # "one pass is enough"
        '''), ("normalise", "_one_pass")),
    Planted("failure-class-unsorted", "signatures.disagree_order_free", "relconsole/engine/relations/signatures.py", _code('''
        _planted_failure_class = failure_class
        def failure_class(error_type, differing, message=""):
            """The disagreeing keys joined in the order the relation reported them."""
            if error_type:
                return _planted_failure_class(error_type, differing, message)
            return "disagree " + ",".join(normalise(d) for d in differing)
        '''), ("failure_class", "normalise")),
    Planted("one-line-escapes-backslashes", "literal.one_line_idempotent", "relconsole/engine/literal.py", _code('''
        _planted_one_line = one_line
        def one_line(text):
            """Backslashes doubled first, so that an escape is never ambiguous."""
            return _planted_one_line(str(text).replace("\\\\", "\\\\\\\\"))
        '''), ("one_line",)),
    Planted("missing-fields-in-sheet-order", "decision.key_order_free", "relconsole/engine/decision.py", _code('''
        _planted_missing_fields = missing_fields
        def missing_fields(sheet):
            """The missing or malformed fields listed in the order the sheet has them."""
            found = _planted_missing_fields(sheet)
            if not isinstance(sheet, dict):
                return found
            keys = list(sheet)
            def place(entry):
                name = entry.split(" ", 1)[0].split(".", 1)[0]
                return keys.index(name) if name in keys else len(keys)
            return sorted(found, key=place)
        '''), ("missing_fields", "decide")),
    Planted("worst-is-first-non-pass", "decision.worst_order_free", "relconsole/engine/decision.py", _code('''
        _planted_worst = worst
        def worst(decisions):
            """The first decision that is not a pass stands for the PR."""
            for decision in decisions:
                if decision.decision != "pass":
                    return decision
            return _planted_worst(decisions)
        '''), ("worst",)),
    Planted("scan-keys-nodes-by-position", "pyscan.layout_free", "relconsole/engine/gate/flags/pyscan.py", _code('''
        def _added(before, after, collect):
            """An assertion counts as added when no node of its shape sat on the same line before."""
            seen = set()
            if before is not None:
                for name, scope in _scopes(before):
                    seen |= {(name, ast.dump(n), n.lineno) for n, _ in collect(name, scope, before)}
            found = [(name, node, detail) for name, scope in _scopes(after)
                     for node, detail in collect(name, scope, after)
                     if (name, ast.dump(node), node.lineno) not in seen]
            return sorted(found, key=lambda item: (item[1].lineno, item[1].col_offset))
        '''), ("_added", "_scopes")),
    Planted("golden-keyed-by-line", "pyscan.layout_free", "relconsole/engine/gate/flags/pyscan.py", _code('''
        def new_golden(before, after):
            """A golden assertion counts as new unless one of its shape sat on the same line before."""
            seen = {(g.key, g.line) for g in before}
            return [g for g in after if (g.key, g.line) not in seen]
        '''), ("new_golden",)),
]


# --- the tree and the plans ----------------------------------------------------------------

def _catalog() -> Catalog:
    return load_catalog((ROOT / CATALOG).read_text(encoding="utf-8"), CATALOG)


def copy_tree(dest: Path) -> Path:
    """``relconsole/`` and ``oracle/`` of this checkout (its working files) under ``dest``."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in ("relconsole", "oracle"):
        shutil.copytree(ROOT / name, dest / name, ignore=ignore)
    return dest


def plan(relation_id: str, tree: Path) -> RunPlan:
    """The RunPlan ``relconsole run`` makes for a seeds relation on ``tree``."""
    relation = _catalog().get(relation_id)
    seeds = tree / relation.seeds_path
    clock = {"real": None, "frozen": LAYOUT.frozen_clock}.get(relation.clock, relation.clock)
    return RunPlan(relation, tree, [str(tree)], "seeds", seeds,
                   hashlib.sha256(seeds.read_bytes()).hexdigest(), 60.0, clock, LAYOUT.protected)


def run_once(relation_id: str, tree: Path) -> RunRecord:
    relation = _catalog().get(relation_id)
    return evaluate_once(plan(relation_id, tree), int(relation.params.get("seed", 0)))


def plant(tree: Path, bug: Planted) -> None:
    file = tree / bug.module
    source = file.read_text(encoding="utf-8")
    for name in bug.needs:
        defined = rf"^(?:def {name}\(|class {name}\b|{name}\s*[:=]|from \S+ import .*\b{name}\b)"
        assert re.search(defined, source, re.MULTILINE), (
            f"{bug.id}: {bug.module} no longer defines {name}; update the planted bug")
    file.write_text(source + bug.code, encoding="utf-8")


# --- the catalog and its owner map ----------------------------------------------------------

def test_catalog_loads_and_its_seeds_are_valid():
    catalog = _catalog()
    assert catalog.relations, "the own catalog defines no relation"
    for relation in catalog.relations.values():
        assert relation.seeds_path, f"{relation.id}: the own relations read hand-written seeds"
        lines = [line for line in (ROOT / relation.seeds_path).read_text(encoding="utf-8").split("\n")
                 if line.strip()]
        assert lines, f"{relation.seeds_path} is empty"
        for number, line in enumerate(lines, 1):
            problems = check_row(json.loads(line), relation.input.get("schema"))
            assert not problems, f"{relation.seeds_path}:{number}: {problems}"


def test_every_relation_owns_a_path_and_has_a_planted_bug():
    catalog = _catalog()
    owned = {rid for _pattern, ids in catalog.owners for rid in ids}
    assert sorted(set(catalog.relations) - owned) == [], "relations no owner pattern runs"
    bitten = {bug.relation for bug in BUGS}
    assert sorted(set(catalog.relations) - bitten) == [], "relations with no planted bug to catch"
    assert bitten <= set(catalog.relations)


def _tracked(*extra: str) -> list[str]:
    """``git ls-files`` of this checkout (``extra``: more options); skips outside git."""
    proc = subprocess.run(["git", "ls-files", "-z", *extra], cwd=ROOT, capture_output=True, check=False)
    if proc.returncode != 0:
        pytest.skip("not a git checkout")
    return [p for p in proc.stdout.decode("utf-8").split("\0") if p]


def test_no_tracked_path_is_a_coverage_gap():
    catalog = _catalog()
    bindings = bind(catalog.owners, [Touched("M", p) for p in _tracked()], LAYOUT.protected)
    gaps = [b.path for b in bindings if b.state == GAP]
    assert gaps == [], (f"paths no pattern of {CATALOG} owns: {gaps[:10]}; place them "
                        "(a relation, or [] for exempt) in a `catalog:` commit")
    engine = {b.path: b.relations for b in bindings if b.path.startswith("relconsole/engine/")}
    assert engine["relconsole/engine/repo/owners.py"] and engine["relconsole/engine/relations/canon.py"]


# --- the relations hold, and bite ------------------------------------------------------------

def test_own_relations_hold_on_this_tree(tmp_path):
    tree = copy_tree(tmp_path / "tree")
    results = run_all([(plan(rid, tree), None) for rid in _catalog().relations])
    missed = {r.relation_id: r.summary for r in results if r.outcome != "held"}
    assert missed == {}
    assert len(results) == len(_catalog().relations)


@pytest.mark.parametrize("bug", BUGS, ids=lambda b: b.id)
def test_planted_bug_is_caught(tmp_path, bug: Planted):
    tree = copy_tree(tmp_path / "tree")
    plant(tree, bug)
    record = run_once(bug.relation, tree)
    assert not record.held, f"{bug.relation} did not notice {bug.id}"
    if not bug.raises:
        assert record.error_type is None and record.differing, (
            f"{bug.relation} missed {bug.id} by an exception, not by its comparison: {record.describe()}")


def test_ci_step_passes_on_a_clone_of_this_tree(tmp_path, capsys):
    """What .ci/run does: ``relconsole run --all`` in a repository whose main holds the oracle."""
    repo = tmp_path / "repo"
    for path in _tracked("--cached", "--others", "--exclude-standard"):  # the working files
        if (ROOT / path).is_file():
            (repo / path).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / path, repo / path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    for args in (["init", "-q", "-b", "main"], ["add", "-A"],
                 ["-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-q", "-m", "tree"]):
        subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)
    code = main(["run", "--all", "--repo", str(repo), "--base", "main", "--json"])
    payload = json.loads(capsys.readouterr().out)
    assert code == 0, payload
    assert {r["relation_id"] for r in payload["relations"]} == set(_catalog().relations)
    assert {r["outcome"] for r in payload["relations"]} == {"held"}
