"""Whether relations hold on the tree they are committed with (SPEC §8: a miss is the patch's
only when the base holds).

A catalog keeper can commit a relation that misses on the very code it was written for (a
seeds row that code never handled, a relation written wrongly); every later patch would then
be blamed for the oracle's fault. ``check_holds`` runs relations on one materialised tree (a
commit's code with an oracle overlaid) through the ordinary judge (``reviewrun.plan_for``,
``runner.run_all``: worker processes, nothing of the tree runs in this process) and says of
each relation, in ``Finding.state``:

- ``held``;
- ``missed``: the first run and ``RERUNS`` more, on new seeds and new fork servers, all
  missed (outputs that disagree, an error, a timeout): the oracle's fault, to be fixed first;
- ``intermittent``: the first run missed and a rerun held: every patch meets the same miss,
  which a replay shows on both sides (§8 row 8), so it is a freeze policy's matter, not a
  bad file;
- ``vacuous``: both outputs empty (or NaN) for a non-empty input: it proves nothing, and
  every patch it guards would be held;
- ``not_comparable``: outputs of a type with no ``canon:`` adapter: every patch blocked;
- ``blocked``: not run, because its lease or seeds fail closed (the lease's state says why);
- ``environment``: a module neither in the tree nor installed: not judged on this machine.

A seeds relation that missed every run runs once more on each seed row alone (up to
``ROWS_ALONE`` rows), to name the rows it misses on. ``Finding.text`` is the one line every
caller prints: ``validate`` (the base) and ``holdcommits`` (a ``catalog:`` commit before it
is written, each commit of a ``check-split`` range that changes a relation).
"""

from __future__ import annotations

import dataclasses
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from relconsole.engine.docsref import see
from relconsole.engine.gate.shrunkfacts import input_text, shrunk_facts
from relconsole.engine.errors import BadInputError
from relconsole.engine.gate.oracleload import oracle_digest
from relconsole.engine.gate.review import Review
from relconsole.engine.gate.reviewrun import checkout_name, plan_for, sandboxed
from relconsole.engine.literal import counted, one_line
from relconsole.engine.oracle.catalog import Catalog, Relation, load_catalog
from relconsole.engine.oracle.hashcache import sha256_stream
from relconsole.engine.oracle.textedit import jsonl_lines
from relconsole.engine.relations.records import WHOLE, RelationResult, RunPlan, RunRecord, short_pair
from relconsole.engine.relations.runner import run_all
from relconsole.engine.repo.treeview import TreeView
from relconsole.engine.repo.workspace import build_run_tree, scratch_dir

RERUNS = 2  # more runs of a first miss, each on new seeds and new fork servers
ROWS_ALONE = 64  # a seeds file up to this many rows has each row run alone to name the missing ones
FAILS = ("missed", "vacuous", "not_comparable")  # states that are the oracle's fault


@dataclass(frozen=True)
class RowMiss:
    """A seed row a relation missed on when run alone: ``number`` (1-based, among the file's
    non-blank lines, as the judge reads it), ``line`` (1-based line of the file), ``text``
    (the line as written) and the run's ``record``."""

    number: int
    line: int
    text: str
    record: RunRecord


@dataclass
class Finding:
    """One relation's result on one tree: ``state`` (see the module docstring), ``runs`` and
    ``misses`` made, the first run's ``record`` (None when not run), the seed ``rows`` it
    missed on alone, and ``why`` (a blocked, vacuous or environment reason in words)."""

    relation: Relation
    state: str
    runs: int = 0
    misses: int = 0
    record: RunRecord | None = None
    rows: list[RowMiss] = field(default_factory=list)
    why: str = ""
    input_path: str = ""  # the seeds file or the corpus, repository-relative

    @property
    def fails(self) -> bool:
        """Whether this finding is the oracle's fault (a miss every run, vacuous, not comparable)."""
        return self.state in FAILS

    def text(self, on: str) -> str:
        """One line for a terminal (every untrusted part through ``literal.one_line``), ``on``
        naming the tree in words ("on the base main 1a2b3c4d5e6f", "on its own commit")."""
        rid = one_line(self.relation.id)
        why = one_line(self.why)
        if self.state == "missed":
            return f"relation {rid} misses {on} ({self.misses} of {self.runs} runs): {self._miss()}"
        if self.state == "intermittent":
            return f"relation {rid} missed {self.misses} of {self.runs} runs {on}: {self._miss()}"
        return {"vacuous": f"relation {rid} is vacuous {on}: {why}",
                "not_comparable": f"relation {rid} cannot be compared {on}: {why}",
                "blocked": f"relation {rid} was not run {on}: {why}",
                "environment": f"relation {rid} could not be judged {on}: {why}"}.get(self.state, f"relation {rid} held")

    def _miss(self) -> str:
        """Where the miss is (the first seed row that misses alone, the seeds file, the corpus)
        and what the two values were."""
        path = one_line(self.input_path)
        if self.rows:
            row, more = self.rows[0], len(self.rows) - 1
            also = f" (and {counted(more, 'more seed row')})" if more else ""
            return (f"seed row {row.number} ({path}:{row.line}) {one_line(row.text.strip())}: "
                    f"{values_text(row.record)}{also}")
        where = f"corpus {path} (lease {one_line(self.relation.lease_id)})" if self.relation.lease_id else f"seeds {path}"
        facts = shrunk_facts(self.record)
        if facts is not None and "value" in ((self.record.shrunk or {}).get("recipe") or {}):
            on_it = one_line(f"raised {facts.error}") if facts.error else \
                one_line("{} vs {}".format(*short_pair(facts.source, facts.followup)))
            return (f"{where} hold, but an input drawn from the input schema misses, smallest "
                    f"{one_line(input_text(facts.input))}: {on_it}; the schema allows it: "
                    f"tighten the field ({', '.join(facts.fields) or 'the schema'}) or set generate: 0 "
                    f"({see('catalog', 'drawn-inputs')})")
        return f"{where}: {values_text(self.record)}" if self.record else where

    def to_json(self) -> dict:
        """The finding for ``--json``: state, counts, catalog line, input, rows and values."""
        record = self.rows[0].record if self.rows else self.record
        source, followup = (record.source, record.followup) if record else (None, None)
        return {"relation_id": self.relation.id, "state": self.state, "line": self.relation.line,
                "runs": self.runs, "misses": self.misses, "why": self.why, "input": self.input_path,
                "rows": [{"row": r.number, "line": r.line, "text": r.text, "detail": r.record.describe()}
                         for r in self.rows],
                "source": source, "followup": followup, "detail": record.describe() if record else ""}


def values_text(record: RunRecord) -> str:
    """A missed run in a few words: the error, or the two outputs (``records.short_pair``)
    with the keys they disagree on and how they were compared, escaped."""
    if record.error_type or record.error:
        return one_line(f"{record.error_type or 'error'}: {record.error}")
    if record.blocked or record.vacuous or not record.differing:
        return one_line(record.describe())
    source, followup = short_pair(record.source, record.followup)
    keys = "" if record.differing == [WHOLE] else f" on {', '.join(record.differing[:4])}"
    how = "; ".join(part for part in (record.note, record.compared and f"compared {record.compared}") if part)
    return one_line(f"{source} vs {followup}{keys}" + (f" ({how})" if how else ""))


def changed_relations(before: list[Catalog | None], after: Catalog, changed_paths: set[str]) -> list[Relation]:
    """The relations of ``after`` that a change adds or changes: a definition (its identity,
    §3) that none of the ``before`` catalogs (the parents'; None for one that has none) has,
    or a seeds file among ``changed_paths``. In catalog order."""
    def known(relation: Relation) -> bool:
        return any(old is not None and old.get(relation.id) is not None
                   and old.get(relation.id).identity() == relation.identity() for old in before)
    return [r for r in after.relations.values() if not known(r) or (r.seeds_path or "") in changed_paths]


def catalog_at(view: TreeView, path: str) -> Catalog | None:
    """The catalog ``path`` at ``view``'s commit, or None when it has none or it does not load
    (then every relation of the next one counts as new)."""
    text = view.read_text(path)
    try:
        return load_catalog(text, path) if text is not None else None
    except BadInputError:
        return None


def check_holds(review: Review, relations: list[Relation], commit: str, oracle_dir: Path,
                progress: Callable[[RelationResult], None] | None = None,
                workers: int | None = None, replay_seed: int | None = None, draw: bool = True) -> list[Finding]:
    """One ``Finding`` per relation (in the order given), each run on ``commit``'s code with
    the oracle files in ``oracle_dir`` overlaid (``workspace.build_run_tree``). Leases and
    the layout are ``review``'s. ``progress`` is called as each first run finishes;
    ``replay_seed``: the recorded run seed every first run replays (reruns draw new ones);
    ``draw`` False: the relations' own inputs only, no drawn ones (a history's commits, judged
    by what their rule was when they were made, not by a later relconsole's draws).
    Raises GitError and RelconsoleError as ``build_run_tree`` does."""
    scratch = scratch_dir("tmp")
    tree = scratch / checkout_name(review)  # the subject's working folder reads as a plain checkout
    try:
        linked = sandboxed()
        build_run_tree(review.repo, commit, oracle_dir, review.layout.protected, tree, link=linked,
                       generated=review.layout.generated)
        found, plans = _plan(review, relations, tree, linked)
        plans = {rid: dataclasses.replace(plan, replay_seed=replay_seed, **({} if draw else {"generate": None}))
                 for rid, plan in plans.items()}
        for result in run_all([(plan, None) for plan in plans.values()], progress, workers):
            found[result.relation_id] = _judged(plans[result.relation_id], result.first)
        missed = [f for f in found.values() if f.state == "missed"]
        _rerun(missed, plans, workers)
        _rows_alone([f for f in missed if f.state == "missed"], plans, workers)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return [found[r.id] for r in relations]


def _plan(review: Review, relations: list[Relation], tree: Path,
          linked: bool) -> tuple[dict[str, Finding], dict[str, RunPlan]]:
    """(a ``blocked`` Finding for each relation whose lease or seeds fail closed, a RunPlan
    for each other), both by relation id."""
    found: dict[str, Finding] = {}
    plans: dict[str, RunPlan] = {}
    digest = oracle_digest(review)  # one listing of the oracle's directories for every plan
    for relation in relations:
        why = review.blocked_reason(relation)
        if why:
            found[relation.id] = Finding(relation, "blocked", why=why)
        else:
            plans[relation.id] = plan_for(review, relation, tree, digest, linked)
    digest.flush()
    return found, plans


def _relative(plan: RunPlan) -> str:
    return Path(plan.input_path).relative_to(plan.root).as_posix()


def _judged(plan: RunPlan, first: RunRecord) -> Finding:
    """The Finding of one first run (read from its record, the judge's own words)."""
    relation = plan.relation
    if first.blocked:
        state, why = "not_comparable", first.blocked
    elif first.vacuous:
        state, why = "vacuous", first.note
    elif first.error_type == "environment":
        state, why = "environment", first.error
    else:
        state, why = ("held" if first.held else "missed"), ""
    return Finding(relation, state, 1, 0 if first.held else 1, first, why=why, input_path=_relative(plan))


def _rerun(missed: list[Finding], plans: dict[str, RunPlan], workers: int | None) -> None:
    """Run each first miss ``RERUNS`` more times, each on new seeds and a new fork server (a
    new hash seed, §7); one that holds once is ``intermittent``."""
    # a miss on a drawn or shrunk input reruns on that input (new seeds for everything else)
    again = [(dataclasses.replace(plans[f.relation.id], fresh_server=True, replay_seed=None,
                                  given=f.record.recorded_input() if f.record else None), None)
             for f in missed for _ in range(RERUNS)]
    results = run_all(again, workers=workers)
    for finding in missed:
        held = [r.first.held for r in results if r.relation_id == finding.relation.id]
        finding.runs += len(held)
        finding.misses += held.count(False)
        if any(held):
            finding.state = "intermittent"


def _rows_alone(missed: list[Finding], plans: dict[str, RunPlan], workers: int | None) -> None:
    """Name the seed rows each missed seeds relation misses on: a one-row seeds file is its
    row; a file of up to ``ROWS_ALONE`` rows has each row written to a file of its own in the
    run tree and run alone. A relation that misses on no row alone (it needs the others: a
    state kept across calls) keeps its whole-file record."""
    alone: list[tuple[Finding, int, int, str, RunPlan]] = []
    for finding in missed:
        plan = plans[finding.relation.id]
        if plan.input_kind != "seeds":
            continue
        rows = _seed_rows(Path(plan.input_path))
        if len(rows) == 1:
            finding.rows = [RowMiss(*rows[0], finding.record)]
        elif len(rows) <= ROWS_ALONE:
            alone += [(finding, number, line, text, _row_plan(plan, number, text))
                      for number, line, text in rows]
    results = run_all([(plan, None) for *_, plan in alone], workers=workers)
    for (finding, number, line, text, _plan), result in zip(alone, results):
        if not result.first.held and not result.first.vacuous:
            finding.rows.append(RowMiss(number, line, text, result.first))


def _seed_rows(path: Path) -> list[tuple[int, int, str]]:
    """``(row number, line number, text)`` of each non-blank line of a seeds file (the rows
    the judge reads, ``subject.inputs.read_seeds``), both 1-based."""
    lines = jsonl_lines(path.read_text(encoding="utf-8"))
    numbered = [(line, text) for line, text in enumerate(lines, 1) if text.strip()]
    return [(number, line, text) for number, (line, text) in enumerate(numbered, 1)]


def _row_plan(plan: RunPlan, number: int, text: str) -> RunPlan:
    """``plan`` reading a new seeds file beside its own that holds row ``number`` alone (a
    file of the run tree only: the repository is never written)."""
    source = Path(plan.input_path)
    target = source.with_name(f"{source.stem}.row-{number}.jsonl")
    while target.exists():
        target = target.with_name("_" + target.name)
    target.write_text(text + "\n", encoding="utf-8")
    return dataclasses.replace(plan, input_path=target, fixture_pin=sha256_stream(target), replay_seed=None,
                               generate=None)  # the row alone: nothing drawn beside it
