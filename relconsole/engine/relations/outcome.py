"""What one check of a relation gives, and how it compares two outputs (SPEC §3, §7).

``Outcome`` is the result of one evaluation; ``Calls`` is where the judge sends subject calls
(a fork server, ``subject.server``), ``SubjectFailed`` what it raises for a call that gave no
output, ``Kept`` and ``WRITTEN_ALIKE`` what it gives instead of a decoded output; ``Check``
compares two raw outputs under the relation's ``compare``/``quantum``/order rule
(``_identical`` first: outputs equal as written need no canonical walk).
"""

from __future__ import annotations

import itertools
import json
import marshal
from dataclasses import dataclass, field
from typing import Any, Protocol

from relconsole.engine.relations.canon import canonical, differences, path_text


@dataclass
class Outcome:
    """Result of one evaluation of a relation on one source input.

    ``source`` and ``followup`` are the canonical outputs of the source and follow-up
    runs; ``differing`` lists disagreeing key paths as text; ``note`` says which
    follow-up input missed (shuffle 3, split at 120, seed row 2...). ``vacuous`` is True
    when it held only because both outputs were empty for a non-empty input.
    """

    held: bool
    source: Any = None
    followup: Any = None
    differing: list[str] = field(default_factory=list)
    note: str = ""
    vacuous: bool = False
    compared: str = ""  # how the outputs were compared, in words ("exactly, lists in order")


class SubjectFailed(Exception):
    """A subject call did not return an output: it raised, died, hung, wrote garbage or
    returned a value the judge cannot compare. ``error`` is the record's error mapping:
    ``{"type", "message", "where", "files", "classes"}``; ``blocked`` names a type that
    needs a ``canon:`` adapter (the relation is blocked, not missed). ``by_judge``: relconsole
    made the failure itself (the relation's time ran out, a fault of its harness or of an
    oracle adapter), never the subject's output: nothing a subject raises or writes sets it."""

    def __init__(self, error: dict, blocked: str = "", by_judge: bool = False):
        super().__init__(error.get("message", ""))
        self.error, self.blocked, self.by_judge = error, blocked, by_judge


class Calls(Protocol):
    """Where the judge sends subject calls: ``run({key: call}) -> {key: output}`` makes each
    call in a fresh process, in an order it draws; raises SubjectFailed for the first call
    that gave no output. ``raw(call)`` returns the child's result mapping (``ok`` or
    ``raised``), for a relation that expects an exception."""

    def run(self, calls: dict[str, dict]) -> dict[str, Any]: ...  # a call's "expect": see WRITTEN_ALIKE

    def raw(self, call: dict) -> dict: ...


SMALL_BYTES = 1 << 20  # outputs larger than this are not carried back when the relation held
WRITTEN_ALIKE = type("WrittenAlike", (), {"__repr__": lambda self: "WRITTEN_ALIKE"})()
"""What ``Calls.run`` gives for a call whose ``expect`` value (judge-side, never sent) the
output is, to the byte on the wire: decoding and comparing it would find nothing."""


@dataclass
class Kept:
    """What ``Calls.run`` gives for a call made with ``keep: token`` whose output the subject's
    server kept: the next call reads it with the op ``["kept", token]``, and the judge never
    decodes it. The server says what the judge checks of it: ``type``, the wire's word for
    its type (``str``, ``list``...; module.Qualname for an output kept pickled), and
    ``is_input``, whether it is the call's input itself. ``observed``: for an output kept
    pickled, the relation's observable of it, canon(inverse(out)), in the process that made
    it (``(tag, value)``, see ``subject.kept.observed``), else None. No decoded output is
    ever a Kept."""

    type: str
    is_input: bool = False
    observed: tuple | None = None


_TEXT = frozenset({str, type(None)})
_DICTS = frozenset({dict})


def _text_cells(value: Any) -> int | None:
    """The number of cells of a list of rows (dicts) or a dict whose keys and values are all
    str or None (exact types), else None. ``==`` between two such values already compares
    them to the letter, at C speed: no number, bool or set can be equal across types."""
    chain = itertools.chain.from_iterable
    if type(value) is dict:
        keys, values = value, value.values()
    elif type(value) is list and _DICTS.issuperset(map(type, value)):
        keys, values = chain(value), chain(map(dict.values, value))
    else:
        return None
    if _TEXT.issuperset(map(type, keys)) and _TEXT.issuperset(map(type, values)):
        return len(value) * (len(value[0]) if type(value) is list and value else 1)
    return None


def _identical(left: Any, right: Any) -> int | None:
    """A size estimate of ``left`` when both values are the same to the letter, else None.

    ``==`` runs in C and rules out most misses at once; equal encodings then rule out
    ``True == 1`` and ``1 == 1.0``, which the canonical comparison keeps apart (two tables
    of text cannot hold those, see ``_text_cells``, and need no encoding). marshal
    format 0 (no back-references, so equal values encode alike) is twice as fast as
    JSON; JSON text covers what marshal cannot encode, and values equal but not written
    alike fall through to the canonical comparison.
    """
    try:
        if left != right:
            return None
    except (TypeError, ValueError, RecursionError):
        return None
    cells = _text_cells(left)
    if cells is not None and _text_cells(right) is not None:
        return cells * 16  # a size estimate: only whether it is under SMALL_BYTES matters
    for encode in (lambda v: marshal.dumps(v, 0), lambda v: json.dumps(v, default=repr).encode()):
        try:
            a = encode(left)
            if a == encode(right):
                return len(a)
        except (TypeError, ValueError, RecursionError):
            continue
    return None


class Check:
    """Compares two raw outputs under the relation's ``compare``/``quantum``/order rule."""

    def __init__(self, relation: dict):
        self.compare = relation.get("compare", "canon")
        self.quantum = relation.get("quantum")
        self.order_free = bool((relation.get("params") or {}).get("order_free", False))

    def canon(self, value: Any) -> Any:
        return canonical(value, self.compare, self.quantum, self.order_free)

    def words(self, bag: bool = False) -> str:
        """How this check compares, for a miss's one line: "exactly, lists in order",
        "canonically (numbers to 1e-09), lists as bags"."""
        how = "exactly" if self.compare == "exact" else f"under {self.compare}"
        if self.quantum is not None:
            how += f" (numbers to {self.quantum})"
        return f"{how}, lists {'as bags' if self.order_free or bag else 'in order'}"

    def outcome(self, left: Any, right: Any, note: str = "", bag: bool = False) -> Outcome:
        same = _identical(left, right)
        if same is not None:  # equal as written: equal under every compare, no canonical walk needed
            kept = canonical(left, self.compare, self.quantum, self.order_free or bag) if same < SMALL_BYTES else None
            return Outcome(True, kept, kept, [], note, compared=self.words(bag))
        a = canonical(left, self.compare, self.quantum, self.order_free or bag)
        b = canonical(right, self.compare, self.quantum, self.order_free or bag)
        diff = differences(a, b, self.compare, self.quantum)
        return Outcome(not diff, a, b, [path_text(p) for p in diff], note, compared=self.words(bag))


def _empty(value: Any, depth: int = 0) -> bool:
    """True when ``value`` carries nothing: None, NaN, an empty string or container, or a
    container of nothing but such values at every level (``{"Adelie": {}}``)."""
    if value is None or (isinstance(value, float) and value != value):
        return True
    if isinstance(value, (str, bytes)):
        return not value
    if depth > 50:
        return False
    if isinstance(value, dict):
        return all(_empty(v, depth + 1) for v in value.values())
    if isinstance(value, (list, tuple, set, frozenset)):
        return all(_empty(v, depth + 1) for v in value)
    return False


def first_miss(outcomes) -> Outcome:
    """The first outcome that did not hold, else the last one (or a held "no follow-up input")."""
    last = Outcome(True, note="no follow-up input")
    for outcome in outcomes:
        if not outcome.held:
            return outcome
        last = outcome
    return last
