"""An indexed owner-map matcher: the last matching pattern per path without trying them all (SPEC §3 owners).

The owner map is a list of gitignore-style patterns, last match wins (CODEOWNERS). Trying
every pattern on every touched path costs paths x patterns regex calls (10^9 for 100,000
paths and 10,000 patterns). ``OwnerIndex`` files each pattern under a key every path it
matches must carry, looks up only the keys a path has, and returns the highest-indexed
candidate that matches: the answer of ``owners.winning_pattern``, pattern for pattern.

Keys, from the pattern's segments normalised as pathspec's GitIgnoreSpecPattern does:

* a literal leading path (anchored patterns: ``src/a.py``, ``src/**``, ``src/*/x.py``,
  ``/README.md``): a path it matches has it as a slash-boundary prefix (gitignore matches
  a directory's contents too), so a path's ancestors, and the path itself, are looked up;
* otherwise a literal segment (``README.md``, ``build/``, ``**/fixtures/*.json``): a path
  component equal to it;
* otherwise a glob segment (``*.py``, ``**/*.md``, ``test_*``): a component ending with its
  literal tail (keyed by the text after the tail's last ``.``, else its last character) or
  starting with its literal head (its first character);
* otherwise the generic bucket (``*``, ``**``, ``*.[ch]``), a candidate for every path.

What a directory's ancestors and components contribute is computed once per directory.
Candidates are then decided highest index first, stopping at the best certain match:

* plain patterns (no wildcard but whole ``**`` segments, no escape, no ``!``/``#``) of four
  shapes are decided by the lookup itself: ``a/b`` (the path is ``a/b`` or under it),
  ``a/b/`` and ``a/b/**`` (under it), ``name`` and ``**/name`` (a component is ``name``),
  ``name/`` and ``**/name/**`` (a directory component is ``name``): what pathspec's regex
  for the shape accepts on a path with no empty component and no newline;
* any other pattern by regex, compiled the first time it is a candidate: the pattern's own
  (the object ``matches`` compiles), or, for ``L/REST`` under a literal ``L``, the regex of
  ``/REST`` (``**/REST``) on the path after ``L/``, compiled once for all the prefixes it
  follows (the regex of ``L/REST`` is ``^L/`` or ``^L(?:/.+)?/`` before that one's); a
  candidate whose literal text (a "needle") is not in the path is skipped unasked.

tests/test_owner_index.py pins the regexes these shortcuts rely on and checks the index
against ``winning_pattern`` on generated pattern lists and paths.

Paths with a newline, an empty component, or a ``/`` or ``./`` head (git reports none) are
normalised and, when still odd, matched by trying every pattern. Patterns that do not
compile, or are not strings, make a lookup fall back to that same loop whenever the
straightforward loop would reach them, so it raises where that loop raised.
"""

from __future__ import annotations

import gc
import os
import re
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from functools import lru_cache

TYPE_CHECKING = False
if TYPE_CHECKING:
    import pathspec

# pathspec is imported on first need (a pattern to compile, an odd path to normalise): an
# owner map of plain patterns, as most are, never needs it (10 ms of every command start).
# What the index needs to know of it before then is read off its files: whether it is a
# 1.x pathspec, whose GitIgnoreSpecPattern segment normalisation _segments mirrors (else
# every pattern is compiled eagerly), and whether this platform has separators to rewrite.
_LOADED: dict = {}


def _pathspec() -> dict:
    """pathspec's parts the index uses, imported once: ``module``, ``options`` (the spec
    backend), ``mirrored`` (GitIgnoreSpecPattern, or None), ``mirroring``, ``normalize_file``.
    Raises RuntimeError when pathspec turns out other than ``_mirroring`` or ``_NORMALIZES``
    said before it was imported (an index may have been built on that answer)."""
    if _LOADED:
        return _LOADED
    import pathspec
    from pathspec.util import NORMALIZE_PATH_SEPS, normalize_file

    try:  # one matcher whatever regex engines are installed: pathspec 1.x picks re2 or
        # hyperscan when present, whose `$` differs from Python's re
        pathspec.GitIgnoreSpec.from_lines([], backend="simple")
        options: dict = {"backend": "simple"}
    except TypeError:  # pragma: no cover - pathspec 0.12 has only Python's re
        options = {}
    try:  # pathspec >= 1.0: the class whose segment normalisation _segments mirrors
        from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern as mirrored
    except ImportError:  # pragma: no cover - pathspec 0.12: every pattern generic, compiled eagerly
        mirrored = None
    mirroring = mirrored is not None and type(
        pathspec.GitIgnoreSpec.from_lines(["x"], **options).patterns[0]) is mirrored
    if bool(NORMALIZE_PATH_SEPS) != _NORMALIZES or (_PROVISIONAL and mirroring != _PROVISIONAL[0]):
        raise RuntimeError("the installed pathspec differs from what relconsole's owner index read of "
                           "its files: owner patterns cannot be matched safely")
    _LOADED.update(module=pathspec, options=options, mirrored=mirrored, mirroring=mirroring,
                   normalize_file=normalize_file)
    return _LOADED


_PROVISIONAL: list[bool] = []  # _mirroring's answer before pathspec was imported


def _mirroring() -> bool:
    """Whether the installed pathspec is a 1.x one whose GitIgnoreSpecPattern ``_segments``
    mirrors: pathspec's own answer once it is imported, else read off its files (the module
    that defines the class is there) without importing it, and checked when it is."""
    if _LOADED:
        return _LOADED["mirroring"]
    if not _PROVISIONAL:
        import importlib.util
        import os.path
        spec = importlib.util.find_spec("pathspec")
        where = list(spec.submodule_search_locations or []) if spec is not None else []
        _PROVISIONAL.append(any(os.path.isfile(os.path.join(d, "patterns", "gitignore", "spec.py")) for d in where))
    return _PROVISIONAL[0]


# Windows: separators to rewrite; POSIX: only "/" and "./" heads (pathspec.util's
# NORMALIZE_PATH_SEPS, checked against it when pathspec is imported)
_NORMALIZES = any(sep and sep != "/" for sep in (os.sep, os.altsep))


def compile_spec(pattern: str) -> pathspec.GitIgnoreSpec:
    """The one-pattern GitIgnoreSpec that decides whether ``pattern`` matches a path (§3)."""
    loaded = _pathspec()
    return loaded["module"].GitIgnoreSpec.from_lines([pattern], **loaded["options"])


@lru_cache(maxsize=4096)
def single_spec(pattern: str) -> pathspec.GitIgnoreSpec:
    """``compile_spec`` cached: the matcher behind ``owners.matches``."""
    return compile_spec(pattern)


def single_match(pattern: str, path: str) -> bool:
    """True when the gitignore-style ``pattern`` alone matches ``path`` (a one-pattern spec:
    a negated ``!`` pattern matches nothing)."""
    return single_spec(pattern).match_file(path)


# the shapes decided without a regex (see the module docstring), and the rest
FILE, UNDER, NAME, DIRNAME, REGEX = "file", "under", "name", "dirname", "regex"
_NEVER = None  # compiled slot of a pattern that matches nothing (blank, comment, `!x`, bad range)
_OPAQUE = object()  # compiled slot of a pattern the index does not model (does not compile, not a str)
_UNKNOWN = object()  # compiled slot not filled yet
_NONE = (-1,)
_HEADS = ("/", "./")  # what pathspec's normalize_file strips from a POSIX path
_WILDCARD = re.compile(r"[*?\[\\]")
_ESCAPE_OR_CLASS = re.compile(r"[?\[\\]")
_NOTHING = (-1, -1, ())


class OwnerIndex:
    """``owners`` (a list of (pattern, relation ids), later wins) indexed for lookup by path.

    Build once per owner list: O(patterns) string work, no regex compiled. A lookup then
    costs a few dict lookups (a directory's share cached) plus, for each glob candidate
    above the best certain match, a substring test and maybe a regex. ``winner_indexes``
    answers many paths in one loop (``bind``); ``winner`` one.
    """

    def __init__(self, owners: Sequence[tuple[str, Sequence[str]]]):
        with collector_paused():
            self._build(list(owners))

    def _build(self, owners: list[tuple[str, Sequence[str]]]) -> None:
        self.owners = owners
        self._search: list = [_UNKNOWN] * len(self.owners)  # index -> callable(path) -> match | None
        self._needles: list[tuple[str, ...]] = [()] * len(self.owners)  # texts any path it matches contains
        self._tests: list = [_UNKNOWN] * len(self.owners)  # index -> callable(clean path) -> match | None
        self._remainders: dict[int, tuple[int, str]] = {}  # index -> (len(prefix) + 1, remainder pattern)
        self._shared: dict[str, object] = {}  # remainder pattern -> its compiled search
        self._opaque_max = -1
        # key -> [certain match (the path itself, or anywhere), (under it, or as a directory),
        # regex candidates]: for a path or prefix (at_path), for a component (names)
        at_path: dict[str, list] = {}
        names: dict[str, list] = {}
        loose: dict[str, dict[str, list[int]]] = {"ext": defaultdict(list), "tail": defaultdict(list),
                                                  "head": defaultdict(list)}
        generic: list[int] = []
        slots = {"file": (at_path, 0), "under": (at_path, 1), "prefix": (at_path, 2),
                 "name_any": (names, 0), "name_dir": (names, 1), "name": (names, 2)}
        eager = not _mirroring()
        for index, (pattern, _ids) in enumerate(self.owners):
            plain = _plain_key(pattern) if type(pattern) is str and not eager else None
            if plain is not None:  # most patterns: a literal path, directory or name, decided by lookup
                table, slot = slots[plain[0]]
                entry = table.get(plain[1])
                if entry is None:
                    entry = table[plain[1]] = [-1, -1, []]
                entry[slot] = index  # indexes only grow: the last is the best
                continue
            # compiled now: every pattern that can fail to compile (an escape, a lone "!")
            if eager or not isinstance(pattern, str) or "\\" in pattern or pattern[:1] == "!":
                self._search[index] = compiled = _compiled(pattern)
                if compiled is _OPAQUE:
                    self._opaque_max = index
                    continue
                if compiled is _NEVER:
                    continue
                if eager:
                    generic.append(index)
                    continue
            bucket, value, needles, remainder = _key(pattern)
            if needles:
                self._needles[index] = needles
            if remainder is not None:
                self._remainders[index] = (len(value) + 1, remainder)
            where = slots.get(bucket)
            if where is not None:
                table, slot = where
                entry = table.get(value)
                if entry is None:
                    entry = table[value] = [-1, -1, []]
                if slot == 2:
                    entry[2].append(index)
                else:
                    entry[slot] = index
            elif bucket == "generic":
                generic.append(index)
            elif bucket is not None:
                loose[bucket][value].append(index)
        self._at_path = {key: (a, b, tuple(c)) for key, (a, b, c) in at_path.items()}
        self._names = {key: (a, b, tuple(c)) for key, (a, b, c) in names.items()}
        self._ext, self._tail, self._head = ({key: tuple(found) for key, found in loose[b].items()}
                                             for b in ("ext", "tail", "head"))
        # a component can bring glob keys only if it ends with one of these or starts with one of those
        self._ends = tuple("." + key for key in self._ext) + tuple(self._tail)
        self._heads = tuple(self._head)
        self._root = (-1, tuple(sorted(generic, reverse=True)))
        self._dirs: dict[str, tuple[int, tuple[int, ...]]] = {}

    # --- lookup ------------------------------------------------------------------------

    def winner(self, path: str) -> tuple[str, list[str]] | None:
        """The last (pattern, relation ids) of ``owners`` matching ``path``, or None
        (what ``owners.winning_pattern`` returns)."""
        [index] = self.winner_indexes((path,))
        return None if index is None else self.owners[index]

    def winner_index(self, path: str) -> int | None:
        """Index into ``owners`` of the last pattern matching ``path``, or None."""
        return self.winner_indexes((path,))[0]

    def winner_indexes(self, paths: Iterable[str]) -> list[int | None]:
        """For each path, the index into ``owners`` of the last pattern matching it, or None.

        Raises what ``owners.winning_pattern`` raises for a pattern that does not compile,
        when that loop would reach it. (One loop over all paths, with the tables in locals:
        this is the hot path of ``bind``.)
        """
        with collector_paused():
            return self._winner_indexes(list(paths))

    def _winner_indexes(self, paths: list[str]) -> list[int | None]:
        dirs, directory, names, at_path = self._dirs, self._directory, self._names, self._at_path
        ends, heads = self._ends, self._heads
        needles, tests, opaque, (root_best, root_maybe) = self._needles, self._tests, self._opaque_max, self._root
        out: list[int | None] = []
        append = out.append
        checked = not _clean(paths)  # else every path is already its own clean, normalised form
        last_folder, last_entry = None, self._root  # git lists a directory's files together
        for path in paths:
            norm = path
            if checked:
                if _NORMALIZES or path.startswith(_HEADS):
                    norm = _pathspec()["normalize_file"](path)
                if "\n" in norm or "//" in norm or norm.endswith("/") or norm.startswith("/") or not norm:
                    append(self._scan(path, norm))
                    continue
            folder, slash, base = norm.rpartition("/")
            if not slash:
                best, maybe = root_best, root_maybe
            elif folder == last_folder:
                best, maybe = last_entry
            else:
                last_entry = dirs.get(folder) or directory(folder)  # directory() only for a new one
                last_folder = folder
                best, maybe = last_entry
            # the file name: equal-name patterns decide; glob patterns keyed on it are candidates
            sure, _as_directory, own = names.get(base, _NOTHING)
            if sure > best:
                best = sure
            if ends and base.endswith(ends) or heads and base.startswith(heads):
                own += self._loose_keys(base)
            here = at_path.get(norm)
            if here is not None:  # a pattern naming this very path ("under" ones need more)
                if here[0] > best:
                    best = here[0]
                own += here[2]
            found = best
            if own:
                maybe = sorted({*own, *maybe}, reverse=True)
            for index in maybe:
                if index <= best:
                    break
                for needle in needles[index]:
                    if needle not in norm:
                        break
                else:
                    test = tests[index]
                    if test is _UNKNOWN:
                        test = tests[index] = self._test(index)
                    if test(norm) is not None:
                        found = index
                        break
            if opaque > found:
                append(self._scan(path, norm))
            else:
                append(None if found < 0 else found)
        return out

    def _test(self, index: int):
        """The match callable for ``index`` on a clean path it is a candidate for: for a
        prefix pattern ``L/REST`` (REST one or more segments, the first may be ``**``), the
        remainder pattern ``/REST`` (or ``**/REST``) on the path after ``L/``, compiled once for
        every prefix it follows (the regex of ``L/REST`` is ``^L/`` or ``^L(?:/.+)?/`` then that
        remainder's, which tests/test_owner_index.py pins); else the pattern's own regex."""
        remainder = self._remainders.get(index)
        if remainder is None or self._search[index] is not _UNKNOWN:
            return self._regex(index)
        cut, text = remainder
        search = self._shared.get(text, _UNKNOWN)
        if search is _UNKNOWN:
            search = self._shared[text] = _compiled(text)
        regex = getattr(search, "__self__", None)  # the compiled pattern behind the bound search
        if regex is None or not regex.pattern.startswith("^"):  # nothing, or a special case ("**/*")
            return self._regex(index)
        return lambda norm: search(norm[cut:])

    def _regex(self, index: int):
        """The compiled match callable of a non-opaque pattern (compiled on first use)."""
        search = self._search[index]
        if search is _UNKNOWN:
            search = self._search[index] = _compiled(self.owners[index][0])
        return _no_match if search is _NEVER else search

    def _scan(self, path: str, norm: str) -> int | None:
        """The straightforward loop (last pattern first), with the compiled patterns."""
        for index in range(len(self.owners) - 1, -1, -1):
            if self._search[index] is _OPAQUE:
                if single_match(self.owners[index][0], path):
                    return index
            elif self._regex(index)(norm) is not None:
                return index
        return None

    def _directory(self, directory: str) -> tuple[int, tuple[int, ...]]:
        """(best certain match, regex candidates above it, highest first) shared by every
        path under ``directory``: its ancestors' prefixes and components and its own."""
        pending = [directory]  # (not cached: the caller looked) climb to a cached ancestor, come down
        while True:
            slash = pending[-1].rfind("/")
            if slash < 0:
                shared = self._root
                break
            parent = self._dirs.get(pending[-1][:slash])
            if parent is not None:
                shared = parent
                break
            pending.append(pending[-1][:slash])
        names, at_path, ends, heads = self._names, self._at_path, self._ends, self._heads
        for folder in reversed(pending):
            best, maybe = shared
            # a path under `folder` has it as a proper prefix and its name as a directory
            name = folder[folder.rfind("/") + 1:]
            sure_any, sure_dir, extra = names.get(name, _NOTHING)
            if ends and name.endswith(ends) or heads and name.startswith(heads):
                extra += self._loose_keys(name)
            sure_file, sure_under, prefixed = at_path.get(folder, _NOTHING)
            if sure_any > best:
                best = sure_any
            if sure_dir > best:
                best = sure_dir
            if sure_file > best:
                best = sure_file
            if sure_under > best:
                best = sure_under
            extra += prefixed
            if extra:
                maybe = tuple(sorted({i for i in (*maybe, *extra) if i > best}, reverse=True))
            elif best > shared[0] and maybe and maybe[-1] <= best:
                maybe = tuple(i for i in maybe if i > best)  # still highest first
            shared = self._dirs[folder] = (best, maybe)
        return shared

    def _loose_keys(self, name: str) -> tuple[int, ...]:
        """Regex candidates a path component ``name`` brings through glob keys: its
        extension, last and first character."""
        dot = name.rfind(".")
        found = self._ext.get(name[dot + 1:], ()) if dot >= 0 else ()
        return found + self._tail.get(name[-1], ()) + self._head.get(name[0], ())


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off while the index (and ``bind``) allocate
    acyclic tuples, lists and rows: each collection those allocations trigger walks the
    caller's whole heap (a review's YAML documents, 100,000 Touched rows) and finds nothing
    of theirs to free; on a 100,000-path bind that was a quarter of the matching time.
    Restored on the way out; a no-op when the collector is already off."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _clean(paths: list[str]) -> bool:
    """True when no path needs normalising or the fallback scan: none empty, none starting
    with ``/`` or ``./``, ending with ``/``, holding ``//`` or a newline (git reports none of
    these). One scan of the joined text; a NUL inside a path can only make it say False."""
    if _NORMALIZES or not paths:
        return not paths
    text = "\0".join(paths)
    return not (not text or text.startswith(("/", "./", "\0")) or text.endswith(("/", "\0")) or "\n" in text
                or "//" in text or "/\0" in text or "\0/" in text or "\0./" in text or "\0\0" in text)


def _no_match(_path: str) -> None:
    return None


def _compiled(pattern):
    """The match callable of one pattern, compiled as ``matches`` compiles it: _NEVER when it
    matches nothing, _OPAQUE when it does not compile (or is not a str)."""
    if not isinstance(pattern, str):
        return _OPAQUE
    try:  # the factory GitIgnoreSpec.from_lines applies to each non-empty line
        loaded = _pathspec()
        mirrored = loaded["mirrored"]
        compiled = ([mirrored(pattern)] if pattern else []) if loaded["mirroring"] else compile_spec(pattern).patterns
    except Exception:  # noqa: BLE001 - the fallback loop raises it where the old loop did
        return _OPAQUE
    if len(compiled) != 1 or compiled[0].include is not True:
        return _NEVER  # empty, a comment, a negation or an invalid range
    one = compiled[0]
    if type(one) is mirrored and one.regex is not None:
        return one.regex.search  # pathspec 1.x RegexPattern.match_file is regex.search
    return one.match_file


def _segments(pattern: str) -> list[str] | None:
    """The pattern's segments as GitIgnoreSpecPattern normalises them (leading ``**`` for an
    unanchored pattern, trailing ``**`` for a directory pattern, ``**/**`` collapsed), or
    None when none are left. (The patterns it special-cases, ``*``, ``**``, ``*/`` and
    ``**/``, have no literal text, so ``_key`` files them as generic.)"""
    text = pattern if pattern.endswith("\\ ") else pattern.rstrip()
    segs = text.split("/")
    if not segs[0]:
        del segs[0]
    elif len(segs) == 1 or (len(segs) == 2 and not segs[1]):
        if segs[0] != "**":
            segs.insert(0, "**")
    if not segs:
        return None
    if not segs[-1]:
        segs[-1] = "**"
    for i in range(len(segs) - 1, 0, -1):
        if segs[i - 1] == "**" and segs[i] == "**":
            del segs[i]
    return segs


def _tokens(segment: str) -> list[str | None]:
    """The segment's literal characters, None for each wildcard (``*``, ``?``, ``[...]``),
    bracket ends found exactly as pathspec's glob translation finds them."""
    out: list[str | None] = []
    i, end = 0, len(segment)
    while i < end:
        char = segment[i]
        i += 1
        if char == "\\":
            if i < end:
                out.append(segment[i])
                i += 1
            continue
        if char in "*?":
            out.append(None)
        elif char == "[":
            j = i
            if j < end and segment[j] in "!^":
                j += 1
            if j < end and segment[j] == "]":
                j += 1
            while j < end and segment[j] != "]":
                j += 1
            out.append(None)
            i = j + 1
        else:
            out.append(char)
    return out


def _literal(segment: str) -> str | None:
    """The unescaped text of a segment with no wildcard, else None."""
    if segment == "**":
        return None
    if _WILDCARD.search(segment) is None:
        return segment
    tokens = _tokens(segment)
    return None if None in tokens else "".join(tokens)


def _plain_shape(pattern: str, segs: list[str]) -> str:
    """FILE, UNDER, NAME or DIRNAME when the pattern is plain and of that shape, else REGEX."""
    text = pattern.rstrip()
    if not text or text[0] in "!#" or text == "/" or _ESCAPE_OR_CLASS.search(text) is not None:
        return REGEX
    if "" in segs or ("*" in text and any(s != "**" and "*" in s for s in segs)):
        return REGEX
    inner = segs[1:-1] if len(segs) > 1 else []
    if "**" in inner:
        return REGEX
    if segs[0] != "**":
        return FILE if segs[-1] != "**" else UNDER
    if len(segs) == 2 and segs[1] != "**":
        return NAME
    if len(segs) == 3 and segs[2] == "**":
        return DIRNAME
    return REGEX


def _plain_key(pattern: str) -> tuple[str, str, tuple[()], None] | None:
    """``_key`` of the commonest patterns, quickly: no wildcard, escape, empty segment or
    trailing blank, not a negation or comment: ``a/b``, ``/a``, ``a/b/``, ``a/b/**``, ``name``,
    ``name/`` (what _segments makes of them: no ``**`` but the ones normalisation adds)."""
    under = pattern.endswith("/**")
    body = pattern[:-3] if under else pattern
    if not body or body[0] in "!#" or body[-1].isspace() or "//" in body or _WILDCARD.search(body) is not None:
        return None
    anchored = under or body[0] == "/" or "/" in body[:-1]
    if body[-1] == "/":
        under, body = True, body[:-1]
    if body[:1] == "/":
        body = body[1:]
    if not body:
        return None
    if anchored:
        return ("under" if under else "file"), body, (), None
    return ("name_dir" if under else "name_any"), body, (), None


def _key(pattern: str) -> tuple[str | None, str | None, tuple[str, ...], str | None]:
    """(bucket, key, needles, remainder): every path ``pattern`` matches is looked up under
    the key, and contains each needle, a literal run of a segment the key does not already
    guarantee (none for the shapes the lookup decides; a regex matches a run of literal
    characters only as that run). Bucket ``file``/``under``/``name_any``/``name_dir``: the
    lookup alone decides. ``remainder``: for a ``prefix`` pattern ``L/REST`` that is not a
    directory pattern and whose REST has no ``**`` but maybe a first one, ``/REST`` (or
    ``**/...``), which decides on the path after ``L/``."""
    plain = _plain_key(pattern)
    if plain is not None:
        return plain
    segs = _segments(pattern)
    if segs is None or (pattern if pattern.endswith("\\ ") else pattern.rstrip()).startswith("#"):
        return None, None, (), None  # nothing left, or a comment: matches nothing
    literals = [_literal(s) for s in segs]
    shape = _plain_shape(pattern, segs)

    def needle(skip: int = 0, but: str | None = None) -> tuple[str, ...]:
        if shape != REGEX:
            return ()
        runs = {"".join(run) for seg in segs[skip:] if seg != "**" and (but is None or _literal(seg) != but)
                for run in _runs(_tokens(seg))}
        return tuple(sorted(runs, key=lambda run: (-len(run), run))[:3])

    if segs[0] != "**" and literals[0] is not None:
        lead = []
        for text in literals:
            if text is None:
                break
            lead.append(text)
        bucket = {FILE: "file", UNDER: "under"}.get(shape, "prefix")
        rest = segs[len(lead):]
        remainder = None
        if bucket == "prefix" and rest and "**" not in rest[1:] and rest[-1] != "**":
            remainder = ("**/" if rest[0] == "**" else "/") + "/".join(s for s in rest if s != "**")
        return bucket, "/".join(lead), needle(skip=len(lead)), remainder
    named = [text for text in literals if text is not None]
    if named:
        bucket = {NAME: "name_any", DIRNAME: "name_dir"}.get(shape, "name")
        name = max(named, key=len)
        return bucket, name, needle(but=name), None
    best: tuple[int, str, str] | None = None
    for seg in segs:
        if seg == "**":
            continue
        tokens = _tokens(seg)
        runs = ["".join(run) for run in _runs(tokens)]
        tail = runs[-1] if runs and tokens[-1] is not None else ""
        head = runs[0] if runs and tokens[0] is not None else ""
        if "." in tail:
            option = (3 + len(tail), "ext", tail[tail.rfind(".") + 1:])
        elif tail:
            option = (2, "tail", tail[-1])
        elif head:
            option = (1, "head", head[0])
        else:
            continue
        if best is None or option[0] > best[0]:
            best = option
    if best is None:
        return "generic", None, needle(), None
    return best[1], best[2], needle(), None


def _runs(tokens: list[str | None]):
    """The maximal runs of literal characters in a segment's tokens."""
    run: list[str] = []
    for token in tokens:
        if token is None:
            if run:
                yield run
            run = []
        else:
            run.append(token)
    if run:
        yield run
