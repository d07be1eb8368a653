"""Garbage collection that stays out of the reviewer's way (issue 7: every key within 100 ms).

A loaded 20,000-path review is millions of objects, and a run streams in a thousand results.
CPython's automatic full (generation 2) collections then paused the console for 50–400 ms
at random moments, while a key was being handled. So, while a console runs:

* automatic collections of the young generations stay on (a few ms each);
* automatic full collections are off; a full collection runs only when the reviewer has not
  touched a key or the mouse for ``IDLE_SECONDS`` (checked every ``SWEEP_EVERY_SECONDS``);
* what survives a load or a run is frozen (``gc.freeze``), so later full collections never
  walk the review again; a reload unfreezes first, so the old review can be collected.
"""

from __future__ import annotations

import gc
import time

IDLE_SECONDS = 5.0  # no input for this long: a full collection cannot delay a key
SWEEP_EVERY_SECONDS = 30.0
NEVER = 1 << 30  # generation-1 collections before an automatic full one: never


class Collector:
    """The console's collection policy; ``start`` on mount, ``stop`` on unmount (it restores
    the process's thresholds: tests run many consoles in one process)."""

    def __init__(self) -> None:
        self.last_input = time.monotonic()
        self._thresholds: tuple[int, int, int] | None = None

    def start(self) -> None:
        self._thresholds = gc.get_threshold()
        young, middle, _full = self._thresholds
        gc.set_threshold(young, middle, NEVER)

    def stop(self) -> None:
        if self._thresholds is not None:
            gc.set_threshold(*self._thresholds)
            self._thresholds = None

    def input_seen(self) -> None:
        """A key or mouse event arrived (seconds are ``time.monotonic``)."""
        self.last_input = time.monotonic()

    def settled(self) -> None:
        """A load or a run finished: what it built lives as long as the review."""
        gc.freeze()

    def releasing(self) -> None:
        """A new review replaces the old one: the old one's cycles may be collected again."""
        gc.unfreeze()

    def sweep_if_idle(self, busy: bool) -> bool:
        """Run a full collection when nothing runs and no input came for IDLE_SECONDS;
        True when it ran."""
        if busy or time.monotonic() - self.last_input < IDLE_SECONDS:
            return False
        gc.collect()
        return True
