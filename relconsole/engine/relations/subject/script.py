"""The subject's fork server as one script: ``harness.py`` and its parts merged into one program (SPEC §7).

The server's interpreter runs the harness as ``python -s -S -P main.pyc``: one program whose
code is named ``<string>``, as ``python -c`` names its code, so a subject finds no module of the
judge's in ``sys.modules`` and no file of ours on ``sys.path`` (a part imported by name would
be both, and a tree module of the same name would shadow it). The harness is written as
standard-library-only modules (``PARTS``), which the judge imports as it imports any module;
``harness_source`` puts their text into one program, in ``PARTS`` order with ``harness.py``
last and its docstring first, leaving out each part's own docstring and the imports of one
part by another (in the one script, those names are its own globals) as blank lines, so that
every line keeps its number within its part: ``part_line`` names the part's file and line of
a line of the script (a fault of the harness reaches the judge as ``<string>:N``).
"""

from __future__ import annotations

import re
from pathlib import Path

from relconsole.engine.relations.subject import (adapters, calls, child, disguise, harness, history, inputs, kept,
                                                  namespaces, pagecache, reaping, tracing, wire)

PARTS = (wire, inputs, calls, kept, adapters, history, tracing, child, namespaces, pagecache, reaping, disguise,
         harness)
PACKAGE = harness.__name__.rpartition(".")[0]
JUDGE_PACKAGE = PACKAGE.partition(".")[0]
COMMAND_FILENAME = "<string>"  # what ``python -c`` calls the code it runs
# one part's import of another's names, on one line or in parentheses over several
SIBLING_IMPORT = re.compile(rf"^from {re.escape(PACKAGE)}\.(\w+) import (?:\([^)]*\)|[^\n(]*)\n", re.M)
_HARNESS_PYC: list[bytes] = []


def _blank(text: str) -> str:
    """``text`` as as many newlines as it holds: the lines after it keep their numbers."""
    return "\n" * text.count("\n")


def harness_source() -> str:
    """The text of the one script: ``harness.py``'s docstring, then every part's text with its
    docstring and its imports of other parts blanked (``_blank``). Raises ImportError when the
    text would still name the judge's package (a part imports it otherwise, or a part a module
    not in ``PARTS``)."""
    return _merged()[0]


def _merged() -> tuple[str, list[tuple[int, str]]]:
    """``(the script's text, [(the script's line where a part's line 1 sits, the part's file
    name)])``, see ``harness_source``."""
    names = {part.__name__.rpartition(".")[2] for part in PARTS}
    head, texts, files = "", [], []
    for part in PARTS:
        path = Path(part.__file__)
        text = path.read_text(encoding="utf-8")
        doc_end = text.index('"""', 3) + 3 if text.startswith('"""') else 0
        for match in SIBLING_IMPORT.finditer(text):
            if match.group(1) not in names:
                raise ImportError(f"harness part {part.__name__} imports {match.group(1)}, not one of its parts")
        head = text[:doc_end] if part is harness else head
        texts.append(_blank(text[:doc_end]) + SIBLING_IMPORT.sub(lambda m: _blank(m.group(0)), text[doc_end:]))
        files.append(path.name)
    source = "\n".join([head, *texts])
    if JUDGE_PACKAGE in source:
        raise ImportError(f"the harness script would name {JUDGE_PACKAGE}: its parts import only the standard library")
    starts, line = [], head.count("\n") + 2  # the line after the head and its joining newline
    for name, text in zip(files, texts):
        starts.append((line, name))
        line += text.count("\n") + 1
    return source, starts


def part_line(where: str) -> str:
    """``where`` (``file:line`` of a traceback frame) with a line of the one script
    (``<string>:N``) as the part's own file and line (``child.py:97``); anything else as given."""
    name, _, number = where.rpartition(":")
    if name != COMMAND_FILENAME or not number.isdigit():
        return where
    line = int(number)
    start, part = max(((s, p) for s, p in _merged()[1] if s <= line), default=(1, COMMAND_FILENAME))
    return f"{part}:{line - start + 1}"


def harness_pyc() -> bytes:
    """The harness script (``harness_source``) compiled once per process, as a ``.pyc`` the
    server's interpreter runs as its script (compiling it cost every server 18 ms of its start),
    every code object in it named ``COMMAND_FILENAME``. The header is PEP 552's unchecked
    hash-based form (no source beside it to check against)."""
    if not _HARNESS_PYC:
        import importlib.util
        import marshal
        code = compile(harness_source(), COMMAND_FILENAME, "exec", dont_inherit=True)
        flags = (0b01).to_bytes(4, "little")  # hash-based, check_source off
        _HARNESS_PYC.append(importlib.util.MAGIC_NUMBER + flags + bytes(8) + marshal.dumps(code))
    return _HARNESS_PYC[0]
