"""What the pytest plugin reports for a relation: the relation items' outcomes (lines, report
sections, junit properties) and a marked test's runs (held or missed, the reports pytest
logs). Moved out of ``pytest_session`` (issue 19); imports no pytest internals beyond
``TestReport``'s fields.
"""

from __future__ import annotations

import pytest

from relconsole.engine.decision import Decision
from relconsole.engine.literal import one_line
from relconsole.engine.relations.records import RelationResult

SECTION = "relconsole"  # the report section's title prefix
PASSING = ("pass", "freeze")  # decisions that do not fail a relation's item


def item_outcome(result: RelationResult) -> dict:
    """What a relation item reports, as JSON-ready data (it crosses to xdist workers):
    ``decision``, the failure ``line``, the report ``section`` and junit ``properties``."""
    return {"decision": result.verdict.decision, "line": result_line(result),
            "section": result_section(result), "properties": [list(p) for p in result_properties(result)]}


def result_line(result: RelationResult) -> str:
    """One line for a failing relation item: decision, reason, summary, first miss."""
    verdict = result.verdict
    line = f"{result.relation_id}: {verdict.decision.upper()} ({verdict.reason}): {result.summary}"
    if result.reruns and result.first is not None:
        line += f"; first run: {result.first.describe()}"
    return one_line(line)


def result_section(result: RelationResult) -> str:
    """The report section of a relation item: its line, its freeze, one line per rerun."""
    lines = [result_line(result)]
    if result.freeze is not None:
        lines.append(f"freeze: {result.freeze.state} ({result.freeze.why})")
    lines += [f"rerun {n}: {r.describe()}" for n, r in enumerate(result.reruns, 1)]
    return "\n".join(one_line(line) for line in lines)


def result_properties(result: RelationResult) -> list[tuple[str, object]]:
    """The junit ``user_properties`` of a relation item: id, outcome, decision, reason,
    summary, and for a frozen relation its freeze state and rerun counts."""
    props = [("relation_id", result.relation_id), ("outcome", result.outcome),
             ("decision", result.verdict.decision), ("reason", result.verdict.reason),
             ("summary", one_line(result.summary))]
    if result.freeze is not None:
        props += [("freeze_state", result.freeze.state), ("reruns", len(result.reruns)),
                  ("rerun_passes", result.rerun_passes)]
    return props


def held(reports: list[pytest.TestReport]) -> bool:
    """A test run held when it ran its call and every phase passed (a skip is not a hold)."""
    return any(r.when == "call" for r in reports) and all(r.passed for r in reports)


def miss_line(reports: list[pytest.TestReport]) -> str:
    """What went wrong in one run, as one line ('' when it held)."""
    for report in reports:
        if report.passed:
            continue
        if report.skipped:
            reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
            why = f"xfail: {report.wasxfail}" if hasattr(report, "wasxfail") else reason
            return one_line(f"skipped in {report.when} ({why}): a relation is never skipped")
        crash = getattr(report.longrepr, "reprcrash", None)
        message = crash.message if crash is not None else str(report.longrepr).strip()
        message = (message.splitlines() or [""])[0]
        return one_line(f"{report.when} failed: {message}")
    return ""


def attempt_record(index: int, reports: list[pytest.TestReport]) -> dict:
    """One run of a marked test for the results file: its index, whether it held, the miss
    line and its duration in seconds."""
    return {"attempt": index, "held": held(reports), "error": miss_line(reports),
            "seconds": round(sum(r.duration for r in reports), 6)}


def final_reports(attempts: list[list[pytest.TestReport]], entry: dict,
                   verdict: Decision) -> list[pytest.TestReport]:
    """The reports pytest logs for a marked test: a held run's, or the first run's failure.

    The verdict's line heads the failure; the reruns are a report section; the relation
    id, verdict and counts are ``user_properties`` of the main report and of the teardown
    report (the one junitxml reads them from).
    """
    section = "\n".join([one_line(f"{entry['relation_id']}: {verdict.decision.upper()} "
                                  f"({verdict.reason}): {entry['summary']}")]
                        + [f"rerun {r['attempt']}: {'held' if r['held'] else r['error']}"
                           for r in entry["reruns"]])
    props = [("relation_id", entry["relation_id"]), ("outcome", entry["outcome"]),
             ("decision", verdict.decision), ("reason", verdict.reason),
             ("summary", one_line(entry["summary"]))]
    if entry["freeze"] is not None:
        props += [("freeze_state", entry["freeze"]["state"]), ("reruns", len(entry["reruns"])),
                  ("rerun_passes", sum(1 for r in entry["reruns"] if r["held"]))]
    if verdict.decision in PASSING:
        reports = next(a for a in reversed(attempts) if held(a))
        main = next(r for r in reports if r.when == "call")
    else:
        reports = attempts[0]
        main = next(r for r in reports if not r.passed)
        original = (f"skipped: {main.longrepr[2]}" if isinstance(main.longrepr, tuple)
                    else str(main.longrepr))
        main.outcome = "failed"
        if hasattr(main, "wasxfail"):
            del main.wasxfail
        main.longrepr = one_line(f"{entry['relation_id']}: {verdict.decision.upper()} "
                                 f"({verdict.reason}): {entry['summary']}") + "\n" + original
    main.sections.append((f"{SECTION} {entry['relation_id']}", section))
    for report in {id(r): r for r in (main, reports[-1])}.values():  # junit reads teardown's
        report.user_properties.extend(props)
    return reports
