"""A touched Python file's diff as a reviewer reads it, each changed line marked by what ran
it (SPEC §3 covered means exercised, §9 flags): the data of the console's diff view and of
``bind --json``'s ``lines``.

The hunks are ``git diff -M`` of the file (merge base -> HEAD, renames followed, three lines of
context). Each added line of a changed statement carries the relations whose calls ran that
statement on HEAD (``ran``: every one of them, sorted), of which ``missed`` those whose run in
this review missed, or is ``unexercised`` when none did; a line a review flag points at carries
the flag's name and level. Lines that are no statement (blank, comment, docstring) carry
neither.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from relconsole.engine.gate import exercised
from relconsole.engine.repo.gitio import run_git

HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@")
CONTEXT_LINES = 3


@dataclass(frozen=True)
class DiffLine:
    """One line of a hunk: ``kind`` (`` `` context, ``+`` added, ``-`` removed), its numbers on
    the old and new side (None where it has none), its ``text``, and for an added line of a
    changed statement the relation ids that ran it (``ran``, sorted) or ``unexercised``;
    ``missed``: those of ``ran`` whose run in this review missed (empty where the lines come
    from the kept record alone, as for ``bind``: it keeps no outcome); ``flags``: (name,
    level) of the review flags at this line."""

    kind: str
    old: int | None
    new: int | None
    text: str
    ran: tuple[str, ...] = ()
    unexercised: bool = False
    flags: tuple[tuple[str, str], ...] = ()
    missed: tuple[str, ...] = ()

    def to_json(self) -> dict:
        return {"kind": self.kind, "old": self.old, "new": self.new, "text": self.text, "ran": list(self.ran),
                "missed": list(self.missed), "unexercised": self.unexercised,
                "flags": [{"name": n, "level": lv} for n, lv in self.flags]}


@dataclass(frozen=True)
class Hunk:
    header: str
    lines: tuple[DiffLine, ...] = field(default_factory=tuple)


def raw_hunks(review, path: str) -> list[tuple[str, list[tuple[str, int | None, int | None, str]]]]:
    """``[(header, [(kind, old, new, text)])]`` of ``git diff`` of ``path`` (its binding's old path
    for a rename) between the review's merge base and HEAD. Raises GitError as ``run_git``."""
    binding = next((b for b in review.bindings if b.path == path), None)
    old_path = binding.touched.old_path if binding is not None and binding.touched.old_path else path
    proc = run_git(review.root, "diff", f"-U{CONTEXT_LINES}", "-M", "--no-color", "--no-ext-diff", "--no-textconv",
                   review.merge_base, review.head_sha, "--", *dict.fromkeys([old_path, path]))
    hunks: list = []
    old = new = 0
    for raw in proc.stdout.decode("utf-8", "replace").split("\n"):
        match = HUNK.match(raw)
        if match:
            old, new = int(match.group(1)), int(match.group(2))
            hunks.append((raw, []))
        elif hunks and raw[:1] in (" ", "+", "-"):
            kind = raw[0]
            hunks[-1][1].append((kind, old if kind != "+" else None, new if kind != "-" else None, raw[1:]))
            old += kind != "+"
            new += kind != "-"
    return hunks


def ran_by(review) -> dict[str, dict[str, set[int]]]:
    """relation id -> {path: lines its calls ran on HEAD}: its runs' record, or the kept record
    (``review.recorded``) for a relation that did not run in this process."""
    out = {rid: exercised.executed_by([result]) for rid, result in review.results.items()}
    for rid, by_path in getattr(review, "recorded", {}).items():
        out.setdefault(rid, {path: set(lines) for path, lines in by_path.items()})
    return out


def file_diff(review, path: str, found=None, outcomes: bool = True) -> list[Hunk]:
    """The hunks of ``path`` with each line's marks (module docstring). ``found``: the review's
    ``exercised.Unexercised`` rows when the caller has them (default ``review.unexercised()``).
    ``outcomes=False``: no ``missed`` (a caller whose process ran relations only by the way)."""
    spans = exercised.review_changed(review).get(path, [])
    missing = {span for u in (review.unexercised() if found is None else found) if u.path == path for span in u.spans}
    runs = {rid: by_path.get(path, set()) for rid, by_path in ran_by(review).items()}
    missed = {rid for rid, result in review.results.items()
              if outcomes and getattr(result, "outcome", None) == "missed"}
    flags: dict[int, list[tuple[str, str]]] = {}
    for flag in getattr(review, "flags", []):
        if flag.path == path and flag.line:
            flags.setdefault(flag.line, []).append((flag.name, review.flag_level(flag)))
    out = []
    for header, lines in raw_hunks(review, path):
        marked = []
        for kind, old, new, text in lines:
            span = next((s for s in spans if new is not None and s[0] <= new <= s[1]), None) if kind == "+" else None
            ran = tuple(sorted(rid for rid, lines_run in runs.items()
                               if span is not None and any(n in lines_run for n in range(span[0], span[1] + 1))))
            marked.append(DiffLine(kind, old, new, text, ran, span is not None and span[:2] in missing,
                                   tuple(flags.get(new, ())) if kind != "-" else (),
                                   tuple(rid for rid in ran if rid in missed)))
        out.append(Hunk(header, tuple(marked)))
    return out


def changed_line_marks(review, path: str, found=None) -> list[dict]:
    """``bind --json``'s ``lines`` of ``path``: each added line with every relation that ran it
    (``ran``) or ``unexercised`` (``DiffLine.to_json`` of the ``+`` lines of ``file_diff``;
    ``found`` as there). ``missed`` stays empty: bind runs no relation of its own (a full load
    may run some for the import record, the kept-facts answer none), and both answer alike.
    Its ``flags`` are those the review has read (bind reads none: ``relconsole flags`` has them)."""
    return [line.to_json() for hunk in file_diff(review, path, found, outcomes=False)
            for line in hunk.lines if line.kind == "+"]
