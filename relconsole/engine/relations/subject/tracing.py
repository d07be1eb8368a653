"""Which lines of the tree a call ran: the evidence that a changed line is exercised (SPEC §3).

A part of the subject's fork server (``harness.py``; standard library only, merged into its
script by ``script.py``): the server runs with no site-packages, so coverage.py's own tracer
cannot be loaded here; this one records what coverage.py's Python tracer records in line mode,
a ``line`` event's line number per file, and only in files under the tree's root (a file
outside it costs one dictionary lookup per call event). The judge maps the lines to
statements with coverage.py's parser (``gate/exercised.py``).

What a subject can do against it: replace the trace function (``sys.settrace``), which only
loses its own lines (they show as unexercised, a gap, never a pass), or read it
(``sys.gettrace``), a §9 probe. Threads the subject starts are traced as coverage.py traces
them (``threading.settrace``); a thread started through ``_thread`` alone is not, and its lines
count as unexercised.
"""

import os
import sys


class LineRecorder:
    """Records the tree's executed lines from ``start`` to ``stop``; ``executed(root)`` gives
    ``[[tree path, [line, ...]], ...]`` (sorted, one row per tree file).

    ``wanted`` (``[[tree path, [line, ...], [call-only entry, ...]], ...]``: the patch's changed
    statements and their call-time evidence, ``gate/exercised.py``) narrows the record to what
    the judge asks: a code object with no wanted line is not traced at all, and one stops being
    traced (in every frame of it) once each of its wanted lines ran, so a loop over a changed
    line costs one line event per line until the line is seen. A call-only entry (a line, or
    ``[line, code name]``) counts only when its line runs in a function's code (a lambda's, a
    comprehension's; the named code's alone for a named entry), not in a module's or a class
    body's: ``def f(x): return x`` and ``KEY = lambda r: r[0]`` run that line at import only
    as a definition; nor while a tree module's body runs (a function called at import, such as
    ``_WARM = seconds(0)``, is no call of a relation). None: every line of every tree file."""

    def __init__(self, root, wanted=None):
        self.prefix = os.path.realpath(root) + os.sep
        self.root = root
        self.wanted = None if wanted is None else {row[0]: (frozenset(row[1]), _call_only(row[2] if len(row) > 2 else ()))
                                                  for row in wanted}
        self.lines = {}  # filename as the code object names it -> set of line numbers
        self.tracers = {}  # filename -> its local trace function, None outside the tree, or a code table
        self.codes = {}  # id(code) -> (code, its local trace function or None): the code kept alive, so its id is its own
        self.importing = [0]  # how many tree module bodies are running (an import): call-only lines wait

    def _inside(self, filename):
        try:
            return os.path.realpath(filename).startswith(self.prefix) and not filename.startswith("<")
        except (TypeError, ValueError, OSError):
            return False

    def _local_for(self, filename):
        if not self._inside(filename):
            self.tracers[filename] = None
            return None
        add = self.lines.setdefault(filename, set()).add
        if self.wanted is not None:
            path = os.path.relpath(os.path.realpath(filename), os.path.realpath(self.root)).replace(os.sep, "/")
            self.tracers[filename] = _Wanted(*self.wanted.get(path, (frozenset(), {})), add, self.importing)
            return self.tracers[filename]

        def local(frame, event, arg):
            if event == "line":
                add(frame.f_lineno)
            return local
        self.tracers[filename] = local
        return local

    def _global(self, frame, event, arg):
        try:
            tracer = self.tracers[frame.f_code.co_filename]
        except KeyError:
            tracer = self._local_for(frame.f_code.co_filename)
        if tracer is None or self.wanted is None:
            return tracer
        code = frame.f_code
        try:
            local = self.codes[id(code)][1]
        except KeyError:
            local = tracer.local_for(code)
            self.codes[id(code)] = (code, local)
        if code.co_name == "<module>":  # a tree module's body: an import, until it returns
            return self._importing(local)
        return local

    def _importing(self, local):
        """A module body's local trace function that counts the import while it runs."""
        importing = self.importing
        importing[0] += 1

        def module(frame, event, arg):
            nonlocal local
            if event == "return":
                importing[0] -= 1
                return None
            if local is not None:
                local = local(frame, event, arg)
            return module
        return module

    def start(self):
        import threading  # as a coverage run does: the threads a call starts (a pool's workers) are traced too
        threading.settrace(self._global)
        sys.settrace(self._global)

    def stop(self):
        sys.settrace(None)
        sys.modules["threading"].settrace(None)

    def executed(self, root):
        """``[[tree path, sorted lines], ...]`` of every tree file a traced frame ran a line of."""
        out = {}
        for filename, lines in self.lines.items():
            if lines:
                path = os.path.relpath(os.path.realpath(filename), os.path.realpath(root)).replace(os.sep, "/")
                out.setdefault(path, set()).update(lines)
        return [[path, sorted(lines)] for path, lines in sorted(out.items())]


CO_OPTIMIZED = 0x1  # a function's code (lambdas and comprehensions too); a module's or class body's lacks it


def _call_only(entries):
    """``{line: None (any function's code) or {code name, ...}}`` of call-only entries."""
    out = {}
    for entry in entries:
        if isinstance(entry, int):
            out[entry] = None
        elif isinstance(entry, (list, tuple)) and len(entry) == 2 and out.get(entry[0], ()) is not None:
            out.setdefault(entry[0], set()).add(entry[1])
    return out


class _Wanted:
    """One tree file's wanted lines: ``local_for(code)`` gives the local trace function of a code
    object, or None when none of its lines is wanted or each one already ran."""

    def __init__(self, lines, called_only, add, importing=(0,)):
        self.lines = lines
        self.called_only = called_only
        self.add = add
        self.importing = importing

    def local_for(self, code):
        try:
            here = {line for _, _, line in code.co_lines() if line in self.lines}
        except (AttributeError, TypeError):
            here = set(self.lines)
        if code.co_flags & CO_OPTIMIZED:
            skipped = frozenset(line for line, names in self.called_only.items()
                                if names is not None and code.co_name not in names)
        else:
            skipped = frozenset(self.called_only)
        remaining = here - skipped
        if not remaining:
            return None  # none of its lines is wanted, or each one already ran (in another frame)
        add = self.add
        waits = frozenset(line for line in self.called_only if line not in skipped) & here  # call-only lines here
        importing = self.importing

        def local(frame, event, arg):
            if not remaining:
                return None  # each wanted line of the code ran (in any frame): this one is no longer traced
            line = frame.f_lineno
            add(line)
            if line in remaining:
                remaining.discard(line)
            return local

        def waiting(frame, event, arg):  # the same, for a code with call-only lines
            if not remaining:
                return None
            line = frame.f_lineno
            if line in waits and importing[0]:
                return waiting  # a call-only line run by an import is no call
            add(line)
            if line in remaining:
                remaining.discard(line)
            return waiting

        def definition_time(frame, event, arg):  # a module's or class body's code: call-only lines skipped
            if not remaining:
                return None
            line = frame.f_lineno
            if line not in skipped:
                add(line)
                if line in remaining:
                    remaining.discard(line)
            return definition_time
        return definition_time if skipped else waiting if waits else local
