"""The lookup key of an owner pattern: where ``OwnerIndex`` files it (SPEC §3 owners).

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

With the key come the pattern's needles (literal runs any path it matches contains) and,
for ``L/REST`` under a literal ``L``, the remainder pattern ``/REST`` that decides on the path
after ``L/``; plain patterns of four shapes (``_plain_shape``) need no regex at all.
"""

from __future__ import annotations

import re

# the shapes decided without a regex (see the module docstring), and the rest
FILE, UNDER, NAME, DIRNAME, REGEX = "file", "under", "name", "dirname", "regex"
_WILDCARD = re.compile(r"[*?\[\\]")
_ESCAPE_OR_CLASS = re.compile(r"[?\[\\]")


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


def plain_key(pattern: str) -> tuple[str, str, tuple[()], None] | None:
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
    plain = plain_key(pattern)
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
    glob = _glob_key(segs)
    if glob is None:
        return "generic", None, needle(), None
    return glob[0], glob[1], needle(), None


def _glob_key(segs: list[str]) -> tuple[str, str] | None:
    """(bucket, key) of the best glob segment of ``segs``: a literal tail holding a ``.``
    (``ext``: the text after its last ``.``; the longer the tail the better), else a literal
    tail (``tail``: its last character), else a literal head (``head``: its first character);
    None when no segment has a literal end (the generic bucket)."""
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
    return None if best is None else (best[1], best[2])


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
