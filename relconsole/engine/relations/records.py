"""What a relation run is asked and what it gives: ``RunPlan``, ``RunRecord``, ``RelationResult`` (SPEC §6, §7).

A ``RunPlan`` is one relation on one materialised tree; a ``RunRecord`` one evaluation of it
(held or not, the outputs compared, or the error; ``input_summary`` what it read); a
``RelationResult`` the counted freeze protocol's verdict over its records (§6).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from relconsole.engine.oracle.catalog import Relation
from relconsole.engine.decision import Decision
from relconsole.engine.oracle.freezes import FreezeRow


@dataclass
class RunRecord:
    """One evaluation: held or not, outputs compared, disagreeing keys, or the error.

    ``inputs`` summarises the source and follow-up inputs (``input_summary``): the input
    file, its digest and row count, and the follow-up transformation in words; {} for a
    record made elsewhere (a pytest-plugin attempt).
    """

    held: bool
    seed: int
    source: Any = None
    followup: Any = None
    differing: list[str] = field(default_factory=list)
    note: str = ""
    error_type: str | None = None
    error: str = ""
    seconds: float = 0.0
    error_files: list[str] = field(default_factory=list)  # tree paths of the traceback, innermost last
    inputs: dict = field(default_factory=dict)  # what the run read and how the follow-up was made (input_summary)
    blocked: str = ""  # why the outputs could not be compared (a type with no canon: adapter), else ""
    vacuous: bool = False  # held only on empty outputs for a non-empty input (SPEC §7)
    run: dict = field(default_factory=dict)  # sandbox, hashseed, clock, call order, tree files imported
    compared: str = ""  # how the outputs were compared, in words (relations.Check.words)
    missing_module: str = ""  # the module a ModuleNotFoundError names, else ""
    # drawn inputs (SPEC §3): what was drawn ({"seed", "what", "asked", "tried", "extra", "unreached",
    # "stopped", "missed_on"}), {} when none; a miss on one is this record's outcome (the input before shrinking)
    drawn: dict = field(default_factory=dict)
    # the smallest input on which the relation still misses ({"recipe", "input", "source", "followup",
    # "differing", "note", ... or "error"}), {} when the miss was not shrunk; the signature is its
    shrunk: dict = field(default_factory=dict)
    given: dict = field(default_factory=dict)  # the recorded input this record judged exactly (RunPlan.given)

    def failure_parts(self) -> tuple[str | None, list[str], str]:
        """``(error type, disagreeing keys, error message)`` of the miss a signature is made of
        (SPEC §7): the shrunk input's when the miss was shrunk (the smallest input that shows
        it), else this record's own."""
        shrunk = self.shrunk or {}
        if isinstance(shrunk.get("error"), dict):
            error = shrunk["error"]
            return str(error.get("type") or "raised"), [], str(error.get("message") or "")
        if shrunk.get("differing"):
            return None, [str(d) for d in shrunk["differing"]], ""
        return self.error_type, self.differing, self.error

    def recorded_input(self) -> dict | None:
        """The drawing recipe that replays this record's miss exactly (``RunPlan.given``): the
        shrunk input's, else the drawn input it missed on, else the one it was given; None for
        a miss on the file input that was not shrunk."""
        for recipe in ((self.shrunk or {}).get("recipe"), (self.drawn or {}).get("missed_on"), self.given):
            if isinstance(recipe, dict) and recipe:
                return recipe
        return None

    def describe(self) -> str:
        """One line: what missed and where."""
        if self.blocked:
            return f"blocked: {self.blocked}"
        if self.vacuous:
            return f"vacuous: {self.note}"
        if self.held:
            return "held"
        if self.error_type:
            return f"{self.error_type}: {self.error}"
        keys = ", ".join(self.differing[:4]) + (" …" if len(self.differing) > 4 else "")
        if not keys:
            return self.note or "missed"
        how = f"; compared {self.compared}" if self.compared else ""
        shown = ": {} vs {}".format(*short_pair(self.source, self.followup)) if self.differing == [WHOLE] else ""
        return f"disagree on {keys} ({self.note}{how}){shown}"


WHOLE = "(whole output)"  # relations.path_text of the empty path
SHORT = 60  # characters of a value shown in a one-line miss


def _compact(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=repr)
    except (ValueError, TypeError, RecursionError):
        return repr(value)


def compact_text(value: Any, limit: int) -> str:
    """``value`` as compact JSON (``repr`` for what JSON cannot write), cut to about ``limit``
    characters with "…": a seed row in a miss, a drawn input's label, a shrunk input."""
    text = _compact(value)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def short_pair(source: Any, followup: Any) -> tuple[str, str]:
    """Two values as compact JSON, each cut to about SHORT characters around where they first
    differ: ``(source_text, followup_text)``. Cutting both at their start hid the difference
    behind a shared prefix (two long id lists read "[…,"PB…" vs "[…,"PB…"); here both windows
    start a third of SHORT before the first differing character, with "…" where text is cut,
    so two different texts always show different windows."""
    texts = _compact(source), _compact(followup)
    if all(len(t) <= SHORT for t in texts):
        return texts
    first_difference = len(os.path.commonprefix(texts))
    start = max(0, first_difference - SHORT // 3)
    return tuple(_window(t, start) for t in texts)


def _window(text: str, start: int) -> str:
    body = text[start:start + SHORT - 1]
    return ("…" if start else "") + body + ("…" if start + len(body) < len(text) else "")


@dataclass
class RelationResult:
    """A relation's result in this review: first run, reruns, freeze and verdict.

    ``outcome`` is ``held``, ``missed`` (after the freeze protocol) or ``blocked`` (an
    input it may not read: fails closed). ``verdict`` is the §7/§8 decision.
    """

    relation_id: str
    outcome: str
    verdict: Decision
    summary: str
    first: RunRecord | None = None
    reruns: list[RunRecord] = field(default_factory=list)
    freeze: FreezeRow | None = None
    signature: str | None = None
    base: RunRecord | None = None  # the run on the merge base with the first run's inputs, after a miss (basecheck)
    # the verdict the miss had before an oracle adapter's exception made it an oracle fault: the merge base
    # settles which it is (an adapter that raises only on the patch's output, a roundtrip's inverse on a
    # bad encoding, makes it the patch's miss); None otherwise
    unfaulted: Decision | None = None

    @property
    def rerun_passes(self) -> int:
        return sum(1 for r in self.reruns if r.held)

    def to_json(self) -> dict:
        """The result as ``run --json`` prints it."""
        first = self.first.__dict__ if self.first else None
        return {"relation_id": self.relation_id, "outcome": self.outcome,
                "decision": self.verdict.decision, "reason": self.verdict.reason,
                "row": self.verdict.row, "summary": self.summary, "first_run": first,
                "reruns": [r.__dict__ for r in self.reruns],
                "freeze": dict(self.freeze.raw, state=self.freeze.state) if self.freeze else None,
                "signature": self.signature, "base_run": self.base.__dict__ if self.base else None}


@dataclass
class RunPlan:
    """What a worker needs to evaluate one relation: tree, import paths, input file."""

    relation: Relation
    root: Path
    import_paths: list[str]
    input_kind: str  # "lease" or "seeds"
    input_path: Path
    fixture_pin: str  # sha256 of the input, for signatures
    timeout_seconds: float = 120.0
    clock: str | None = None  # ISO instant the worker's clock is frozen at; None: real time
    protected: tuple[str, ...] = ()  # patterns of the oracle's files (a fault there is not the patch's)
    sandbox: str = "auto"  # "auto" (bubblewrap where it works), "bwrap" (required: abort without) or "process"
    replay_seed: int | None = None  # the recorded run seed to replay (``run --replay-seed``); None: draw one
    replay_hashseed: int | None = None  # the recorded PYTHONHASHSEED to replay with it; None: the server's own
    checkout: str = ""  # the repository's folder name: the tree is /src/<it> in a sandbox ("": the tree's own)
    env: dict[str, str] = field(default_factory=dict)  # [tool.relconsole] pass_env: variables the subject gets
    fresh_server: bool = False  # a new fork server (a new hash seed, §7) for this run alone: reruns
    imports_only: bool = False  # one source call, only for the tree files it imports (importmap)
    spare: bool = False  # with fresh_server: more reruns follow, the worker boots a server ahead for one
    clock_day: bool = False  # with clock: stand at an instant drawn per fork server around its day (clock: frozen)
    clock_today: str | None = None  # with clock_day: the review's today (ISO date), which the drawn span reaches past
    readonly: tuple[str, ...] = ()  # the reviewer's git directories and checkout: read-only to a subject without bwrap
    # top-level packages and modules of the library under review (the merge base's, in its import roots): an
    # adapter that imports one gets the tree's copy, never one installed where relconsole runs
    library: tuple[str, ...] = ()
    # record the tree's executed lines in the subject process (SPEC §3 covered means exercised): True
    # (every line), ((tree path, (line, ...)), ...) (only the patch's changed statements: a review's
    # runs, gate.runplans.wanted_lines), or False (the benchmark's anchor, the same relation unmeasured)
    record_lines: "bool | tuple" = True
    # drawn inputs after the file input holds (SPEC §3 generated inputs): {"count", "seconds",
    # "shrink_seconds", "rows", "shrink"} (shrink False: a miss on the file input is not shrunk; a drawn
    # one still is), None: none drawn, and a corpus miss is not shrunk
    generate: dict | None = None
    # one recorded input to judge instead of the file input (a drawing recipe: a drawn row, corpus rows
    # picked or scaled, with its evaluation seed): a base check or replay of a drawn or shrunk miss
    given: dict | None = None
    # the patch's changed statements (``relations.spans``) as ((path, (span, ...)), ...): drawing goes on
    # (generate_seconds) while one in a file the relation's calls reached stays unrun; () with record_lines off
    targets: tuple = ()


def input_summary(plan: RunPlan, read: dict | None = None) -> dict:
    """What one run of ``plan`` read (SPEC §3 input, §4 lease, §7 fixture pin), small::

        {"kind": "lease" | "seeds", "lease": id | None,
         "path": tree-relative input file, "sha256": its digest (the fixture pin),
         "records": rows or seed rows, "fields": [first row's keys], "field_count": int,
         "followup": the follow-up transformation in words}

    ``read`` is the worker's part (``relations.describe_inputs``: records, fields,
    followup); it is absent ({}) when the worker timed out or died before reading.
    """
    try:
        path = Path(plan.input_path).relative_to(plan.root).as_posix()
    except ValueError:
        path = str(plan.input_path)
    return {"kind": plan.input_kind, "lease": plan.relation.lease_id, "path": path,
            "sha256": plan.fixture_pin, **(read or {})}
