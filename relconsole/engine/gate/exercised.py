"""Covered means exercised (SPEC §3): the changed statements of a patch's Python files that no
relation's calls ran on HEAD.

An import is not coverage. A relation owns a file by its owner pattern or because its subject
imported the file (``importmap``), and so runs when the file changes; but a changed line counts
as covered only when a relation's calls executed it on HEAD (the subject process records the
tree's executed lines, ``subject/tracing.py``; ``run["executed"]``). A changed statement of an
owned ``.py`` file that no relation ran is ``unexercised``: a gap (exit 2 unless worse), or a
warning with ``[tool.relconsole] unexercised = "warn"``.

Statements are coverage.py's (``PythonParser``): a multi-line statement is its first line, a
docstring or comment is none, and an ``if TYPE_CHECKING:`` block never runs, so it is left
out. A ``# pragma: no cover`` is not honoured: the patch would be excusing its own lines. A
file that does not parse has every changed non-blank line counted.

How a patch beats it, and why it does not pass: it cannot add executed lines (the record is the
harness's, made in the subject process; forging it means reading the tracer, a §9 probe);
replacing the trace function only hides its own lines, which then count as unexercised.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Iterable

from relconsole.engine.gate.blobreader import BlobReader
from relconsole.engine.gate.calltime import call_time_evidence, entry_line, lambda_evidence
from relconsole.engine.relations.spans import span_ran
from relconsole.engine.gate.flags.flagrules import probed_by_name
from relconsole.engine.repo.gitio import run_git
from relconsole.engine.repo.owners import OWNED

UNEXERCISED = "unexercised"
LEVELS = ("gap", "warn")
TYPE_CHECKING_BLOCK = r"^\s*if\s+(typing\.)?TYPE_CHECKING\s*:"
HUNK = re.compile(rb"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@", re.M)


@dataclass(frozen=True)
class Unexercised:
    """A touched file's changed statements no relation ran: ``path`` (repository-relative),
    ``spans`` (each statement's inclusive ``(first, last)`` lines, ascending), ``relations``
    (the ids bound to the file)."""

    path: str
    spans: tuple[tuple[int, int], ...]
    relations: tuple[str, ...] = ()
    # the inputs drawn by the relations bound to the file that reached none of them (SPEC §3 generated
    # inputs): (relation id, inputs tried, run seed) each
    drawn: tuple[tuple[str, int, int], ...] = ()

    @property
    def lines(self) -> tuple[int, ...]:
        """Every line of the statements no relation ran."""
        return tuple(n for first, last in self.spans for n in range(first, last + 1))

    def ranges(self) -> list[tuple[int, int]]:
        """The statements' lines as inclusive ``(first, last)`` runs of consecutive numbers."""
        return line_ranges(self.lines)

    def ranges_text(self) -> str:
        return ranges_text(self.ranges())

    def to_json(self) -> dict:
        return {"path": self.path, "lines": [[a, b] for a, b in self.ranges()], "statements": len(self.spans),
                "relations": list(self.relations),
                "drawn": [{"relation": rid, "tried": tried, "seed": seed} for rid, tried, seed in self.drawn]}


def ranges_text(ranges) -> str:
    """Inclusive ``[first, last]`` line runs as a reader reads them: ``2``, ``3-5, 9``."""
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in ranges)


def describe(row: dict, level: str) -> str:
    """One line for an ``Unexercised.to_json()`` row: the file, the lines no relation ran, and
    what ``level`` (``gap``, ``warn``) makes of it. Untrusted text inside (the path): the caller
    prints it through ``literal.one_line``."""
    ranges = row.get("lines") or []
    word = "line" if len(ranges) == 1 and ranges[0][0] == ranges[0][1] else "lines"
    statements = int(row.get("statements") or 0)
    effect = "exit 2 unless worse" if level == "gap" else 'a warning: [tool.relconsole] unexercised = "warn"'
    tried = [d for d in row.get("drawn") or [] if isinstance(d, dict) and d.get("tried")]
    drawn = "".join(f"; {d.get('relation')} drew {int(d['tried'])} inputs (run seed {d.get('seed')}) and reached none"
                    for d in tried[:3])
    return (f"unexercised: {row.get('path')} {word} {ranges_text(ranges)}: {statements} changed "
            f"statement{'' if statements == 1 else 's'} no relation ran{drawn} ({effect})")


def line_ranges(lines: Iterable[int]) -> list[tuple[int, int]]:
    """Sorted line numbers as inclusive runs of consecutive numbers: [3, 4, 5, 9] -> [(3, 5), (9, 9)]."""
    out: list[list[int]] = []
    for n in sorted(set(lines)):
        if out and n == out[-1][1] + 1:
            out[-1][1] = n
        else:
            out.append([n, n])
    return [(a, b) for a, b in out]


def changed_lines(repo_dir, merge_base: str, head: str, deletions: dict | None = None,
                  pathspecs: tuple[str, ...] = (":(glob)**/*.py",)) -> dict[str, set[int]]:
    """``{path at head: line numbers the patch added or changed}`` of every ``.py`` file that
    differs between the two commits: one ``git diff -U0 -M`` (renames followed, an added
    file's every line), its hunks' new sides read. A deleted file has no row; a binary one
    no lines. ``deletions``, when given, gets ``{path: {N: [removed line, ...]}}``: lines were
    removed right after line N (a hunk that adds nothing). ``pathspecs``: the files diffed
    (``()``: every file of the patch)."""
    proc = run_git(repo_dir, "-c", "core.quotePath=false", "diff", "-U0", "-M", "--no-ext-diff", "--no-textconv",
                   "--no-color", "--src-prefix=a/", "--dst-prefix=b/", merge_base, head, "--",
                   *pathspecs, ok=None)
    out: dict[str, set[int]] = {}
    lines: set[int] | None = None
    point: int | None = None  # the line a pure deletion follows, while its "-" lines are read
    for raw in (proc.stdout or b"").split(b"\n"):
        if raw.startswith(b"+++ "):
            name = _header_path(raw[4:])
            lines = out.setdefault(name, set()) if name is not None else None
            point = None
        elif raw.startswith(b"@@ ") and lines is not None:
            match = HUNK.match(raw)
            point = None
            if match:
                start, count = int(match.group(1)), int(match.group(2) or 1)
                lines.update(range(start, start + count))
                if count == 0 and deletions is not None:
                    point = start
                    deletions.setdefault(name, {})[point] = []
        elif raw.startswith(b"-") and not raw.startswith(b"--- ") and point is not None and deletions is not None:
            deletions[name][point].append(raw[1:].decode("utf-8", "replace"))
    return out


def after_deletions(text: str, points: dict[int, list[str]]) -> set[int]:
    """The lines that stand for code a patch removed without adding any (``points``: N -> the
    removed lines, which followed line N): a removed decorator stands as the definition it
    decorated (the next statement); removed indented code (a guard, a final ``return``, an
    override, a signature's line) as the statement it followed, the innermost one holding
    line N, or the last one before it (in the same block: the rest of a branch that runs does
    not stand for a branch that does not). A removal at the top level between definitions
    changes no statement that is left (its readers fail on their own)."""
    if not points:
        return set()
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return set()
    statements = [n for n in ast.walk(tree) if isinstance(n, ast.stmt)]
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    out = set()
    for point, removed in points.items():
        code = [line for line in removed if line.strip() and not line.strip().startswith("#")]
        if not code:
            continue
        if all(line.lstrip().startswith("@") for line in code):
            after = [n.lineno for n in statements if n.lineno > point]
            out |= {min(after)} if after else set()
            continue
        if not code[0][:1].isspace():
            continue  # a top-level definition or statement removed whole
        holding = [n for n in statements if n.lineno <= point <= (n.end_lineno or n.lineno)]
        before = [n for n in statements if (n.end_lineno or n.lineno) <= point]
        chosen = max(holding, key=lambda n: n.lineno) if holding else max(before, key=lambda n: n.lineno, default=None)
        if chosen is None:
            after = [n.lineno for n in statements if n.lineno > point]
            chosen_line = min(after) if after else None
        else:
            owner = parents.get(chosen)  # code removed from a class body (an override) stands as the class
            chosen_line = owner.lineno if isinstance(owner, ast.ClassDef) and chosen in owner.body else chosen.lineno
        if chosen_line is not None:
            out.add(chosen_line)
    return out


_ESCAPES = {ord("a"): 7, ord("b"): 8, ord("t"): 9, ord("n"): 10, ord("v"): 11, ord("f"): 12, ord("r"): 13,
            ord('"'): 34, ord("\\"): 92}


def _header_path(field: bytes) -> str | None:
    """The path of a ``+++ b/path`` header (git's C-quoting undone), None for ``/dev/null``."""
    if field.startswith(b'"') and field.endswith(b'"'):
        body, out, at = field[1:-1], bytearray(), 0
        while at < len(body):
            if body[at] == 92 and at + 1 < len(body):  # a backslash escape
                if body[at + 1:at + 4].isdigit():
                    out.append(int(body[at + 1:at + 4], 8))
                    at += 4
                    continue
                out.append(_ESCAPES.get(body[at + 1], body[at + 1]))
                at += 2
                continue
            out.append(body[at])
            at += 1
        field = bytes(out)
    if not field.startswith(b"b/"):
        return None
    return field[2:].decode("utf-8", "surrogateescape")


def statement_lines(text: str) -> tuple[set[int], object | None]:
    """``(statements, parser)`` of Python source ``text``: coverage.py's statement first lines
    with ``if TYPE_CHECKING:`` blocks left out, and the parser (``first_line``,
    ``translate_lines``); ``(set(), None)`` when it does not parse."""
    from coverage.exceptions import CoverageException
    from coverage.parser import PythonParser
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return set(), None
    parser = PythonParser(text=text, exclude=TYPE_CHECKING_BLOCK if typing_type_checking(tree) else None)
    try:
        parser.parse_source()
    except (CoverageException, SyntaxError, ValueError, IndentationError):
        return set(), None
    return set(parser.statements), parser


def typing_type_checking(tree: ast.Module) -> bool:
    """Whether ``TYPE_CHECKING`` in the module is ``typing``'s (imported from it, and never bound
    otherwise: assigned, imported from elsewhere or as another name, a parameter, a loop, ``with``
    or ``except`` name): a module's own ``TYPE_CHECKING = True`` or ``from os import sep as
    TYPE_CHECKING`` would hide a block that runs (red team, issue 35)."""
    imported = any(isinstance(n, ast.ImportFrom) and n.module == "typing"
                   and any(a.name == "TYPE_CHECKING" and a.asname is None for a in n.names)
                   or isinstance(n, ast.Import) and any(a.name == "typing" and a.asname is None for a in n.names)
                   for n in ast.walk(tree))
    bound = any(isinstance(n, ast.Name) and n.id == "TYPE_CHECKING" and isinstance(n.ctx, (ast.Store, ast.Del))
                or isinstance(n, ast.alias) and (n.asname or n.name) == "TYPE_CHECKING" and n not in _typing_aliases(tree)
                or isinstance(n, ast.arg) and n.arg == "TYPE_CHECKING"
                or isinstance(n, ast.ExceptHandler) and n.name == "TYPE_CHECKING"
                or isinstance(n, (ast.Global, ast.Nonlocal)) and "TYPE_CHECKING" in n.names
                or isinstance(n, ast.Attribute) and n.attr == "TYPE_CHECKING" and isinstance(n.ctx, (ast.Store, ast.Del))
                for n in ast.walk(tree))
    return imported and not bound


def _typing_aliases(tree: ast.Module) -> list:
    """The ``from typing import TYPE_CHECKING`` aliases of the module."""
    return [a for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module == "typing" for a in n.names
            if a.name == "TYPE_CHECKING" and a.asname is None]


def changed_statements(text: str, changed: set[int]) -> list[tuple]:
    """The statements of ``text`` (see ``statement_lines``) that a changed line belongs to, each
    as its inclusive line span ``(first, last)`` (a multi-line statement's lines all stand for
    it), with, for a statement whose effect happens in a call, the lines that must run in one
    (``(first, last, (line, ...))``, ``call_time_evidence``), ascending; for a file that does
    not parse, every changed line that is not blank."""
    statements, parser = statement_lines(text)
    count = text.count("\n") + 1
    if parser is None:
        lines = text.splitlines()
        return [(n, n) for n in sorted(changed) if 0 < n <= len(lines) and lines[n - 1].strip()]
    spans = []
    evidence = call_time_evidence(text)
    for first in sorted({parser.first_line(n) for n in changed} & statements):
        last = first
        while last < count and parser.first_line(last + 1) == first:
            last += 1
        spans.append((first, last, evidence[first]) if first in evidence else (first, last))
    lambdas = lambda_evidence(text)  # a changed line of one lambda of a table: that lambda must run
    spans += [(n, n, lambdas[n]) for n in sorted(changed) if n in lambdas and parser.first_line(n) in statements
              and (n, n, lambdas[n]) not in spans]
    return sorted(spans)


def wanted_rows(changed: dict[str, list[tuple]]) -> tuple:
    """What a run records for ``changed`` (path -> ``changed_statements`` spans), as
    ``RunPlan.record_lines``: ``((path, (line, ...), (evidence entry, ...)), ...)``, every line
    of the statements and of their call-time evidence; an evidence line counts only when it
    ran in a function's code, one given as ``(line, code name)`` only in that code's
    (``tracing.LineRecorder``)."""
    rows = []
    for path, spans in changed.items():
        called = {n for span in spans if len(span) > 2 for n in span[2]}
        lines = {n for span in spans for n in range(span[0], span[1] + 1)} | {entry_line(n) for n in called}
        rows.append((path, tuple(sorted(lines)), tuple(sorted(called, key=entry_line))))
    return tuple(rows)


def review_changed(review) -> dict[str, list[tuple[int, int]]]:
    """``{path: changed statements as (first, last) line spans}`` of the review's owned ``.py``
    files at HEAD, in the bindings' order (``review``: anything with ``root``, ``merge_base``,
    ``head_sha`` and ``bindings``). One diff and one ``cat-file --batch`` for every file;
    cached on the review per bindings."""
    cached = review.__dict__.get("_changed_statements")
    if cached is not None and cached[0] == tuple(review.bindings):
        return cached[1]
    owned = [b.path for b in review.bindings if b.state == OWNED and b.path.endswith(".py")
             and not b.touched.status.startswith("D")]
    deletions: dict[str, dict[int, list[str]]] = {}
    changed = changed_lines(review.root, review.merge_base, review.head_sha, deletions) if owned else {}
    # a file renamed from one no relation's calls could have run (a test, a text file) is new
    # code in the package: every line of it is changed (red team, issue 35)
    moved_in = {b.path for b in review.bindings if b.path in owned and b.touched.old_path
                and not (b.touched.old_path.endswith(".py") and probed_by_name(b.touched.old_path))}
    wanted = [path for path in owned if changed.get(path) or path in moved_in or deletions.get(path)]
    out: dict[str, list[tuple[int, int]]] = {}
    if wanted:
        with BlobReader(review.root) as reader:
            blobs = reader.read_many([(review.head_sha, path) for path in wanted])
        for path, blob in zip(wanted, blobs):
            text = (blob or b"").decode("utf-8", "replace")
            lines = (set(range(1, text.count("\n") + 2)) if path in moved_in
                     else changed.get(path, set()) | after_deletions(text, deletions.get(path, {})))
            spans = changed_statements(text, lines)
            if spans:
                out[path] = spans
    review.__dict__["_changed_statements"] = (tuple(review.bindings), out)
    return out


def executed_by(results: Iterable) -> dict[str, set[int]]:
    """``{tree path: executed lines}`` over every run of every ``RelationResult`` given (the first
    run and the reruns; the merge base's run is not HEAD's and is left out)."""
    out: dict[str, set[int]] = {}
    for result in results:
        for record in ([result.first] if result.first is not None else []) + list(result.reruns):
            for path, lines in (record.run.get("executed") or {}).items():
                out.setdefault(path, set()).update(lines)
    return out


def unexercised(changed: dict[str, list], executed: dict[str, Iterable[int]], owners=None,
                drawn: dict[str, tuple[int, int]] | None = None) -> list[Unexercised]:
    """Every file of ``changed`` (path -> changed statements as ``(first, last)`` spans) with a
    statement no executed line falls in. ``executed``: path -> lines the relations ran;
    ``owners(path)``: the relation ids bound to it (default none); ``drawn``: relation id ->
    (inputs it drew, run seed), named on the files it is bound to."""
    out = []
    for path, spans in changed.items():
        ran = set(executed.get(path, ()))
        missing = tuple((span[0], span[1]) for span in spans if not span_ran(span, ran))
        if missing:
            bound = tuple(owners(path)) if owners else ()
            tried = tuple((rid, *drawn[rid]) for rid in bound if drawn and rid in drawn)
            out.append(Unexercised(path, missing, bound, tried))
    return out


def drawn_by(results: Iterable) -> dict[str, tuple[int, int]]:
    """``{relation id: (inputs drawn, run seed)}`` of each result's first run that drew any."""
    out = {}
    for result in results:
        drawn = (result.first.drawn if result.first is not None else None) or {}
        if drawn.get("tried"):
            out[result.relation_id] = (int(drawn["tried"]), int(result.first.seed))
    return out
