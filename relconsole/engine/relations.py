"""The relation kinds (SPEC §3): each is a transform of the source input plus a
comparison of the outputs, never a stored answer.

This module runs inside a worker process (``relconsole.engine.worker``), with the tree
under test on ``sys.path``; it never runs in the console's process. Each check returns
an Outcome: whether the relation held, the two canonical outputs that were compared
last (or that disagreed), and the disagreeing key paths.
"""

from __future__ import annotations

import copy
import importlib
import json
import marshal
import random
from dataclasses import dataclass, field
from typing import Any, Callable

from relconsole.engine.canon import canonical, differences, path_text


@dataclass
class Outcome:
    """Result of one evaluation of a relation on one source input.

    ``source`` and ``followup`` are the canonical outputs of the source and follow-up
    runs; ``differing`` lists disagreeing key paths as text; ``note`` says which
    follow-up input missed (shuffle 3, split at 120, seed row 2...).
    """

    held: bool
    source: Any = None
    followup: Any = None
    differing: list[str] = field(default_factory=list)
    note: str = ""


def load_callable(ref: str) -> Callable:
    """Import ``module:attr.path`` (entry-point style). Raises ImportError/AttributeError."""
    module_name, _, attr_path = ref.partition(":")
    target: Any = importlib.import_module(module_name)
    for part in attr_path.split("."):
        target = getattr(target, part)
    return target


SMALL_BYTES = 1 << 20  # outputs larger than this are not carried back when the relation held


def _identical(left: Any, right: Any) -> int | None:
    """A size estimate of ``left`` when both values are the same to the letter, else None.

    ``==`` runs in C and rules out most misses at once; equal encodings then rule out
    ``True == 1`` and ``1 == 1.0``, which the canonical comparison keeps apart. marshal
    format 0 (no back-references, so equal values encode alike) is twice as fast as
    JSON; JSON text covers what marshal cannot encode, and values equal but not written
    alike fall through to the canonical comparison.
    """
    try:
        if left != right:
            return None
    except (TypeError, ValueError, RecursionError):
        return None
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

    def outcome(self, left: Any, right: Any, note: str = "", bag: bool = False) -> Outcome:
        same = _identical(left, right)
        if same is not None:  # equal as written: equal under every compare, no canonical walk needed
            kept = canonical(left, self.compare, self.quantum, self.order_free or bag) if same < SMALL_BYTES else None
            return Outcome(True, kept, kept, [], note)
        a = canonical(left, self.compare, self.quantum, self.order_free or bag)
        b = canonical(right, self.compare, self.quantum, self.order_free or bag)
        diff = differences(a, b, self.compare, self.quantum)
        return Outcome(not diff, a, b, [path_text(p) for p in diff], note)


def fresh(x: Any) -> Any:
    """A container of the source input that a follow-up may reorder or slice.

    A corpus list is copied (its rows are shared, which is O(rows) pointers; the worker
    checks afterwards that no subject changed a row in place); a mapping seed is copied.
    """
    if isinstance(x, list):
        return list(x)
    if isinstance(x, dict):
        return copy.deepcopy(x)
    return x


def _first_miss(outcomes) -> Outcome:
    last = Outcome(True, note="no follow-up input")
    for outcome in outcomes:
        if not outcome.held:
            return outcome
        last = outcome
    return last


def permutation(rel: dict, f: Callable, x: Any, rng: random.Random, **_) -> Outcome:
    check = Check(rel)
    shuffles = int((rel.get("params") or {}).get("shuffles", 6))
    base = f(fresh(x))

    def runs():
        for n in range(1, shuffles + 1):
            y = fresh(x)
            rng.shuffle(y)
            yield check.outcome(base, f(y), f"shuffle {n} of {shuffles}")
    return _first_miss(runs())


def idempotence(rel: dict, f: Callable, x: Any, **_) -> Outcome:
    once = f(fresh(x))
    return Check(rel).outcome(once, f(copy.deepcopy(once)), "f(f(x)) vs f(x)")


def replay_ingest(rel: dict, f: Callable, x: Any, **_) -> Outcome:
    store = f()
    store.reset()
    store.ingest(fresh(x))
    once = copy.deepcopy(store.projection())
    store.reset()
    store.ingest(fresh(x))
    store.ingest(fresh(x))
    return Check(rel).outcome(once, store.projection(), "ingest twice vs ingest once")


def split_points(length: int, splits: Any) -> list[int]:
    """Split indexes for ``splits`` (an int count, evenly spaced, or fractions in (0, 1))."""
    if isinstance(splits, list):
        points = [int(length * float(s)) for s in splits]
    else:
        count = int(splits)
        points = [length * k // (count + 1) for k in range(1, count + 1)]
    return sorted({p for p in points if 0 <= p <= length})


def _concat(a: Any, b: Any) -> Any:
    return list(a) + list(b)


def split_merge(rel: dict, f: Callable, x: Any, merge: Callable | None = None, **_) -> Outcome:
    merge = merge or _concat
    check = Check(rel)
    whole = f(fresh(x))
    rows = list(x)

    def runs():
        for point in split_points(len(rows), (rel.get("params") or {}).get("splits", 3)):
            merged = merge(f(rows[:point]), f(rows[point:]))
            yield check.outcome(whole, merged, f"split at row {point} of {len(rows)}", bag=True)
    return _first_miss(runs())


def _raise(value: Any, field_name: str, step: float, cap: float | None) -> Any:
    """``value`` with ``field_name`` raised by ``step`` (capped at ``cap``) in every row.

    A row is a mapping; a list of rows is raised row by row. Numbers stay numbers; text
    (a CSV cell) is read as a number and written back as text.
    """
    if isinstance(value, list):
        return [_raise(v, field_name, step, cap) for v in value]
    if not isinstance(value, dict) or field_name not in value:
        return value
    old = value[field_name]
    number = float(old) if isinstance(old, str) else old
    new = number + step if cap is None else min(number + step, cap)
    raised = dict(value)
    if isinstance(old, bool) or not isinstance(old, (int, float)):
        raised[field_name] = str(new)
    else:
        raised[field_name] = type(old)(new)
    return raised


def never_below(before: Any, after: Any, path: tuple = ()) -> list[str]:
    """Paths where ``after`` falls below ``before``: numbers drop, or members go missing."""
    if isinstance(before, dict) and isinstance(after, dict):
        out = []
        for key in before:
            if key not in after:
                out.append(path_text(path + (key,)))
            else:
                out.extend(never_below(before[key], after[key], path + (key,)))
        return out
    if isinstance(before, (list, set, tuple)) and isinstance(after, (list, set, tuple)):
        kept = {canonical_key(v) for v in after}
        lost = [v for v in before if canonical_key(v) not in kept]
        return [f"{path_text(path)} lost {len(lost)} member(s), e.g. {lost[0]!r}"] if lost else []
    if isinstance(before, (int, float)) and isinstance(after, (int, float)):
        return [path_text(path)] if after < before else []
    return [] if before == after else [path_text(path)]


def canonical_key(value: Any) -> str:
    import json
    return json.dumps(canonical(value), sort_keys=True, default=repr)


def monotonic(rel: dict, f: Callable, x: Any, **_) -> Outcome:
    params = rel.get("params") or {}
    field_name = params.get("field")
    raised = _raise(x, field_name, params.get("step", 1), params.get("max"))
    before, after = f(fresh(x)), f(raised)
    lost = never_below(before, after)
    return Outcome(not lost, canonical(before), canonical(after), lost,
                   f"{field_name} raised by {params.get('step', 1)}")


def roundtrip(rel: dict, f: Callable, x: Any, inverse: Callable | None = None, **_) -> Outcome:
    return Check(rel).outcome(x, inverse(f(fresh(x))), "inverse(f(x)) vs x")


def invariance(rel: dict, f: Callable, x: Any, transform: Callable | None = None, **_) -> Outcome:
    return Check(rel).outcome(f(fresh(x)), f(transform(fresh(x))), "f(T(x)) vs f(x)")


def bound(rel: dict, f: Callable, x: Any, **_) -> Outcome:
    params = rel.get("params") or {}
    if "raises" in params:
        try:
            got = f(x)
        except Exception as exc:  # the named class (or a subclass of it) is the documented edge
            name = type(exc).__name__
            held = _is_a(exc, params["raises"])
            return Outcome(held, params["raises"], name, [] if held else ["(exception class)"], "edge")
        return Outcome(False, params["raises"], canonical(got), ["(no exception)"], "edge")
    return Check(rel).outcome(params.get("equals"), f(x), "edge")


def _is_a(exc: BaseException, wanted: str) -> bool:
    """True when ``exc`` is an instance of the class named ``wanted`` (``Name`` or
    ``module.Name``), subclasses included: ``JSONDecodeError`` is a ``ValueError``."""
    for cls in type(exc).__mro__:
        if wanted in (cls.__name__, f"{cls.__module__}.{cls.__qualname__}"):
            return True
    return False


KINDS: dict[str, Callable[..., Outcome]] = {
    "permutation": permutation, "idempotence": idempotence, "replay_ingest": replay_ingest,
    "split_merge": split_merge, "monotonic": monotonic, "roundtrip": roundtrip,
    "invariance": invariance, "bound": bound,
}


def evaluate(rel: dict, inputs: list[Any], seed: int) -> Outcome:
    """Run relation ``rel`` (a catalog mapping) over each source input; first miss wins.

    ``inputs`` is ``[corpus_rows]`` for a lease or one entry per seed for seeds.
    ``seed`` seeds the shuffles (a rerun passes a new seed). Raises whatever the
    subject raises: the worker reports it as a miss with the exception class.
    """
    kind = KINDS[rel["kind"]]
    subject = load_callable(rel["subject"])
    helpers = {name: load_callable(rel[name]) for name in ("merge", "inverse", "transform") if rel.get(name)}
    rng = random.Random(seed)
    last = Outcome(True, note="no input")
    for index, x in enumerate(inputs):
        outcome = kind(rel, subject, x, rng=rng, **helpers)
        if len(inputs) > 1:
            outcome.note = f"seed row {index + 1}: {outcome.note}"
        if not outcome.held:
            return outcome
        last = outcome
    return last


FIELDS_SHOWN = 20  # field names of the first row carried in an inputs summary


def describe_inputs(rel: dict, inputs: list[Any], seed: int, corpus: bool) -> dict:
    """What one evaluation reads and how its follow-up input is made, in words (SPEC §3).

    ``inputs`` is what ``evaluate`` gets: ``[corpus_rows]`` for a lease (``corpus`` True),
    one entry per seed for seeds. Returns a small dict, never a copy of the input::

        {"records": int,              # corpus rows, or seed rows
         "fields": [str, ...],        # keys of the first row (at most FIELDS_SHOWN)
         "field_count": int,          # how many keys the first row has
         "followup": str}             # the follow-up transformation for this seed

    Never raises: a row it cannot read leaves the count and says less.
    """
    rows = inputs[0] if corpus and inputs and isinstance(inputs[0], list) else inputs
    first = rows[0] if rows else None
    keys = [str(k) for k in first] if isinstance(first, dict) else []
    try:
        followup = followup_words(rel, rows, seed, corpus)
    except Exception as exc:  # a row the words cannot read: the run itself reports the real error
        followup = f"{rel.get('kind')} (not described: {type(exc).__name__})"
    return {"records": len(rows), "fields": keys[:FIELDS_SHOWN], "field_count": len(keys), "followup": followup}


def followup_words(rel: dict, rows: list[Any], seed: int, corpus: bool = True) -> str:
    """The follow-up transformation of relation ``rel`` on ``rows`` with ``seed``, in words:
    "rows shuffled 6 times with seed 7", "split at rows 86, 172, 258 of 344, parts merged by
    bag concatenation", "percent raised by 10, capped at 100 (first row: 10 → 20)".

    ``corpus`` is True when ``rows`` is one lease corpus (the subject sees all rows at
    once), False for seeds (the subject sees one seed at a time). Raises what reading a row
    raises (a non-numeric field to raise); ``describe_inputs`` catches it.
    """
    kind = rel.get("kind")
    params = rel.get("params") or {}
    what = "rows" if corpus else "each seed's items"
    if kind == "permutation":
        shuffles = int(params.get("shuffles", 6))
        order = "; output order ignored (order_free)" if params.get("order_free") else ""
        return f"{what} shuffled {shuffles} times with seed {seed}{order}"
    if kind == "idempotence":
        return "the output fed back in: f(f(x)) compared with f(x)"
    if kind == "replay_ingest":
        return "ingested twice into a reset store; its projection compared with ingesting once"
    if kind == "split_merge":
        merge = rel.get("merge") or "bag concatenation"
        splits = params.get("splits", 3)
        if corpus:
            points = split_points(len(rows), splits)
            where = f"split at row{'s' * (len(points) > 1)} {', '.join(map(str, points))} of {len(rows)}" if points else "not split (no rows)"
        else:
            where = f"each seed split at {len(splits) if isinstance(splits, list) else int(splits)} point(s)"
        return f"{where}; the parts run separately, merged by {merge}, compared with the whole"
    if kind == "monotonic":
        name, step, cap = params.get("field"), params.get("step", 1), params.get("max")
        words = f"{name} raised by {step}" + (f", capped at {cap}" if cap is not None else "")
        first = next((r for r in rows if isinstance(r, dict) and name in r), None)
        if first is not None:
            which = "first row" if corpus else "first seed"
            words += f" ({which}: {_short(first[name])} → {_short(_raise(first, name, step, cap)[name])})"
        return words
    if kind == "roundtrip":
        return f"encoded by {rel.get('subject')} then decoded by {rel.get('inverse')}; compared with the input"
    if kind == "invariance":
        return f"input transformed by {rel.get('transform')}; outputs compared"
    if kind == "bound":
        if "raises" in params:
            return f"the documented edge: the subject must raise {params['raises']}"
        return f"the documented edge: the output must equal {params.get('equals')!r}"
    return str(kind)


def _short(value: Any, limit: int = 40) -> str:
    text = str(value)
    return text if len(text) <= limit else text[:limit] + "…"
