"""Quarantine (SPEC §10): model-drafted candidate relations and drafted seed rows.

Everything here is untrusted. Validation fails closed and says why for each rule;
nothing is executed. A candidate that passes every rule can be accepted, which writes
it into the catalog in catalog form; drafted seed rows are judged one row at a time.

A candidate is judged by the rules in ``RULES``, in the order a reviewer reads them:
first the file (its size, its syntax, one document, no aliases), then its content.
``Candidate.verdicts`` always holds one verdict per rule in that order; a rule that
could not run because an earlier one failed (nothing to read after a syntax error) is
"not checked" (``checked`` false), which counts as failed: validation fails closed.

Keys are compared through a *skeleton* (NFKC, format and combining characters
dropped, common Cyrillic and Greek look-alikes mapped to Latin, split into words at
separators and camelCase), so ``Expected_Total``, ``expectedTotal``, `` expected ``,
``еxpected`` (Cyrillic е) and ``ex\\u200bpected`` all read as ``expected``.
"""

from __future__ import annotations

import copy
import datetime as dt
import functools
import hashlib
import json
import re
import sys
import unicodedata
from dataclasses import dataclass, field
from typing import Any, Callable

import yaml

from relconsole.engine.oracle.catalog import (KIND_PARAMS, RELATION_SCHEMA, Catalog, _relation, param_problem,
                                       answer_like, check_row)
from relconsole.engine.oracle import jsonnumbers
from relconsole.engine.errors import BadInputError
from relconsole.engine.oracle.schemacheck import first_error, shipped
from relconsole.engine.oracle.textedit import jsonl_lines
from relconsole.engine.oracle.yamlload import Loaded, _line_counter, load_yaml_text

TRANSFORM_TO_KIND = {"permute": "permutation", "replay-ingest": "replay_ingest",
                     "split-merge": "split_merge", "monotonic": "monotonic",
                     "roundtrip": "roundtrip"}
SEEDS_SUFFIX = ".seeds.jsonl"
FREEZE_KEYS = {"freeze", "reruns", "pass_needed", "expires", "signature", "lease_id"}
PROVENANCE = ("drafted_by", "drafted_at", "source")
# A candidate file's fields, as relconsole/schemas/candidate.schema.json (the editors' schema) names them.
CANDIDATE_SCHEMA = shipped("candidate")
CANDIDATE_FIELDS = set(CANDIDATE_SCHEMA["properties"])
REQUIRED = tuple(CANDIDATE_SCHEMA["required"])
WIDE_QUANTUM = 1e3  # a tolerance (or canon grid) this wide makes the predicate true for any real output
# A candidate is one relation of about fifteen short fields (the sample's are under 500 bytes).
# 64 KiB is a hundred times that and still a screenful a reviewer can read to the end; a
# larger draft is a pasted corpus, a table of answers, or padding that hides a key from the
# reviewer. The 1 MiB cap of yamlload.MAX_FILE_BYTES stays the limit for every other file.
CANDIDATE_MAX_BYTES = 64 * 1024
# An id becomes the file name ``<id>.yaml`` (``propose``) and a catalog id: ASCII letters,
# digits, '_', '.', '-', at most 200 characters, starting and ending with a letter, digit
# or '_' (no hidden file, no trailing dot that Windows drops), and no '..'.
SAFE_ID = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_.\-]{0,198}[A-Za-z0-9_])?")

# rule names, in the order a reviewer reads them
RULES = ("size_limit", "parses", "single_document", "no_aliases",
         "fields", "no_answers", "no_skip", "no_freeze_fields",
         "input_schema", "references_input", "not_always_true", "safe_id", "unique_id",
         "known_transform", "catalog_form")

_MAX_DEPTH = 32  # nesting a candidate may use; its deepest real path is input.schema.<f>.choices.<i>
_PARSER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_NUMERIC_PARAMS = frozenset({"shuffles", "seed", "splits", "step", "max", "scale"})
_TEXT_SLOTS = {("params", "field"), ("input", "lease"), ("input", "seeds")}
_NUMERIC_TEXT = re.compile(r"\s*[-+]?(?:\d[\d_]*(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?\s*")
_ANSWER_WORDS = frozenset({"expected", "expect", "expects", "expectation", "expectations", "result",
                           "results", "output", "outputs", "answer", "answers", "golden", "truth"})
_ANSWER_STEMS = ("expected", "result", "output", "answer")  # also glued to a word: expectedtotal
_SKIP_WORDS = frozenset({"skip", "skipif", "skipunless", "skiptest", "importorskip"})
_FREEZE_WORDS = frozenset({"freeze", "freezes", "frozen", "rerun", "reruns", "expires", "expiry",
                           "signature"})
_FREEZE_COMPACT = frozenset({"passneeded", "leaseid", "maxdays", "minreruns"})
# Latin look-alikes in Cyrillic and Greek (NFKC keeps them apart from Latin letters).
_LOOKALIKES = str.maketrans({
    "а": "a", "с": "c", "ԁ": "d", "е": "e", "ё": "e", "һ": "h", "і": "i", "ї": "i", "ј": "j",
    "к": "k", "ӏ": "l", "о": "o", "р": "p", "ԛ": "q", "ѕ": "s", "у": "y", "х": "x", "ԝ": "w",
    "ı": "i", "ȷ": "j", "ɡ": "g",
    "А": "A", "В": "B", "С": "C", "Е": "E", "Н": "H", "І": "I", "Ј": "J", "К": "K", "М": "M",
    "О": "O", "Р": "P", "Ѕ": "S", "Т": "T", "Х": "X", "У": "Y",
    "α": "a", "ε": "e", "ι": "i", "κ": "k", "ν": "v", "ο": "o", "ρ": "p", "τ": "t", "υ": "u",
    "Α": "A", "Β": "B", "Ε": "E", "Ζ": "Z", "Η": "H", "Ι": "I", "Κ": "K", "Μ": "M", "Ν": "N",
    "Ο": "O", "Ρ": "P", "Τ": "T", "Υ": "Y", "Χ": "X",
})
_CHUNK = re.compile(r"[A-Za-z0-9]+")
_CAMEL = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


@dataclass
class Verdict:
    """One validation rule's outcome for a candidate (§10).

    ``rule`` is a name from ``RULES``; ``ok`` is True when the rule holds; ``reason``
    says why not (when ok it may say what was found, e.g. "uses body_mass_g").
    ``checked`` is False when the rule could not run because an earlier rule failed
    (nothing to read after a syntax error); such a verdict is never ok (fail closed)
    and its reason names the rule that stopped it.
    """

    rule: str
    ok: bool
    reason: str = ""
    checked: bool = True


@dataclass
class Candidate:
    """A candidate relation file and its verdicts; ``row`` is its catalog form when valid.

    ``verdicts`` holds one Verdict per rule of ``RULES``, in that order.
    """

    path: str
    text: str
    raw: Any
    verdicts: list[Verdict] = field(default_factory=list)
    row: dict | None = None
    notes: list[str] = field(default_factory=list)  # warnings that do not block accepting

    @property
    def id(self) -> str:
        """The id the file declares, else its file name without ``.yaml``."""
        if isinstance(self.raw, dict) and isinstance(self.raw.get("id"), str):
            return self.raw["id"]
        return self.path.rsplit("/", 1)[-1].removesuffix(".yaml")

    @property
    def valid(self) -> bool:
        """True when every rule was checked and holds."""
        return bool(self.verdicts) and all(v.ok for v in self.verdicts)

    @property
    def reasons(self) -> list[str]:
        """Why the candidate is rejected: the failed rules' reasons ("not checked" left out)."""
        return [v.reason for v in self.verdicts if not v.ok and v.checked]

    def verdict(self, rule: str) -> Verdict | None:
        """The verdict of ``rule`` (a name from ``RULES``), or None when it has none."""
        return next((v for v in self.verdicts if v.rule == rule), None)

    def provenance(self) -> dict[str, str]:
        """drafted_by / drafted_at / source as text (empty when absent)."""
        raw = self.raw if isinstance(self.raw, dict) else {}
        return {k: str(raw.get(k, "")) for k in PROVENANCE}


@dataclass
class SeedRow:
    """One drafted input row: its 1-based ``line`` in ``path`` and why it is rejected."""

    path: str
    relation_id: str
    line: int
    text: str
    value: Any
    reasons: list[str]

    @property
    def valid(self) -> bool:
        return not self.reasons

    @property
    def key(self) -> str:
        """``PATH:LINE``: where the row is now (line numbers move after every accept or delete)."""
        return f"{self.path}:{self.line}"

    @property
    def id(self) -> str:
        """A stable id: ``row-`` and 12 hex digits of the sha256 of its relation and its
        canonical JSON (sorted keys; the raw text when it is not JSON). The same row keeps it
        whatever line it moves to, and no other row ever takes it."""
        try:
            canonical = json.dumps(self.value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        except (TypeError, ValueError):
            canonical = self.text
        text = f"{self.relation_id}\0{canonical}"
        try:
            data = text.encode("utf-8", "surrogateescape")  # a file's undecodable bytes, as read
        except UnicodeEncodeError:  # a lone surrogate from a JSON escape (a rejected row)
            data = text.encode("utf-8", "surrogatepass")
        digest = hashlib.sha256(data)
        return "row-" + digest.hexdigest()[:12]

    def named_by(self, token: str) -> bool:
        """Whether ``token`` (a stable id, or ``PATH:LINE`` as it is now) names this row."""
        return token in (self.id, self.key)


def _walk(value: Any, path: tuple = ()):
    """Yield (path, key, value) for every mapping entry and list item, depth first."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield path + (key,), key, item
            yield from _walk(item, path + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield path + (index,), None, item
            yield from _walk(item, path + (index,))


def _dotted(path: tuple) -> str:
    return ".".join(str(p) for p in path)


# --- reading keys and text the way a reviewer would -----------------------------------------

def _skeleton(text: str) -> str:
    """``text`` with compatibility forms folded (NFKC), accents, zero-width and other format
    characters dropped, control characters made spaces and Cyrillic/Greek look-alikes mapped
    to Latin letters. Case is kept (camelCase still splits)."""
    decomposed = unicodedata.normalize("NFKD", unicodedata.normalize("NFKC", text))
    kept = []
    for char in decomposed:
        category = unicodedata.category(char)
        if category in ("Mn", "Me", "Cf"):
            continue
        kept.append(" " if category == "Cc" else char)
    return "".join(kept).translate(_LOOKALIKES)


def _chunks(text: str) -> list[str]:
    """Runs of ASCII letters and digits in the skeleton of ``text``."""
    return _CHUNK.findall(_skeleton(text))


def _words(text: str) -> list[str]:
    """Lower-case words of ``text``: chunks split at camelCase and digit boundaries."""
    return [word.lower() for chunk in _chunks(text) for word in _CAMEL.findall(chunk)]


def _answer_key(key: Any) -> bool:
    """True for a key that names a stored answer in any spelling: ``Expected_Total``,
    ``expectedTotal``, ``expected-total``, `` expected ``, ``totalexpected``, ``еxpected``."""
    text = str(key)
    if answer_like(text.strip()):
        return True
    words = _words(text)
    if any(word in _ANSWER_WORDS for word in words):
        return True
    compact = "".join(words)
    return compact.startswith(_ANSWER_STEMS) or compact.endswith(_ANSWER_STEMS) \
        or compact.endswith(tuple(stem + "s" for stem in _ANSWER_STEMS))


def _skip_text(text: str) -> bool:
    """True when ``text`` carries a skip or xfail mark in any spelling (``pytest.mark.skip``,
    ``@skip``, ``skipIf``, ``skip_if``, ``self.skipTest``, ``importorskip``, ``XFail``), but
    not for words that merely contain "skip" (``skipping``, ``skipper``)."""
    for chunk in _chunks(text):
        lowered = chunk.lower()
        if "xfail" in lowered or lowered in _SKIP_WORDS:
            return True
        if any(word.lower() in _SKIP_WORDS for word in _CAMEL.findall(chunk)):
            return True
    return False


def _freeze_key(key: Any) -> bool:
    """True for a key that belongs to the freeze file (§6) in any spelling: ``Freeze``,
    ``passNeeded``, ``min-reruns``, ``freeze_until``, ``lease id``."""
    text = str(key)
    if text.strip() in FREEZE_KEYS:
        return True
    words = _words(text)
    compact = "".join(words)
    return any(word in _FREEZE_WORDS for word in words) or compact in _FREEZE_COMPACT \
        or compact.startswith(("freez", "frozen", "rerun"))


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _number(value: Any) -> float:
    """``value`` as a float (YAML 1.1 reads ``1e6`` as a string), or 0.0 when it is none."""
    if isinstance(value, bool):
        return 0.0
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError):
        return 0.0


# --- the file: size, syntax, one document, no aliases ---------------------------------------

def _read(path: str, text: str) -> tuple[list[Verdict], Any]:
    """The file-level verdicts (``size_limit`` .. ``no_aliases``) and the loaded mapping.

    The loaded value is None unless every file-level rule holds. The parser's events are
    read first (cheap, no alias is ever expanded), so each failure gets its own rule.
    """
    size = len(text.encode("utf-8", "surrogateescape"))
    if size > CANDIDATE_MAX_BYTES:
        return [Verdict("size_limit", False, f"{path}: {size} bytes; a candidate may have at most "
                                             f"{CANDIDATE_MAX_BYTES} (one relation is a few hundred)")], None
    out = [Verdict("size_limit", True, f"{size} bytes")]
    line_of = _line_counter(text)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:  # bytes decoded with surrogateescape: not UTF-8 text
        line = text.count("\n", 0, exc.start) + 1
        return out + [Verdict("parses", False, f"{path}:{line}: not UTF-8 text")], None
    depth, deepest = 0, None
    try:
        events = []
        for event in yaml.parse(text, Loader=_PARSER):
            events.append(event)
            if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                depth += 1
                if depth > _MAX_DEPTH:
                    deepest = event
                    break
            elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                depth -= 1
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{path}:{line_of(mark)}" if mark else path
        problem = " ".join(str(exc.problem or exc.context or "not YAML").split())
        return out + [Verdict("parses", False, f"{where}: invalid YAML: {problem}")], None
    except yaml.reader.ReaderError as exc:  # a character YAML does not allow (NUL, other C0 controls)
        line = text.count("\n", 0, exc.position) + 1
        code = exc.character if isinstance(exc.character, int) else ord(exc.character[:1] or "\0")
        return out + [Verdict("parses", False, f"{path}:{line}: invalid YAML: character U+{code:04X} "
                                               "is not allowed")], None
    except yaml.YAMLError as exc:
        return out + [Verdict("parses", False, f"{path}: invalid YAML: {' '.join(str(exc).split())}")], None
    if deepest is not None:
        return out + [Verdict("parses", False, f"{path}:{line_of(deepest.start_mark)}: nested more than "
                                               f"{_MAX_DEPTH} levels deep")], None
    docs = [e for e in events if isinstance(e, yaml.DocumentStartEvent)]
    single = Verdict("single_document", True)
    if len(docs) > 1:
        single = Verdict("single_document", False,
                         f"{path}:{line_of(docs[1].start_mark)}: {len(docs)} YAML documents in one file; "
                         "a candidate is one document (no '---' between relations)")
    aliases = [e for e in events if isinstance(e, yaml.AliasEvent)]
    no_alias = Verdict("no_aliases", True)
    if aliases:
        no_alias = Verdict("no_aliases", False,
                           f"{path}:{line_of(aliases[0].start_mark)}: YAML alias *{aliases[0].anchor} "
                           f"({len(aliases)} in all): a candidate spells every value out, so the text "
                           "a reviewer reads is the whole relation")
    if not (single.ok and no_alias.ok):
        return out + [Verdict("parses", True), single, no_alias], None
    try:
        raw = load_yaml_text(text, path).data
    except BadInputError as exc:  # duplicate keys, merge keys, unknown tags, impossible dates
        return out + [Verdict("parses", False, exc.one_line()), single, no_alias], None
    return out + [Verdict("parses", True), single, no_alias], raw


@dataclass(frozen=True)
class InputShape:
    """What a candidate's input holds, as the review reads it from the oracle (§3, §10).

    ``fields``: the names a predicate may reference (the input schema's keys, a corpus
    header, the union of the keys of object seeds), None when they cannot be known;
    ``plain``: seeds of plain values (strings, numbers, lists): no fields, the subject is
    compared on each whole value; ``problem``: why the candidate's own ``input.schema``
    cannot be trusted (it contradicts the rows or the header it reads, or the seeds file is
    missing), None when it can.
    """

    fields: list[str] | None = None
    plain: bool = False
    problem: str | None = None


def input_shape(inp: dict, rows: list[Any] | None, header: list[str] | None,
                catalog_schema: dict | None = None) -> InputShape:
    """The InputShape of a candidate's ``input`` mapping, from what the oracle holds: the
    seeds file's ``rows`` (parsed JSON values, None when the file is not in the oracle),
    a lease corpus's ``header`` (None when unknown) and ``catalog_schema`` (a catalog
    relation's schema for the same seeds file). A schema the candidate declares itself is
    checked against every row (``check_row``: keys, types, bounds; keys declared
    ``optional`` may be missing) or against the header, never trusted (§10)."""
    schema = inp.get("schema") if isinstance(inp.get("schema"), dict) and inp.get("schema") else None
    if inp.get("lease"):
        if header is None or schema is None:
            return InputShape(list(schema) if schema else header)
        absent = [k for k in schema if k not in header]  # optional or not: every corpus row has the header's keys
        problem = (f"input.schema names {', '.join(map(repr, absent))}, which the corpus header does not have "
                   f"({', '.join(header)})") if absent else None
        return InputShape(list(schema), problem=problem)
    seeds = inp.get("seeds")
    if not isinstance(seeds, str):
        return InputShape(list(schema) if schema else None)
    if rows is None:
        return InputShape(None, problem=f"the seeds file {seeds} is not in the oracle")
    if not rows:
        return InputShape(None, problem=f"the seeds file {seeds} has no rows")
    if schema is not None:
        for number, row in enumerate(rows, 1):
            reasons = check_row(row, schema)
            if reasons:
                return InputShape(list(schema), problem=f"input.schema does not fit {seeds} row {number}: {reasons[0]}")
        ghosts = [k for k in schema if not any(isinstance(row, dict) and k in row for row in rows)]
        if ghosts:  # an optional field no row has: raising or comparing it changes nothing
            return InputShape(list(schema), problem=f"input.schema declares {', '.join(map(repr, ghosts))}, which no "
                                                    f"row of {seeds} has")
        return InputShape(list(schema))
    if catalog_schema:
        return InputShape(list(catalog_schema))
    keys = list(dict.fromkeys(k for row in rows if isinstance(row, dict) for k in row if isinstance(k, str)))
    if keys:
        return InputShape(keys)
    return InputShape(None, plain=bool(rows))


FILE_RULES = ("size_limit", "parses", "single_document", "no_aliases", "fields", "no_answers", "no_skip",
              "no_freeze_fields", "safe_id", "known_transform", "catalog_form")
"""The rules whose verdict depends on the file alone (its path and text), never on the
catalog or the oracle's inputs: what ``read_candidate`` judges and a cache may keep by blob."""


@dataclass(frozen=True)
class CandidateRead:
    """``read_candidate``'s result: the file-only ``verdicts`` (rules of ``FILE_RULES``, in
    ``RULES`` order, those an earlier failure stopped left out), the loaded document ``raw``
    (None unless the file-level rules hold; the content rules ran when it is a mapping)
    and its catalog form ``row`` (None unless ``catalog_form`` holds). ``digest``: sha256 of the text judged (see ``judges``)."""

    verdicts: tuple[Verdict, ...]
    raw: Any
    row: dict | None
    digest: str

    def judges(self, text: str) -> bool:
        """Whether this is the reading of ``text``: its digest is the text's, and its shape
        is one ``read_candidate`` makes. A cache entry planted or damaged under another
        file's key fails this and is judged afresh."""
        verdicts = self.verdicts
        rules = [v.rule for v in verdicts] if isinstance(verdicts, tuple) and all(
            isinstance(v, Verdict) for v in verdicts) else None
        return (self.digest == text_digest(text) and rules is not None
                and rules == [r for r in FILE_RULES if r in rules] and len(set(rules)) == len(rules)
                and (self.row is None or (isinstance(self.row, dict) and all(v.ok for v in verdicts)
                                          and "catalog_form" in rules)))


def text_digest(text: str) -> str:
    """sha256 (hex) of a candidate's text, as ``CandidateRead.digest`` records it."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def read_candidate(path: str, text: str) -> CandidateRead:
    """The verdicts of the rules that read the file alone (``FILE_RULES``: size, syntax,
    fields, answers, skips, freeze fields, id, transform, catalog form), for ``path``
    with content ``text``. A pure function of (path, text) and relconsole's code, so a
    review may keep it by blob id (``parsecache``, kind ``candidate``). Never raises for
    bad content."""
    verdicts, raw = _read(path, text)
    row = None
    if all(v.ok for v in verdicts):
        if not isinstance(raw, dict):
            what = "an empty file" if raw is None else type(raw).__name__
            verdicts.append(Verdict("fields", False, f"{path}:1: a candidate is a YAML mapping, not {what}"))
        else:
            verdicts += [_fields(raw), _answers(raw), _skips(raw), _freeze_fields(raw), _safe_id(raw),
                         _transform(raw)]
            form, row = _catalog_form(raw)
            verdicts.append(form)
    return CandidateRead(tuple(verdicts), raw, row, text_digest(text))


def validate_candidate(path: str, text: str, catalog: Catalog,
                       input_fields: Callable[[dict], InputShape | list[str] | None],
                       read: CandidateRead | None = None) -> Candidate:
    """Judge one candidate file (§10). Never raises for bad content: verdicts say why.

    ``path`` names the file in reasons; ``text`` is its content. ``input_fields(input_mapping)``
    returns the candidate's InputShape (``input_shape``), or just the field names of its
    input (a lease corpus header, a seeds schema), or None when they cannot be known. The result's ``verdicts`` hold one verdict per rule
    of ``RULES`` in that order, "not checked" where an earlier failure stopped a rule;
    ``row`` is the catalog form (§10 "on accept") when every rule holds, else None.
    ``read``: ``read_candidate(path, text)`` when the caller has it (from a cache); one
    that does not ``judges(text)`` is ignored and the file read again.
    """
    if read is None or not read.judges(text):
        read = read_candidate(path, text)
    verdicts, raw = list(read.verdicts), read.raw
    if isinstance(raw, dict):  # the file-level rules held: the rules that read the catalog and the oracle
        shape = _input_shape(raw, input_fields)
        verdicts += [_schema_fits(shape), _references(raw, shape), _always_true(raw, shape), _unique(raw, catalog)]
    by_rule = {v.rule: v for v in verdicts}
    blocker = next((rule for rule in RULES if rule in by_rule and not by_rule[rule].ok), "an earlier rule")
    ordered = [by_rule.get(rule) or Verdict(rule, False, f"not checked: {blocker} failed", checked=False)
               for rule in RULES]
    candidate = Candidate(path, text, raw, ordered)
    if candidate.valid:
        candidate.row = read.row
    return candidate


def _input_shape(raw: dict, input_fields: Callable[[dict], InputShape | list[str] | None]) -> InputShape:
    """The input's shape, field names stripped and empty names dropped."""
    inp = raw.get("input")
    if not isinstance(inp, dict):
        return InputShape()
    try:
        found = input_fields(inp)
    except (OSError, ValueError):  # an unreadable or undecodable corpus: cannot tell
        return InputShape()
    shape = found if isinstance(found, InputShape) else InputShape(found)
    cleaned = [n.strip() for n in shape.fields or () if isinstance(n, str) and n.strip()]
    return InputShape(cleaned or None, shape.plain, shape.problem)


# --- the content ------------------------------------------------------------------------

def _fields(raw: dict) -> Verdict:
    """Known top-level fields, the required ones present, provenance and must_not as text.

    Keys another rule owns (answer-like, freeze, skip) and numbers (``no_answers``) are
    left to that rule, so each smuggling attempt is reported once, by its own rule.
    """
    unknown = sorted(str(k) for k in raw if k not in CANDIDATE_FIELDS
                     and not (_answer_key(k) or _freeze_key(k) or _skip_text(str(k))))
    if unknown:
        return Verdict("fields", False, f"unknown fields: {', '.join(unknown)}")
    missing = [k for k in REQUIRED if k not in raw]
    if missing:
        return Verdict("fields", False, f"missing fields: {', '.join(missing)}")
    for key in ("drafted_by", "source", "drafted_at", "must_not"):
        value = raw[key]
        if _is_number(value) or _text(value):
            continue
        if key == "drafted_at" and isinstance(value, dt.date):
            continue
        if key == "must_not" and isinstance(value, list) and value and all(_text(v) for v in value):
            continue
        return Verdict("fields", False, f"{key}: {value!r} is not text")
    return Verdict("fields", True)


def _text(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _number_allowed(path: tuple, numeric_params: frozenset) -> bool:
    """True where a candidate may hold a number: quantum, a numeric param of its kind, a
    split fraction, and an input schema's bounds and choices."""
    if path == ("quantum",):
        return True
    if len(path) == 2 and path[0] == "params" and path[1] in numeric_params:
        return True
    if len(path) == 3 and path[:2] == ("params", "splits") and isinstance(path[2], int):
        return "splits" in numeric_params
    schema_bound = len(path) == 4 and path[3] in ("min", "max")
    schema_choice = len(path) == 5 and path[3] == "choices"
    return path[:2] == ("input", "schema") and (schema_bound or schema_choice)


def _answers(raw: dict) -> Verdict:
    """No expected value anywhere in the body (``must_not`` excepted, it names what not to
    assert): no answer-like key at any depth, in any spelling, inside mappings or lists;
    no number outside the places that take one (a list of totals under ``shuffles``, a
    number under an unknown param, a number as ``source``); in ``params`` and ``input`` a
    numeric string (YAML 1.1 reads ``5588e2`` as text) or a numeric key counts too.
    Numbers under a freeze or skip key are left to the rule that owns that key."""
    body = {k: v for k, v in raw.items() if k != "must_not"}
    for path, key, _value in _walk(body):
        if key is not None and _answer_key(key):
            return Verdict("no_answers", False, f"{_dotted(path)}: carries an expected value")
    kind = TRANSFORM_TO_KIND.get(str(raw.get("transform")))
    numeric = _NUMERIC_PARAMS & KIND_PARAMS[kind] if kind else _NUMERIC_PARAMS
    for path, key, value in _walk(body):
        if any(isinstance(k, str) and (_freeze_key(k) or _skip_text(k)) for k in path):
            continue  # a freeze count or a skip flag: no_freeze_fields / no_skip report it
        inside = path[0] in ("params", "input") and path not in _TEXT_SLOTS
        if inside and (_is_number(key) or isinstance(key, str) and _NUMERIC_TEXT.fullmatch(key)):
            return Verdict("no_answers", False, f"{_dotted(path)}: the number {key!r} as a key stands as an answer")
        as_number = _is_number(value) or (inside and isinstance(value, str) and _NUMERIC_TEXT.fullmatch(value))
        if as_number and not _number_allowed(path, numeric):
            return Verdict("no_answers", False, f"{_dotted(path)}: the number {value!r} stands as an answer")
    return Verdict("no_answers", True)


def _skips(raw: dict) -> Verdict:
    """No skip or xfail mark in any key or text value, at any depth (``must_not`` too)."""
    for path, key, value in _walk(raw):
        for text in (key, value):
            if isinstance(text, str) and _skip_text(text):
                return Verdict("no_skip", False, f"{_dotted(path)}: skip/xfail text is not allowed")
    return Verdict("no_skip", True)


def _freeze_fields(raw: dict) -> Verdict:
    """No freeze-file key (§6) at any depth, in any spelling; an input schema's field names
    are the data's columns and are exempt."""
    found = [_dotted(path) for path, key, _value in _walk(raw)
             if key is not None and path[:2] + path[3:] != ("input", "schema") and _freeze_key(key)]
    if found:
        return Verdict("no_freeze_fields", False,
                       f"freeze fields {', '.join(found)}: freezes belong to the operator's freeze file")
    return Verdict("no_freeze_fields", True)


def _schema_fits(shape: InputShape) -> Verdict:
    """The candidate's own input schema fits the rows (or the header) it reads (§10: a
    drafted schema is checked, never trusted)."""
    if shape.problem:
        return Verdict("input_schema", False, shape.problem)
    return Verdict("input_schema", True)


def _references(raw: dict, shape: InputShape) -> Verdict:
    """The statement or ``params.field`` names at least one input field as a whole word
    (``body_mass_g`` inside ``body_mass_grams`` does not count). Seeds of plain values have
    no fields: the kind compares the subject on each whole value, which holds."""
    names = shape.fields
    if shape.plain:
        return Verdict("references_input", True, "plain-value seeds: compared on each whole value")
    if not names:
        return Verdict("references_input", False, "cannot tell the input's fields (no schema, no lease)")
    params = raw.get("params") if isinstance(raw.get("params"), dict) else {}
    body = " ".join(v for v in (raw.get("statement"), params.get("field")) if isinstance(v, str))
    used = [n for n in names if re.search(rf"(?<!\w){re.escape(n)}(?!\w)", body)]
    if not used:
        return Verdict("references_input", False,
                       f"vacuous: references no field of its input ({', '.join(names)})")
    return Verdict("references_input", True, f"uses {', '.join(used)}")


def _stdlib(ref: Any) -> bool:
    """True for a ``module:attr`` reference into the standard library or builtins."""
    if not isinstance(ref, str):
        return False
    module = ref.partition(":")[0].split(".")[0].strip()
    return module in sys.stdlib_module_names


def _always_true(raw: dict, shape: InputShape) -> Verdict:
    """The comparison can fail: not a predicate that holds whatever the patch does.

    Always true: a ``tolerance`` or ``canon`` quantum of ``WIDE_QUANTUM`` or more (``.inf``
    included: every difference is within it, or every number rounds to one grid point); a
    subject from the standard library (nothing of the code under review runs); no
    follow-up run (``shuffles`` below 1, ``splits`` 0 or no fraction inside (0, 1)); a
    ``monotonic`` that raises nothing (no ``field``, a field the input does not have, a
    ``step`` of 0 or less, a ``max`` at or below the schema's minimum). A ``nan``, zero or
    negative quantum is not always true but invalid: ``catalog_form`` rejects it.
    """
    def fail(why: str) -> Verdict:
        return Verdict("not_always_true", False, f"always true: {why}")

    names = shape.fields

    compare = raw.get("compare")
    if compare in ("canon", "tolerance") and "quantum" in raw and _number(raw["quantum"]) >= WIDE_QUANTUM:
        what = "admits any output" if compare == "tolerance" else "rounds any real output to the same values"
        return fail(f"{compare} with quantum {raw['quantum']} {what}")
    if _stdlib(raw.get("subject")):
        return fail(f"subject {raw['subject']} is standard-library code: nothing under review runs")
    kind = TRANSFORM_TO_KIND.get(str(raw.get("transform")))
    params = raw.get("params") if isinstance(raw.get("params"), dict) else {}
    if kind == "permutation":
        shuffles = params.get("shuffles", 6)
        if _is_number(shuffles) and shuffles < 1:
            return fail(f"shuffles {shuffles}: no shuffled run, nothing is compared")
    elif kind == "split_merge":
        splits = params.get("splits", 3)
        if _is_number(splits) and splits < 1:
            return fail(f"splits {splits}: no split, nothing is compared")
        if isinstance(splits, list) and not any(_is_number(s) and 0 < s < 1 for s in splits):
            return fail(f"splits {splits!r}: no split point inside the input")
    elif kind == "monotonic":
        name, step = params.get("field"), params.get("step", 1)
        if not _text(name):
            return fail("no field to raise: the input never changes")
        if shape.plain:
            return fail(f"plain-value seeds have no field {name!r} to raise: the input never changes")
        if names and name not in names:
            return fail(f"raises {name!r}, which the input does not have: the input never changes")
        if _is_number(step) and step <= 0:
            return fail(f"step {step} does not raise {name}" + (": the input never changes" if step == 0 else ""))
        schema = raw["input"].get("schema") if isinstance(raw.get("input"), dict) else None
        spec = schema.get(name) if isinstance(schema, dict) else None
        low = spec.get("min") if isinstance(spec, dict) else None
        declared = spec.get("type") if isinstance(spec, dict) else spec
        if declared == "int" and _is_number(step) and step < 1:
            return fail(f"step {step} on the integer field {name} rounds back to the same value: the input never changes")
        if _is_number(params.get("max")) and _is_number(low) and params["max"] <= low:
            return fail(f"max {params['max']} is at or below {name}'s minimum {low}: nothing can rise")
    return Verdict("not_always_true", True)


def id_problem(rid: Any) -> str | None:
    """Why ``rid`` cannot name a candidate file (``<id>.yaml``) on every platform, or None.

    See ``SAFE_ID``; ``..`` is refused anywhere in the id."""
    if not isinstance(rid, str):
        return "no id" if rid is None else f"id {rid!r} is not text"
    if not SAFE_ID.fullmatch(rid) or ".." in rid:
        return (f"id {rid!r} is not a safe file name: ASCII letters, digits, '_', '.', '-', "
                "at most 200, no leading or trailing '.' or '-', no '..'")
    if rid.split(".", 1)[0].lower() in _WINDOWS_RESERVED:
        return f"id {rid!r} starts with a name Windows reserves for a device ({rid.split('.', 1)[0]})"
    return None


_WINDOWS_RESERVED = {"con", "prn", "aux", "nul", *(f"com{n}" for n in range(1, 10)), *(f"lpt{n}" for n in range(1, 10))}


def _safe_id(raw: dict) -> Verdict:
    """The id can name a file (``<id>.yaml``) on every platform (``id_problem``)."""
    problem = id_problem(raw.get("id"))
    return Verdict("safe_id", problem is None, problem or "")


def id_key(rid: str) -> str:
    """What makes two ids the same to a reader: no spacing, case or look-alike letters.

    Two ids collide (rule ``unique_id``, §10) when their keys are equal:
    ``id_key("PENGUINS.Mass_Permutation") == id_key("penguins.mass_permutation")``.
    """
    return "".join(_skeleton(rid).split()).casefold()


def _unique(raw: dict, catalog: Catalog) -> Verdict:
    """The id is new to the catalog, even ignoring case, spacing and look-alike letters."""
    rid = raw.get("id")
    if not isinstance(rid, str):
        return Verdict("unique_id", False, "not checked: the candidate has no id text", checked=False)
    if catalog.get(rid) is not None:
        return Verdict("unique_id", False, f"id {rid!r} collides with a catalog relation")
    existing = _keys_of(tuple(catalog.relations)).get(id_key(rid))
    if existing is not None:
        return Verdict("unique_id", False, f"id {rid!r} collides with catalog relation {existing!r} "
                                           "(it differs only by case, spacing or look-alike letters)")
    return Verdict("unique_id", True)


@functools.lru_cache(maxsize=4)
def _keys_of(ids: tuple[str, ...]) -> dict[str, str]:
    """``id_key`` -> the first of ``ids`` with that key. Memoised on the ids themselves
    (a pure function, never stale): validating 300 candidates against 5,000 relations
    folded every catalog id 300 times."""
    keys: dict[str, str] = {}
    for rid in ids:
        keys.setdefault(id_key(rid), rid)
    return keys


def _transform(raw: dict) -> Verdict:
    """One of §10's transforms, each becoming its catalog kind; the reason lists them (a
    drafter, or a person, who writes a catalog kind such as ``idempotence`` learns the words)."""
    transform = raw.get("transform")
    allowed = ", ".join(f"{t} (kind {k})" for t, k in TRANSFORM_TO_KIND.items())
    if transform == "other":
        return Verdict("known_transform", False, f"transform 'other' cannot be accepted without an edit to one of: "
                                                 f"{allowed}")
    if not isinstance(transform, str) or transform not in TRANSFORM_TO_KIND:
        return Verdict("known_transform", False, f"unknown transform {transform!r}: a candidate's transform is one "
                                                 f"of {allowed} (SPEC §10); other catalog kinds are written by hand")
    return Verdict("known_transform", True)


def _catalog_form(raw: dict) -> tuple[Verdict, dict | None]:
    """The relation row the candidate becomes on accept, checked like a catalog row."""
    kind = TRANSFORM_TO_KIND.get(str(raw.get("transform")))
    if kind is None:
        return Verdict("catalog_form", False, "not checked: no catalog kind for this transform",
                       checked=False), None
    row: dict[str, Any] = {"id": raw.get("id"), "kind": kind}
    for key in ("subject", "merge", "inverse", "input", "compare", "quantum", "params", "owner",
                "statement"):
        if key in raw:
            row[key] = raw[key]
    problem = first_error(row, RELATION_SCHEMA)
    if problem:
        return Verdict("catalog_form", False, f"as a catalog row: {problem}"), None
    params = row.get("params") or {}
    unknown = set(params) - KIND_PARAMS[kind]
    if unknown:
        return Verdict("catalog_form", False,
                       f"params {', '.join(sorted(map(str, unknown)))} do not apply to {kind}"), None
    for name, value in params.items():
        wanted = param_problem(name, value)
        if wanted:
            return Verdict("catalog_form", False, f"params.{name}: {value!r} is not {wanted}"), None
    try:  # the catalog's own rules (tolerance needs a quantum, roundtrip needs inverse...)
        _relation(copy.deepcopy(row), "candidate", None, Loaded(row), 0)
    except BadInputError as exc:
        return Verdict("catalog_form", False, f"as a catalog row: {exc.message}"), None
    return Verdict("catalog_form", True), row


class SeedLineError(ValueError):
    """A JSON-lines line that is not one row: not JSON, or an object with a key twice.
    ``str()`` is the reason as a rejected row shows it."""


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict:
    seen: set[str] = set()
    for key, _value in pairs:
        if key in seen:
            raise SeedLineError(f"duplicate key {key!r}: the row is ambiguous (JSON keeps only one value)")
        seen.add(key)
    return dict(pairs)


def parse_seed_line(line: str) -> Any:
    """One JSON-lines line as its JSON value, refusing an object (at any depth) that holds
    a key twice: ``{"percent": 10, "percent": 200}`` would otherwise read as 200 while a
    reviewer may read 10. A string holding a lone surrogate (``"\\ud800"``: JSON allows the
    escape, Unicode has no such character, and no file, terminal or subject can carry it) is
    refused too. Raises SeedLineError naming the key, or why the line is not JSON."""
    try:
        value = jsonnumbers.loads(line, object_pairs_hook=_no_duplicate_keys)
    except json.JSONDecodeError as exc:
        raise SeedLineError(f"not JSON: {exc.msg}") from None
    if _has_lone_surrogate(value):
        raise SeedLineError("holds a lone surrogate escape (\\ud800-\\udfff): not Unicode text")
    return value


def _has_lone_surrogate(value: Any) -> bool:
    if isinstance(value, str):
        return any("\ud800" <= char <= "\udfff" for char in value)
    if isinstance(value, dict):
        return any(_has_lone_surrogate(k) or _has_lone_surrogate(v) for k, v in value.items())
    if isinstance(value, list):
        return any(map(_has_lone_surrogate, value))
    return False


def relation_of_seed_file(path: str) -> str:
    """``oracle/quarantine/rollout.monotonic.seeds.jsonl`` -> ``rollout.monotonic``."""
    return path.rsplit("/", 1)[-1].removesuffix(SEEDS_SUFFIX)


def validate_seed_rows(path: str, text: str, catalog: Catalog,
                       existing: list[Any]) -> list[SeedRow]:
    """Judge each drafted seed row of one quarantine ``.seeds.jsonl`` file (§10).

    ``existing`` holds the relation's current seed values (for the duplicate rule).
    Blank lines are skipped; a line that is not one JSON value, or holds an object with a
    key twice (``parse_seed_line``), is a rejected row.
    """
    relation_id = relation_of_seed_file(path)
    relation = catalog.get(relation_id)
    specs = relation.input.get("schema") if relation else None
    seen = {json.dumps(v, sort_keys=True) for v in existing}
    rows = []
    for number, line in enumerate(jsonl_lines(text), 1):
        if not line.strip():
            continue
        try:
            value = parse_seed_line(line)
        except SeedLineError as exc:
            rows.append(SeedRow(path, relation_id, number, line, None, [str(exc)]))
            continue
        reasons = []
        if relation is None:
            reasons.append(f"no relation {relation_id!r} in the catalog")
        elif relation.seeds_path is None:
            reasons.append(f"{relation_id} reads a lease, not seeds")
        elif not specs:
            reasons.append(f"{relation_id} declares no input schema to check rows against")
        else:
            reasons.extend(check_row(value, specs))
        canon = json.dumps(value, sort_keys=True)
        if canon in seen:
            reasons.append("duplicate of an existing seed")
        seen.add(canon)
        rows.append(SeedRow(path, relation_id, number, line, value, reasons))
    return rows
