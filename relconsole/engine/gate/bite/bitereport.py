"""What a bite found (issue 3 item 6): each mutant's fate (``MutationResult``), the verdict
every front end words the same way (``BiteVerdict``: bites, bites by crash only, does not
bite) and the report of one relation (``BiteReport``), as ``relconsole bite`` prints it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from relconsole.engine.literal import counted


BITES = "bites"


CRASH_ONLY = "bites by crash only"


NO_BITE = "does not bite"


VERDICTS = (BITES, CRASH_ONLY, NO_BITE)


@dataclass
class MutationResult:
    """One mutant's fate. ``outcome``: ``caught`` or ``survived``; ``detail``: the miss, or "held".

    ``crashed`` says the catch was an exception or a timeout: any caller of the subject
    would have noticed, so it says less about the relation than a disagreement does.
    """

    operator: str
    label: str
    path: str  # repository-relative file mutated: the subject's, or a library file an adapter calls
    line: int  # in the original file
    function: str
    outcome: str
    detail: str
    seconds: float = 0.0
    crashed: bool = False  # caught by an exception (or timeout), not by the comparison


@dataclass(frozen=True)
class BiteVerdict:
    """What a finished bite found, as the cache keeps it and every front end words it.

    ``verdict``: ``BITES`` (its comparison caught a mutant), ``CRASH_ONLY`` (it caught some,
    every one by an exception or a timeout) or ``NO_BITE`` (it caught none, or there was no
    mutant); ``caught``, ``crashed`` (of those caught) and ``total`` count the mutants.
    """

    verdict: str
    caught: int
    crashed: int
    total: int

    @classmethod
    def of(cls, caught: int, crashed: int, total: int) -> "BiteVerdict":
        verdict = BITES if caught > crashed else CRASH_ONLY if caught else NO_BITE
        return cls(verdict, caught, crashed, total)

    @property
    def bites(self) -> bool:
        """True only for ``BITES``: a crash-only catch says nothing of the comparison."""
        return self.verdict == BITES

    def words(self) -> str:
        """The verdict as ``relconsole bite`` prints it after ``RELATION_ID: ``; the console
        shows the same words."""
        if self.verdict == BITES:
            crashes = f" ({self.crashed} by an exception)" if self.crashed else ""
            return f"{BITES}: caught {self.caught} of {counted(self.total, 'mutation')}{crashes}"
        if self.verdict == CRASH_ONLY:
            return (f"{CRASH_ONLY}: caught {self.caught} of {counted(self.total, 'mutation')}, "
                    "every one by an exception or a timeout, none by the comparison")
        return f"{NO_BITE}: caught {self.caught} of {counted(self.total, 'mutation')}"

    def to_json(self) -> dict:
        """``{"verdict", "caught", "crashed", "total"}``: the ``bite`` field of ``run --json``."""
        return {"verdict": self.verdict, "caught": self.caught, "crashed": self.crashed, "total": self.total}


@dataclass
class BiteReport:
    """What ``bite`` found for one relation.

    ``baseline``: ``held``, ``missed`` or ``blocked`` (the unmutated relation); ``results``
    is empty unless it held. ``bites`` is True when the comparison caught a mutant, False
    when none was caught (or there was no mutant) or only by crashes, None when the baseline
    did not hold; ``summary`` the verdict word and counts (None when the baseline did not
    hold). ``notes``: what was mutated instead of the subject, and why (an adapter of the
    oracle, issue 16), how the mutants were spent, and each target left alone with its reason.
    """

    relation_id: str
    subject: str
    subject_path: str | None
    baseline: str
    baseline_detail: str
    key: str | None = None
    results: list[MutationResult] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def caught(self) -> int:
        return sum(1 for r in self.results if r.outcome == "caught")

    @property
    def crashed(self) -> int:
        return sum(1 for r in self.results if r.outcome == "caught" and r.crashed)

    @property
    def total(self) -> int:
        return len(self.results)

    @property
    def crash_only(self) -> bool:
        """Every mutant it caught raised or timed out: any caller would have noticed those,
        so the relation's own comparison caught nothing."""
        return self.caught > 0 and self.crashed == self.caught

    @property
    def summary(self) -> BiteVerdict | None:
        """The verdict word and counts, None when the baseline did not hold."""
        return BiteVerdict.of(self.caught, self.crashed, self.total) if self.baseline == "held" else None

    @property
    def bites(self) -> bool | None:
        """True when its comparison caught a mutant; False when none, or only by crashes."""
        summary = self.summary
        return None if summary is None else summary.bites

    def verdict(self) -> str:
        """One line for a terminal or a pane."""
        if self.baseline == "blocked":
            return f"{self.relation_id}: blocked, cannot run: {self.baseline_detail}"
        if self.baseline != "held":
            return (f"{self.relation_id}: already misses without any mutation "
                    f"({self.baseline_detail}); bite results would mean nothing")
        return f"{self.relation_id}: {self.summary.words()}"

    def to_json(self) -> dict:
        """The report as ``bite --json`` prints it; ``verdict_word`` is one of ``VERDICTS``
        (None when the baseline did not hold)."""
        summary = self.summary
        return {"relation_id": self.relation_id, "subject": self.subject,
                "subject_path": self.subject_path, "baseline": self.baseline,
                "baseline_detail": self.baseline_detail, "bites": self.bites,
                "verdict_word": summary.verdict if summary else None,
                "caught": self.caught, "crashed": self.crashed, "crash_only": self.crash_only, "total": self.total,
                "verdict": self.verdict(), "notes": list(self.notes),
                "mutations": [dataclasses.asdict(r) for r in self.results]}
