"""How the benches time things: one call, the median of repeated calls, and rounds that
interleave a measure with its anchor so that a noisy spell of the machine hits both alike.

Wall time is ``time.perf_counter`` seconds throughout. Used by every bench under bench/.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def timed(fn: Callable, *args, **kwargs) -> tuple[float, object]:
    """(seconds, value) of ``fn(*args, **kwargs)``."""
    started = time.perf_counter()
    value = fn(*args, **kwargs)
    return time.perf_counter() - started, value


def median_seconds(fn: Callable[[], object], repeat: int) -> float:
    """The median wall seconds of ``repeat`` calls of ``fn()``, one after the other."""
    return statistics.median(timed(fn)[0] for _ in range(repeat))


def interleaved(steps: dict[str, Callable[[], object]], repeat: int, warmup: int = 0) -> dict[str, list[float]]:
    """Seconds of each step, per round: ``warmup`` rounds not kept, then ``repeat`` rounds,
    each running every step once in the order given (the anchor first, by convention).
    Returns step name -> ``repeat`` seconds, round by round, so per-round ratios pair up."""
    runs: dict[str, list[float]] = {name: [] for name in steps}
    for round_ in range(warmup + repeat):
        for name, step in steps.items():
            seconds = timed(step)[0]
            if round_ >= warmup:
                runs[name].append(seconds)
    return runs


def round_ratios(runs: dict[str, list[float]], measure: str, anchor: str) -> list[float]:
    """The per-round ratios ``measure / anchor`` of an ``interleaved`` result."""
    return [m / a for m, a in zip(runs[measure], runs[anchor])]


def verdict(ok: bool) -> str:
    """How a bench prints a target met or missed."""
    return "PASS" if ok else "FAIL"
