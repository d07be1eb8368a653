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
    ``[[tree path, [line, ...]], ...]`` (sorted, one row per tree file)."""

    def __init__(self, root):
        self.prefix = os.path.realpath(root) + os.sep
        self.lines = {}  # filename as the code object names it -> set of line numbers
        self.tracers = {}  # filename -> its local trace function, or None for a file outside the tree

    def _local_for(self, filename):
        try:
            inside = os.path.realpath(filename).startswith(self.prefix) and not filename.startswith("<")
        except (TypeError, ValueError, OSError):
            inside = False
        if not inside:
            self.tracers[filename] = None
            return None
        add = self.lines.setdefault(filename, set()).add

        def local(frame, event, arg):
            if event == "line":
                add(frame.f_lineno)
            return local
        self.tracers[filename] = local
        return local

    def _global(self, frame, event, arg):
        try:
            return self.tracers[frame.f_code.co_filename]
        except KeyError:
            return self._local_for(frame.f_code.co_filename)

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
