"""The relation kinds (SPEC §3): each is a transform of the source input plus a
comparison of the outputs, never a stored answer.

This module is the judge's half of a run (SPEC §7 "The judge and the subject"). It never
imports the code under review: every subject call goes through a ``Calls`` object (a fork
server, ``engine.relations.subject``) as one call in a fresh process, and comes back as data decoded
from the wire format. The judge draws the follow-up inputs (orders, split points) from the
run's seed, runs the independent calls in an order drawn from it too, and compares. Each
check returns an Outcome: whether the relation held, the two canonical outputs that were
compared last (or that disagreed), and the disagreeing key paths (``outcome.py``, which
also compares; ``orders.py`` draws a permutation's orders, ``describe.py`` puts a relation's
follow-up input in words).
"""

from __future__ import annotations

import datetime
import decimal
import json
import math
import random
from typing import Any, Callable

from relconsole.engine.relations.canon import canonical, path_text
from relconsole.engine.relations.records import compact_text
from relconsole.engine.literal import counted
from relconsole.engine.relations.orders import _order, structured_orders
from relconsole.engine.relations.outcome import (WRITTEN_ALIKE, Calls, Check, Kept, Outcome, SubjectFailed, _empty,
                                                 first_miss)
from relconsole.engine.relations.subject.inputs import check_raisable, pack_order, raise_field, step_changes_nothing
from relconsole.engine.relations.subject.kept import OBSERVED, OBSERVED_RAISED, kept_type, same_value




def _rows(x: Any, kind: str) -> list:
    if not isinstance(x, list):
        raise TypeError(f"a {kind} relation needs a list input, got {type(x).__name__}")
    return x


def permutation(rel: dict, x: Any, rng: random.Random, calls: Calls, **_) -> Outcome:
    """The input's own order and ``shuffles`` random ones, in an order drawn from ``rng``; the
    first of them is the source. So neither "the corpus order" nor "a shuffle" tells a call
    whether it is the source, and a subject exact only off the corpus order is compared with it.
    Two follow-ups, drawn, get their rows as new objects (``fresh``): a subject that puts rows
    back in one fixed order by their addresses sees another order there."""
    check = Check(rel)
    shuffles = int((rel.get("params") or {}).get("shuffles", 6))
    rows = _rows(x, "permutation")
    # half the follow-ups in sorted or grouped rows: orders production data comes in and a
    # random shuffle never draws
    structured = structured_orders(rows, rng, shuffles // 2 if shuffles >= 2 else 0)
    orders = [(list(range(len(rows))), "")] + structured
    orders += [(_order(len(rows), rng), "") for _ in range(shuffles - len(structured))]
    rng.shuffle(orders)
    ops = {n: [["order", pack_order(order)]] for n, (order, _) in enumerate(orders)}
    # two follow-ups (one when there is one) get new row objects: ordering rows by id() finds no
    # fixed order there; with two, a sum that agrees with the source's in one new order by chance
    # must agree in another too
    renewed = set(rng.sample(range(1, shuffles + 1), min(2, shuffles)))
    for n in renewed:
        ops[n].append(["fresh"])
    out = calls.run({f"order {n}": {"ops": ops[n]} for n in ops})
    base = out["order 0"]
    return first_miss(check.outcome(base, out[f"order {n}"], f"shuffle {n} of {shuffles}"
                                     + (f", {orders[n][1]}" if orders[n][1] else "")
                                     + (", new row objects" if n in renewed else ""))
                       for n in range(1, shuffles + 1))


def idempotence(rel: dict, x: Any, calls: Calls, wire: Callable[[Any], str], **_) -> Outcome:
    once = calls.run({"f(x)": {"ops": []}})["f(x)"]
    twice = calls.run({"f(f(x))": {"ops": [["value", wire(once)]]}})["f(f(x))"]
    return Check(rel).outcome(once, twice, "f(x) vs f(f(x))")


def replay_ingest(rel: dict, x: Any, calls: Calls, **_) -> Outcome:
    out = calls.run({"once": {"ops": [], "mode": "store", "times": 1},
                     "twice": {"ops": [], "mode": "store", "times": 2}})
    return Check(rel).outcome(out["once"], out["twice"], "ingest once vs ingest twice")


EDGE_ROWS = 2  # the drawn edge split leaves a part of at most this many rows


def split_points(length: int, splits: Any, rng: random.Random | None = None) -> list[int]:
    """Split indexes for ``splits``: fractions in (0, 1) give fixed points; a count gives that
    many points drawn from ``rng`` (evenly spaced without one), the first of them at an edge:
    a part of one or two rows, first or last (code that treats a small input otherwise, a
    group too small to keep, is judged on one; no drawn point in the middle ever makes it)."""
    if isinstance(splits, list):
        points = [int(length * float(s)) for s in splits]
    else:
        count = int(splits)
        if rng is not None and length > 1:
            points = [rng.randint(1, length - 1) for _ in range(count)]
            if points and length > 2 * EDGE_ROWS:
                small = rng.randint(1, EDGE_ROWS)
                points[0] = small if rng.random() < 0.5 else length - small
        else:
            points = [length * k // (count + 1) for k in range(1, count + 1)]
    return sorted({p for p in points if 0 <= p <= length})


def _concat(a: Any, b: Any) -> Any:
    return list(a) + list(b)


# what a merge adapter raises on parts of the wrong shape (a float where it reads a dict): the
# subject's miss; anything else it raises (RuntimeError, ...) stays the oracle's fault (abort)
SHAPE_ERRORS = (TypeError, KeyError, AttributeError, IndexError, ValueError)


def split_merge(rel: dict, x: Any, rng: random.Random, calls: Calls, merge: Callable | None = None,
                **_) -> Outcome:
    merge = merge or _concat
    check = Check(rel)
    rows = _rows(x, "split_merge")
    points = split_points(len(rows), (rel.get("params") or {}).get("splits", 3), rng)
    wanted = {"whole": {"ops": []}}
    for point in points:
        wanted[f"{point} left"] = {"ops": [["slice", 0, point]]}
        wanted[f"{point} right"] = {"ops": [["slice", point, len(rows)]]}
    out = calls.run(wanted)

    def judged(point: int) -> Outcome:
        where = f"split at row {point} of {len(rows)}"
        left, right = out[f"{point} left"], out[f"{point} right"]
        try:
            merged = merge(left, right)
        except SHAPE_ERRORS as exc:  # the parts are the subject's outputs: parts of a shape no merge takes
            return Outcome(False, out["whole"], [left, right], ["(merge)"],
                           f"{where}: the merge adapter cannot merge the parts' outputs "
                           f"({type(exc).__name__}: {str(exc)[:200]})")
        return check.outcome(out["whole"], merged, where, bag=True)

    return first_miss(judged(p) for p in points)


def _raise(value: Any, field_name: str, step: float, cap: float | None) -> Any:
    return raise_field(value, field_name, step, cap)


ORDERED = (str, bytes, tuple, datetime.date, decimal.Decimal)  # values Python orders with < (dates and times too)


def never_below(before: Any, after: Any, path: tuple = ()) -> list[str]:
    """Paths where ``after`` falls below ``before``: numbers drop, members of a list or set go
    missing, an ordered value (a tuple such as a version, text, a date, a Decimal, a named
    tuple's fields in order) falls, or two values cannot be ordered ("incomparable": neither
    is below the other and they are not equal). Anything else must stay equal. A type the
    judge does not order (a class of the subject's) is compared through a ``canon:`` adapter
    that maps it to one of these (a version to its tuple of numbers). Each entry says which
    rule it applied: "ordered as one value (a tuple)", "compared as members (a list)"."""
    if isinstance(before, dict) and isinstance(after, dict):
        out = []
        for key in before:
            if key not in after:
                out.append(path_text(path + (key,)))
            else:
                out.extend(never_below(before[key], after[key], path + (key,)))
        return out
    kinds = _kind_words(before), _kind_words(after)
    before, after = _fields_in_order(before), _fields_in_order(after)
    if _ordered(before) or _ordered(after):  # with anything else, _fell finds no order: incomparable
        kind = kinds[0] if _ordered(before) else kinds[1]
        return [f"{entry}, ordered as one value ({kind})" for entry in _fell(before, after, path)]
    if isinstance(before, (list, set, frozenset)) and isinstance(after, (list, set, frozenset)):
        if _all_text(before) and _all_text(after):  # text is its own canonical key: a set, not a json.dumps each
            kept = set(after)
            lost = [v for v in before if v not in kept]
        else:
            kept = {canonical_key(v) for v in after}
            lost = [v for v in before if canonical_key(v) not in kept]
        return [f"{path_text(path)} lost {counted(len(lost), 'member')}, e.g. {lost[0]!r}, "
                f"compared as members ({kinds[0]})"] if lost else []
    if isinstance(before, (int, float)) and isinstance(after, (int, float)):
        return [path_text(path)] if after < before else []
    return [] if before == after else [path_text(path)]


KIND_WORDS = {tuple: "a tuple", str: "text", bytes: "bytes", datetime.date: "a date",
              datetime.datetime: "a date and time", decimal.Decimal: "a Decimal", list: "a list", set: "a set",
              frozenset: "a frozenset"}


def _kind_words(value: Any) -> str:
    """What ``value`` is, in the words of a monotonic miss: "a tuple", "a list", "text"...;
    any other type by its name."""
    if getattr(value, "kind", None) == "namedtuple":
        return "a named tuple's fields in order"
    return KIND_WORDS.get(type(value), type(value).__name__)


def _fields_in_order(value: Any) -> Any:
    """A named tuple's fields as a tuple (it orders as one); anything else as it is."""
    if getattr(value, "kind", None) == "namedtuple" and isinstance(getattr(value, "value", None), dict):
        return tuple(value.value.values())
    return value


def _ordered(value: Any) -> bool:
    return isinstance(value, ORDERED) and not isinstance(value, bool)


def _fell(before: Any, after: Any, path: tuple) -> list[str]:
    """[path and the word] when ``after`` is below ``before`` ("fell") or cannot be ordered with
    it ("incomparable"), else []. The values themselves are the outcome's source and follow-up."""
    where = path_text(path)
    try:
        if after < before:
            return [f"{where} fell"]
        if before < after or before == after:
            return []
    except TypeError:
        pass
    return [f"{where} incomparable (no order between the two values)"]


def _all_text(values) -> bool:
    """Whether every member is a plain ``str`` (an id list: 100,000 members took 0.2 s through
    ``canonical_key``, the judge's whole cost of a drawn rollout row)."""
    return all(type(v) is str for v in values)


def canonical_key(value: Any) -> str:
    return json.dumps(canonical(value), sort_keys=True, default=repr)


def monotonic(rel: dict, x: Any, calls: Calls, **_) -> Outcome:
    params = rel.get("params") or {}
    field_name, step, cap = params.get("field"), params.get("step", 1), params.get("max")
    check_raisable(x, field_name)  # a field that is not a number fails here, in the judge
    if step_changes_nothing(x, field_name, step):
        return Outcome(True, None, None, [], f"raising {field_name} by {step} changes no row (an integer field "
                       "raised by less than 1 is written back as it was): f(x) was compared with itself",
                       vacuous=True)
    out = calls.run({"before": {"ops": []}, "after": {"ops": [["raise", field_name, step, cap]]}})
    before, after = out["before"], out["after"]
    lost = never_below(before, after)
    return Outcome(not lost, canonical(before), canonical(after), lost, f"{field_name} raised by {step}",
                   compared="by order: no number below its source value, no member lost, anything else equal")


def roundtrip(rel: dict, x: Any, calls: Calls, wire: Callable[[Any], str], **_) -> Outcome:
    """f and its inverse in two calls (two processes): a subject whose inverse answers from
    a cache f filled in the same process (and no other) is seen. f's output goes from one
    to the other through the subject's server, decoded there as the judge would (Kept), or
    through the judge when the Calls cannot keep it. An f(x) the wire does not carry (an
    instance of the library's own class) goes pickled, and canon(inverse(f(x))) in f's own
    process must be what it is in the inverse's (``_pickled_alike``)."""
    encoded = calls.run({"f(x)": {"ops": [], "canon": None, "keep": "f(x)",
                                  "observe": [rel.get("inverse"), rel.get("canon")]}})["f(x)"]
    kept = encoded if isinstance(encoded, Kept) else Kept(kept_type(encoded), same_value(encoded, x))
    wanted = _encoded_types(rel)
    if wanted and kept.type not in wanted:  # a "dumps" that returns its rows holds every roundtrip
        return Outcome(False, " or ".join(wanted), kept.type, [TYPE_MISS],
                       f"f(x) is {kept.type}; the relation says f encodes to {' or '.join(wanted)}")
    if kept.is_input:
        return Outcome(True, None, None, [], "f(x) is x itself: an identity pair holds every roundtrip, "
                       "so the relation proved nothing", vacuous=True)
    given = [["kept", "f(x)"]] if isinstance(encoded, Kept) else [["value", wire(encoded)]]
    back = calls.run({"inverse(f(x))": {"subject": rel.get("inverse"), "ops": given,
                                        "expect": x}})["inverse(f(x))"]
    if back is WRITTEN_ALIKE:  # x itself, to the byte on the wire: equal under every compare
        back, outcome = x, Outcome(True, None, None, [], "x vs inverse(f(x))")
    else:
        outcome = Check(rel).outcome(x, back, "x vs inverse(f(x))")
    if outcome.held and isinstance(encoded, Kept) and encoded.observed is not None:
        return _pickled_alike(rel, back, encoded.observed) or outcome
    return outcome


PICKLED_NOTE = "inverse(f(x)) in a fresh process vs in f's own (f(x) went to the inverse pickled)"
TYPE_MISS = "(type of f(x))"  # the differing entry of a roundtrip whose f(x) is not of the type params.encoded names


def _pickled_alike(rel: dict, back: Any, observed: tuple) -> Outcome | None:
    """None when canon(inverse(f(x))) in f's own process (``observed``: ``Kept.observed``)
    is ``back``, what it was in the inverse's fresh process; else the miss. f(x) crossed
    pickled, and its pickle is the subject's code (``__reduce__``): an object that hands
    the other process other state than it shows in its own (its input, say) would hold
    there alone."""
    tag, value = observed
    if tag == OBSERVED:
        alike = Check(rel).outcome(back, value, PICKLED_NOTE)
        return None if alike.held else alike
    said = f"(it raised {value})" if tag == OBSERVED_RAISED else f"(it gave {value})"
    return Outcome(False, canonical(back), said, ["(inverse in f's process)"], PICKLED_NOTE)


def _encoded_types(rel: dict) -> list[str]:
    wanted = (rel.get("params") or {}).get("encoded")
    return [wanted] if isinstance(wanted, str) else list(wanted or [])


def invariance(rel: dict, x: Any, calls: Calls, **_) -> Outcome:
    out = calls.run({"f(x)": {"ops": []}, "f(T(x))": {"ops": [["transform", rel.get("transform")]]}})
    return Check(rel).outcome(out["f(x)"], out["f(T(x))"], "f(x) vs f(T(x))")


def bound(rel: dict, x: Any, calls: Calls, **_) -> Outcome:
    params = rel.get("params") or {}
    if "raises" in params:
        result = calls.raw({"ops": []})
        if "raised" in result:
            raised = result["raised"]
            held = params["raises"] in (raised.get("classes") or [])
            return Outcome(held, params["raises"], raised.get("type"), [] if held else ["(exception class)"], "edge")
        return Outcome(False, params["raises"], canonical(result["ok"]), ["(no exception)"], "edge")
    got = calls.run({"edge": {"ops": []}})["edge"]
    return Check(rel).outcome(params.get("equals"), got, "edge")


KINDS: dict[str, Callable[..., Outcome]] = {
    "permutation": permutation, "idempotence": idempotence, "replay_ingest": replay_ingest,
    "split_merge": split_merge, "monotonic": monotonic, "roundtrip": roundtrip,
    "invariance": invariance, "bound": bound,
}


def evaluate(rel: dict, inputs: list[Any], seed: int, calls_for: Callable[[int], Calls],
             merge: Callable | None = None, wire: Callable[[Any], str] | None = None,
             labels: list[str] | None = None) -> Outcome:
    """Run relation ``rel`` (a catalog mapping) over each source input; first miss wins.

    ``inputs`` is ``[corpus_rows]`` for a lease or one entry per seed for seeds;
    ``calls_for(index)`` gives the Calls that reach the subject with input ``index``.
    ``seed`` (drawn per run, SPEC §7) draws every order and split point; ``merge`` is the
    split_merge adapter, loaded by the judge from the base oracle. Raises SubjectFailed
    (a call gave no output) and whatever the judge's own steps raise (a field that is not a
    number, a merge adapter that raised): the worker reports either as a miss. ``labels``:
    words naming each input in a note (default "seed row N" when there are several).
    """
    kind = KINDS[rel["kind"]]
    rng = random.Random(seed)
    last = Outcome(True, note="no input")
    vacuous = bool(inputs)
    # a bound states its own answer, a roundtrip gives its input back: neither's output proves
    # nothing by being empty, and a NaN a roundtrip keeps was in its input
    proves_by_output = rel["kind"] not in ("bound", "roundtrip")
    nan_counts = not rel.get("nan_ok") and proves_by_output
    nan = None
    for index, x in enumerate(inputs):
        label = labels[index] if labels else f"seed row {index + 1}" if len(inputs) > 1 else ""
        try:
            outcome = kind(rel, x, rng=rng, calls=calls_for(index), merge=merge, wire=wire)
        except SubjectFailed as exc:  # a raise names the input it raised on, as a disagreement does
            if label and not labels:
                exc.error = dict(exc.error, message=f"{label} {compact_text(x, 80)}: {exc.error.get('message', '')}")
            raise
        if label:
            outcome.note = f"{label}: {outcome.note}"
        if not outcome.held:
            return outcome
        if nan_counts and nan is None:
            found = _nan_path(outcome.source)
            nan = None if found is None else (found[1], (f"{label}: " if label else "")
                                              + path_text(found[0]))
        empty_in = isinstance(x, (list, dict, str, tuple)) and not x
        vacuous = vacuous and proves_by_output and not empty_in and _empty(outcome.source) and _empty(outcome.followup)
        last = outcome
    if vacuous and not rel.get("empty_ok"):
        last.vacuous = True
        last.note = "both outputs empty for a non-empty input: the relation proved nothing (empty_ok: true allows it)"
    if nan is not None and not last.vacuous:
        last.vacuous = True
        what, where = nan
        last.note = (f"NaN at {where} in both outputs: a NaN equals nothing, so the relation proved "
                     "nothing there (nan_ok: true allows it)" if what != what else
                     f"{what} at {where} in both outputs: an infinite value absorbs every change (a sum "
                     "that reached it stays there in any order), so the relation proved nothing there "
                     "(nan_ok: true allows it)")
    return last


def _nan_path(value: Any, path: tuple = (), depth: int = 0) -> tuple | None:
    """(path, the value) of the first place (keys and indexes) where ``value`` holds a float
    that is not finite (NaN, inf, -inf), or None."""
    if isinstance(value, float):
        return None if math.isfinite(value) else (path, value)
    if depth > 50:
        return None
    items = value.items() if isinstance(value, dict) else enumerate(value) \
        if isinstance(value, (list, tuple)) else ()
    for key, item in items:
        found = _nan_path(item, path + (key,), depth + 1)
        if found is not None:
            return found
    return None
