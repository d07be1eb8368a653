"""Progress of long command-line work on stderr (issue 17): relations running, replay runs,
a confirmation's stages, big corpora hashed while a review loads.

``progress_reporter(stream, enabled)`` is a context manager giving a ``Reporter``:

- on a terminal (``stream.isatty()``) a rich progress bar, drawn only once something is
  reported and erased when the block ends, so the terminal keeps the result lines only;
- elsewhere (a pipe, a CI log) plain lines, one per step (``[done/total] label``);
- with ``enabled=False`` (``--json``) nothing at all.

Stdout is never written. The engine reports through callbacks and never sees this module
(``load_review(hash_progress=reporter.bytes)``, ``replay(progress=reporter.replay)``,
``run_review(progress=reporter.results(total))``, ``confirm_candidate(progress=reporter.confirm)``).
rich is imported only when a bar is drawn, so ``relconsole --help`` stays fast.
"""

from __future__ import annotations

import sys
import threading
from contextlib import contextmanager
from typing import Callable, Iterator, TextIO

from relconsole.engine.literal import counted, one_line

HASH_MIN_BYTES = 4 << 20  # a corpus smaller than this hashes too fast to be worth a bar
HASH_LINE_EVERY = 0.25  # without a terminal, a big corpus's hashing is a line per quarter
MIB = 1 << 20


class Reporter:
    """Receives progress; the base class shows nothing (``enabled=False``)."""

    def step(self, done: int, total: int, label: str) -> None:
        """``done`` of ``total`` steps are finished; ``label`` says which one was last."""

    def bytes(self, label: str, done: int, total: int) -> None:
        """``done`` of ``total`` bytes of ``label`` are hashed (``load_review``'s
        ``hash_progress`` signature); files under HASH_MIN_BYTES are not shown."""

    def stage(self, label: str, fraction: float | None = None) -> None:
        """A named stage, ``fraction`` (0..1) of the whole when known."""

    # adapters for the engine's callbacks

    def replay(self, progress) -> None:
        """``replay(progress=...)``: a ``replay.Progress`` (done, total, label)."""
        self.step(progress.done, progress.total, progress.label)

    def confirm(self, progress) -> None:
        """``confirm_candidate(progress=...)``: a ``confirm.ConfirmProgress`` (step, fraction)."""
        self.stage(progress.step, progress.fraction)

    def begin(self, total: int, label: str) -> None:
        """``total`` steps start now (a bar shows 0 of them; lines wait for the first step)."""

    def results(self, total: int) -> Callable[[object], None]:
        """A ``run_review(progress=...)`` callback counting ``total`` relation results."""
        self.begin(total, f"running {counted(total, 'relation')}")
        done = [0]
        lock = threading.Lock()

        def report(result) -> None:
            with lock:
                done[0] += 1
                count = done[0]
            self.step(count, total, f"{result.relation_id}: {result.outcome}")
        return report

    def close(self) -> None:
        """Finish: a bar is erased (results follow on stdout)."""


class LineReporter(Reporter):
    """Plain lines on a stream that is not a terminal: one per step."""

    def __init__(self, stream: TextIO):
        self.stream = stream
        self._shown: dict[str, int] = {}  # label -> last quarter printed

    def _line(self, text: str) -> None:
        print(text, file=self.stream, flush=True)

    def step(self, done: int, total: int, label: str) -> None:
        self._line(f"[{done}/{total}] {one_line(label)}")

    def bytes(self, label: str, done: int, total: int) -> None:
        if total < HASH_MIN_BYTES:
            return
        quarter = int(done / total / HASH_LINE_EVERY)
        if self._shown.get(label, -1) >= quarter:
            return
        self._shown[label] = quarter
        self._line(f"[hash {done * 100 // total:3d}%] {one_line(label)}: {done // MIB} / {total // MIB} MiB")

    def stage(self, label: str, fraction: float | None = None) -> None:
        where = f"[{fraction:4.0%}] " if fraction is not None else ""
        self._line(f"{where}{one_line(label)}")


class BarReporter(Reporter):
    """A rich progress bar on a terminal: one line for the steps, one per big file hashed."""

    def __init__(self, stream: TextIO):
        self.stream = stream
        self._progress = None
        self._steps = None
        self._files: dict[str, object] = {}
        self._lock = threading.Lock()  # engine callbacks may come from worker threads

    def _bar(self):
        if self._progress is None:
            from rich.console import Console
            from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn
            console = Console(file=self.stream, stderr=self.stream is sys.stderr)
            self._progress = Progress(TextColumn("{task.description}", markup=False), BarColumn(),
                                      TaskProgressColumn(), TextColumn("{task.fields[detail]}", markup=False),
                                      TimeElapsedColumn(), console=console, transient=True)
            self._progress.start()
        return self._progress

    def begin(self, total: int, label: str) -> None:
        if total:
            self.step(0, total, label)

    def step(self, done: int, total: int, label: str) -> None:
        with self._lock:
            bar = self._bar()
            if self._steps is None:
                self._steps = bar.add_task("", total=total, detail="")
            # drawn now, not at the next tick: a relation finishing between two ticks was never
            # shown (the terminal showed its neighbours' results only)
            bar.update(self._steps, total=total, completed=done, description=f"{done}/{total}",
                       detail=one_line(label)[:60], refresh=True)

    def bytes(self, label: str, done: int, total: int) -> None:
        if total < HASH_MIN_BYTES:
            return
        with self._lock:
            bar = self._bar()
            task = self._files.get(label)
            if task is None:
                task = self._files[label] = bar.add_task("hashing", total=total, detail=one_line(label)[:60])
            bar.update(task, completed=done,
                       description=f"hashing {done // MIB}/{total // MIB} MiB")

    def stage(self, label: str, fraction: float | None = None) -> None:
        with self._lock:
            bar = self._bar()
            if self._steps is None:
                self._steps = bar.add_task("", total=1.0, detail="")
            bar.update(self._steps, total=1.0 if fraction is not None else None,
                       completed=fraction or 0.0, detail=one_line(label)[:60])

    def close(self) -> None:
        with self._lock:
            if self._progress is not None:
                self._progress.stop()
                self._progress = None


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or fake stream
        return False


def _rich_installed() -> bool:
    """Whether rich can draw a bar: the base install (no ``[console]`` extra) has no rich, and
    a terminal there gets the plain lines."""
    import importlib.util
    try:
        return importlib.util.find_spec("rich") is not None
    except (ImportError, ValueError):
        return False


@contextmanager
def progress_reporter(stream: TextIO | None = None, enabled: bool = True) -> Iterator[Reporter]:
    """A Reporter for one block of work on ``stream`` (default: stderr): a bar on a terminal,
    plain lines elsewhere, nothing when not ``enabled`` (pass ``not args.json``). The bar is
    erased when the block ends, even when it raises."""
    stream = sys.stderr if stream is None else stream
    if not enabled:
        reporter: Reporter = Reporter()
    elif _is_terminal(stream) and _rich_installed():
        reporter = BarReporter(stream)
    else:
        reporter = LineReporter(stream)
    try:
        yield reporter
    finally:
        reporter.close()
