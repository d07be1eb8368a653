"""State kept from call to call: a repeated call's earlier calls and the checks against them (SPEC §7).

A part of the subject's fork server (``harness.py``; standard library only, merged into its
script by ``script.py``). With ``repeat``, the subject is called first on other input in the
same process (``_first_of_two``); an ``Earlier`` then says whether the judged call shows state
kept from those calls (a ``history`` result).
"""

import json
import random

from relconsole.engine.relations.subject.calls import _apply
from relconsole.engine.relations.subject.inputs import _live, build_input
from relconsole.engine.relations.subject.kept import OBSERVED, OBSERVED_RAISED, observed, observer
from relconsole.engine.relations.subject.wire import _DICT, Unencodable, _flat, _wire, decode


class Earlier:
    """What the first calls of a repeated call left to check against the judged one.

    ``outcome``: ("ok", a ``Written`` of its wire value) or ("raised", type) of a call on the
    judged input's twin, which the judged call must repeat (for a kept output the wire does
    not carry, the relation's observable of it: ``kept.observed``'s tags, a ``Written`` for
    ``OBSERVED``); or ("changed", words) when an
    earlier call changed its rows; or ("checked", words or None) when the earlier calls were
    checked against each other (a list: the two calls on the same other input). ``kept``:
    (read, a ``Written`` of what ``read()`` gave, words) of what the earlier calls left: each
    output, and each store's projection, which the judged call must leave as they were (a
    reused result object, stores that share rows). ``given``/``original``: the rows the judged call is
    handed (a copy, in the order handed) and the originals they must still equal after it."""

    def __init__(self, outcome, kept=(), given=None, original=None, first=None):
        self.outcome, self.kept = outcome, list(kept)
        self.given, self.original = given, original
        self.first = first

    def first_answer(self):
        """The process's answer on ``quarter(input)`` (see ``build_input``) for the judge to compare
        with another process's, under another string-hash seed: ``["ok", wire]`` or
        ``["raised", type name]``; None when there is none to send."""
        if self.first is None or self.first[0] not in ("ok", "raised"):
            return None
        kind, what = self.first
        return ["ok", what.value()] if kind == "ok" else ["raised", what]

    def judged_input(self, value):
        """The input the judged call gets: the copy whose rows are checked after it, else ``value``."""
        return list(self.given) if self.given is not None else value

    def problem(self, now):
        """The words of what state the calls shared, or None. ``now``: the judged call's
        ("ok", wire value) or ("raised", type)."""
        if self.outcome[0] in ("changed", "checked") and self.outcome[1]:
            return self.outcome[1]
        if self.outcome[0] != "checked" and not _same_outcome(self.outcome, now):
            return _second_call_words(self.outcome, now)
        if self.given is not None:
            changed = _changed_rows(self.given, self.original)
            if changed:
                return _changed_words(changed)
        for read, written, words in self.kept:
            try:
                same = written.same(_wire(read(), 0))
            except BaseException:
                same = False
            if not same:
                return words
        return None


STORE_CHANGED = ("a new store changed one made before it in the same process: it keeps state from "
                 "store to store (rows in a class attribute or a module's)")
ANSWER_CHANGED = ("an answer given earlier in the same process changed after a later call: it keeps state "
                  "in the objects it hands back (a reused result, a cached one it changes)")


def _second_call_words(earlier, now):
    return (f"a second call on the same input in the same process {_outcome_words(earlier, now)}: "
            "it keeps state from call to call (a counter, a first call that differs)")


def _changed_words(where):
    return (f"the call changed the input it was given in place ({where}): it keeps state "
            "in the caller's rows, which are not the subject's to change")


def _same_outcome(earlier, now):
    if earlier[0] != now[0]:
        return False
    return earlier[1].same(now[1]) if earlier[0] in ("ok", OBSERVED) else earlier[1] == now[1]


class Written:
    """A wire value as it stood when it was written down, to compare a later one with: equal
    when their sorted JSON texts are. marshal's bytes first (a third of a second for 300,000
    rows, where sorted JSON takes three): bytes alike are values alike, types included (``1``,
    ``1.0`` and ``True``, ``0.0`` and ``-0.0`` write apart); bytes apart (dict order, shared
    objects) fall back to the JSON texts. Raises what ``json.dumps`` raises for a value
    neither can write."""

    def __init__(self, wire):
        import marshal
        try:
            self.data, self.text = marshal.dumps(wire), None
        except ValueError:  # nested past marshal's own limit
            self.data, self.text = None, _json_text(wire)

    def same(self, wire):
        """Whether ``wire`` (a wire value, or another ``Written``) is this one's value."""
        import marshal
        if isinstance(wire, Written):
            return (self.data is not None and self.data == wire.data) or self.json() == wire.json()
        if self.data is not None:
            try:
                if marshal.dumps(wire) == self.data:
                    return True
            except ValueError:
                pass
        return self.json() == _json_text(wire)

    def value(self):
        """The wire value written down."""
        import marshal
        return marshal.loads(self.data) if self.data is not None else json.loads(self.text)

    def json(self):
        """The value's sorted JSON text."""
        import marshal
        return self.text if self.text is not None else _json_text(marshal.loads(self.data))


def _json_text(wire):
    return json.dumps(wire, sort_keys=True)


def _decoy_input(call, adapters, upto=None):
    """For a repeated call on one seed value: another seed of the relation (``decoy``, wire
    text the judge sends) through the call's own ops (the first ``upto`` of them: the rest
    wait for an adapter resolved later), or None (no other seed, or ops that replace the
    input)."""
    ops = call.get("ops", [])
    skip = 1 if ops[:1] and ops[0][:1] == ["value"] else 0  # the seed itself, sent as a value: the decoy stands in its place
    if not call.get("repeat") or call.get("decoy") is None or any(op[:1] in (["kept"], ["value"]) for op in ops[skip:]):
        return None
    try:
        return build_input(_live(decode(call["decoy"].encode("utf-8"))), ops[skip:upto], adapters)
    except BaseException:
        return None


def _near_twin(value, corpus_rows):
    """``value`` (a list of three or more: the judged call's own copy of its rows) as a new
    list of the same row objects, one inner item, drawn, replaced by a copy of another that
    differs from it: the same length, the same first and last items, most of the same content,
    most of the same objects. A memo whose key reads only part of its input (a length, the
    ends, a sample, the rows' ids) answers the judged call with this one's answer; None when
    every item is alike. A row this call changes is the judged call's: the check of its rows
    after it sees the change."""
    inner = random.randrange(1, len(value) - 1)
    for _ in range(8):
        other = random.randrange(len(value))
        try:
            if value[other] != value[inner]:
                break
        except BaseException:
            return None
    else:
        return None
    twin = list(value)
    twin[inner] = _copied([value[other]], corpus_rows)[0]
    return twin


def _first_of_two(call, init, value, adapters, corpus_rows=False, decoy=None):
    """With ``repeat`` (one call of each run, drawn by the judge): an ``Earlier`` of the
    subject's calls made first in this same process; None without ``repeat`` or when the
    input cannot be copied.

    Every call is a fresh process, so code that is right on a process's first call only (a
    counter, a cache filled by the first call, a first store that differs from the next) would
    always be judged right: the judged call is then a third one. For a list, the two before it
    run on other input (every fourth row, reversed), each on a copy of its own, and must agree
    with each other; the judged call, on a copy of its input, is compared by the relation with
    the first calls of other processes, so a process's later answers are judged as its first
    are, at a quarter of a call's cost for the check; right before it runs the judged input's
    near twin (``_near_twin``: one inner item replaced), whose answer a memo keyed by part of
    its input (a length, the ends) would give the judged call. For a single value, ``decoy``
    (another seed of the relation, when the judge sent one) runs first, then a copy of the value,
    and the judged call must agree with the copy. Every call's rows
    must come back as they were given (a cache kept in the caller's rows is state too), and
    the earlier calls' stores must be as they were after the judged call (mode store: stores
    that share rows). ``corpus_rows``: ``value`` is rows of a CSV corpus (dicts of str cells),
    whose row-by-row copy is a deep one."""
    if int(call.get("repeat") or 1) < 2:
        return None
    listed = type(value) is list and len(value) > 1
    twin_of = value[::-4] if listed else value
    state = random.getstate()  # each call draws what the first drew
    try:
        first = _copied(twin_of, corpus_rows) if listed else None
        twin = _copied(twin_of, corpus_rows)
        judged = _copied(value, corpus_rows) if listed else None
        decoy = _near_twin(judged, corpus_rows) if listed and len(value) > 2 else decoy
    except (ValueError, TypeError, EOFError):
        return None
    finally:
        random.setstate(state)
    stores, seen = [], []  # what each earlier call left (outputs, stores' projections), read again after the judged call
    before = None
    if first is not None:
        before = _outcome_of(call, init, first, adapters, stores, seen)
        random.setstate(state)
    elif decoy is not None:  # another seed first: a memo that forgets part of its key answers the rest with it
        _outcome_of(call, init, decoy, adapters, stores, seen)
        random.setstate(state)
    seen += _projections(stores)
    read = len(stores)
    given = list(twin) if type(twin) is list else None
    after = _outcome_of(call, init, twin, adapters, stores, seen)
    random.setstate(state)
    seen += _projections(stores[read:])
    if listed and decoy is not None:  # the judged input's near twin last: a lossy memo's hit is the judged answer
        read = len(stores)
        _outcome_of(call, init, decoy, adapters, stores, seen)
        random.setstate(state)
        seen += _projections(stores[read:])
    changed = _changed_rows(given, twin_of) if given is not None else ""
    if changed:
        return Earlier(("changed", _changed_words(changed)), seen)
    if after is None:  # an output the wire does not carry, no observable: the judged call's result says so
        return None
    if listed:
        same = before is None or _same_outcome(before, after)
        return Earlier(("checked", None if same else _second_call_words(before, after)), seen,
                       given=list(judged), original=value, first=before)
    return Earlier(after, seen, first=after)


def _outcome_of(call, init, value, adapters, stores, kept):
    """("ok", a ``Written`` of the output) or ("raised", type) of one call on ``value``; for
    an output the wire does not carry, the relation's observable of it (``_observed_outcome``),
    None without one. What is read is added to ``kept`` (see ``Earlier``) to be read again
    after the judged call."""
    try:
        out = _apply(call, init, value, adapters, stores)
    except BaseException as exc:
        return "raised", type(exc).__name__
    try:
        written = Written(_wire(out, 0))
    except (Unencodable, OverflowError, RecursionError, ValueError):
        return _observed_outcome(observer(call, adapters, init["root"]), out, kept)
    kept.append((lambda: out, written, ANSWER_CHANGED))
    return "ok", written


def _observed_outcome(observe, out, kept):
    """The outcome of an output the wire does not carry, by the relation's observable of it
    (``observe``: ``kept.observer``'s function, canon(inverse(out))): ``kept.observed``'s
    (tag, what), a ``Written`` for ``OBSERVED`` (added to ``kept``: it is read again after
    the judged call); None without an observable or for one the wire cannot write down."""
    if observe is None:
        return None
    tag, what = observed(observe, out)
    if tag != OBSERVED:
        return tag, what
    try:
        written = Written(what)
    except (OverflowError, RecursionError, ValueError):
        return None
    kept.append((lambda: observe(out), written, ANSWER_CHANGED))
    return OBSERVED, written


def _changed_rows(given, value):
    """Words for the first of ``given`` (the objects a call was handed, in the order it got
    them) that no longer equals its original in ``value``, or ""; a list merely reordered,
    shortened or added to is not changed."""
    for index, (row, original) in enumerate(zip(given, value)):
        try:
            same = type(row) is type(original) and (row == original or _same_bytes(row, original))
        except BaseException:
            same = False
        if not same:
            return f"item {index}"
    return ""


def _same_bytes(a, b):
    """Equal as marshal writes them (NaN equals itself): False where marshal cannot carry them."""
    import marshal
    try:
        return marshal.dumps(a) == marshal.dumps(b)
    except ValueError:
        return False


def _projections(stores):
    out = []
    for store in stores:
        try:
            out.append((store.projection, Written(_wire(store.projection(), 0)), STORE_CHANGED))
        except BaseException:
            continue
    return out


def _copied(value, corpus_rows=False):
    """A copy of ``value`` no call can change the original through: rows that are dicts of
    scalars (``corpus_rows``, or checked in C) copied row by row, a list of scalars as a new
    list (cells are immutable: one copy of each row is a deep copy, at a tenth of marshal's
    cost on 300,000 rows), anything else through marshal. Raises ValueError for a value
    marshal cannot carry."""
    cls = type(value)
    if corpus_rows and cls is list and _DICT.issuperset(map(type, value)):
        return list(map(dict, value))
    if cls is list and _flat(value, list):
        return list(map(dict, value)) if value and type(value[0]) is dict else list(value)
    if cls is dict and _flat(value, dict):
        return dict(value)
    import marshal
    return marshal.loads(marshal.dumps(value))


def _unless_history(body, earlier, now):
    """``body``, or a ``history`` result when the earlier calls (an ``Earlier``) and this
    one's outcome ``now`` show state kept from call to call."""
    problem = earlier.problem(now) if earlier is not None else None
    return body if problem is None else {"history": problem}


def _outcome_words(earlier, now):
    if earlier[0] == now[0] and earlier[0] in ("ok", OBSERVED):
        return "returned another value than the first"
    return f"{_what_it_did(now)} where the first {_what_it_did(earlier)}"


def _what_it_did(outcome):
    """"raised ValueError", "returned a value" or, for a kept output's observable, "returned
    a value whose inverse raised ValueError"."""
    tag, what = outcome
    if tag == "raised":
        return f"raised {what}"
    if tag == OBSERVED_RAISED:
        return f"returned a value whose inverse raised {what}"
    if tag == OBSERVED:
        return "returned a value"
    return f"returned a value whose inverse gave {what}"
