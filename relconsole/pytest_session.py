"""The ``--relconsole`` session of the pytest plugin (see ``relconsole.pytest_plugin``).

Loaded only when ``pytest --relconsole`` is given, so a pytest run without it pays nothing
for the engine (jsonschema, GitPython, the runner): ``relconsole.pytest_plugin`` registers
``RelconsoleSession`` from here in ``pytest_configure``.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
from _pytest.runner import runtestprotocol

from relconsole.engine.atomicfile import write_atomic
from relconsole.pytest_reports import (PASSING, SECTION, attempt_record, final_reports, held, item_outcome,
                                       miss_line)
from relconsole.engine.decision import Decision, worst
from relconsole.engine.errors import RelconsoleError
from relconsole.engine.literal import counted, one_line
from relconsole.engine.repo.owners import protected
from relconsole.engine.oracle.freezes import counted_verdict
from relconsole.engine.gate.exercised import describe
from relconsole.engine.gate.report import decision_fields, run_payload
from relconsole.engine.gate import importrun
from relconsole.engine.gate.review import Review, load_review
from relconsole.engine.gate.reviewrun import run_review
from relconsole.engine.relations.records import RelationResult
from relconsole.engine.docsref import decision_row

COLLECTOR_NAME = "relconsole"
DEFAULT_JSON = Path("relconsole") / "pytest-results.json"  # under the git directory
WORKER_KEY = "relconsole_outcomes"  # workerinput key of the relations' outcomes under xdist
ENTRY_PROPERTY = "relconsole_test"  # a worker's hand-written relation test entry, for the controller


class RelationMiss(Exception):
    """A catalog relation missed or was blocked; its one-line message is the failure."""


class RelationCatalog(pytest.Collector):
    """The parent of the relation items (node id ``relconsole``); it collects nothing itself."""

    def collect(self):
        return []


class RelationItem(pytest.Item):
    """One catalog relation as a test item, ``relconsole::<relation id>``."""

    def __init__(self, *, relation_id: str, plugin: RelconsoleSession, **kwargs):
        super().__init__(**kwargs)
        self.relation_id = relation_id
        self.plugin = plugin

    def runtest(self) -> None:
        outcome = self.plugin.outcome_for(self.relation_id)
        self.user_properties.extend(tuple(p) for p in outcome["properties"])
        self.add_report_section("call", SECTION, outcome["section"])
        if outcome["decision"] not in PASSING:
            raise RelationMiss(outcome["line"])

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, RelationMiss):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style)

    def reportinfo(self):
        relation = self.plugin.review.catalog.get(self.relation_id)
        line = relation.line - 1 if relation and relation.line else None
        return self.plugin.catalog_path, line, f"relation {self.relation_id}"


class RelconsoleSession:
    """The plugin's state for one pytest session; registered only under ``--relconsole``."""

    def __init__(self, config: pytest.Config, marker: str):
        self.config = config
        self.marker = marker  # the hand-written relation tests' mark (pytest_plugin.MARKER)
        self.base = config.getoption("relconsole_base")
        self.all = config.getoption("relconsole_all")
        self.today = _parse_today(config.getoption("relconsole_today"))
        self.review: Review | None = None
        self.selected: list[str] = []
        self.results: dict[str, RelationResult] = {}
        self.ran = False
        self.run_error: str | None = None
        self.marked: dict[str, str] = {}  # nodeid -> relation id
        self.tests: list[dict] = []
        self.tests_verdicts: list[Decision] = []
        self.json_path: Path | None = None
        self.failing = ""  # why the decision fails the session ('' when it passes)
        # under pytest-xdist the controller runs the relations once and hands each worker their
        # outcomes (pytest_configure_node); workers only report them, the controller writes the file
        self.worker_outcomes: dict | None = getattr(config, "workerinput", {}).get(WORKER_KEY)
        self.is_worker = hasattr(config, "workerinput")
        self.is_controller = False
        # only the person running pytest may waive the gate: the option counts on the command line,
        # never from addopts in the patch's pyproject.toml or pytest.ini
        self.report_only = ("--relconsole-report-only" in config.invocation_params.args
                            and config.getoption("relconsole_report_only"))
        if config.getoption("relconsole_report_only") and not self.report_only:
            config.issue_config_time_warning(pytest.PytestConfigWarning(
                "--relconsole-report-only from the configuration (addopts) is ignored: give it on the command line"), 2)

    # --- the review -------------------------------------------------------------------

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        try:
            review = load_review(self.config.rootpath, self.base, "HEAD", self.today)
        except RelconsoleError as exc:
            raise pytest.UsageError(f"relconsole: {one_line(exc.one_line())}") from None
        if review.errors:
            review.close()
            raise pytest.UsageError(*[f"relconsole: bad input file: {one_line(e.one_line())}"
                                      for e in review.errors])
        try:
            importrun.ensure(review)  # ownership follows imports: which relations are touched (§3)
        except RelconsoleError as exc:
            review.close()
            raise pytest.UsageError(f"relconsole: {one_line(exc.one_line())}") from None
        self.review = review
        if not self.is_worker and session.config.pluginmanager.getplugin("dsession") is not None:
            self.is_controller = True  # pytest -n N: no item runs here; run every relation once, now
            self.selected = [r.id for r in review.relations] if self.all else review.touched_relations()
            self._run_selected()
        option = self.config.getoption("relconsole_json")
        self.json_path = (self.config.invocation_params.dir / option if option
                          else Path(review.repo.git_dir) / DEFAULT_JSON)

    @property
    def catalog_path(self) -> Path:
        return self.review.root / self.review.layout.catalog

    def pytest_report_header(self, config: pytest.Config) -> list[str]:
        if self.review is None:
            return []
        r = self.review
        lines = [(f"relconsole: oracle from {r.base_ref} ({r.base_tip[:12]}), HEAD {r.head_sha[:12]}, "
                  f"merge base {r.merge_base[:12]}, today {r.today.isoformat()}, "
                  f"relations: {'all' if self.all else 'touched'}")]
        if r.repo.is_dirty(untracked_files=False):
            lines.append("relconsole: the work tree has uncommitted changes; catalog relations "
                         "run HEAD's commit, not them")
        return lines

    # --- collection -------------------------------------------------------------------

    @pytest.hookimpl(wrapper=True)
    def pytest_pycollect_makeitem(self, collector, name, obj):
        result = yield
        if result is None or isinstance(result, pytest.Item | pytest.Collector):
            nodes = [result] if result is not None else []
        else:
            result = list(result)
            nodes = result
        for node in nodes:
            if isinstance(node, pytest.Function):
                self._check_marker(node)
        return result

    def _check_marker(self, item: pytest.Function) -> None:
        """Record a marked test's relation id; a bad or unknown id is a collection error."""
        mark = item.get_closest_marker(self.marker)
        if mark is None:
            return
        if len(mark.args) != 1 or mark.kwargs or not isinstance(mark.args[0], str):
            raise pytest.Collector.CollectError(
                f"{item.nodeid}: @pytest.mark.{self.marker} takes one relation id string, "
                f"got args={mark.args!r} kwargs={mark.kwargs!r}")
        relation_id = mark.args[0]
        if self.review.catalog.get(relation_id) is None:
            known = ", ".join(r.id for r in self.review.relations)
            raise pytest.Collector.CollectError(
                f"{item.nodeid}: @pytest.mark.{self.marker}({relation_id!r}) names no relation in "
                f"{self.review.layout.catalog} on {self.review.base_ref} (known: {known})")
        self.marked[item.nodeid] = relation_id

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(self, session: pytest.Session, config, items: list) -> None:
        """Put the relation items first, before ``-k``/``-m`` deselection sees the list."""
        ids = [r.id for r in self.review.relations] if self.all else self.review.touched_relations()
        parent = RelationCatalog.from_parent(session, name=COLLECTOR_NAME, nodeid=COLLECTOR_NAME)
        items[:0] = [RelationItem.from_parent(parent, name=rid, relation_id=rid, plugin=self)
                     for rid in ids]

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.selected = [it.relation_id for it in session.items if isinstance(it, RelationItem)]

    # --- catalog relations --------------------------------------------------------------

    def outcome_for(self, relation_id: str) -> dict:
        """What the relation's item reports (``item_outcome``); the first call in a process without
        xdist runs every selected relation at once. An xdist worker reports what the controller
        ran and never runs a relation itself."""
        if self.is_worker:
            outcomes = self.worker_outcomes or {}
            if relation_id not in outcomes:
                raise RelationMiss(f"{relation_id}: ABORT: the xdist controller did not run this relation "
                                   "(give --relconsole on the command line, as the workers get it)")
            return outcomes[relation_id]
        if not self.ran:
            self._run_selected()
        if self.run_error is not None:
            raise RelationMiss(f"{relation_id}: ABORT: relations could not run: {self.run_error}")
        return item_outcome(self.results[relation_id])

    def _run_selected(self) -> None:
        self.ran = True
        try:
            for result in run_review(self.review, self.selected):
                self.results[result.relation_id] = result
        except RelconsoleError as exc:
            self.run_error = one_line(exc.one_line())
        if self.review.errors and self.run_error is None:  # a subject the base does not have: nothing ran
            self.run_error = f"bad input file: {one_line(self.review.errors[0].one_line())}"

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node) -> None:
        """xdist (controller): give each worker the outcome of every relation run here."""
        if self.run_error is not None:
            outcomes = {rid: {"decision": "abort", "line": f"{rid}: ABORT: relations could not run: "
                              f"{self.run_error}", "section": self.run_error, "properties": []}
                        for rid in self.selected}
        else:
            outcomes = {rid: item_outcome(result) for rid, result in self.results.items()}
        node.workerinput[WORKER_KEY] = outcomes

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """xdist (controller): collect the hand-written relation tests the workers ran."""
        if not self.is_controller:
            return
        entry = dict(report.user_properties).get(ENTRY_PROPERTY)
        if entry is not None and all(t["test_id"] != report.nodeid for t in self.tests):
            data = json.loads(entry)
            self.tests.append(data)
            self.tests_verdicts.append(Decision(data["decision"], data["reason"], data["row"], data["relation_id"]))

    # --- hand-written relation tests --------------------------------------------------

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: pytest.Item | None):
        relation_id = self.marked.get(item.nodeid)
        if relation_id is None:
            return None
        ihook = item.ihook
        ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
        freeze = self.review.freeze_for(relation_id)
        attempts = [runtestprotocol(item, log=False, nextitem=nextitem)]
        if not held(attempts[0]) and freeze is not None and freeze.state == "live":
            attempts += [runtestprotocol(item, log=False, nextitem=nextitem)
                         for _ in range(freeze.reruns)]
        outcome, verdict, summary = counted_verdict(
            relation_id, held(attempts[0]), miss_line(attempts[0]),
            [held(a) for a in attempts[1:]], freeze)
        records = [attempt_record(n, a) for n, a in enumerate(attempts)]
        entry = {"test_id": item.nodeid, "relation_id": relation_id,
                 "path": _relative(item.path, self.review.root),
                 "in_protected_tree": _in_protected_tree(item.path, self.review),
                 "outcome": outcome, "decision": verdict.decision, "reason": verdict.reason,
                 "row": verdict.row, "summary": summary, "first_run": records[0],
                 "reruns": records[1:],
                 "freeze": dict(freeze.raw, state=freeze.state, why=freeze.why) if freeze else None}
        self.tests.append(entry)
        self.tests_verdicts.append(verdict)
        reports = final_reports(attempts, entry, verdict)
        if self.is_worker:  # the controller writes the results file: it reads the entry from here
            next(r for r in reports if r.user_properties).user_properties.append(
                (ENTRY_PROPERTY, json.dumps(entry, default=str)))
        for report in reports:
            ihook.pytest_runtest_logreport(report=report)
        ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
        return True

    # --- results ----------------------------------------------------------------------

    def payload(self) -> dict:
        """The results document (module docstring): ``run_payload`` plus the tests."""
        review = self.review
        results = [self.results[rid] for rid in self.selected if rid in self.results]
        if self.run_error is not None:
            decision = Decision("abort", "run_failed", None, None, self.run_error)
        elif self.all:
            decision = worst([r.verdict for r in results])
        else:
            decision = review.decision()
        payload = run_payload(review, results, decision)
        overall = worst([decision, *self.tests_verdicts])
        payload |= decision_fields(overall)
        not_run = [rid for rid in review.touched_relations() if rid not in self.results]
        payload |= {"tests": self.tests, "scope": "all" if self.all else "touched", "not_run": not_run,
                    "base": review.base_ref, "base_tip": review.base_tip,
                    "merge_base": review.merge_base, "head": review.head_sha,
                    "today": review.today.isoformat(), "oracle_from": review.oracle_from}
        return payload

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.review is None or self.config.option.collectonly or self.is_worker:
            self.json_path = None
            return
        payload = self.payload()
        write_atomic(self.json_path, json.dumps(payload, indent=2, default=str) + "\n")
        self.failing = _failing(payload)
        if self.failing and not self.report_only and session.exitstatus == 0:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED  # a gate that passed nothing it decided against

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if self.review is None or self.json_path is None:
            return
        payload = self.payload()
        write = terminalreporter.write_line
        row = f", {decision_row(payload['row'])}" if payload["row"] else ""
        about = f" on {payload['relation_id']}" if payload["relation_id"] else ""
        detail = f": {one_line(payload['detail'])}" if payload["detail"] else ""
        write(f"relconsole: decision {payload['decision']} ({payload['reason']}{row}){about}{detail}")
        if payload["gaps"]:
            write("relconsole: touched paths no relation owns (coverage gaps): "
                  + ", ".join(one_line(p) for p in payload["gaps"]))
        for row in payload.get("unexercised", []):
            write("relconsole: " + one_line(describe(row, payload.get("unexercised_level", "gap"))))
        write(f"relconsole: results in {self.json_path}")
        if self.failing:
            verb = ("reported only (--relconsole-report-only)" if self.report_only
                    else "the session fails")
            write(f"relconsole: {self.failing}: {verb}", red=True, bold=True)

    def pytest_unconfigure(self, config) -> None:
        if self.review is not None:
            self.review.close()


# --- helpers ------------------------------------------------------------------------------

def _failing(payload: dict) -> str:
    """Why the session's decision fails it ('' when it passes): a §8 decision other than
    pass or a counted freeze, or a touched path no relation owns, or a changed statement no
    relation ran (a coverage gap, exit 2)."""
    if payload["decision"] not in PASSING:
        return f"decision {payload['decision']} ({payload['reason']})"
    if payload["gaps"]:
        return f"{counted(len(payload['gaps']), 'touched path')} no relation owns (coverage gap)"
    if payload.get("unexercised") and payload.get("unexercised_level", "gap") == "gap":
        return (f"{counted(len(payload['unexercised']), 'file')} with changed statements no relation ran "
                "(coverage gap)")
    return ""


def _parse_today(text: str | None) -> dt.date | None:
    if text is None:
        return None
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        raise pytest.UsageError(f"--relconsole-today {text!r} is not a YYYY-MM-DD date") from None


def _relative(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(path)


def _in_protected_tree(path: Path, review: Review) -> bool:
    """True when the test file is under a protected path (§2), where §3 keeps such tests."""
    relative = _relative(path, review.root)
    return not Path(relative).is_absolute() and protected(review.layout.protected, relative)
