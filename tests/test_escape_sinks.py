"""Every way untrusted text leaves relconsole goes through the one escaping function
(issue 18, "Hostile text"; ``relconsole.engine.literal``: ``literal`` / ``one_line``).

An AST walk, not a regex, over the package's source, for three kinds of sink:

- **notifications**: every ``notify(`` call must reach ``ReviewApp.notify``, which escapes
  message and title and never renders markup. So each call's receiver is ``self`` (or
  ``self.app``) inside a console class, nothing calls Textual's own ``App.notify`` /
  ``super().notify`` but that sink, and no console class defines another ``notify``.
- **commit messages**: the subject and body passed to ``commit_changes`` and to the
  builders that forward to it (``actions._commit``, ``drafting.quarantine.commit_drafts``).
  ``commit_changes`` escapes controls itself, but it must keep the body's newlines, so each
  interpolated field must be escaped *before* it is joined (a newline in a drafted
  ``source`` forged a ``Confirmed-by:`` trailer line).
- **CLI output**: every ``print(`` and ``sys.stdout.write(`` in ``relconsole/cli/*.py``.

An argument is accepted when it is *built from escaped or safe parts*, checked recursively:
a literal; a call of ``literal`` / ``one_line`` / ``json.dumps`` (which escapes every control
as ``\\uXXXX``); an f-string, ``+``, ``%``, ``str.join``, conditional or comprehension whose
parts are all accepted; a name bound in the same function to accepted values, or a
parameter of a function that is itself a checked sink (its callers are checked); a call of
another helper whose arguments are all accepted (a helper combines its parts). The
pragmatic allowances are *known-safe names* (``SAFE``): digests and shas (hex), dates
(``isoformat()``), counts and sizes, the engine's own decision words and exit codes, and
a few helpers whose output is built by the engine from such parts (each named with why).
Anything else (a path, an id, a reason, a message read from a repository or a drafter)
fails the test with the file, the line and the expression.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

import relconsole
from relconsole.console.app import ReviewApp

PACKAGE = Path(relconsole.__file__).resolve().parent
ESCAPERS = {"literal", "one_line", "dumps"}  # dumps: json.dumps (ensure_ascii: controls become \\uXXXX)
# cli.review._binding_lines: bind's lines, each literal() of the whole line made in parts (test_bindfacts
# checks it against literal() of the line on hostile paths and relation ids)
ESCAPERS |= {"_binding_lines"}
# Expressions (as ast.unparse writes them) whose text the engine makes from hex, digits,
# dates and fixed words: never a repository's or a drafter's text.
SAFE = [re.compile(p) for p in (
    r".*\bisoformat\(.*\)",  # a date or time
    r"len\(.*\)", r"int\(.*\)", r"round\(.*\)",  # numbers
    r".*\b(sha|sha256|\w+_sha256|commit|blob|head_sha|merge_base|digest)(\[[^\]]*\])?",  # hex digests
    r".*\b(size_bytes|generation|exit_code|line|row|done|total|count|n|seconds_left\(\)(:\.1f)?)",  # numbers
    r".*\b(decision|outcome|state)",  # the engine's fixed words (pass, reject, MISSED, acquired...)
    r"(o|d|decision|payload\['decision'\])\.?\b(reason|decision)|payload\['(decision|reason|exit_code)'\]",
    r"MARK\[.*\]|mark|item\.title|span",  # the checklist's marks and titles, a commit range's two shas
    r"[A-Z][A-Z0-9_]*",  # the package's own constants
    r".*\b(fraction|percent)",  # numbers
    r"_version\(\)", r"name", r"schemas\.text\(.*\)",  # the package's own version and schema files
    r"script\(.*\)",  # shell completion script, generated from argparse's own tables
    r"_relation_line\(d\)",  # one_line()s its ids inside (cli_decide)
    r"result\.lines\(\)",  # gate lines, built with one_line (cli_decide)
    r"prompt\.text",  # the drafter's prompt as the engine wrote it, printed for `--print-prompt`
)]
# Functions that are sinks themselves: their parameters are checked at their call sites.
FORWARDERS = {"_commit", "commit_drafts", "_line"}


@dataclass
class Offence:
    path: str
    line: int
    text: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.text}"


@dataclass
class Scope:
    """The function a sink call sits in: its parameters and its local bindings."""

    name: str
    params: set[str] = field(default_factory=set)
    bound: dict[str, list[ast.expr]] = field(default_factory=dict)


def _scopes(tree: ast.Module):
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            scope = Scope(node.name, {a.arg for a in node.args.args + node.args.kwonlyargs + node.args.posonlyargs})
            for sub in ast.walk(node):
                if isinstance(sub, ast.Assign):
                    for target in sub.targets:
                        _bind(scope, target, sub.value)
                elif isinstance(sub, (ast.AugAssign, ast.AnnAssign)) and sub.value is not None:
                    _bind(scope, sub.target, sub.value)
                elif isinstance(sub, ast.NamedExpr):
                    _bind(scope, sub.target, sub.value)
            yield node, scope


def _bind(scope: Scope, target: ast.expr, value: ast.expr) -> None:
    if isinstance(target, ast.Name):
        scope.bound.setdefault(target.id, []).append(value)
    elif isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) and len(target.elts) == len(value.elts):
        for t, v in zip(target.elts, value.elts):
            _bind(scope, t, v)
    elif isinstance(target, ast.Tuple):
        for t in target.elts:
            _bind(scope, t, value)


def _func_name(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def unescaped(node: ast.expr | None, scope: Scope, seen: frozenset = frozenset()) -> list[ast.expr]:
    """The parts of ``node`` that are neither escaped nor known to be safe (empty: accepted)."""
    if node is None or isinstance(node, ast.Constant):
        return []
    text = ast.unparse(node)
    if any(p.fullmatch(text) for p in SAFE):
        return []
    if isinstance(node, ast.JoinedStr):
        return [bad for v in node.values for bad in unescaped(v, scope, seen)]
    if isinstance(node, ast.FormattedValue):
        return unescaped(node.value, scope, seen)
    if isinstance(node, ast.Call):
        if _func_name(node) in ESCAPERS:
            return []
        if _func_name(node) == "counted":  # literal.counted prints int(count): only its words count
            return [bad for p in node.args[1:] + [k.value for k in node.keywords] for bad in unescaped(p, scope, seen)]
        parts = list(node.args) + [k.value for k in node.keywords]
        if isinstance(node.func, ast.Attribute) and _func_name(node) in ("join", "format", "strip", "rstrip",
                                                                          "lstrip", "splitlines", "split"):
            parts.append(node.func.value)  # "sep".join(parts), text.strip(): the receiver counts too
        elif not parts:
            return [node]  # a call of nothing: its text comes from elsewhere
        return [bad for p in parts for bad in unescaped(p, scope, seen)]
    if isinstance(node, ast.BinOp):
        return unescaped(node.left, scope, seen) + unescaped(node.right, scope, seen)
    if isinstance(node, ast.Compare):
        return []  # a boolean
    if isinstance(node, ast.BoolOp):
        return [bad for v in node.values for bad in unescaped(v, scope, seen)]
    if isinstance(node, ast.IfExp):
        return unescaped(node.body, scope, seen) + unescaped(node.orelse, scope, seen)
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return [bad for e in node.elts for bad in unescaped(e, scope, seen)]
    if isinstance(node, (ast.ListComp, ast.GeneratorExp, ast.SetComp)):
        return unescaped(node.elt, scope, seen)
    if isinstance(node, ast.Starred):
        return unescaped(node.value, scope, seen)
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice):
        return unescaped(node.value, scope, seen)  # a slice of accepted text is accepted
    if isinstance(node, ast.Name):
        if node.id in scope.params and scope.name in FORWARDERS:
            return []
        if node.id in scope.bound and node.id not in seen:
            return [bad for v in scope.bound[node.id] for bad in unescaped(v, scope, seen | {node.id})]
        if node.id in seen:
            return []
    return [node]


def _arguments(call: ast.Call, positions: tuple[int, ...], keywords: tuple[str, ...]) -> list[ast.expr]:
    picked = [call.args[i] for i in positions if i < len(call.args)]
    return picked + [k.value for k in call.keywords if k.arg in keywords]


def _modules(pattern: str):
    for path in sorted(PACKAGE.glob(pattern)):
        yield path, ast.parse(path.read_text(encoding="utf-8"), str(path))


def _offences(pattern: str, pick) -> list[Offence]:
    """Every unescaped part of every argument ``pick(call)`` returns (None: not a sink)."""
    found = []
    for path, tree in _modules(pattern):
        for func, scope in _scopes(tree):
            for call in (n for n in ast.walk(func) if isinstance(n, ast.Call)):
                for arg in pick(call) or []:
                    found += [Offence(str(path.relative_to(PACKAGE.parent)), bad.lineno, ast.unparse(bad))
                              for bad in unescaped(arg, scope)]
    return sorted({str(o): o for o in found}.values(), key=str)


# --- commit messages -------------------------------------------------------------------

COMMIT_BUILDERS = {  # name -> (positions of subject and body, their keywords)
    "commit_changes": ((3, 5), ("subject", "body")),
    "_commit": ((2, 4), ("subject", "body")),
}  # drafting.quarantine.commit_drafts passes its subject and drafter through one_line itself (checked here)


def _commit_args(call: ast.Call):
    spec = COMMIT_BUILDERS.get(_func_name(call))
    return _arguments(call, *spec) if spec else None


def test_every_commit_message_is_built_from_escaped_fields():
    offences = _offences("**/*.py", _commit_args)
    assert not offences, "unescaped text in a commit message:\n" + "\n".join(map(str, offences))


def test_the_commit_builders_are_found():
    """The walk sees the builders it is meant to check (a rename would make the test vacuous)."""
    seen = {_func_name(c) for _p, tree in _modules("**/*.py") for c in ast.walk(tree)
            if isinstance(c, ast.Call) and _func_name(c) in COMMIT_BUILDERS}
    assert seen == set(COMMIT_BUILDERS)


# --- CLI output ------------------------------------------------------------------------

def _cli_args(call: ast.Call):
    name = _func_name(call)
    if name == "print" and isinstance(call.func, ast.Name):
        return list(call.args)
    if name == "write" and ast.unparse(call.func) in ("sys.stdout.write", "sys.stderr.write"):
        return list(call.args)
    if name == "_line" and ast.unparse(call.func) == "self._line":  # cli_progress's one print
        return list(call.args)
    return None  # cli.reviewio.emit and cli_workspace._print escape their lines themselves (their prints are checked)


def test_every_cli_print_is_escaped():
    checked = [c for _p, tree in _modules("cli/*.py") for c in ast.walk(tree)
               if isinstance(c, ast.Call) and _cli_args(c)]
    assert len(checked) > 40, "the walk no longer finds the CLI's prints"
    offences = _offences("cli/*.py", _cli_args)
    assert not offences, "unescaped text printed by the CLI:\n" + "\n".join(map(str, offences))


# --- notifications ----------------------------------------------------------------------

def test_every_notification_reaches_the_escaping_sink():
    """Each ``notify(`` is ``self.notify`` / ``self.app.notify`` in a console class (so
    ``ReviewApp.notify``), or passes ``self.notify`` on to run on the UI thread; only the sink
    calls Textual's own ``notify``; no other class in the package defines ``notify``."""
    problems = []
    for path, tree in _modules("**/*.py"):
        where = str(path.relative_to(PACKAGE.parent))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, ast.FunctionDef) and item.name == "notify" and node.name != "ReviewApp":
                        problems.append(f"{where}:{item.lineno}: {node.name} defines its own notify")
            if isinstance(node, ast.Attribute) and node.attr == "notify":
                receiver = ast.unparse(node.value)
                if receiver in ("self", "self.app") and where.startswith("relconsole/console/"):
                    continue
                if receiver == "super()" and _inside(tree, node, "ReviewApp", "notify"):
                    continue
                problems.append(f"{where}:{node.lineno}: {ast.unparse(node)} bypasses ReviewApp.notify")
    assert not problems, "\n".join(problems)
    assert "notify" in vars(ReviewApp), "ReviewApp.notify is the sink"


def _inside(tree: ast.Module, target: ast.AST, class_name: str, method: str) -> bool:
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == class_name):
        for item in cls.body:
            if isinstance(item, ast.FunctionDef) and item.name == method and any(n is target for n in ast.walk(item)):
                return True
    return False


def test_the_notification_sink_escapes_message_and_title_and_never_renders_markup(monkeypatch):
    """The sink itself, called as every toast calls it: what reaches Textual's notify carries
    no control character, and markup is off (a drafted ``[b]`` shows as typed)."""
    from textual.app import App
    seen = []
    monkeypatch.setattr(App, "notify", lambda self, message, **kw: seen.append((message, kw)))
    app = ReviewApp.__new__(ReviewApp)  # the sink reads nothing of a running app
    hostile = "\x1b]0;pwned\x07\x1b[2J[b]bold[/b] \x9b31m"
    app.notify(hostile + "\nsecond line", title="title\x1b[2J\x07", markup=True)
    (message, keywords), = seen
    assert not any(ord(c) < 32 or 0x7F <= ord(c) < 0xA0 for c in message), repr(message)
    assert keywords["markup"] is False
    assert "[b]bold[/b]" in message and "second line" in message and "pwned" in message


# --- the checker itself -----------------------------------------------------------------

def _check(source: str) -> list[str]:
    tree = ast.parse(source)
    (func, scope), = list(_scopes(tree))
    call = next(n for n in ast.walk(func) if isinstance(n, ast.Call) and _func_name(n) == "sink")
    return [ast.unparse(b) for a in call.args for b in unescaped(a, scope)]


def test_the_checker_flags_raw_fields_and_accepts_escaped_ones():
    """The walk is not vacuous: a raw field is found through f-strings, joins and local names."""
    assert _check("def f(c):\n    sink(f'x {c.path}')") == ["c.path"]
    assert _check("def f(c):\n    body = ''.join(f'{r.text}\\n' for r in c)\n    sink(body)") == ["r.text"]
    assert _check("def f(c):\n    names = [x.id for x in c]\n    sink('a ' + '; '.join(names))") == ["x.id"]
    assert _check("def f(c):\n    sink(f'x {one_line(c.path)} {c.sha[:10]} {len(c)}')") == []
    assert _check("def f(c):\n    sink(f'{c.when.isoformat()}', json.dumps(c))") == []
