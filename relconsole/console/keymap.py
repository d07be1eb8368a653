"""The reviewer's keymap (issue 17): which keys run which console action.

Every action binding of the console has a stable id (``run``, ``merge_checklist``,
``cursor.up``, …). A TOML file maps ids to keys::

    [keys]
    merge_checklist = "k"          # one key
    run = "r,f5"                   # or several, comma-separated (a list of strings works too)

It is read from ``--keymap PATH``, else ``$RELCONSOLE_KEYMAP``, else
``platformdirs.user_config_path("relconsole") / "keymap.toml"`` (a missing file is no keymap).
``resolve`` checks it against the bindings and returns the keymap Textual applies
(``App.set_keymap``) plus one line per problem. A bad entry keeps its defaults; a bad file
keeps them all. A key the file gives to an action leaves the action that had it by default
(``k`` for the checklist takes ``k`` from "previous item", which keeps ``up``), unless that
was the other action's only key.
"""

from __future__ import annotations

import difflib
import os
import re
import string
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from textual.binding import Binding
from textual.keys import Keys, format_key

KEYMAP_ENV = "RELCONSOLE_KEYMAP"
MODIFIERS = {"ctrl", "alt", "shift", "super", "meta", "hyper"}


def keymap_path(explicit: str | os.PathLike | None = None) -> Path:
    """Where the keymap is read from: ``explicit``, else ``$RELCONSOLE_KEYMAP``, else the
    user's config folder (platformdirs). The file may not exist."""
    if explicit:
        return Path(explicit)
    if os.environ.get(KEYMAP_ENV):
        return Path(os.environ[KEYMAP_ENV])
    from relconsole.console.settings import config_dir  # only when no path is given
    return config_dir() / "keymap.toml"


def split_keys(keys: str) -> list[str]:
    """``"?,f1"`` -> ``["question_mark", "f1"]``: Textual's own normalisation (one
    character becomes its key name), duplicates dropped, order kept."""
    out: list[str] = []
    for binding in Binding.make_bindings([Binding(keys, "")]):
        if binding.key not in out:
            out.append(binding.key)
    return out


def _known_keys() -> frozenset[str]:
    printable = [Binding.make_bindings([Binding(c, "")]) for c in string.printable
                 if not c.isspace() and c != ","]  # "," separates keys: the key is "comma"
    return frozenset({k.value for k in Keys} | {b.key for made in printable for b in made} | {"comma"})


KNOWN_KEYS = _known_keys()


def is_known_key(key: str) -> bool:
    """True for a key Textual can report: optional modifiers (``ctrl+``, ``alt+``, …) and one
    key name (``r``, ``f5``, ``question_mark``, ``pagedown``) or one character."""
    *modifiers, base = key.split("+")
    if any(m not in MODIFIERS for m in modifiers) or not base:
        return False
    return len(base) == 1 or base in KNOWN_KEYS


@dataclass
class Keymap:
    """A keymap read and checked: ``keys`` is what ``App.set_keymap`` gets (binding id ->
    comma-separated keys, only entries that differ from the defaults and the bindings that
    share a key with them); ``active`` is every id's keys in force; ``problems`` are one
    line each, naming the file."""

    path: Path
    keys: dict[str, str] = field(default_factory=dict)
    active: dict[str, list[str]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def read_requested(path: Path) -> tuple[dict[str, object], list[str]]:
    """The ``[keys]`` table of ``path`` ({} when the file does not exist) and problems:
    a syntax error names the file and line, and drops the whole file."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}, []
    except (OSError, UnicodeDecodeError) as exc:
        return {}, [f"{path}: cannot read the keymap ({exc}): default keys"]
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        found = re.search(r"\(at line (\d+), column \d+\)", str(exc))
        where = f":{found.group(1)}" if found else ""
        message = re.sub(r"\s*\(at line \d+, column \d+\)", "", str(exc))
        return {}, [f"{path}{where}: not TOML ({message}): default keys"]
    problems = [f"{path}: [{name}] is not a keymap table: bindings go under [keys]"
                for name in data if name != "keys"]
    keys = data.get("keys", {})
    if not isinstance(keys, dict):
        return {}, problems + [f"{path}: keys must be a table ([keys]): default keys"]
    return keys, problems


def resolve(path: Path, contexts: dict[str, list[Binding]], requested: dict[str, object],
            reserved: dict[str, set[str]] | None = None) -> Keymap:
    """Check ``requested`` (id -> key string or list of key strings) against ``contexts``
    (name -> the bindings that can fire together, e.g. the main screen's app and pane keys;
    ids are unique across all of them) and ``reserved`` (context -> keys no id may take,
    such as Textual's ctrl+q). Never raises: every bad entry is a problem and keeps its
    default keys."""
    result = Keymap(path)
    defaults: dict[str, list[str]] = {}
    context_of: dict[str, str] = {}
    for name, bindings in contexts.items():
        for binding in bindings:
            if binding.id is not None:
                defaults[binding.id] = split_keys(binding.key)
                context_of[binding.id] = name
    wanted: dict[str, list[str]] = {}
    for bid, value in requested.items():
        keys, problem = _entry_keys(bid, value, defaults)
        if problem:
            result.problems.append(f"{path}: {problem}")
        else:
            wanted[bid] = keys
    reserved = reserved or {}
    for bid in list(wanted):
        taken = [k for k in wanted[bid] if k in reserved.get(context_of[bid], set())]
        if taken:
            result.problems.append(f"{path}: {bid} = {', '.join(taken)}: Textual keeps that key there "
                                   "(quit, palette, copy, focus, scrolling or typing): default keys")
            del wanted[bid]
    _drop_shared(path, wanted, defaults, context_of, result.problems)
    active = _displace(path, wanted, defaults, context_of, result.problems)
    result.active = active
    result.keys = _textual_keymap(active, defaults, context_of)
    return result


def _entry_keys(bid: str, value: object, defaults: dict[str, list[str]]) -> tuple[list[str], str | None]:
    if bid not in defaults:
        close = difflib.get_close_matches(bid, list(defaults), n=1)
        return [], f"unknown binding id {bid!r}" + (f" (did you mean {close[0]}?)" if close else "")
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        value = ",".join(value)
    if not isinstance(value, str) or not value.strip(" ,"):
        return [], f"{bid}: give a key string such as \"ctrl+r\" or \"r,f5\": default keys"
    try:
        keys = split_keys(value)
    except Exception:  # Textual's InvalidBinding on "r,,f5" and the like
        return [], f"{bid} = {value!r}: not a list of keys: default keys"
    unknown = [k for k in keys if not is_known_key(k)]
    if unknown:
        return [], f"{bid} = {value!r}: unknown key {unknown[0]!r}: default keys"
    return keys, None


def _drop_shared(path: Path, wanted: dict[str, list[str]], defaults: dict[str, list[str]],
                 context_of: dict[str, str], problems: list[str]) -> None:
    """A key the file gives to two ids of one context: both keep their defaults (unless
    they share it by default, as the four panes' quick filter ``x`` does)."""
    owners: dict[tuple[str, str], list[str]] = {}
    for bid, keys in wanted.items():
        for key in keys:
            owners.setdefault((context_of[bid], key), []).append(bid)
    bad = set()
    for (_context, key), ids in owners.items():
        if len(ids) > 1 and not all(key in defaults[bid] for bid in ids):
            problems.append(f"{path}: {key} is given to {' and '.join(ids)}: both keep their default keys")
            bad.update(ids)
    for bid in bad:
        del wanted[bid]


def _displace(path: Path, wanted: dict[str, list[str]], defaults: dict[str, list[str]],
              context_of: dict[str, str], problems: list[str]) -> dict[str, list[str]]:
    """Every id's keys in force: the file's, and the others' defaults minus the keys the file
    gave away. An entry that would leave another action with no key is refused (and the
    check runs again, as refusing it gives keys back)."""
    while True:
        active = {bid: list(wanted.get(bid, keys)) for bid, keys in defaults.items()}
        for bid, keys in wanted.items():
            new = [k for k in keys if k not in defaults[bid]]  # its own default keys it shares on purpose
            for other, other_keys in active.items():
                if other != bid and other not in wanted and context_of[other] == context_of[bid]:
                    active[other] = [k for k in other_keys if k not in new]
        orphan = next((bid for bid, keys in active.items() if not keys), None)
        if orphan is None:
            return active
        thief = next(bid for bid, keys in wanted.items() if context_of[bid] == context_of[orphan]
                     and set(keys) & set(defaults[orphan]) - set(defaults[bid]))
        problems.append(f"{path}: {thief} = {', '.join(wanted[thief])} takes the only key of {orphan}: "
                        f"give {orphan} another key too; {thief} keeps its default keys")
        del wanted[thief]


def _textual_keymap(active: dict[str, list[str]], defaults: dict[str, list[str]],
                    context_of: dict[str, str]) -> dict[str, str]:
    """The changed ids, plus every id sharing a default key with one of them in its context:
    Textual drops a binding's old keys whole (with any other binding on them), so those
    are given again."""
    changed = {bid for bid in defaults if active[bid] != defaults[bid]}
    keep = set(changed)
    for bid in changed:
        for other, keys in defaults.items():
            if context_of[other] == context_of[bid] and set(keys) & set(defaults[bid]):
                keep.add(other)
    return {bid: ",".join(active[bid]) for bid in sorted(keep)}


KEY_NAMES = {"escape": "esc"}
KEY_WORDS = frozenset(k.value for k in Keys)  # enter, pagedown, f5: shown as words


def key_name(key: str) -> str:
    """One normalised key as the help writes it: ``question_mark`` -> ``?``,
    ``ctrl+full_stop`` -> ``ctrl+.``, ``escape`` -> ``esc``, ``pagedown`` stays a word."""
    *modifiers, base = key.split("+")
    if base in KEY_NAMES:
        base = KEY_NAMES[base]
    elif base not in KEY_WORDS and len(base) > 1:
        base = format_key(base)  # a character's name: the character
    return "+".join([*modifiers, base])


def key_names(keys: str) -> str:
    """``question_mark,f1`` -> ``? / f1``."""
    return " / ".join(key_name(k) for k in split_keys(keys))


def with_active_key(binding: Binding, active: dict[str, list[str]]) -> Binding:
    """``binding`` with the keys in force (the same object when the keymap leaves it alone)."""
    keys = active.get(binding.id) if binding.id is not None else None
    if keys is None or keys == split_keys(binding.key):
        return binding
    return binding.with_key(",".join(keys))


def reserved_keys(contexts: dict[str, list[Binding]]) -> dict[str, set[str]]:
    """Per context, the keys Textual's own bindings use there (quit, copy, the palette, focus
    moves; scrolling in views; typing in forms) that no console binding has by default."""
    from textual.app import App
    from textual.containers import ScrollableContainer
    from textual.screen import Screen
    from textual.widgets import Input
    common = {App.COMMAND_PALETTE_BINDING} | {k for b in [*App.BINDINGS, *Screen.BINDINGS]
                                             for k in split_keys(b.key)}
    scrolling = {k for b in ScrollableContainer.BINDINGS for k in split_keys(b.key)}
    typing = {k for b in Input.BINDINGS for k in split_keys(b.key)} | {
        b.key for c in string.printable if not c.isspace() and c != ","
        for b in Binding.make_bindings([Binding(c, "")])} | {"comma", "space"}
    extra = {"help": scrolling, "view": scrolling, "form": typing}
    out = {}
    for name, bindings in contexts.items():
        own = {k for b in bindings for k in split_keys(b.key)}
        out[name] = (common | extra.get(name, set())) - own
    return out
