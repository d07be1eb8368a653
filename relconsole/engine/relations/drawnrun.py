"""The judge worker's part of drawn inputs: judge a recipe in fresh subject calls, run ``Drawing`` after the file input, reply (SPEC §3, §7).

``DrawnRun`` is made by ``worker.Server.answer`` for one request. ``judge(recipe)`` evaluates
the relation on one recipe (``drawing``'s: a drawn seed row, corpus rows picked, the corpus
scaled) through the same fork servers and the same ``kinds.evaluate`` as the run itself;
``after(outcome)`` draws (``generate`` in the request) when the file input held, or shrinks a
corpus miss; ``given(recipe)`` judges exactly one recorded recipe (a base check, a replay).
Their reply parts: ``drawn`` (what was drawn), ``shrunk`` (the smallest input that still
misses, its two outputs), and for a drawn miss the reply's own outcome fields (the drawn input
before shrinking).
"""

from __future__ import annotations

import datetime as dt
import time
from typing import Any, Callable

from relconsole.engine.relations.drawing import (SCALE_ROWS, UNDRAWN_KINDS, Drawing, DrawingStopped, Judged, recipe_ops,
                                                 recipe_rows)
from relconsole.engine.relations.replies import outcome_reply
from relconsole.engine.relations.spans import span_ran

TIME_LEFT = 0.5  # seconds: a call cut off this close to the relation's deadline ran out of the relation's time
GIVEN_INDEX = 10 ** 6  # input indexes of recipes start here: never a seed row's, so no repeated-call draw


class DrawnRun:
    """Drawn inputs for one worker request (see the module docstring).

    ``calls_with(ops, index)`` gives a ``ServerCalls`` whose inputs start with ``ops``;
    ``evaluate`` is ``kinds.evaluate`` bound to the merge adapter and wire encoder; ``inputs``
    the file input as the judge read it (``[rows]`` or the seed rows).
    """

    def __init__(self, request: dict, inputs: list, corpus: bool, seed: int,
                 calls_with: Callable[[list, int], Any], evaluate: Callable[..., Any],
                 wire: Callable[[Any], str], pack_order: Callable[[list[int]], str], log: dict, deadline: float):
        self.request, self.relation = request, request["relation"]
        self.inputs, self.corpus, self.seed = inputs, corpus, seed
        self.calls_with, self.evaluate, self.wire, self.pack_order = calls_with, evaluate, wire, pack_order
        self.log, self.deadline = log, deadline
        self.rows = inputs[0] if corpus and inputs else []
        self.index = GIVEN_INDEX

    # --- one recipe ------------------------------------------------------------------------

    def judge(self, recipe: dict) -> Judged:
        """The relation on ``recipe``'s input, in fresh calls. Raises DrawingStopped when the
        input could not be judged (a failure relconsole made, ``SubjectFailed.by_judge``, or the
        relation's time running out) and the judge's own step's errors."""
        from relconsole.engine.relations.outcome import SubjectFailed
        started = time.monotonic()
        value = recipe["value"] if "value" in recipe else [self.rows[i] for i in recipe_rows(recipe, len(self.rows))]
        ops = recipe_ops(recipe, len(self.rows), self.pack_order, self.wire)
        self.index += 1
        self.log.setdefault("repeated", set()).add(self.index)  # the file input's calls check repeats
        calls = self.calls_with(ops, self.index)
        try:
            outcome = self.evaluate(lighter(self.relation), [value], int(recipe.get("seed") or 0), lambda _i: calls,
                                    labels=[recipe.get("label") or ""])
        except SubjectFailed as exc:
            error = dict(exc.error) if not exc.blocked else {"type": "not comparable", "message": exc.blocked,
                                                             "where": "", "blocked": exc.blocked}
            if exc.by_judge or self._out_of_time(error):
                raise DrawingStopped(f"{error.get('type')}: {error.get('message', '')}"[:300]) from None
            return Judged(error=error, seconds=time.monotonic() - started)
        return Judged(outcome=outcome, seconds=time.monotonic() - started)

    def _out_of_time(self, error: dict) -> bool:
        """A call that timed out at the relation's own deadline (its limit was the time the
        relation had left, not a hang of its own): the relation's time ran out, which stops
        drawing (``drawn_incomplete``), never a miss of a call started too late to finish."""
        return error.get("type") == "timeout" and time.monotonic() >= self.deadline - TIME_LEFT

    # --- after the file input ------------------------------------------------------------------

    def after(self, outcome, generate: dict | None) -> dict:
        """Reply parts after the file input's ``outcome``: a corpus miss shrunk; a hold
        followed by drawn inputs (``generate``: ``{"count", "seconds", "shrink_seconds",
        "rows"}``, None or a count of 0: none)."""
        generate = generate or {}
        count = int(generate.get("count") or 0)
        drawing = Drawing(self.relation, self._judge_or_stop, self.seed, count,
                          float(generate.get("seconds") or 0), float(generate.get("shrink_seconds") or 30),
                          self.deadline, self._unreached)
        held = outcome.held and not outcome.vacuous
        if not held:
            if self.corpus and not outcome.vacuous and generate.get("shrink", True) and len(self.rows) > 1:
                return self._shrunk_part(drawing, outcome)
            return {}
        if not count or self.relation.get("kind") in UNDRAWN_KINDS:
            return {}
        schema = (self.relation.get("input") or {}).get("schema")
        try:
            if self.corpus:
                report = drawing.corpus(len(self.rows), int(generate.get("rows") or 0) or SCALE_ROWS)
            elif schema:
                from relconsole.engine.oracle.catalog import check_row
                report = drawing.seeds(schema, check_row, self.inputs, _day(self.request.get("clock_today")))
            else:
                return {}
        except DrawingStopped as stop:
            return {"drawn": {"stopped": str(stop), "asked": count}}
        return self._report_part(report, schema)

    def _judge_or_stop(self, recipe: dict) -> Judged:
        return self.judge(recipe)

    def _shrunk_part(self, drawing: Drawing, outcome) -> dict:
        """The corpus miss shrunk over its rows: ``{"shrunk": ...}`` ({} when it could not be)."""
        try:
            first = Judged(outcome=outcome)
            shrunk = drawing.shrink_rows({}, len(self.rows), first)
        except DrawingStopped:
            return {}
        if len(shrunk["recipe"]["pick"]) >= len(self.rows):
            return {}
        return {"shrunk": shrunk_reply(shrunk, self.rows)}

    def _report_part(self, report, schema: dict | None) -> dict:
        part: dict = {"drawn": report.summary()}
        if report.miss is None:
            return part
        part["drawn_miss"] = judged_reply(report.miss["judged"], report.miss["recipe"])
        if report.shrunk is not None:
            part["shrunk"] = shrunk_reply(report.shrunk, self.rows, schema)
        return part

    def _unreached(self) -> dict:
        return unreached_lines(self.request.get("targets"), self.log.get("executed") or {})

    # --- a recorded recipe ------------------------------------------------------------------

    def given(self, recipe: dict) -> dict:
        """The reply for judging exactly ``recipe`` (a base check or replay of a drawn or
        shrunk input): the outcome's reply, or the subject's error."""
        try:
            judged = self.judge(recipe)
        except DrawingStopped as stop:
            return {"error": {"type": "environment", "message": str(stop), "where": "", "files": []}}
        reply = judged_reply(judged, recipe)
        reply["given"] = recipe
        return reply


DRAWN_FOLLOWUPS = 2  # shuffles of a permutation, split points of a split_merge, on each drawn input


def lighter(relation: dict) -> dict:
    """``relation`` as a drawn input (or a shrink candidate) is judged: at most DRAWN_FOLLOWUPS
    follow-ups of a permutation or split_merge (its own input gets all the catalog asks). Any one
    follow-up that disagrees breaks what the relation states, so this judges the same property on
    more inputs for the calls: a scaled copy with six shuffles was seven calls on 12,000 rows."""
    params = dict(relation.get("params") or {})
    if relation.get("kind") == "permutation":
        params["shuffles"] = min(int(params.get("shuffles", 6)), DRAWN_FOLLOWUPS)
    elif relation.get("kind") == "split_merge" and not isinstance(params.get("splits", 3), list):
        params["splits"] = min(int(params.get("splits", 3)), DRAWN_FOLLOWUPS)
    else:
        return relation
    return dict(relation, params=params)


def with_drawn(reply: dict, part: dict) -> dict:
    """The file input's ``reply`` with ``DrawnRun.after``'s ``part``: a drawn miss becomes the
    reply's outcome (the drawn input before shrinking; the file input held), ``drawn`` and
    ``shrunk`` are carried as they are."""
    if "drawn_miss" in part:
        reply = dict(part["drawn_miss"], file_input="held")
    for key in ("drawn", "shrunk"):
        if key in part:
            reply[key] = part[key]
    return reply


EMPTY_ON_SCALED = "(both outputs empty on a scaled copy)"  # the differing entry of that miss


def judged_reply(judged: Judged, recipe: dict) -> dict:
    """A reply mapping (``outcome_reply`` or ``{"error"}``/``{"blocked"}``) for one judged recipe.
    Both outputs empty on a scaled copy of the corpus (which holds every corpus row) is a miss,
    not a vacuous hold: the corpus's own outputs were not empty (``Drawing.corpus``)."""
    if judged.error is not None:
        if judged.error.get("blocked"):
            return {"blocked": judged.error["blocked"]}
        return {"error": {k: judged.error.get(k) for k in ("type", "message", "where", "files", "module")
                          if judged.error.get(k) is not None}}
    reply = outcome_reply(judged.outcome)
    if reply.get("vacuous") and "scale" in recipe:
        reply.update(vacuous=False, held=False, differing=[EMPTY_ON_SCALED],
                     note=f"{recipe.get('label') or 'a scaled copy'}: both outputs empty, where the corpus's "
                          "own were not")
    return reply


def shrunk_reply(shrunk: dict, rows: list, schema: dict | None = None) -> dict:
    """The ``shrunk`` reply part: the recipe, the input itself (the drawn row, or the corpus
    rows it picks), the outcome or error on it, how many candidates were judged and in how
    many seconds, and for a drawn row the fields the miss needs (``schemadraw.fields_that_matter``)."""
    recipe, judged = shrunk["recipe"], shrunk["judged"]
    value = recipe["value"] if "value" in recipe else [rows[i] for i in recipe["pick"]]
    out = {"recipe": recipe, "input": value, "candidates": shrunk.get("candidates", 0),
           "seconds": shrunk.get("seconds", 0.0), "from_rows": shrunk.get("from_rows")}
    out.update(judged_reply(judged, recipe))
    if schema and "value" in recipe:
        from relconsole.engine.relations.schemadraw import fields_that_matter
        out["fields"] = fields_that_matter(recipe["value"], schema)
    return out


def unreached_lines(targets: Any, executed: dict) -> dict:
    """The changed statements (``targets``: ``[[path, [[first, last] or [first, last, [evidence,
    ...]], ...]], ...]``, ``RunPlan.targets``) not run (``spans.span_ran``) in files where one
    was: ``{path: [first line, ...]}``. A file none of whose changes ran is another relation's."""
    out = {}
    for row in targets if isinstance(targets, list) else []:
        try:
            path, spans = row[0], [(s[0], s[1], tuple(tuple(e) if isinstance(e, list) else e for e in s[2]))
                                   if len(s) > 2 else (s[0], s[1]) for s in row[1]]
        except (TypeError, IndexError):
            continue
        ran = set(executed.get(path) or ())
        missing = [span[0] for span in spans if not span_ran(span, ran)]
        if missing and len(missing) < len(spans):
            out[path] = missing
    return out


def _day(text: Any) -> "dt.date | None":
    """The review's today (``RunPlan.clock_today``, ISO) as a date, or None."""
    try:
        return dt.date.fromisoformat(text) if isinstance(text, str) else None
    except ValueError:
        return None
