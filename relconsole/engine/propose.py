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
5. ``write_candidates`` / ``write_seed_rows`` write only what passed, into the quarantine
   directory of the working tree, atomically, never overwriting a file. Nothing is committed.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import secrets
import shlex
import signal
import subprocess
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from relconsole.engine import gitio
from relconsole.engine.candidates import (CANDIDATE_FIELDS, PROVENANCE, SEEDS_SUFFIX,
                                          TRANSFORM_TO_KIND, id_problem, validate_candidate,
                                          validate_seed_rows)
from relconsole.engine.catalog import COMPARES, KIND_PARAMS, Relation
from relconsole.engine.errors import BadInputError, EXIT_ABORT, RelconsoleError, UsageError
from relconsole.engine.review import Review, input_fields
from relconsole.engine.textedit import append_jsonl_rows, jsonl_lines
from relconsole.engine.yamlload import MAX_FILE_BYTES, dump_yaml, load_yaml_text

DIFF_LIMIT_BYTES = 100_000  # of `git diff` in the prompt (about 25k tokens); a note says when cut
TICKET_LIMIT_BYTES = 200_000  # a ticket larger than this is a bad input file, not a prompt
OUTPUT_LIMIT_BYTES = MAX_FILE_BYTES  # a drafter printing more is stopped: no candidate is this big
STDERR_TAIL_BYTES = 4_000  # of the drafter's stderr kept to explain a failure
DEFAULT_TIMEOUT_SECONDS = 300.0
STRAGGLER_SECONDS = 10.0  # after the drafter exits, how long its children may hold its output open
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

    Raises BadInputError (exit 5) naming the file when it is missing, unreadable, not
    UTF-8, or larger than ``TICKET_LIMIT_BYTES``.
    """
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise BadInputError(str(path), f"cannot read the ticket: {exc.strerror or exc}") from None
    if len(data) > TICKET_LIMIT_BYTES:
        raise BadInputError(str(path), f"the ticket is larger than {TICKET_LIMIT_BYTES} bytes")
    try:
        return Ticket(str(path), data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise BadInputError(str(path), f"the ticket is not UTF-8 text (byte {exc.start})") from None


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
    return _section(head, "\n".join(lines) or "(the catalog has no relations)")


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
    """Seed values a drafted row may not repeat: the seeds file (base ref's and working
    tree's) and the rows already in its quarantine file (base ref's and working tree's)."""
    values: list[Any] = []
    quarantine = seeds_quarantine_path(review, relation.id)
    for path in (review.oracle_dir / relation.seeds_path, review.root / relation.seeds_path,
                 review.root / quarantine):
        values.extend(_jsonl_values(path))
    values.extend(r.value for r in review.seed_rows if r.relation_id == relation.id and r.value is not None)
    return values


def _jsonl_values(path: Path) -> list[Any]:
    try:
        text = path.read_bytes().decode("utf-8", "replace")
    except OSError:
        return []
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


def run_drafter(command: str, prompt: str, cwd: str | Path,
                timeout: float = DEFAULT_TIMEOUT_SECONDS,
                output_limit: int = OUTPUT_LIMIT_BYTES) -> DrafterRun:
    """Run ``command`` with ``prompt`` on its stdin, in its own process group, in ``cwd``.

    ``timeout`` is wall-clock seconds for the whole run. Raises DrafterError (exit 3) when
    the command is not found or cannot start, runs past ``timeout`` (its process group is
    killed), prints more than ``output_limit`` bytes, exits non-zero (with the tail of its
    stderr), prints nothing, or prints bytes that are not UTF-8. UsageError for an empty
    or unparsable command.
    """
    argv = drafter_argv(command)
    try:
        proc = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True)
    except FileNotFoundError:
        raise DrafterError(f"drafter {argv[0]!r} not found (is it installed and on PATH?)") from None
    except OSError as exc:
        raise DrafterError(f"drafter {argv[0]!r} cannot start: {exc.strerror or exc}") from None
    out = bytearray()
    err: deque[bytes] = deque()
    overflow = threading.Event()

    def feed() -> None:
        try:
            proc.stdin.write(prompt.encode("utf-8"))
        except (BrokenPipeError, OSError):
            pass  # the drafter need not read all of it
        finally:
            try:
                proc.stdin.close()
            except OSError:
                pass

    def drain_out() -> None:
        try:
            while chunk := proc.stdout.read1(65536):
                out.extend(chunk)
                if len(out) > output_limit:
                    overflow.set()
                    _kill_group(proc)
                    return
        except (OSError, ValueError):
            return  # the pipe was closed under us (a straggler kept it open)

    def drain_err() -> None:
        kept = 0
        try:
            while chunk := proc.stderr.read1(65536):
                err.append(chunk)
                kept += len(chunk)
                while kept - len(err[0]) >= STDERR_TAIL_BYTES:
                    kept -= len(err.popleft())
        except (OSError, ValueError):
            return

    threads = [threading.Thread(target=t, daemon=True) for t in (feed, drain_out, drain_err)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + timeout
    timed_out = False
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill_group(proc)
        proc.wait()
    for thread in threads:  # a child the drafter left behind may still hold the pipes
        thread.join(timeout=min(max(0.0, deadline - time.monotonic()), STRAGGLER_SECONDS))
    if any(t.is_alive() for t in threads):
        _kill_group(proc)
        for thread in threads:
            thread.join(timeout=STRAGGLER_SECONDS)
    for pipe in (proc.stdout, proc.stderr):
        try:
            pipe.close()
        except OSError:
            pass
    tail = b"".join(err)[-STDERR_TAIL_BYTES:].decode("utf-8", "replace")
    if timed_out:
        raise DrafterError(f"drafter `{command}` did not finish within {timeout:g} s: stopped, "
                           "nothing written", tail)
    if overflow.is_set():
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


def _json_lines(block: str) -> list[Any] | None:
    """Every non-blank line of ``block`` as JSON, or None when one is not JSON."""
    values = []
    for line in block.splitlines():
        if not line.strip():
            continue
        try:
            values.append(json.loads(line))
        except ValueError:
            return None
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
    for seeds also JSON lines. Items that are not mappings are returned as they are (the
    judge rejects them one by one). Raises DrafterError (exit 3) when the text is not YAML
    (syntax, duplicate keys, alias bomb), is prose (a bare scalar), or holds no item.
    """
    items: list[Any] = []
    for block in _blocks(text):
        lines = _json_lines(block) if seeds else None
        if lines is not None:  # JSON lines: each line a row (a line holding a list: its rows)
            for value in lines:
                if isinstance(value, list):
                    items.extend(value)
                else:
                    items.append(value)
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


def _in_quarantine(review: Review, candidate_id: str) -> bool:
    if any(c.id == candidate_id for c in review.candidates):
        return True
    stem = review.root / review.layout.quarantine_dir / candidate_id
    return any(Path(f"{stem}{suffix}").exists() for suffix in (".yaml", ".yml"))


def _ordered(raw: dict) -> dict:
    head = {k: raw[k] for k in _FIELD_ORDER if k in raw}
    return head | {k: v for k, v in raw.items() if k not in head}


def judge_candidates(review: Review, items: list[Any], stamp: dict) -> list[Drafted]:
    """Validate each drafted candidate as a quarantine file (§10); nothing is written.

    ``stamp`` holds the provenance relconsole records (``provenance()``); it replaces
    what the drafter wrote for those fields, and a note says when it differed. Besides
    ``validate_candidate``'s rules, an id must be filename-safe (``candidates.id_problem``), new to the
    quarantine (base ref and working tree) and unique within the draft.
    """
    catalog = review.catalog
    if catalog is None:
        raise BadInputError(review.layout.catalog, "the catalog did not load: candidates cannot be judged")
    out: list[Drafted] = []
    seen: set[str] = set()
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
        text = dump_yaml(body)
        candidate = validate_candidate(path, text, catalog, lambda inp: input_fields(review, inp))
        reasons = [f"{v.rule}: {v.reason}" for v in candidate.verdicts if not v.ok and v.checked]
        if rid in seen:
            reasons.append(f"unique_id: drafted twice in this output (item {index})")
        elif _in_quarantine(review, rid):
            reasons.append(f"unique_id: a candidate {rid!r} is already in quarantine")
        seen.add(rid)
        out.append(Drafted(index, rid, path, text, reasons, notes + list(candidate.notes)))
    return out


def _create_exclusive(target: Path, data: bytes) -> None:
    """Write ``data`` to ``target`` atomically; FileExistsError when ``target`` exists.

    The bytes go to a temporary file first and are hard-linked into place (link never
    replaces a file); where hard links are not supported, an O_EXCL create is used.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.relconsole-{secrets.token_hex(4)}.tmp")
    try:
        with open(tmp, "xb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        try:
            os.link(tmp, target)
        except FileExistsError:
            raise
        except OSError:
            with open(target, "xb") as handle:
                handle.write(data)
    finally:
        tmp.unlink(missing_ok=True)


def write_candidates(review: Review, drafted: list[Drafted]) -> list[Drafted]:
    """Write each valid candidate to its quarantine file in the working tree; return them.

    A file that appeared meanwhile is not overwritten: the candidate gets a reason instead.
    """
    for item in drafted:
        if not item.valid or item.path is None:
            continue
        try:
            _create_exclusive(review.root / item.path, item.text.encode("utf-8"))
        except FileExistsError:
            item.reasons.append(f"unique_id: {item.path} already exists")
            continue
        item.written = True
    return drafted


# --- seed rows ---------------------------------------------------------------------------

@dataclass
class DraftedRow:
    """One drafted seed row: its place in the draft, its JSON line, and why it is rejected.

    ``line`` is its 1-based line in the quarantine file once written (``PATH:LINE`` is
    what ``relconsole accept`` and ``delete`` take).
    """

    index: int
    text: str
    reasons: list[str] = field(default_factory=list)
    line: int | None = None

    @property
    def valid(self) -> bool:
        return not self.reasons

    def to_json(self) -> dict:
        return {"index": self.index, "row": self.text, "valid": self.valid,
                "line": self.line, "reasons": self.reasons}


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


def write_seed_rows(review: Review, relation_id: str, rows: list[DraftedRow]) -> str | None:
    """Append the valid rows to ``<quarantine dir>/<relation id>.seeds.jsonl`` in the working
    tree (every existing byte kept; the file is replaced atomically). Returns its path, or
    None when no row is valid."""
    valid = [r for r in rows if r.valid]
    if not valid:
        return None
    relative = seeds_quarantine_path(review, relation_id)
    target = review.root / relative
    try:
        before = target.read_bytes().decode("utf-8", "surrogateescape")
    except FileNotFoundError:
        before = ""
    after = append_jsonl_rows(before, [json.loads(r.text) for r in valid])
    first = len(jsonl_lines(after)) - len(valid) + 1
    for offset, row in enumerate(valid):
        row.line = first + offset
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.relconsole-{secrets.token_hex(4)}.tmp")
    try:
        with open(tmp, "xb") as handle:
            handle.write(after.encode("utf-8", "surrogateescape"))
            handle.flush()
            os.fsync(handle.fileno())
        if target.exists():
            os.chmod(tmp, target.stat().st_mode & 0o7777)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return relative


def commit_hint(review: Review, paths: list[str], what: str) -> list[str]:
    """Shell lines that commit ``paths`` as one ``quarantine:`` commit (§9) onto the oracle
    branch, where the review reads quarantine from. relconsole never runs them."""
    quoted = " ".join(shlex.quote(p) for p in paths)
    message = shlex.quote(f"quarantine: {what} (relconsole propose)")
    commit = f"git add -- {quoted} && git commit -m {message} -- {quoted}"
    branch = review.layout.target_branch
    if gitio.current_branch(review.repo) == branch:
        return [commit]
    return [f"git switch {shlex.quote(branch)} && {commit} && git switch -"]
