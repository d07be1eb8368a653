"""The input of one call, built in the subject's process from the judge's recipe (SPEC §4, §7).

A part of the subject's fork server (``harness.py``; standard library only, merged into its
script by ``script.py``): reading the corpus or the seeds file once, and the ops (order, slice,
scale, raise a field, transform, a value sent back) that turn it into one call's input.
"""

import base64
import csv
import gzip
import json

from relconsole.engine.relations.subject.wire import Record, decode


def read_corpus(path):
    """Rows of a CSV (header row; values as strings) or JSON-lines corpus, gzip or not.

    Rows are dicts as ``csv.DictReader`` gives them (a short row padded with None, a long
    one with its extra cells under the key None). Equal cells share one str object: a corpus
    of repeated values takes a third of the memory, and a forked child that reads every row
    copies a few pages of strings instead of every page of them.
    """
    opener = gzip.open if path.endswith(".gz") else open
    stem = path[:-3] if path.endswith(".gz") else path
    with opener(path, "rt", encoding="utf-8", newline="") as handle:
        if stem.endswith((".jsonl", ".ndjson")):
            return [json.loads(line) for line in handle if line.strip()]
        reader = csv.reader(handle)
        header = next(reader, [])
        width = len(header)
        shared = {}.setdefault  # shared(cell, cell): the first equal cell seen
        return [dict(zip(header, map(shared, row, row))) if len(row) == width else _ragged(header, row)
                for row in reader if row]


def _csv_rows(path, rows):
    """Whether ``rows`` (read from corpus ``path``) are dicts of str cells: a CSV corpus with no
    row longer than its header (whose extra cells are a list under the key None)."""
    stem = path[:-3] if path.endswith(".gz") else path
    return not stem.endswith((".jsonl", ".ndjson")) and all(None not in row for row in rows)


def _ragged(header, row):
    out = dict(zip(header, row + [None] * (len(header) - len(row))))
    if len(row) > len(header):
        out[None] = row[len(header):]
    return out


def read_seeds(path):
    """One JSON value per non-blank line of a seeds file."""
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def raise_field(value, name, step, cap):
    """``value`` with field ``name`` raised by ``step`` (capped at ``cap``) in every row.

    A row is a mapping; a list of rows is raised row by row. Numbers stay numbers; text (a
    CSV cell) is read as a number and written back as text. Raises ValueError for text that
    is not a number.
    """
    if isinstance(value, list):
        return [raise_field(v, name, step, cap) for v in value]
    if not isinstance(value, dict) or name not in value:
        return value
    old = value[name]
    number = float(old) if isinstance(old, str) else old
    new = number + step if cap is None else min(number + step, cap)
    raised = dict(value)
    raised[name] = str(new) if isinstance(old, bool) or not isinstance(old, (int, float)) else type(old)(new)
    return raised


def step_changes_nothing(value, name, step):
    """Whether raising ``name`` by ``step`` (ignoring any cap) leaves every row that has the
    field as it was: an integer field raised by less than 1 is written back unchanged, so the
    follow-up input is the source input and the relation compares f(x) with itself. False
    when no row has the field (``check_raisable`` reports that)."""
    rows = value if isinstance(value, list) else [value]
    seen = False
    for row in rows:
        if isinstance(row, list):
            if not step_changes_nothing(row, name, step):
                return False
            continue
        if not isinstance(row, dict) or name not in row:
            continue
        seen = True
        if raise_field(row, name, step, None) != row:
            return False
    return seen


def check_raisable(value, name):
    """Raise ValueError where ``raise_field(value, name, ...)`` would, building nothing
    (the judge's check that the field is a number in every row)."""
    rows = value if isinstance(value, list) else [value]
    for row in rows:
        if isinstance(row, list):
            check_raisable(row, name)
        elif isinstance(row, dict) and name in row and isinstance(row[name], str):
            float(row[name])


def pack_order(order):
    """An order (a list of indexes) as wire text: base64 of native uint32s, a twelfth of
    its JSON and read back in C (``unpack_order``)."""
    import array
    return base64.b64encode(array.array("I", order).tobytes()).decode("ascii")


def unpack_order(text):
    import array
    order = array.array("I")
    order.frombytes(base64.b64decode(text))
    return order


def build_input(base, ops, adapters, kept=None):
    """The call's input: ``base`` (the corpus rows or one seed value) through ``ops`` in order.

    ``["order", [i, ...] or packed text]`` reorders, ``["fresh"]`` copies rows and cells anew,
    ``["slice", a, b]`` cuts, ``["quarter"]`` keeps every fourth item of a list, reversed (the input
    of a repeated call's first calls), ``["scale", k]`` repeats the rows k times (``scaled``), ``["raise", field, step, max]``
    raises a field, ``["transform", ref]`` applies an adapter, ``["value", wire]`` replaces
    the input with a value the judge sent (the source output, for idempotence), ``["kept",
    token]`` with the decoded output the server kept from the call made with ``keep: token``
    (``kept``, a one-item list; a roundtrip's f(x), which the judge never needs to see).
    """
    value = base
    for op in ops:
        if op[0] == "kept":
            value = _live(kept.pop())
            continue
        if op[0] == "order":  # a list of indexes, or one packed (pack_order)
            order = unpack_order(op[1]) if isinstance(op[1], str) else op[1]
            value = list(map(value.__getitem__, order))
        elif op[0] == "fresh":
            value = _fresh(value)
        elif op[0] == "quarter":  # what a repeated call's first two calls get (``_first_of_two``)
            value = value[::-4] if type(value) is list and len(value) > 1 else value
        elif op[0] == "scale":
            value = scaled(value, op[1])
        elif op[0] == "slice":
            value = list(value[op[1]:op[2]])
        elif op[0] == "raise":
            value = raise_field(value, op[1], op[2], op[3])
        elif op[0] == "transform":
            value = adapters[op[1]](value)
        elif op[0] == "value":
            value = _live(decode(op[1].encode("utf-8")))
        else:
            raise ValueError(f"unknown input op {op[0]!r}")
    if value is base:  # the shared corpus: a subject that edits it in place edits only its copy
        value = list(value) if isinstance(value, list) else value
    return value


def scaled(rows, times):
    """``rows`` (a list) repeated ``times`` times, each copy of a dict row a new dict: an input
    as large as production's, made of the corpus's own rows (a relation's ``params.scale``).
    Raises ValueError for a value that is not a list."""
    if type(rows) is not list:
        raise ValueError(f"a scaled input needs a list of rows, got {type(rows).__name__}")
    return [dict(row) if type(row) is dict else row for _ in range(int(times)) for row in rows]


def _fresh(value):
    """A deep copy of ``value`` made in its current order: new row and cell objects, so where
    they sit in memory (their ``id``) says nothing of the corpus's file order or of the
    objects other calls were given. Equal cells stay one shared object, as in the corpus."""
    import marshal
    return marshal.loads(marshal.dumps(value))


def _live(value):
    """A decoded value as the subject would have it (a Record cannot be rebuilt: refused)."""
    if isinstance(value, Record):
        raise TypeError(f"a {value.type} output cannot be fed back to the subject")
    if isinstance(value, list):
        return [_live(v) for v in value]
    if isinstance(value, dict):
        return {k: _live(v) for k, v in value.items()}
    return value
