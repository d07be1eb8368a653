"""What a patch added to Python source, judged with ``ast`` (the Python rules of SPEC §9's review flags).

Each rule compares source before and after a commit and returns ``Finding`` (line,
detail) for what the commit *added*. Nodes are compared by shape (``ast.dump`` without
positions), so moving or reformatting code adds nothing and editing a literal adds an
assertion. Source that cannot be judged (a syntax error, nesting deeper than the parser
or ``ast.dump`` can follow) raises ``Unjudged``; an unparsable before-version counts as
empty, so everything in the after-version is new.

* ``golden_values`` / ``golden_assertions``: assertions comparing a call result with a
  literal value, a golden value (§9), in every form tests write them (``assert``, chained
  comparisons, ``and``, ``self.assertEqual``/``assertTrue``, ``math.isclose``, numpy's and
  pandas' testing asserts, ``pytest.approx``), a name bound to a call or a literal resolved
  within its function. Counted per file (or, by ``flagrules``, per commit across files),
  keyed without the function's name, so renaming or moving a test adds nothing.
* ``output_sorts``: a ``sorted(...)`` / ``.sort()`` whose result the function returns,
  inside a named function (the subject of a relation that compares bags).
* ``ingest_to_concat``: a function that replayed ingest (one receiver's ``.ingest(...)``
  called twice, or in a loop) and now ingests each batch once, concatenating rows instead.

Parsing and scopes live in ``pysource``, what makes an assertion golden in ``goldenscan``.
"""

from __future__ import annotations

import ast
from collections import Counter

from relconsole.engine.gate.flags.pysource import Finding, Unjudged, _before, _judged, own_nodes, _scopes, short_source, parse
from relconsole.engine.gate.flags.goldenscan import Golden, bindings, golden_in, imported_modules


def _added(before: ast.Module | None, after: ast.Module, collect) -> list[tuple[str, ast.AST, str]]:
    """(scope, node, detail) that ``collect(name, scope_node, module)`` finds in ``after``
    beyond what the same-named scope of ``before`` holds, in source order."""
    seen: dict[str, Counter] = {}
    if before is not None:
        for name, scope in _scopes(before):
            seen[name] = Counter(ast.dump(node) for node, _ in collect(name, scope, before))
    found = []
    for name, scope in _scopes(after):
        left = seen.get(name, Counter())
        for node, detail in collect(name, scope, after):
            key = ast.dump(node)
            if left[key]:
                left[key] -= 1
            else:
                found.append((name, node, detail))
    return sorted(found, key=lambda item: (item[1].lineno, item[1].col_offset))


# --- golden values -------------------------------------------------------------------

def golden_values(source: str | None, guarded=None) -> list[Golden]:
    """Every golden assertion in ``source``, in line order ([] for None).

    ``guarded`` (dotted module name -> bool) narrows it to results of calls into modules a
    relation guards (the code a golden value would restate); None: every call. Raises
    Unjudged when the source cannot be judged.
    """
    tree = parse(source)
    if tree is None:
        return []

    def scan():
        imports = imported_modules(tree)
        module_level = bindings(tree.body)
        found = [g for name, scope in _scopes(tree) for g in golden_in(scope, tree, imports, guarded, module_level, name)]
        return sorted(found, key=lambda g: g.line)
    return _judged(scan)


def new_golden(before: list[Golden], after: list[Golden]) -> list[Golden]:
    """The goldens of ``after`` beyond the same-keyed ones of ``before`` (a multiset)."""
    left = Counter(g.key for g in before)
    out = []
    for golden in after:
        if left[golden.key]:
            left[golden.key] -= 1
        else:
            out.append(golden)
    return out


def golden_assertions(before: str | None, after: str | None, guarded=None) -> list[Finding]:
    """Golden assertions that ``after`` adds to ``before`` (§9). Raises Unjudged for an
    after-version that cannot be judged; an unjudgeable before-version counts as empty."""
    try:
        old = golden_values(before, guarded)
    except Unjudged:
        old = []
    return [Finding(g.line, g.detail) for g in new_golden(old, golden_values(after, guarded))]


# --- output sorts --------------------------------------------------------------------

def _returned_names(scope: ast.AST) -> set[str]:
    names = set()
    for node in own_nodes(scope):
        if isinstance(node, (ast.Return, ast.Yield)) and node.value is not None:
            names |= {n.id for n in ast.walk(node.value) if isinstance(n, ast.Name)}
    return names


def _is_sort(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and (
        (isinstance(node.func, ast.Name) and node.func.id == "sorted")
        or (isinstance(node.func, ast.Attribute) and node.func.attr == "sort"))


def _sorts(scope: ast.AST, _module: ast.Module):
    returned = _returned_names(scope)
    for node in own_nodes(scope):
        if isinstance(node, (ast.Return, ast.Yield)) and node.value is not None:
            yield from ((c, "returns a sorted output") for c in ast.walk(node.value) if _is_sort(c))
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            hit = [t.id for t in targets if isinstance(t, ast.Name) and t.id in returned]
            if hit:
                yield from ((c, f"sorts {hit[0]}, which it returns") for c in ast.walk(node.value) if _is_sort(c))
        elif isinstance(node, ast.Expr) and _is_sort(node.value) and isinstance(node.value.func, ast.Attribute) \
                and isinstance(node.value.func.value, ast.Name) and node.value.func.value.id in returned:
            yield node.value, f"sorts {node.value.func.value.id} in place, which it returns"


def output_sorts(before: str | None, after: str | None, qualname: str) -> list[Finding]:
    """Sorts of the returned value that ``after`` adds inside function ``qualname`` (dotted,
    like ``Version.parse``); none when the function is absent."""
    tree = parse(after)
    if tree is None:
        return []

    def only(name, scope, module):
        return _sorts(scope, module) if name == qualname else iter(())
    return _judged(lambda: [Finding(node.lineno, detail)
                            for _, node, detail in _added(_before(before), tree, only)])


# --- ingest replay rewritten as concatenation ----------------------------------------

def _replays(scope: ast.AST) -> bool:
    """True when one receiver ingests twice (``store.ingest(a); store.ingest(a)``) or an
    ``.ingest(...)`` call sits in a loop, in ``scope``'s own body."""
    loops = [n for n in own_nodes(scope) if isinstance(n, (ast.For, ast.While, ast.AsyncFor))]
    in_loop = {id(c) for loop in loops for c in ast.walk(loop)}
    receivers: Counter = Counter()
    for node in own_nodes(scope):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "ingest":
            if id(node) in in_loop:
                return True
            receivers[ast.dump(node.func.value)] += 1
    return any(count >= 2 for count in receivers.values())


def _concatenations(scope: ast.AST) -> list[ast.AST]:
    found = []
    for node in own_nodes(scope):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add) \
                and not any(isinstance(side, ast.Constant) for side in (node.left, node.right)):
            found.append(node)
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult) and any(
                isinstance(s, ast.Constant) and isinstance(s.value, int) and s.value >= 2 for s in (node.left, node.right)) \
                and any(isinstance(s, (ast.Name, ast.List, ast.Call, ast.Attribute)) for s in (node.left, node.right)):
            found.append(node)
        elif isinstance(node, (ast.List, ast.Tuple)) and sum(isinstance(e, ast.Starred) for e in node.elts) >= 2:
            found.append(node)
        elif isinstance(node, ast.AugAssign) and (
                (isinstance(node.op, ast.Add) and not isinstance(node.value, ast.Constant))
                or (isinstance(node.op, ast.Mult) and isinstance(node.value, ast.Constant)
                    and isinstance(node.value.value, int) and node.value.value >= 2)):
            found.append(node)
        elif isinstance(node, ast.Call) and (
                (isinstance(node.func, ast.Attribute) and node.func.attr in ("extend", "chain"))
                or (isinstance(node.func, ast.Name) and node.func.id == "chain")):
            found.append(node)
    return sorted(found, key=lambda n: (n.lineno, n.col_offset))


def ingest_to_concat(before: str | None, after: str | None) -> list[Finding]:
    """Functions that replayed ingest in ``before`` and in ``after`` ingest once while
    concatenating rows (a replay relation turned into a concatenation, §9). Raises
    Unjudged for an after-version that cannot be judged."""
    new = parse(after)
    old = _before(before)
    if old is None or new is None:
        return []

    def scan():
        replayed = {name for name, scope in _scopes(old) if name and _replays(scope)}
        out = []
        for name, scope in _scopes(new):
            if name not in replayed or _replays(scope):
                continue
            joins = _concatenations(scope)
            if joins:
                out.append(Finding(joins[0].lineno, f"{name} replayed ingest and now concatenates rows "
                                                    f"({short_source(joins[0])}) and ingests once"))
        return out
    return _judged(scan)


