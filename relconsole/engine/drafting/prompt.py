"""The prompts of ``propose`` (SPEC §10): the ticket, the diff under review (capped at
``DIFF_LIMIT_BYTES``), the library's public functions (``apioutline``), the input schema of the relations and leases involved, and the output
shape allowed, as plain text for a drafter: ``candidate_prompt`` for candidate relations,
``seeds_prompt`` for extra seed rows of one relation (with the seed values a row may not repeat).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from relconsole.engine.drafting.apioutline import api_outline, library_modules, outline_roots
from relconsole.engine.drafting.quarantine import oracle_tip, tip_seeds_text
from relconsole.engine.errors import BadInputError, UsageError, did_you_mean
from relconsole.engine.gate.quarantineload import input_fields
from relconsole.engine.gate.review import Review
from relconsole.engine.oracle.candidates import input_shape as candidate_input_shape
from relconsole.engine.oracle.candidates import CANDIDATE_FIELDS, PROVENANCE, TRANSFORM_TO_KIND
from relconsole.engine.oracle.catalog import COMPARES, KIND_PARAMS, Relation
from relconsole.engine.oracle.hashcache import open_regular
from relconsole.engine.oracle.seedrows import json_kind
from relconsole.engine.oracle.textedit import jsonl_lines
from relconsole.engine.repo import gitio
from relconsole.engine.repo.treeview import TreeView

DIFF_LIMIT_BYTES = 100_000  # of `git diff` in the prompt (about 25k tokens); a note says when cut
TICKET_LIMIT_BYTES = 200_000  # a ticket larger than this is a bad input file, not a prompt
SEED_EXAMPLES = 5  # existing seed rows shown to the model
REQUIRED_FIELDS = ("id", "transform", "compare", "subject", "input", "statement", "must_not")


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
        _ticket_section(ticket), diff, _library_section(review), _inputs_section(review),
        _section("Output", _candidate_shape(review))])
    return Prompt(text, kept, total)


def _library_section(review: Review) -> str:
    """The public API a relation's ``subject`` can name (``apioutline``): of the Python files
    the patch touches, or of the whole tree when it touches none (adoption on the base)."""
    touched = [b.path for b in review.bindings if b.path.endswith(".py")]
    files = touched or _tree_files(review)
    outline = api_outline(TreeView(review.repo, review.head_sha), library_modules(files),
                          outline_roots(review.layout.import_paths, files))
    scope = "the Python files the patch touches" if touched else "the repository"
    return _section(f"Library ({scope}: public functions and methods, parsed from HEAD, never run; "
                    "a subject is module:name)", outline or "(no public Python function found)")


def _tree_files(review: Review) -> list[str]:
    listing = gitio.run_git(review.root, "ls-tree", "-r", "-z", "--name-only", review.head_sha).stdout
    return [p.decode("utf-8", "surrogateescape") for p in listing.split(b"\0") if p]


def seeds_relation(review: Review, relation_id: str) -> Relation:
    """The catalog relation ``--seeds`` names, which must read seeds (with an input schema,
    or without one: rows then take the shape of its seeds, plain values included).

    Raises UsageError (exit 64) for an unknown id or a lease input.
    """
    relation = review.catalog.get(relation_id) if review.catalog else None
    if relation is None:
        known = review.catalog.relations if review.catalog else ()
        raise UsageError(f"--seeds: no relation {relation_id!r} in the catalog{did_you_mean(relation_id, known)}")
    if not relation.seeds_path:
        raise UsageError(f"--seeds: {relation_id} reads the lease {relation.lease_id!r}, not seeds "
                         "(its corpus is pinned; draft candidate relations instead)")
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


def seed_file_values(review: Review, relation: Relation) -> list[Any]:
    """The values of ``relation``'s seeds file in the review's oracle (the shapes a drafted
    row of a relation without an input schema must have)."""
    return _jsonl_values(review.oracle_dir / relation.seeds_path)


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


def _seed_shape(schema: dict | None, values: list[Any]) -> str:
    """The Output section of the seeds prompt: the schema's keys, or (no schema) the JSON
    types of the existing rows, quoted strings for strings."""
    if schema:
        head = (f"Reply with JSON objects only, one per line (JSON lines), or a YAML list of mappings.\n"
                f"Each row has exactly these keys: {', '.join(schema)}; each value of its declared type and\n"
                "within its bounds.")
    else:
        kinds = " or ".join(sorted({json_kind(v) for v in values})) or "value"
        head = (f"Reply with one JSON {kinds} a line (JSON lines), of the shape of the existing rows\n"
                "(a string in double quotes, as \"text\"), or a YAML list of them.")
    return head + """ A row is an input, never an output: no expected, result, output or answer
key. Draft rows that probe edges of the relation (bounds, empty or unusual values) and that
differ from the existing rows.
"""


def seeds_prompt(review: Review, relation_id: str, ticket: Ticket | None = None,
                 diff_limit: int = DIFF_LIMIT_BYTES) -> Prompt:
    """The prompt asking for extra input rows of one relation (§10 drafted seed rows).

    Raises UsageError as ``seeds_relation`` does.
    """
    relation = seeds_relation(review, relation_id)
    schema = relation.input.get("schema")
    values = seed_file_values(review, relation)
    examples = values[:SEED_EXAMPLES]
    diff, kept, total = _diff_section(review, diff_limit)
    declared = (f"input schema (field -> type, or {{type, min, max, choices}}): {_json(schema)}" if schema
                else "no input schema: each row has the shape of the existing rows")
    about = "\n".join(_relation_lines(review, relation) + [
        declared, "existing seed rows (do not repeat them):", *(_json(v) for v in examples)])
    shape = _seed_shape(schema, values)
    text = "\n".join([
        f"You draft extra input rows for the metamorphic relation {relation.id}. Humans review "
        "every row; nothing you write is executed.\n",
        _ticket_section(ticket), diff, _section(f"Relation {relation.id}", about),
        _section("Output", shape)])
    return Prompt(text, kept, total)
