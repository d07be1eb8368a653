"""An indexed owner-map matcher: the last matching pattern per path without trying them all (SPEC §3 owners).

The owner map is a list of gitignore-style patterns, last match wins (CODEOWNERS). Trying
every pattern on every touched path costs paths x patterns regex calls (10^9 for 100,000
paths and 10,000 patterns). ``OwnerIndex`` files each pattern under a key every path it
matches must carry (``ownerkeys``: a literal leading path, a literal segment, a glob
segment's literal tail or head, or the generic bucket), looks up only the keys a path has,
and returns the highest-indexed candidate that matches: the answer of
``owners.winning_pattern``, pattern for pattern.

What a directory's ancestors and components contribute is computed once per directory.
Candidates are then decided highest index first, stopping at the best certain match:

* plain patterns (no wildcard but whole ``**`` segments, no escape, no ``!``/``#``) of four
  shapes are decided by the lookup itself: ``a/b`` (the path is ``a/b`` or under it),
  ``a/b/`` and ``a/b/**`` (under it), ``name`` and ``**/name`` (a component is ``name``),
  ``name/`` and ``**/name/**`` (a directory component is ``name``): what pathspec's regex
  for the shape accepts on a path with no empty component and no newline;
* any other pattern by regex, compiled the first time it is a candidate (``ownerspec``): the
  pattern's own (the object ``matches`` compiles), or, for ``L/REST`` under a literal ``L``,
  the regex of ``/REST`` (``**/REST``) on the path after ``L/``, compiled once for all the
  prefixes it follows (the regex of ``L/REST`` is ``^L/`` or ``^L(?:/.+)?/`` before that
  one's); a candidate whose literal text (a "needle") is not in the path is skipped unasked.

tests/test_owner_index.py pins the regexes these shortcuts rely on and checks the index
against ``winning_pattern`` on generated pattern lists and paths.

Paths with a newline, an empty component, or a ``/`` or ``./`` head (git reports none) are
normalised and, when still odd, matched by trying every pattern. Patterns that do not
compile, or are not strings, make a lookup fall back to that same loop whenever the
straightforward loop would reach them, so it raises where that loop raised.
"""

from __future__ import annotations

import gc
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager

from relconsole.engine.repo.ownerkeys import _key, plain_key
from relconsole.engine.repo.ownerspec import (NEVER, NORMALIZES, OPAQUE, _compiled, _mirroring, _pathspec,
                                              single_match)

_UNKNOWN = object()  # compiled slot not filled yet
_NONE = (-1,)
_HEADS = ("/", "./")  # what pathspec's normalize_file strips from a POSIX path
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
            plain = plain_key(pattern) if type(pattern) is str and not eager else None
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
                if compiled is OPAQUE:
                    self._opaque_max = index
                    continue
                if compiled is NEVER:
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
                if NORMALIZES or path.startswith(_HEADS):
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
        return _no_match if search is NEVER else search

    def _scan(self, path: str, norm: str) -> int | None:
        """The straightforward loop (last pattern first), with the compiled patterns."""
        for index in range(len(self.owners) - 1, -1, -1):
            if self._search[index] is OPAQUE:
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
    if NORMALIZES or not paths:
        return not paths
    text = "\0".join(paths)
    return not (not text or text.startswith(("/", "./", "\0")) or text.endswith(("/", "\0")) or "\n" in text
                or "//" in text or "/\0" in text or "\0/" in text or "\0./" in text or "\0\0" in text)


def _no_match(_path: str) -> None:
    return None
