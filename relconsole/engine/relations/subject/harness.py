"""A subject process: imports the code under review, makes one call, writes the output as data.

Standard library only, and nothing in it names the tool that starts it: this file is copied
to a scratch folder (compiled, ``main.pyc``, its code named ``<string>`` as ``python -c``
names it) and run as a plain script (``python -s -S -P main.pyc``), so the code under
review finds no judge in ``sys.modules``, on ``sys.path`` or in its environment.

The script is a fork server (SPEC §7 "The judge and the subject"). It reads one init frame
(tree root, import roots, site folders, the input file), reads the input once, then answers
call frames one at a time: for each it forks a child that builds its input from the recipe,
imports the subject *after* the fork, makes one call and writes one result; the server waits
for it (with the call's timeout), kills every process the call left behind and sends the
result's bytes back unread. A child never sees another child's state: each gets a fresh copy
of the server, a private HOME and TMPDIR, and is gone before the next starts.

Frames, both ways: one JSON header line, then ``size`` raw bytes when the header says so.

The wire format of a value (``encode`` / ``decode``) is strict JSON: null, booleans, numbers
(an int never has a point, a float always has one or an exponent, or is NaN/Infinity), strings,
arrays (lists) and objects (dicts with str keys). Every other type is an object with one key
that starts with NUL: ``\\0t`` tuple, ``\\0s`` set, ``\\0f`` frozenset, ``\\0b`` bytes (base64),
``\\0m`` a dict with other keys ([[k, v], ...]), ``\\0dc``/``\\0nt`` a dataclass or named tuple
([type, {field: value}]), ``\\0e`` an Enum ([type, name, value]), ``\\0dec`` Decimal (text),
``\\0d`` date, ``\\0dt`` datetime (ISO text). A real key that starts with NUL gets one more NUL.
Anything else is not encoded: the result says which type (the judge refuses to compare it).
"""

import base64
import csv
import dataclasses
import datetime
import decimal
import enum
import gc
import gzip
import itertools
import json
import os
import random
import select
import shutil
import signal
import sys
import tempfile
import time
import traceback

MAX_DEPTH = 200  # nesting of one output
MAX_BYTES = 256 << 20  # bytes of one encoded result
TAG = "\0"


class Unencodable(Exception):
    """An output value of a type the wire format does not carry (``args[0]``: module.Qualname)."""


def type_name(value):
    cls = type(value)
    return f"{getattr(cls, '__module__', '?')}.{getattr(cls, '__qualname__', cls.__name__)}"


def _plain_key(key):
    return key if not key.startswith(TAG) else TAG + key


_SCALARS = frozenset({str, int, float, bool, type(None)})
_STR = frozenset({str})


_DICT = frozenset({dict})


def _plain_keys(keys):
    return _STR.issuperset(map(type, keys)) and TAG not in "".join(keys)


def _flat(value, cls):
    """Whether JSON carries ``value`` as it is (C-speed tests): a list of scalars, a dict of
    str keys (none with a NUL) and scalar values, or a list of such dicts (the rows of a
    table). Exact types only: a subclass is walked."""
    if cls is dict:
        return _plain_keys(value) and _SCALARS.issuperset(map(type, value.values()))
    if _SCALARS.issuperset(map(type, value)):
        return True
    return (_DICT.issuperset(map(type, value)) and _plain_keys(set(itertools.chain.from_iterable(value)))
            and _SCALARS.issuperset(map(type, itertools.chain.from_iterable(map(dict.values, value)))))


def _wire(value, depth):
    """``value`` as JSON-able data in the wire format (see the module docstring)."""
    if depth > MAX_DEPTH:
        raise OverflowError(f"the output nests deeper than {MAX_DEPTH} levels")
    cls = type(value)
    if value is None or cls is bool or cls is str or cls is float:
        return value
    if cls is int:
        return value
    deeper = depth + 1
    if (cls is list or cls is dict) and _flat(value, cls):
        return value
    if cls is list:
        return [_wire(v, deeper) for v in value]
    if cls is dict:
        if all(type(k) is str for k in value):
            return {_plain_key(k): _wire(v, deeper) for k, v in dict.items(value)}
        return {TAG + "m": [[_wire(k, deeper), _wire(v, deeper)] for k, v in dict.items(value)]}
    if isinstance(value, enum.Enum):
        return {TAG + "e": [type_name(value), value.name, _wire(value.value, deeper)]}
    if cls is tuple:
        return {TAG + "t": [_wire(v, deeper) for v in value]}
    if cls is set or cls is frozenset:
        return {TAG + ("s" if cls is set else "f"): [_wire(v, deeper) for v in value]}
    if cls is bytes or cls is bytearray:
        return {TAG + "b": base64.b64encode(bytes(value)).decode("ascii")}
    if cls is decimal.Decimal:
        return {TAG + "dec": str(value)}
    if cls is datetime.date:
        return {TAG + "d": value.isoformat()}
    if cls is datetime.datetime:
        return {TAG + "dt": value.isoformat()}
    if isinstance(value, tuple) and isinstance(getattr(cls, "_fields", None), tuple):
        if len(cls._fields) != tuple.__len__(value):  # items no field names would go unseen
            raise Unencodable(f"{type_name(value)} (a tuple of {tuple.__len__(value)} items with "
                              f"{len(cls._fields)} field names)")
        fields = {str(name): _wire(item, deeper) for name, item in zip(cls._fields, tuple.__iter__(value))}
        return {TAG + "nt": [type_name(value), fields]}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        if isinstance(value, (dict, list, tuple, set, frozenset, str, bytes, int, float)):
            raise Unencodable(type_name(value))  # a dataclass that is also a container: which is the value?
        fields = {f.name: _wire(object.__getattribute__(value, f.name), deeper) for f in dataclasses.fields(value)}
        return {TAG + "dc": [type_name(value), fields]}
    base = _base_value(value)
    if base is not None:
        overridden = _overridden(cls)
        if overridden:  # production reads it through the override, the judge would not
            raise Unencodable(f"{type_name(value)} (it overrides {overridden})")
        return _wire(base, depth)
    raise Unencodable(type_name(value))


BUILTIN_BASES = (str, bool, int, float, list, dict)
# a subclass may add these, and methods of its own; anything else of its base it overrides
# (``__getitem__``, ``get``, ``__iter__``, ``__add__`` ...) makes it another value to its callers
# than its storage is, and only a canon: adapter says which one to compare
HARMLESS = frozenset({"__module__", "__qualname__", "__doc__", "__dict__", "__weakref__", "__slots__",
                      "__init__", "__new__", "__repr__", "__init_subclass__", "__class_getitem__",
                      "__annotations__", "__orig_bases__", "__parameters__", "__firstlineno__",
                      "__static_attributes__", "__match_args__", "__getstate__", "__reduce__", "__reduce_ex__"})


def _trusted_subclasses():
    """The standard library's own subclasses of dict, which override consistently with storage."""
    import collections
    return frozenset({collections.OrderedDict, collections.defaultdict, collections.Counter})


_TRUSTED = _trusted_subclasses()
# a C type's own methods (numpy.float64's): consistent with its storage as far as Python code
# can tell, and no Python code can write one (compiled modules and ctypes are review flags)
_C_DESCRIPTORS = (type(dict.get), type(int.__add__), type(int.real), type(dict.__dict__["fromkeys"]),
                  type(type.__dict__["__name__"]))


def _redefines(attr, mro):
    """Whether class attribute ``attr`` is code of the subject's: anything but a C type's own
    method (one a class borrowed from an unrelated type counts)."""
    if isinstance(attr, _C_DESCRIPTORS):
        return getattr(attr, "__objclass__", None) not in mro
    return attr is not None  # ``__hash__ = None``: unhashable, no other value


def _overridden(cls):
    """``base.name`` of the first attribute of its built-in base that ``cls`` (or a class
    between them) redefines beyond ``HARMLESS``, or "" when it only adds."""
    base = next((b for b in BUILTIN_BASES if issubclass(cls, b)), None)
    for klass in cls.__mro__:
        if klass is base or klass in BUILTIN_BASES:
            break
        if klass in _TRUSTED:
            continue
        for name, attr in vars(klass).items():
            if name not in HARMLESS and (hasattr(base, name) or name in LOOKUP_HOOKS) and _redefines(attr, cls.__mro__):
                return f"{base.__name__}.{name}"
    return ""


# hooks the built-in base does not define but calls when a class adds them: a dict subclass's
# __missing__ answers a lookup of a key its storage never held (a sum computed on read, round 16)
LOOKUP_HOOKS = frozenset({"__missing__"})


def _base_value(value):
    """A subclass of str, int, float, list or dict as its built-in value, read through the
    built-in type's own methods (an overridden ``__eq__``, ``__iter__`` or ``__str__`` is
    never asked), or None for any other type."""
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, bool):
        return bool(int.__int__(value))
    if isinstance(value, int):
        return int.__int__(value)
    if isinstance(value, float):
        return float.__float__(value)
    if isinstance(value, list):
        return list(list.__iter__(value))
    if isinstance(value, dict):
        return dict(dict.items(value))
    return None


def encode(value):
    """The wire bytes of ``value``. Raises Unencodable, OverflowError (too deep), ValueError."""
    return json.dumps(_wire(value, 0), ensure_ascii=False, separators=(",", ":")).encode("utf-8")


class Record:
    """A decoded dataclass, named tuple or Enum: ``kind`` (dataclass|namedtuple|enum), ``type``
    (module.Qualname as the subject named it) and ``value`` (a dict of fields, or (name, value))."""

    __slots__ = ("kind", "type", "value")

    def __init__(self, kind, type_, value):
        self.kind, self.type, self.value = kind, type_, value

    def _key(self):
        return (self.kind, self.type, self.value if self.kind == "enum" else tuple(sorted(self.value.items(), key=str)))

    def __eq__(self, other):
        return isinstance(other, Record) and (self.kind, self.type, self.value) == (other.kind, other.type, other.value)

    def __hash__(self):
        try:
            return hash(self._key())
        except TypeError:
            return hash((self.kind, self.type))

    def __repr__(self):
        return f"{self.type}({self.value!r})"


def _hashable(value):
    try:
        hash(value)
    except TypeError:
        raise ValueError("a set member or mapping key that cannot be one") from None
    return value


def _text(body):
    if type(body) is not str:
        raise ValueError("a tagged value whose body is not text")
    return body


def _hook(node):
    """json's ``object_hook``: one decoded JSON object (its members already decoded, innermost
    first) as the value it stands for: a tagged value, or a mapping with its keys unescaped."""
    if len(node) == 1:
        (key, body), = node.items()
        if key[:1] == TAG and key[1:2] != TAG:
            return _tagged(key[1:], body)
    if TAG in "".join(node):  # C-speed test; only a key that starts with TAG is escaped
        return {(k[1:] if k.startswith(TAG) else k): v for k, v in node.items()}
    return node


def _distinct(made, body):
    """``made`` (a set or dict built from ``body``'s members) when no two members collapsed
    into one: members the subject kept apart (str subclasses with their own ``__eq__``) but
    that are one value as data would show the judge one of them and production another."""
    if len(made) != len(body):
        raise ValueError("members that are distinct in the output but one value as data")
    return made


def _tagged(tag, body):
    if tag == "t":
        return tuple(body)
    if tag in ("s", "f"):
        items = [_hashable(v) for v in body]
        return _distinct(set(items) if tag == "s" else frozenset(items), body)
    if tag == "b":
        return base64.b64decode(_text(body).encode("ascii"), validate=True)
    if tag == "m":
        return _distinct({_hashable(k): v for k, v in body}, body)
    if tag == "dec":
        return decimal.Decimal(_text(body))
    if tag == "d":
        return datetime.date.fromisoformat(_text(body))
    if tag == "dt":
        return datetime.datetime.fromisoformat(_text(body))
    if tag in ("dc", "nt"):
        name, fields = body
        return Record("dataclass" if tag == "dc" else "namedtuple", str(name),
                      {str(k): v for k, v in dict(fields).items()})
    if tag == "e":
        name, member, value = body
        return Record("enum", str(name), (str(member), value))
    raise ValueError(f"unknown tag {tag!r}")


DECODE_ERRORS = (ValueError, TypeError, KeyError, AttributeError, RecursionError, OverflowError)


def loads(data):
    """JSON ``data`` (bytes or text) with every wire-format object in it decoded. Raises the
    ``DECODE_ERRORS`` json and the tags raise on data that is not the wire format."""
    return json.loads(data, object_hook=_hook)


def decode(data):
    """The value wire ``data`` (bytes) stands for. Raises ValueError (not the wire format)."""
    try:
        return loads(data)
    except DECODE_ERRORS as exc:
        raise ValueError(f"not a value in the wire format: {type(exc).__name__}: {str(exc)[:200]}") from None


# -- inputs -----------------------------------------------------------------------------------

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


def _given_corpus(control):
    """The corpus rows the judge sends after the init frame (``{"op": "input", "size": n}``
    and n bytes of marshal data: the rows it decoded, so that a server loads them in a fifth
    of the time a CSV parse takes), or None when the judge says to read the file
    (``{"op": "input", "read": true}``). Raises ValueError for data that is not a list."""
    import marshal
    frame = _read_frame(control)
    if not isinstance(frame, dict) or frame.get("op") != "input":
        raise ValueError("the judge sent no input frame")
    if frame.get("read"):
        return None
    data = control.read(int(frame["size"]))
    rows = marshal.loads(data)
    if type(rows) is not list:
        raise ValueError("the judge's rows are not a list")
    return rows


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


# -- one call, in the forked child -----------------------------------------------------------

def resolve(ref):
    """The callable ``module:attr.path`` names (entry-point style). Raises ImportError, AttributeError."""
    import importlib
    module_name, _, attr_path = ref.partition(":")
    target = importlib.import_module(module_name)
    for part in attr_path.split("."):
        target = getattr(target, part)
    return target


class _OracleOnly:
    """A meta-path finder for the oracle's own top-level packages, looked up in the tree root
    alone, while the rest of the tree is not yet on ``sys.path``."""

    def __init__(self, names, root):
        self.names, self.root = set(names), root

    def find_spec(self, name, path=None, target=None):
        from importlib.machinery import PathFinder
        if path is None and name in self.names:
            return PathFinder.find_spec(name, [self.root])
        return None


def _tree_files(root, frames_or_files):
    """The tree-relative paths of the files named that are in the tree, however they were
    named (``/proc/self/root/...``, a link, ``..``): each is resolved before it is judged."""
    root = os.path.realpath(root)
    out = []
    for filename in frames_or_files:
        if not isinstance(filename, str):
            continue
        try:
            path = os.path.realpath(filename)
        except (TypeError, ValueError, OSError):
            continue
        if path.startswith(root + os.sep):
            out.append(os.path.relpath(path, root).replace(os.sep, "/"))
    return out


def _raised(exc, root):
    frames = traceback.extract_tb(exc.__traceback__)
    try:
        message = str(exc)
    except BaseException:  # a hostile __str__
        message = "(the exception could not be shown)"
    names = []
    for cls in type(exc).__mro__:
        names += [cls.__name__, f"{cls.__module__}.{cls.__qualname__}"]
    where = f"{os.path.basename(frames[-1].filename)}:{frames[-1].lineno}" if frames else ""
    missing = getattr(exc, "name", None) if isinstance(exc, ImportError) else None
    return {"type": type(exc).__name__, "classes": names, "message": message[:2000], "where": where,
            "files": _tree_files(root, [f.filename for f in frames]),
            "module": missing if isinstance(missing, str) else None}


_PRELOADED = {}  # module name -> its file, loaded by the server before any tree path was importable


def _imported(root, opened=()):
    """Tree files the call used: every module's file, and every file it opened (``opened``,
    absolute paths from the audit hook): a data file a subject reads binds its relation.
    A module the server had loaded (same name, same file) is none of the tree's: not resolved."""
    # an import tries __pycache__ files that are not there, and writes them where it can: neither is the tree's
    files = [path for path in opened if "__pycache__" not in path.split(os.sep) and os.path.exists(path)]
    for key, module in list(sys.modules.items()):
        name = getattr(module, "__file__", None)
        if isinstance(name, str) and _PRELOADED.get(key) != name:
            files.append(name)
    return sorted(set(_tree_files(root, files)))


def _record_opens(opened):
    """An audit hook adding the absolute path of every file the call opens to ``opened``."""
    add, absolute = opened.add, os.path.abspath

    def hook(event, args):
        if event == "open" and args and isinstance(args[0], str):
            add(absolute(args[0]))
    sys.addaudithook(hook)


def _import_roots(init):
    """The tree's import roots on sys.path, after the standard library (once per call)."""
    for index, entry in enumerate(init["import_paths"]):
        sys.path.insert(init["stdlib_count"] + index, entry)


def _apply(call, init, value, adapters, stores=None):
    """The output of one call: the subject on ``value`` (and its inverse, for a roundtrip).
    ``stores``: a list the call's store is added to (mode store), to be read again later."""
    if call.get("mode") == "resolve":  # only check that every name resolves (validate): [[ref, why], ...]
        problems = []
        for ref in call.get("refs", []):
            try:
                resolve(ref)
            except Exception as exc:
                problems.append([ref, _raised(exc, init["root"])])
        return problems
    subject = resolve(call["subject"])
    if call.get("mode") == "store":
        store = subject()
        if stores is not None:
            stores.append(store)
        store.reset()
        for _ in range(int(call.get("times", 1))):  # each ingest reads its rows anew, as a replay does
            store.ingest(_fresh(value) if isinstance(value, list) else value)
        out = store.projection()
    else:
        out = subject(value)
    if call.get("inverse"):
        out = resolve(call["inverse"])(out)
    if call.get("canon"):
        out = adapters[call["canon"]](out)
    return out


class Earlier:
    """What the first calls of a repeated call left to check against the judged one.

    ``outcome``: ("ok", a ``Written`` of its wire value) or ("raised", type) of a call on the
    judged input's twin, which the judged call must repeat; or ("changed", words) when an
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
        if self.first is None:
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
    return earlier[1].same(now[1]) if earlier[0] == "ok" else earlier[1] == now[1]


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


def _decoy_input(call, adapters):
    """For a repeated call on one seed value: another seed of the relation (``decoy``, wire
    text the judge sends) through the call's own ops, or None (no other seed, or ops that
    replace the input)."""
    ops = call.get("ops", [])
    if ops[:1] and ops[0][:1] == ["value"]:  # the seed itself, sent as a value: the decoy stands in its place
        ops = ops[1:]
    if not call.get("repeat") or call.get("decoy") is None or any(op[:1] in (["kept"], ["value"]) for op in ops):
        return None
    try:
        return build_input(_live(decode(call["decoy"].encode("utf-8"))), ops, adapters)
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
    if after is None:  # an output the wire does not carry: the judged call's result says so
        return None
    if listed:
        same = before is None or _same_outcome(before, after)
        return Earlier(("checked", None if same else _second_call_words(before, after)), seen,
                       given=list(judged), original=value, first=before)
    return Earlier(after, seen, first=after)


def _outcome_of(call, init, value, adapters, stores, kept):
    """("ok", a ``Written`` of the output) or ("raised", type) of one call on ``value``; None
    for an output the wire does not carry. An output is added to ``kept`` (see ``Earlier``)
    to be read again after the judged call."""
    try:
        out = _apply(call, init, value, adapters, stores)
    except BaseException as exc:
        return "raised", type(exc).__name__
    try:
        written = Written(_wire(out, 0))
    except (Unencodable, OverflowError, RecursionError, ValueError):
        return None
    kept.append((lambda: out, written, ANSWER_CHANGED))
    return "ok", written


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
    said = {"ok": "returned", "raised": "raised"}
    if earlier[0] == now[0] == "ok":
        return "returned another value than the first"
    return (f"{said[now[0]]} {now[1] if now[0] == 'raised' else 'a value'} where the first "
            f"{said[earlier[0]]} {earlier[1] if earlier[0] == 'raised' else 'a value'}")


def _plain_main():
    """The ``__main__`` and argv of ``python -c``: its globals as that interpreter makes them
    (``__loader__`` the built-in importer, ``__builtins__``, ``__annotations__`` where this
    version adds it to a script), so the harness's own globals are not where a subject looks
    for its script, and a bare module is not a tell either."""
    import builtins
    import importlib.machinery
    import types
    script = sys.modules["__main__"]
    plain = types.ModuleType("__main__")
    plain.__loader__ = importlib.machinery.BuiltinImporter
    if "__annotations__" in vars(script):
        plain.__annotations__ = {}
    plain.__builtins__ = builtins
    sys.modules["__main__"] = plain
    sys.argv = ["-c"]


class Forked(BaseException):
    """Raised in a forked child to leave every server frame before the subject is imported:
    the subject's stack then starts at the script's top level, and no frame above it holds
    the corpus in its file order, the call's recipe or the server's state. ``job`` is
    ``[call, init, base, result_fd, kept]``; ``child`` empties it."""

    def __init__(self, job):
        super().__init__()
        self.job = job


CALL_FIELDS = ("subject", "mode", "times", "inverse", "canon", "refs", "repeat")
INIT_FIELDS = ("import_paths", "stdlib_count", "root")


def child(job):
    """Run one call and write its result to the job's fd; never returns."""
    code = 0
    try:
        call, init, base, result_fd, kept = job
        job.clear()
        adapters = {}
        finder = _OracleOnly(call.get("oracle_roots", init.get("oracle_roots", [])), init["root"])
        sys.meta_path.insert(0, finder)
        for ref in call.get("adapters", []):
            adapters[ref] = resolve(ref)  # before any tree module is importable
        sys.meta_path.remove(finder)
        for name in list(sys.modules):  # the subject re-imports a copy; it cannot patch ours
            if name.split(".", 1)[0] in finder.names:
                del sys.modules[name]
        root = init["root"]
        try:
            value = build_input(base, call.get("ops", []), adapters, kept)
        except BaseException as exc:
            value, failed = None, exc
        else:
            failed = None
        # the corpus's own rows in some order: a CSV corpus's rows are dicts of text cells
        rows_as_read = bool(init.get("flat_rows")) and all(op[:1] in (["order"], ["slice"], ["fresh"], ["scale"])
                                                           for op in call.get("ops", []))
        decoy = _decoy_input(call, adapters) if failed is None else None
        del base, kept  # only the call's own input stays in reach of the subject
        call = {k: call[k] for k in CALL_FIELDS if k in call}
        init = {k: init[k] for k in INIT_FIELDS}
        gc.collect()
        opened = set()
        _record_opens(opened)
        earlier = None
        try:
            if failed is not None:
                raise failed
            _import_roots(init)
            earlier = _first_of_two(call, init, value, adapters, rows_as_read, decoy)
            out = _apply(call, init, earlier.judged_input(value) if earlier is not None else value, adapters)
        except BaseException as exc:
            body = {"raised": _raised(exc, root)}
            if isinstance(exc, SystemExit):
                body["raised"]["type"] = "SystemExit"
            if earlier is not None:
                body = _unless_history(body, earlier, ("raised", type(exc).__name__))
        else:
            try:
                body = {"ok": _wire(out, 0)}
                if earlier is not None:
                    body = _unless_history(body, earlier, ("ok", body["ok"]))
                    if "ok" in body and earlier.first_answer() is not None:
                        body["first"] = earlier.first_answer()
            except Unencodable as exc:
                body = {"unencodable": exc.args[0]}
            except (OverflowError, RecursionError, ValueError) as exc:
                body = {"unencodable": f"(output: {type(exc).__name__}: {exc})"}
        body["imported"] = _imported(root, opened)
        try:
            data = json.dumps(body, ensure_ascii=False, separators=(",", ":"), check_circular=False).encode("utf-8")
        except (ValueError, RecursionError, OverflowError, UnicodeError) as exc:  # a 5,000-digit int, a lone surrogate
            data = json.dumps({"unencodable": f"(output: {type(exc).__name__}: {str(exc)[:200]})",
                               "imported": body["imported"]}).encode("utf-8")
        view = memoryview(data)
        while view:
            view = view[os.write(result_fd, view[: 1 << 20]):]
    except BaseException:
        code = 70
    os._exit(code)


# -- the server ------------------------------------------------------------------------------

_LIBC = []


def _libc():
    """The C library (loaded once; ``ctypes`` is imported only when it is needed). Raises OSError."""
    if not _LIBC:
        import ctypes
        _LIBC.append(ctypes.CDLL(None, use_errno=True))
    return _LIBC[0]


def _prctl(option, value):
    try:
        _libc().prctl(option, value, 0, 0, 0)
    except (OSError, AttributeError):
        pass


PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_CHILD_SUBREAPER = 1, 4, 36
CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWNET = 0x00020000, 0x08000000, 0x10000000, 0x40000000
MS_NOSUID, MS_NODEV, MS_REC, MS_PRIVATE = 0x2, 0x4, 0x4000, 0x40000
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1
CALL_TMPFS = ("/tmp", "/dev/shm", "/var/tmp")  # a fresh, empty one in each call's own mount namespace
KEYCTL_JOIN_SESSION_KEYRING = 1
KEYCTL_SYSCALL = {"x86_64": 250, "aarch64": 219}  # keyctl(2) has no libc wrapper
PR_SET_SECUREBITS = 28
SECURE_NOROOT_ALL = 0x3F  # noroot, no_setuid_fixup, keep_caps: each set and locked


def own_namespaces(ask_fd, answer_fd, keep=(), readonly=()):
    """Give this call (a fresh child) state no other call can see: a new session keyring,
    a new user namespace (its own user keyrings), a new IPC namespace (System V objects,
    POSIX message queues), a new network namespace (sockets, TIME_WAIT ports, abstract
    unix names; ``lo`` up) and a new mount namespace with an empty tmpfs on every writable
    scratch folder (``CALL_TMPFS``; ``keep``: paths that must stay in sight). The server maps the call's uid and gid in it to its own
    (``map_ids``: a process cannot map uid 0 for itself without CAP_SETFCAP); then every
    capability the new namespace gave is dropped for good. Returns "all" (every namespace),
    "some" (user and IPC only: mounts or the network were refused) or "" (none: the kernel
    has no user namespaces; the call then shares them)."""
    try:
        import ctypes
        libc = _libc()
    except OSError:
        os.write(ask_fd, b"n")
        return ""
    keyctl = KEYCTL_SYSCALL.get(os.uname().machine)
    if keyctl is not None:
        libc.syscall(keyctl, KEYCTL_JOIN_SESSION_KEYRING, None)
    made = "all"
    if libc.unshare(CLONE_NEWUSER | CLONE_NEWIPC | CLONE_NEWNS | CLONE_NEWNET) != 0:
        made = "some"
        if libc.unshare(CLONE_NEWUSER | CLONE_NEWIPC) != 0:
            os.write(ask_fd, b"n")
            return ""
    os.write(ask_fd, b"u")
    os.read(answer_fd, 1)
    if made == "all" and not (_private_mounts(libc, keep, readonly) and _loopback_up(libc)):
        made = "some"
    libc.prctl(PR_SET_SECUREBITS, SECURE_NOROOT_ALL, 0, 0, 0)  # uid 0 regains nothing by exec
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    libc.capset(header, (ctypes.c_uint32 * 6)())  # no effective, permitted or inheritable capability
    return made


OPEN_TREE, MOVE_MOUNT = 428, 429  # one number on every machine (syscalls added after the tables merged)
OPEN_TREE_CLONE, OPEN_TREE_CLOEXEC, AT_RECURSIVE, MOVE_MOUNT_F_EMPTY_PATH = 0x1, 0o2000000, 0x8000, 0x4
AT_FDCWD = -100


def _outermost(paths, folder):
    """The paths under ``folder`` (resolved), none inside another: what must stay in sight."""
    inside = sorted({os.path.realpath(p) for p in paths if isinstance(p, str) and p}
                    - {folder}, key=len)
    out = []
    for path in inside:
        if path.startswith(folder + os.sep) and not any(path.startswith(o + os.sep) for o in out):
            out.append(path)
    return out


MS_RDONLY, MS_NOEXEC, MS_REMOUNT, MS_BIND = 1, 8, 32, 4096
MS_NOATIME, MS_NODIRATIME, MS_RELATIME = 1024, 2048, 1 << 21
ST_RELATIME = 4096


def _read_only(libc, folders):
    """Each of ``folders`` (the reviewer's git directory and checkout) bound onto itself
    read-only in the call's mount namespace: a subject without bubblewrap could otherwise
    write through the oracle export's hard links into its store, or plant a parse cache that
    a later run loads (red team). The new mount keeps the flags the kernel locks on it
    (nosuid, nodev, noexec, atime). False when the kernel refused a step."""
    for folder in folders:
        if not os.path.isdir(folder):
            continue
        path = folder.encode()
        if libc.mount(path, path, None, MS_BIND | MS_REC, None) != 0:
            return False
        flags = os.statvfs(folder).f_flag
        locked = flags & (MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_NOATIME | MS_NODIRATIME)
        locked |= MS_RELATIME if flags & ST_RELATIME else 0
        if libc.mount(None, path, None, MS_BIND | MS_REMOUNT | MS_RDONLY | locked, None) != 0:
            return False
    return True


def _private_mounts(libc, keep, readonly=()):
    """In the call's own mount namespace: ``readonly`` folders bound read-only
    (``_read_only``), then an empty tmpfs on each of ``CALL_TMPFS`` that exists, with the
    folders of ``keep`` that were under it (the tree, the interpreter, site folders, when
    they live in /tmp) cloned first and put back at their paths. Returns False when the
    kernel refused any step (the call then keeps the server's folders, wiped between calls)."""
    if libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None) != 0:
        return False
    if not _read_only(libc, readonly):
        return False
    for folder in CALL_TMPFS:
        if not os.path.isdir(folder) or os.path.islink(folder):
            continue
        kept = []
        for path in _outermost(keep, os.path.realpath(folder)):
            fd = libc.syscall(OPEN_TREE, AT_FDCWD, path.encode(), OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE)
            if fd < 0:
                return False
            kept.append((path, fd))
        if libc.mount(b"tmpfs", folder.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, b"mode=1777") != 0:
            return False
        for path, fd in kept:
            os.makedirs(path, exist_ok=True)
            moved = libc.syscall(MOVE_MOUNT, fd, b"", AT_FDCWD, path.encode(), MOVE_MOUNT_F_EMPTY_PATH)
            os.close(fd)
            if moved != 0:
                return False
    return True


def _loopback_up(libc):
    """Bring ``lo`` up in the call's own network namespace (a new one has it down). Through
    the C library: importing ``socket`` here would cost each call 8 ms."""
    import ctypes
    fd = libc.socket(2, 2, 0)  # AF_INET, SOCK_DGRAM
    if fd < 0:
        return False
    try:
        request = ctypes.create_string_buffer(b"lo", 40)  # struct ifreq: name[16], then short flags
        if libc.ioctl(fd, SIOCGIFFLAGS, request) != 0:
            return False
        flags = int.from_bytes(request.raw[16:18], sys.byteorder) | IFF_UP
        request[16:18] = flags.to_bytes(2, sys.byteorder)
        return libc.ioctl(fd, SIOCSIFFLAGS, request) == 0
    finally:
        os.close(fd)


def map_ids(pid, ask_fd, answer_fd):
    """The server's half of ``own_namespaces``: once the child has its user namespace, map
    its uid and gid there to the server's own, so the call keeps its uid; then let it go."""
    if os.read(ask_fd, 1) == b"u":
        uid, gid = os.getuid(), os.getgid()
        for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
            try:
                fd = os.open(f"/proc/{pid}/{name}", os.O_WRONLY)
                try:
                    os.write(fd, text.encode())
                finally:
                    os.close(fd)
            except OSError:
                pass
        os.write(answer_fd, b"m")


# -- the page cache -------------------------------------------------------------------------
# Every process that reads a file shares its cached pages, so which pages of a big read-only file
# are cached can carry a memo from one call to the next: written by evicting pages, read by asking
# which are cached. A seccomp filter takes both away from each call: the questions (mincore,
# cachestat, a read that must not wait, io_uring) fail as on a kernel without them, and the
# evictions (fadvise DONTNEED/NOREUSE, madvise COLD/PAGEOUT) succeed without doing anything.
SECCOMP_ARCH = {  # machine: (AUDIT_ARCH_*, bit that marks another ABI's numbers, {syscall: number})
    "x86_64": (0xC000003E, 0x40000000, {"mincore": 27, "madvise": 28, "fadvise64": 221, "preadv2": 327,
                                        "pwritev2": 328, "io_uring_setup": 425, "io_uring_enter": 426,
                                        "io_uring_register": 427, "process_madvise": 440, "cachestat": 451}),
    "aarch64": (0xC00000B7, 0, {"mincore": 232, "madvise": 233, "fadvise64": 223, "preadv2": 286,
                                "pwritev2": 287, "io_uring_setup": 425, "io_uring_enter": 426,
                                "io_uring_register": 427, "process_madvise": 440, "cachestat": 451}),
}
ENOSYS, EPERM, EOPNOTSUPP = 38, 1, 95
RWF_NOWAIT = 0x8
MADV_COLD, MADV_PAGEOUT = 20, 21
POSIX_FADV_DONTNEED, POSIX_FADV_NOREUSE = 4, 5
# syscall: (argument index or None, values or bit mask that trigger, errno; 0 = succeed doing nothing)
PAGE_CACHE_RULES = {
    "mincore": (None, None, ENOSYS), "cachestat": (None, None, ENOSYS),
    "io_uring_setup": (None, None, ENOSYS), "io_uring_enter": (None, None, ENOSYS),
    "io_uring_register": (None, None, ENOSYS), "process_madvise": (None, None, EPERM),
    "preadv2": (5, RWF_NOWAIT, EOPNOTSUPP), "pwritev2": (5, RWF_NOWAIT, EOPNOTSUPP),
    "madvise": (2, (MADV_COLD, MADV_PAGEOUT), 0), "fadvise64": (3, (POSIX_FADV_DONTNEED, POSIX_FADV_NOREUSE), 0),
}
BPF_LD_ABS, BPF_JEQ, BPF_JGE, BPF_JSET, BPF_RET = 0x20, 0x15, 0x35, 0x45, 0x06
RET_ALLOW, RET_ERRNO = 0x7FFF0000, 0x00050000


def page_cache_filter(machine):
    """The classic BPF program of the seccomp filter above, as [(code, jt, jf, k)], or None
    on a machine this table does not know (the calls then share the page cache's answers)."""
    if machine not in SECCOMP_ARCH:
        return None
    arch, other_abi, numbers = SECCOMP_ARCH[machine]
    prog = [(BPF_LD_ABS, 0, 0, 4), (BPF_JEQ, 1, 0, arch), (BPF_RET, 0, 0, RET_ERRNO | ENOSYS),
            (BPF_LD_ABS, 0, 0, 0)]
    if other_abi:  # x32 numbers would bypass every rule below
        prog += [(BPF_JGE, 0, 1, other_abi), (BPF_RET, 0, 0, RET_ERRNO | ENOSYS)]
    for name, (arg, trigger, errno) in PAGE_CACHE_RULES.items():
        body = [(BPF_RET, 0, 0, RET_ERRNO | errno)]
        if arg is not None:  # the low 32 bits of the argument (the flags and advice are ints)
            tests = [(BPF_JSET, 0, 0, trigger)] if isinstance(trigger, int) else [(BPF_JEQ, 0, 0, t) for t in trigger]
            body = ([(BPF_LD_ABS, 0, 0, 16 + 8 * arg)]
                    + [(code, len(tests) - i, 0, k) for i, (code, _, _, k) in enumerate(tests)]
                    + [(BPF_RET, 0, 0, RET_ALLOW)] + body)
        prog += [(BPF_JEQ, 0, len(body), numbers[name])] + body
    return prog + [(BPF_RET, 0, 0, RET_ALLOW)]


PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2


def close_page_cache(prog):
    """Install ``prog`` (``page_cache_filter``) on this process for good; returns whether the
    kernel took it."""
    if not prog:
        return False
    try:
        import ctypes
        libc = _libc()
    except OSError:
        return False

    class Insn(ctypes.Structure):
        _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]

    class Prog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_uint16), ("filter", ctypes.POINTER(Insn))]

    insns = (Insn * len(prog))(*[Insn(*insn) for insn in prog])
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        return False
    return libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(Prog(len(prog), insns)), 0, 0) == 0


_SANDBOXED = [False]  # whether this server runs in a pid namespace of its own (kill(-1) is safe)
COMMON_MODULES = ("collections", "concurrent.futures", "contextlib", "copy", "dataclasses", "fractions",
                  "functools", "hashlib", "heapq", "itertools", "math", "operator", "re", "statistics",
                  "string", "textwrap", "typing")


def _descendants(root_pid):
    """Pids of every living process below ``root_pid`` (from /proc), deepest not first."""
    parents = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2:].split()
        parents.setdefault(int(fields[1]), []).append(int(entry))
    found, todo = [], [root_pid]
    while todo:
        for pid in parents.get(todo.pop(), []):
            found.append(pid)
            todo.append(pid)
    return found


def _no_children():
    """True when this process has no child, living or dead (the dead are reaped on the way): as
    their subreaper, it then has no descendant at all, and /proc need not be read."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return True
        if pid == 0:
            return False


def kill_descendants(sandboxed=False):
    """SIGKILL every process below this one until none is left (this server is their subreaper).

    In the sandbox's own pid namespace one ``kill(-1)`` reaches every process but this one and
    the namespace's init at once, so a process that keeps forking new pids cannot outrun it;
    outside one, the descendants found in /proc are killed round by round."""
    for _ in range(200):
        if _no_children():
            return
        if sandboxed:
            try:
                os.kill(-1, signal.SIGKILL)
            except OSError:
                pass
            time.sleep(0.001)
            continue
        pids = _descendants(os.getpid())
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        for _ in pids:  # reap what died, so the next scan sees only the living
            try:
                while os.waitpid(-1, os.WNOHANG)[0]:
                    pass
            except ChildProcessError:
                break
        time.sleep(0.005)


def uptime():
    """Seconds since boot from /proc/uptime: a clock no LD_PRELOAD'ed time library stands still
    (the subject's frozen clock freezes monotonic time too, and the server's deadlines need one)."""
    try:
        with open("/proc/uptime", "rb") as handle:
            return float(handle.read().split()[0])
    except (OSError, ValueError, IndexError):
        return time.monotonic()


def _read_frame(stream):
    line = stream.readline()
    if not line:
        return None
    return json.loads(line)


def _send(out, header, payload=b""):
    header = dict(header, size=len(payload))
    out.write(json.dumps(header).encode("utf-8") + b"\n")
    if payload:
        out.write(payload)
    out.flush()


def _stderr_tail(path):
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - 4096))
            lines = handle.read().decode("utf-8", "replace").strip().splitlines()
    except OSError:
        return ""
    return lines[-1][:500] if lines else ""


def _pin(value):
    """Hold one reference to ``value`` that no Python object holds. A child ends in
    ``os._exit`` and never needs the server's corpus freed; freeing it when the call's input
    is a copy (a decref of every row and cell, so a copy of every page the child shares with
    the server) cost a large call 0.1-0.3 s."""
    try:
        import ctypes
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(value))
    except (ImportError, AttributeError, OSError):
        pass


def serve_call(call, init, base, timeout, kept=None):
    """Fork one child for ``call``, wait for its result; returns (header, payload bytes).
    ``kept``: the value an op ``["kept", token]`` stands for, in a one-item list."""
    private = tempfile.mkdtemp(prefix="home-", dir=init["scratch"])
    err_path = os.path.join(private, ".stderr")
    read_fd, write_fd = os.pipe()
    ask_r, ask_w = os.pipe()
    answer_r, answer_w = os.pipe()
    started = uptime()
    pid = os.fork()
    if pid == 0:
        try:
            for fd in (read_fd, ask_r, answer_w):
                os.close(fd)
            os.setpgid(0, 0)
            _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
            null = os.open(os.devnull, os.O_RDWR)
            err = os.open(err_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # before /tmp is its own
            keep = [init["root"], *init["import_paths"], *init.get("site_dirs", []), *sys.path, sys.prefix,
                    sys.base_prefix, sys.exec_prefix, os.path.dirname(os.path.realpath(sys.executable))]
            made = own_namespaces(ask_w, answer_r, keep, init.get("readonly") or ())
            close_page_cache(init.get("page_cache_filter"))
            os.close(ask_w)
            os.close(answer_r)
            os.dup2(null, 0)
            os.dup2(null, 1)
            os.dup2(err, 2)
            os.closerange(3, write_fd)
            os.closerange(write_fd + 1, 1 << 16)
            work = os.path.join("/tmp" if made == "all" else private, os.path.basename(private), "work")
            os.makedirs(os.path.join(work, "tmp"))
            os.environ["HOME"] = work
            if made == "all":  # /tmp is the call's own: no TMPDIR, as in most shells
                os.environ.pop("TMPDIR", None)
            else:  # a folder of its own, but never HOME itself (HOME == TMPDIR says "a harness")
                os.environ["TMPDIR"] = os.path.join(work, "tmp")
            signal.signal(signal.SIGTERM, signal.SIG_DFL)  # the server's handler is no subject's
            tempfile.tempdir = None
            random.seed(call.get("seed", 0))
            _plain_main()
            for name in ("stdin", "stdout", "stderr"):
                setattr(sys, name, open(getattr(sys, f"__{name}__").fileno(), "w" if name != "stdin" else "r",
                                        closefd=False, encoding="utf-8",  # errors as a plain interpreter's
                                        errors="backslashreplace" if name == "stderr" else "strict"))
            _pin(base)
        except BaseException:
            os._exit(71)
        raise Forked([call, init, base, write_fd, kept])
    os.close(write_fd)
    for fd in (ask_w, answer_r):
        os.close(fd)
    try:
        map_ids(pid, ask_r, answer_w)
    except OSError:
        pass  # the child died first: its result says so
    for fd in (ask_r, answer_w):
        os.close(fd)
    chunks, size, status = [], 0, "ok"
    deadline = started + timeout
    wait_status = None
    while True:
        left = deadline - uptime()
        if left <= 0:
            status = "timeout"
            break
        if not select.select([read_fd], [], [], min(left, 0.05))[0]:
            if wait_status is None:
                done, code = os.waitpid(pid, os.WNOHANG)
                if done:  # the call is over; what it left running may still hold the pipe open
                    wait_status = code
                    kill_descendants(init.get("sandboxed"))
            continue
        chunk = os.read(read_fd, 1 << 20)
        if not chunk:
            break
        size += len(chunk)
        if size > init.get("max_bytes", MAX_BYTES):
            status = "over_cap"
            break
        chunks.append(chunk)
    os.close(read_fd)
    if status != "ok" and wait_status is None:
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass
    if wait_status is None:
        _, wait_status = os.waitpid(pid, 0)
    kill_descendants(init.get("sandboxed"))
    header = {"status": status, "seconds": max(0.0, uptime() - started)}
    if os.WIFSIGNALED(wait_status):
        header["signal"] = os.WTERMSIG(wait_status)
    else:
        header["exit"] = os.WEXITSTATUS(wait_status)
    if status == "ok" and (header.get("exit") != 0 or "signal" in header):
        header["status"] = "died"
    if header["status"] != "ok":
        header["stderr"] = _stderr_tail(err_path)
    shutil.rmtree(private, ignore_errors=True)
    return header, b"".join(chunks) if status == "ok" else b""


def keep_output(token, payload):
    """``([token, value], payload for the judge)`` for a result that holds an output: the
    output decoded here and kept for the next call, the judge sent only the files it
    imported; ``(None, payload)`` unchanged for anything else (a raise, garbage: the judge
    reads it as from any call)."""
    try:
        body = loads(payload)
    except DECODE_ERRORS:
        return None, payload
    if not isinstance(body, dict) or "ok" not in body:
        return None, payload
    imported = body.get("imported")
    imported = [p for p in imported if isinstance(p, str)] if isinstance(imported, list) else []
    return [token, body["ok"]], json.dumps(imported).encode("utf-8")


def kept_type(value):
    """The wire's word for a kept output's type: ``str``, ``bytes``, ``list``, ``dict``,
    ``int``..., a record's own type name."""
    return value.type if isinstance(value, Record) else type(value).__name__


def same_value(value, other):
    """``value == other`` with one type, for decoded data (False where == cannot tell)."""
    try:
        return type(value) is type(other) and value == other
    except (RecursionError, TypeError, ValueError):
        return False


def is_input(value, item, ops):
    """Whether a kept output is the call's input itself (``item`` for a call with no ops,
    the value a ``value`` op sent): an f that returns its input makes every roundtrip hold."""
    if ops:
        if ops[-1][:1] != ["value"]:
            return False
        try:
            item = decode(ops[-1][1].encode("utf-8"))
        except ValueError:
            return False
    return same_value(value, item)


def _add_site_dirs(dirs, skip):
    import site
    known = set()
    for entry in dirs:
        if not os.path.isdir(entry):
            continue
        sys.path.append(entry)
        known.add(entry)
        for name in sorted(os.listdir(entry)):
            if name.endswith(".pth") and name not in skip:
                site.addpackage(entry, name, known)


def empty_folder(folder, keep=""):
    """Remove everything in ``folder`` but ``keep`` and the folders on the way to it (links
    are removed, never followed)."""
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        path = os.path.join(folder, name)
        if keep and (path == keep or keep.startswith(path + os.sep)):
            continue
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            try:
                os.unlink(path)
            except OSError:
                pass


def wipe_shared(keep):
    """Empty the sandbox's own /tmp and /dev/shm but ``keep`` (the server's scratch folder), so
    no file one call wrote is there for the next; only inside a sandbox, where both are private."""
    for folder in ("/tmp", "/dev/shm"):
        empty_folder(folder, keep)


def wipe_scratch(scratch):
    """Empty the server's scratch folder (each call's home lives there): nothing a call wrote
    is there for the next."""
    empty_folder(scratch)


def remove_sysv_ipc():
    """Remove every System V shared memory segment, semaphore set and message queue (a memo a
    call could leave for the next is not a file): only in the sandbox, whose IPC namespace is
    its own."""
    try:
        libc = _libc()
    except OSError:
        return
    ipc_rmid = 0
    for table, remove in (("shm", lambda i: libc.shmctl(i, ipc_rmid, None)),
                          ("sem", lambda i: libc.semctl(i, 0, ipc_rmid)),
                          ("msg", lambda i: libc.msgctl(i, ipc_rmid, None))):
        try:
            with open(f"/proc/sysvipc/{table}") as handle:
                rows = handle.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            if len(fields) > 1 and fields[1].lstrip("-").isdigit():
                remove(int(fields[1]))


def _rewrite_exec_block(start_field, end_field, data):
    """Overwrite this process's exec-time argv or environment block (what /proc/<pid>/cmdline
    and /proc/<pid>/environ read) with ``data``, NUL-padded; nothing when it does not fit."""
    try:
        import ctypes
        with open("/proc/self/stat", "rb") as handle:
            fields = handle.read().rsplit(b")", 1)[1].split()
        start, end = int(fields[start_field - 3]), int(fields[end_field - 3])
    except (OSError, ValueError, IndexError):
        return
    if end <= start or len(data) > end - start:
        return
    ctypes.memmove(start, data + b"\0" * (end - start - len(data)), end - start)


def _disguise(argv0):
    """/proc/self/environ without the variables read at start (PYTHONHASHSEED, LD_PRELOAD,
    FAKETIME...), /proc/self/cmdline a bare interpreter: the children inherit both."""
    env = b"".join(f"{k}={v}".encode("utf-8", "surrogateescape") + b"\0" for k, v in os.environ.items())
    _rewrite_exec_block(50, 51, env)
    _rewrite_exec_block(48, 49, argv0.encode() + b"\0")


def _site_builtins():
    """``help``, ``exit``, ``quit``, ``copyright``, ``credits`` and ``license``, which ``site``
    adds to every ordinary interpreter: the server runs with -S (no .pth file of the judge's
    environment may run), and their absence would say so."""
    try:
        import site
        site.setquit()
        site.setcopyright()
        site.sethelper()
        site.ENABLE_USER_SITE = False  # what site.main() leaves under -s or in a venv (None: never ran)
    except (ImportError, AttributeError):
        pass


def _on_parent_death(signum, frame):
    kill_descendants(_SANDBOXED[0])
    os._exit(1)


# libfaketime reads this one at every timed wait: it stays in the C environment (a subject's
# os.environ and /proc/self/environ do not show it), or threaded code runs 10x slower
C_ONLY = ("FAKETIME_FORCE_MONOTONIC_FIX",)


def _setenv_c(name, value):
    try:
        _libc().setenv(name.encode(), value.encode(), 1)
    except (OSError, AttributeError):
        pass


def main():
    kept = {n: os.environ[n] for n in C_ONLY if n in os.environ}
    for name in [n for n in os.environ if n in ("PYTHONHASHSEED", "LD_PRELOAD") or n.startswith("FAKETIME")]:
        os.environ.pop(name, None)  # read at start; a subject must not see them
    for name, value in kept.items():
        _setenv_c(name, value)
    _disguise(os.path.basename(sys.executable))
    control = sys.stdin.buffer  # fd 0 and 1 are one socket: /proc/<pid>/fd cannot reopen a socket
    out = os.fdopen(os.dup(1), "wb")
    _prctl(PR_SET_DUMPABLE, 0)  # nothing without CAP_SYS_PTRACE reads this process's memory or fds
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    signal.signal(signal.SIGTERM, _on_parent_death)
    _prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    _site_builtins()
    init = _read_frame(control)
    if init is None or (init.get("parent") and os.getppid() != init["parent"]):
        return 1
    _SANDBOXED[0] = bool(init.get("sandboxed"))
    init["page_cache_filter"] = page_cache_filter(os.uname().machine)
    init["stdlib_count"] = len(sys.path)
    _add_site_dirs(init.get("site_dirs", []), set(init.get("skip_pth", [])))
    os.chdir(init["root"])
    try:
        if init.get("input_kind") == "lease":
            base = _given_corpus(control) if init.get("input_frame") else None
            base = read_corpus(init["input"]) if base is None else base
        elif init.get("input_kind") == "seeds":
            base = read_seeds(init["input"])
        else:
            base = None
        init["flat_rows"] = init.get("input_kind") == "lease" and _csv_rows(init["input"], base)
        _send(out, {"status": "ready", "records": len(base) if isinstance(base, list) else 0,
                    "python": sys.version.split()[0], "clock": time.time()})
    except Exception as exc:
        _send(out, {"status": "input_error", "error": f"{type(exc).__name__}: {exc}"[:500]})
        return 1
    for name in COMMON_MODULES:  # what an ordinary test run has loaded anyway: not paid per call
        try:
            __import__(name)
        except ImportError:
            pass
    _PRELOADED.update((key, getattr(module, "__file__", None)) for key, module in list(sys.modules.items()))
    gc.freeze()  # the corpus stays shared with the children: the collector must not touch it
    kept = None  # [token, value]: the decoded output of the last call made with "keep"
    while True:
        frame = _read_frame(control)
        if frame is None:
            return 0
        if frame.get("op") == "close":
            return 0
        call = frame["call"]
        if init.get("input_kind") == "seeds" and "seed_row" in call:
            item = base[call["seed_row"]]
        else:
            item = base
        wanted = [op[1] for op in call.get("ops", []) if op[:1] == ["kept"]]
        if wanted and (kept is None or wanted != [kept[0]]):
            _send(out, {"status": "lost", "id": frame.get("id")})
            continue
        header, payload = serve_call(call, init, item, float(frame.get("timeout", 120)),
                                     [kept[1]] if wanted else None)
        kept = None
        if call.get("keep") and header["status"] == "ok":
            kept, payload = keep_output(call["keep"], payload)
            header["kept"] = kept is not None
            if kept is not None:  # what the judge checks of an output it does not see
                header["kept_type"] = kept_type(kept[1])
                header["kept_is_input"] = is_input(kept[1], item, call.get("ops", []))
        wipe_scratch(init["scratch"])
        if init.get("sandboxed"):
            wipe_shared(init["scratch"])
            remove_sysv_ipc()
        header["id"] = frame.get("id")
        _send(out, header, payload)


def _entry():
    """``main``'s exit code, or the job of a forked child (after every server frame is gone)."""
    try:
        return main(), None
    except Forked as forked:
        return 0, forked.job


if __name__ == "__main__":
    _code, _job = _entry()
    if _job is not None:
        child(_job)
    sys.exit(_code)
