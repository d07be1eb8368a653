"""Reviewers' acknowledgements of review flags (SPEC §9: ``review:`` commits, ``oracle/acks.json``).

A review flag (§9) makes the PR ``reject`` until a reviewer who has read the flagged code
acknowledges it. An acknowledgement is a row of the acks file on the oracle branch that
holds the flag's fingerprint: a hash of the flag's name, its path and the content it cleared
(``flagged_content``): for a flag on a line, the enclosing definition and the whole flagged
statement; for a flag on a whole file, the file's blob. It is bound to content, not to a
commit: it survives a rebase or a squash, and is void as soon as that content changes (one
ack of ``self.assertEqual(`` no longer clears five different assertions, and an ack of a
``.gitattributes`` does not clear a later, different one).

It counts only when read from the base ref (the patch's own acks file is never read) and
when the person who made it is not an author of a commit under review: an agent cannot
wave its own flags through.

The file is a JSON list of rows::

    [{"id": "3f9c2a1b7d0e4c55", "flag": "environment_probe", "commit": null,
      "path": "src/app.py", "line": 12, "text": "@functools.lru_cache",
      "by": "Ana Reviewer <ana@example.org>", "reason": "memo of a pure function", "date": "2026-12-02"}]
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

from relconsole.engine.errors import BadInputError, UsageError
from relconsole.engine.oracle.freezes import json_rows
from relconsole.engine.repo.gitio import run_git
from relconsole.engine.gate.blobreader import BlobReader
from relconsole.engine.gate.flags.packagingflags import NAME as PACKAGING, acked_content as packaging_content
from relconsole.engine.gate.flags.patchflags import Flag
from relconsole.engine.gate.flags.sourcetext import source_text
from relconsole.engine.oracle.schemacheck import first_error, shipped_part

ID_LENGTH = 16  # hex digits of the fingerprint: 64 bits, no two flags of a review alike
MIN_PREFIX = 6  # the shortest id prefix ``relconsole ack`` takes

ROW_SCHEMA = shipped_part("ack", "row")  # one row of relconsole/schemas/ack.schema.json


@dataclass(frozen=True)
class Ack:
    """One acknowledgement row (``raw``, as in the file), the 1-based line it starts on, and
    ``maker``: (name, email) of the author of the commit that added it (``makers``), whoever
    the row's ``by`` says made it."""

    raw: dict
    line: int | None
    maker: tuple[str, str] | None = None

    @property
    def id(self) -> str:
        return self.raw["id"]

    @property
    def by(self) -> str:
        return self.raw["by"]

    @property
    def reason(self) -> str:
        return self.raw["reason"]


def fingerprint(flag: Flag, content: str) -> str:
    """The flag's id: ``ID_LENGTH`` hex digits of the sha256 of its name, path and ``content``
    (``flagged_content``: what the acknowledgement clears). No commit: a rebase keeps it."""
    payload = json.dumps([flag.name, flag.path, content], ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8", "surrogateescape")).hexdigest()[:ID_LENGTH]


def flagged_content(reader: BlobReader, flag: Flag, head: str) -> str:
    """What an acknowledgement of ``flag`` clears, read from the flag's commit (HEAD for a flag
    on the patch as a whole): for a flag on a line of a Python file, ``enclosing definition``
    and the whole statement the line belongs to (``statement_at``); for ``packaging_changed``,
    the settings on that line and their values (``packagingflags.acked_content``: another value
    there is not what was cleared); for a line of any other file, that line; for a whole file,
    ``blob <sha256 of its bytes>`` (``blob none`` when the file is gone). Each line stripped, so
    re-indenting the file keeps the id."""
    data = reader.read(flag.commit or head, flag.path)
    if not flag.line:
        return "blob " + (hashlib.sha256(data).hexdigest() if data is not None else "none")
    if not data:
        return ""
    if flag.name == PACKAGING:
        return packaging_content(flag.path, data, flag.line)
    text = source_text(flag.path, data)
    if flag.path.endswith((".py", ".pyw")):
        found = statement_at(text, flag.line)
        if found is not None:
            return found
    lines = text.splitlines()
    return lines[flag.line - 1].strip() if flag.line <= len(lines) else ""


MAX_STATEMENT_LINES = 200  # lines of a flagged statement its fingerprint reads (a longer one: its first)


def statement_at(text: str, line: int) -> str | None:
    """``definition``, newline, ``statement``, newline, ``#n`` for the innermost statement of
    Python ``text`` holding ``line`` (1-based): the dotted names of the classes and functions
    around it; all its lines, each stripped, a compound statement's body included (an ack of
    ``if os.getppid() == 1:`` does not clear another ``if`` with that header and another body);
    then which occurrence of that text in its definition it is (a second copy is not the one
    acknowledged; red team, issue 35). None when the text does not parse or no statement holds
    the line."""
    import ast
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    names, node, scope, found = [], tree, tree, None
    while True:
        inner = next((child for child in ast.iter_child_nodes(node) if isinstance(child, ast.stmt)
                      and child.lineno <= line <= (child.end_lineno or child.lineno)), None)
        if inner is None:
            break
        found = inner
        if isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and line > inner.lineno:
            names.append(inner.name)
            scope = inner
        node = inner
    if found is None:
        return None
    lines = text.splitlines()

    def shown(statement: ast.stmt) -> str:
        first = min([statement.lineno] + [d.lineno for d in getattr(statement, "decorator_list", [])])
        last = min(statement.end_lineno or statement.lineno, first + MAX_STATEMENT_LINES - 1)
        return "\n".join(part.strip() for part in lines[first - 1:last])
    own = shown(found)
    earlier = sum(1 for other in ast.walk(scope) if isinstance(other, ast.stmt) and other is not found
                  and other.lineno < found.lineno and shown(other) == own)
    return ".".join(names) + "\n" + own + f"\n#{earlier}"

def flag_ids(repo_dir: str | Path, head: str, flags: list[Flag]) -> dict[Flag, str]:
    """``fingerprint`` of each flag, its content read through one ``git cat-file`` process."""
    with BlobReader(repo_dir) as reader:
        return {flag: fingerprint(flag, flagged_content(reader, flag, head)) for flag in flags}


def parse_acks(text: str | None, source: str) -> list[Ack]:
    """The rows of an acks file. Absent or blank: none. Raises BadInputError (file, line) for
    malformed JSON, a top level that is not a list, or a row the schema refuses (an empty
    reason, an id that is not a fingerprint)."""
    return [Ack(row, line) for row, line in json_rows(text, source, _row_problem, "the acks file")]


def _row_problem(row) -> tuple[str | None, str | None]:
    """(why the row is invalid, the key to blame) or (None, None)."""
    if isinstance(row, dict) and isinstance(row.get("reason"), str) and not row["reason"].strip():
        return "reason: an acknowledgement needs a reason (what the reviewer checked)", "reason"
    problem = first_error(row, ROW_SCHEMA)
    if not problem:
        return None, None
    key = problem.split(":", 1)[0]
    return problem, key if isinstance(row, dict) and key in row else None


def with_ack(text: str | None, row: dict, source: str) -> str:
    """The acks file ``text`` with ``row`` added, one row per line so each acknowledgement is
    its own line in a diff. Raises UsageError when that flag is acknowledged already (another
    reviewer's row is never replaced), BadInputError as ``parse_acks`` does, for the old text or
    the new row."""
    rows = [a.raw for a in parse_acks(text, source)]
    held = next((r for r in rows if r["id"] == row["id"]), None)
    if held is not None:
        raise UsageError(f"flag {row['id']} is already acknowledged by {held['by']} ({held['reason']})")
    rows.append(row)
    problem = first_error(row, ROW_SCHEMA)
    if problem:
        raise BadInputError(source, f"the new acknowledgement: {problem}")
    return "[\n" + ",\n".join(json.dumps(r, ensure_ascii=False, sort_keys=True) for r in rows) + "\n]\n"


def range_authors(repo_dir: str | Path, merge_base: str, head: str) -> list[tuple[str, str]]:
    """(name, email) of every author of the commits ``merge_base..head``. Raises GitError."""
    if merge_base == head:
        return []
    out = run_git(repo_dir, "log", "--format=%an%x00%ae", f"{merge_base}..{head}").stdout
    pairs = {tuple(line.split("\0", 1)) for line in out.decode("utf-8", "replace").splitlines() if "\0" in line}
    return sorted(pairs)


def same_person(who: str, name: str, email: str) -> bool:
    """True when ``who`` (a name, an email, or ``Name <email>``) names this author: by email
    when it holds one, else by name or email, case-insensitively."""
    text = who.strip().lower()
    emails = set(re.findall(r"[^\s<>]+@[^\s<>]+", text))
    if emails:
        return bool(email) and email.lower() in emails
    return bool(text) and text in (name.lower(), email.lower())


def by_author(ack: Ack, authors: list[tuple[str, str]]) -> bool:
    """Whether ``ack`` was made by an author of the patch (it then counts for nothing): the row
    says so, or the commit that added it was authored by one (a row written by hand, or by an
    ``ack`` run under another name, in the agent's own commit)."""
    maker = f"{ack.maker[0]} <{ack.maker[1]}>" if ack.maker else None
    return any(same_person(ack.by, name, email) or (maker is not None and same_person(maker, name, email))
               for name, email in authors)


def with_makers(repo_dir: str | Path, rev: str, path: str, acks: list[Ack]) -> list[Ack]:
    """``acks`` with each one's ``maker``: the author of the oldest commit reachable from
    ``rev`` whose change to ``path`` added the row's id (``git log -S``). Raises GitError."""
    out = []
    for ack in acks:
        log = run_git(repo_dir, "log", "--reverse", "--format=%an%x00%ae", f"-S{ack.id}", rev, "--", path).stdout
        first = log.decode("utf-8", "replace").splitlines()[:1]
        maker = tuple(first[0].split("\0", 1)) if first and "\0" in first[0] else None
        out.append(Ack(ack.raw, ack.line, maker))
    return out
