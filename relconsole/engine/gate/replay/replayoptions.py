"""How a replay runs (SPEC §7): the CI shard it covers (``Shard``), its options (runs per
side, seeds, the workspace lease, where sheets go) and the progress steps it reports.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from relconsole.engine.errors import UsageError
from relconsole.engine.relations.pool import Cancel


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` of ``total`` (1-based): a CI matrix splits the relations with it."""

    index: int = 1
    total: int = 1

    @classmethod
    def parse(cls, text: str) -> "Shard":
        """``"K/N"`` with 1 <= K <= N. Raises UsageError otherwise."""
        try:
            k, n = (int(part) for part in text.split("/"))
        except ValueError:
            raise UsageError(f"--shard {text!r}: expected K/N, for example 1/4") from None
        if not 1 <= k <= n:
            raise UsageError(f"--shard {text!r}: K must be between 1 and N")
        return cls(k, n)

    def select(self, ids: list[str]) -> list[str]:
        """This shard's ids: every N-th of ``ids`` sorted, starting at the K-th.

        Sorting makes the split the same on every machine whatever order the ids came in.
        """
        ordered = sorted(ids)
        mine = set(ordered[self.index - 1::self.total])
        return [rid for rid in ids if rid in mine]

    def __str__(self) -> str:
        return f"{self.index}/{self.total}"


@dataclass
class ReplayOptions:
    """How to replay: runs per side, the workspace lease, where sheets go.

    ``ttl_seconds`` is the workspace lease's TTL (renewed every third of it);
    ``artifacts`` defaults to ``<git dir>/relconsole/replay/<head sha 12>``; ``seeds``: the run
    seeds to replay, one per run (a second replay repeats the first's); None draws ``runs``
    seeds, the same on HEAD and on the merge base (SPEC §7). ``count_run_phase``: the review's
    results were made a moment before by the caller's own run phase with drawn seeds (the
    gate), so their runs count as runs of the replay (``replay.run_phase_evidence``).
    """

    runs: int = 5
    workspace: str | None = None
    holder: str | None = None
    ttl_seconds: float = 300.0
    artifacts: Path | None = None
    shard: Shard = field(default_factory=Shard)
    fresh_worktrees: bool = False
    workers: int | None = None
    cancel: Cancel = field(default_factory=Cancel)
    seeds: list[int] | None = None
    count_run_phase: bool = False


@dataclass
class Progress:
    """One step of a replay, for a progress bar: ``done`` of ``total`` runs, and what."""

    done: int
    total: int
    label: str
