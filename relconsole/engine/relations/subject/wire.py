"""The wire format of a value between the subject and the judge (SPEC §7 "The judge and the subject").

A part of the subject's fork server (``harness.py``): standard library only, merged with the
other parts into the one script the server runs (``script.py``), and imported as a module by
the judge, which decodes what the subject wrote.

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
import dataclasses
import datetime
import decimal
import enum
import itertools
import json

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
