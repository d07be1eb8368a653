"""Inputs the patch cannot predict: drawn source inputs, drawn until the changed code is reached, misses shrunk (SPEC §3, §7).

A relation is judged on its leased corpus or hand-written seeds first (the worker's run). When
that holds, ``Drawing`` judges it again on inputs drawn from the run's seed:

- a relation over seeds with an input schema: rows drawn from the schema by Hypothesis
  (``schemadraw``), each checked by the same schema check as a seed row before the subject
  sees it; a miss is shrunk by Hypothesis's shrinker (``hypothesis.find``);
- a relation over a corpus: subsamples of its rows (sizes drawn from two rows up, never the
  corpus's own group sizes but by chance) and a copy scaled past the corpus's size with a
  part-copy tail (a row count that is no multiple of the corpus); a miss on either, or on the
  corpus itself (``shrink_rows``), is shrunk by delta debugging over rows (``rowshrink``).

``count`` inputs are always drawn (``generate: N``); then, while a changed line the relation's
calls reached the file of stays unreached, more, until ``budget`` seconds have gone. Every
input is a *recipe* (JSON): ``{"value": v}`` (a drawn seed row), ``{"pick": [i, ...]}`` (corpus
rows by index, in that order) or ``{"scale": k, "extra": r}`` (the corpus k times, then its
first r rows), with ``seed``, the evaluation's own seed (its orders and split points), and
``label``, the input in words. The worker judges a recipe (``judge``) in fresh subject calls
as every run; the same recipe replays (``RunPlan.given``) on the base and in a replay.

How a patch would beat it: it cannot see the draws coming (``os.urandom`` run seeds) nor tell
a drawn input from a production one (rows are the corpus's own, seed rows fit the schema); a
subject right on its whole documented domain holds on all of them.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import random
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from relconsole.engine.literal import counted
from relconsole.engine.relations.records import compact_text
from relconsole.engine.relations.rowshrink import ddmin

SUBSAMPLE_ROWS = 5000  # the largest drawn subsample: a corpus's small-input paths, cheaply
SCALE_ROWS = 12000  # a drawn scaled copy's rows at most ([tool.relconsole] generate_rows)
UNDRAWN_KINDS = frozenset({"bound"})  # a bound states its own edge input: nothing to draw


class DrawingStopped(Exception):
    """A drawn input that could not be judged: the oracle's fault, the machine's, or the
    relation's time. Drawing stops and says why; it is never a miss."""


@dataclass
class Judged:
    """One recipe judged: the outcome (``kinds.evaluate``'s), or the subject's failure
    (``SubjectFailed.error``: type, message, where) when a call gave no output."""

    outcome: Any = None
    error: dict | None = None
    seconds: float = 0.0

    @property
    def missed(self) -> bool:
        return self.error is not None or not (self.outcome.held and not self.outcome.vacuous)

    @property
    def failure(self) -> str:
        """What kind of miss: the exception's type, else ``disagree`` (``vacuous`` for a hold
        on empty outputs, which is no miss to shrink towards)."""
        if self.error is not None:
            return str(self.error.get("type") or "raised")
        if self.outcome.vacuous:
            return "vacuous"
        return "" if self.outcome.held else "disagree"


@dataclass
class DrawReport:
    """What drawing did in one run: the ``seed`` its draws came from, ``asked`` (``generate``)
    and ``tried`` inputs, ``extra`` of them drawn to reach changed lines still ``unreached``
    (tree path -> lines) at the end, ``stopped`` ("" or why it stopped early), and the first
    ``miss`` with its ``shrunk`` recipe (each ``{"recipe", "judged", ...}``)."""

    seed: int
    what: str
    asked: int
    tried: int = 0
    extra: int = 0
    unreached: dict = field(default_factory=dict)
    stopped: str = ""
    miss: dict | None = None
    shrunk: dict | None = None
    killed_by: str = ""  # "drawn" when a drawn input missed, "corpus" for a shrunk corpus miss
    seconds: float = 0.0  # wall seconds drawing, judging and shrinking took

    def summary(self) -> dict:
        """The JSON the run record keeps (``RunRecord.drawn``), without the outcomes."""
        out = {"seed": self.seed, "what": self.what, "asked": self.asked, "tried": self.tried,
               "extra": self.extra, "unreached": self.unreached, "stopped": self.stopped,
               "seconds": round(self.seconds, 3)}
        if self.miss is not None:
            out["missed_on"] = self.miss["recipe"]
        return out


DEFAULT_COUNT = {"seeds": 100, "lease": 4}  # drawn inputs a run judges when the catalog names no generate: N


def draw_count(relation: dict) -> int:
    """How many inputs a run draws for ``relation`` (a catalog mapping): its ``generate``, else
    DEFAULT_COUNT for a corpus and for seeds with an input schema, else 0 (seeds with no
    schema: nothing to draw from; a bound: its edge is the input)."""
    if relation.get("kind") in UNDRAWN_KINDS:
        return 0
    if "generate" in relation:
        return int(relation["generate"])
    source = relation.get("input") or {}
    if "lease" in source:
        return DEFAULT_COUNT["lease"]
    return DEFAULT_COUNT["seeds"] if source.get("schema") else 0


def generation_seed(run_seed: int) -> int:
    """The seed every draw of a run comes from, derived from the run seed (so a recorded
    run replays its draws), never equal to the seed of its orders."""
    return random.Random(f"generate {run_seed}").getrandbits(48)


def recipe_seed(run_seed: int, recipe: dict) -> int:
    """The evaluation seed of a drawn input: from the run seed and the input itself, so the
    same input (a shrink candidate Hypothesis tries again) gets the same orders."""
    text = json.dumps({k: v for k, v in recipe.items() if k not in ("seed", "label")}, sort_keys=True,
                      default=repr)
    return int.from_bytes(hashlib.sha256(f"{run_seed}\0{text}".encode()).digest()[:6], "big")


class Drawing:
    """Draws, judges and shrinks the inputs of one relation's run (see the module docstring).

    ``judge(recipe) -> Judged`` runs one recipe; ``unreached() -> {path: [line, ...]}`` the
    changed lines still unexecuted in files the relation's calls reached; ``deadline`` (on
    ``clock``) is the relation's own time limit, which drawing never overruns.
    """

    def __init__(self, relation: dict, judge: Callable[[dict], Judged], run_seed: int, count: int,
                 budget: float, shrink_budget: float, deadline: float,
                 unreached: Callable[[], dict] = dict, clock: Callable[[], float] = time.monotonic):
        self.relation, self.judge, self.run_seed, self.count = relation, judge, run_seed, count
        self.budget, self.shrink_budget, self.deadline = budget, shrink_budget, deadline
        self.unreached, self.clock = unreached, clock
        self.started = clock()
        self.slowest = 0.0  # seconds of the slowest judgement so far: none starts that cannot finish in time

    def _judged(self, recipe: dict) -> Judged:
        judged = self.judge(recipe)
        self.slowest = max(self.slowest, judged.seconds)
        return judged

    # --- when to stop -------------------------------------------------------------------

    def _left(self) -> float:
        return self.deadline - self.clock()

    def _may_draw(self, report: DrawReport) -> bool:
        """Whether to judge one more input: the first ``count`` always (within the relation's
        time), then more only while a changed line stays unreached and the budget lasts."""
        if report.stopped:
            return False
        if self._left() <= max(1.0, 2 * self.slowest):
            report.stopped = "the relation's time ran out"
            return False
        if report.tried < self.count:
            return True
        if self.clock() - self.started >= self.budget:
            return False
        report.unreached = self.unreached()
        return bool(report.unreached)

    # --- seeds: rows drawn from the schema ---------------------------------------------------

    def seeds(self, schema: dict, check_row: Callable[[Any, dict], list[str]], examples: list | tuple = (),
              today: "dt.date | None" = None) -> DrawReport:
        """Draw rows from ``schema`` (each passing ``check_row``; values like the seed rows'
        ``examples`` and days around ``today`` among them, ``schemadraw.row_strategy``), judge
        each; shrink the first miss with Hypothesis. Batches of ``count`` under one
        ``hypothesis.find`` each, the first always, the next ones while ``_may_draw`` says so."""
        from hypothesis import HealthCheck, Phase, Verbosity, assume, find, settings
        from hypothesis.errors import Flaky, NoSuchExample

        from relconsole.engine.relations.schemadraw import row_strategy

        report = DrawReport(generation_seed(self.run_seed), "rows drawn from the input schema", self.count)
        strategy, known, misses = row_strategy(schema, examples, today), {}, []
        shrinking = {"on": False, "until": 0.0}

        def condition(row: dict) -> bool:
            assume(not check_row(row, schema))  # never reaches the subject otherwise
            key = json.dumps(row, sort_keys=True)
            if key in known:
                return known[key]
            if shrinking["on"]:
                if self.clock() >= shrinking["until"] or self._left() <= 1.0:
                    return False
            elif not self._may_draw(report):
                return False
            recipe = self._value_recipe(row, report.tried)
            try:
                judged = self._judged(recipe)
            except DrawingStopped as stop:
                report.stopped = report.stopped or str(stop)
                shrinking["until"] = 0.0
                return False
            if not shrinking["on"]:
                report.tried += 1
                report.extra = max(0, report.tried - self.count)
            failure = judged.failure
            wanted = misses[0]["judged"].failure if misses else failure
            known[key] = failure not in ("", "vacuous") and failure == wanted
            if known[key]:
                misses.append({"recipe": recipe, "judged": judged})
                if not shrinking["on"]:
                    shrinking.update(on=True, until=self.clock() + self.shrink_budget)
            return known[key]

        rng = random.Random(report.seed)
        batch = 0
        while not misses and (batch == 0 or self._may_draw(report)):
            before = report.tried
            config = settings(max_examples=max(1, self.count), database=None, deadline=None, derandomize=False,
                              phases=[Phase.generate, Phase.shrink], suppress_health_check=list(HealthCheck),
                              verbosity=Verbosity.quiet, print_blob=False)
            try:
                find(strategy, condition, settings=config, random=random.Random(rng.getrandbits(64)))
            except (NoSuchExample, Flaky):
                pass
            except Exception as exc:  # Hypothesis's own stop (Unsatisfiable): no more valid rows
                report.stopped = report.stopped or f"drawing stopped: {type(exc).__name__}"
            batch += 1
            if report.tried == before:
                break
        if self.count and report.tried >= self.count and not misses:
            report.unreached = self.unreached()
        if misses:
            report.miss, report.killed_by = misses[0], "drawn"
            report.shrunk = dict(misses[-1], candidates=len(known), seconds=round(self.clock() - self.started, 3))
        report.seconds = self.clock() - self.started
        return report

    def _value_recipe(self, row: Any, number: int) -> dict:
        recipe = {"value": row}
        recipe["seed"] = recipe_seed(self.run_seed, recipe)
        recipe["label"] = f"drawn input {compact_text(row, 120)}"
        return recipe

    # --- corpus: subsamples and scaled copies -------------------------------------------------

    def corpus(self, rows: int, scale_rows: int = SCALE_ROWS) -> DrawReport:
        """Judge ``count`` drawn inputs made of a corpus of ``rows`` rows: one scaled copy
        (when the corpus is under ``scale_rows``; its first one drawn in the upper half, so a
        path taken above some size under it is reached) and subsamples; more while a changed
        line stays unreached. The first miss is shrunk over its rows."""
        report = DrawReport(generation_seed(self.run_seed), "subsamples and scaled copies of the corpus", self.count)
        rng = random.Random(report.seed)
        scaled = 0
        while self._may_draw(report):
            # the first input a scaled copy, the rest of the first N subsamples (a copy costs what the
            # corpus costs, times its size); past N, to reach a changed line, every other one a copy
            scale = report.tried == 0 or report.tried >= self.count and report.tried % 2 == 0
            recipe = self._corpus_recipe(rng, rows, scale_rows, first_scale=scaled == 0, scale=scale)
            if recipe is None:
                break
            scaled += "scale" in recipe
            try:
                judged = self._judged(recipe)
            except DrawingStopped as stop:
                report.stopped = str(stop)
                break
            report.tried += 1
            report.extra = max(0, report.tried - self.count)
            if judged.missed and (judged.failure != "vacuous" or "scale" in recipe):
                # empty outputs for a copy that holds every row of a corpus whose outputs were not
                # empty: a path that gives up on large inputs (``return {}`` above some size)
                report.miss, report.killed_by = {"recipe": recipe, "judged": judged}, "drawn"
                report.shrunk = self.shrink_rows(recipe, rows, judged)
                break
        if report.miss is None and not report.stopped and report.tried >= self.count:
            report.unreached = self.unreached()
        report.seconds = self.clock() - self.started
        return report

    def _corpus_recipe(self, rng: random.Random, rows: int, scale_rows: int, first_scale: bool,
                       scale: bool) -> dict | None:
        if scale and rows and rows < scale_rows:
            low = max(rows + 1, scale_rows // 2) if first_scale else rows + 1
            target = _log_uniform(rng, low, scale_rows)
            times, extra = divmod(target, rows)
            recipe = {"scale": times, "extra": extra or 1}
            total = times * rows + recipe["extra"]
            words = f"the corpus {counted(times, 'time')} and its first {counted(recipe['extra'], 'row')} ({total} rows)"
        elif rows > 2:
            size = _log_uniform(rng, 2, min(rows - 1, SUBSAMPLE_ROWS))
            recipe = {"pick": sorted(rng.sample(range(rows), size))}
            words = f"a drawn subsample of {counted(size, 'row')} of {rows}"
        else:
            return None
        recipe["seed"] = recipe_seed(self.run_seed, recipe)
        recipe["label"] = words
        return recipe

    def shrink_rows(self, recipe: dict, rows: int, judged: Judged) -> dict:
        """The smallest subset of ``recipe``'s rows (``None``: the whole corpus of ``rows``
        rows) on which the relation still misses the same way, by delta debugging within
        the shrink budget: ``{"recipe", "judged", "candidates", "seconds"}``."""
        started = self.clock()
        indexes = recipe_rows(recipe, rows)
        seed = recipe["seed"] if recipe else self.run_seed
        found: dict[tuple, Judged] = {}

        def misses(candidate: list[int]) -> bool:
            if self._left() <= 1.0:
                return False
            try:
                attempt = self.judge({"pick": candidate, "seed": seed, "label": ""})
            except DrawingStopped:
                return False
            found[tuple(candidate)] = attempt
            return attempt.missed and attempt.failure == judged.failure

        until = min(started + self.shrink_budget, self.deadline - 1.0)
        smallest, candidates = ddmin(indexes, misses, until, self.clock)
        final = found.get(tuple(smallest), judged)
        shrunk = {"pick": smallest, "seed": seed,
                  "label": f"{counted(len(smallest), 'row')} of the {len(indexes)} shrunk to"}
        return {"recipe": shrunk, "judged": final, "candidates": candidates,
                "seconds": round(self.clock() - started, 3), "from_rows": len(indexes)}


def recipe_rows(recipe: dict | None, rows: int) -> list[int]:
    """The corpus row indexes a recipe feeds the subject, in order (``None``: the corpus)."""
    if not recipe:
        return list(range(rows))
    if "pick" in recipe:
        return list(recipe["pick"])
    if "scale" in recipe:
        return list(range(rows)) * int(recipe["scale"]) + list(range(int(recipe.get("extra") or 0)))
    raise ValueError(f"a recipe of no corpus rows: {sorted(recipe)}")


def recipe_ops(recipe: dict, rows: int, pack_order: Callable[[list[int]], str],
               wire: Callable[[Any], str]) -> list:
    """The input ops (``subject.inputs.build_input``) that make ``recipe``'s input from the
    server's own: a seed row replaced by the drawn value, or the corpus of ``rows`` rows
    picked from or scaled."""
    if "value" in recipe:
        return [["value", wire(recipe["value"])]]
    if "pick" in recipe:
        return [["order", pack_order(list(recipe["pick"]))]]
    times, extra = int(recipe["scale"]), int(recipe.get("extra") or 0)
    if not extra:
        return [["scale", times]]
    return [["scale", times + 1], ["slice", 0, times * rows + extra]]


def _log_uniform(rng: random.Random, low: int, high: int) -> int:
    """A whole number in [low, high], drawn evenly on a log scale (each size decade alike)."""
    if high <= low:
        return max(1, low)
    return min(high, max(low, int(math.exp(rng.uniform(math.log(low), math.log(high + 1))))))
