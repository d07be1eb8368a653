"""``propose`` (SPEC §10): a model drafts candidate relations or seed rows into quarantine.

The flow, each step its own function so the console and tests can use any of them:

1. ``read_ticket`` and ``candidate_prompt`` / ``seeds_prompt`` build a plain-text prompt from
   the ticket, the diff under review (capped at ``DIFF_LIMIT_BYTES``), the input schema of
   the relations and leases involved, and the allowed output shape.
2. ``run_drafter`` pipes the prompt to the user's command (``shlex``-split, no shell) with a
   timeout and a cap on what it prints. A failed drafter raises ``DrafterError`` (exit 3).
3. ``drafted_items`` reads the drafter's stdout with the project's strict YAML loader
   (size and alias caps, no duplicate keys); a fenced block, several ``---`` documents,
   a list, or JSON lines (seed rows) are accepted. Nothing in it is ever executed.
4. ``judge_candidates`` stamps true provenance (relconsole's, not the model's claim) and
   validates each candidate with ``validate_candidate`` exactly as the review validates a
   quarantine file; ``judge_seed_rows`` does the same with ``validate_seed_rows``.
5. ``commit_candidates`` / ``commit_seed_rows`` commit only what passed onto the oracle
   branch as one ``quarantine:`` commit (§9), built on a temporary index from the branch's
   tip like every console commit (``commits.commit_changes``): never through the working
   tree, which is the agent's branch, and never over a file the branch already holds.
   Where the oracle branch is checked out, its drafted paths are brought up to date too.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import selectors
import shlex
import signal
import subprocess
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from relconsole.engine.defaults import DRAFTER_TIMEOUT_SECONDS
from relconsole.engine.repo import gitio
from relconsole.engine.oracle.candidates import input_shape as candidate_input_shape
from relconsole.engine.oracle.candidates import (CANDIDATE_FIELDS, PROVENANCE, SEEDS_SUFFIX,
                                          TRANSFORM_TO_KIND, SeedLineError, SeedRow, id_key, id_problem,
                                          parse_seed_line, validate_candidate, validate_seed_rows)
from relconsole.engine.oracle.catalog import COMPARES, KIND_PARAMS, Relation
from relconsole.engine.errors import BadInputError, EXIT_ABORT, RelconsoleError, UsageError
from relconsole.engine.oracle.hashcache import open_regular
from relconsole.engine.repo.gitio import TreeView
from relconsole.engine.literal import one_line
from relconsole.engine.gate.review import Review
from relconsole.engine.gate.quarantineload import input_fields, input_shape
from relconsole.engine.oracle.textedit import append_jsonl_rows, first_bad_jsonl_line, jsonl_lines
from relconsole.engine.oracle.yamlload import MAX_FILE_BYTES, dump_yaml, load_yaml_text

if TYPE_CHECKING:  # `relconsole run` builds every command's parser: commits load when a draft is committed
    from relconsole.engine.repo.commits import CommitResult

DIFF_LIMIT_BYTES = 100_000  # of `git diff` in the prompt (about 25k tokens); a note says when cut
TICKET_LIMIT_BYTES = 200_000  # a ticket larger than this is a bad input file, not a prompt
OUTPUT_LIMIT_BYTES = MAX_FILE_BYTES  # a drafter printing more is stopped: no candidate is this big
STDERR_TAIL_BYTES = 4_000  # of the drafter's stderr kept to explain a failure
DEFAULT_TIMEOUT_SECONDS = DRAFTER_TIMEOUT_SECONDS
STRAGGLER_SECONDS = 1.0  # after the drafter exits, how long its output is still read (a child may hold it)
SEEDS_FILE_LIMIT_BYTES = MAX_FILE_BYTES  # an existing quarantine seeds file larger than this is refused
SEED_EXAMPLES = 5  # existing seed rows shown to the model
REQUIRED_FIELDS = ("id", "transform", "compare", "subject", "input", "statement", "must_not")
_FENCE = re.compile(r"^[ \t]*(?P<fence>`{3,}|~{3,})[^\n]*\n(?P<body>.*?)^[ \t]*(?P=fence)[ \t]*$",
                    re.MULTILINE | re.DOTALL)
_DOC_SEPARATOR = re.compile(r"^---[ \t]*$", re.MULTILINE)
_FIELD_ORDER = ("id", "transform", "compare", "subject", "merge", "inverse", "input", "params",
                "quantum", "statement", "must_not", "owner", *PROVENANCE)


class DrafterError(RelconsoleError):
    """The drafter failed: not found, timed out, exited non-zero, printed nothing, too much,
    or something that is not YAML of the expected shape. Exit 3 (abort); nothing is written.

    ``stderr_tail`` is the end of the drafter's stderr (untrusted text: show it literally).
    """

    exit_code = EXIT_ABORT

    def __init__(self, message: str, stderr_tail: str = "", returncode: int | None = None):
        super().__init__(message)
        self.stderr_tail = stderr_tail
        self.returncode = returncode


# --- the prompt ----------------------------------------------------------------------

@dataclass(frozen=True)
class Ticket:
    """The ticket a draft is for: ``name`` as the user gave the path, ``text`` its content."""

    name: str
    text: str


@dataclass(frozen=True)
class Prompt:
    """A prompt for the drafter. ``diff_bytes`` of ``diff_total`` bytes of the diff are in it."""

    text: str
    diff_bytes: int
    diff_total: int

    @property
    def diff_truncated(self) -> bool:
        return self.diff_bytes < self.diff_total


def read_ticket(path: str | Path) -> Ticket:
    """Read a ticket file as UTF-8 text.

    Raises BadInputError (exit 5) naming the file when it is missing, unreadable, not a
    regular file (a FIFO would block, ``/dev/zero`` never ends: refused before reading), not
    UTF-8, or larger than ``TICKET_LIMIT_BYTES`` (at most one byte more is read).
    """
    try:
        fd, _ = open_regular(path)
        try:
            data = _read_at_most(fd, TICKET_LIMIT_BYTES + 1)
        finally:
            os.close(fd)
    except OSError as exc:
        raise BadInputError(str(path), f"cannot read the ticket: {exc.strerror or exc}") from None
    if len(data) > TICKET_LIMIT_BYTES:
        raise BadInputError(str(path), f"the ticket is larger than {TICKET_LIMIT_BYTES} bytes")
    try:
        return Ticket(str(path), data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise BadInputError(str(path), f"the ticket is not UTF-8 text (byte {exc.start})") from None


def _read_at_most(fd: int, limit: int) -> bytes:
    """Up to ``limit`` bytes from ``fd`` (fewer at end of file)."""
    chunks, size = [], 0
    while size < limit:
        chunk = os.read(fd, min(limit - size, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def review_diff(review: Review, limit: int = DIFF_LIMIT_BYTES) -> tuple[str, int, int]:
    """``git diff`` from the merge base to HEAD as (text, bytes kept, bytes in all).

    External diff drivers and textconv filters are off (no repository-configured program
    runs). A diff over ``limit`` bytes is cut at the last line end within the limit.
    """
    proc = gitio.run_git(review.root, "-c", "core.quotepath=off", "diff", "--no-color",
                         "--no-ext-diff", "--no-textconv", review.merge_base, review.head_sha)
    data = proc.stdout
    if len(data) <= limit:
        return data.decode("utf-8", "replace"), len(data), len(data)
    cut = data.rfind(b"\n", 0, limit) + 1 or limit
    return data[:cut].decode("utf-8", "replace"), cut, len(data)


def _section(title: str, body: str) -> str:
    return f"=== {title} ===\n{body.rstrip()}\n"


def _diff_section(review: Review, limit: int) -> tuple[str, int, int]:
    text, kept, total = review_diff(review, limit)
    title = f"Diff under review (git diff {review.merge_base[:12]}..{review.head_sha[:12]})"
    if not text.strip():
        text = "(the patch changes nothing)"
    if kept < total:
        text += (f"\n[diff truncated: the first {kept} of {total} bytes are shown, "
                 "cut at a line end]")
    return _section(title, text), kept, total


def _ticket_section(ticket: Ticket | None) -> str:
    if ticket is None:
        return _section("Ticket", "(no ticket given)")
    return _section(f"Ticket ({ticket.name})", ticket.text or "(empty)")


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=False, default=str)


def _relation_lines(review: Review, relation: Relation) -> list[str]:
    fields = input_fields(review, relation.input)
    lines = [f"relation {relation.id}: kind {relation.kind}, subject {relation.subject}, "
             f"compare {relation.compare}",
             f"  input: {_json(relation.input)}",
             f"  input fields: {', '.join(fields) if fields else '(unknown)'}"]
    if relation.params:
        lines.append(f"  params: {_json(relation.params)}")
    lines.append(f"  statement: {relation.statement}")
    return lines


def _inputs_section(review: Review) -> str:
    touched = review.touched_relations()
    if touched:
        head = "Relations owning the touched paths, and the inputs they read"
        chosen = [r for r in review.relations if r.id in touched]
    else:
        head = "No relation owns a touched path; every relation and its input"
        chosen = review.relations
    lines = [line for r in chosen for line in _relation_lines(review, r)]
    leases = [s.lease for s in review.leases if s.lease is not None]
    if leases:
        lines.append("Dataset leases a candidate may read (input: {lease: ID}); a corpus row is a "
                     "mapping of these fields, every value a string:")
    for lease in leases:
        fields = input_fields(review, {"lease": lease.id})
        lines.append(f"lease {lease.id} ({lease.path}): fields {', '.join(fields) if fields else '(unknown)'}")
    seeded = [r for r in review.relations if r.seeds_path and r.input.get("schema")]
    if seeded:
        lines.append("Seeds inputs (input: {seeds: PATH, schema: SCHEMA}); one row is one call's input:")
    for relation in seeded:
        lines.append(f"seeds {relation.seeds_path}: schema {_json(relation.input['schema'])}")
    lines += _unused_seed_files(review, {r.seeds_path for r in review.relations if r.seeds_path})
    return _section(head, "\n".join(lines) or "(the catalog has no relations)")


def _unused_seed_files(review: Review, described: set[str]) -> list[str]:
    """Seeds files of the oracle that no relation describes yet (committed for a relation to
    come): their fields as ``input_shape`` reads them, and a first row."""
    view = TreeView(review.repo, review.oracle_sha)
    paths = [p for p in view.list_files(review.layout.seeds_dir) if p.endswith(".jsonl") and p not in described]
    lines = ["Seeds files no relation reads yet (input: {seeds: PATH}, a schema optional); "
             "the subject is called with one row at a time:"] if paths else []
    for path in paths:
        rows = _jsonl_values_of(view.read_text(path) or "")
        shape = candidate_input_shape({"seeds": path}, rows, None)
        what = ("plain values (a whole row is the input)" if shape.plain
                else f"fields {', '.join(shape.fields)}" if shape.fields else "(no rows)")
        first = f"; e.g. {_json(rows[0])[:200]}" if rows else ""
        lines.append(f"seeds {path}: {len(rows)} row{'s' * (len(rows) != 1)}, {what}{first}")
    return lines


def _taken_ids(review: Review) -> list[str]:
    return sorted({r.id for r in review.relations} | {c.id for c in review.candidates})


def _candidate_shape(review: Review) -> str:
    optional = sorted(CANDIDATE_FIELDS - set(REQUIRED_FIELDS) - set(PROVENANCE))
    params = "\n".join(f"  {t}: {', '.join(sorted(KIND_PARAMS[k])) or '(none)'}"
                       for t, k in TRANSFORM_TO_KIND.items())
    taken = _taken_ids(review)
    return f"""\
Reply with YAML only: one candidate mapping, or a list of them (a ```yaml fence is fine).
Required fields: {', '.join(REQUIRED_FIELDS)}.
Optional fields: {', '.join(optional)}. No other field is allowed.
Do not write drafted_by, drafted_at or source: relconsole records them itself.
- id: new and unique, letters, digits, '_', '.', '-' (like area.short_name); not one of:
  {', '.join(taken) or '(none yet)'}
- transform: one of {', '.join(TRANSFORM_TO_KIND)}
- compare: one of {', '.join(COMPARES)} (canon and tolerance take a quantum)
- subject (and merge for split-merge, inverse for roundtrip): module:callable
- input: {{lease: LEASE_ID}} or {{seeds: PATH, schema: SCHEMA}}, from the inputs above
- params: only these keys for each transform:
{params}
- statement: one sentence naming at least one input field the relation is about
- must_not: what a test might assert instead (a literal total, a row count)
Rules (a candidate breaking one is rejected): no expected values, results or numeric
answers anywhere; no skip or xfail; no freeze fields (freeze, reruns, pass_needed,
expires, signature, lease_id); the statement or params must name a field of the input.
Example:
- id: area.shuffle_invariant
  transform: permute
  compare: canon
  subject: module:function
  input: {{lease: LEASE_ID}}
  quantum: 1.0e-9
  params: {{shuffles: 6, seed: 7}}
  statement: Shuffling the rows leaves the per-FIELD totals unchanged.
  must_not: assert a literal total computed by hand in a test
"""


def candidate_prompt(review: Review, ticket: Ticket | None = None,
                     diff_limit: int = DIFF_LIMIT_BYTES) -> Prompt:
    """The prompt asking for candidate relations (§10) for the patch under ``review``."""
    diff, kept, total = _diff_section(review, diff_limit)
    text = "\n".join([
        "You draft candidate metamorphic relations for the code change below. A relation "
        "stores no answer: it transforms the input and compares the two outputs. Humans "
        "review every candidate; nothing you write is executed.\n",
        _ticket_section(ticket), diff, _inputs_section(review),
        _section("Output", _candidate_shape(review))])
    return Prompt(text, kept, total)


def seeds_relation(review: Review, relation_id: str) -> Relation:
    """The catalog relation ``--seeds`` names, which must read seeds with an input schema.

    Raises UsageError (exit 64) for an unknown id, a lease input, or no schema.
    """
    relation = review.catalog.get(relation_id) if review.catalog else None
    if relation is None:
        raise UsageError(f"--seeds: no relation {relation_id!r} in the catalog")
    if not relation.seeds_path:
        raise UsageError(f"--seeds: {relation_id} reads the lease {relation.lease_id!r}, not seeds "
                         "(its corpus is pinned; draft candidate relations instead)")
    if not relation.input.get("schema"):
        raise UsageError(f"--seeds: {relation_id} declares no input schema to check drafted rows against")
    return relation


def existing_seed_values(review: Review, relation: Relation) -> list[Any]:
    """Seed values a drafted row may not repeat: the relation's seeds file (the review's
    oracle and the oracle branch's tip) and the rows already in its quarantine file (the
    review's and the tip's).

    Raises BadInputError (exit 5) when the tip's quarantine seeds file is a symlink or not
    JSON lines (``tip_seeds_text``); CommitRefused (exit 64) when there is no local oracle
    branch to read.
    """
    values = _jsonl_values(review.oracle_dir / relation.seeds_path)
    branch, view = oracle_tip(review)
    if view.symlink_target(relation.seeds_path) is None:
        values.extend(_jsonl_values_of(view.read_text(relation.seeds_path) or ""))
    values.extend(_jsonl_values_of(tip_seeds_text(review, relation.id, view, branch) or ""))
    values.extend(r.value for r in review.seed_rows if r.relation_id == relation.id and r.value is not None)
    return values


def _jsonl_values(path: Path) -> list[Any]:
    """The JSON values of the JSON-lines file ``path`` (an exported oracle file); unreadable
    lines are skipped, an unreadable file gives []."""
    try:
        text = path.read_bytes().decode("utf-8", "replace")
    except OSError:
        return []
    return _jsonl_values_of(text)


def _jsonl_values_of(text: str) -> list[Any]:
    values = []
    for line in jsonl_lines(text):
        try:
            values.append(json.loads(line))
        except ValueError:
            continue
    return values


def seeds_prompt(review: Review, relation_id: str, ticket: Ticket | None = None,
                 diff_limit: int = DIFF_LIMIT_BYTES) -> Prompt:
    """The prompt asking for extra input rows of one relation (§10 drafted seed rows).

    Raises UsageError as ``seeds_relation`` does.
    """
    relation = seeds_relation(review, relation_id)
    schema = relation.input["schema"]
    examples = _jsonl_values(review.oracle_dir / relation.seeds_path)[:SEED_EXAMPLES]
    diff, kept, total = _diff_section(review, diff_limit)
    about = "\n".join(_relation_lines(review, relation) + [
        f"input schema (field -> type, or {{type, min, max, choices}}): {_json(schema)}",
        "existing seed rows (do not repeat them):", *(_json(v) for v in examples)])
    shape = f"""\
Reply with JSON objects only, one per line (JSON lines), or a YAML list of mappings.
Each row has exactly these keys: {', '.join(schema)}; each value of its declared type and
within its bounds. A row is an input, never an output: no expected, result, output or answer
key. Draft rows that probe edges of the relation (bounds, empty or unusual values) and that
differ from the existing rows.
"""
    text = "\n".join([
        f"You draft extra input rows for the metamorphic relation {relation.id}. Humans review "
        "every row; nothing you write is executed.\n",
        _ticket_section(ticket), diff, _section(f"Relation {relation.id}", about),
        _section("Output", shape)])
    return Prompt(text, kept, total)


# --- the drafter ---------------------------------------------------------------------

@dataclass(frozen=True)
class DrafterRun:
    """What a drafter printed: ``stdout`` (UTF-8 text), the tail of its stderr, its exit code."""

    command: str
    stdout: str
    stderr_tail: str
    returncode: int


def drafter_argv(command: str) -> list[str]:
    """``command`` split like a POSIX shell would (no shell runs). UsageError when empty
    or unbalanced quotes."""
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise UsageError(f"--drafter {command!r}: {exc}") from None
    if not argv:
        raise UsageError("--drafter: an empty command")
    return argv


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.kill()
    except ProcessLookupError:
        pass


def _exit_watch(proc: subprocess.Popen) -> int | None:
    """A descriptor that turns readable when ``proc`` exits (Linux pidfd), or None."""
    try:
        return os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        return None


def _close_quietly(handle: Any) -> None:
    try:
        handle.close()
    except OSError:
        pass


def run_drafter(command: str, prompt: str, cwd: str | Path,
                timeout: float = DEFAULT_TIMEOUT_SECONDS,
                output_limit: int = OUTPUT_LIMIT_BYTES) -> DrafterRun:
    """Run ``command`` with ``prompt`` on its stdin, in its own process group, in ``cwd``.

    ``timeout`` is wall-clock seconds for the whole run, an upper bound: the prompt is
    written and stdout and stderr are read on this thread from the raw pipes with one
    ``selectors`` loop (no buffered reader, no thread that could keep the call waiting).
    Reading stops when both pipes close; or ``STRAGGLER_SECONDS`` after the drafter itself
    exited (a child it left behind may hold its stdout open, even from a new session that
    cannot be killed from here: its output is not waited for, what the drafter printed
    counts); or at ``timeout``, when the process group is killed. The call therefore
    returns within ``timeout`` + ``STRAGGLER_SECONDS`` and a moment to reap the drafter.

    Raises DrafterError (exit 3) when the command is not found or cannot start, runs past
    ``timeout``, prints more than ``output_limit`` bytes (stopped at once), exits non-zero
    (with the tail of its stderr), prints nothing, or prints bytes that are not UTF-8.
    UsageError for an empty or unparsable command.
    """
    argv = drafter_argv(command)
    try:
        proc = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True, bufsize=0)
    except FileNotFoundError:
        raise DrafterError(f"drafter {argv[0]!r} not found (is it installed and on PATH?)") from None
    except OSError as exc:
        raise DrafterError(f"drafter {argv[0]!r} cannot start: {exc.strerror or exc}") from None
    deadline = time.monotonic() + timeout
    out = bytearray()
    err: deque[bytes] = deque()
    kept = 0
    data = memoryview(prompt.encode("utf-8"))
    sent = 0
    timed_out = overflow = False
    readers = {proc.stdout.fileno(): "out", proc.stderr.fileno(): "err"}
    watch = _exit_watch(proc)
    exited_at: float | None = None
    selector = selectors.DefaultSelector()
    try:
        for fd, what in readers.items():
            os.set_blocking(fd, False)
            selector.register(fd, selectors.EVENT_READ, what)
        if data:
            os.set_blocking(proc.stdin.fileno(), False)
            selector.register(proc.stdin.fileno(), selectors.EVENT_WRITE, "in")
        else:
            _close_quietly(proc.stdin)
        if watch is not None:
            selector.register(watch, selectors.EVENT_READ, "exit")
        while readers and not overflow:
            now = time.monotonic()
            if exited_at is None and proc.poll() is not None:
                exited_at = now
            end = deadline if exited_at is None else min(deadline, exited_at + STRAGGLER_SECONDS)
            if now >= end:
                timed_out = exited_at is None
                break
            wait = end - now if exited_at is not None or watch is not None else min(end - now, 0.05)
            for key, _events in selector.select(wait):
                what = key.data
                if what == "exit":  # the drafter exited: poll() above sees it next round
                    selector.unregister(key.fd)
                elif what == "in":
                    try:
                        sent += os.write(key.fd, data[sent:sent + 65536])
                    except BlockingIOError:
                        continue
                    except OSError:  # the drafter closed its stdin: it need not read all of it
                        sent = len(data)
                    if sent >= len(data):
                        selector.unregister(key.fd)
                        _close_quietly(proc.stdin)
                else:
                    try:
                        chunk = os.read(key.fd, 65536)
                    except BlockingIOError:
                        continue
                    except OSError:
                        chunk = b""
                    if not chunk:
                        selector.unregister(key.fd)
                        del readers[key.fd]
                    elif what == "out":
                        out.extend(chunk)
                        if len(out) > output_limit:
                            overflow = True
                            break
                    else:
                        err.append(chunk)
                        kept += len(chunk)
                        while kept - len(err[0]) >= STDERR_TAIL_BYTES:
                            kept -= len(err.popleft())
        if not readers and not overflow and proc.poll() is None:
            # both pipes closed but the drafter runs on: wait for it until the deadline
            try:
                proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                timed_out = True
    finally:
        selector.close()
        if watch is not None:
            os.close(watch)
        if timed_out or overflow or readers or proc.poll() is None:
            _kill_group(proc)  # the drafter and what it left in its group; a new session survives
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            _close_quietly(pipe)
        proc.wait()
    tail = b"".join(err)[-STDERR_TAIL_BYTES:].decode("utf-8", "replace")
    if timed_out:
        raise DrafterError(f"drafter `{command}` did not finish within {timeout:g} s: stopped, "
                           "nothing written", tail)
    if overflow:
        raise DrafterError(f"drafter `{command}` printed more than {output_limit} bytes: stopped, "
                           "nothing written", tail)
    if proc.returncode != 0:
        raise DrafterError(f"drafter `{command}` exited with status {proc.returncode}: nothing written",
                           tail, proc.returncode)
    if not bytes(out).strip():
        raise DrafterError(f"drafter `{command}` printed nothing: nothing written", tail, 0)
    try:
        text = bytes(out).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DrafterError(f"drafter `{command}` printed bytes that are not UTF-8 (byte {exc.start})",
                           tail, 0) from None
    return DrafterRun(command, text, tail, proc.returncode)


# --- reading what the drafter printed --------------------------------------------------

SOURCE = "drafter output"


def _blocks(text: str) -> list[str]:
    """The fenced blocks of ``text`` (```yaml ... ```), or the whole text when it has none."""
    found = [m.group("body") for m in _FENCE.finditer(text)]
    if found:
        return found
    stripped = text.strip()
    if stripped.startswith(("```", "~~~")):  # an opening fence whose end was cut off
        return [stripped.split("\n", 1)[1] if "\n" in stripped else ""]
    return [text]


@dataclass(frozen=True)
class UnreadRow:
    """A JSON-lines line of drafted seed rows that is JSON but not one row: an object that
    holds a key twice (``candidates.parse_seed_line``). ``text`` is the line, ``reason`` why;
    ``judge_seed_rows`` rejects it as it stands."""

    text: str
    reason: str


def _json_lines(block: str) -> list[Any] | None:
    """Every non-blank line of ``block`` as one JSON value (an UnreadRow for an object with
    a key twice), or None when a line is not JSON."""
    values: list[Any] = []
    for line in block.splitlines():
        if not line.strip():
            continue
        try:
            json.loads(line)
        except ValueError:
            return None
        try:
            values.append(parse_seed_line(line))
        except SeedLineError as exc:
            values.append(UnreadRow(line.strip(), str(exc)))
    return values


def _documents(block: str) -> list[Any]:
    """The YAML documents of ``block`` (split at ``---`` lines), each loaded strictly."""
    docs = []
    for part in _DOC_SEPARATOR.split(block):
        if not part.strip():
            continue
        try:
            docs.append(load_yaml_text(part, SOURCE).data)
        except BadInputError as exc:
            raise DrafterError(f"the drafter's output is not YAML: {exc.one_line()}; nothing written") from None
    return docs


def drafted_items(text: str, seeds: bool = False) -> list[Any]:
    """The drafted items in a drafter's stdout: candidate mappings or (``seeds``) rows.

    Accepts a mapping, a list, several ``---`` documents, any of them inside ``` fences, and
    for seeds also JSON lines, where each line is one item (a line holding a list is one
    item, which the judge rejects, so row numbers stay line numbers; an object with a key
    twice is an UnreadRow). Items that are not mappings are returned as they are (the
    judge rejects them one by one). Raises DrafterError (exit 3) when the text is not YAML
    (syntax, duplicate keys, alias bomb), is prose (a bare scalar), or holds no item.
    """
    items: list[Any] = []
    for block in _blocks(text):
        lines = _json_lines(block) if seeds else None
        if lines is not None:  # JSON lines: each line one row, whatever it holds
            items.extend(lines)
            continue
        for doc in _documents(block):
            if doc is None:
                continue
            if isinstance(doc, list):
                items.extend(doc)
            elif isinstance(doc, dict):
                items.append(doc)
            else:
                first = str(doc).strip().splitlines()[0][:80] if str(doc).strip() else ""
                raise DrafterError(f"the drafter printed text, not YAML {'rows' if seeds else 'mappings'} "
                                   f"(it begins {first!r}); nothing written")
    if not items:
        raise DrafterError("the drafter's output holds no candidate or row; nothing written")
    return items


# --- the quarantine directory ------------------------------------------------------------
#
# Drafts go onto the oracle branch as a quarantine: commit built on a temporary index
# (commits.commit_changes), never through the working tree, which is the agent's branch.

_NOT_REAL_DIR = "propose writes only into a real directory of the oracle branch"


def oracle_tip(review: Review) -> tuple[str, TreeView]:
    """(branch, view of its tip): the oracle branch (``Review.commit_branch``, §9) that
    drafts are committed onto, as it is now. Raises CommitRefused (exit 64) when the review's
    base is not a local branch and no ``oracle_branch`` is configured."""
    branch = review.commit_branch()
    return branch, TreeView(review.repo, gitio.resolve(review.repo, branch))


def _check_tip_directory(view: TreeView, directory: str, branch: str) -> None:
    """Refuse a quarantine directory that the branch holds, or holds a parent of, as a file
    or a symlink: BadInputError (exit 5) naming that path."""
    parts = directory.strip("/").split("/")
    for number in range(1, len(parts) + 1):
        shown = "/".join(parts[:number])
        if view.symlink_target(shown) is not None:
            raise BadInputError(shown, f"is a symlink on {branch}; {_NOT_REAL_DIR}")
        if view.exists(shown):
            raise BadInputError(shown, f"is a file on {branch}, not a directory; {_NOT_REAL_DIR}")


def tip_seeds_text(review: Review, relation_id: str, view: TreeView, branch: str) -> str | None:
    """The oracle branch's quarantine seeds file of ``relation_id`` as text, or None when the
    branch has none.

    Raises BadInputError (exit 5) naming the file when it is a symlink, larger than
    ``SEEDS_FILE_LIMIT_BYTES``, not UTF-8, or a line is not JSON (with its line number):
    propose appends only to a file it can read back as JSON lines.
    """
    shown = seeds_quarantine_path(review, relation_id)
    if view.symlink_target(shown) is not None:
        raise BadInputError(shown, f"is a symlink on {branch}; {_NOT_REAL_DIR}")
    data = view.read_bytes(shown)
    if data is None:
        return None
    if len(data) > SEEDS_FILE_LIMIT_BYTES:
        raise BadInputError(shown, f"is larger than {SEEDS_FILE_LIMIT_BYTES} bytes; not appending to it")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadInputError(shown, "not UTF-8 text; not appending to it", data.count(b"\n", 0, exc.start) + 1) from None
    bad = first_bad_jsonl_line(text)
    if bad is not None:
        raise BadInputError(shown, f"not a JSON line ({bad[1]}); not appending to it", bad[0])
    return text


def check_quarantine(review: Review, seeds_relation_id: str | None = None) -> None:
    """Refuse up front (before a drafter runs) what ``commit_candidates`` /
    ``commit_seed_rows`` would refuse: no local oracle branch (CommitRefused, exit 64); a
    quarantine directory the branch holds as a file or symlink, and for
    ``seeds_relation_id`` a quarantine seeds file that is a symlink or not JSON lines
    (BadInputError, exit 5). The committers check the tip again when they commit."""
    branch, view = oracle_tip(review)
    _check_tip_directory(view, review.layout.quarantine_dir, branch)
    if seeds_relation_id is not None:
        tip_seeds_text(review, seeds_relation_id, view, branch)


def _quarantine_names(review: Review) -> dict[str, str]:
    """``id_key`` -> an id already in quarantine: the review's candidates (their ids and file
    names) and the ``*.yaml`` / ``*.yml`` file names on the oracle branch's tip."""
    names = {c.id for c in review.candidates}
    names |= {c.path.rsplit("/", 1)[-1].rsplit(".", 1)[0] for c in review.candidates}
    _branch, view = oracle_tip(review)
    listed = [p.rsplit("/", 1)[-1] for p in view.list_files(review.layout.quarantine_dir)]
    names |= {n.rsplit(".", 1)[0] for n in listed if n.endswith((".yaml", ".yml"))}
    keys: dict[str, str] = {}
    for name in sorted(names):
        keys.setdefault(id_key(name), name)
    return keys


def _commit_drafts(review: Review, branch: str, subject: str, changes: list[tuple[str, str]],
                   drafter: str) -> CommitResult:
    """One quarantine: commit of ``changes`` ((path, text) pairs) onto ``branch``."""
    from relconsole.engine.repo.commits import FileChange, commit_changes
    body = (f"Drafted by a model through relconsole propose (SPEC §10) and validated; not accepted.\n"
            f"drafter: {one_line(drafter)}\n"
            "A reviewer accepts (a catalog: commit) or deletes (a quarantine: commit) each item.")
    files = [FileChange(path, text.encode("utf-8")) for path, text in changes]
    return commit_changes(review.repo, branch, "quarantine", one_line(subject), files, body,
                          layout=review.layout)


def _subject_ids(ids: list[str], limit: int = 60) -> str:
    shown = ", ".join(ids)
    return shown if len(shown) <= limit else f"{len(ids)} candidates ({shown[:limit - 1]}…)"


# --- candidates --------------------------------------------------------------------------

@dataclass
class Drafted:
    """One drafted candidate: where it would go, why it is rejected, what was noted.

    ``path`` is repository-relative; ``text`` the YAML that was validated and is written;
    ``written`` turns True once the file exists.
    """

    index: int
    id: str
    path: str | None
    text: str = ""
    reasons: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    written: bool = False

    @property
    def valid(self) -> bool:
        return not self.reasons

    def to_json(self) -> dict:
        return {"index": self.index, "id": self.id, "path": self.path, "valid": self.valid,
                "written": self.written, "reasons": self.reasons, "notes": self.notes}


def utc_stamp(now: dt.datetime | None = None) -> str:
    """``now`` (default: the current time) as a UTC ISO 8601 instant ending in ``Z``."""
    now = now or dt.datetime.now(dt.timezone.utc)
    return now.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def provenance(drafter: str, ticket: Ticket | None, review: Review, now: dt.datetime | None = None) -> dict:
    """drafted_by / drafted_at / source as relconsole knows them: the command it ran, when,
    and what the prompt was built from (the ticket, the diff's commits)."""
    source = f"relconsole propose: diff {review.merge_base[:12]}..{review.head_sha[:12]}"
    if ticket is not None:
        source += f", ticket {ticket.name}"
    return {"drafted_by": drafter, "drafted_at": utc_stamp(now), "source": source}


def quarantine_path(review: Review, candidate_id: str) -> str:
    """``<quarantine dir>/<id>.yaml`` (repository-relative)."""
    return f"{review.layout.quarantine_dir.rstrip('/')}/{candidate_id}.yaml"


def seeds_quarantine_path(review: Review, relation_id: str) -> str:
    """``<quarantine dir>/<relation id>.seeds.jsonl`` (repository-relative)."""
    return f"{review.layout.quarantine_dir.rstrip('/')}/{relation_id}{SEEDS_SUFFIX}"


def _ordered(raw: dict) -> dict:
    head = {k: raw[k] for k in _FIELD_ORDER if k in raw}
    return head | {k: v for k, v in raw.items() if k not in head}


def _candidate_modeline(review: Review) -> Callable[[str], str]:
    """path -> the ``# yaml-language-server`` line of a candidate file at that path, when the
    oracle branch holds the candidate schema's copy (``init`` and ``demo`` write the copies),
    else "" (a line naming a schema that is not there would mislead the editor)."""
    import posixpath

    from relconsole import schemas
    from relconsole.engine.oracle.bootstrap import SCHEMAS_DIR, modeline
    oracle_dir = posixpath.dirname(review.layout.catalog)
    copy = posixpath.join(oracle_dir, SCHEMAS_DIR, schemas.file_name("candidate"))
    if TreeView(review.repo, review.base_tip).blob_id(copy) is None:
        return lambda _path: ""
    return lambda path: modeline(path, "candidate", oracle_dir)


def judge_candidates(review: Review, items: list[Any], stamp: dict) -> list[Drafted]:
    """Validate each drafted candidate as a quarantine file (§10); nothing is written.

    ``stamp`` holds the provenance relconsole records (``provenance()``); it replaces
    what the drafter wrote for those fields, and a note says when it differed. Besides
    ``validate_candidate``'s rules, an id must be filename-safe (``candidates.id_problem``), new to the
    quarantine (base ref and working tree) and unique within the draft, where ids that differ
    only by case, spacing or look-alike letters (``candidates.id_key``) are the same id, as
    for the catalog. BadInputError (exit 5) when the quarantine directory is a symlink.
    """
    catalog = review.catalog
    if catalog is None:
        raise BadInputError(review.layout.catalog, "the catalog did not load: candidates cannot be judged")
    out: list[Drafted] = []
    judged: list[tuple[Drafted, Any]] = []  # (drafted item, its Candidate) for the import check
    seen: dict[str, tuple[str, int]] = {}  # id_key -> (id, item) drafted earlier in this output
    queued = _quarantine_names(review)
    modeline_of = _candidate_modeline(review)
    for index, raw in enumerate(items, 1):
        if not isinstance(raw, dict):
            out.append(Drafted(index, f"#{index}", None,
                               reasons=[f"a candidate is a mapping, not {type(raw).__name__}"]))
            continue
        rid = raw.get("id")
        problem = id_problem(rid)
        if problem:  # checked before the id names a path
            label = rid if isinstance(rid, str) else f"#{index}"
            out.append(Drafted(index, label, None, reasons=[f"safe_id: {problem}"]))
            continue
        notes = [f"{key}: the drafter's {raw[key]!r} replaced by relconsole's record"
                 for key in PROVENANCE if key in raw and str(raw[key]) != stamp[key]]
        body = _ordered({k: v for k, v in raw.items() if k not in PROVENANCE} | stamp)
        path = quarantine_path(review, rid)
        text = modeline_of(path) + dump_yaml(body)
        candidate = validate_candidate(path, text, catalog, lambda inp: input_shape(review, inp))
        reasons = [f"{v.rule}: {v.reason}" for v in candidate.verdicts if not v.ok and v.checked]
        key = id_key(rid)
        alike = "(it differs only by case, spacing or look-alike letters)"
        if key in seen:
            other, first = seen[key]
            if other == rid:
                reasons.append(f"unique_id: drafted twice in this output (item {index})")
            else:
                reasons.append(f"unique_id: id {rid!r} collides with {other!r}, item {first} of this "
                               f"output {alike}")
        elif key in queued:
            if queued[key] == rid:
                reasons.append(f"unique_id: a candidate {rid!r} is already in quarantine")
            else:
                reasons.append(f"unique_id: id {rid!r} collides with quarantine candidate "
                               f"{queued[key]!r} {alike}")
        seen.setdefault(key, (rid, index))
        out.append(Drafted(index, rid, path, text, reasons, notes + list(candidate.notes)))
        judged.append((out[-1], candidate))
    _reject_unresolved(review, judged)
    return out


def _reject_unresolved(review: Review, judged: list[tuple[Drafted, Any]]) -> None:
    """A drafted subject (or inverse, transform, canon) that does not resolve on the base is
    rejected before it is committed: importing it happens in a subject process (§10)."""
    from relconsole.engine.gate.subjectcheck import CANDIDATE_RULE, reject_unresolved_candidates
    alive = [(item, candidate) for item, candidate in judged if item.valid]
    if not alive:
        return
    reject_unresolved_candidates(review, [candidate for _item, candidate in alive])
    for item, candidate in alive:
        verdict = candidate.verdict(CANDIDATE_RULE)
        if verdict is not None and not verdict.ok:
            item.reasons.append(f"{CANDIDATE_RULE}: {verdict.reason}")


def commit_candidates(review: Review, drafted: list[Drafted], drafter: str) -> CommitResult | None:
    """Commit each valid candidate as a new file in quarantine: one ``quarantine:`` commit
    onto the oracle branch (§9, §10; a temporary index, the user's work untouched), or None
    when nothing is valid. A path the branch already holds (anything at that name) is never
    replaced: that candidate gets a reason instead. Sets ``written`` on what was committed.

    Raises CommitRefused (exit 64: no local oracle branch, the branch moved meanwhile, or a
    drafted path has uncommitted work where the branch is checked out) and BadInputError
    (exit 5: the branch holds the quarantine directory as a file or symlink).
    """
    pending = [item for item in drafted if item.valid and item.path is not None]
    if not pending:
        return None
    branch, view = oracle_tip(review)
    _check_tip_directory(view, review.layout.quarantine_dir, branch)
    for item in pending:
        if view.exists(item.path) or view.list_files(item.path):
            item.reasons.append(f"unique_id: {item.path} already exists on {branch}")
    pending = [item for item in pending if item.valid]
    if not pending:
        return None
    changes = [(item.path, item.text) for item in pending]
    result = _commit_drafts(review, branch, f"draft {_subject_ids([i.id for i in pending])}", changes, drafter)
    for item in pending:
        item.written = True
    return result


# --- seed rows ---------------------------------------------------------------------------

@dataclass
class DraftedRow:
    """One drafted seed row: its place in the draft, its JSON line, and why it is rejected.

    Once committed, ``line`` is its 1-based line in the quarantine file and ``id`` its stable
    ``row-…`` id (what ``relconsole accept`` and ``delete`` take; the line moves, the id not).
    """

    index: int
    text: str
    reasons: list[str] = field(default_factory=list)
    line: int | None = None
    id: str | None = None

    @property
    def valid(self) -> bool:
        return not self.reasons

    def to_json(self) -> dict:
        return {"index": self.index, "row": self.text, "valid": self.valid,
                "line": self.line, "id": self.id, "reasons": self.reasons}


def _plain_json(value: Any) -> str:
    """``value`` as one JSON line; YAML dates become ISO text. TypeError for other values."""
    def default(item: Any) -> str:
        if isinstance(item, (dt.date, dt.datetime)):
            return item.isoformat()
        raise TypeError(f"{type(item).__name__} is not JSON")
    return json.dumps(value, ensure_ascii=False, default=default)


def judge_seed_rows(review: Review, relation_id: str, items: list[Any]) -> list[DraftedRow]:
    """Validate drafted rows for ``relation_id`` with ``validate_seed_rows`` (§10): exactly
    the schema's keys, types and bounds, no answer-like key, no duplicate of an existing
    seed, of a row already in its quarantine file, or of another drafted row."""
    relation = seeds_relation(review, relation_id)
    rows: list[DraftedRow] = []
    for index, value in enumerate(items, 1):
        if isinstance(value, UnreadRow):
            rows.append(DraftedRow(index, value.text, [value.reason]))
            continue
        try:
            rows.append(DraftedRow(index, _plain_json(value)))
        except (TypeError, ValueError) as exc:
            rows.append(DraftedRow(index, repr(value)[:200], [f"not a JSON value: {exc}"]))
    judged = [r for r in rows if r.valid]
    verdicts = validate_seed_rows(seeds_quarantine_path(review, relation_id),
                                  "".join(r.text + "\n" for r in judged), review.catalog,
                                  existing_seed_values(review, relation))
    for row, verdict in zip(judged, verdicts):
        row.reasons.extend(verdict.reasons)
    return rows


def commit_seed_rows(review: Review, relation_id: str, rows: list[DraftedRow],
                     drafter: str) -> tuple[str, CommitResult] | None:
    """Append the valid rows to ``<quarantine dir>/<relation id>.seeds.jsonl`` as the oracle
    branch holds it now (every existing byte kept) in one ``quarantine:`` commit (§9, §10);
    returns (that path, the commit), or None when no row is valid. Sets each committed
    row's ``line`` and stable ``id``.

    Raises what ``commit_candidates`` raises, and BadInputError (exit 5) naming the file
    when the branch's copy is a symlink or not JSON lines (``tip_seeds_text``).
    """
    valid = [r for r in rows if r.valid]
    if not valid:
        return None
    branch, view = oracle_tip(review)
    _check_tip_directory(view, review.layout.quarantine_dir, branch)
    relative = seeds_quarantine_path(review, relation_id)
    before = tip_seeds_text(review, relation_id, view, branch) or ""
    after = append_jsonl_rows(before, [json.loads(r.text) for r in valid])
    count = len(valid)
    result = _commit_drafts(review, branch, f"draft {count} seed row{'s' * (count != 1)} for {relation_id}",
                            [(relative, after)], drafter)
    first = len(jsonl_lines(after)) - count + 1
    for offset, row in enumerate(valid):
        row.line = first + offset
        row.id = SeedRow(relative, relation_id, row.line, row.text, json.loads(row.text), []).id
    return relative, result
