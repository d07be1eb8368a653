"""Owner patterns compiled as pathspec compiles them: one gitignore-style pattern at a time (SPEC §3 owners).

``compile_spec`` and ``single_spec`` build the one-pattern ``GitIgnoreSpec`` behind
``owners.matches``; ``_compiled`` gives the match callable ``OwnerIndex`` tries on a
candidate (the pattern's own regex's ``search`` on pathspec 1.x), or says the pattern matches
nothing (``NEVER``) or does not compile (``OPAQUE``). pathspec itself is imported on first
need; ``_mirroring`` and ``NORMALIZES`` answer what the index needs to know of it before.

pathspec is used through what it documents (its API reference lists ``GitIgnoreSpec.from_lines``
with ``backend``, ``patterns``, ``pathspec.patterns.gitignore.spec.GitIgnoreSpecPattern``,
``RegexPattern.regex`` and ``include``, and ``pathspec.util.normalize_file`` and
``NORMALIZE_PATH_SEPS``). What it does not promise is the text of the regexes it builds, which
the index's shortcuts rely on: ``shape_drift`` checks them on canary patterns the first time
pathspec is imported, and a pathspec that builds others is refused (RuntimeError) rather than
matched wrongly. The dependency is pinned to the majors checked (pyproject: ``pathspec>=1.0,<2``).
"""

from __future__ import annotations

import os
from functools import lru_cache

TYPE_CHECKING = False
if TYPE_CHECKING:
    import pathspec

# pathspec is imported on first need (a pattern to compile, an odd path to normalise): an
# owner map of plain patterns, as most are, never needs it (10 ms of every command start).
# What the index needs to know of it before then is read off its files: whether it is a
# 1.x pathspec, whose GitIgnoreSpecPattern segment normalisation ownerkeys._segments mirrors (else
# every pattern is compiled eagerly), and whether this platform has separators to rewrite.
_LOADED: dict = {}


def _pathspec() -> dict:
    """pathspec's parts the index uses, imported once: ``module``, ``options`` (the spec
    backend), ``mirrored`` (GitIgnoreSpecPattern, or None), ``mirroring``, ``normalize_file``.
    Raises RuntimeError when pathspec turns out other than ``_mirroring`` or ``NORMALIZES``
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
    if bool(NORMALIZE_PATH_SEPS) != NORMALIZES or (_PROVISIONAL and mirroring != _PROVISIONAL[0]):
        raise RuntimeError("the installed pathspec differs from what relconsole's owner index read of "
                           "its files: owner patterns cannot be matched safely")
    drift = shape_drift(lambda text: pathspec.GitIgnoreSpec.from_lines([text], **options).patterns)
    if drift:
        raise RuntimeError(f"the installed pathspec {getattr(pathspec, '__version__', '?')} compiles owner "
                           f"patterns to other regexes than relconsole's owner index relies on ({drift[0]}): "
                           f"install a pathspec 1.x (pip install 'pathspec>=1.0,<2')")
    _LOADED.update(module=pathspec, options=options, mirrored=mirrored, mirroring=mirroring,
                   normalize_file=normalize_file)
    return _LOADED


# The regexes pathspec 1.x builds for the shapes ownerindex decides by lookup alone (a literal
# path or component ``{}``, escaped), and the two heads of a prefix pattern ``L/REST`` that
# ownerindex._test strips to match the remainder's regex on the path after ``L/``.
_DIR_MARK, _FILE_OR_DIR = "(?P<ps_d>/)", "(?:(?P<ps_d>/)|$)"
_LOOKUP_SHAPES = (
    ("a/b", "^a/b" + _FILE_OR_DIR), ("a/b/**", "^a/b/"), ("a/b/", "^a/b" + _DIR_MARK),
    ("n", "^(?:.+/)?n" + _FILE_OR_DIR), ("**/n", "^(?:.+/)?n" + _FILE_OR_DIR),
    ("n/", "^(?:.+/)?n" + _DIR_MARK), ("**/n/**", "^(?:.+/)?n/"),
)
_PREFIX_SHAPES = (("a/*.py", "/*.py", "^", "^a/"), ("a/**/*.py", "**/*.py", "^(?:.+/)?", "^a(?:/.+)?/"))


def shape_drift(patterns_of) -> list[str]:
    """The canary patterns whose regex is not the one the owner index relies on, each as
    ``"PATTERN -> REGEX"`` (empty when pathspec builds what it was checked to build).
    ``patterns_of(text)``: the compiled pattern list of one pattern line (pathspec's
    ``GitIgnoreSpec.from_lines([text]).patterns``)."""
    def regex(text: str) -> str | None:
        compiled = patterns_of(text)
        one = compiled[0] if len(compiled) == 1 and compiled[0].include is True else None
        return getattr(getattr(one, "regex", None), "pattern", None)

    drift = [f"{text} -> {regex(text)}" for text, expected in _LOOKUP_SHAPES if regex(text) != expected]
    for full, remainder, tail_head, full_head in _PREFIX_SHAPES:
        tail, whole = regex(remainder), regex(full)
        if tail is None or whole is None or not tail.startswith(tail_head) \
                or whole != full_head + tail[len(tail_head):]:
            drift.append(f"{full} -> {whole}")
    return drift


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
NORMALIZES = any(sep and sep != "/" for sep in (os.sep, os.altsep))


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


NEVER = None  # compiled slot of a pattern that matches nothing (blank, comment, `!x`, bad range)
OPAQUE = object()  # compiled slot of a pattern the index does not model (does not compile, not a str)


def _compiled(pattern):
    """The match callable of one pattern, compiled as ``matches`` compiles it: NEVER when it
    matches nothing, OPAQUE when it does not compile (or is not a str)."""
    if not isinstance(pattern, str):
        return OPAQUE
    try:  # the factory GitIgnoreSpec.from_lines applies to each non-empty line
        loaded = _pathspec()
        mirrored = loaded["mirrored"]
        compiled = ([mirrored(pattern)] if pattern else []) if loaded["mirroring"] else compile_spec(pattern).patterns
    except Exception:  # noqa: BLE001 - the fallback loop raises it where the old loop did
        return OPAQUE
    if len(compiled) != 1 or compiled[0].include is not True:
        return NEVER  # empty, a comment, a negation or an invalid range
    one = compiled[0]
    if type(one) is mirrored and one.regex is not None:
        return one.regex.search  # pathspec 1.x RegexPattern.match_file is regex.search
    return one.match_file
