"""What a bite found (issue 3 item 6): each mutant's fate (``MutationResult``), the verdict
every front end words the same way (``BiteVerdict``: bites, bites by crash only, does not
bite) and the report of one relation (``BiteReport``), as ``relconsole bite`` prints it.

Each run of a mutant judges the relation's own input (its corpus or seeds) and, when that
holds, inputs drawn from it (issue 37): a mutant is killed by its own input, or only by a
drawn input (the run record's ``drawn.missed_on``), and the totals count the kills only drawn
inputs made, so a keeper sees what drawing adds; a survivor says how many drawn inputs held.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from relconsole.engine.literal import counted, one_line


BITES = "bites"


CRASH_ONLY = "bites by crash only"


NO_BITE = "does not bite"


VERDICTS = (BITES, CRASH_ONLY, NO_BITE)


OWN, DRAWN = "own", "drawn"  # MutationResult.killed_by: the relation's own input, or only a drawn one

SHOWN_INPUT = 80  # characters of a killing input a line shows (the JSON keeps the shrunk part whole)


@dataclass
class MutationResult:
    """One mutant's fate. ``outcome``: ``caught`` or ``survived``; ``detail``: the miss, or "held".

    ``crashed`` says the catch was an exception or a timeout: any caller of the subject
    would have noticed, so it says less about the relation than a disagreement does.

    What killed it: ``killed_by`` is ``OWN`` (the relation's own input, ``own_input``:
    ``corpus`` or ``seeds``), ``DRAWN`` (its own input held and a drawn input missed:
    ``drawn_on`` says which, ``drawn_recipe`` replays it, ``shrunk`` is the smallest input
    that still kills it, ``shrunkfacts.shrunk_json``'s shape, {} when not shrunk) or "" (it
    survived). ``drawn_tried``: drawn inputs judged (0 when the own input killed it or none
    are drawn); ``drawn_stopped``: why drawing stopped early, "" when it did not.
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
    killed_by: str = ""
    own_input: str = ""
    drawn_tried: int = 0
    drawn_stopped: str = ""
    drawn_on: str = ""
    drawn_recipe: dict = field(default_factory=dict)
    shrunk: dict = field(default_factory=dict)

    def how(self) -> str:
        """What killed it, or that nothing did, in words (one line, untrusted parts made safe
        with ``literal.one_line``): "by its corpus", "only by a drawn input (…); smallest: …",
        "no input killed it: its seeds and 100 drawn inputs held"."""
        own = f"its {self.own_input or 'own input'}"
        if self.outcome != "caught":
            return one_line(f"no input killed it: {self._held(own)}")
        if self.killed_by != DRAWN:
            return one_line(f"by {own}")
        text = f"only by a drawn input ({self.drawn_on or 'drawn'}), after {own} held"
        if self.shrunk:
            rows = self.shrunk.get("rows")
            size = f"{counted(rows, 'row')}: " if isinstance(rows, int) else ""
            text += f"; shrunk to {size}{_cut(str(self.shrunk.get('input', '')))}"
        return one_line(text)

    def _held(self, own: str) -> str:
        if self.detail.startswith("vacuous"):  # no miss, and nothing drawn after an empty output
            return f"{own} held only on empty outputs (the gate stops that as vacuous), no input drawn"
        held = f"{own} and {counted(self.drawn_tried, 'drawn input')} held" if self.drawn_tried \
            else f"{own} held, no input drawn"
        return held + (f" (drawing stopped: {self.drawn_stopped})" if self.drawn_stopped else "")


def _cut(text: str, limit: int = SHOWN_INPUT) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"


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
    drawn_only: int = 0  # of those caught, the ones only a drawn input caught (the own input held)

    @classmethod
    def of(cls, caught: int, crashed: int, total: int, drawn_only: int = 0) -> "BiteVerdict":
        verdict = BITES if caught > crashed else CRASH_ONLY if caught else NO_BITE
        return cls(verdict, caught, crashed, total, drawn_only)

    @property
    def bites(self) -> bool:
        """True only for ``BITES``: a crash-only catch says nothing of the comparison."""
        return self.verdict == BITES

    def words(self) -> str:
        """The verdict as ``relconsole bite`` prints it after ``RELATION_ID: ``; the console
        shows the same words. The kills only drawn inputs made are counted when there are
        any: "bites: caught 12 of 28 mutations, 3 of them only by a drawn input"."""
        drawn = f", {self.drawn_only} of them only by a drawn input" if self.drawn_only else ""
        if self.verdict == BITES:
            crashes = f" ({self.crashed} by an exception)" if self.crashed else ""
            return f"{BITES}: caught {self.caught} of {counted(self.total, 'mutation')}{crashes}{drawn}"
        if self.verdict == CRASH_ONLY:
            return (f"{CRASH_ONLY}: caught {self.caught} of {counted(self.total, 'mutation')}, "
                    f"every one by an exception or a timeout, none by the comparison{drawn}")
        return f"{NO_BITE}: caught {self.caught} of {counted(self.total, 'mutation')}"

    def to_json(self) -> dict:
        """``{"verdict", "caught", "crashed", "total", "drawn_only"}``: the ``bite`` field of ``run --json``."""
        return {"verdict": self.verdict, "caught": self.caught, "crashed": self.crashed, "total": self.total,
                "drawn_only": self.drawn_only}


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
    def drawn_only(self) -> int:
        """Mutants caught only by a drawn input: the relation's own input held on them."""
        return sum(1 for r in self.results if r.outcome == "caught" and r.killed_by == DRAWN)

    @property
    def crash_only(self) -> bool:
        """Every mutant it caught raised or timed out: any caller would have noticed those,
        so the relation's own comparison caught nothing."""
        return self.caught > 0 and self.crashed == self.caught

    @property
    def summary(self) -> BiteVerdict | None:
        """The verdict word and counts, None when the baseline did not hold."""
        if self.baseline != "held":
            return None
        return BiteVerdict.of(self.caught, self.crashed, self.total, self.drawn_only)

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
        (None when the baseline did not hold); ``drawn_only`` counts the mutants only a drawn
        input caught; each of ``mutations`` is a ``MutationResult`` with its ``how`` in words."""
        summary = self.summary
        return {"relation_id": self.relation_id, "subject": self.subject,
                "subject_path": self.subject_path, "baseline": self.baseline,
                "baseline_detail": self.baseline_detail, "bites": self.bites,
                "verdict_word": summary.verdict if summary else None,
                "caught": self.caught, "crashed": self.crashed, "crash_only": self.crash_only, "total": self.total,
                "drawn_only": self.drawn_only,
                "verdict": self.verdict(), "notes": list(self.notes),
                "mutations": [dataclasses.asdict(r) | {"how": r.how()} for r in self.results]}
